package io.bluegreen.gate;

import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.AbstractStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.ChainingStrategy;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;

/**
 * The gate as a Flink stream operator, placed by {@link GateSinkWrapper#gate} (through
 * {@link #factory}) and configured by a {@link GateProcessFunction}. A hold never blocks the task thread:
 *
 * <ul>
 *   <li>held records are buffered with their timestamps, in arrival order, in operator list state
 *       ({@value #HELD_STATE_NAME}), so checkpoints go on during a hold; after a restore their
 *       hold timeout counts from the restore;
 *   <li>the emitted watermark is {@code min(input watermark, lowest held timestamp - 1)}, so a
 *       released record is never late downstream;
 *   <li>a processing-time timer (every {@value GateProcessFunction#IDLE_APPLY_INTERVAL_MS} ms)
 *       applies a newer state, releases what it decides (in order), and fails the task with
 *       {@link GateHoldTimeoutException} once the oldest held record is older than the hold timeout;
 *   <li>the buffer is bounded ({@link GateProcessFunction#withHoldBuffer}): when full, the gate
 *       stops reading its input (backpressure, by yielding to the mailbox, as Flink's async I/O
 *       operator does) until records are released;
 *   <li>at the end of a bounded input it waits the same way until every held record is decided.
 * </ul>
 *
 * <p>A legacy transactional sink chained after it ({@code TwoPhaseCommitSinkFunction},
 * {@code StreamingFileSink}, {@code GenericWriteAheadSink}) fails the task when the operator is
 * created, before any state is restored ({@link LegacyTransactionalSinkException}): it cannot be
 * isolated per color.
 */
