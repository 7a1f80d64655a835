package io.bluegreen.gate;

import static io.bluegreen.gate.Color.BLUE;
import static io.bluegreen.gate.Color.GREEN;
import static io.bluegreen.gate.GateProcessFunction.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The GateProcessFunction driven directly with fake Flink contexts (no harness jar offline). */
final class GateProcessFunctionTest {
    private static final AtomicInteger SEQ = new AtomicInteger();

    static final class Rig {
        final String channel = "unit-" + SEQ.incrementAndGet();
        final ManualStateSource.Channel ch = ManualStateSource.channel(channel);
        final GateProcessFunction<String> fn;
        final Fakes.Metrics metrics = new Fakes.Metrics();
        final Fakes.Out<String> out = new Fakes.Out<>();

        Rig(Color color) throws Exception {
            this(color, null);
        }

        Rig(Color color, List<Long> restored) throws Exception {
            fn = new GateProcessFunction<>(color, new ManualStateSource(channel));
            fn.withHoldTimeout(Duration.ofSeconds(10));
            if (restored != null) {
                fn.initializeState(Fakes.initContext(true, restored));
            }
        }

        Rig start() throws Exception {
            fn.start(metrics.group, "unit");
            return this;
        }

        void send(String v, Long ts) throws Exception {
            fn.processElement(v, Fakes.context(fn, ts), out);
        }
    }

    static CoordinationState st(long epoch, Stage stage, WatermarkStage ws, long w, Color active) {
        return CoordinationState.of(epoch, active, stage, ws, w, 0);
    }

    @Test
    @DisplayName("gate: registers every documented metric under its exact name")
    void registersEveryDocumentedMetricUnderExactName() throws Exception {
        Rig r = new Rig(BLUE).start();
        for (String m : List.of(METRIC_PASSED, METRIC_DROPPED, METRIC_DROPPED_LATE, METRIC_HELD, METRIC_MAX_PASSED, METRIC_EPOCH,
                METRIC_WATERMARK_STAGE, METRIC_TOGGLE, METRIC_REFUSED, METRIC_SOURCE_ERRORS, METRIC_APPLIED_STATE)) {
            assertTrue(r.metrics.registered.containsKey(m), "metric " + m + " registered: " + r.metrics.registered.keySet());
        }
        assertEquals(-1L, r.metrics.gauge(METRIC_EPOCH), "epoch before any state");
        assertEquals(-1, r.metrics.gauge(METRIC_WATERMARK_STAGE), "watermark stage before any state");
        assertEquals(Long.MIN_VALUE, r.metrics.gauge(METRIC_MAX_PASSED), "max passed before any record");
    }

