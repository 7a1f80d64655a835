package io.bluegreen.gate;

import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The framework-independent heart of a gate: receives ConfigMap data from a {@link StateSource},
 * parses it strictly, refuses illegal updates (keeping its last good state) and publishes an
 * immutable {@link Snapshot} (state + precomputed {@link Rule}) through a volatile field, so that
 * deciding a record is one volatile read and one comparison. Thread-safe.
 */
public final class Gate implements StateSource.StateListener {
    private static final Logger LOG = LoggerFactory.getLogger(Gate.class);

    /** An applied state and the rule it gives this gate's color. Immutable. */
    public static final class Snapshot {
        /** The applied state; {@code null} before the first valid state. */
        public final CoordinationState state;
        /** The rule of this gate's color under {@link #state} ({@link Rule#HOLD} without a state). */
        public final Rule rule;

        Snapshot(CoordinationState state, Rule rule) {
            this.state = state;
            this.rule = rule;
        }
    }

    private final Color color;
    private final String name;
    private volatile Snapshot latest;
    private final AtomicLong refusedUpdates = new AtomicLong();
    private final AtomicLong sourceErrors = new AtomicLong();
    private volatile String lastProblem = "";
    /** The source's error since its last good contact; null when it answers. */
    private volatile String sourceProblem;
    /** The refused update since the last applied one; null when none. */
    private volatile String refusedProblem;

    /** A gate of {@code color} with no state yet (it holds everything). */
    public Gate(Color color, String name) {
        this.color = color;
        this.name = name;
        this.latest = new Snapshot(null, Rule.HOLD);
    }

    public Color color() {
        return color;
    }

    /** The latest applied snapshot (one volatile read). */
    public Snapshot latest() {
        return latest;
    }

    /** The decision for one record under the latest snapshot. */
    public Decision decide(long eventTimeMs) {
        return latest.rule.decide(eventTimeMs);
    }

    /** Updates refused so far (unparseable data, older epoch, illegal transition). */
    public long refusedUpdates() {
        return refusedUpdates.get();
    }

    /** Errors reported by the source so far. */
    public long sourceErrors() {
        return sourceErrors.get();
    }

    /** The last refused update or source error, for error messages; empty if none. */
    public String lastProblem() {
        return lastProblem;
    }

    /**
     * The problem that lasts now, for the report line: the state source's error until it answers
     * again, else a refused update until a state is applied; null when there is none.
     */
    public String currentProblem() {
        String source = sourceProblem;
        return source != null ? source : refusedProblem;
    }

    @Override
    public void onConfigMap(Map<String, String> data) {
        sourceProblem = null;
        CoordinationState next;
        try {
            next = CoordinationState.fromData(data);
        } catch (ProtocolException e) {
            refuse(e);
            return;
        }
        apply(next);
    }

    /** Applies an already parsed state (checked against the current one like any update). */
    public synchronized boolean apply(CoordinationState next) {
        CoordinationState cur = latest.state;
        if (cur != null) {
            if (cur.equals(next)) {
                refusedProblem = null;
                return true; // replay of the current state
            }
            try {
                Transitions.check(cur, next);
            } catch (ProtocolException e) {
                refuse(e);
                return false;
            }
        } else if (!next.isValid()) {
            refuse(new IllegalArgumentException("invalid state " + next));
            return false;
        }
        latest = new Snapshot(next, Rule.forState(next, color));
        refusedProblem = null;
        LOG.info("bluegreen gate {} ({}): applied {}", name, color, next);
        notifyAll();
        return true;
    }

    // The problem is written before its counter moves: whoever sees the count sees the message.
    private void refuse(Exception e) {
        lastProblem = "refused update: " + e.getMessage();
        refusedProblem = lastProblem;
        refusedUpdates.incrementAndGet();
        LOG.warn("bluegreen gate {} ({}): refused a coordination update, keeping {}: {}", name, color, latest.state, e.getMessage());
    }

    @Override
    public void onSourceError(String message, Throwable cause) {
        lastProblem = "state source: " + message;
        sourceProblem = lastProblem;
        sourceErrors.incrementAndGet();
        LOG.warn("bluegreen gate {} ({}): state source error: {}", name, color, message, cause);
    }

    @Override
    public void onSourceOk() {
        sourceProblem = null;
    }

    /**
     * Waits until the latest snapshot differs from {@code seen} or {@code deadlineNanos}
     * ({@link System#nanoTime()}) passes; returns the latest snapshot (== {@code seen} on timeout).
     */
    public Snapshot awaitChange(Snapshot seen, long deadlineNanos) throws InterruptedException {
        synchronized (this) {
            while (latest == seen) {
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                long ms = left / 1_000_000L;
                wait(ms, ms == 0 ? (int) Math.max(1, left % 1_000_000L) : 0);
            }
            return latest;
        }
    }
}
