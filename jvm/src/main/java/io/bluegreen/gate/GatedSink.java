package io.bluegreen.gate;

import io.bluegreen.gate.sink.FileSinkCheck;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.connector.sink2.SupportsPostCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreWriteTopology;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gate inside the sink: a Sink V2 wrapper whose writer decides every record (pass, drop or
 * hold, by the rule of {@link GateProcessFunction}) before handing it to the wrapped sink's
 * writer. No extra operator: nothing is copied or counted between the gate and the sink, which is
 * what the gate operator ({@link GateOperator}) costs on a cheap pipeline.
 *
 * <p>Everything the operator does, it does in the writer, through the same {@link HeldRecords}: held records wait, serialized, in the
 * writer's checkpointed state; the watermark the wrapped writer sees is held back below them
 * ({@code writeWatermark} and the context of every record written while something is held); a
 * processing-time timer applies new states and releases held records; a full hold buffer applies
 * backpressure (the writer yields to the mailbox); at the end of a bounded input the writer waits
 * until every held record is decided; the same metrics, in the sink writer's metric group.
 *
 * <p>Differences to the operator: (1) the maximum passed event time is kept in the writer state,
 * which Flink splits (not unions) across subtasks on a rescale: every entry still reaches some
 * subtask, so the maximum over the job's gates is kept, but not every subtask learns it; (2) Flink
 * does not tell a sink writer when its inputs are idle ({@code WatermarkStatus} stops at the sink
 * operator), so the writer reports its input idle only after it has seen no record and no
 * watermark advance for {@link GateProcessFunction#withSinkIdleness} (30 s by default): a handover
 * whose inputs all go quiet waits that long, where the operator ({@link GateSinkWrapper#gate})
 * learns of idleness from Flink at once (docs/jvm.md).
 *
 * <p>Writer state: the wrapped writer's state entries (kind 0, with the wrapped serializer's version),
 * one entry with the maximum passed event time (kind 1) and one per held record (kind 2), under
 * serializer version {@link #STATE_VERSION}. State of another version is the wrapped sink's own
 * (written before the gate moved into the sink) and is handed to it as is. The held records and the
 * maximum are not color-specific: green restores blue's held records and decides them by its own
 * rule, as with the operator; isolate the wrapped sink's own state per color with
 * {@code ColorIsolatedSink} ({@code BlueGreenSinks.gated} does both).
 *
 * <p>It extends Flink's {@code DiscardingSink} only to compile against both Flink 1.20 and 2.x (see
 * {@code ColorIsolatedSink}).
 */
public abstract class GatedSink<T> extends DiscardingSink<T> implements SupportsWriterState<T, GatedSink.State> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(GatedSink.class);

    /** Version of the writer state written by the gated writer ("BG" 0x0002). */
    public static final int STATE_VERSION = 0x42470002;

    final Sink<T> inner;
    final GateProcessFunction<T> gate;

    GatedSink(Sink<T> inner, GateProcessFunction<T> gate) {
        this.inner = inner;
        this.gate = gate;
    }

    /**
     * {@code sink} with the gate {@code gate} inside its writer. Use the same sink uid in blue and
     * green. The wrapped sink is not isolated per color: wrap it with {@code ColorIsolatedSink}
     * first if it has state or a committer ({@code BlueGreenSinks.gated(sink, gate)} does).
     *
     * @throws IllegalArgumentException for a sink that adds its own operators (pre-write,
     *     pre-commit, post-commit topologies; a FileSink only with compaction): place the gate as an
     *     operator before it instead
     */
    public static <T> Sink<T> wrap(Sink<T> sink, GateProcessFunction<T> gate) {
        Objects.requireNonNull(sink, "sink");
        Objects.requireNonNull(gate, "gate");
        if (sink instanceof GatedSink) {
            throw new IllegalArgumentException("sink already has a gate inside (GatedSink)");
        }
        if (sink instanceof FileSink) {
            // Its pre-commit topology exists for compaction only; without compaction it is not needed.
            FileSinkCheck.checkNoCompaction((FileSink<?>) sink, "GatedSink");
        } else if (sink instanceof SupportsPreCommitTopology) {
            throw new IllegalArgumentException("GatedSink cannot take " + sink.getClass().getName()
                    + ": it adds its own operators (a pre-commit topology); place the gate as an"
                    + " operator before it instead: GateSinkWrapper.gate(stream, gate).sinkTo(sink)");
        }
        if (sink instanceof SupportsPreWriteTopology || sink instanceof SupportsPostCommitTopology) {
            throw new IllegalArgumentException("GatedSink cannot take " + sink.getClass().getName()
                    + ": it adds its own operators (a pre-write or post-commit topology); place the gate as an"
                    + " operator before it instead: GateSinkWrapper.gate(stream, gate).sinkTo(sink)");
        }
        return sink instanceof SupportsCommitter ? new Committing<>(sink, gate) : new Plain<>(sink, gate);
    }

    /** The gate's configuration. */
    public GateProcessFunction<T> gate() {
        return gate;
    }

    @Override
    public StatefulSinkWriter<T, State> createWriter(WriterInitContext context) throws IOException {
        return new GatedWriter<>(context, gate, inner.createWriter(context), null);
    }

    @Override
    @SuppressWarnings("unchecked")
    public StatefulSinkWriter<T, State> restoreWriter(WriterInitContext context, Collection<State> states) throws IOException {
        List<Object> own = new ArrayList<>();
        for (State s : states) {
            if (s.kind == State.INNER) {
                own.add(s.inner);
            }
        }
        SinkWriter<T> w;
        if (inner instanceof SupportsWriterState) {
            w = ((SupportsWriterState<T, Object>) inner).restoreWriter(context, own);
        } else {
            if (!own.isEmpty()) {
                LOG.warn("gated sink writer: dropped {} restored state entries of the wrapped sink, which has no writer state now", own.size());
            }
            w = inner.createWriter(context);
        }
        return new GatedWriter<>(context, gate, w, states);
    }

    @Override
    @SuppressWarnings("unchecked")
    public SimpleVersionedSerializer<State> getWriterStateSerializer() {
        return new StateSerializer(inner instanceof SupportsWriterState
                ? ((SupportsWriterState<T, Object>) inner).getWriterStateSerializer()
                : null);
    }

    /** A sink without a committer. */
    static final class Plain<T> extends GatedSink<T> {
        private static final long serialVersionUID = 1L;

        Plain(Sink<T> inner, GateProcessFunction<T> gate) {
            super(inner, gate);
        }
    }

    /** A sink with a committer: committables pass through unchanged. */
    static final class Committing<T> extends GatedSink<T> implements SupportsCommitter<Object> {
        private static final long serialVersionUID = 1L;

        Committing(Sink<T> inner, GateProcessFunction<T> gate) {
            super(inner, gate);
        }

        @Override
        @SuppressWarnings("unchecked")
        public Committer<Object> createCommitter(CommitterInitContext context) throws IOException {
            return ((SupportsCommitter<Object>) inner).createCommitter(context);
        }

        @Override
        @SuppressWarnings("unchecked")
        public SimpleVersionedSerializer<Object> getCommittableSerializer() {
            return ((SupportsCommitter<Object>) inner).getCommittableSerializer();
        }
    }

    // ---------------------------------------------------------------------------------------
    // State

    /** One entry of the gated writer's state: the wrapped writer's, the maximum passed event time, or a held record. */
    public static final class State {
        static final byte INNER = 0;
        static final byte MAX_PASSED = 1;
        static final byte HELD = 2;

        final byte kind;
        final Object inner;
        final long maxPassed;
        final byte[] held;

        private State(byte kind, Object inner, long maxPassed, byte[] held) {
            this.kind = kind;
            this.inner = inner;
            this.maxPassed = maxPassed;
            this.held = held;
        }

        static State inner(Object s) {
            return new State(INNER, s, 0, null);
        }

        static State maxPassed(long max) {
            return new State(MAX_PASSED, null, max, null);
        }

        static State held(byte[] encoded) {
            return new State(HELD, null, 0, encoded);
        }
    }

    static final class StateSerializer implements SimpleVersionedSerializer<State> {
        private final SimpleVersionedSerializer<Object> inner;

        StateSerializer(SimpleVersionedSerializer<Object> inner) {
            this.inner = inner;
        }

        @Override
        public int getVersion() {
            return STATE_VERSION;
        }

        @Override
        public byte[] serialize(State s) throws IOException {
            DataOutputSerializer out = new DataOutputSerializer(32);
            out.writeByte(s.kind);
            switch (s.kind) {
                case State.INNER: {
                    byte[] b = inner.serialize(s.inner);
                    out.writeInt(inner.getVersion());
                    out.writeInt(b.length);
                    out.write(b);
                    break;
                }
                case State.MAX_PASSED:
                    out.writeLong(s.maxPassed);
                    break;
                default:
                    out.writeInt(s.held.length);
                    out.write(s.held);
                    break;
            }
            return out.getCopyOfBuffer();
        }

        @Override
        public State deserialize(int version, byte[] bytes) throws IOException {
            if (version != STATE_VERSION) {
                // Written by the wrapped sink itself, before the gate was placed inside it.
                if (inner == null) {
                    throw new IOException("gated sink: restored writer state of version " + version
                            + " belongs to a sink with writer state, but the wrapped sink has none");
                }
                return State.inner(inner.deserialize(version, bytes));
            }
            DataInputDeserializer in = new DataInputDeserializer(bytes);
            byte kind = in.readByte();
            switch (kind) {
                case State.INNER: {
                    int v = in.readInt();
                    byte[] b = new byte[in.readInt()];
                    in.readFully(b);
                    if (inner == null) {
                        throw new IOException("gated sink: restored state of a wrapped sink with writer state, but the wrapped sink has none");
                    }
                    return State.inner(inner.deserialize(v, b));
                }
                case State.MAX_PASSED:
                    return State.maxPassed(in.readLong());
                case State.HELD: {
                    byte[] b = new byte[in.readInt()];
                    in.readFully(b);
                    return State.held(b);
                }
                default:
                    throw new IOException("gated sink: unknown state entry kind " + kind);
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // The writer

    /** Decides each record, then writes it through the wrapped writer; holds what it cannot decide yet. */
    @SuppressWarnings("try") // close() delegates to a writer that may throw InterruptedException
    static final class GatedWriter<T> implements StatefulSinkWriter<T, State>, CommittingSinkWriter<T, Object> {
        private final SinkWriter<T> inner;
        private final GateProcessFunction<T> fn;
        private final Gate gate;
        private final boolean recordTimestamps;
        private final ProcessingTimeService time;
        private final HoldBuffer held = new HoldBuffer();
        private final HeldRecords<T> holdings;
        /** The context of records written while others are held (timestamp, held-back watermark). */
        private final HeldBackContext heldBack = new HeldBackContext();
        /** The snapshot the task thread decides with (published to the report line). */
        private Gate.Snapshot applied;
        /**
         * The snapshot every held record was last decided under; {@link #applied} when nothing is
         * held, null after a restore with held records (so that the applied state decides them).
         */
        private Gate.Snapshot decidedUnder;
        /**
         * A record with an event time above this passes at once. It is {@code Rule.w} of
         * {@link #decidedUnder} when that rule gives PASS above w and nothing is held, else
         * {@code Long.MAX_VALUE} (every record takes the full path).
         */
        private long passAbove = Long.MAX_VALUE;
        /**
         * The per-record fast path: {@link #passAbove} when the record's Flink timestamp is its
         * event time (no extractor), else {@code Long.MAX_VALUE}, so that the steady state reads
         * the timestamp and compares it once.
         */
        private long timestampPassAbove = Long.MAX_VALUE;
        /** Whether records are held ({@code !held.isEmpty()}). */
        private boolean holding;
        /**
         * Records passed: the gate's {@link GateProcessFunction#METRIC_PASSED} counter, kept in a
         * field of this writer so that the fast path increments it without a second object.
         */
        private long passedCount;
        /**
         * The maximum passed event time; published to the report line ({@link GateProcessFunction#raiseMaxPassed})
         * before every state this writer applies, on every tick and for checkpoints.
         */
        private long maxPassed;
        private long inputWatermark = Long.MIN_VALUE;
        private long writtenWatermark = Long.MIN_VALUE;
        private boolean closed;
        /** Records decided and the input watermark at the last tick that saw them change, and when. */
        private long activitySeen = -1;
        private long watermarkSeen = Long.MIN_VALUE;
        private long activeAtNanos = System.nanoTime();
        /** Whether the report line says idle: quiet for the sink idleness ({@link #checkQuiet}). */
        private boolean quiet;

        GatedWriter(WriterInitContext context, GateProcessFunction<T> fn, SinkWriter<T> inner, Collection<State> restored)
                throws IOException {
            this.inner = inner;
            this.fn = fn;
            this.recordTimestamps = fn.usesRecordTimestamp();
            this.time = context.getProcessingTimeService();
            this.holdings = new HeldRecords<>(fn, context.createInputSerializer(), context.getMailboxExecutor(), held,
                    new HeldRecords.Placement<T>() {
                        @Override
                        public void emitPassed(T value, boolean hasTimestamp, long timestamp, long eventTime)
                                throws IOException, InterruptedException {
                            pass(eventTime);
                            // While records are held, the watermark written so far is below all of them: on time.
                            inner.write(value, heldBack.of(hasTimestamp, timestamp, holding ? writtenWatermark : inputWatermark));
                        }

                        @Override
                        public Gate.Snapshot refresh() throws IOException, InterruptedException {
                            Gate.Snapshot s = gate.latest();
                            if (s != decidedUnder) {
                                stateChanged(s);
                            }
                            return applied;
                        }
                    }, "gate in the sink");
            if (restored != null) {
                long max = Long.MIN_VALUE;
                boolean any = false;
                List<byte[]> heldRecords = new ArrayList<>();
                for (State s : restored) {
                    if (s.kind == State.MAX_PASSED) {
                        any = true;
                        max = Math.max(max, s.maxPassed);
                    } else if (s.kind == State.HELD) {
                        heldRecords.add(s.held);
                    }
                }
                if (any) {
                    fn.restoreMaxPassed(max);
                }
                held.restore(heldRecords, System.currentTimeMillis());
            }
            String name;
            try {
                name = context.getTaskInfo().getTaskNameWithSubtasks();
            } catch (RuntimeException | LinkageError e) {
                name = "gate";
            }
            try {
                fn.start(context.metricGroup(), name, new PassedCount());
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IOException(e);
            }
            held.registerGauges(context.metricGroup());
            maxPassed = fn.maxPassedLocal();
            gate = fn.gate();
            applied = fn.current();
            holding = !held.isEmpty();
            if (!holding) {
                decided(applied);
            }
            scheduleTick();
        }

        // ---- records ------------------------------------------------------------------------

        /**
         * Decides by the applied state. A newer state is applied by the tick (every
         * {@value GateProcessFunction#IDLE_APPLY_INTERVAL_MS} ms, on this thread, between records),
         * not looked up per record: the gate reports, and so acknowledges, only the state it has
         * applied, and decides every record by it.
         */
        @Override
        public void write(T element, Context context) throws IOException, InterruptedException {
            // Flink's context boxes the timestamp (null: none). Unboxed at once and never passed on
            // as an object, so that the JIT can drop the box; the cold paths box it again.
            Long boxed = context.timestamp();
            if (boxed != null) {
                long ts = boxed;
                if (ts > timestampPassAbove) { // the steady state: one comparison
                    pass(ts);
                    inner.write(element, context);
                    return;
                }
                writeSlow(element, context, true, ts);
            } else {
                writeSlow(element, context, false, 0L);
            }
        }

        private void writeSlow(T element, Context context, boolean hasTs, long ts) throws IOException, InterruptedException {
            long t = hasTs && recordTimestamps ? ts : eventTimeSlow(element, hasTs, ts);
            if (t > passAbove) {
                pass(t);
                inner.write(element, context);
                return;
            }
            writeDecided(element, context, hasTs, ts, t);
        }

        private void writeDecided(T element, Context context, boolean hasTs, long ts, long t) throws IOException, InterruptedException {
            if (decidedUnder != applied) {
                stateChanged(applied); // restored held records: decided by the applied state first
            }
            Gate.Snapshot s = applied;
            Decision d = s.rule.decide(t);
            if (d == Decision.PASS) {
                pass(t);
                inner.write(element, holding ? heldBack.of(hasTs, ts, writtenWatermark) : context);
            } else if (d == Decision.DROP) {
                fn.drop(s.rule, t);
            } else {
                hold(element, hasTs, ts, t);
            }
        }

        private void pass(long t) {
            passedCount++;
            maxPassed = Math.max(maxPassed, t);
        }

        /** {@link #passedCount} as Flink's metric: read by the reporter's thread, racy as {@code SimpleCounter}. */
        private final class PassedCount implements Counter {
            @Override
            public void inc() {
                passedCount++;
            }

            @Override
            public void inc(long n) {
                passedCount += n;
            }

            @Override
            public void dec() {
                passedCount--;
            }

            @Override
            public void dec(long n) {
                passedCount -= n;
            }

            @Override
            public long getCount() {
                return passedCount;
            }
        }

        /** {@code s} decides the records from now on (and every held record has been decided under it). */
        private void decided(Gate.Snapshot s) {
            decidedUnder = s;
            updatePassAbove();
        }

        private void updatePassAbove() {
            Rule r = decidedUnder == null ? null : decidedUnder.rule;
            passAbove = r != null && !holding && r.above() == Decision.PASS ? r.w() : Long.MAX_VALUE;
            timestampPassAbove = recordTimestamps ? passAbove : Long.MAX_VALUE;
        }

        private long eventTimeSlow(T element, boolean hasTs, long ts) throws IOException {
            try {
                return fn.eventTimeSlow(element, hasTs ? Long.valueOf(ts) : null);
            } catch (MissingTimestampException e) {
                throw new IOException(e.getMessage(), e);
            }
        }

        private void hold(T element, boolean hasTs, long ts, long t) throws IOException, InterruptedException {
            boolean nowHeld;
            try {
                nowHeld = holdings.hold(element, hasTs, ts, t);
            } catch (IOException | InterruptedException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IOException(e);
            }
            if (nowHeld) {
                holding = true;
                passAbove = Long.MAX_VALUE;
                timestampPassAbove = Long.MAX_VALUE;
            }
        }

        /**
         * Applies {@code s} on the task thread if it is new (publishing it to the report line), then
         * re-decides the held records under it.
         */
        private void stateChanged(Gate.Snapshot s) throws IOException, InterruptedException {
            if (s != applied) {
                // Every record passed under the older states raised maxPassed: publish it first.
                fn.raiseMaxPassed(maxPassed);
                fn.applyOnTaskThread(s);
                applied = s;
            }
            if (holding) {
                release(s);
            } else {
                decided(s);
            }
        }

        private void release(Gate.Snapshot s) throws IOException, InterruptedException {
            decided(s);
            boolean changed;
            try {
                changed = holdings.release(s.rule);
            } catch (IOException | InterruptedException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IOException(e);
            }
            holding = !held.isEmpty();
            updatePassAbove();
            if (changed) {
                writeWatermarkIfAdvanced();
            }
        }

        @Override
        public void writeWatermark(Watermark watermark) throws IOException, InterruptedException {
            inputWatermark = watermark.getTimestamp();
            quiet = false;
            fn.observeInput(inputWatermark, false);
            writeWatermarkIfAdvanced();
        }

        /**
         * On every tick: reports the input idle once no record was decided, none is held and the
         * watermark did not advance for the sink idleness, and active again with the next record
         * (within a tick) or watermark. Kept out of {@link #write}: the fast path stays one comparison.
         */
        private void checkQuiet() {
            long activity = passedCount + fn.droppedCount();
            long nowNanos = System.nanoTime();
            if (activity != activitySeen || inputWatermark != watermarkSeen || holding) {
                activitySeen = activity;
                watermarkSeen = inputWatermark;
                activeAtNanos = nowNanos;
                if (quiet) {
                    quiet = false;
                    fn.observeInput(inputWatermark, false);
                }
            } else if (!quiet && fn.sinkIdlenessNanos() > 0 && nowNanos - activeAtNanos >= fn.sinkIdlenessNanos()) {
                quiet = true;
                fn.observeInput(inputWatermark, true);
                LOG.info("bluegreen gate in the sink ({}): no record and no watermark advance for {} ms; reporting the input idle",
                        fn.color(), fn.sinkIdlenessNanos() / 1_000_000L);
            }
        }

        /** Writes {@code min(input watermark, lowest held timestamp - 1)} to the wrapped writer if it advanced. */
        private void writeWatermarkIfAdvanced() throws IOException, InterruptedException {
            long wm = held.heldBack(inputWatermark);
            if (wm > writtenWatermark) {
                writtenWatermark = wm;
                inner.writeWatermark(new Watermark(wm));
            }
        }

        // ---- the tick: new states, releases, the hold timeout ---------------------------------

        private void scheduleTick() {
            time.registerTimer(time.getCurrentProcessingTime() + GateProcessFunction.IDLE_APPLY_INTERVAL_MS, this::tick);
        }

        private void tick(long now) throws Exception {
            if (closed) {
                return;
            }
            Gate.Snapshot s = gate.latest();
            if (s != decidedUnder) {
                stateChanged(s);
            }
            fn.raiseMaxPassed(maxPassed); // the metric and report line lag by at most one tick
            checkQuiet();
            holdings.checkTimeout();
            scheduleTick();
        }

        // ---- checkpoints, end of input ----------------------------------------------------------

        @Override
        public void flush(boolean endOfInput) throws IOException, InterruptedException {
            if (endOfInput) {
                holdings.awaitAllDecided();
            }
            inner.flush(endOfInput);
        }

        @Override
        @SuppressWarnings("unchecked")
        public List<State> snapshotState(long checkpointId) throws IOException {
            List<State> out = new ArrayList<>();
            if (inner instanceof StatefulSinkWriter) {
                for (Object s : ((StatefulSinkWriter<T, Object>) inner).snapshotState(checkpointId)) {
                    out.add(State.inner(s));
                }
            }
            fn.raiseMaxPassed(maxPassed);
            out.add(State.maxPassed(fn.maxPassedLocal()));
            for (byte[] b : held.encodeAll()) {
                out.add(State.held(b));
            }
            return out;
        }

        @Override
        @SuppressWarnings("unchecked")
        public Collection<Object> prepareCommit() throws IOException, InterruptedException {
            // Flink calls this on every CommittingSinkWriter, also of a sink without a committer.
            return inner instanceof CommittingSinkWriter ? ((CommittingSinkWriter<T, Object>) inner).prepareCommit() : List.of();
        }

        @Override
        public void close() throws Exception {
            closed = true;
            try {
                fn.close();
            } finally {
                inner.close();
            }
        }
    }

    /** A record's context for the wrapped writer while records are held: the held-back watermark. */
    static final class HeldBackContext implements SinkWriter.Context {
        private Long timestamp;
        private long watermark;

        HeldBackContext of(boolean hasTs, long ts, long wm) {
            timestamp = hasTs ? Long.valueOf(ts) : null;
            watermark = wm;
            return this;
        }

        @Override
        public long currentWatermark() {
            return watermark;
        }

        @Override
        public Long timestamp() {
            return timestamp;
        }
    }
}