    @Test
    @DisplayName("gate: the active color passes in RUNNING, the other drops; counters and gauges follow")
    void activeColorPassesRUNNINGOtherDropsCounters() throws Exception {
        Rig blue = new Rig(BLUE).start();
        Rig green = new Rig(GREEN).start();
        blue.ch.publish(st(3, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        green.ch.publish(st(3, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        for (long t = 10; t < 15; t++) {
            blue.send("r" + t, t);
            green.send("r" + t, t);
        }
        assertEquals(5, blue.out.items.size(), "blue emitted");
        assertEquals(0, green.out.items.size(), "green emitted");
        assertEquals(5L, blue.metrics.count(METRIC_PASSED), "blue passed");
        assertEquals(5L, green.metrics.count(METRIC_DROPPED), "green dropped");
        assertEquals(14L, blue.metrics.gauge(METRIC_MAX_PASSED), "blue max passed");
        assertEquals(3L, blue.metrics.gauge(METRIC_EPOCH), "epoch gauge");
        assertEquals(0, blue.metrics.gauge(METRIC_WATERMARK_STAGE), "watermark stage gauge");
        assertEquals("epoch=3 stage=RUNNING active=BLUE watermark-stage=0 toggle= floor= max-passed=14 watermark=-9223372036854775808 idle=false color=BLUE",
                blue.metrics.gauge(METRIC_APPLIED_STATE), "applied state line");
    }

    @Test
    @DisplayName("gate: with W set the outgoing color owns t <= W (W included), the incoming t > W")
    void wSetOutgoingColorOwnsTW() throws Exception {
        Rig blue = new Rig(BLUE).start();
        Rig green = new Rig(GREEN).start();
        blue.fn.withTimestampExtractor(TimestampExtractor.fromContextRaw()); // Long.MIN_VALUE is an event time here
        green.fn.withTimestampExtractor(TimestampExtractor.fromContextRaw());
        CoordinationState set = st(4, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 100, GREEN);
        blue.ch.publish(set);
        green.ch.publish(set);
        for (long t : new long[] {Long.MIN_VALUE, 99, 100, 101, Long.MAX_VALUE}) {
            blue.send("t" + t, t);
            green.send("t" + t, t);
        }
        assertEquals(List.of("t" + Long.MIN_VALUE, "t99", "t100"), blue.out.items, "blue (outgoing)");
        assertEquals(List.of("t101", "t" + Long.MAX_VALUE), green.out.items, "green (incoming)");
        assertEquals(2, green.metrics.gauge(METRIC_WATERMARK_STAGE), "watermark stage gauge");
        assertEquals(100L, green.metrics.gauge(METRIC_TOGGLE), "toggle gauge");
    }

    @Test
    @DisplayName("gate: hold -> timeout -> GateHoldTimeoutException (no state at all)")
    void holdTimeoutGateHoldTimeoutExceptionNoStateAll() throws Exception {
        Rig r = new Rig(GREEN).start();
        r.fn.withHoldTimeout(Duration.ofMillis(200));
        long t0 = System.nanoTime();
        GateHoldTimeoutException e = assertThrows(GateHoldTimeoutException.class, () -> r.send("x", 5L));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= 190 && ms < 5_000, "held " + ms + " ms");
        assertTrue(e.getMessage().contains("none yet"), e.getMessage());
        assertEquals(1L, r.metrics.count(METRIC_HELD), "held counter");
        assertEquals(0, r.out.items.size(), "nothing emitted");
    }

    @Test
    @DisplayName("gate: hold -> timeout when the state never decides (incoming color, W only proposed)")
    void holdTimeoutWhenStateNeverDecidesIncoming() throws Exception {
        Rig r = new Rig(GREEN).start();
        r.fn.withHoldTimeout(Duration.ofMillis(150));
        r.ch.publish(st(1, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, 50, GREEN));
        GateHoldTimeoutException e = assertThrows(GateHoldTimeoutException.class, () -> r.send("x", 500L));
        assertTrue(e.getMessage().contains("WAITING_FOR_WATERMARK(W=50)"), e.getMessage());
    }

    @Test
    @DisplayName("gate: a held record is decided by a newer state delivered while it waits")
    void heldRecordDecidedNewerStateDeliveredWhile() throws Exception {
        Rig green = new Rig(GREEN).start();
        Rig blue = new Rig(BLUE).start();
        CoordinationState notSet = st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN);
        CoordinationState waiting = st(1, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, 100, GREEN);
        CoordinationState set = st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 100, GREEN);
        green.ch.publish(notSet);
        blue.ch.publish(waiting);
        Thread controller = new Thread(() -> {
            try {
                Thread.sleep(150);
                green.ch.publish(waiting);
                Thread.sleep(100);
                green.ch.publish(set);
                blue.ch.publish(set);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        controller.start();
        Thread other = new Thread(() -> {
            try {
                blue.send("b101", 101L); // outgoing holds above the proposed W, then drops
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        other.start();
        long t0 = System.nanoTime();
        green.send("g101", 101L); // held through NOT_SET and WAITING, passes once W is set
        long ms = (System.nanoTime() - t0) / 1_000_000;
        green.send("g100", 100L);
        other.join(5_000);
        controller.join();
        assertTrue(ms >= 200, "green held " + ms + " ms");
        assertEquals(List.of("g101"), green.out.items, "green emitted");
        assertEquals(List.of(), blue.out.items, "blue emitted");
        assertEquals(1L, green.metrics.count(METRIC_HELD), "green held");
        assertEquals(1L, blue.metrics.count(METRIC_HELD), "blue held");
        assertEquals(1L, blue.metrics.count(METRIC_DROPPED), "blue dropped");
    }

    @Test
    @DisplayName("gate: refused updates (older epoch, illegal step, bad data) keep the last good state")
    void refusedUpdatesOlderEpochIllegalStepBad() throws Exception {
        Rig r = new Rig(BLUE).start();
        r.ch.publish(st(5, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        r.ch.publish(st(4, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN)); // stale
        r.ch.publish(st(5, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN)); // illegal within epoch
        Map<String, String> bad = new java.util.TreeMap<>(st(6, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN).toData());
        bad.put("protocol-version", "2");
        r.ch.publishData(bad); // unsupported version
        r.send("a", 1L);
        assertEquals(List.of("a"), r.out.items, "still passes as the active color");
        assertEquals(3L, r.metrics.gauge(METRIC_REFUSED), "refused updates");
        assertEquals(5L, r.metrics.gauge(METRIC_EPOCH), "epoch gauge");
        assertTrue(r.fn.gate().lastProblem().contains("protocol-version"), r.fn.gate().lastProblem());
        // A gate that missed states accepts a reachable newer one.
        r.ch.publish(st(6, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 10, GREEN));
        r.send("b", 10L);
        r.send("c", 11L);
        assertEquals(List.of("a", "b"), r.out.items, "after the newer epoch");
    }

    @Test
    @DisplayName("gate: a record without a timestamp fails the task by default")
    void recordWithoutTimestampFailsTaskDefault() throws Exception {
        Rig r = new Rig(BLUE).start();
        r.ch.publish(st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        MissingTimestampException e = assertThrows(MissingTimestampException.class, () -> r.send("x", null));
        assertTrue(e.getMessage().contains("treatMissingTimestampAs"), e.getMessage());
    }

    @Test
    @DisplayName("gate: the default extractor treats Flink's NO_TIMESTAMP (Long.MIN_VALUE) as missing")
    void defaultExtractorTreatsFlinkSNOTIMESTAMP() throws Exception {
        Rig r = new Rig(BLUE).start();
        r.ch.publish(st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        assertThrows(MissingTimestampException.class, () -> r.send("x", Long.MIN_VALUE));
        r.send("y", Long.MIN_VALUE + 1);
        assertEquals(List.of("y"), r.out.items, "MIN+1 is an ordinary event time");
    }

    @Test
    @DisplayName("gate: records without a timestamp are emitted once with treatMissingTimestampAs, until a floor drops them")
    void recordsWithoutTimestampAreEmittedOnceTreatMissingTimestampAs() throws Exception {
        Rig blue = new Rig(BLUE).start();
        Rig green = new Rig(GREEN).start();
        blue.fn.treatMissingTimestampAs(Long.MIN_VALUE);
        green.fn.treatMissingTimestampAs(Long.MIN_VALUE);
        List<CoordinationState> states = List.of(
                st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE),
                st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 7, GREEN),
                st(1, Stage.CLEAR_TO_TEARDOWN, WatermarkStage.WATERMARK_SET, 7, GREEN),
                st(1, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN).withFloor(7L),
                st(2, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN));
        int i = 0;
        for (CoordinationState s : states) {
            blue.ch.publish(s);
            green.ch.publish(s);
            blue.send("n" + i, null);
            green.send("n" + i, null);
            i++;
        }
        assertEquals(0L, (long) blue.metrics.gauge(METRIC_REFUSED) + (long) green.metrics.gauge(METRIC_REFUSED), "refused updates");
        List<String> all = new ArrayList<>(blue.out.items);
        all.addAll(green.out.items);
        all.sort(null);
        assertEquals(List.of("n0", "n1", "n2", "n4"), all, "each record emitted at most once; n3 is at or below the floor");
        assertEquals(List.of("n0", "n1", "n2"), blue.out.items, "outgoing owns them until it is torn down");
        assertEquals(1L, blue.metrics.count(METRIC_DROPPED_LATE), "blue dropped n3 as late");
        assertEquals(1L, green.metrics.count(METRIC_DROPPED_LATE), "green dropped n3 as late");
    }

    @Test
    @DisplayName("gate: the floor: t <= F is dropped by both colors in every stage and counted as late; no floor, no late")
    void floorTFDroppedBothColorsEvery() throws Exception {
        long f = 100;
        List<CoordinationState> states = List.of(
                st(1, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE).withFloor(f),
                st(2, Stage.TRANSITIONING, WatermarkStage.WATERMARK_NOT_SET, 0, GREEN).withFloor(f),
                st(2, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, 200, GREEN).withFloor(f),
                st(2, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 200, GREEN).withFloor(f),
                st(2, Stage.CLEAR_TO_TEARDOWN, WatermarkStage.WATERMARK_SET, 200, GREEN).withFloor(f),
                st(2, Stage.FAILING, WatermarkStage.WAITING_FOR_WATERMARK, 200, GREEN).withFloor(f));
        for (CoordinationState s : states) {
            for (Color c : Color.values()) {
                Rule r = Rule.forState(s, c);
                for (long t : new long[] {Long.MIN_VALUE, 0, f - 1, f}) {
                    assertEquals(Decision.DROP, r.decide(t), c + " at t=" + t + " under " + s);
                    assertTrue(r.isLate(t), "late at t=" + t);
                }
                assertTrue(!r.isLate(f + 1), "t=F+1 is not late under " + s);
            }
        }
        assertEquals(Decision.PASS, Rule.forState(states.get(0), BLUE).decide(f + 1), "RUNNING: the active color passes t > F");
        // Without a floor nothing is late, not even Long.MIN_VALUE.
        Rule none = Rule.forState(st(1, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE), BLUE);
        assertEquals(Decision.PASS, none.decide(Long.MIN_VALUE), "MIN without a floor");
        assertTrue(!none.isLate(Long.MIN_VALUE), "MIN is not late without a floor");
        // Counted apart from ordinary drops.
        Rig blue = new Rig(BLUE).start();
        blue.ch.publish(states.get(0));
        blue.send("late", f);
        blue.send("ok", f + 1);
        blue.ch.publish(states.get(3));
        blue.send("green's", 201L);
        assertEquals(List.of("ok"), blue.out.items, "blue emitted");
        assertEquals(1L, blue.metrics.count(METRIC_DROPPED_LATE), "late drops");
        assertEquals(1L, blue.metrics.count(METRIC_DROPPED), "ordinary drops");
        assertTrue(((String) blue.metrics.gauge(METRIC_APPLIED_STATE)).contains(" toggle=200 floor=100 max-passed=101 "),
                "report line carries the floor: " + blue.metrics.gauge(METRIC_APPLIED_STATE));
    }

    @Test
    @DisplayName("gate: a custom TimestampExtractor decides instead of the context timestamp")
    void customTimestampExtractorDecidesInsteadContextTimestamp() throws Exception {
        Rig r = new Rig(BLUE).start();
        r.fn.withTimestampExtractor((v, ts) -> Long.parseLong(v));
        r.ch.publish(st(1, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 100, GREEN));
        r.send("100", 999L);
        r.send("101", 0L);
        assertEquals(List.of("100"), r.out.items, "decided by the extracted event time");
    }

    @Test
    @DisplayName("gate: max passed event time is checkpointed in union list state and restored as the maximum")
    void maxPassedEventTimeCheckpointedUnionList() throws Exception {
        List<Long> snap = new ArrayList<>();
        Rig r = new Rig(BLUE, snap).start();
        r.ch.publish(st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        r.send("a", 40L);
        r.send("b", 70L);
        r.send("c", 50L);
        r.fn.snapshotState(Fakes.snapshotContext(1));
        assertEquals(List.of(70L), snap, "snapshot");
        // Restore: union of three subtasks' entries.
        Rig restored = new Rig(BLUE, new ArrayList<>(List.of(70L, 12L, Long.MIN_VALUE))).start();
        assertEquals(70L, restored.metrics.gauge(METRIC_MAX_PASSED), "restored max passed");
        restored.ch.publish(st(0, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, BLUE));
        restored.send("d", 60L);
        assertEquals(70L, restored.metrics.gauge(METRIC_MAX_PASSED), "an older record does not lower it");
        Rig nothing = new Rig(BLUE, new ArrayList<>()).start();
        assertEquals(Long.MIN_VALUE, nothing.metrics.gauge(METRIC_MAX_PASSED), "fresh start");
    }

    @Test
    @DisplayName("gate: the function and its sources are serializable (job graph)")
    void functionSourcesAreSerializableJobGraph() throws Exception {
        for (Object o : List.of(new GateProcessFunction<String>(BLUE, new ManualStateSource("x")),
                new GateProcessFunction<String>(GREEN, new SidecarStateSource(8787)),
                new GateProcessFunction<String>(GREEN, StaticStateSource.of(CoordinationState.initial(GREEN, 0)))
                        .withTimestampExtractor((v, ts) -> 1L))) {
            byte[] bytes = org.apache.flink.util.InstantiationUtil.serializeObject(o);
            assertTrue(bytes.length > 0, "serialized");
            org.apache.flink.util.InstantiationUtil.deserializeObject(bytes, GateProcessFunctionTest.class.getClassLoader());
        }
    }
}
