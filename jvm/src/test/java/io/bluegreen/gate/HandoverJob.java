package io.bluegreen.gate;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * The small job of the handover tests and the benchmark: a deterministic bounded source of ids
 * 0..n-1 with event times that increase with bounded out-of-orderness and matching watermarks,
 * an optional pacer, the gate (or nothing, or an identity ProcessFunction) and a sink that records
 * every id it receives.
 */
final class HandoverJob {
    private HandoverJob() {}

    static final long BASE = 1_700_000_000_000L;
    static final long OUT_OF_ORDERNESS_MS = 64;

    /** The event time of id {@code id}: increasing by 1 ms per id, up to 63 ms early (deterministic). */
    static long eventTime(long id) {
        long h = id * 0x9E3779B97F4A7C15L;
        h ^= h >>> 29;
        return BASE + id - (h & (OUT_OF_ORDERNESS_MS - 1));
    }

    /**
     * Where the gate goes: the operator, inside the sink (with the records' Flink timestamps as
     * event times, or with a {@link TimestampExtractor} computing them from the ids while the
     * Flink timestamps are {@link #STAMP_OFFSET_MS} later), none, or an identity operator in its
     * place.
     */
    enum Stage { GATE, GATE_IN_SINK, GATE_IN_SINK_EXTRACTOR, NONE, IDENTITY }

    /** The name of the recording sink with the gate inside: contains "bluegreen-gate", as the gate operator's does. */
    static final String GATED_SINK_NAME = "ids-sink (bluegreen-gate inside)";

    /**
     * With {@link Stage#GATE_IN_SINK_EXTRACTOR}, how much later than its event time a record's
     * Flink timestamp is (an hour, more than any test's span of event times): a gate that decided
     * by the Flink timestamp instead of the extractor's event time would emit records twice.
     */
    static final long STAMP_OFFSET_MS = 3_600_000L;

