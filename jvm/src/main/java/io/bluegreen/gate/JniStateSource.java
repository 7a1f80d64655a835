package io.bluegreen.gate;

import java.util.Objects;

/**
 * Feeds gates from the Rust gate's ConfigMap watch, loaded into the TaskManager JVM through JNI
 * (library {@code bluegreen-gate-jni}, see {@link JniNative} for how it is found). Every subscriber
 * in the JVM shares <b>one</b> watch per ConfigMap (one HTTP connection to the API server per
 * TaskManager); the watch stops when the last subscription closes (a cancelled job).
 *
 * <p>The native side keeps the raw data of the last version the Rust gate <em>accepted</em> (parsed,
 * checked with the transition rules); each subscription's daemon thread blocks in native code until
 * that data changes and hands it to {@link StateListener#onConfigMap}, exactly like
 * {@link SidecarStateSource} (same JSON body). The Java gate re-parses and re-checks it. Needs the
 * pod's service account to {@code get}, {@code list} and {@code watch} the ConfigMap
 * (docs/gate.md, RBAC), and in-cluster configuration or a kubeconfig.
 */
public final class JniStateSource implements StateSource {
    private static final long serialVersionUID = 1L;

    private final String namespace;
    private final String configMap;
    /** Non-null for a manual (test) source: no Kubernetes, data fed with {@link #offer}. */
    private final String manualName;

    /** Watches ConfigMap {@code namespace/configMap} (e.g. {@code orders-bluegreen}). */
    public JniStateSource(String namespace, String configMap) {
        this(Objects.requireNonNull(namespace, "namespace"), Objects.requireNonNull(configMap, "configMap"), null);
    }

    private JniStateSource(String namespace, String configMap, String manualName) {
        this.namespace = namespace;
        this.configMap = configMap;
        this.manualName = manualName;
    }

    /** Watches the coordination ConfigMap of {@code deployment} ({@code <deployment>-bluegreen}). */
    public static JniStateSource forDeployment(String namespace, String deployment) {
        return new JniStateSource(namespace, deployment + "-bluegreen");
    }

    /** A source fed only by {@link #offer} through the native state (tests, benchmarks). */
    static JniStateSource manual(String name) {
        return new JniStateSource(null, null, Objects.requireNonNull(name, "name"));
    }

    /**
     * Offers ConfigMap data to the manual native state {@code name}; whether the Rust gate accepted
     * it. The state lives while some handle (a subscription, a {@link JniGate}) holds it: offer after
     * subscribing.
     */
    static boolean offer(String name, java.util.Map<String, String> data) {
        JniNative.load();
        long handle = JniNative.openManual(name);
        try {
            return JniNative.offer(handle, Json.writeStringMap(data));
        } finally {
            JniNative.release(handle);
        }
    }

    /** Opens a native watch handle for this source (one user of the shared watch). */
    long open() {
        JniNative.load();
        return manualName != null ? JniNative.openManual(manualName) : JniNative.openConfigMap(namespace, configMap);
    }

    @Override
    public Subscription subscribe(String gateName, StateListener listener) {
        Poller poller = new Poller(open(), listener);
        Thread thread = new Thread(poller, "bluegreen-jni-state " + gateName);
        thread.setDaemon(true);
        thread.start();
        return poller;
    }

    @Override
    public String toString() {
        return manualName != null ? "JniStateSource(manual " + manualName + ")" : "JniStateSource(" + namespace + "/" + configMap + ")";
    }

    private static final class Poller implements Runnable, Subscription {
        private final long handle;
        private final StateListener listener;
        private volatile boolean closed;

        Poller(long handle, StateListener listener) {
            this.handle = handle;
            this.listener = listener;
        }

        @Override
        public void run() {
            long since = 0;
            long backoff = 100;
            while (!closed) {
                try {
                    // Returns at once on a change, on release (close), or after the wait.
                    String body = JniNative.awaitState(handle, since, 30_000);
                    if (body == null) {
                        continue;
                    }
                    SidecarStateSource.Response r = SidecarStateSource.parseBody(body);
                    since = Long.parseLong(r.revision);
                    backoff = 100;
                    listener.onConfigMap(r.configmap);
                } catch (RuntimeException e) {
                    if (closed) {
                        return;
                    }
                    listener.onSourceError("native state source: " + e, e);
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
        public synchronized void close() {
            if (!closed) {
                closed = true;
                JniNative.release(handle);
            }
        }
    }
}
