package io.bluegreen.gate;

import java.util.Arrays;
import org.apache.flink.api.common.JobID;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Performance figures for docs/performance.md (run: {@code scripts/java-test.sh --bench}).
 *
 * <ol>
 *   <li>Decision path: ns/record of {@code GateProcessFunction.processElement} vs an identity
 *       ProcessFunction, called in a loop with a reused context (warmup, then the median of rounds).
 *   <li>Flink job throughput on a MiniCluster: source (ids, event times, watermarks) → [gate |
 *       identity | nothing] → discarding sink, parallelism 1, runs interleaved, median per variant.
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
        long records = args.length > 0 ? Long.parseLong(args[0]) : 10_000_000L;
        int jobReps = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        boolean objectReuse = args.length > 2 && args[2].equals("--object-reuse");
        LocalFlink flink = LocalFlink.shared();
        String ch = "bench-job";
        ManualStateSource.channel(ch).publish(running);
        HandoverJob.Stage[] variants = {HandoverJob.Stage.NONE, HandoverJob.Stage.IDENTITY, HandoverJob.Stage.GATE};
        double[][] secs = new double[variants.length][jobReps + 1];
        for (int rep = 0; rep <= jobReps; rep++) { // rep 0 is warmup
            for (int v = 0; v < variants.length; v++) {
                StreamExecutionEnvironment env = HandoverJob.env(1);
                if (objectReuse) {
                    env.getConfig().enableObjectReuse();
                }
                HandoverJob.build(env, records, 0, variants[v], new GateProcessFunction<>(Color.BLUE, new ManualStateSource(ch)), null);
                long t0 = System.nanoTime();
                JobID job = flink.submit(env, "bench-" + variants[v] + "-" + rep);
                Throwable err = flink.await(job, 600_000);
                if (err != null) {
                    throw new RuntimeException(err);
                }
                secs[v][rep] = (System.nanoTime() - t0) / 1e9;
            }
        }
        double[] jmed = new double[variants.length];
        double[] jmin = new double[variants.length];
        for (int v = 0; v < variants.length; v++) {
            double[] s = Arrays.copyOfRange(secs[v], 1, jobReps + 1);
            String runs = Arrays.toString(Arrays.stream(s).map(x -> Math.round(x * 1000) / 1000.0).toArray());
            Arrays.sort(s);
            jmed[v] = s[jobReps / 2];
            jmin[v] = s[0];
            System.out.printf("job %-8s runs (s): %s -> median %.3f s = %.2f M records/s, best %.3f s = %.2f M records/s%n",
                    variants[v], runs, jmed[v], records / jmed[v] / 1e6, jmin[v], records / jmin[v] / 1e6);
        }
        System.out.printf("job throughput ratio (%d records, parallelism 1, object reuse " + objectReuse + ", %d interleaved runs, submit to result):%n"
                + "  median: gate/none %.3f, gate/identity %.3f; best: gate/none %.3f, gate/identity %.3f%n",
                records, jobReps, jmed[0] / jmed[2], jmed[1] / jmed[2], jmin[0] / jmin[2], jmin[1] / jmin[2]);
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
