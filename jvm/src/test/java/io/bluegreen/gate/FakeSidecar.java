package io.bluegreen.gate;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An in-process stand-in for the bluegreen sidecar that implements the long-poll contract of
 * docs/jvm.md ({@code GET /v1/state?since=REVISION&wait=30s}); a test plays the ConfigMap watch by
 * calling {@link #publish}. The hook for running the handover job against the real sidecar later:
 * point {@link SidecarStateSource} at it instead.
 */
final class FakeSidecar implements AutoCloseable {
    private final HttpServer server;
    private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "fake-sidecar");
        t.setDaemon(true);
        return t;
    });
    private long revision;
    private Map<String, String> data;
    final AtomicInteger requests = new AtomicInteger();
    volatile int failNext; // answer the next N requests with HTTP 500

    FakeSidecar() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/v1/state", this::handle);
        server.setExecutor(pool);
        server.start();
    }

    URI uri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    synchronized void publish(CoordinationState s) {
        publishData(s.toData());
    }

    synchronized void publishData(Map<String, String> d) {
        data = new TreeMap<>(d);
        revision++;
        notifyAll();
    }

    private void handle(HttpExchange ex) throws IOException {
        requests.incrementAndGet();
        try {
            if (!ex.getRequestMethod().equals("GET")) {
                reply(ex, 405, "{\"error\":\"GET only\"}");
                return;
            }
            if (failNext > 0) {
                failNext--;
                reply(ex, 500, "{\"error\":\"injected\"}");
                return;
            }
            Map<String, String> q = new HashMap<>();
            String raw = ex.getRequestURI().getRawQuery();
            if (raw != null) {
                for (String kv : raw.split("&")) {
                    int i = kv.indexOf('=');
                    q.put(URLDecoder.decode(kv.substring(0, i), StandardCharsets.UTF_8),
                            URLDecoder.decode(kv.substring(i + 1), StandardCharsets.UTF_8));
                }
            }
            long waitMs = parseWait(q.getOrDefault("wait", "30s"));
            String since = q.get("since");
            String body;
            synchronized (this) {
                long deadline = System.currentTimeMillis() + waitMs;
                while (data != null && since != null && since.equals(Long.toString(revision))) {
                    long left = deadline - System.currentTimeMillis();
                    if (left <= 0) {
                        break;
                    }
                    try {
                        wait(left);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
                if (data == null) {
                    body = null;
                } else if (since != null && since.equals(Long.toString(revision))) {
                    body = "";
                } else {
                    StringBuilder b = new StringBuilder("{\"revision\":\"").append(revision).append("\",\"epoch\":");
                    Json.writeString(b, data.getOrDefault("epoch", ""));
                    b.append(",\"configmap\":").append(Json.writeStringMap(data)).append('}');
                    body = b.toString();
                }
            }
            if (body == null) {
                reply(ex, 503, "{\"error\":\"no state yet\"}");
            } else if (body.isEmpty()) {
                ex.sendResponseHeaders(304, -1);
                ex.close();
            } else {
                reply(ex, 200, body);
            }
        } catch (RuntimeException e) {
            reply(ex, 400, "{\"error\":\"" + e.getMessage() + "\"}");
        }
    }

    static long parseWait(String w) {
        if (w.endsWith("ms")) {
            return Long.parseLong(w.substring(0, w.length() - 2));
        }
        if (w.endsWith("s")) {
            return Long.parseLong(w.substring(0, w.length() - 1)) * 1000;
        }
        throw new IllegalArgumentException("wait must be like 30s or 500ms: " + w);
    }

    private static void reply(HttpExchange ex, int code, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(code, b.length);
        try (OutputStream o = ex.getResponseBody()) {
            o.write(b);
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            notifyAll();
        }
        server.stop(0);
        pool.shutdownNow();
    }
}
