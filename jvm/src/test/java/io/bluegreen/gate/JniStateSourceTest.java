package io.bluegreen.gate;

import static io.bluegreen.gate.TestRunner.check;
import static io.bluegreen.gate.TestRunner.checkEq;
import static io.bluegreen.gate.TestRunner.expectThrows;
import static io.bluegreen.gate.TestRunner.test;

import java.util.TreeMap;

/**
 * The JNI shim loaded into this JVM (the {@code .so} built by cargo, path from
 * {@code -Dbluegreen.gate.jni.library}, set by scripts/java-test.sh). The native state is fed with
 * the test-only {@code offer} entry (a manual watch: no Kubernetes API); the ConfigMap watch itself
 * is covered by the Rust tests against the local API server.
 */
final class JniStateSourceTest {
    private JniStateSourceTest() {}

    static void register() {
        test("jni: the native state feeds a Java gate and wakes it on every accepted change", () -> {
            String name = "jni-test-source";
            JniStateSource source = JniStateSource.manual(name);
            Gate gate = new Gate(Color.BLUE, "jni-test");
            try (StateSource.Subscription sub = source.subscribe("t", gate)) {
                TreeMap<String, String> running = new TreeMap<>(CoordinationState.of(1, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0).toData());
                running.put("is-first-deployment", "true");
                check(JniStateSource.offer(name, running), "running accepted");
                SidecarStateSourceTest.await(() -> gate.latest().state != null, 5_000, "first state");
                checkEq(Decision.PASS, gate.decide(5), "active passes");
                check(JniStateSource.offer(name, CoordinationState.of(2, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, 100, 0).toData()), "proposal accepted");
                long t0 = System.nanoTime();
                check(JniStateSource.offer(name, CoordinationState.of(2, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 100, 0).toData()), "W set accepted");
                SidecarStateSourceTest.await(() -> gate.latest().state.watermarkStage() == WatermarkStage.WATERMARK_SET, 5_000, "W set");
                long ms = (System.nanoTime() - t0) / 1_000_000;
                check(ms < 2_000, "woke after " + ms + " ms (native wait is 30 s)");
                checkEq(Decision.PASS, gate.decide(100), "outgoing passes W");
                checkEq(Decision.DROP, gate.decide(101), "outgoing drops above W");
                // The Rust gate refuses an older epoch: nothing reaches the Java gate.
                check(!JniStateSource.offer(name, CoordinationState.of(1, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0).toData()), "stale epoch refused natively");
                checkEq(0L, gate.refusedUpdates(), "the Java gate saw only accepted data");
                checkEq(0L, gate.sourceErrors(), "no source errors");
            }
        });
        test("jni: decide and decideBatch through the native gate", () -> {
            String name = "jni-test-gate";
            try (JniGate blue = JniGate.open(JniStateSource.manual(name), Color.BLUE);
                    JniGate green = JniGate.open(JniStateSource.manual(name), Color.GREEN)) {
                checkEq(Decision.HOLD, blue.decide(0), "no state: hold");
                check(JniStateSource.offer(name, CoordinationState.of(3, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 1_000, 0).toData()), "accepted");
                checkEq(Decision.PASS, blue.decide(1_000), "outgoing owns W");
                checkEq(Decision.DROP, green.decide(1_000), "incoming drops W");
                long[] times = {Long.MIN_VALUE, 999, 1_000, 1_001, Long.MAX_VALUE};
                byte[] out = new byte[times.length];
                checkEq(5, green.decideBatch(times, times.length, out), "decided");
                checkEq("[1, 1, 1, 0, 0]", java.util.Arrays.toString(out), "incoming: DROP <= W, PASS > W");
                checkEq(2, blue.decideBatch(times, 2, out), "count honoured");
                checkEq(5, blue.decideBatch(times, 99, out), "clamped to the arrays");
                checkEq(2, blue.decideBatch(times, 9, new byte[2]), "clamped to the shorter array");
            }
        });
        test("jni: native errors arrive as Java exceptions, closed handles are refused", () -> {
            JniNative.load();
            expectThrows(IllegalStateException.class, () -> JniNative.decide(0, 1));
            expectThrows(IllegalStateException.class, () -> JniNative.awaitState(-7, 0, 0));
            long handle = JniNative.openManual("jni-test-errors");
            try {
                expectThrows(IllegalArgumentException.class, () -> JniNative.offer(handle, "[1, 2]"));
                expectThrows(IllegalArgumentException.class, () -> JniNative.newGate(handle, "RED"));
                checkEq(null, JniNative.awaitState(handle, 0, 10), "no data yet: null after the wait");
            } finally {
                JniNative.release(handle);
            }
            expectThrows(IllegalStateException.class, () -> JniNative.release(handle));
            JniGate gate = JniGate.open(JniStateSource.manual("jni-test-errors"), Color.BLUE);
            gate.close();
            gate.close();
            expectThrows(IllegalStateException.class, () -> gate.decide(1));
        });
    }
}
