package io.bluegreen.gate.sink;

import io.bluegreen.gate.Color;
import io.bluegreen.gate.CoordinationState;
import io.bluegreen.gate.GateProcessFunction;
import io.bluegreen.gate.GateSinkWrapper;
import io.bluegreen.gate.GatedSink;
import io.bluegreen.gate.ManualStateSource;
import io.bluegreen.gate.Stage;
import io.bluegreen.gate.WatermarkStage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

/**
 * A blue -> green handover on a Flink MiniCluster with a real sink, the test playing the
 * controller: blue runs (paced) with checkpoints; a savepoint of blue is taken; green starts from
 * it while blue keeps running; W is proposed ahead of blue's progress and set; once blue has
 * passed every record with t <= W, blue is stopped with a savepoint (no drain); green, bounded,
 * runs to its end. Then the sink's committed output is read and judged.
 */
final class SinkHandover {
    private SinkHandover() {}

    static final long BASE = 1_700_000_000_000L;
    static final int P = 2;
    private static final AtomicInteger SEQ = new AtomicInteger();
    private static MiniCluster cluster;

    /** The job's sink for a color. */
    interface SinkFor {
        Sink<Long> sink(Color color) throws Exception;
    }

    /** Where the gate goes: places the gate and the sink (uid and name "sink") after {@code s}. */
    interface Placement {
        void place(DataStream<Long> s, GateProcessFunction<Long> gate, Sink<Long> sink);
    }

    /** The gate operator, then the sink as given. */
    static final Placement OPERATOR = (s, gate, sink) -> GateSinkWrapper.gate(s, gate).sinkTo(sink).uid("sink").name("sink");

    /** The gate inside the sink as given ({@link GatedSink#wrap}; the sink isolated or not by the test). */
    static final Placement IN_SINK = (s, gate, sink) -> s.sinkTo(GatedSink.wrap(sink, gate)).uid("sink").name("sink");

    /** The documented default: the sink isolated per color with the gate inside ({@link BlueGreenSinks#gated}). */
    static final Placement GATED = (s, gate, sink) -> s.sinkTo(BlueGreenSinks.gated(sink, gate)).uid("sink").name("sink");

    /** The committed output, as "COLOR id" lines, plus damage found while reading it. */
    interface Output {
        Committed read() throws Exception;
    }

    static final class Committed {
        final List<String> records = new ArrayList<>();
        final List<String> damage = new ArrayList<>();
    }

    static synchronized MiniCluster cluster() throws Exception {
        if (cluster == null) {
            Configuration conf = new Configuration();
            conf.set(TaskManagerOptions.NUM_TASK_SLOTS, 8);
            cluster = new MiniCluster(new MiniClusterConfiguration.Builder().setConfiguration(conf)
                    .setNumTaskManagers(1).setNumSlotsPerTaskManager(8).withRandomPorts().build());
            cluster.start();
        }
        return cluster;
    }

    static String run(String what) {
        return "sink-" + what + "-" + SEQ.incrementAndGet();
    }

    /** Event time of id: one ms per id, so every subtask sees increasing event times. */
    static long eventTime(long id) {
        return BASE + id;
    }

    /** Records, per job and subtask, the highest id that reached the gate (chained with gate and sink). */
    static final class Probe extends RichMapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        static final Map<String, AtomicLongArray> SEEN = new ConcurrentHashMap<>();
        private final String key;
        private transient AtomicLongArray seen;
        private transient int subtask;

        Probe(String key) {
            this.key = key;
        }

        @Override
        public void open(org.apache.flink.api.common.functions.OpenContext ctx) {
            seen = SEEN.get(key);
            subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        }

        @Override
        public Long map(Long v) {
            seen.accumulateAndGet(subtask, v, Math::max);
            return v;
        }

