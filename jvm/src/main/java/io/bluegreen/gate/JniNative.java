package io.bluegreen.gate;

import java.io.File;

/**
 * The native entry points of the Rust JNI shim (crate {@code bluegreen-gate-jni}, library
 * {@code libbluegreen_gate_jni.so}). One library per JVM: it runs one ConfigMap watch per
 * (namespace, ConfigMap) for the whole process, on one small runtime thread, however many
 * subtasks subscribe. Errors and panics in native code arrive as Java exceptions
 * ({@link IllegalArgumentException}, {@link IllegalStateException}, {@link RuntimeException}).
 *
 * <p>Loaded from the path in the system property {@value #LIBRARY_PROPERTY}, else the environment
 * variable {@value #LIBRARY_ENV}, else {@code System.loadLibrary("bluegreen_gate_jni")}
 * ({@code java.library.path}). A JVM can bind a native library to one class loader only, so with
 * Flink put the bluegreen jar in Flink's {@code lib/} (parent class loader), not in the job jar.
 */
final class JniNative {
    /** System property naming the library file. */
    static final String LIBRARY_PROPERTY = "bluegreen.gate.jni.library";
    /** Environment variable naming the library file (when the property is not set). */
    static final String LIBRARY_ENV = "BLUEGREEN_GATE_JNI_LIBRARY";

    private static boolean loaded;

    private JniNative() {}

    /** Loads the library once per class loader; throws {@link UnsatisfiedLinkError} if it cannot. */
    static synchronized void load() {
        if (loaded) {
            return;
        }
        String path = System.getProperty(LIBRARY_PROPERTY);
        if (path == null || path.isEmpty()) {
            path = System.getenv(LIBRARY_ENV);
        }
        if (path != null && !path.isEmpty()) {
            System.load(new File(path).getAbsolutePath());
        } else {
            System.loadLibrary("bluegreen_gate_jni");
        }
        loaded = true;
    }

    /** A handle on the process's watch of ConfigMap {@code namespace/name} (started on first use). */
    static native long openConfigMap(String namespace, String name);

    /** A handle on a watch fed only by {@link #offer} (tests, benchmarks; no Kubernetes). */
    static native long openManual(String name);

    /** Feeds ConfigMap data (a JSON object of strings) to a manual watch; whether it was accepted. */
    static native boolean offer(long watch, String json);

    /**
     * The sidecar's {@code GET /v1/state} body for the last accepted data once its revision differs
     * from {@code sinceRevision} (0: any), or {@code null} after {@code timeoutMs} or on release.
     */
    static native String awaitState(long watch, long sinceRevision, long timeoutMs);

    /** Releases a watch handle; the watch stops with the last one. */
    static native void release(long watch);

    /** A Rust gate of {@code color} ("BLUE"/"GREEN") over the watch's state; free with {@link #closeGate}. */
    static native long newGate(long watch, String color);

    /** One decision: the {@link Decision} ordinal. */
    static native int decide(long gate, long eventTimeMs);

    /** Decides the first {@code count} event times into {@code out} (ordinals); returns how many. */
    static native int decideBatch(long gate, long[] eventTimes, int count, byte[] out);

    /** Frees a gate made by {@link #newGate}. */
    static native void closeGate(long gate);
}