    static StreamExecutionEnvironment env(int parallelism) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        return env;
    }

    /** Builds the job into {@code env}; ids reach {@link Recorder} {@code recorderKey} (null: discard). */
    static void build(StreamExecutionEnvironment env, long n, int paceEvery, Stage stage,
            GateProcessFunction<Long> gate, String recorderKey) {
        build(env, n, paceEvery > 0 ? new Pacer(paceEvery) : null, stage, gate, recorderKey);
    }

    /** The same with any pacer (null: none). */
    static void build(StreamExecutionEnvironment env, long n, MapFunction<Long, Long> pacer, Stage stage,
            GateProcessFunction<Long> gate, String recorderKey) {
        WatermarkStrategy<Long> times = stage == Stage.GATE_IN_SINK_EXTRACTOR
                ? WatermarkStrategy.<Long>forGenerator(c -> new EventTimeWatermarks())
                        .withTimestampAssigner((id, ts) -> eventTime(id) + STAMP_OFFSET_MS)
                : WatermarkStrategy.<Long>forBoundedOutOfOrderness(Duration.ofMillis(OUT_OF_ORDERNESS_MS))
                        .withTimestampAssigner((id, ts) -> eventTime(id));
        DataStream<Long> s = env.fromSequence(0, n - 1)
                .name("ids")
                .assignTimestampsAndWatermarks(times)
                .name("event-times");
        if (pacer != null) {
            s = s.map(pacer).name("pacer");
        }
        switch (stage) {
            case GATE:
                s = GateSinkWrapper.gate(s, gate);
                break;
            case GATE_IN_SINK_EXTRACTOR:
                gate.withTimestampExtractor((id, ts) -> eventTime(id));
                s.sinkTo(GatedSink.wrap(new RecordingSink(recorderKey), gate)).name(GATED_SINK_NAME);
                return;
            case GATE_IN_SINK:
                s.sinkTo(GatedSink.wrap(new RecordingSink(recorderKey), gate)).name(GATED_SINK_NAME);
                return;
            case IDENTITY:
                s = s.process(new Identity()).name("identity");
                break;
            default:
                break;
        }
        s.sinkTo(new RecordingSink(recorderKey)).name("ids-sink");
    }

    /**
     * Bounded out-of-orderness watermarks of the ids' event times ({@link #eventTime}), not of
     * their Flink timestamps: the watermarks of a job whose event time is a field of the record.
     */
    static final class EventTimeWatermarks implements org.apache.flink.api.common.eventtime.WatermarkGenerator<Long> {
        private long max = Long.MIN_VALUE + OUT_OF_ORDERNESS_MS + 1;

        @Override
        public void onEvent(Long id, long timestamp, org.apache.flink.api.common.eventtime.WatermarkOutput output) {
            max = Math.max(max, eventTime(id));
        }

        @Override
        public void onPeriodicEmit(org.apache.flink.api.common.eventtime.WatermarkOutput output) {
            output.emitWatermark(new org.apache.flink.api.common.eventtime.Watermark(max - OUT_OF_ORDERNESS_MS - 1));
        }
    }

    /** Sleeps 1 ms every {@code every} records (per subtask) to make a job last a few seconds. */
    static final class Pacer implements MapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final int every;
        private transient int count;

        Pacer(int every) {
            this.every = every;
        }

        @Override
        public Long map(Long v) throws Exception {
            if (++count % every == 0) {
                Thread.sleep(1);
            }
            return v;
        }
    }

    /** Spreads each subtask's {@code perSubtask} records evenly over {@code totalMs} of wall time. */
    static final class TimedPacer implements MapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final long totalMs;
        private final long perSubtask;
        private transient long start;
        private transient long count;

        TimedPacer(long totalMs, long perSubtask) {
            this.totalMs = totalMs;
            this.perSubtask = perSubtask;
        }

        @Override
        public Long map(Long v) throws Exception {
            long now = System.currentTimeMillis();
            if (count++ == 0) {
                start = now;
            }
            long due = start + count * totalMs / perSubtask;
            if (due > now) {
                Thread.sleep(due - now);
            }
            return v;
        }
    }

    /** The baseline of the decision-path benchmark: a ProcessFunction that emits every record. */
    static final class Identity extends ProcessFunction<Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(Long value, Context ctx, org.apache.flink.util.Collector<Long> out) {
            out.collect(value);
        }
    }

    /**
     * Counts, per recorder key, how many times each id reached a sink, and how many records
     * reached it late (Flink timestamp at or below the sink's current watermark).
     */
    static final class Recorder {
        static final Map<String, AtomicIntegerArray> COUNTS = new ConcurrentHashMap<>();
        static final Map<String, AtomicLong> LATE = new ConcurrentHashMap<>();

        static AtomicIntegerArray create(String key, int n) {
            AtomicIntegerArray a = new AtomicIntegerArray(n);
            COUNTS.put(key, a);
            LATE.put(key, new AtomicLong());
            return a;
        }

        static long late(String key) {
            return LATE.get(key).get();
        }
    }

    /**
     * A Sink v2 that writes each record id into its recorder. It extends Flink's DiscardingSink
     * only to compile against both Flink 1.20 (where {@code createWriter(Sink.InitContext)} is
     * abstract) and 2.x (where {@code createWriter(WriterInitContext)} is); the runtime of both calls
     * the {@code WriterInitContext} variant.
     */
    static final class RecordingSink extends DiscardingSink<Long> {
        private static final long serialVersionUID = 1L;
        private final String key;

        RecordingSink(String key) {
            this.key = key;
        }

        @Override
        public SinkWriter<Long> createWriter(WriterInitContext context) {
            AtomicIntegerArray counts = key == null ? null : Recorder.COUNTS.get(key);
            AtomicLong late = key == null ? null : Recorder.LATE.get(key);
            return new SinkWriter<>() {
                @Override
                public void write(Long id, Context context) {
                    if (counts != null) {
                        counts.incrementAndGet(id.intValue());
                        Long ts = context.timestamp();
                        if (ts != null && ts <= context.currentWatermark()) {
                            late.incrementAndGet();
                        }
                    }
                }

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {}
            };
        }
    }

    /** The exactly-once oracle's verdict over two outputs. */
    static final class Verdict {
        final long duplicates;
        final long losses;
        final long blue;
        final long green;

        Verdict(AtomicIntegerArray blueCounts, AtomicIntegerArray greenCounts) {
            long d = 0, l = 0, b = 0, g = 0;
            for (int i = 0; i < blueCounts.length(); i++) {
                int cb = blueCounts.get(i);
                int cg = greenCounts.get(i);
                b += cb;
                g += cg;
                int c = cb + cg;
                if (c == 0) {
                    l++;
                } else if (c > 1) {
                    d += c - 1;
                }
            }
            duplicates = d;
            losses = l;
            blue = b;
            green = g;
        }

        boolean exactlyOnce() {
            return duplicates == 0 && losses == 0;
        }

        @Override
        public String toString() {
            return "blue emitted " + blue + ", green emitted " + green + ": " + duplicates + " duplicates, " + losses + " losses";
        }
    }

}
