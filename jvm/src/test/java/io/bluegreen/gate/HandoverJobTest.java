package io.bluegreen.gate;

import static io.bluegreen.gate.Color.BLUE;
import static io.bluegreen.gate.Color.GREEN;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobID;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Real Flink jobs on a local MiniCluster: a blue job and a green job, each with a
 * GateProcessFunction before its sink, fed one sequence of coordination states by a test that plays
 * the controller (reading the gates' metrics through Flink's REST API, as the real controller
 * does); the oracle then checks that both outputs together hold every id exactly once.
 */
final class HandoverJobTest {
    private static final AtomicInteger SEQ = new AtomicInteger();
    static final int P = 2;

    static CoordinationState st(long epoch, Stage stage, WatermarkStage ws, long w, Color active) {
        return CoordinationState.of(epoch, active, stage, ws, w, 1000);
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

    static long field(String line, String name) {
        for (String part : line.split(" ")) {
            if (part.startsWith(name + "=")) {
                return Long.parseLong(part.substring(name.length() + 1));
            }
        }
        throw new IllegalArgumentException(name + " not in " + line);
    }

    /** Green's hold bound in {@link #handover}: far below what it reads, so it applies backpressure. */
    static final int GREEN_HOLD_RECORDS = 5_000;

    /**
     * Waits until every gate of {@code job} acknowledges the proposal W (bluegreenGateAppliedState:
     * epoch 1, watermark-stage 1, toggle=W); proposes the highest max-passed instead while a gate
     * passed a record above W. Returns the confirmed W. Every line must name the gate's color, BLUE.
     */
    static long confirm(LocalFlink flink, JobID job, String vertex, Consumer<CoordinationState> publish, long w) throws Exception {
        while (true) {
            long want = w;
            long[] max = new long[1];
            waitFor(() -> {
                List<String> lines = flink.subtaskMetric(job, vertex, P, GateProcessFunction.METRIC_APPLIED_STATE);
                if (lines == null) {
                    return false;
                }
                long m = Long.MIN_VALUE;
                for (String l : lines) {
                    GateReport r = GateReport.parse(l);
                    assertEquals(BLUE, r.color, "a blue gate says its color: " + l);
                    if (r.epoch == null || r.epoch != 1 || r.watermarkStage != 1 || r.toggle == null || r.toggle != want) {
                        return false;
                    }
                    m = Math.max(m, r.maxPassed);
                }
                max[0] = m;
                return true;
            }, 30_000, "every blue gate to apply W=" + want);
            if (max[0] <= w) {
                return w;
            }
            w = max[0];
            publish.accept(st(1, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, w, GREEN));
        }
    }

    /** Completed checkpoints of {@code job}, from the REST API. */
    @SuppressWarnings("unchecked")
    static long checkpoints(LocalFlink flink, JobID job) throws Exception {
        Map<String, Object> cp = (Map<String, Object>) flink.getJson("/jobs/" + job + "/checkpoints");
        return ((Number) ((Map<String, Object>) cp.get("counts")).get("completed")).longValue();
    }

    /** Waits until the job graph of {@code job} has the gate vertex; returns its id. */
    static String gateVertex(LocalFlink flink, JobID job) throws Exception {
        waitFor(() -> {
            try {
                flink.vertex(job, "bluegreen-gate");
                return true;
            } catch (IllegalStateException e) {
                return false;
            }
        }, 30_000, "the job graph of " + job);
        return flink.vertex(job, "bluegreen-gate");
    }

    /**
     * A long hold on a MiniCluster with checkpoints every second: blue and green both paced to keep
     * reading for {@code holdMs} + 15 s; W is proposed (blue holds above it, green holds everything)
     * and set only after {@code holdMs}. Both jobs must complete checkpoints throughout the hold, and
     * the outputs hold every id exactly once, none behind the sink's watermark.
     */
    static String longHold(int n, long holdMs) throws Exception {
        String run = "long-hold-" + SEQ.incrementAndGet();
        ManualStateSource.Channel ch = ManualStateSource.channel(run);
        AtomicIntegerArray blueOut = HandoverJob.Recorder.create(run + "/blue", n);
        AtomicIntegerArray greenOut = HandoverJob.Recorder.create(run + "/green", n);
        LocalFlink flink = LocalFlink.shared();
        long paceMs = holdMs + 15_000;
        Duration timeout = Duration.ofMillis(holdMs + 60_000);
        ch.publish(st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        StreamExecutionEnvironment envB = HandoverJob.env(P);
        envB.enableCheckpointing(1000);
        HandoverJob.build(envB, n, new HandoverJob.TimedPacer(paceMs, n / P), HandoverJob.Stage.GATE,
                new GateProcessFunction<Long>(BLUE, new ManualStateSource(run)).withHoldTimeout(timeout), run + "/blue");
        JobID blue = flink.submit(envB, run + "-blue");
        JobID green = null;
        try {
            String bv = gateVertex(flink, blue);
            waitFor(() -> {
                List<String> passed = flink.subtaskMetric(blue, bv, P, GateProcessFunction.METRIC_PASSED);
                return passed != null && passed.stream().mapToLong(Long::parseLong).sum() >= n / 10;
            }, 60_000, "blue to pass a tenth of the ids");
            ch.publish(st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN));
            StreamExecutionEnvironment envG = HandoverJob.env(P);
            envG.enableCheckpointing(1000);
            HandoverJob.build(envG, n, new HandoverJob.TimedPacer(paceMs, n / P), HandoverJob.Stage.GATE,
                    new GateProcessFunction<Long>(GREEN, new ManualStateSource(run)).withHoldTimeout(timeout), run + "/green");
            green = flink.submit(envG, run + "-green");
            JobID g = green;
            String gv = gateVertex(flink, green);
            long w = flink.subtaskMetric(blue, bv, P, GateProcessFunction.METRIC_MAX_PASSED).stream()
                    .mapToLong(Long::parseLong).max().getAsLong();
            ch.publish(st(1, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, w, GREEN));
            w = confirm(flink, blue, bv, ch::publish, w);
            waitFor(() -> checkpoints(flink, g) >= 1, 30_000, "green's first checkpoint");
            long b0 = checkpoints(flink, blue);
            long g0 = checkpoints(flink, green);
            long start = System.currentTimeMillis();
            long maxHeldBlue = 0;
            long maxHeldGreen = 0;
            long blueWatermark = Long.MIN_VALUE;
            while (System.currentTimeMillis() - start < holdMs) {
                Thread.sleep(Math.min(1000, Math.max(1, holdMs - (System.currentTimeMillis() - start))));
                List<String> hb = flink.subtaskMetric(blue, bv, P, GateProcessFunction.METRIC_HELD_RECORDS);
                List<String> hg = flink.subtaskMetric(green, gv, P, GateProcessFunction.METRIC_HELD_RECORDS);
                if (hb != null) {
                    maxHeldBlue = Math.max(maxHeldBlue, hb.stream().mapToLong(Long::parseLong).sum());
                }
                if (hg != null) {
                    maxHeldGreen = Math.max(maxHeldGreen, hg.stream().mapToLong(Long::parseLong).sum());
                }
                List<String> lines = flink.subtaskMetric(blue, bv, P, GateProcessFunction.METRIC_APPLIED_STATE);
                if (lines != null) {
                    for (String l : lines) {
                        blueWatermark = Math.max(blueWatermark, GateReport.parse(l).watermark);
                    }
                }
            }
            long b1 = checkpoints(flink, blue);
            long g1 = checkpoints(flink, green);
            // Green has held since before the hold began: its oldest held record is at least that old.
            long greenBytes = flink.subtaskMetric(green, gv, P, GateProcessFunction.METRIC_HELD_BYTES).stream()
                    .mapToLong(Long::parseLong).sum();
            long greenAge = flink.subtaskMetric(green, gv, P, GateProcessFunction.METRIC_HELD_OLDEST_AGE).stream()
                    .mapToLong(Long::parseLong).min().getAsLong();
            assertTrue(greenBytes >= 8L * 1_000, "green's held bytes (8 per id): " + greenBytes);
            assertTrue(greenAge >= holdMs, "green's oldest held record is older than the hold: " + greenAge + " ms");
            long expected = holdMs / 1000;
            assertTrue(b1 - b0 >= expected / 2, "blue completed " + (b1 - b0) + " checkpoints during a " + holdMs + " ms hold");
            assertTrue(g1 - g0 >= expected / 2, "green completed " + (g1 - g0) + " checkpoints during a " + holdMs + " ms hold");
            assertTrue(maxHeldBlue > 0 && maxHeldGreen > 0, "both gates held records: blue " + maxHeldBlue + ", green " + maxHeldGreen);
            assertTrue(blueWatermark > w, "blue's report line shows its input watermark past W: " + blueWatermark + " vs " + w);
            ch.publish(st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, w, GREEN));
            Throwable blueErr = flink.await(blue, 180_000 + holdMs);
            Throwable greenErr = flink.await(green, 180_000 + holdMs);
            if (blueErr != null || greenErr != null) {
                throw new AssertionError("jobs failed: blue=" + blueErr + " green=" + greenErr, blueErr != null ? blueErr : greenErr);
            }
            HandoverJob.Verdict v = new HandoverJob.Verdict(blueOut, greenOut);
            assertTrue(v.exactlyOnce(), "exactly once violated: " + v);
            assertEquals(0L, HandoverJob.Recorder.late(run + "/blue") + HandoverJob.Recorder.late(run + "/green"),
                    "records behind the watermark at the sinks");
            return "hold " + holdMs + " ms: checkpoints completed during the hold: blue " + (b1 - b0) + ", green " + (g1 - g0)
                    + "; held at most: blue " + maxHeldBlue + ", green " + maxHeldGreen + " records; green at the end: " + greenBytes
                    + " bytes, oldest " + greenAge + " ms; " + v;
        } finally {
            flink.cancel(blue);
            if (green != null) {
                flink.cancel(green);
            }
        }
    }

