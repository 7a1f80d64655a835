package io.bluegreen.gate;

import java.util.Arrays;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;

/**
 * Job-throughput figures for docs/performance.md: Flink job throughput on a MiniCluster without
 * any gate, with the gate operator ({@link GateOperator}) and with the gate inside the sink
 * ({@link GatedSink}), runs rotated: (a) a trivial pipeline (ids, event times, watermarks →
 * discarding sink, plus reference variants that attribute the cost) and (b) a realistic one
 * ({@link Realistic}: keyed state, serialization, a FileSink). {@link ForkedJobBench} runs the
 * same pipelines one JVM per measurement; the decision path alone is {@link DecisionBench} (JMH).
 *
 * <p>Run: {@code mvn -B -q -pl jvm test-compile exec:exec -Dexec.executable=java -Dexec.classpathScope=test
 * -Dexec.args="-Xmx1g -XX:+UseSerialGC -cp %classpath io.bluegreen.gate.GateBench [RECORDS [RUNS [--object-reuse]]]"}.
 */
public final class GateBench {
    private GateBench() {}

    public static void main(String[] args) {
        haltOnFailure(() -> run(args));
    }

    /** A bench's body, which may throw anything. */
    interface Body {
        void run() throws Exception;
    }

    /** Runs {@code body}; on a failure prints it and halts with 1 (Flink's threads would keep the JVM alive). */
    static void haltOnFailure(Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            t.printStackTrace();
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
    }

