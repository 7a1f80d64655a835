package io.bluegreen.gate;

import static io.bluegreen.gate.TestRunner.check;
import static io.bluegreen.gate.TestRunner.checkEq;
import static io.bluegreen.gate.TestRunner.expectThrows;
import static io.bluegreen.gate.TestRunner.test;

import java.time.Duration;
import java.util.Map;
import java.util.function.BooleanSupplier;

/** The sidecar long-poll client against an in-process fake sidecar. */
final class SidecarStateSourceTest {
    private SidecarStateSourceTest() {}

    static void await(BooleanSupplier cond, long timeoutMs, String what) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(5);
        }
    }

    static void register() {
        test("sidecar: first state, then within-epoch updates wake the long poll (W proposed -> set)", () -> {
            try (FakeSidecar sidecar = new FakeSidecar()) {
                Gate gate = new Gate(Color.BLUE, "sidecar-test");
                sidecar.publish(CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, 100, 0));
                SidecarStateSource src = new SidecarStateSource(sidecar.uri(), Duration.ofSeconds(20));
                try (StateSource.Subscription sub = src.subscribe("t", gate)) {
                    await(() -> gate.latest().state != null, 5_000, "first state");
                    checkEq(Decision.HOLD, gate.decide(101), "outgoing holds above proposed W");
                    long t0 = System.nanoTime();
                    sidecar.publish(CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 100, 0));
                    await(() -> gate.latest().state.watermarkStage() == WatermarkStage.WATERMARK_SET, 5_000, "W set");
                    long ms = (System.nanoTime() - t0) / 1_000_000;
                    check(ms < 2_000, "long poll woke after " + ms + " ms (wait is 20 s)");
                    checkEq(Decision.DROP, gate.decide(101), "outgoing drops above W once set");
                    checkEq(0L, gate.refusedUpdates(), "refused");
                }
            }
        });
        test("sidecar: 304 on an unchanged revision; errors are reported and retried", () -> {
            try (FakeSidecar sidecar = new FakeSidecar()) {
                Gate gate = new Gate(Color.BLUE, "sidecar-test");
                SidecarStateSource src = new SidecarStateSource(sidecar.uri(), Duration.ofMillis(100));
                try (StateSource.Subscription sub = src.subscribe("t", gate)) {
                    await(() -> gate.sourceErrors() >= 1, 5_000, "503 reported (no state yet)");
                    check(gate.lastProblem().contains("503"), gate.lastProblem());
                    checkEq(Decision.HOLD, gate.decide(0), "no state: hold");
                    sidecar.publish(CoordinationState.of(0, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0));
                    await(() -> gate.latest().state != null, 10_000, "state after retry");
                    int before = sidecar.requests.get();
                    Thread.sleep(450);
                    check(sidecar.requests.get() - before >= 2, "keeps polling (304s) " + (sidecar.requests.get() - before));
                    long errors = gate.sourceErrors();
                    checkEq(Decision.PASS, gate.decide(0), "active passes");
                    sidecar.failNext = 1;
                    await(() -> gate.sourceErrors() > errors, 5_000, "HTTP 500 reported");
                    check(gate.lastProblem().contains("500"), gate.lastProblem());
                    sidecar.publish(CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_NOT_SET, 0, 0));
                    await(() -> gate.latest().state.epoch() == 1, 10_000, "state after an HTTP 500");
                }
            }
        });
        test("sidecar: response bodies are checked", () -> {
            SidecarStateSource.Response r = SidecarStateSource.parseBody(
                    "{\"revision\":\"9\",\"epoch\":\"7\",\"configmap\":{\"stage\":\"RUNNING\",\"x\":\"y\"}}");
            checkEq("9", r.revision, "revision");
            checkEq(Map.of("stage", "RUNNING", "x", "y"), r.configmap, "configmap");
            for (String bad : new String[] {"[]", "{\"configmap\":{}}", "{\"revision\":\"1\"}",
                    "{\"revision\":\"1\",\"configmap\":{\"epoch\":7}}", "{\"revision\":1,\"configmap\":{}}"}) {
                expectThrows(IllegalArgumentException.class, () -> SidecarStateSource.parseBody(bad));
            }
        });
    }
}
