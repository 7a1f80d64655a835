package io.bluegreen.examples;

import java.io.Serializable;

/**
 * The example topic: record (split s, offset o) is a pure function of (seed, s, o), so every
 * replay, every color and the Rust ledger agree on it.
 *
 * <ul>
 *   <li>key {@code s * keysPerSplit + o % keysPerSplit} (split-local), so the running count of
 *       the key after record (s, o) is {@code o / keysPerSplit + 1};
 *   <li>schedule (earliest wall-clock emission) {@code t0 + o * period}; the idle split (or every
 *       split, with {@link #ALL_SPLITS}) is scheduled only in the first {@code idleActiveMs} of every
 *       {@code idleCycleMs};
 *   <li>event time = schedule + a jitter in {@code [-jitterMs, jitterMs]} (hash of seed, s, o).
 *       Within a split the event times are therefore at most {@code 2 * jitterMs} out of order,
 *       which is the watermark bound the job uses: no record is late.
 * </ul>
 */
public final class Records implements Serializable {
    private static final long serialVersionUID = 1L;

    /** {@code idleSplit} for "every split idles at once": the whole input goes quiet. */
    static final int ALL_SPLITS = -2;

    private final long seed;
    private final int keysPerSplit;
    private final long periodMicros;
    private final long t0;
    private final long jitterMs;
    private final int idleSplit;
    private final long idleActiveMs;
    private final long idleCycleMs;

    Records(long seed, int keysPerSplit, long ratePerSplit, long t0, long jitterMs,
            int idleSplit, long idleActiveMs, long idleCycleMs) {
        if (keysPerSplit < 1) {
            throw new IllegalArgumentException("--keys-per-split must be >= 1, got " + keysPerSplit);
        }
        if (ratePerSplit < 1 || ratePerSplit > 1_000_000) {
            throw new IllegalArgumentException("--rate must be 1..1000000 records/s per split, got " + ratePerSplit);
        }
        if (jitterMs < 0) {
            throw new IllegalArgumentException("--jitter-ms must be >= 0, got " + jitterMs);
        }
        if ((idleSplit >= 0 || idleSplit == ALL_SPLITS) && (idleActiveMs < 1 || idleCycleMs <= idleActiveMs)) {
            throw new IllegalArgumentException("the idle split needs 0 < --idle-active-ms < --idle-cycle-ms, got "
                    + idleActiveMs + " and " + idleCycleMs);
        }
        this.seed = seed;
        this.keysPerSplit = keysPerSplit;
        this.periodMicros = 1_000_000L / ratePerSplit;
        this.t0 = t0;
        this.jitterMs = jitterMs;
        this.idleSplit = idleSplit;
        this.idleActiveMs = idleActiveMs;
        this.idleCycleMs = idleCycleMs;
    }

    /** The earliest wall-clock time (epoch ms) at which (s, o) may be emitted. */
    long schedule(int split, long offset) {
        if (split == idleSplit || idleSplit == ALL_SPLITS) {
            long perWindow = Math.max(1, idleActiveMs * 1000 / periodMicros);
            return t0 + (offset / perWindow) * idleCycleMs + (offset % perWindow) * periodMicros / 1000;
        }
        return t0 + offset * periodMicros / 1000;
    }

    /** The event time (epoch ms) of (s, o). */
    long eventTime(int split, long offset) {
        if (jitterMs == 0) {
            return schedule(split, offset);
        }
        long h = mix(seed ^ (split * 0x9E3779B97F4A7C15L) ^ (offset * 0xC2B2AE3D27D4EB4FL));
        return schedule(split, offset) + Math.floorMod(h, 2 * jitterMs + 1) - jitterMs;
    }

    /** The key of (s, o). */
    long key(int split, long offset) {
        return (long) split * keysPerSplit + offset % keysPerSplit;
    }

    /** The record (s, o), uncounted. */
    Event event(int split, long offset) {
        Event e = new Event();
        e.split = split;
        e.offset = offset;
        e.eventTime = eventTime(split, offset);
        e.key = key(split, offset);
        return e;
    }

    /** The bound on out-of-orderness within a split (the watermark strategy's). */
    long outOfOrdernessMs() {
        return 2 * jitterMs;
    }

    /** SplitMix64's finalizer. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
