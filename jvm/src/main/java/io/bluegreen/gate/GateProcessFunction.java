package io.bluegreen.gate;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.operators.StreamingRuntimeContext;
import org.apache.flink.util.Collector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bluegreen gate's configuration, and the gate itself when placed inside the sink with
 * {@link GatedSink#wrap} (or {@code BlueGreenSinks.gated}), or as an operator with
 * {@link GateSinkWrapper#gate}: a {@link GateOperator} built from this object, just before the sink
 * of both the blue and the green job. Each record is passed, dropped or held by the coordination
 * state's rule for this gate's color (see {@code docs/protocol.md} and {@code docs/jvm.md}).
 *
 * <ul>
 *   <li><b>Decision path</b>: one volatile read of the latest {@link Gate.Snapshot} and one
 *       comparison of the event time with the cached {@link Rule}.
 *   <li><b>Hold</b> ({@link GateOperator}): held records wait in checkpointed state, the watermark
 *       is held back below them, and they are released in order when a newer state decides them.
 *       The buffer is bounded ({@link #withHoldBuffer}; when full the gate applies backpressure) and
 *       so is the age of its oldest record ({@link #withHoldTimeout}, then
 *       {@link GateHoldTimeoutException} fails the task). It never guesses.
 *   <li><b>Placed with {@code stream.process(fn)}</b> (kept for source compatibility): a hold
 *       blocks the task thread, up to the hold timeout, and checkpoints wait. Use
 *       {@link GateSinkWrapper#gate}.
 *   <li><b>Records without an event time</b>: by default the task fails with
 *       {@link MissingTimestampException}; {@link #treatMissingTimestampAs(long)} gives them a fixed
 *       event time instead.
 *   <li><b>Records at or below the floor</b> ({@code t <= F}) are dropped by both colors and counted
 *       in {@link #METRIC_DROPPED_LATE}.
 *   <li><b>State</b>: the maximum passed event time is kept in union list operator state and
 *       restored (maximum over all entries) so that a restart cannot hide a record already passed.
 * </ul>
 */
public class GateProcessFunction<T> extends ProcessFunction<T, T> implements CheckpointedFunction {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(GateProcessFunction.class);

    /** Metric names (operator scope); protocol/vectors/wire-names.json pins them with bluegreen_protocol::wire::metrics. */
    public static final String METRIC_PASSED = "bluegreenGatePassed";
    public static final String METRIC_DROPPED = "bluegreenGateDropped";
    public static final String METRIC_DROPPED_LATE = "bluegreenGateDroppedLate";
    public static final String METRIC_HELD = "bluegreenGateHeld";
    public static final String METRIC_REFUSED = "bluegreenGateRefusedUpdates";
    public static final String METRIC_SOURCE_ERRORS = "bluegreenGateSourceErrors";
    public static final String METRIC_MAX_PASSED = "bluegreenGateMaxPassedEventTime";
    public static final String METRIC_EPOCH = "bluegreenGateEpoch";
    public static final String METRIC_WATERMARK_STAGE = "bluegreenGateWatermarkStage";
    public static final String METRIC_TOGGLE = "bluegreenGateToggle";
    /**
     * The controller's acknowledgement gauge: one line, format in {@link #appliedStateLine()}.
     * Registered in the group {@link #REPORT_GROUP}{@code =<id of this gate>}, so that two gates
     * in one vertex under one operator name still have two metric ids.
     */
    public static final String METRIC_APPLIED_STATE = "bluegreenGateAppliedState";
    /** The key of the metric group, unique per gate, that holds {@link #METRIC_APPLIED_STATE}. */
    public static final String REPORT_GROUP = "bluegreenGate";
    public static final String METRIC_HELD_RECORDS = "bluegreenGateHeldRecords";
    public static final String METRIC_HELD_BYTES = "bluegreenGateHeldBytes";
    public static final String METRIC_HELD_OLDEST_AGE = "bluegreenGateHeldOldestAgeMs";

    /** Name of the union list state holding the maximum passed event time. */
    public static final String STATE_NAME = "bluegreen-gate-max-passed-event-time";

    /** Defaults of {@link #withHoldTimeout} and {@link #withHoldBuffer}. */
    public static final Duration DEFAULT_HOLD_TIMEOUT = Duration.ofMinutes(10);
    public static final int DEFAULT_HOLD_MAX_RECORDS = 100_000;
    public static final long DEFAULT_HOLD_MAX_BYTES = 64L << 20;
    /** Default of {@link #withSinkIdleness}. */
    public static final Duration DEFAULT_SINK_IDLENESS = Duration.ofSeconds(30);

    /** How often an idle gate publishes a newly received state as applied (processing time). */
    static final long IDLE_APPLY_INTERVAL_MS = 50;

    private static final VarHandle MAX_PASSED;

    static {
        try {
            MAX_PASSED = MethodHandles.lookup()
                    .findVarHandle(GateProcessFunction.class, "maxPassedPublished", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Color color;
    private final StateSource source;
    /** This gate's value of {@link #REPORT_GROUP}: fixed when the job graph is built. */
    private final String reportId;
    /** Null: the default, {@link TimestampExtractor#fromContext()}, inlined in the decision path. */
    private TimestampExtractor<T> extractor;
    private long holdTimeoutNanos = DEFAULT_HOLD_TIMEOUT.toNanos();
    private int holdMaxRecords = DEFAULT_HOLD_MAX_RECORDS;
    private long holdMaxBytes = DEFAULT_HOLD_MAX_BYTES;
    private long sinkIdlenessNanos = DEFAULT_SINK_IDLENESS.toNanos();
    private boolean failOnMissingTimestamp = true;
    private long missingTimestampAs;

    // Runtime (task manager) state.
    private transient Gate gate;
    private transient StateSource.Subscription subscription;
    /** The snapshot the task thread decides with; written on the task thread only. */
    private transient Gate.Snapshot appliedLocal;
    /** {@link #appliedLocal}, published for the metric reporter (volatile write after max passed). */
    private transient volatile Gate.Snapshot appliedPublished;
    private transient long maxPassedLocal;
    /** {@link #maxPassedLocal}, published with release semantics for the metric reporter. */
    @SuppressWarnings("unused")
    private transient long maxPassedPublished;
    private transient Counter passed;
    private transient Counter dropped;
    private transient Counter droppedLate;
    private transient Counter held;
    private transient ListState<Long> maxPassedState;
    private transient long restoredMaxPassed;
    private transient boolean stateInitialized;
    private transient volatile boolean closed;
    /** The gate operator's input watermark and whether all its inputs are idle (for the report line). */
    private transient volatile long inputWatermark;
    private transient volatile boolean inputIdle;

    /** A gate of {@code color} fed by {@code source}. */
    public GateProcessFunction(Color color, StateSource source) {
        this.color = Objects.requireNonNull(color, "color");
        this.source = Objects.requireNonNull(source, "source");
        this.reportId = java.util.UUID.randomUUID().toString().substring(0, 8);
    }

    /** Uses {@code extractor} for event times instead of the record's Flink timestamp. */
    public GateProcessFunction<T> withTimestampExtractor(TimestampExtractor<T> extractor) {
        this.extractor = Objects.requireNonNull(extractor, "extractor");
        return this;
    }

    /** How long a record may be held before the task fails (default 10 minutes). */
    public GateProcessFunction<T> withHoldTimeout(Duration timeout) {
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("hold timeout must not be negative: " + timeout);
        }
        this.holdTimeoutNanos = timeout.toNanos();
        return this;
    }

    /**
     * Bounds the held records of one gate subtask (default 100,000 records and 64 MiB, counting the
     * records' serialized size). When the next held record would exceed a bound, the gate stops
     * reading its input (backpressure) until held records are released; a single record larger
     * than {@code maxBytes} is still held when nothing else is.
     */
    public GateProcessFunction<T> withHoldBuffer(int maxRecords, long maxBytes) {
        if (maxRecords < 1 || maxBytes < 1) {
            throw new IllegalArgumentException("hold buffer bounds must be positive: maxRecords=" + maxRecords
                    + ", maxBytes=" + maxBytes);
        }
        this.holdMaxRecords = maxRecords;
        this.holdMaxBytes = maxBytes;
        return this;
    }

    /**
     * Inside a sink ({@link GatedSink}), how long a gate subtask must see no record and no
     * watermark advance before it reports its input idle (default 30 s; {@link Duration#ZERO}:
     * never). Flink does not tell a sink writer that its inputs are idle, so without this a handover
     * whose inputs all go quiet waits until records return. Like a source's
     * {@code WatermarkStrategy.withIdleness}, it assumes that a quiet input brings no record at or
     * below W later; when every gate is idle, the controller proposes W at the outgoing progress,
     * leaving what windows and timers hold to the incoming job (docs/controller.md). The gate
     * operator ({@link GateSinkWrapper#gate}) learns of idleness from Flink and does not use this.
     */
    public GateProcessFunction<T> withSinkIdleness(Duration idleness) {
        if (idleness.isNegative()) {
            throw new IllegalArgumentException("sink idleness must not be negative: " + idleness);
        }
        this.sinkIdlenessNanos = idleness.toNanos();
        return this;
    }

    /** Records without an event time fail the task (the default). */
    public GateProcessFunction<T> failOnMissingTimestamp() {
        this.failOnMissingTimestamp = true;
        return this;
    }

    /**
     * Records without an event time are decided as if their event time were {@code eventTimeMs}.
     * {@code Long.MIN_VALUE} gives them to the outgoing color during a handover (it owns
     * {@code t <= W} for every W); see {@code docs/jvm.md} for what this means for exactly-once.
     */
    public GateProcessFunction<T> treatMissingTimestampAs(long eventTimeMs) {
        this.failOnMissingTimestamp = false;
        this.missingTimestampAs = eventTimeMs;
        return this;
    }

    public Color color() {
        return color;
    }

    long holdTimeoutNanos() {
        return holdTimeoutNanos;
    }

    long sinkIdlenessNanos() {
        return sinkIdlenessNanos;
    }

    /** Records dropped so far by this subtask (late or not). */
    long droppedCount() {
        return dropped.getCount() + droppedLate.getCount();
    }

    int holdMaxRecords() {
        return holdMaxRecords;
    }

    long holdMaxBytes() {
        return holdMaxBytes;
    }

    // ---------------------------------------------------------------------------------------
    // Lifecycle

    @Override
    public void initializeState(FunctionInitializationContext context) throws Exception {
        maxPassedState = context.getOperatorStateStore()
                .getUnionListState(new ListStateDescriptor<>(STATE_NAME, Types.LONG));
        long max = Long.MIN_VALUE;
        if (context.isRestored()) {
            for (Long v : maxPassedState.get()) {
                if (v != null && v > max) {
                    max = v;
                }
            }
        }
        restoredMaxPassed = max;
        maxPassedLocal = max;
        stateInitialized = true;
        MAX_PASSED.setRelease(this, maxPassedLocal);
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) throws Exception {
        maxPassedState.clear();
        maxPassedState.add(maxPassedLocal);
    }

    @Override
    public void open(OpenContext openContext) throws Exception {
        String name;
        try {
            name = getRuntimeContext().getTaskInfo().getTaskNameWithSubtasks();
        } catch (RuntimeException | LinkageError e) {
            name = "gate";
        }
        start(getRuntimeContext().getMetricGroup(), name);
        scheduleIdleApply();
    }

    /** Starts the gate outside {@code open()} (tests, other integrations). */
    void start(MetricGroup metrics, String name) throws Exception {
        start(metrics, name, new SimpleCounter());
    }

    /**
     * Starts the gate with {@code passedCount} as its {@link #METRIC_PASSED} counter: a placement
     * that counts passed records itself ({@link GatedSink}) hands its own.
     */
    void start(MetricGroup metrics, String name, Counter passedCount) throws Exception {
        if (gate != null) {
            return;
        }
        closed = false;
        gate = new Gate(color, name);
        appliedLocal = gate.latest();
        appliedPublished = appliedLocal;
        if (!stateInitialized) { // transient fields are zero after deserialization
            restoredMaxPassed = Long.MIN_VALUE;
            maxPassedLocal = Long.MIN_VALUE;
            MAX_PASSED.setRelease(this, maxPassedLocal);
        }
        inputWatermark = Long.MIN_VALUE;
        passed = metrics.counter(METRIC_PASSED, passedCount);
        dropped = metrics.counter(METRIC_DROPPED);
        droppedLate = metrics.counter(METRIC_DROPPED_LATE);
        held = metrics.counter(METRIC_HELD);
        Gate g = gate;
        metrics.gauge(METRIC_REFUSED, (Gauge<Long>) g::refusedUpdates);
        metrics.gauge(METRIC_SOURCE_ERRORS, (Gauge<Long>) g::sourceErrors);
        metrics.gauge(METRIC_MAX_PASSED, (Gauge<Long>) this::maxPassedEventTime);
        metrics.gauge(METRIC_EPOCH, (Gauge<Long>) () -> {
            CoordinationState s = appliedPublished.state;
            return s == null ? -1L : s.epoch();
        });
        metrics.gauge(METRIC_WATERMARK_STAGE, (Gauge<Integer>) () -> {
            CoordinationState s = appliedPublished.state;
            return s == null ? -1 : s.watermarkStage().ordinal();
        });
        metrics.gauge(METRIC_TOGGLE, (Gauge<Long>) () -> {
            CoordinationState s = appliedPublished.state;
            return s == null || !s.hasToggle() ? 0L : s.watermarkToggleValue();
        });
        metrics.addGroup(REPORT_GROUP, reportId).gauge(METRIC_APPLIED_STATE, (Gauge<String>) this::appliedStateLine);
        subscription = source.subscribe(name, gate);
        LOG.info("bluegreen gate {} ({}) started; restored max passed event time {}", name, color, restoredMaxPassed);
    }

    private void scheduleIdleApply() {
        ProcessingTimeService pts;
        try {
            if (!(getRuntimeContext() instanceof StreamingRuntimeContext)) {
                return;
            }
            pts = ((StreamingRuntimeContext) getRuntimeContext()).getProcessingTimeService();
        } catch (RuntimeException | LinkageError e) {
            LOG.warn("bluegreen gate: no processing time service; an idle gate reports a new state only with its next record", e);
            return;
        }
        ProcessingTimeService.ProcessingTimeCallback[] cb = new ProcessingTimeService.ProcessingTimeCallback[1];
        cb[0] = time -> {
            // Runs on the task thread (mailbox), between records: safe to mark the state applied.
            if (closed) {
                return;
            }
            Gate.Snapshot s = gate.latest();
            if (s != appliedLocal) {
                applyOnTaskThread(s);
            }
            pts.registerTimer(pts.getCurrentProcessingTime() + IDLE_APPLY_INTERVAL_MS, cb[0]);
        };
        pts.registerTimer(pts.getCurrentProcessingTime() + IDLE_APPLY_INTERVAL_MS, cb[0]);
    }

    @Override
    public void close() throws Exception {
        closed = true;
        if (subscription != null) {
            subscription.close();
            subscription = null;
        }
        gate = null;
        super.close();
    }

    // ---------------------------------------------------------------------------------------
    // Per record

    @Override
    public void processElement(T value, Context ctx, Collector<T> out) throws Exception {
        Gate.Snapshot s = gate.latest();
        if (s != appliedLocal) {
            applyOnTaskThread(s);
        }
        Long ts = ctx.timestamp();
        long t;
        if (extractor == null && ts != null && ts != Long.MIN_VALUE) {
            t = ts; // the common case: the record's Flink timestamp
        } else {
            t = eventTimeSlow(value, ts);
        }
        Decision d = s.rule.decide(t);
        if (d == Decision.PASS) {
            pass(t);
            out.collect(value);
        } else if (d == Decision.DROP) {
            drop(s.rule, t);
        } else {
            hold(value, t, s, out);
        }
    }

    /** The snapshot to decide with, applied first if the source delivered a newer one (task thread). */
    Gate.Snapshot current() {
        Gate.Snapshot s = gate.latest();
        if (s != appliedLocal) {
            applyOnTaskThread(s);
        }
        return s;
    }

    /** Counts a dropped record: late (at or below the floor) or owned by the other color. */
    void drop(Rule rule, long t) {
        if (rule.isLate(t)) {
            droppedLate.inc();
        } else {
            dropped.inc();
        }
    }

    void countHeld() {
        held.inc();
    }

    /** Records the gate operator's input watermark and idleness for {@link #appliedStateLine()}. */
    void observeInput(long watermark, boolean idle) {
        inputWatermark = watermark;
        inputIdle = idle;
    }

    /** Why a held record is still undecided, for {@link GateHoldTimeoutException}. */
    String holdTimeoutMessage(long t, long heldMs) {
        CoordinationState cur = appliedLocal.state;
        String problem = gate.lastProblem();
        return "bluegreen gate (" + color + "): held a record with event time " + t
                + " for " + heldMs + " ms without a state that decides it"
                + " (applied state: " + (cur == null ? "none yet" : cur.toString()) + ")"
                + (problem.isEmpty() ? "" : "; last problem: " + problem)
                + "; failing the task so that Flink restarts it from its checkpoint"
                + " (GateProcessFunction.withHoldTimeout sets the bound)";
    }

    /** Custom extractor, or no timestamp (null or Flink's NO_TIMESTAMP): kept out of the hot method. */
    long eventTimeSlow(T value, Long ts) throws MissingTimestampException {
        Long t = extractor != null ? extractor.eventTime(value, ts) : null;
        if (t != null) {
            return t;
        }
        if (failOnMissingTimestamp) {
            throw new MissingTimestampException("bluegreen gate (" + color + "): a record has no event time, so the gate "
                    + "cannot tell which color owns it; assign timestamps upstream (WatermarkStrategy), pass a "
                    + "TimestampExtractor, or choose GateProcessFunction.treatMissingTimestampAs(...)");
        }
        return missingTimestampAs;
    }

    /** Whether the default extractor applies (the record's Flink timestamp). */
    boolean usesRecordTimestamp() {
        return extractor == null;
    }

    void pass(long t) {
        passed.inc();
        if (t > maxPassedLocal) {
            maxPassedLocal = t;
            // Opaque: atomic, no fence. Ordering for the controller comes from the volatile write
            // of appliedPublished, which follows every update made under an older state.
            MAX_PASSED.setOpaque(this, t);
        }
    }

    /**
     * Restores the maximum passed event time from a placement's own state (the gate in the sink
     * writer: {@link GatedSink}); before {@link #start}.
     */
    void restoreMaxPassed(long max) {
        restoredMaxPassed = max;
        maxPassedLocal = max;
        stateInitialized = true;
        MAX_PASSED.setRelease(this, max);
    }

    /** The maximum passed event time as the task thread knows it (for a checkpoint). */
    long maxPassedLocal() {
        return maxPassedLocal;
    }

    /**
     * Raises the maximum passed event time to {@code max} and publishes it (release): for a
     * placement that tracks the maximum itself ({@link GatedSink}) and publishes it before every
     * state it applies (so the report line stays consistent) and periodically.
     */
    void raiseMaxPassed(long max) {
        if (max > maxPassedLocal) {
            maxPassedLocal = max;
            MAX_PASSED.setRelease(this, max);
        }
    }

    /** Marks {@code s} as the state this gate decides with (task thread only). */
    void applyOnTaskThread(Gate.Snapshot s) {
        appliedLocal = s;
        appliedPublished = s; // volatile: publishes every max-passed update made under older states
    }

    /** The blocking hold of the {@code stream.process(fn)} placement (see the class comment). */
    private void hold(T value, long t, Gate.Snapshot s, Collector<T> out) throws Exception {
        held.inc();
        long start = System.nanoTime();
        long deadline = start + holdTimeoutNanos;
        Gate.Snapshot cur = s;
        while (true) {
            Gate.Snapshot next = gate.awaitChange(cur, deadline);
            if (next == cur) {
                throw new GateHoldTimeoutException(holdTimeoutMessage(t, (System.nanoTime() - start) / 1_000_000));
            }
            applyOnTaskThread(next);
            cur = next;
            Decision d = cur.rule.decide(t);
            if (d == Decision.PASS) {
                pass(t);
                out.collect(value);
                return;
            }
            if (d == Decision.DROP) {
                drop(cur.rule, t);
                return;
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // Observation (metric reporter thread, tests)

    /** The maximum event time passed (restored from state included); {@code Long.MIN_VALUE} if none. */
    long maxPassedEventTime() {
        return (long) MAX_PASSED.getOpaque(this);
    }

    /** The state the task thread has applied, or null. */
    CoordinationState appliedState() {
        Gate.Snapshot s = appliedPublished;
        return s == null ? null : s.state;
    }

    Gate gate() {
        return gate;
    }

    /**
     * The acknowledgement line the controller reads ({@link #METRIC_APPLIED_STATE}): the applied
     * state, then the maximum passed event time read after it (so every record passed under an
     * older state is included), then the input watermark and idleness, e.g.
     * {@code epoch=7 stage=TRANSITIONING active=GREEN watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false color=GREEN},
     * its own color last, with {@code problem=...} appended while the gate has a lasting problem ({@link Gate#currentProblem()}).
     */
    String appliedStateLine() {
        Gate.Snapshot snap = appliedPublished; // volatile read first
        long max = maxPassedEventTime();
        Gate g = gate;
        return GateReport.line(snap == null ? null : snap.state, max, inputWatermark, inputIdle, color,
                g == null ? null : g.currentProblem());
    }
}
