package io.bluegreen.local.testjob;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * The real-mode test job: sequence numbers 0, 1, 2, ... (one source split, event time 10 ms per
 * number), throttled to {@code --rate} per second, keyed by {@code n % --keys}, a running count
 * per key in keyed state, a discarding sink, checkpoints every {@code --checkpoint-ms}.
 *
 * <p>Operator {@code count} exports what a test needs to tell restored state from a fresh start:
 * gauge {@code firstSequence} (the first number this run processed: 0 on a fresh start, the
 * resume position after a restore), gauge {@code lastSequence}, and counter
 * {@code stateMismatches} (records whose key's count is not {@code n / keys + 1}, i.e. the keyed
 * state did not match the source position). The job name carries the {@code BLUEGREEN_COLOR} and
 * {@code BLUEGREEN_SIDECAR_URL} the JVM sees. {@code --fail-at N} throws when number N passes.
 */
public final class CountingJob {
    private CountingJob() {}

    /** Entry point: {@code [--rate N] [--keys N] [--checkpoint-ms N] [--fail-at N]}. */
    public static void main(String[] args) throws Exception {
        long rate = 200;
        long keys = 16;
        long checkpointMs = 1000;
        long failAt = -1;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--rate": rate = Long.parseLong(args[i + 1]); break;
                case "--keys": keys = Long.parseLong(args[i + 1]); break;
                case "--checkpoint-ms": checkpointMs = Long.parseLong(args[i + 1]); break;
                case "--fail-at": failAt = Long.parseLong(args[i + 1]); break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.enableCheckpointing(checkpointMs);
        final long keyCount = keys;
        env.fromSource(
                        new NumberSequenceSource(0, Long.MAX_VALUE),
                        WatermarkStrategy.<Long>forMonotonousTimestamps()
                                .withTimestampAssigner((n, ts) -> 1_767_225_600_000L + n * 10),
                        "numbers")
                .setParallelism(1)
                .map(new Throttle(rate, failAt))
                .name("throttle")
                .setParallelism(1)
                .keyBy(n -> n % keyCount)
                .process(new RunningCount(keyCount))
                .name("count")
                .sinkTo(new DiscardingSink<>())
                .name("discard");
        env.execute("counting-job color=" + System.getenv("BLUEGREEN_COLOR")
                + " sidecar=" + System.getenv("BLUEGREEN_SIDECAR_URL"));
    }

    /** Passes numbers through at most {@code rate} per second; throws at {@code failAt}. */
    static final class Throttle extends RichMapFunction<Long, Long> {
        private final long pauseMicros;
        private final long failAt;

        Throttle(long rate, long failAt) {
            this.pauseMicros = 1_000_000 / Math.max(1, rate);
            this.failAt = failAt;
        }

        @Override
        public Long map(Long n) throws InterruptedException {
            if (n == failAt) {
                throw new IllegalStateException("CountingJob fails at " + n + " as asked");
            }
            Thread.sleep(pauseMicros / 1000, (int) (pauseMicros % 1000) * 1000);
            return n;
        }
    }

    /** A running count per key; emits {@code count}. */
    static final class RunningCount extends KeyedProcessFunction<Long, Long, Long> {
        private final long keys;
        private transient ValueState<Long> count;
        private transient Counter mismatches;
        private volatile long first = -1;
        private volatile long last = -1;

        RunningCount(long keys) {
            this.keys = keys;
        }

        @Override
        public void open(OpenContext context) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Long.class));
            mismatches = getRuntimeContext().getMetricGroup().counter("stateMismatches");
            getRuntimeContext().getMetricGroup().gauge("firstSequence", () -> first);
            getRuntimeContext().getMetricGroup().gauge("lastSequence", () -> last);
        }

        @Override
        public void processElement(Long n, Context ctx, Collector<Long> out) throws Exception {
            Long previous = count.value();
            long c = previous == null ? 1 : previous + 1;
            count.update(c);
            if (c != n / keys + 1) {
                mismatches.inc();
            }
            if (first < 0) {
                first = n;
            }
            last = n;
            out.collect(c);
        }
    }
}
