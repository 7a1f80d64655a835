package io.bluegreen.gate;

import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.metrics.groups.SinkWriterMetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The gate's decision path per record, under JMH (docs/performance.md, "Decision path"): each
 * benchmark calls one function on {@link #N} records (a cache-resident working set, event times
 * of {@link HandoverJob#eventTime}), so the score is ns per record.
 *
 * <ul>
 *   <li>{@code process*}: {@code ProcessFunction.processElement} with a reused context: an identity
 *       function (the baseline), one that reads the timestamp and emits, the gate in RUNNING (every
 *       record PASS) and the gate with W set in the middle of the records (half PASS, half DROP).
 *   <li>{@code writer*}: the gate in the sink: the bare writer, a wrapper that only delegates (the
 *       baseline), and {@link GatedSink}'s writer in RUNNING; with Flink's boxing writer context.
 * </ul>
 *
 * <p>Run (the test classes hold JMH's generated code and benchmark list):
 * {@code mvn -B -q -pl jvm test-compile exec:exec -Dexec.executable=java -Dexec.classpathScope=test
 * -Dexec.args="-cp %classpath org.openjdk.jmh.Main DecisionBench -f 2 -wi 3 -i 5"}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 2, jvmArgsAppend = {"-Xmx1g", "-XX:+UseSerialGC"})
public class DecisionBench {
    /** Records per invocation. */
    static final int N = 4096;

    Long[] values;
    long[] times;
    final MutableContext holder = new MutableContext();
    final Sink out = new Sink();
    ProcessFunction<Long, Long> identity;
    ProcessFunction<Long, Long> timestampReader;
    ProcessFunction<Long, Long> gateRunning;
    ProcessFunction<Long, Long> gateWSet;
    ProcessFunction<Long, Long>.Context ctx;
    final BoxingContext writerContext = new BoxingContext();
    final SumWriter bare = new SumWriter();
    SinkWriter<Long> delegating;
    SinkWriter<Long> gated;

    @Setup
    @SuppressWarnings("unchecked")
    public void setup() throws Exception {
        values = new Long[N];
        times = new long[N];
        for (int i = 0; i < N; i++) {
            values[i] = (long) i;
            times[i] = HandoverJob.eventTime(i);
        }
        CoordinationState running = CoordinationState.of(0, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0);
        CoordinationState wSet = CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET,
                HandoverJob.eventTime(N / 2), 0);
        identity = new HandoverJob.Identity();
        timestampReader = new TimestampReader();
        gateRunning = gate(Color.BLUE, running);
        gateWSet = gate(Color.BLUE, wSet);
        ctx = identity.new Context() {
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
        delegating = new SinkWriter<>() {
            @Override
            public void write(Long v, Context context) throws java.io.IOException, InterruptedException {
                bare.write(v, context);
            }

            @Override
            public void flush(boolean endOfInput) {}

            @Override
            public void close() {}
        };
        String ch = "bench-writer-" + System.nanoTime();
        ManualStateSource.channel(ch).publish(running);
        gated = ((GatedSink<Long>) GatedSink.wrap(new SumSink(), new GateProcessFunction<>(Color.BLUE, new ManualStateSource(ch))))
                .createWriter(fakeInitContext());
    }

    @TearDown
    public void tearDown() throws Exception {
        gated.close();
    }

    private long process(ProcessFunction<Long, Long> fn) throws Exception {
        for (int i = 0; i < N; i++) {
            holder.ts = times[i];
            fn.processElement(values[i], ctx, out);
        }
        return out.sum;
    }

    private long write(SinkWriter<Long> w) throws Exception {
        for (int i = 0; i < N; i++) {
            writerContext.ts = times[i];
            w.write(values[i], writerContext);
        }
        return bare.sum;
    }

    /** Baseline: a ProcessFunction that only emits. */
    @Benchmark
    @OperationsPerInvocation(N)
    public long processIdentity() throws Exception {
        return process(identity);
    }

    /** A ProcessFunction that reads {@code ctx.timestamp()} (boxed), keeps the max and emits. */
    @Benchmark
    @OperationsPerInvocation(N)
    public long processTimestampReader() throws Exception {
        return process(timestampReader);
    }

    /** The gate, RUNNING: every record PASS. */
    @Benchmark
    @OperationsPerInvocation(N)
    public long processGateRunning() throws Exception {
        return process(gateRunning);
    }

    /** The gate of the outgoing color with W set: half PASS, half DROP. */
    @Benchmark
    @OperationsPerInvocation(N)
    public long processGateWSet() throws Exception {
        return process(gateWSet);
    }

    /** The sink's own writer, no wrapper. */
    @Benchmark
    @OperationsPerInvocation(N)
    public long writerBare() throws Exception {
        return write(bare);
    }

    /** Baseline for the gate in the sink: a writer wrapper that only delegates. */
    @Benchmark
    @OperationsPerInvocation(N)
    public long writerDelegating() throws Exception {
        return write(delegating);
    }

    /** The gate in the sink ({@link GatedSink}'s writer), RUNNING: every record PASS. */
    @Benchmark
    @OperationsPerInvocation(N)
    public long writerGated() throws Exception {
        return write(gated);
    }

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

    static GateProcessFunction<Long> gate(Color color, CoordinationState state) throws Exception {
        String ch = "bench-" + color + "-" + state.stage() + "-" + System.nanoTime();
        ManualStateSource.channel(ch).publish(state);
        GateProcessFunction<Long> g = new GateProcessFunction<>(color, new ManualStateSource(ch));
        g.start(new UnregisteredMetricsGroup(), "bench");
        return g;
    }

    /** A sink writer that sums what it is given (the end of the writer path). */
    static final class SumWriter implements SinkWriter<Long> {
        long sum;

        @Override
        public void write(Long v, Context context) {
            sum += v;
        }

        @Override
        public void flush(boolean endOfInput) {}

        @Override
        public void close() {}
    }

    /** A sink of {@link SumWriter}s (DiscardingSink only to compile against Flink 1.20 and 2.x). */
    static final class SumSink extends DiscardingSink<Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public SinkWriter<Long> createWriter(WriterInitContext c) {
            return new SumWriter();
        }
    }

    /** Flink's sink writer context as SinkWriterOperator implements it: the timestamp boxed on every call. */
    static final class BoxingContext implements SinkWriter.Context {
        long ts;

        @Override
        public long currentWatermark() {
            return Long.MIN_VALUE;
        }

        @Override
        public Long timestamp() {
            return ts;
        }
    }

    /** A writer init context with what the gated writer needs; its timers never fire. */
    static WriterInitContext fakeInitContext() {
        ProcessingTimeService time = (ProcessingTimeService) java.lang.reflect.Proxy.newProxyInstance(DecisionBench.class.getClassLoader(),
                new Class<?>[] {ProcessingTimeService.class}, (proxy, m, a) -> m.getName().equals("getCurrentProcessingTime") ? (Object) 0L : null);
        SinkWriterMetricGroup metrics = UnregisteredMetricsGroup.createSinkWriterMetricGroup();
        return (WriterInitContext) java.lang.reflect.Proxy.newProxyInstance(DecisionBench.class.getClassLoader(),
                new Class<?>[] {WriterInitContext.class}, (proxy, m, a) -> {
                    switch (m.getName()) {
                        case "createInputSerializer":
                            return LongSerializer.INSTANCE;
                        case "getProcessingTimeService":
                            return time;
                        case "metricGroup":
                            return metrics;
                        case "getMailboxExecutor":
                            return null; // only a full hold buffer yields; nothing is held here
                        default:
                            throw new UnsupportedOperationException(m.getName());
                    }
                });
    }
}