        static long min(String key) {
            AtomicLongArray a = SEEN.get(key);
            long m = Long.MAX_VALUE;
            for (int i = 0; i < a.length(); i++) {
                m = Math.min(m, a.get(i));
            }
            return m;
        }
    }

    /** Sleeps 1 ms every {@code every} records. */
    static final class Pacer implements MapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final int every;
        private transient int count;

        Pacer(int every) {
            this.every = every;
        }

        @Override
        public Long map(Long v) throws Exception {
            if (every > 0 && ++count % every == 0) {
                Thread.sleep(1);
            }
            return v;
        }
    }

    static JobGraph job(String run, Color color, int n, int paceEvery, Sink<Long> sink, String restoreFrom, Placement placement) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(P);
        env.enableCheckpointing(300);
        String probe = run + "/" + color;
        Probe.SEEN.put(probe, new AtomicLongArray(new long[] {-1, -1}));
        DataStream<Long> s = env.fromSequence(0, n - 1).setParallelism(1).uid("ids").name("ids")
                .assignTimestampsAndWatermarks(WatermarkStrategy.<Long>forMonotonousTimestamps()
                        .withTimestampAssigner((id, ts) -> eventTime(id)))
                .setParallelism(1).uid("event-times")
                .map(new Pacer(paceEvery)).setParallelism(1).uid("pacer")
                .rebalance()
                .map(new Probe(probe)).uid("probe").name("probe");
        placement.place(s, new GateProcessFunction<Long>(color, new ManualStateSource(run)).withHoldTimeout(Duration.ofSeconds(60)), sink);
        StreamGraph sg = env.getStreamGraph();
        sg.setJobName(run + "-" + color);
        JobGraph jg = sg.getJobGraph();
        if (restoreFrom != null) {
            jg.setSavepointRestoreSettings(SavepointRestoreSettings.forPath(restoreFrom, false));
        }
        return jg;
    }

    static CoordinationState st(long epoch, Stage stage, WatermarkStage ws, long w, Color active) {
        return CoordinationState.of(epoch, active, stage, ws, w, 1000);
    }

    /** What happened in one handover. */
    static final class Result {
        final int n;
        long w;
        Throwable blueError;
        Throwable greenError;
        Committed out;
        long duplicates;
        long losses;
        long blue;
        long green;
        long misplaced;
        boolean blueStopped;

        Result(int n) {
            this.n = n;
        }

        boolean clean() {
            return blueStopped && blueError == null && greenError == null && duplicates == 0 && losses == 0 && misplaced == 0 && out.damage.isEmpty();
        }

        @Override
        public String toString() {
            return n + " ids, W=" + (w - BASE) + " (+base): blue committed " + blue + ", green " + green + "; "
                    + duplicates + " duplicates, " + losses + " losses, " + misplaced + " emitted by the wrong color; "
                    + out.damage.size() + " damaged file(s)" + (out.damage.isEmpty() ? "" : " " + out.damage.subList(0, Math.min(3, out.damage.size())))
 + (blueStopped ? "; blue stopped with a savepoint" : "; blue NOT stopped with a savepoint")
                    + (blueError == null ? "" : "; blue failed: " + rootMessage(blueError))
                    + (greenError == null ? "" : "; green failed: " + rootMessage(greenError));
        }
    }

    static String rootMessage(Throwable t) {
        Throwable c = t;
        while (c.getCause() != null && c.getCause() != c) {
            c = c.getCause();
        }
        String m = String.valueOf(c.getMessage());
        return c.getClass().getSimpleName() + ": " + (m.length() > 160 ? m.substring(0, 160) + "..." : m);
    }

    /** The whole handover; never throws for a job failure (it is part of the result). */
    static Result handover(String run, int n, Path savepoints, SinkFor sinks, Output output) throws Exception {
        return handover(run, n, savepoints, sinks, output, OPERATOR);
    }

    /** The same with the gate placed by {@code placement} in both colors. */
    static Result handover(String run, int n, Path savepoints, SinkFor sinks, Output output, Placement placement) throws Exception {
        MiniCluster mc = cluster();
        ManualStateSource.Channel ch = ManualStateSource.channel(run);
        ch.publish(CoordinationState.initial(Color.BLUE, 1000));
        ch.publish(st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, Color.BLUE));
        Result r = new Result(n);
        // Blue: ~3 records per ms, so it runs for several seconds.
        JobID blue = mc.submitJob(job(run, Color.BLUE, n, 3, sinks.sink(Color.BLUE), null, placement)).get(30, TimeUnit.SECONDS).getJobID();
        JobID green = null;
        try {
            waitFor(() -> Probe.min(run + "/BLUE") >= n / 5, 60_000, "blue to pass a fifth of the ids");
            String savepoint = mc.triggerSavepoint(blue, savepoints.toUri().toString(), false, SavepointFormatType.CANONICAL)
                    .get(60, TimeUnit.SECONDS);
            ch.publish(st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_NOT_SET, 0, Color.GREEN));
            green = mc.submitJob(job(run, Color.GREEN, n, 0, sinks.sink(Color.GREEN), savepoint, placement)).get(30, TimeUnit.SECONDS).getJobID();
            // W well ahead of blue's progress (blue applies it long before reaching it; the oracle checks).
            long progress = Math.max(Probe.SEEN.get(run + "/BLUE").get(0), Probe.SEEN.get(run + "/BLUE").get(1));
            // Capped so that blue has 40% of the ids left to drop while it is being stopped.
            r.w = eventTime(Math.min(progress + n / 4, n * 6L / 10));
            ch.publish(st(1, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, r.w, Color.GREEN));
            ch.publish(st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, r.w, Color.GREEN));
            JobID b = blue;
            waitFor(() -> Probe.min(run + "/BLUE") > r.w - BASE || terminal(mc, b), 90_000, "blue to pass W on every subtask");
            if (!terminal(mc, blue)) {
                try {
                    mc.stopWithSavepoint(blue, savepoints.toUri().toString(), false, SavepointFormatType.CANONICAL).get(60, TimeUnit.SECONDS);
                    r.blueStopped = true;
                } catch (Exception e) {
                    r.blueError = e;
                }
            }
            r.blueError = r.blueError != null ? r.blueError : error(mc, blue);
            ch.publish(st(1, Stage.CLEAR_TO_TEARDOWN, WatermarkStage.WATERMARK_SET, r.w, Color.GREEN));
            ch.publish(st(1, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, Color.GREEN));
            r.greenError = error(mc, green);
        } finally {
            cancel(mc, blue);
            if (green != null) {
                cancel(mc, green);
            }
        }
        r.out = output.read();
        judge(r);
        return r;
    }

    private static void judge(Result r) {
        int[] blue = new int[r.n];
        int[] green = new int[r.n];
        for (String rec : r.out.records) {
            String[] p = rec.split(" ");
            int id = Integer.parseInt(p[1]);
            if (p[0].equals("BLUE")) {
                blue[id]++;
                r.blue++;
                if (eventTime(id) > r.w) {
                    r.misplaced++;
                }
            } else {
                green[id]++;
                r.green++;
                if (eventTime(id) <= r.w) {
                    r.misplaced++;
                }
            }
        }
        for (int i = 0; i < r.n; i++) {
            int c = blue[i] + green[i];
            if (c == 0) {
                r.losses++;
            } else if (c > 1) {
                r.duplicates += c - 1;
            }
        }
    }

    interface Check {
        boolean ok() throws Exception;
    }

    static void waitFor(Check c, long timeoutMs, String what) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!c.ok()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out (" + timeoutMs + " ms) waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    private static boolean terminal(MiniCluster mc, JobID job) throws Exception {
        return mc.getJobStatus(job).get(10, TimeUnit.SECONDS).isGloballyTerminalState();
    }

    private static Throwable error(MiniCluster mc, JobID job) throws Exception {
        JobResult res = mc.requestJobResult(job).get(120, TimeUnit.SECONDS);
        if (res.isSuccess()) {
            return null;
        }
        if (res.getSerializedThrowable().isPresent()) {
            return res.getSerializedThrowable().get().deserializeError(SinkHandover.class.getClassLoader());
        }
        // The job's status, not JobResult's: getApplicationStatus (1.20) became getJobStatus (2.x).
        return new RuntimeException("job ended with " + mc.getJobStatus(job).get(10, TimeUnit.SECONDS));
    }

    private static void cancel(MiniCluster mc, JobID job) {
        try {
            if (mc.getJobStatus(job).get(10, TimeUnit.SECONDS) != JobStatus.FINISHED) {
                mc.cancelJob(job).get(10, TimeUnit.SECONDS);
            }
        } catch (Exception ignored) {
            // already ended
        }
    }

    /**
     * Reads every committed part file under {@code dir} (FileSink's in-progress and pending files
     * are hidden, named with a leading dot). Damage: a NUL byte, a cut or malformed line, a file
     * not ending in a newline, both colors in one file.
     */
    static Committed readFiles(Path dir) throws IOException {
        Committed c = new Committed();
        List<Path> files;
        try (Stream<Path> s = Files.walk(dir)) {
            files = s.filter(Files::isRegularFile).filter(p -> !p.getFileName().toString().startsWith(".")).sorted().toList();
        }
        for (Path f : files) {
            byte[] bytes = Files.readAllBytes(f);
            String name = dir.relativize(f).toString();
            int nul = 0;
            for (byte b : bytes) {
                nul += b == 0 ? 1 : 0;
            }
            if (nul > 0) {
                c.damage.add(name + ": " + nul + " NUL bytes");
            }
            String text = new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
            if (!text.isEmpty() && !text.endsWith("\n")) {
                c.damage.add(name + ": last line cut");
            }
            TreeSet<String> colors = new TreeSet<>();
            int bad = 0;
            for (String line : text.split("\n")) {
                if (line.isEmpty() && text.isEmpty()) {
                    continue;
                }
                if (line.matches("(BLUE|GREEN) [0-9]+")) {
                    c.records.add(line);
                    colors.add(line.substring(0, line.indexOf(' ')));
                } else {
                    bad++;
                }
            }
            if (bad > 0) {
                c.damage.add(name + ": " + bad + " cut or malformed line(s)");
            }
            if (colors.size() > 1) {
                c.damage.add(name + ": both colors in one file");
            }
        }
        return c;
    }

    /** Files under {@code dir} as "name (size)" lines, for failure messages. */
    static String listing(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).map(p -> dir.relativize(p) + " (" + p.toFile().length() + ")").sorted()
                    .reduce((a, b) -> a + ", " + b).orElse("none");
        }
    }
}
