package io.bluegreen.gate;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Long-polls the bluegreen sidecar (which watches the coordination ConfigMap) over HTTP with
 * {@code java.net.http}. The contract (see {@code docs/jvm.md}):
 *
 * <pre>
 * GET {base}/v1/state?wait=30s                 first request: answer at once with the current state
 * GET {base}/v1/state?since=REVISION&amp;wait=30s answer as soon as the revision differs from REVISION,
 *                                              or after `wait` with 304 Not Modified
 * 200 {"revision": "42", "epoch": "7", "configmap": {"active-deployment-type": "BLUE", ...}}
 * 304 (no body)   nothing changed within `wait`
 * 503             the sidecar has no state yet (retry)
 * </pre>
 *
 * {@code configmap} is the ConfigMap's raw {@code data}; the gate parses it with its own strict
 * parser. {@code revision} is opaque (e.g. the ConfigMap's resourceVersion) and changes with every
 * change of the data, including changes within an epoch (W proposed, raised, set). Errors are
 * reported to the gate (which keeps its last good state) and retried with backoff (100 ms doubling
 * to 5 s). One polling daemon thread per subscribed gate instance.
 */
public final class SidecarStateSource implements StateSource {
    private static final long serialVersionUID = 1L;

    private final String base;
    private final long waitMillis;

    /** The environment variable naming the sidecar's base URL (set by the controller and the local runners). */
    public static final String URL_ENV = "BLUEGREEN_SIDECAR_URL";
    /** The sidecar's URL when {@link #URL_ENV} is not set: its default port on localhost. */
    public static final String DEFAULT_URL = "http://127.0.0.1:8787";

    /**
     * The sidecar named by the TaskManager's environment variable {@link #URL_ENV} (which the
     * controller's sidecar injection and the local runners set), else {@link #DEFAULT_URL}; long
     * polls of 30 s. The one way to find the sidecar that works on a cluster and locally.
     */
    public static SidecarStateSource fromEnvironment() {
        return fromUrl(System.getenv(URL_ENV));
    }

    /** The sidecar at {@code url}, or at {@link #DEFAULT_URL} when it is null or blank; long polls of 30 s. */
    static SidecarStateSource fromUrl(String url) {
        String base = url == null || url.isBlank() ? DEFAULT_URL : url.trim();
        return new SidecarStateSource(URI.create(base), Duration.ofSeconds(30));
    }

    /** The sidecar on {@code 127.0.0.1:port}, long polls of 30 s. */
    public SidecarStateSource(int port) {
        this(URI.create("http://127.0.0.1:" + port), Duration.ofSeconds(30));
    }

    /** The sidecar at {@code base} (e.g. {@code http://127.0.0.1:8787}) with long polls of {@code wait}. */
    public SidecarStateSource(URI base, Duration wait) {
        String b = Objects.requireNonNull(base, "base").toString();
        this.base = b.endsWith("/") ? b.substring(0, b.length() - 1) : b;
        this.waitMillis = Math.max(1, wait.toMillis());
    }

    @Override
    public Subscription subscribe(String gateName, StateListener listener) {
        Poller p = new Poller(listener);
        Thread t = new Thread(p, "bluegreen-sidecar-poll " + gateName);
        t.setDaemon(true);
        p.thread = t;
        t.start();
        return p;
    }

    /** The JSON body of a 200 response: {@code revision} and the ConfigMap data. */
    static final class Response {
        final String revision;
        final Map<String, String> configmap;

        Response(String revision, Map<String, String> configmap) {
            this.revision = revision;
            this.configmap = configmap;
        }
    }

    /** Parses a 200 body; throws IllegalArgumentException naming what is wrong. */
    static Response parseBody(String body) {
        Object doc = Json.parse(body);
        if (!(doc instanceof Map)) {
            throw new IllegalArgumentException("sidecar response is not a JSON object");
        }
        Map<?, ?> m = (Map<?, ?>) doc;
        Object rev = m.get("revision");
        if (!(rev instanceof String) || ((String) rev).isEmpty()) {
            throw new IllegalArgumentException("sidecar response: \"revision\" must be a non-empty string");
        }
        Object cm = m.get("configmap");
        if (!(cm instanceof Map)) {
            throw new IllegalArgumentException("sidecar response: \"configmap\" must be an object of strings");
        }
        Map<String, String> data = new TreeMap<>();
        for (Map.Entry<?, ?> e : ((Map<?, ?>) cm).entrySet()) {
            if (!(e.getValue() instanceof String)) {
                throw new IllegalArgumentException("sidecar response: configmap value of \"" + e.getKey() + "\" is not a string");
            }
            data.put((String) e.getKey(), (String) e.getValue());
        }
        return new Response((String) rev, data);
    }

    private final class Poller implements Runnable, Subscription {
        private final StateListener listener;
        private volatile boolean closed;
        private Thread thread;

        Poller(StateListener listener) {
            this.listener = listener;
        }

        @Override
        public void run() {
            HttpClient client = HttpClient.newBuilder()
                    .connectTimeout(Duration.ofSeconds(5))
                    .version(HttpClient.Version.HTTP_1_1)
                    .build();
            String since = null;
            long backoff = 100;
            while (!closed) {
                String uri = base + "/v1/state?wait=" + waitMillis + "ms"
                        + (since == null ? "" : "&since=" + URLEncoder.encode(since, StandardCharsets.UTF_8));
                try {
                    HttpRequest req = HttpRequest.newBuilder(URI.create(uri))
                            .timeout(Duration.ofMillis(waitMillis + 10_000))
                            .header("Accept", "application/json")
                            .GET()
                            .build();
                    HttpResponse<String> resp = client.send(req, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
                    int code = resp.statusCode();
                    if (code == 304) {
                        backoff = 100;
                        listener.onSourceOk();
                        continue;
                    }
                    if (code != 200) {
                        throw new IllegalStateException("GET " + uri + " answered HTTP " + code + ": " + abbreviate(resp.body()));
                    }
                    Response r = parseBody(resp.body());
                    backoff = 100;
                    if (!r.revision.equals(since)) {
                        since = r.revision;
                        listener.onConfigMap(r.configmap);
                    } else {
                        listener.onSourceOk();
                    }
                } catch (InterruptedException e) {
                    if (closed) {
                        return;
                    }
                    Thread.currentThread().interrupt();
                    return;
                } catch (Exception e) {
                    if (closed) {
                        return;
                    }
                    listener.onSourceError("sidecar " + uri + ": " + e, e);
                    try {
                        Thread.sleep(backoff);
                    } catch (InterruptedException ie) {
                        return;
                    }
                    backoff = Math.min(5_000, backoff * 2);
                }
            }
        }

        @Override
        public void close() {
            closed = true;
            if (thread != null) {
                thread.interrupt();
            }
        }
    }

    /** E.g. {@code SidecarStateSource(http://127.0.0.1:8787, wait 30000 ms)}. */
    @Override
    public String toString() {
        return "SidecarStateSource(" + base + ", wait " + waitMillis + " ms)";
    }

    private static String abbreviate(String s) {
        return s == null ? "" : s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }
}
