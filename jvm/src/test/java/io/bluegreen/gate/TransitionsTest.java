package io.bluegreen.gate;

import static io.bluegreen.gate.Color.BLUE;
import static io.bluegreen.gate.Color.GREEN;
import static io.bluegreen.gate.Stage.CLEAR_TO_TEARDOWN;
import static io.bluegreen.gate.Stage.FAILING;
import static io.bluegreen.gate.Stage.RUNNING;
import static io.bluegreen.gate.Stage.TRANSITIONING;
import static io.bluegreen.gate.WatermarkStage.WAITING_FOR_WATERMARK;
import static io.bluegreen.gate.WatermarkStage.WATERMARK_NOT_SET;
import static io.bluegreen.gate.WatermarkStage.WATERMARK_SET;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** Mirrors protocol/tests/transitions.rs: check == reflexive-transitive closure of isStep, plus named cases. */
final class TransitionsTest {
    static final long[] EPOCHS = {0, 1, 2, 3};
    /**
     * W and floor values compared: consecutive integers, because a handover completed above floor
     * F may set any W > F. The closure runs over {@link #PATH_VALUES}, which adds the values
     * below and above them that paths over up to three epochs pass through.
     */
    static final long[] WS = {-1, 0, 1, 2};
    static final long[] PATH_VALUES = {-3, -2, -1, 0, 1, 2, 3, 4};

    /** Every valid state with W and floor (or none) drawn from {@code values}. */
    static List<CoordinationState> universe(long[] values) {
        List<CoordinationState> all = new ArrayList<>();
        List<Long> floors = new ArrayList<>();
        floors.add(null);
        for (long v : values) {
            floors.add(v);
        }
        for (long epoch : EPOCHS) {
            for (Color active : Color.values()) {
                for (Stage stage : Stage.values()) {
                    for (WatermarkStage ws : WatermarkStage.values()) {
                        long[] ws2 = ws == WATERMARK_NOT_SET ? new long[] {0} : values;
                        for (long w : ws2) {
                            for (Long floor : floors) {
                                CoordinationState s = CoordinationState.of(epoch, active, stage, ws, w, 0).withFloor(floor);
                                if (s.isValid()) {
                                    all.add(s);
                                }
                            }
                        }
                    }
                }
            }
        }
        return all;
    }

    static CoordinationState s(long epoch, Stage stage, WatermarkStage ws, long w, Color active) {
        return CoordinationState.of(epoch, active, stage, ws, w, 1000);
    }

    @Test
    @DisplayName("transitions: check accepts exactly the states reachable by legal steps (closure of isStep)")
    void checkAcceptsExactlyStatesReachableLegalSteps() throws Exception {
        List<CoordinationState> states = universe(PATH_VALUES);
        int n = states.size();
        List<List<Integer>> steps = new ArrayList<>();
        for (int a = 0; a < n; a++) {
            List<Integer> out = new ArrayList<>();
            for (int j = 0; j < n; j++) {
                if (Transitions.isStep(states.get(a), states.get(j))) {
                    out.add(j);
                }
            }
            steps.add(out);
        }
        List<Integer> compared = new ArrayList<>();
        List<CoordinationState> small = universe(WS);
        for (int i = 0; i < n; i++) {
            if (small.contains(states.get(i))) {
                compared.add(i);
            }
        }
        assertEquals(small.size(), compared.size(), "compared states");
        assertTrue(compared.size() > 400, "universe too small: " + compared.size());
        long accepted = 0;
        for (int i : compared) {
            BitSet seen = new BitSet(n);
            seen.set(i);
            ArrayDeque<Integer> queue = new ArrayDeque<>(List.of(i));
            while (!queue.isEmpty()) {
                for (int j : steps.get(queue.poll())) {
                    if (!seen.get(j)) {
                        seen.set(j);
                        queue.add(j);
                    }
                }
            }
            for (int j : compared) {
                boolean ok = Transitions.isReachable(states.get(i), states.get(j));
                if (ok != seen.get(j)) {
                    String why;
                    try {
                        Transitions.check(states.get(i), states.get(j));
                        why = "accepted";
                    } catch (ProtocolException e) {
                        why = e.getMessage();
                    }
                    throw new AssertionError(states.get(i) + " -> " + states.get(j) + ": check says " + why
                            + " but reachable=" + seen.get(j));
                }
                accepted += ok ? 1 : 0;
            }
        }
        long m = compared.size();
        assertTrue(accepted > 1000 && accepted < m * m / 2, "oracle not vacuous: " + accepted);
    }

