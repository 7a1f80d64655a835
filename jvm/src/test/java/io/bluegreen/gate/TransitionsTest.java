package io.bluegreen.gate;

import static io.bluegreen.gate.Color.BLUE;
import static io.bluegreen.gate.Color.GREEN;
import static io.bluegreen.gate.Stage.CLEAR_TO_TEARDOWN;
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
    static final long[] WS = {Long.MIN_VALUE, -5, 0, 7};

    static List<CoordinationState> universe() {
        List<CoordinationState> all = new ArrayList<>();
        for (long epoch : EPOCHS) {
            for (Color active : Color.values()) {
                for (Stage stage : Stage.values()) {
                    for (WatermarkStage ws : WatermarkStage.values()) {
                        long[] ws2 = ws == WATERMARK_NOT_SET ? new long[] {0} : WS;
                        for (long w : ws2) {
                            CoordinationState s = CoordinationState.of(epoch, active, stage, ws, w, 0);
                            if (s.isValid()) {
                                all.add(s);
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
            List<CoordinationState> states = universe();
            int n = states.size();
            check(n > 150, "universe too small: " + n);
            long accepted = 0;
            for (int i = 0; i < n; i++) {
                BitSet seen = new BitSet(n);
                seen.set(i);
                ArrayDeque<Integer> queue = new ArrayDeque<>(List.of(i));
                while (!queue.isEmpty()) {
                    int a = queue.poll();
                    for (int j = 0; j < n; j++) {
                        if (!seen.get(j) && Transitions.isStep(states.get(a), states.get(j))) {
                            seen.set(j);
                            queue.add(j);
                        }
                    }
                }
                for (int j = 0; j < n; j++) {
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
            check(accepted > 1000 && accepted < (long) n * n / 2, "oracle not vacuous: " + accepted);
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
        test("transitions: invalid states are refused as Inconsistent", () -> {
            CoordinationState bad = s(1, RUNNING, WATERMARK_SET, 5, GREEN);
            ProtocolException e = expectThrows(ProtocolException.class,
                    () -> Transitions.check(s(1, TRANSITIONING, WATERMARK_SET, 5, GREEN), bad));
            checkEq(ProtocolException.Kind.Inconsistent, e.kind(), "kind");
            checkEq(Rule.HOLD, Rule.forState(bad, GREEN), "invalid state holds");
        });
    }
}
