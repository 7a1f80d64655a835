package io.bluegreen.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The JNI shim loaded into this JVM (the {@code .so} built by cargo, path from
 * {@code -Dbluegreen.gate.jni.library}, which jvm/pom.xml sets to target/debug/libbluegreen_gate_jni.so). The native state is fed with
 * the test-only {@code offer} entry (a manual watch: no Kubernetes API); the ConfigMap watch itself
 * is covered by the Rust tests against the local API server.
 */
final class JniStateSourceTest {
    /** A missing shim fails each test here, naming the command that builds it (no silent skip). */
    @BeforeEach
    void shimBuilt() {
        String path = System.getProperty(JniNative.LIBRARY_PROPERTY);
        assertTrue(path != null && new File(path).isFile(), "-D" + JniNative.LIBRARY_PROPERTY
                + " must name the JNI shim: build it with `cargo build -p bluegreen-gate-jni` (jvm/pom.xml's default is"
                + " target/debug/libbluegreen_gate_jni.so); it is: " + path);
    }

    @Test
    @DisplayName("jni: the native state feeds a Java gate and wakes it on every accepted change")
    void nativeStateFeedsJavaGateWakesEvery() throws Exception {
        String name = "jni-test-source";
        JniStateSource source = JniStateSource.manual(name);
        Gate gate = new Gate(Color.BLUE, "jni-test");
        try (StateSource.Subscription sub = source.subscribe("t", gate)) {
            TreeMap<String, String> running = new TreeMap<>(CoordinationState.of(1, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0).toData());
            running.put("is-first-deployment", "true");
            assertTrue(JniStateSource.offer(name, running), "running accepted");
            SidecarStateSourceTest.await(() -> gate.latest().state != null, 5_000, "first state");
            assertEquals(Decision.PASS, gate.decide(5), "active passes");
            assertTrue(JniStateSource.offer(name, CoordinationState.of(2, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, 100, 0).toData()), "proposal accepted");
            long t0 = System.nanoTime();
            assertTrue(JniStateSource.offer(name, CoordinationState.of(2, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 100, 0).toData()), "W set accepted");
            SidecarStateSourceTest.await(() -> gate.latest().state.watermarkStage() == WatermarkStage.WATERMARK_SET, 5_000, "W set");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 2_000, "woke after " + ms + " ms (native wait is 30 s)");
            assertEquals(Decision.PASS, gate.decide(100), "outgoing passes W");
            assertEquals(Decision.DROP, gate.decide(101), "outgoing drops above W");
            // The Rust gate refuses an older epoch: nothing reaches the Java gate.
            assertTrue(!JniStateSource.offer(name, CoordinationState.of(1, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0).toData()), "stale epoch refused natively");
            assertEquals(0L, gate.refusedUpdates(), "the Java gate saw only accepted data");
            assertEquals(0L, gate.sourceErrors(), "no source errors");
        }
    }

    @Test
    @DisplayName("jni: decide and decideBatch through the native gate")
    void decideDecideBatchThroughNativeGate() throws Exception {
        String name = "jni-test-gate";
        try (JniGate blue = JniGate.open(JniStateSource.manual(name), Color.BLUE);
                JniGate green = JniGate.open(JniStateSource.manual(name), Color.GREEN)) {
            assertEquals(Decision.HOLD, blue.decide(0), "no state: hold");
            assertTrue(JniStateSource.offer(name, CoordinationState.of(3, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 1_000, 0).toData()), "accepted");
            assertEquals(Decision.PASS, blue.decide(1_000), "outgoing owns W");
            assertEquals(Decision.DROP, green.decide(1_000), "incoming drops W");
            long[] times = {Long.MIN_VALUE, 999, 1_000, 1_001, Long.MAX_VALUE};
            byte[] out = new byte[times.length];
            assertEquals(5, green.decideBatch(times, times.length, out), "decided");
            assertEquals("[1, 1, 1, 0, 0]", java.util.Arrays.toString(out), "incoming: DROP <= W, PASS > W");
            assertEquals(2, blue.decideBatch(times, 2, out), "count honoured");
            assertEquals(5, blue.decideBatch(times, 99, out), "clamped to the arrays");
            assertEquals(2, blue.decideBatch(times, 9, new byte[2]), "clamped to the shorter array");
        }
    }

    @Test
    @DisplayName("jni: native errors arrive as Java exceptions, closed handles are refused")
    void nativeErrorsArriveJavaExceptionsClosedHandles() throws Exception {
        JniNative.load();
        assertThrows(IllegalStateException.class, () -> JniNative.decide(0, 1));
        assertThrows(IllegalStateException.class, () -> JniNative.awaitState(-7, 0, 0));
        long handle = JniNative.openManual("jni-test-errors");
        try {
            assertThrows(IllegalArgumentException.class, () -> JniNative.offer(handle, "[1, 2]"));
            assertThrows(IllegalArgumentException.class, () -> JniNative.newGate(handle, "RED"));
            assertEquals(null, JniNative.awaitState(handle, 0, 10), "no data yet: null after the wait");
        } finally {
            JniNative.release(handle);
        }
        assertThrows(IllegalStateException.class, () -> JniNative.release(handle));
        JniGate gate = JniGate.open(JniStateSource.manual("jni-test-errors"), Color.BLUE);
        gate.close();
        gate.close();
        assertThrows(IllegalStateException.class, () -> gate.decide(1));
    }
}