    @Test
    @DisplayName("transitions: an older epoch is stale")
    void olderEpochStale() throws Exception {
        ProtocolException e = assertThrows(ProtocolException.class, () -> Transitions.check(
                s(4, RUNNING, WATERMARK_NOT_SET, 0, BLUE), s(3, CLEAR_TO_TEARDOWN, WATERMARK_SET, 10, BLUE)));
        assertEquals(ProtocolException.Kind.StaleEpoch, e.kind(), "kind");
        assertEquals("epoch", e.key(), "key");
        assertTrue(e.getMessage().contains("from 4 to 3"), e.getMessage());
    }

    @Test
    @DisplayName("transitions: W may not move once set")
    void wMayNotMoveOnceSet() throws Exception {
        ProtocolException e = assertThrows(ProtocolException.class, () -> Transitions.check(
                s(2, TRANSITIONING, WATERMARK_SET, 100, GREEN), s(2, TRANSITIONING, WATERMARK_SET, 101, GREEN)));
        assertEquals(ProtocolException.Kind.IllegalTransition, e.kind(), "kind");
        assertTrue(e.getMessage().contains("may not change once set"), e.getMessage());
    }

    @Test
    @DisplayName("transitions: a proposed W may only rise")
    void proposedWMayOnlyRise() throws Exception {
        CoordinationState proposed = s(2, TRANSITIONING, WAITING_FOR_WATERMARK, 100, GREEN);
        assertTrue(Transitions.isReachable(proposed, s(2, TRANSITIONING, WAITING_FOR_WATERMARK, 150, GREEN)), "higher");
        assertTrue(!Transitions.isReachable(proposed, s(2, TRANSITIONING, WAITING_FOR_WATERMARK, 99, GREEN)), "lower");
        assertTrue(Transitions.isReachable(proposed, s(2, TRANSITIONING, WATERMARK_SET, 150, GREEN)), "set higher");
    }

    @Test
    @DisplayName("transitions: a gate that missed updates accepts the newer state")
    void gateThatMissedUpdatesAcceptsNewerState() throws Exception {
        CoordinationState running = s(0, RUNNING, WATERMARK_NOT_SET, 0, BLUE);
        assertTrue(Transitions.isReachable(running, s(1, TRANSITIONING, WATERMARK_SET, 100, GREEN)), "next epoch set");
        assertTrue(!Transitions.isReachable(running, s(1, TRANSITIONING, WATERMARK_SET, 100, BLUE)), "wrong color");
    }

    @Test
    @DisplayName("transitions: replaying the current state is accepted; the deletion delay may change")
    void replayingCurrentStateAcceptedDeletionDelayMay() throws Exception {
        CoordinationState cur = s(3, TRANSITIONING, WAITING_FOR_WATERMARK, 5, BLUE);
        assertTrue(Transitions.isReachable(cur, cur), "replay");
        CoordinationState a = s(1, TRANSITIONING, WATERMARK_SET, 5, BLUE);
        CoordinationState b = a.withDeletionDelayMs(5);
        assertTrue(Transitions.isReachable(a, b) && Transitions.isStep(a, b), "delay change");
    }

    @Test
    @DisplayName("transitions: an abort after W is set is refused")
    void abortAfterWSetRefused() throws Exception {
        CoordinationState back = s(1, RUNNING, WATERMARK_NOT_SET, 0, BLUE);
        assertTrue(!Transitions.isReachable(s(1, TRANSITIONING, WATERMARK_SET, 5, GREEN), back), "after set");
        assertTrue(Transitions.isReachable(s(1, TRANSITIONING, WAITING_FOR_WATERMARK, 5, GREEN), back), "before set");
    }

