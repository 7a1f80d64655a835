package io.bluegreen.gate;

import static io.bluegreen.gate.Color.BLUE;
import static io.bluegreen.gate.Color.GREEN;
import static io.bluegreen.gate.Stage.CLEAR_TO_TEARDOWN;
import static io.bluegreen.gate.Stage.FAILING;
import static io.bluegreen.gate.Stage.RUNNING;
import static io.bluegreen.gate.Stage.TRANSITIONING;
import static io.bluegreen.gate.TestRunner.check;
import static io.bluegreen.gate.TestRunner.checkEq;
import static io.bluegreen.gate.TestRunner.expectThrows;
import static io.bluegreen.gate.TestRunner.test;
import static io.bluegreen.gate.WatermarkStage.WAITING_FOR_WATERMARK;
import static io.bluegreen.gate.WatermarkStage.WATERMARK_NOT_SET;
import static io.bluegreen.gate.WatermarkStage.WATERMARK_SET;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/** Mirrors protocol/tests/transitions.rs: check == reflexive-transitive closure of isStep, plus named cases. */
final class TransitionsTest {
    private TransitionsTest() {}

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

    static void register() {
        test("transitions: check accepts exactly the states reachable by legal steps (closure of isStep)", () -> {
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
            checkEq(small.size(), compared.size(), "compared states");
            check(compared.size() > 400, "universe too small: " + compared.size());
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
            check(accepted > 1000 && accepted < m * m / 2, "oracle not vacuous: " + accepted);
        });
        test("transitions: an older epoch is stale", () -> {
            ProtocolException e = expectThrows(ProtocolException.class, () -> Transitions.check(
                    s(4, RUNNING, WATERMARK_NOT_SET, 0, BLUE), s(3, CLEAR_TO_TEARDOWN, WATERMARK_SET, 10, BLUE)));
            checkEq(ProtocolException.Kind.StaleEpoch, e.kind(), "kind");
            checkEq("epoch", e.key(), "key");
            check(e.getMessage().contains("from 4 to 3"), e.getMessage());
        });
        test("transitions: W may not move once set", () -> {
            ProtocolException e = expectThrows(ProtocolException.class, () -> Transitions.check(
                    s(2, TRANSITIONING, WATERMARK_SET, 100, GREEN), s(2, TRANSITIONING, WATERMARK_SET, 101, GREEN)));
            checkEq(ProtocolException.Kind.IllegalTransition, e.kind(), "kind");
            check(e.getMessage().contains("may not change once set"), e.getMessage());
        });
        test("transitions: a proposed W may only rise", () -> {
            CoordinationState proposed = s(2, TRANSITIONING, WAITING_FOR_WATERMARK, 100, GREEN);
            check(Transitions.isReachable(proposed, s(2, TRANSITIONING, WAITING_FOR_WATERMARK, 150, GREEN)), "higher");
            check(!Transitions.isReachable(proposed, s(2, TRANSITIONING, WAITING_FOR_WATERMARK, 99, GREEN)), "lower");
            check(Transitions.isReachable(proposed, s(2, TRANSITIONING, WATERMARK_SET, 150, GREEN)), "set higher");
        });
        test("transitions: a gate that missed updates accepts the newer state", () -> {
            CoordinationState running = s(0, RUNNING, WATERMARK_NOT_SET, 0, BLUE);
            check(Transitions.isReachable(running, s(1, TRANSITIONING, WATERMARK_SET, 100, GREEN)), "next epoch set");
            check(!Transitions.isReachable(running, s(1, TRANSITIONING, WATERMARK_SET, 100, BLUE)), "wrong color");
        });
        test("transitions: replaying the current state is accepted; the deletion delay may change", () -> {
            CoordinationState cur = s(3, TRANSITIONING, WAITING_FOR_WATERMARK, 5, BLUE);
            check(Transitions.isReachable(cur, cur), "replay");
            CoordinationState a = s(1, TRANSITIONING, WATERMARK_SET, 5, BLUE);
            CoordinationState b = a.withDeletionDelayMs(5);
            check(Transitions.isReachable(a, b) && Transitions.isStep(a, b), "delay change");
        });
        test("transitions: an abort after W is set is refused", () -> {
            CoordinationState back = s(1, RUNNING, WATERMARK_NOT_SET, 0, BLUE);
            check(!Transitions.isReachable(s(1, TRANSITIONING, WATERMARK_SET, 5, GREEN), back), "after set");
            check(Transitions.isReachable(s(1, TRANSITIONING, WAITING_FOR_WATERMARK, 5, GREEN), back), "before set");
        });
        test("transitions: the floor: set to W by RUNNING after a handover, carried by the next, cleared by a new RUNNING epoch", () -> {
            CoordinationState clear = s(1, CLEAR_TO_TEARDOWN, WATERMARK_SET, 10, GREEN);
            CoordinationState done = s(1, RUNNING, WATERMARK_NOT_SET, 0, GREEN).withFloor(10L);
            check(Transitions.isStep(clear, done) && Transitions.isReachable(clear, done), "step 6: floor = W");
            check(!Transitions.isReachable(clear, done.withFloor(null)), "RUNNING without the floor after a handover");
            check(!Transitions.isReachable(clear, done.withFloor(9L)), "RUNNING with another floor");
            CoordinationState next = s(2, TRANSITIONING, WATERMARK_NOT_SET, 0, BLUE).withFloor(10L);
            check(Transitions.isStep(done, next), "step 9 carries the floor");
            check(!Transitions.isReachable(done, next.withFloor(null)), "step 9 may not drop the floor");
            check(!Transitions.isReachable(done, next.withFloor(11L)), "step 9 may not change the floor");
            CoordinationState cleared = s(2, RUNNING, WATERMARK_NOT_SET, 0, GREEN);
            check(Transitions.isStep(done, cleared), "step 10 clears the floor");
            ProtocolException e = expectThrows(ProtocolException.class, () -> Transitions.check(
                    next.withFloor(10L), s(2, TRANSITIONING, WAITING_FOR_WATERMARK, 20, BLUE)));
            checkEq(ProtocolException.Kind.IllegalTransition, e.kind(), "kind");
            check(e.getMessage().contains("floor"), e.getMessage());
            CoordinationState failing = s(2, FAILING, WATERMARK_NOT_SET, 0, BLUE).withFloor(10L);
            check(Transitions.isStep(failing, cleared.withFloor(10L)), "step 8 keeps the floor");
            check(!Transitions.isReachable(failing, cleared), "an abort does not clear the floor");
        });
        test("transitions: a floor in INITIALIZING or at/above W is Inconsistent, and both colors hold", () -> {
            for (CoordinationState bad : List.of(
                    CoordinationState.initial(BLUE, 0).withFloor(5L),
                    s(1, TRANSITIONING, WAITING_FOR_WATERMARK, 5, GREEN).withFloor(5L),
                    s(1, CLEAR_TO_TEARDOWN, WATERMARK_SET, 5, GREEN).withFloor(6L))) {
                ProtocolException e = expectThrows(ProtocolException.class, bad::validate);
                checkEq(ProtocolException.Kind.Inconsistent, e.kind(), "kind");
                checkEq("floor", e.key(), "key");
                checkEq(Rule.HOLD, Rule.forState(bad, GREEN), "green holds under " + bad);
                checkEq(Rule.HOLD, Rule.forState(bad, BLUE), "blue holds under " + bad);
            }
            check(s(1, TRANSITIONING, WAITING_FOR_WATERMARK, 5, GREEN).withFloor(4L).isValid(), "F < W is valid");
        });
        test("transitions: invalid states are refused as Inconsistent", () -> {
            CoordinationState bad = s(1, RUNNING, WATERMARK_SET, 5, GREEN);
            ProtocolException e = expectThrows(ProtocolException.class,
                    () -> Transitions.check(s(1, TRANSITIONING, WATERMARK_SET, 5, GREEN), bad));
            checkEq(ProtocolException.Kind.Inconsistent, e.kind(), "kind");
            checkEq(Rule.HOLD, Rule.forState(bad, GREEN), "invalid state holds");
        });
    }
}