    /**
     * {@code --profile VARIANT RECORDS ROUNDS}: only the trivial pipeline in one variant, ROUNDS
     * times (run under a profiler, e.g. {@code JAVA_OPTS="-Xmx1g -XX:StartFlightRecording=..."}).
     */
    static void profile(String[] args) throws Exception {
        int variant = Integer.parseInt(args[1]);
        long records = Long.parseLong(args[2]);
        int rounds = Integer.parseInt(args[3]);
        ManualStateSource.channel("bench-job").publish(
                CoordinationState.of(0, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0));
        LocalFlink flink = LocalFlink.shared();
        for (int r = 0; r < rounds; r++) {
            StreamExecutionEnvironment env = HandoverJob.env(1);
            String key = "profile-" + r;
            CPU_NS.put(key, new java.util.concurrent.atomic.AtomicLong());
            trivial(env, records, variant, "bench-job", key);
            long ms = flink.runMs(env, key, 1_800_000);
            System.out.printf("%s: %.1f ns/record wall, %.1f ns/record cpu, %.1f bytes/record allocated%n", TRIVIAL_VARIANTS[variant],
                    ms * 1e6 / records, CPU_NS.get(key).get() / (double) records, allocPerRecord(key, records));
        }
        System.out.flush();
        System.exit(0); // not halt: a flight recording is written by a shutdown hook
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static void run(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--profile")) {
            profile(args);
        }
        CoordinationState running = CoordinationState.of(0, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0);
        long records = args.length > 0 ? Long.parseLong(args[0]) : 30_000_000L;
        int jobReps = args.length > 1 ? Integer.parseInt(args[1]) : 7;
        boolean objectReuse = args.length > 2 && args[2].equals("--object-reuse");
        LocalFlink flink = LocalFlink.shared();
        String ch = "bench-job";
        ManualStateSource.channel(ch).publish(running);
        long realisticRecords = records / 30;
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("bluegreen-bench-");
        String[][] variants = {TRIVIAL_VARIANTS, REALISTIC_VARIANTS};
        // [pipeline][variant][rep]; rep 0 is a warmup; the order of the variants rotates per rep.
        double[][][] ms = new double[2][][];
        double[][][] cpu = new double[2][][];
        double[][] alloc = new double[2][];
        for (int pipeline = 0; pipeline < 2; pipeline++) {
            ms[pipeline] = new double[variants[pipeline].length][jobReps + 1];
            cpu[pipeline] = new double[variants[pipeline].length][jobReps + 1];
            alloc[pipeline] = new double[variants[pipeline].length];
        }
        for (int rep = 0; rep <= jobReps; rep++) {
            for (int pipeline = 0; pipeline < 2; pipeline++) {
                int nv = variants[pipeline].length;
                for (int k = 0; k < nv; k++) {
                    int g = (rep + k) % nv;
                    StreamExecutionEnvironment env = HandoverJob.env(1);
                    if (objectReuse) {
                        env.getConfig().enableObjectReuse();
                    }
                    String key = "bench-" + pipeline + "-" + g + "-" + rep;
                    CPU_NS.put(key, new java.util.concurrent.atomic.AtomicLong());
                    if (pipeline == 0) {
                        trivial(env, records, g, ch, key);
                    } else {
                        Realistic.build(env, realisticRecords, g, ch, dir.resolve("run-" + rep + "-" + g), key);
                    }
                    ms[pipeline][g][rep] = flink.runMs(env, key, 1_800_000);
                    cpu[pipeline][g][rep] = CPU_NS.get(key).get() / 1e6;
                    alloc[pipeline][g] = allocPerRecord(key, pipeline == 0 ? records : realisticRecords);
                }
            }
            deleteTree(dir);
            java.nio.file.Files.createDirectories(dir);
        }
        String[] names = {"(a) trivial: ids -> timestamps -> [gate] -> discarding sink, " + records + " records",
            "(b) realistic: ids -> timestamps -> POJO -> keyBy (serialized) -> keyed count state -> String -> [gate] -> FileSink, "
                    + realisticRecords + " records"};
        System.out.printf("job throughput (parallelism 1, object reuse %s, %d runs per variant after a warmup round, variants rotated"
                + " per round): wall = Flink's net runtime per job; cpu = CPU time of the job's task threads (less sensitive to other"
                + " load on the machine); ratio = throughput with the variant / without any gate = time without / time with%n",
                objectReuse, jobReps);
        for (int pipeline = 0; pipeline < 2; pipeline++) {
            long count = pipeline == 0 ? records : realisticRecords;
            System.out.printf("  %s%n", names[pipeline]);
            for (int metric = 1; metric >= 0; metric--) {
                double[][] x = metric == 0 ? ms[pipeline] : cpu[pipeline];
                double[] none = Arrays.copyOfRange(x[0], 1, jobReps + 1);
                String what = metric == 0 ? "wall" : "cpu ";
                for (int v = 0; v < variants[pipeline].length; v++) {
                    double[] with = Arrays.copyOfRange(x[v], 1, jobReps + 1);
                    double[] ratio = new double[jobReps];
                    for (int i = 0; i < jobReps; i++) {
                        ratio[i] = none[i] / with[i]; // same round
                    }
                    System.out.printf("    %s %-58s %8.1f ns/record (median)%s%s%n", what, variants[pipeline][v], median(with) * 1e6 / count,
                            v == 0 ? "" : String.format("  ratio %.3f (medians), per-round %s", median(none) / median(with), fmt(ratio)),
                            metric == 1 ? String.format("; %.1f bytes/record allocated", alloc[pipeline][v]) : "");
                }
            }
        }
        deleteTree(dir);
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    /** The variants of the trivial pipeline, by index (0 is the baseline). */
    static final String[] TRIVIAL_VARIANTS = {
        "no gate",
        "gate operator (GateSinkWrapper.sinkTo)",
        "gate in the sink (GatedSink.wrap)",
        "identity map where the gate operator goes",
        "delegating sink wrapper, no gate",
        "delegating sink wrapper reading context.timestamp()",
        "delegating sink wrapper with the gate's steady-state path",
    };

    /** The variants of the realistic pipeline, by index (0 is the baseline). */
    static final String[] REALISTIC_VARIANTS = {
        "no gate",
        "gate operator (GateSinkWrapper.sinkTo)",
        "gate in the sink (GatedSink.wrap)",
    };

    /** CPU time (ns) of the task threads per run key, added by {@link CpuSink} and the realistic functions on close. */
    static final java.util.Map<String, java.util.concurrent.atomic.AtomicLong> CPU_NS = new java.util.concurrent.ConcurrentHashMap<>();

    /** Bytes allocated by the task threads per run key (deterministic where CPU time is noisy). */
    static final java.util.Map<String, java.util.concurrent.atomic.AtomicLong> ALLOC = new java.util.concurrent.ConcurrentHashMap<>();

    static void addThreadCpu(String key) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        CPU_NS.get(key).addAndGet(mx.getCurrentThreadCpuTime());
        if (mx instanceof com.sun.management.ThreadMXBean) {
            ALLOC.computeIfAbsent(key, k -> new java.util.concurrent.atomic.AtomicLong())
                    .addAndGet(((com.sun.management.ThreadMXBean) mx).getThreadAllocatedBytes(Thread.currentThread().getId()));
        }
    }

    static double allocPerRecord(String key, long records) {
        java.util.concurrent.atomic.AtomicLong a = ALLOC.get(key);
        return a == null ? Double.NaN : a.get() / (double) records;
    }

