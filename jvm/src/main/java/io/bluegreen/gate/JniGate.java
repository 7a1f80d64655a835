package io.bluegreen.gate;

/**
 * A Rust gate decided through JNI, one per subtask and thread. It exists to measure and to offer
 * the choice; the recommended setup is the Java {@link Gate} fed by {@link JniStateSource} or
 * {@link SidecarStateSource}: a JNI call costs more than the Java decision itself
 * (docs/performance.md). Closing it frees the native gate and releases its watch handle.
 */
public final class JniGate implements AutoCloseable {
    private static final Decision[] DECISIONS = Decision.values();

    private final long watch;
    private long gate;

    private JniGate(long watch, Color color) {
        this.watch = watch;
        long g;
        try {
            g = JniNative.newGate(watch, color.name());
        } catch (RuntimeException e) {
            JniNative.release(watch);
            throw e;
        }
        this.gate = g;
    }

    /** A gate of {@code color} over the state {@code source} watches. */
    public static JniGate open(JniStateSource source, Color color) {
        return new JniGate(source.open(), color);
    }

    /** The decision for a record with event time {@code eventTimeMs}. */
    public Decision decide(long eventTimeMs) {
        return DECISIONS[JniNative.decide(live(), eventTimeMs)];
    }

    /**
     * Decides {@code eventTimes[0..count)} into {@code out} as {@link Decision} ordinals (0 PASS,
     * 1 DROP, 2 HOLD) in one native call; returns how many were decided.
     */
    public int decideBatch(long[] eventTimes, int count, byte[] out) {
        return JniNative.decideBatch(live(), eventTimes, count, out);
    }

    private long live() {
        if (gate == 0) {
            throw new IllegalStateException("JniGate is closed");
        }
        return gate;
    }

    @Override
    public synchronized void close() {
        if (gate != 0) {
            long g = gate;
            gate = 0;
            JniNative.closeGate(g);
            JniNative.release(watch);
        }
    }
}
