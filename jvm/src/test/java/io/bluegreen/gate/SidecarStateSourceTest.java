package io.bluegreen.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The sidecar long-poll client against an in-process fake sidecar. */
final class SidecarStateSourceTest {
    static void await(BooleanSupplier cond, long timeoutMs, String what) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(5);
        }
    }

    @Test
    @DisplayName("sidecar: first state, then within-epoch updates wake the long poll (W proposed -> set)")
    void firstStateThenWithinEpochUpdatesWake() throws Exception {
        try (FakeSidecar sidecar = new FakeSidecar()) {
            Gate gate = new Gate(Color.BLUE, "sidecar-test");
            sidecar.publish(CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, 100, 0));
            SidecarStateSource src = new SidecarStateSource(sidecar.uri(), Duration.ofSeconds(20));
            try (StateSource.Subscription sub = src.subscribe("t", gate)) {
                await(() -> gate.latest().state != null, 5_000, "first state");
                assertEquals(Decision.HOLD, gate.decide(101), "outgoing holds above proposed W");
                long t0 = System.nanoTime();
                sidecar.publish(CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, 100, 0));
                await(() -> gate.latest().state.watermarkStage() == WatermarkStage.WATERMARK_SET, 5_000, "W set");
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(ms < 2_000, "long poll woke after " + ms + " ms (wait is 20 s)");
                assertEquals(Decision.DROP, gate.decide(101), "outgoing drops above W once set");
                assertEquals(0L, gate.refusedUpdates(), "refused");
            }
        }
    }

    @Test
    @DisplayName("sidecar: 304 on an unchanged revision; errors are reported and retried")
    void notModifiedAndErrorsRetried() throws Exception {
        try (FakeSidecar sidecar = new FakeSidecar()) {
            Gate gate = new Gate(Color.BLUE, "sidecar-test");
            SidecarStateSource src = new SidecarStateSource(sidecar.uri(), Duration.ofMillis(100));
            try (StateSource.Subscription sub = src.subscribe("t", gate)) {
                await(() -> gate.sourceErrors() >= 1, 5_000, "503 reported (no state yet)");
                assertTrue(gate.lastProblem().contains("503"), gate.lastProblem());
                assertEquals(Decision.HOLD, gate.decide(0), "no state: hold");
                sidecar.publish(CoordinationState.of(0, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0));
                await(() -> gate.latest().state != null, 10_000, "state after retry");
                int before = sidecar.requests.get();
                Thread.sleep(450);
                assertTrue(sidecar.requests.get() - before >= 2, "keeps polling (304s) " + (sidecar.requests.get() - before));
                long errors = gate.sourceErrors();
                assertEquals(Decision.PASS, gate.decide(0), "active passes");
                sidecar.failNext = 1;
                await(() -> gate.sourceErrors() > errors, 5_000, "HTTP 500 reported");
                assertTrue(gate.lastProblem().contains("500"), gate.lastProblem());
                sidecar.publish(CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_NOT_SET, 0, 0));
                await(() -> gate.latest().state.epoch() == 1, 10_000, "state after an HTTP 500");
            }
        }
    }

    @Test
    @DisplayName("sidecar: a lasting problem is reported while the sidecar fails and cleared once it answers again, even with 304")
    void currentProblemLastsWhileTheSidecarFails() throws Exception {
        try (FakeSidecar sidecar = new FakeSidecar()) {
            Gate gate = new Gate(Color.BLUE, "sidecar-test");
            SidecarStateSource src = new SidecarStateSource(sidecar.uri(), Duration.ofMillis(100));
            try (StateSource.Subscription sub = src.subscribe("t", gate)) {
                await(() -> gate.currentProblem() != null, 5_000, "503 reported as a lasting problem");
                assertTrue(gate.currentProblem().startsWith("state source: sidecar ") && gate.currentProblem().contains("503"),
                        gate.currentProblem());
                GateReport none = GateReport.parse(GateReport.line(null, Long.MIN_VALUE, Long.MIN_VALUE, false, null, gate.currentProblem()));
                assertEquals(gate.currentProblem(), none.problem, "the report line carries it");
                sidecar.publish(CoordinationState.of(0, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0));
                await(() -> gate.latest().state != null, 10_000, "state after retry");
                assertNull(gate.currentProblem(), "a delivered state ends it");
                sidecar.failNext = 1;
                await(() -> gate.currentProblem() != null, 5_000, "HTTP 500 reported");
                await(() -> gate.currentProblem() == null, 5_000, "the next 304 ends it");
                assertTrue(gate.lastProblem().contains("500"), "lastProblem keeps the history: " + gate.lastProblem());
            }
        }
    }

    @Test
    @DisplayName("gate: a refused update is a lasting problem until a state is applied; no problem, no key")
    void refusedUpdateLastsUntilAStateIsApplied() {
        Gate gate = new Gate(Color.BLUE, "refused");
        assertNull(gate.currentProblem(), "a new gate has none");
        gate.onConfigMap(Map.of("epoch", "x"));
        assertTrue(gate.currentProblem().startsWith("refused update: "), gate.currentProblem());
        gate.onSourceOk();
        assertTrue(gate.currentProblem().startsWith("refused update: "), "a 304 does not end a refusal");
        gate.onConfigMap(CoordinationState.of(0, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0).toData());
        assertNull(gate.currentProblem(), "an applied state ends it");
        String line = GateReport.line(gate.latest().state, 5, 4, false, null, gate.currentProblem());
        assertFalse(line.contains("problem="), line);
    }

    @Test
    @DisplayName("report: a problem is one percent-encoded token after idle, cut at 300 characters")
    void problemIsOneTokenAfterIdle() {
        String line = GateReport.line(null, Long.MIN_VALUE, Long.MIN_VALUE, false, null, "state source: 100% \u00e9\ttab");
        assertTrue(line.endsWith(" idle=false problem=state%20source:%20100%25%20%C3%A9%09tab"), line);
        assertEquals("state source: 100% \u00e9\ttab", GateReport.parse(line).problem);
        String longOne = "x".repeat(1000);
        GateReport r = GateReport.parse(GateReport.line(null, 0, 0, false, null, longOne));
        assertEquals(GateReport.PROBLEM_MAX_CHARS, r.problem.length(), "cut");
        assertTrue(r.problem.endsWith("..."), r.problem);
        GateReport.ParseException e = assertThrows(GateReport.ParseException.class,
                () -> GateReport.parse(GateReport.line(null, 0, 0, false, null, null) + " problem=%2"));
        assertEquals("problem", e.key());
    }

    @Test
    @DisplayName("sidecar: found through BLUEGREEN_SIDECAR_URL, else the default port on localhost")
    void foundThroughTheEnvironment() throws Exception {
        try (FakeSidecar sidecar = new FakeSidecar()) {
            sidecar.publish(CoordinationState.of(0, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0));
            Gate gate = new Gate(Color.BLUE, "env-test");
            try (StateSource.Subscription sub = SidecarStateSource.fromUrl(sidecar.uri().toString()).subscribe("t", gate)) {
                await(() -> gate.latest().state != null, 5_000, "state from the sidecar the URL names");
            }
        }
        assertEquals(SidecarStateSource.fromUrl(SidecarStateSource.DEFAULT_URL).toString(), SidecarStateSource.fromUrl(null).toString());
        assertEquals(SidecarStateSource.fromUrl(" ").toString(), SidecarStateSource.fromUrl(null).toString());
        assertEquals("BLUEGREEN_SIDECAR_URL", SidecarStateSource.URL_ENV);
    }

    @Test
    @DisplayName("sidecar: response bodies are checked")
    void responseBodiesAreChecked() throws Exception {
        SidecarStateSource.Response r = SidecarStateSource.parseBody(
                "{\"revision\":\"9\",\"epoch\":\"7\",\"configmap\":{\"stage\":\"RUNNING\",\"x\":\"y\"}}");
        assertEquals("9", r.revision, "revision");
        assertEquals(Map.of("stage", "RUNNING", "x", "y"), r.configmap, "configmap");
        for (String bad : new String[] {"[]", "{\"configmap\":{}}", "{\"revision\":\"1\"}",
                "{\"revision\":\"1\",\"configmap\":{\"epoch\":7}}", "{\"revision\":1,\"configmap\":{}}"}) {
            assertThrows(IllegalArgumentException.class, () -> SidecarStateSource.parseBody(bad));
        }
    }
}