    @Test
    @DisplayName("transitions: the floor: set to W by RUNNING after a handover, carried by the next, cleared by a new RUNNING epoch")
    void floorSetWRUNNINGAfterHandoverCarried() throws Exception {
        CoordinationState clear = s(1, CLEAR_TO_TEARDOWN, WATERMARK_SET, 10, GREEN);
        CoordinationState done = s(1, RUNNING, WATERMARK_NOT_SET, 0, GREEN).withFloor(10L);
        assertTrue(Transitions.isStep(clear, done) && Transitions.isReachable(clear, done), "step 6: floor = W");
        assertTrue(!Transitions.isReachable(clear, done.withFloor(null)), "RUNNING without the floor after a handover");
        assertTrue(!Transitions.isReachable(clear, done.withFloor(9L)), "RUNNING with another floor");
        CoordinationState next = s(2, TRANSITIONING, WATERMARK_NOT_SET, 0, BLUE).withFloor(10L);
        assertTrue(Transitions.isStep(done, next), "step 9 carries the floor");
        assertTrue(!Transitions.isReachable(done, next.withFloor(null)), "step 9 may not drop the floor");
        assertTrue(!Transitions.isReachable(done, next.withFloor(11L)), "step 9 may not change the floor");
        CoordinationState cleared = s(2, RUNNING, WATERMARK_NOT_SET, 0, GREEN);
        assertTrue(Transitions.isStep(done, cleared), "step 10 clears the floor");
        ProtocolException e = assertThrows(ProtocolException.class, () -> Transitions.check(
                next.withFloor(10L), s(2, TRANSITIONING, WAITING_FOR_WATERMARK, 20, BLUE)));
        assertEquals(ProtocolException.Kind.IllegalTransition, e.kind(), "kind");
        assertTrue(e.getMessage().contains("floor"), e.getMessage());
        CoordinationState failing = s(2, FAILING, WATERMARK_NOT_SET, 0, BLUE).withFloor(10L);
        assertTrue(Transitions.isStep(failing, cleared.withFloor(10L)), "step 8 keeps the floor");
        assertTrue(!Transitions.isReachable(failing, cleared), "an abort does not clear the floor");
    }

    @Test
    @DisplayName("transitions: a floor in INITIALIZING or at/above W is Inconsistent, and both colors hold")
    void floorINITIALIZINGOrAboveWInconsistentBoth() throws Exception {
        for (CoordinationState bad : List.of(
                CoordinationState.initial(BLUE, 0).withFloor(5L),
                s(1, TRANSITIONING, WAITING_FOR_WATERMARK, 5, GREEN).withFloor(5L),
                s(1, CLEAR_TO_TEARDOWN, WATERMARK_SET, 5, GREEN).withFloor(6L))) {
            ProtocolException e = assertThrows(ProtocolException.class, bad::validate);
            assertEquals(ProtocolException.Kind.Inconsistent, e.kind(), "kind");
            assertEquals("floor", e.key(), "key");
            assertEquals(Rule.HOLD, Rule.forState(bad, GREEN), "green holds under " + bad);
            assertEquals(Rule.HOLD, Rule.forState(bad, BLUE), "blue holds under " + bad);
        }
        assertTrue(s(1, TRANSITIONING, WAITING_FOR_WATERMARK, 5, GREEN).withFloor(4L).isValid(), "F < W is valid");
    }

    @Test
    @DisplayName("transitions: invalid states are refused as Inconsistent")
    void invalidStatesAreRefusedInconsistent() throws Exception {
        CoordinationState bad = s(1, RUNNING, WATERMARK_SET, 5, GREEN);
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> Transitions.check(s(1, TRANSITIONING, WATERMARK_SET, 5, GREEN), bad));
        assertEquals(ProtocolException.Kind.Inconsistent, e.kind(), "kind");
        assertEquals(Rule.HOLD, Rule.forState(bad, GREEN), "invalid state holds");
    }
}