public final class GateOperator<T> extends AbstractStreamOperator<T>
        implements OneInputStreamOperator<T, T>, BoundedOneInput {
    private static final long serialVersionUID = 1L;

    /** Name of the operator list state holding the held records. */
    public static final String HELD_STATE_NAME = "bluegreen-gate-held-records";

    private final GateProcessFunction<T> fn;

    private transient ListState<byte[]> heldState;
    private transient HoldBuffer held;
    private transient HeldRecords<T> holding;
    private transient MailboxExecutor mailbox;
    private transient long inputWatermark;
    private transient long emittedWatermark;
    private transient boolean inputIdle;
    /** The snapshot every held record was last decided under. */
    private transient Gate.Snapshot decidedUnder;

    @SuppressWarnings("deprecation") // Flink 2.x has a constructor for this, Flink 1.20 does not
    private GateOperator(GateProcessFunction<T> fn, StreamOperatorParameters<T> parameters) {
        this.fn = fn;
        setProcessingTimeService(parameters.getProcessingTimeService());
        setup(parameters.getContainingTask(), parameters.getStreamConfig(), parameters.getOutput());
        mailbox = parameters.getMailboxExecutor();
        // Here, while the task creates its operators: a later check (initializeState, open) would come
        // after a chained sink restored its state, as the task restores from the last operator back.
        LegacySinkCheck.check(parameters.getStreamConfig(), parameters.getContainingTask().getConfiguration(),
                getUserCodeClassloader(), parameters.getStreamConfig().getOperatorName());
    }

    /**
     * The factory of the gate configured by {@code fn}, for {@code stream.transform}: chained with
     * its neighbours (Flink 1.20's operators default to starting a chain).
     */
    public static <T> OneInputStreamOperatorFactory<T, T> factory(GateProcessFunction<T> fn) {
        return new Factory<>(fn);
    }

    private static final class Factory<T> extends AbstractStreamOperatorFactory<T> implements OneInputStreamOperatorFactory<T, T> {
        private static final long serialVersionUID = 1L;
        private final GateProcessFunction<T> fn;

        Factory(GateProcessFunction<T> fn) {
            this.fn = fn;
            setChainingStrategy(ChainingStrategy.ALWAYS);
        }

        @Override
        @SuppressWarnings("unchecked")
        public <O extends StreamOperator<T>> O createStreamOperator(StreamOperatorParameters<T> parameters) {
            return (O) new GateOperator<>(fn, parameters);
        }

        @Override
        @SuppressWarnings("unchecked")
        public Class<? extends StreamOperator<?>> getStreamOperatorClass(ClassLoader classLoader) {
            return (Class<? extends StreamOperator<?>>) (Class<?>) GateOperator.class;
        }
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        fn.initializeState(context);
        held = new HoldBuffer();
        heldState = context.getOperatorStateStore().getListState(
                new ListStateDescriptor<>(HELD_STATE_NAME, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
        if (context.isRestored()) {
            held.restore(heldState.get(), System.currentTimeMillis());
        }
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        fn.snapshotState(context);
        heldState.update(held.encodeAll());
    }

    @Override
    public void open() throws Exception {
        super.open();
        TypeSerializer<T> serializer = getOperatorConfig().getTypeSerializerIn(0, getUserCodeClassloader());
        holding = new HeldRecords<>(fn, serializer, mailbox, held, new HeldRecords.Placement<T>() {
            @Override
            public void emitPassed(T value, boolean hasTimestamp, long timestamp, long eventTime) {
                fn.pass(eventTime);
                output.collect(hasTimestamp ? new StreamRecord<>(value, timestamp) : new StreamRecord<>(value));
            }

            @Override
            public Gate.Snapshot refresh() throws Exception {
                Gate.Snapshot s = fn.current();
                if (s != decidedUnder) {
                    release(s);
                }
                return s;
            }
        }, "gate");
        inputWatermark = Long.MIN_VALUE;
        emittedWatermark = Long.MIN_VALUE;
        MetricGroup metrics = getMetricGroup();
        String name;
        try {
            name = getRuntimeContext().getTaskInfo().getTaskNameWithSubtasks();
        } catch (RuntimeException | LinkageError e) {
            name = "gate";
        }
        fn.start(metrics, name);
        held.registerGauges(metrics);
        scheduleTick();
    }

    @Override
    public void close() throws Exception {
        fn.close();
        super.close();
    }

    // ---------------------------------------------------------------------------------------
    // Records and watermarks

    @Override
    public void processElement(StreamRecord<T> record) throws Exception {
        Gate.Snapshot s = fn.current();
        if (s != decidedUnder && !held.isEmpty()) {
            release(s);
        }
        long t;
        if (fn.usesRecordTimestamp() && record.hasTimestamp() && record.getTimestamp() != Long.MIN_VALUE) {
            t = record.getTimestamp();
        } else {
            t = fn.eventTimeSlow(record.getValue(), record.hasTimestamp() ? record.getTimestamp() : null);
        }
        Decision d = s.rule.decide(t);
        if (d == Decision.PASS) {
            fn.pass(t);
            output.collect(record);
        } else if (d == Decision.DROP) {
            fn.drop(s.rule, t);
        } else {
            // Nothing is held under an older state here (released above): the record joins them under s.
            decidedUnder = s;
            holding.hold(record.getValue(), record.hasTimestamp(), record.getTimestamp(), t);
        }
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        inputWatermark = mark.getTimestamp();
        fn.observeInput(inputWatermark, inputIdle);
        emitWatermarkIfAdvanced();
    }

    @Override
    public void processWatermarkStatus(WatermarkStatus status) throws Exception {
        inputIdle = status.isIdle();
        fn.observeInput(inputWatermark, inputIdle);
        super.processWatermarkStatus(status);
    }

    @Override
    public void endInput() throws Exception {
        holding.awaitAllDecided();
    }

    // ---------------------------------------------------------------------------------------
    // Release

    private void scheduleTick() {
        long next = getProcessingTimeService().getCurrentProcessingTime() + GateProcessFunction.IDLE_APPLY_INTERVAL_MS;
        getProcessingTimeService().registerTimer(next, time -> tick());
    }

    /** On the task thread: applies a newer state, releases what it decides, enforces the hold timeout. */
    private void tick() throws Exception {
        Gate.Snapshot s = fn.current();
        if (!held.isEmpty()) {
            if (s != decidedUnder) {
                release(s);
            }
            holding.checkTimeout();
        }
        scheduleTick();
    }

    /** Re-decides every held record under {@code s}, in arrival order; keeps the undecided ones. */
    private void release(Gate.Snapshot s) throws Exception {
        decidedUnder = s;
        if (holding.release(s.rule)) {
            emitWatermarkIfAdvanced();
        }
    }

    /** Emits {@code min(input watermark, lowest held timestamp - 1)} if it is above the last one emitted. */
    private void emitWatermarkIfAdvanced() {
        long wm = held.heldBack(inputWatermark);
        if (wm > emittedWatermark) {
            emittedWatermark = wm;
            output.emitWatermark(new Watermark(wm));
        }
    }
}
