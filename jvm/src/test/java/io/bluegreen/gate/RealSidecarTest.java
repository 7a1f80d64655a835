package io.bluegreen.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * {@link SidecarStateSource} against the real {@code bluegreen-sidecar} binary, which watches a
 * ConfigMap on the real {@code bluegreen-local-apiserver} binary (both built by cargo; paths from
 * {@code -Dbluegreen.sidecar.binary} and {@code -Dbluegreen.apiserver.binary}, which jvm/pom.xml
 * sets to target/debug/). The ConfigMap is created and patched over the Kubernetes REST API.
 */
final class RealSidecarTest {
    @Test
    @DisplayName("real sidecar: ConfigMap created and patched on the API server reaches the Java gate through the long-poll")
    void configmapCreatedPatchedAPIServerReachesJava() throws Exception {
        Path dir = Files.createTempDirectory("bluegreen-sidecar-test");
        Path kubeconfig = dir.resolve("kubeconfig");
        Process apiserver = start(new ProcessBuilder(binary("bluegreen.apiserver.binary"), "--port", "0", "--kubeconfig", kubeconfig.toString()), dir.resolve("apiserver.log"));
        Process sidecar = null;
        try {
            String api = awaitLine(dir.resolve("apiserver.log"), "listening on ", apiserver).trim();
            int port;
            try (ServerSocket free = new ServerSocket(0)) {
                port = free.getLocalPort();
            }
            ProcessBuilder pb = new ProcessBuilder(binary("bluegreen.sidecar.binary"));
            pb.environment().put("KUBECONFIG", kubeconfig.toString());
            pb.environment().put("BLUEGREEN_CONFIGMAP", "orders-bluegreen");
            pb.environment().put("BLUEGREEN_NAMESPACE", "default");
            pb.environment().put("BLUEGREEN_LISTEN", "127.0.0.1:" + port);
            sidecar = start(pb, dir.resolve("sidecar.log"));
            HttpClient http = HttpClient.newHttpClient();
            Gate gate = new Gate(Color.BLUE, "real-sidecar-test");
            SidecarStateSource source = new SidecarStateSource(URI.create("http://127.0.0.1:" + port), Duration.ofSeconds(20));
            try (StateSource.Subscription sub = source.subscribe("t", gate)) {
                Map<String, String> running = CoordinationState.of(1, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0).toData();
                send(http, "POST", api + "/api/v1/namespaces/default/configmaps", "application/json",
                        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"orders-bluegreen\"},\"data\":" + Json.writeStringMap(running) + "}");
                SidecarStateSourceTest.await(() -> gate.latest().state != null, 15_000, "first state through the sidecar");
                assertEquals(Decision.PASS, gate.decide(5), "active passes");
                String patchUri = api + "/api/v1/namespaces/default/configmaps/orders-bluegreen";
                send(http, "PATCH", patchUri, "application/merge-patch+json",
                        "{\"data\":{\"epoch\":\"2\",\"stage\":\"TRANSITIONING\",\"active-deployment-type\":\"GREEN\"}}");
                SidecarStateSourceTest.await(() -> gate.latest().state.epoch() == 2, 10_000, "transition");
                long t0 = System.nanoTime();
                send(http, "PATCH", patchUri, "application/merge-patch+json",
                        "{\"data\":{\"watermark-stage\":\"WAITING_FOR_WATERMARK\",\"watermark-toggle-value\":\"100\"}}");
                SidecarStateSourceTest.await(() -> gate.latest().state.watermarkStage() == WatermarkStage.WAITING_FOR_WATERMARK, 10_000, "W proposed");
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(ms < 5_000, "W proposed reached the gate after " + ms + " ms (long-poll wait 20 s)");
                assertEquals(Decision.PASS, gate.decide(100), "outgoing passes W");
                assertEquals(Decision.HOLD, gate.decide(101), "outgoing holds above a proposed W");
                // An invalid edit is refused by the sidecar's gate: the Java gate never sees it.
                send(http, "PATCH", patchUri, "application/merge-patch+json", "{\"data\":{\"epoch\":\"two\"}}");
                HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
                SidecarStateSourceTest.await(() -> scrape(http, port).contains("bluegreen_gate_source_updates_rejected_total{kind=\"InvalidValue\"} 1"), 10_000, "the invalid edit refused");
                assertEquals(200, metrics.statusCode(), "metrics");
                assertEquals(0L, gate.refusedUpdates(), "the Java gate saw only accepted data");
                assertEquals(2L, gate.latest().state.epoch(), "last good state kept");
            }
        } finally {
            if (sidecar != null) {
                sidecar.destroy();
                assertTrue(sidecar.waitFor(10, TimeUnit.SECONDS), "the sidecar stops on SIGTERM");
            }
            apiserver.destroy();
            apiserver.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static String binary(String property) {
        String path = System.getProperty(property);
        if (path == null || !new File(path).canExecute()) {
            throw new IllegalStateException("-D" + property + " must name the cargo-built binary: build it with"
                    + " `cargo build -p bluegreen-sidecar -p bluegreen-local-apiserver --bins` (jvm/pom.xml's default is under"
                    + " target/debug/); it is: " + path);
        }
        return path;
    }

    private static Process start(ProcessBuilder pb, Path log) throws Exception {
        pb.redirectErrorStream(true);
        pb.redirectOutput(log.toFile());
        return pb.start();
    }

    /** Waits (bounded) for a line of {@code log} containing {@code marker}; returns what follows it. */
    private static String awaitLine(Path log, String marker, Process process) throws Exception {
        long deadline = System.currentTimeMillis() + 15_000;
        while (System.currentTimeMillis() < deadline) {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(Files.newInputStream(log), StandardCharsets.UTF_8))) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                    int at = line.indexOf(marker);
                    if (at >= 0) {
                        return line.substring(at + marker.length());
                    }
                }
            }
            if (!process.isAlive()) {
                throw new IllegalStateException("process exited: " + Files.readString(log));
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no '" + marker + "' in " + log + ": " + Files.readString(log));
    }

    private static void send(HttpClient http, String method, String uri, String contentType, String body) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(uri))
                .header("Content-Type", contentType)
                .method(method, HttpRequest.BodyPublishers.ofString(body))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertTrue(r.statusCode() / 100 == 2, method + " " + uri + " answered " + r.statusCode() + ": " + r.body());
    }

    private static String scrape(HttpClient http, int port) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
        } catch (Exception e) {
            return "";
        }
    }
}
