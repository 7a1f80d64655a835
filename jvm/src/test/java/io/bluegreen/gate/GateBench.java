package io.bluegreen.gate;

import java.util.Arrays;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Performance figures for docs/performance.md (run: {@code scripts/java-test.sh --bench}).
 *
 * <ol>
 *   <li>Decision path: ns/record of {@code GateProcessFunction.processElement} vs an identity
 *       ProcessFunction, called in a loop with a reused context (warmup, then the median of rounds).
 *   <li>Flink job throughput on a MiniCluster, with and without the gate ({@link GateOperator}), runs
 *       interleaved: (a) a trivial pipeline (ids, event times, watermarks → discarding sink) and
 *       (b) a realistic one ({@link Realistic}: keyed state, serialization, a FileSink).
 * </ol>
 */
public final class GateBench {
    private GateBench() {}

    static final class MutableContext {
        long ts;
    }

    static final class Sink implements Collector<Long> {
        long sum;

        @Override
        public void collect(Long record) {
            sum += record;
        }

        @Override
        public void close() {}
    }

    /** A second baseline: reads the record's timestamp through the Flink API (boxed Long) and emits. */
    static final class TimestampReader extends ProcessFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        long max = Long.MIN_VALUE;

        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out) {
            Long ts = ctx.timestamp();
            if (ts != null && ts > max) {
                max = ts;
            }
            out.collect(value);
        }
    }

    static double nsPerRecord(ProcessFunction<Long, Long> fn, Long[] values, long[] times, int rounds) throws Exception {
        MutableContext holder = new MutableContext();
        ProcessFunction<Long, Long>.Context ctx = fn.new Context() {
            @Override
            public Long timestamp() {
                return holder.ts;
            }

            @Override
            public org.apache.flink.streaming.api.TimerService timerService() {
                throw new UnsupportedOperationException();
            }

            @Override
            public <X> void output(org.apache.flink.util.OutputTag<X> outputTag, X value) {
                throw new UnsupportedOperationException();
            }
        };
        Sink out = new Sink();
        double[] r = new double[rounds];
        for (int round = 0; round < rounds; round++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < values.length; i++) {
                holder.ts = times[i];
                fn.processElement(values[i], ctx, out);
            }
            r[round] = (System.nanoTime() - t0) / (double) values.length;
        }
        if (out.sum == 42) {
            System.out.print("");
        }
        Arrays.sort(r);
        return r[rounds / 2];
    }

    static GateProcessFunction<Long> gate(Color color, CoordinationState state) throws Exception {
        String ch = "bench-" + color + "-" + state.stage() + "-" + System.nanoTime();
        ManualStateSource.channel(ch).publish(state);
        GateProcessFunction<Long> g = new GateProcessFunction<>(color, new ManualStateSource(ch));
        g.start(new org.apache.flink.metrics.groups.UnregisteredMetricsGroup(), "bench");
        return g;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    public static void main(String[] args) throws Exception {
        int n = 1 << 20;
        Long[] values = new Long[n];
        long[] times = new long[n];
        for (int i = 0; i < n; i++) {
            values[i] = (long) i;
            times[i] = HandoverJob.eventTime(i);
        }
        long w = HandoverJob.eventTime(n / 2);
        CoordinationState running = CoordinationState.of(0, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0);
        CoordinationState set = CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, w, 0);
        ProcessFunction<Long, Long> identity = new HandoverJob.Identity();
        ProcessFunction<Long, Long> gateRunning = gate(Color.BLUE, running);
        ProcessFunction<Long, Long> gateSplit = gate(Color.BLUE, set);
        // Warmup: all three through the same call site, so the comparison is fair (megamorphic).
        for (int i = 0; i < 5; i++) {
            nsPerRecord(new TimestampReader(), values, times, 3);
            nsPerRecord(identity, values, times, 3);
            nsPerRecord(gateRunning, values, times, 3);
            nsPerRecord(gateSplit, values, times, 3);
        }
        int rounds = 11;
        int reps = 7;
        double[][] m = new double[4][reps];
        ProcessFunction<Long, Long>[] fns = new ProcessFunction[] {identity, gateRunning, gateSplit, new TimestampReader()};
        for (int rep = 0; rep < reps; rep++) {
            for (int f = 0; f < fns.length; f++) {
                m[f][rep] = nsPerRecord(fns[f], values, times, rounds);
            }
        }
        double[] med = new double[4];
        String[] range = new String[4];
        for (int f = 0; f < 4; f++) {
            Arrays.sort(m[f]);
            med[f] = m[f][reps / 2];
            range[f] = String.format("%.2f..%.2f", m[f][0], m[f][reps - 1]);
        }
        System.out.printf("decision path (%d records, %d interleaved reps of %d rounds; median of rep medians, [min..max]):%n"
                + "  identity ProcessFunction          %.2f ns/record [%s]%n"
                + "  gate, RUNNING (every record PASS) %.2f ns/record [%s]  (+%.2f ns over identity)%n"
                + "  gate, W set, outgoing (half PASS, half DROP) %.2f ns/record [%s]%n"
                + "  timestamp reader (ctx.timestamp() + max, emits all) %.2f ns/record [%s]%n",
                n, reps, rounds, med[0], range[0], med[1], range[1], med[1] - med[0], med[2], range[2], med[3], range[3]);
        if (args.length > 0 && args[0].equals("--decision-only")) {
            Runtime.getRuntime().halt(0);
        }
        long records = args.length > 0 ? Long.parseLong(args[0]) : 30_000_000L;
        int jobReps = args.length > 1 ? Integer.parseInt(args[1]) : 7;
        boolean objectReuse = args.length > 2 && args[2].equals("--object-reuse");
        LocalFlink flink = LocalFlink.shared();
        String ch = "bench-job";
        ManualStateSource.channel(ch).publish(running);
        long realisticRecords = records / 30;
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("bluegreen-bench-");
        // [pipeline][0 = no gate, 1 = gate][rep]; rep 0 is a warmup; the order alternates per rep.
        // Variant 2, for the trivial pipeline only: an identity map where the gate goes (the cost of any chained operator).
        double[][][] ms = new double[2][3][jobReps + 1];
        double[][][] cpu = new double[2][3][jobReps + 1];
        for (int rep = 0; rep <= jobReps; rep++) {
            for (int k = 0; k < 3; k++) {
                int g = (rep + k) % 3;
                for (int pipeline = 0; pipeline < 2; pipeline++) {
                    if (pipeline == 1 && g == 2) {
                        continue;
                    }
                    StreamExecutionEnvironment env = HandoverJob.env(1);
                    if (objectReuse) {
                        env.getConfig().enableObjectReuse();
                    }
                    String key = "bench-" + pipeline + "-" + g + "-" + rep;
                    CPU_NS.put(key, new java.util.concurrent.atomic.AtomicLong());
                    if (pipeline == 0) {
                        trivial(env, records, g, ch, key);
                    } else {
                        Realistic.build(env, realisticRecords, g == 1, ch, dir.resolve("run-" + rep + "-" + g), key);
                    }
                    ms[pipeline][g][rep] = flink.runMs(env, key, 1_800_000);
                    cpu[pipeline][g][rep] = CPU_NS.get(key).get() / 1e6;
                }
            }
            deleteTree(dir);
            java.nio.file.Files.createDirectories(dir);
        }
        String[] names = {"(a) trivial: ids -> timestamps -> [gate] -> discarding sink, " + records + " records",
            "(b) realistic: ids -> timestamps -> POJO -> keyBy (serialized) -> keyed count state -> String -> [gate] -> FileSink, "
                    + realisticRecords + " records"};
        System.out.printf("job throughput (parallelism 1, object reuse %s, %d interleaved runs after a warmup): wall = Flink's net runtime"
                + " per job; cpu = CPU time of the job's task threads (less sensitive to other load on the machine):%n", objectReuse, jobReps);
        for (int pipeline = 0; pipeline < 2; pipeline++) {
            long count = pipeline == 0 ? records : realisticRecords;
            System.out.printf("  %s%n", names[pipeline]);
            for (int metric = 0; metric < 2; metric++) {
                double[][] x = metric == 0 ? ms[pipeline] : cpu[pipeline];
                double[] none = Arrays.copyOfRange(x[0], 1, jobReps + 1);
                double[] gate = Arrays.copyOfRange(x[1], 1, jobReps + 1);
                double[] ratio = new double[jobReps];
                for (int i = 0; i < jobReps; i++) {
                    ratio[i] = none[i] / gate[i]; // throughput with the gate / without, in the same rep
                }
                String what = metric == 0 ? "wall" : "cpu ";
                System.out.printf("    %s ms, no gate %s%n    %s ms, gate    %s%n    %s: gate/no gate = %.3f (medians: %.1f vs %.1f ns/record); per-rep ratios %s%n",
                        what, Arrays.toString(none), what, Arrays.toString(gate), what,
                        median(none) / median(gate), median(gate) * 1e6 / count, median(none) * 1e6 / count, fmt(ratio));
                if (pipeline == 0) {
                    double[] map = Arrays.copyOfRange(x[2], 1, jobReps + 1);
                    System.out.printf("    %s ms, identity map %s%n    %s: identity map/no gate = %.3f, gate/identity map = %.3f (median %.1f ns/record)%n",
                            what, Arrays.toString(map), what, median(none) / median(map), median(map) / median(gate), median(map) * 1e6 / count);
                }
            }
        }
        deleteTree(dir);
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    /** CPU time (ns) of the task threads per run key, added by {@link CpuSink} and the realistic functions on close. */
    static final java.util.Map<String, java.util.concurrent.atomic.AtomicLong> CPU_NS = new java.util.concurrent.ConcurrentHashMap<>();

    static void addThreadCpu(String key) {
        CPU_NS.get(key).addAndGet(java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime());
    }

    /** The trivial pipeline: ids, event times and watermarks, [the gate], a discarding sink (one task thread). */
    /** An identity map: the reference for the cost of any chained operator. */
    static final class IdentityMap implements org.apache.flink.api.common.functions.MapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long map(Long v) {
            return v;
        }
    }

    /** {@code variant}: 0 nothing, 1 the gate, 2 an identity map before the sink. */
    static void trivial(StreamExecutionEnvironment env, long n, int variant, String channel, String key) {
        org.apache.flink.streaming.api.datastream.DataStream<Long> s = env.fromSequence(0, n - 1)
                .assignTimestampsAndWatermarks(org.apache.flink.api.common.eventtime.WatermarkStrategy
                        .<Long>forBoundedOutOfOrderness(java.time.Duration.ofMillis(HandoverJob.OUT_OF_ORDERNESS_MS))
                        .withTimestampAssigner((id, ts) -> HandoverJob.eventTime(id)));
        if (variant == 1) {
            GateSinkWrapper.sinkTo(s, new GateProcessFunction<>(Color.BLUE, new ManualStateSource(channel)), new CpuSink(key));
        } else if (variant == 2) {
            s.map(new IdentityMap()).sinkTo(new CpuSink(key));
        } else {
            s.sinkTo(new CpuSink(key));
        }
    }

    /** Discards records; on close adds its task thread's CPU time to {@link #CPU_NS}. */
    static final class CpuSink extends org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink<Long> {
        private static final long serialVersionUID = 1L;
        private final String key;

        CpuSink(String key) {
            this.key = key;
        }

        @Override
        public org.apache.flink.api.connector.sink2.SinkWriter<Long> createWriter(org.apache.flink.api.connector.sink2.WriterInitContext context) {
            return new org.apache.flink.api.connector.sink2.SinkWriter<>() {
                long sum;

                @Override
                public void write(Long v, Context context) {
                    sum += v;
                }

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {
                    if (sum == 42) {
                        System.out.print("");
                    }
                    addThreadCpu(key);
                }
            };
        }
    }

    static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    static String fmt(double[] xs) {
        StringBuilder b = new StringBuilder("[");
        for (double x : xs) {
            b.append(b.length() > 1 ? " " : "").append(String.format("%.3f", x));
        }
        return b.append("] (median ").append(String.format("%.3f", median(xs))).append(")").toString();
    }

    static void deleteTree(java.nio.file.Path dir) throws java.io.IOException {
        if (!java.nio.file.Files.exists(dir)) {
            return;
        }
        try (java.util.stream.Stream<java.nio.file.Path> paths = java.nio.file.Files.walk(dir)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) paths.sorted(java.util.Comparator.reverseOrder())::iterator) {
                java.nio.file.Files.delete(p);
            }
        }
    }

    /**
     * The realistic pipeline: ids with event times and watermarks, mapped to a POJO, keyed by one
     * of 10,000 keys (a serialized network exchange), a running count per key in keyed state, a
     * String line per record, then [the gate] and a row-format FileSink writing real files.
     */
    static final class Realistic {
        private Realistic() {}

        /** A record of the realistic pipeline (a Flink POJO). */
        public static final class Event {
            public long key;
            public long eventTime;
            public String payload;

            public Event() {}
        }

        static final class ToEvent extends org.apache.flink.api.common.functions.RichMapFunction<Long, Event> {
            private static final long serialVersionUID = 1L;
            private final String key;

            ToEvent(String key) {
                this.key = key;
            }

            @Override
            public void close() {
                addThreadCpu(key); // the first task's thread: source, timestamps, this map
            }

            @Override
            public Event map(Long id) {
                Event e = new Event();
                e.key = id % 10_000;
                e.eventTime = HandoverJob.eventTime(id);
                e.payload = "order-" + id + "-customer-" + (id % 977) + "-amount-" + (id % 10_007);
                return e;
            }
        }

        static final class Count extends org.apache.flink.streaming.api.functions.KeyedProcessFunction<Long, Event, String> {
            private static final long serialVersionUID = 1L;
            private transient org.apache.flink.api.common.state.ValueState<Long> count;
            private final String key;

            Count(String key) {
                this.key = key;
            }

            @Override
            public void close() {
                addThreadCpu(key); // the second task's thread: this function, [the gate], the FileSink
            }

            @Override
            public void open(org.apache.flink.api.common.functions.OpenContext ctx) {
                count = getRuntimeContext().getState(new org.apache.flink.api.common.state.ValueStateDescriptor<>("count", Long.class));
            }

            @Override
            public void processElement(Event e, Context ctx, Collector<String> out) throws Exception {
                Long c = count.value();
                long next = c == null ? 1 : c + 1;
                count.update(next);
                out.collect(e.key + "," + next + "," + e.eventTime + "," + e.payload);
            }
        }

        static void build(StreamExecutionEnvironment env, long n, boolean gate, String channel, java.nio.file.Path dir, String key) {
            org.apache.flink.streaming.api.datastream.DataStream<String> lines = env.fromSequence(0, n - 1)
                    .assignTimestampsAndWatermarks(org.apache.flink.api.common.eventtime.WatermarkStrategy
                            .<Long>forBoundedOutOfOrderness(java.time.Duration.ofMillis(HandoverJob.OUT_OF_ORDERNESS_MS))
                            .withTimestampAssigner((id, ts) -> HandoverJob.eventTime(id)))
                    .map(new ToEvent(key))
                    .keyBy(e -> e.key, org.apache.flink.api.common.typeinfo.Types.LONG)
                    .process(new Count(key), org.apache.flink.api.common.typeinfo.Types.STRING);
            org.apache.flink.connector.file.sink.FileSink<String> sink = org.apache.flink.connector.file.sink.FileSink
                    .forRowFormat(new org.apache.flink.core.fs.Path(dir.toUri()),
                            new org.apache.flink.api.common.serialization.SimpleStringEncoder<String>("UTF-8"))
                    .build();
            if (gate) {
                GateSinkWrapper.sinkTo(lines, new GateProcessFunction<>(Color.BLUE, new ManualStateSource(channel)), sink);
            } else {
                lines.sinkTo(sink);
            }
        }
    }
}