    /**
     * The whole handover, the test acting as the controller of docs/protocol.md: W is proposed at
     * blue's max passed event time + {@code proposalOffsetMs} (0 makes raising W likely). Returns a
     * summary line.
     */
    static String handover(int n, boolean viaSidecar, long proposalOffsetMs) throws Exception {
        return handover(n, viaSidecar, proposalOffsetMs, HandoverJob.Stage.GATE);
    }

    /** The same with the gate placed as {@code stage} (the operator or inside the sink) in both colors. */
    static String handover(int n, boolean viaSidecar, long proposalOffsetMs, HandoverJob.Stage stage) throws Exception {
        String run = "handover-" + SEQ.incrementAndGet();
        FakeSidecar sidecar = viaSidecar ? new FakeSidecar() : null;
        try {
            StateSource source = viaSidecar
                    ? new SidecarStateSource(sidecar.uri(), Duration.ofSeconds(5))
                    : new ManualStateSource(run);
            Consumer<CoordinationState> publish = viaSidecar ? sidecar::publish : ManualStateSource.channel(run)::publish;
            AtomicIntegerArray blueOut = HandoverJob.Recorder.create(run + "/blue", n);
            AtomicIntegerArray greenOut = HandoverJob.Recorder.create(run + "/green", n);
            LocalFlink flink = LocalFlink.shared();

            publish.accept(CoordinationState.initial(BLUE, 1000));
            publish.accept(st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
            StreamExecutionEnvironment envB = HandoverJob.env(P);
            // Blue is paced (~5 s for 200k ids) so that the handover happens mid-stream.
            HandoverJob.build(envB, n, Math.max(1, n / 10_000), stage,
                    new GateProcessFunction<Long>(BLUE, source).withHoldTimeout(Duration.ofSeconds(60)), run + "/blue");
            JobID blue = flink.submit(envB, run + "-blue");
            JobID green = null;
            try {
                waitFor(() -> {
                    try {
                        flink.vertex(blue, "bluegreen-gate");
                        return true;
                    } catch (IllegalStateException e) {
                        return false;
                    }
                }, 30_000, "blue's job graph");
                String bv = flink.vertex(blue, "bluegreen-gate");
                waitFor(() -> {
                    List<String> passed = flink.subtaskMetric(blue, bv, P, GateProcessFunction.METRIC_PASSED);
                    return passed != null && passed.stream().mapToLong(Long::parseLong).sum() >= n / 4;
                }, 60_000, "blue to pass a quarter of the ids");

                // Epoch 1: hand over to green.
                publish.accept(st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN));
                StreamExecutionEnvironment envG = HandoverJob.env(P);
                HandoverJob.build(envG, n, 0, stage,
                        new GateProcessFunction<Long>(GREEN, source).withHoldTimeout(Duration.ofSeconds(60))
                                .withHoldBuffer(GREEN_HOLD_RECORDS, 1 << 20), run + "/green");
                green = flink.submit(envG, run + "-green");

                // Propose W: blue's progress (max passed event time) plus an offset.
                List<String> maxes = flink.subtaskMetric(blue, bv, P, GateProcessFunction.METRIC_MAX_PASSED);
                long w = maxes.stream().mapToLong(Long::parseLong).max().getAsLong() + proposalOffsetMs;
                publish.accept(st(1, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, w, GREEN));
                // Confirm W: every blue gate reports the proposed state and its max passed event time
                // in one line (bluegreenGateAppliedState); raise W above a larger maximum.
                long proposed = w;
                w = confirm(flink, blue, bv, publish, w);
                int raised = w == proposed ? 0 : 1;
                // Green holds (everything) meanwhile, within its buffer bound: backpressure, not more.
                List<String> greenHeld = flink.subtaskMetric(green, flink.vertex(green, "bluegreen-gate"), P,
                        GateProcessFunction.METRIC_HELD_RECORDS);
                if (greenHeld != null) {
                    for (String h : greenHeld) {
                        assertTrue(Long.parseLong(h) <= GREEN_HOLD_RECORDS, "green holds at most its bound: " + greenHeld);
                    }
                }
                publish.accept(st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, w, GREEN));

                Throwable blueErr = flink.await(blue, 120_000);
                Throwable greenErr = flink.await(green, 120_000);
                if (blueErr != null || greenErr != null) {
                    throw new AssertionError("jobs failed: blue=" + blueErr + " green=" + greenErr, blueErr != null ? blueErr : greenErr);
                }
                publish.accept(st(1, Stage.CLEAR_TO_TEARDOWN, WatermarkStage.WATERMARK_SET, w, GREEN));
                publish.accept(st(1, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN).withFloor(w));

                HandoverJob.Verdict v = new HandoverJob.Verdict(blueOut, greenOut);
                assertTrue(v.exactlyOnce(), "exactly once violated: " + v);
                assertEquals(0L, HandoverJob.Recorder.late(run + "/blue") + HandoverJob.Recorder.late(run + "/green"),
                        "records behind the watermark at the sinks");
                assertTrue(v.blue >= n / 4 && v.green >= n / 20, "both colors emitted a real share: " + v);
                for (int id = 0; id < n; id++) {
                    long t = HandoverJob.eventTime(id);
                    if (blueOut.get(id) == 1) {
                        assertTrue(t <= w, "blue emitted id " + id + " with t=" + t + " > W=" + w);
                    } else {
                        assertTrue(t > w, "green emitted id " + id + " with t=" + t + " <= W=" + w);
                    }
                }
                return n + " ids, W=" + (w - HandoverJob.BASE) + " (+base), W raised " + raised + " time(s); " + v
                        + "; green held at most " + GREEN_HOLD_RECORDS + " records per subtask (then backpressure)";
            } finally {
                flink.cancel(blue);
                if (green != null) {
                    flink.cancel(green);
                }
            }
        } finally {
            if (sidecar != null) {
                sidecar.close();
            }
        }
    }

    /** Places {@code gate} and the recording sink {@code key} after {@code s}, as the operator or inside the sink. */
    static void gatedSink(org.apache.flink.streaming.api.datastream.DataStream<Long> s, GateProcessFunction<Long> gate, String key,
            HandoverJob.Stage stage) {
        if (stage == HandoverJob.Stage.GATE_IN_SINK) {
            s.sinkTo(GatedSink.wrap(new HandoverJob.RecordingSink(key), gate)).name(HandoverJob.GATED_SINK_NAME);
        } else {
            GateSinkWrapper.sinkTo(s, gate, new HandoverJob.RecordingSink(key));
        }
    }

    /** The first cause in {@code t}'s chain of type {@code type}, or null. */
    static <E extends Throwable> E findCause(Throwable t, Class<E> type) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) {
                return type.cast(c);
            }
        }
        return null;
    }

    /** Two jobs whose gates are given the states {@code blueState} and {@code greenState}; returns the verdict. */
    static HandoverJob.Verdict pair(int n, CoordinationState blueState, CoordinationState greenState) throws Exception {
        String run = "pair-" + SEQ.incrementAndGet();
        ManualStateSource.channel(run + "-b").publish(blueState);
        ManualStateSource.channel(run + "-g").publish(greenState);
        AtomicIntegerArray b = HandoverJob.Recorder.create(run + "/blue", n);
        AtomicIntegerArray g = HandoverJob.Recorder.create(run + "/green", n);
        LocalFlink flink = LocalFlink.shared();
        StreamExecutionEnvironment envB = HandoverJob.env(P);
        HandoverJob.build(envB, n, 0, HandoverJob.Stage.GATE, new GateProcessFunction<>(BLUE, new ManualStateSource(run + "-b")), run + "/blue");
        StreamExecutionEnvironment envG = HandoverJob.env(P);
        HandoverJob.build(envG, n, 0, HandoverJob.Stage.GATE, new GateProcessFunction<>(GREEN, new ManualStateSource(run + "-g")), run + "/green");
        JobID jb = flink.submit(envB, run + "-blue");
        JobID jg = flink.submit(envG, run + "-green");
        Throwable eb = flink.await(jb, 120_000);
        Throwable eg = flink.await(jg, 120_000);
        if (eb != null || eg != null) {
            throw new AssertionError("jobs failed", eb != null ? eb : eg);
        }
        return new HandoverJob.Verdict(b, g);
    }

    @Test
    @DisplayName("handover job: blue -> green on a MiniCluster, 200000 ids, manual state source: 0 duplicates, 0 losses")
    void handover200000IdsManualSource() throws Exception {
        System.out.println("     " + handover(200_000, false, 20_000));
    }

    @Test
    @DisplayName("handover job: the same through the sidecar long-poll source (in-process fake sidecar), 60000 ids, W proposed at blue's max")
    void handoverThroughFakeSidecar() throws Exception {
        System.out.println("     " + handover(60_000, true, 0));
    }

    @Test
    @DisplayName("handover job (gate in the sink): blue -> green on a MiniCluster, 60000 ids, W proposed at blue's max: 0 duplicates, 0 losses")
    void handoverGateInSink() throws Exception {
        System.out.println("     " + handover(60_000, false, 0, HandoverJob.Stage.GATE_IN_SINK));
    }

    @Test
    @DisplayName("handover job (gate in the sink, event times from a TimestampExtractor): blue -> green, 60000 ids: 0 duplicates, 0 losses")
    void handoverGateInSinkTimestampExtractor() throws Exception {
        System.out.println("     " + handover(60_000, false, 0, HandoverJob.Stage.GATE_IN_SINK_EXTRACTOR));
    }
    /** The long hold's duration: -Dbluegreen.test.hold-ms (8 s by default; 2 minutes measured, docs/jvm.md). */
    static final long HOLD_MS = Long.getLong("bluegreen.test.hold-ms", 8_000);

    @Test
    @DisplayName("handover job: a long hold (-Dbluegreen.test.hold-ms, 8000 ms by default) with checkpoints every second keeps completing checkpoints; then 0 duplicates, 0 losses")
    void holdWithCheckpoints() throws Exception {
        System.out.println("     " + longHold(60_000, HOLD_MS));
    }

    @Test
    @DisplayName("handover job: the report line shows the input watermark, and idle=true once every input of the gate is idle")
    void reportLineShowsInputWatermarkIdleTrue() throws Exception {
        idleReport(HandoverJob.Stage.GATE, null);
    }

    @Test
    @DisplayName("handover job (gate in the sink): the report line shows the input watermark; idle stays false within the sink idleness (a sink writer is not told)")
    void reportLineShowsInputWatermarkIdleStays() throws Exception {
        idleReport(HandoverJob.Stage.GATE_IN_SINK, null);
    }

    @Test
    @DisplayName("handover job (gate in the sink): idle=true once the input was quiet for withSinkIdleness, and the gate counts as past a later W")
    void sinkGateReportsIdleAfterSinkIdleness() throws Exception {
        idleReport(HandoverJob.Stage.GATE_IN_SINK, Duration.ofMillis(1_000));
    }

    /** Both placements of the gate, with the suffix their tests' names carry. */
    static Stream<Arguments> placements() {
        return Stream.of(Arguments.of(HandoverJob.Stage.GATE, ""), Arguments.of(HandoverJob.Stage.GATE_IN_SINK, " (gate in the sink)"));
    }

    @ParameterizedTest(name = "handover job{1}: held records are checkpointed: after a failure and restart, each is emitted once")
    @MethodSource("placements")
    void heldRecordsRestart(HandoverJob.Stage stage, String where) throws Exception {
        heldRestart(stage);
    }

    @Test
    @DisplayName("handover job: the oracle fails on conflicting states (both active: duplicates; each told the other is active: losses)")
    void oracleFailsConflictingStatesBothActiveDuplicates() throws Exception {
        int n = 20_000;
        HandoverJob.Verdict dup = pair(n, st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE),
                st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN));
        assertTrue(!dup.exactlyOnce(), "oracle must report: " + dup);
        assertEquals((long) n, dup.duplicates, "duplicates (" + dup + ")");
        HandoverJob.Verdict loss = pair(n, st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN),
                st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        assertTrue(!loss.exactlyOnce(), "oracle must report: " + loss);
        assertEquals((long) n, loss.losses, "losses (" + loss + ")");
        // Two different W's in the two gates: the records between them are duplicated.
        HandoverJob.Verdict split = pair(n, st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, HandoverJob.BASE + 12_000, GREEN),
                st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, HandoverJob.BASE + 10_000, GREEN));
        assertTrue(split.duplicates > 1_900 && split.losses == 0, "W disagreement duplicates the ids between the W's: " + split);
        System.out.println("     both active: " + dup + "; each told the other is active: " + loss + "; W 12000 vs 10000: " + split);
    }

    @ParameterizedTest(name = "handover job{1}: a restarted gate restores its max passed event time from the checkpoint")
    @MethodSource("placements")
    void maxPassedRestored(HandoverJob.Stage stage, String where) throws Exception {
        maxRestored(stage);
    }

    @ParameterizedTest(name = "handover job{1}: hold -> timeout fails the Flink job with GateHoldTimeoutException")
    @MethodSource("placements")
    void holdTimeoutFailsJob(HandoverJob.Stage stage, String where) throws Exception {
        holdTimeout(stage);
    }

    @ParameterizedTest(name = "handover job{1}: a job without timestamps fails by default; treatMissingTimestampAs emits each record once")
    @MethodSource("placements")
    void missingTimestampsHandled(HandoverJob.Stage stage, String where) throws Exception {
        missingTimestamps(stage);
    }

    /** {@code sinkIdleness}: the gate's {@link GateProcessFunction#withSinkIdleness}, null for the default (30 s). */
    static void idleReport(HandoverJob.Stage stage, Duration sinkIdleness) throws Exception {
        String run = "idle-" + SEQ.incrementAndGet();
        LocalFlink flink = LocalFlink.shared();
        ManualStateSource.channel(run).publish(st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        StreamExecutionEnvironment env = HandoverJob.env(1);
        // The ids stall after 1,000 in their own task; the timestamp assigner downstream then
        // declares its input idle after 200 ms (withIdleness), and the gate sees WatermarkStatus.IDLE.
        org.apache.flink.streaming.api.datastream.DataStream<Long> ids = env.fromSequence(0, 1_000_000)
                .map(new StallAfter(1_000)).disableChaining()
                .assignTimestampsAndWatermarks(org.apache.flink.api.common.eventtime.WatermarkStrategy
                        .<Long>forMonotonousTimestamps()
                        .withTimestampAssigner((id, ts) -> HandoverJob.eventTime(id))
                        .withIdleness(Duration.ofMillis(200)));
        GateProcessFunction<Long> gate = new GateProcessFunction<Long>(BLUE, new ManualStateSource(run));
        if (sinkIdleness != null) {
            gate.withSinkIdleness(sinkIdleness);
        }
        gatedSink(ids, gate, null, stage);
        JobID job = flink.submit(env, run);
        try {
            String v = gateVertex(flink, job);
            GateReport[] last = new GateReport[1];
            if (stage == HandoverJob.Stage.GATE_IN_SINK && sinkIdleness == null) {
                // Flink passes no WatermarkStatus to a sink writer: the gate in the sink reports the
                // last watermark it was given and idle=false until the sink idleness (30 s) passed.
                waitFor(() -> {
                    List<String> lines = flink.subtaskMetric(job, v, 1, GateProcessFunction.METRIC_APPLIED_STATE);
                    if (lines == null) {
                        return false;
                    }
                    last[0] = GateReport.parse(lines.get(0));
                    return last[0].watermark > HandoverJob.BASE;
                }, 30_000, "the gate in the sink to report a watermark");
                Thread.sleep(1_500); // the input has been idle for over a second (idleness after 200 ms)
                GateReport r = GateReport.parse(flink.subtaskMetric(job, v, 1, GateProcessFunction.METRIC_APPLIED_STATE).get(0));
                assertTrue(r.watermark > HandoverJob.BASE && r.watermark < HandoverJob.eventTime(1_000), "the last input watermark: " + r);
                assertTrue(!r.idle, "a sink writer is not told of idleness, and 30 s have not passed: " + r);
                assertTrue(!r.past(HandoverJob.eventTime(500_000)), "so it does not count as past a later W: " + r);
                System.out.println("     " + r.line());
                return;
            }
            waitFor(() -> {
                List<String> lines = flink.subtaskMetric(job, v, 1, GateProcessFunction.METRIC_APPLIED_STATE);
                if (lines == null) {
                    return false;
                }
                last[0] = GateReport.parse(lines.get(0));
                return last[0].idle;
            }, 30_000, "the gate to report idle=true");
            assertTrue(last[0].watermark > HandoverJob.BASE && last[0].watermark < HandoverJob.eventTime(1_000),
                    "the last input watermark before idling: " + last[0]);
            assertTrue(last[0].past(HandoverJob.eventTime(500_000)), "an idle gate counts as past any W: " + last[0]);
            System.out.println("     " + last[0].line());
        } finally {
            flink.cancel(job);
        }
    }

    static void heldRestart(HandoverJob.Stage stage) throws Exception {
        String run = "held-restart-" + SEQ.incrementAndGet();
        LocalFlink flink = LocalFlink.shared();
        ManualStateSource.Channel ch = ManualStateSource.channel(run);
        ch.publish(st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN)); // green holds everything
        org.apache.flink.configuration.Configuration conf = new org.apache.flink.configuration.Configuration();
        conf.set(org.apache.flink.configuration.RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(org.apache.flink.configuration.RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 2);
        conf.set(org.apache.flink.configuration.RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(100));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(P);
        env.enableCheckpointing(200);
        int n = 40_000;
        AtomicIntegerArray out = HandoverJob.Recorder.create(run, n);
        FailOnce.ARMED.put(run, new java.util.concurrent.atomic.AtomicBoolean(false));
        org.apache.flink.streaming.api.datastream.DataStream<Long> ids = env.fromSequence(0, n - 1)
                .assignTimestampsAndWatermarks(org.apache.flink.api.common.eventtime.WatermarkStrategy
                        .<Long>forBoundedOutOfOrderness(Duration.ofMillis(HandoverJob.OUT_OF_ORDERNESS_MS))
                        .withTimestampAssigner((id, ts) -> HandoverJob.eventTime(id)))
                .map(new HandoverJob.TimedPacer(12_000, n / P))
                .map(new FailOnce(run));
        gatedSink(ids, new GateProcessFunction<Long>(GREEN, new ManualStateSource(run)), run, stage);
        JobID job = flink.submit(env, run);
        try {
            String v = gateVertex(flink, job);
            long[] held = new long[1];
            long[] cp = new long[1];
            waitFor(() -> {
                List<String> h = flink.subtaskMetric(job, v, P, GateProcessFunction.METRIC_HELD_RECORDS);
                held[0] = h == null ? 0 : h.stream().mapToLong(Long::parseLong).sum();
                cp[0] = checkpoints(flink, job);
                return held[0] >= 4_000;
            }, 60_000, "the gates to hold 4000 records");
            waitFor(() -> checkpoints(flink, job) >= cp[0] + 2, 30_000, "two checkpoints with held records");
            FailOnce.ARMED.get(run).set(true);
            waitFor(() -> !FailOnce.ARMED.get(run).get(), 30_000, "the injected failure");
            waitFor(() -> checkpoints(flink, job) >= cp[0] + 4, 60_000, "checkpoints after the restart");
            ch.publish(st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, HandoverJob.BASE - 1_000, GREEN)); // green owns every id
            Throwable err = flink.await(job, 120_000);
            assertTrue(err == null, "job succeeds after one restart: " + err);
            long lost = 0;
            long dup = 0;
            for (int i = 0; i < n; i++) {
                lost += out.get(i) == 0 ? 1 : 0;
                dup += Math.max(0, out.get(i) - 1);
            }
            assertEquals(0L, lost + dup, "ids lost (" + lost + ") or duplicated (" + dup + ")");
            assertEquals(0L, HandoverJob.Recorder.late(run), "records behind the watermark at the sink");
            System.out.println("     " + held[0] + " records held before the failure; after the restart all " + n + " ids emitted once");
        } finally {
            flink.cancel(job);
        }
    }

    static void maxRestored(HandoverJob.Stage stage) throws Exception {
        String run = "restart-" + SEQ.incrementAndGet();
        LocalFlink flink = LocalFlink.shared();
        ManualStateSource.Channel ch = ManualStateSource.channel(run);
        ch.publish(st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        org.apache.flink.configuration.Configuration conf = new org.apache.flink.configuration.Configuration();
        conf.set(org.apache.flink.configuration.RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(org.apache.flink.configuration.RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 2);
        conf.set(org.apache.flink.configuration.RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(100));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(P);
        env.enableCheckpointing(100);
        int n = 400_000;
        FailOnce.ARMED.put(run, new java.util.concurrent.atomic.AtomicBoolean(false));
        org.apache.flink.streaming.api.datastream.DataStream<Long> ids = env.fromSequence(0, n - 1)
                .assignTimestampsAndWatermarks(org.apache.flink.api.common.eventtime.WatermarkStrategy
                        .<Long>forBoundedOutOfOrderness(Duration.ofMillis(HandoverJob.OUT_OF_ORDERNESS_MS))
                        .withTimestampAssigner((id, ts) -> HandoverJob.eventTime(id)))
                .map(new HandoverJob.Pacer(10))
                .map(new FailOnce(run));
        gatedSink(ids, new GateProcessFunction<Long>(BLUE, new ManualStateSource(run)).withHoldTimeout(Duration.ofSeconds(60)), null, stage);
        JobID job = flink.submit(env, run);
        try {
            waitFor(() -> {
                try {
                    flink.vertex(job, "bluegreen-gate");
                    return true;
                } catch (IllegalStateException e) {
                    return false;
                }
            }, 30_000, "the job graph");
            String v = flink.vertex(job, "bluegreen-gate");
            long[] before = new long[1];
            waitFor(() -> {
                @SuppressWarnings("unchecked")
                java.util.Map<String, Object> cp = (java.util.Map<String, Object>) flink.getJson("/jobs/" + job + "/checkpoints");
                @SuppressWarnings("unchecked")
                long completed = ((Number) ((java.util.Map<String, Object>) cp.get("counts")).get("completed")).longValue();
                List<String> max = flink.subtaskMetric(job, v, P, GateProcessFunction.METRIC_MAX_PASSED);
                if (completed < 1 || max == null) {
                    return false;
                }
                before[0] = max.stream().mapToLong(Long::parseLong).min().getAsLong();
                return before[0] > Long.MIN_VALUE;
            }, 60_000, "a completed checkpoint with records passed");
            // After the restart a gate holds everything (an incoming-color state that running
            // gates refuse as illegal, but a fresh gate accepts), so whatever it reports as max
            // passed comes from the restored state (union list state of the operator, or the sink writer's state).
            java.util.Map<String, String> hold = st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE).toData();
            ch.publishData(hold);
            FailOnce.ARMED.get(run).set(true);
            // Flink's default region failover restarts only the failed subtask (each subtask is its
            // own pipelined region here); the other one keeps RUNNING, refusing the illegal update.
            long[] after = new long[1];
            waitFor(() -> {
                List<String> lines = flink.subtaskMetric(job, v, P, GateProcessFunction.METRIC_APPLIED_STATE);
                if (lines == null) {
                    return false;
                }
                for (String l : lines) {
                    if (l.startsWith("epoch=1 ") && l.contains("active=BLUE")) {
                        after[0] = field(l, "max-passed");
                        return true;
                    }
                }
                return false;
            }, 60_000, "a restarted gate reporting the holding state");
            assertTrue(after[0] > Long.MIN_VALUE, "restored max passed event time: " + after[0]);
            assertTrue(after[0] >= HandoverJob.BASE, "restored value is a real event time: " + after[0]);
            System.out.println("     max passed before the failure (min over subtasks) " + (before[0] - HandoverJob.BASE)
                    + " (+base); the restarted subtask, holding everything, reports " + (after[0] - HandoverJob.BASE) + " (+base), from the checkpoint");
        } finally {
            flink.cancel(job);
        }
    }

    static void holdTimeout(HandoverJob.Stage stage) throws Exception {
        String run = "hold-" + SEQ.incrementAndGet();
        LocalFlink flink = LocalFlink.shared();
        StreamExecutionEnvironment env = HandoverJob.env(1);
        HandoverJob.build(env, 100, 0, stage,
                new GateProcessFunction<Long>(GREEN, new ManualStateSource(run)).withHoldTimeout(Duration.ofMillis(300)), null);
        Throwable err = flink.await(flink.submit(env, run), 60_000);
        assertTrue(err != null, "the job must fail");
        GateHoldTimeoutException cause = findCause(err, GateHoldTimeoutException.class);
        assertTrue(cause != null, "cause chain holds GateHoldTimeoutException: " + err);
        assertTrue(cause.getMessage().contains("none yet"), cause.getMessage());
    }

    static void missingTimestamps(HandoverJob.Stage stage) throws Exception {
        String run = "nots-" + SEQ.incrementAndGet();
        LocalFlink flink = LocalFlink.shared();
        ManualStateSource.channel(run).publish(st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        for (boolean lenient : new boolean[] {false, true}) {
            int n = 1_000;
            AtomicIntegerArray out = HandoverJob.Recorder.create(run + "/" + lenient, n);
            StreamExecutionEnvironment env = HandoverJob.env(P);
            GateProcessFunction<Long> gate = new GateProcessFunction<>(BLUE, new ManualStateSource(run));
            if (lenient) {
                gate.treatMissingTimestampAs(Long.MIN_VALUE);
            }
            gatedSink(env.fromSequence(0, n - 1), gate, run + "/" + lenient, stage);
            Throwable err = flink.await(flink.submit(env, run + "-" + lenient + "-" + stage), 60_000);
            if (lenient) {
                assertTrue(err == null, "lenient job succeeds: " + err);
                for (int i = 0; i < n; i++) {
                    assertEquals(1, out.get(i), "id " + i + " emitted once");
                }
            } else {
                assertTrue(findCause(err, MissingTimestampException.class) != null, "fails with MissingTimestampException: " + err);
            }
        }
    }

    /** Passes {@code n} records, then blocks its task (until the job is cancelled). */
    static final class StallAfter implements org.apache.flink.api.common.functions.MapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final long n;
        private transient long seen;

        StallAfter(long n) {
            this.n = n;
        }

        @Override
        public Long map(Long v) throws InterruptedException {
            if (++seen > n) {
                Thread.sleep(Long.MAX_VALUE);
            }
            return v;
        }
    }

    /** Throws once when armed (after records were passed and checkpoints completed). */
    static final class FailOnce implements org.apache.flink.api.common.functions.MapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        static final java.util.Map<String, java.util.concurrent.atomic.AtomicBoolean> ARMED = new java.util.concurrent.ConcurrentHashMap<>();
        private final String key;

        FailOnce(String key) {
            this.key = key;
        }

        @Override
        public Long map(Long v) {
            if (ARMED.get(key).compareAndSet(true, false)) {
                throw new IllegalStateException("injected failure (test)");
            }
            return v;
        }
    }
}