    /** An identity map: the reference for the cost of any chained operator. */
    static final class IdentityMap implements org.apache.flink.api.common.functions.MapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long map(Long v) {
            return v;
        }
    }

    /** The trivial pipeline in variant {@code variant} of {@link #TRIVIAL_VARIANTS}. */
    static void trivial(StreamExecutionEnvironment env, long n, int variant, String channel, String key) {
        org.apache.flink.streaming.api.datastream.DataStream<Long> s = env.fromSequence(0, n - 1)
                .assignTimestampsAndWatermarks(org.apache.flink.api.common.eventtime.WatermarkStrategy
                        .<Long>forBoundedOutOfOrderness(java.time.Duration.ofMillis(HandoverJob.OUT_OF_ORDERNESS_MS))
                        .withTimestampAssigner((id, ts) -> HandoverJob.eventTime(id)));
        switch (variant) {
            case 0:
                s.sinkTo(new CpuSink(key));
                break;
            case 1:
                GateSinkWrapper.sinkTo(s, new GateProcessFunction<>(Color.BLUE, new ManualStateSource(channel)), new CpuSink(key));
                break;
            case 2:
                s.sinkTo(GatedSink.wrap(new CpuSink(key), new GateProcessFunction<>(Color.BLUE, new ManualStateSource(channel))));
                break;
            case 3:
                s.map(new IdentityMap()).sinkTo(new CpuSink(key));
                break;
            case 4:
                s.sinkTo(new DelegatingSink<>(new CpuSink(key), DelegatingSink.DELEGATE));
                break;
            case 5:
                s.sinkTo(new DelegatingSink<>(new CpuSink(key), DelegatingSink.MAXIMUM));
                break;
            case 6:
                s.sinkTo(new DelegatingSink<>(new CpuSink(key), DelegatingSink.STEADY_STATE));
                break;
            default:
                throw new IllegalArgumentException("variant " + variant);
        }
    }

    /**
     * A sink wrapper whose writer delegates and does, per record, one of: nothing
     * ({@link #DELEGATE}); read the record's timestamp from the context and keep the maximum, as
     * any gate must ({@link #MAXIMUM}: the floor under a gate inside a sink writer); or the gated
     * writer's whole steady-state path, a comparison with a bound, a counter and the maximum
     * ({@link #STEADY_STATE}: what the gate in the sink costs without the rest of {@link GatedSink}).
     */
    static final class DelegatingSink<T> extends org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink<T> {
        private static final long serialVersionUID = 1L;
        static final int DELEGATE = 0;
        static final int MAXIMUM = 1;
        static final int STEADY_STATE = 2;
        private final org.apache.flink.api.connector.sink2.Sink<T> inner;
        private final int mode;

        DelegatingSink(org.apache.flink.api.connector.sink2.Sink<T> inner, int mode) {
            this.inner = inner;
            this.mode = mode;
        }

        @Override
        public org.apache.flink.api.connector.sink2.SinkWriter<T> createWriter(org.apache.flink.api.connector.sink2.WriterInitContext context)
                throws java.io.IOException {
            org.apache.flink.api.connector.sink2.SinkWriter<T> w = inner.createWriter(context);
            switch (mode) {
                case DELEGATE:
                    return new Delegating<>(w);
                case MAXIMUM:
                    return new Delegating<>(w) {
                        long max = Long.MIN_VALUE;

                        @Override
                        public void write(T v, Context context) throws java.io.IOException, InterruptedException {
                            Long t = context.timestamp();
                            if (t != null && t > max) {
                                max = t;
                            }
                            w.write(v, context);
                        }

                        @Override
                        long result() {
                            return max;
                        }
                    };
                default:
                    return new Delegating<>(w) {
                        long bound = Long.MIN_VALUE;
                        long count;
                        long max = Long.MIN_VALUE;

                        @Override
                        public void write(T v, Context context) throws java.io.IOException, InterruptedException {
                            Long boxed = context.timestamp();
                            if (boxed != null) {
                                long ts = boxed;
                                if (ts > bound) {
                                    count++;
                                    max = Math.max(max, ts);
                                    w.write(v, context);
                                    return;
                                }
                            }
                            throw new IllegalStateException("not the steady state");
                        }

                        @Override
                        long result() {
                            return max + count;
                        }
                    };
            }
        }

        /** A writer that only delegates; {@link #result} keeps a subclass's per-record work alive. */
        static class Delegating<T> implements org.apache.flink.api.connector.sink2.SinkWriter<T> {
            final org.apache.flink.api.connector.sink2.SinkWriter<T> w;

            Delegating(org.apache.flink.api.connector.sink2.SinkWriter<T> w) {
                this.w = w;
            }

            @Override
            public void write(T v, Context context) throws java.io.IOException, InterruptedException {
                w.write(v, context);
            }

            long result() {
                return 0;
            }

            @Override
            public void flush(boolean endOfInput) throws java.io.IOException, InterruptedException {
                w.flush(endOfInput);
            }

            @Override
            public void close() throws Exception {
                if (result() == 42) {
                    System.out.print("");
                }
                w.close();
            }
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

        /** The realistic pipeline in variant {@code variant} of {@link #REALISTIC_VARIANTS}. */
        static void build(StreamExecutionEnvironment env, long n, int variant, String channel, java.nio.file.Path dir, String key) {
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
            GateProcessFunction<String> gate = new GateProcessFunction<>(Color.BLUE, new ManualStateSource(channel));
            switch (variant) {
                case 0:
                    lines.sinkTo(sink);
                    break;
                case 1:
                    GateSinkWrapper.sinkTo(lines, gate, sink);
                    break;
                case 2:
                    lines.sinkTo(GatedSink.wrap(sink, gate));
                    break;
                default:
                    throw new IllegalArgumentException("variant " + variant);
            }
        }
    }
}
