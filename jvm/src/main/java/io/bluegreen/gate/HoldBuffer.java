package io.bluegreen.gate;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;

/**
 * The held records of one gate subtask, in arrival order, with their accounting: count, serialized
 * bytes, lowest timestamp (for the held-back watermark) and age of the oldest (for the hold
 * timeout), published for the metric reporter. {@link HeldRecords} holds and releases through it
 * for both placements of the gate. Task thread only, but for the published gauges.
 */
final class HoldBuffer {
    /** A record waiting for a state that decides it: its serialized value, Flink timestamp and event time. */
    static final class Held {
        final byte[] bytes;
        final boolean hasTimestamp;
        final long timestamp;
        final long eventTime;
        final long sinceMs;

        Held(byte[] bytes, boolean hasTimestamp, long timestamp, long eventTime, long sinceMs) {
            this.bytes = bytes;
            this.hasTimestamp = hasTimestamp;
            this.timestamp = timestamp;
            this.eventTime = eventTime;
            this.sinceMs = sinceMs;
        }

        /** {@code [flags][timestamp][event time][record]}, the checkpointed form. */
        byte[] encode() {
            byte[] out = new byte[17 + bytes.length];
            out[0] = (byte) (hasTimestamp ? 1 : 0);
            putLong(out, 1, timestamp);
            putLong(out, 9, eventTime);
            System.arraycopy(bytes, 0, out, 17, bytes.length);
            return out;
        }

        /** A restored record; its hold counts from {@code sinceMs} (the restore), not from before the restart. */
        static Held decode(byte[] in, long sinceMs) {
            byte[] record = new byte[in.length - 17];
            System.arraycopy(in, 17, record, 0, record.length);
            return new Held(record, in[0] == 1, getLong(in, 1), getLong(in, 9), sinceMs);
        }

        static void putLong(byte[] b, int at, long v) {
            for (int i = 0; i < 8; i++) {
                b[at + i] = (byte) (v >>> (56 - 8 * i));
            }
        }

        static long getLong(byte[] b, int at) {
            long v = 0;
            for (int i = 0; i < 8; i++) {
                v = (v << 8) | (b[at + i] & 0xFF);
            }
            return v;
        }
    }

    /** What a release does with a record the new rule decides. */
    interface Outcome {
        void pass(Held h) throws Exception;

        void drop(Held h);
    }

    private final ArrayDeque<Held> queue = new ArrayDeque<>();
    private long bytes;
    private long lowestTimestamp = Long.MAX_VALUE;
    private volatile int publishedCount;
    private volatile long publishedBytes;
    private volatile long oldestSinceMs = Long.MAX_VALUE;

    boolean isEmpty() {
        return queue.isEmpty();
    }

    int size() {
        return queue.size();
    }

    long bytes() {
        return bytes;
    }

    /** The oldest held record, or null. */
    Held oldest() {
        return queue.peekFirst();
    }

    /** Whether holding {@code nextBytes} more would exceed a bound (never when nothing is held). */
    boolean full(int maxRecords, long maxBytes, int nextBytes) {
        return !queue.isEmpty() && (queue.size() >= maxRecords || bytes + nextBytes > maxBytes);
    }

    void add(Held h) {
        queue.addLast(h);
        bytes += h.bytes.length;
        if (h.hasTimestamp && h.timestamp < lowestTimestamp) {
            lowestTimestamp = h.timestamp;
        }
        publish();
    }

    /**
     * Re-decides every held record under {@code rule}, oldest first, handing each decided one to
     * {@code outcome}; keeps the undecided ones in order. Returns whether any was decided.
     */
    boolean release(Rule rule, Outcome outcome) throws Exception {
        int n = queue.size();
        boolean changed = false;
        for (int i = 0; i < n; i++) {
            Held h = queue.pollFirst();
            Decision d = rule.decide(h.eventTime);
            if (d == Decision.HOLD) {
                queue.addLast(h);
                continue;
            }
            changed = true;
            if (d == Decision.PASS) {
                outcome.pass(h);
            } else {
                outcome.drop(h);
            }
        }
        if (changed) {
            recount();
        }
        return changed;
    }

    /**
     * {@code min(input watermark, lowest held timestamp - 1)}: the watermark that keeps every held
     * record on time downstream.
     */
    long heldBack(long inputWatermark) {
        if (lowestTimestamp == Long.MAX_VALUE) {
            return inputWatermark;
        }
        return lowestTimestamp == Long.MIN_VALUE ? Long.MIN_VALUE : Math.min(inputWatermark, lowestTimestamp - 1);
    }

    /** The checkpointed form of every held record, in order. */
    List<byte[]> encodeAll() {
        List<byte[]> out = new ArrayList<>(queue.size());
        for (Held h : queue) {
            out.add(h.encode());
        }
        return out;
    }

    /** Adds restored records (their hold counts from {@code nowMs}). */
    void restore(Iterable<byte[]> encoded, long nowMs) {
        for (byte[] b : encoded) {
            queue.addLast(Held.decode(b, nowMs));
        }
        recount();
    }

    /** The held-records gauges ({@link GateProcessFunction#METRIC_HELD_RECORDS} and friends). */
    void registerGauges(MetricGroup metrics) {
        metrics.gauge(GateProcessFunction.METRIC_HELD_RECORDS, (Gauge<Integer>) () -> publishedCount);
        metrics.gauge(GateProcessFunction.METRIC_HELD_BYTES, (Gauge<Long>) () -> publishedBytes);
        metrics.gauge(GateProcessFunction.METRIC_HELD_OLDEST_AGE, (Gauge<Long>) () -> {
            long since = oldestSinceMs;
            return since == Long.MAX_VALUE ? 0L : Math.max(0L, System.currentTimeMillis() - since);
        });
    }

    private void recount() {
        long b = 0;
        long lowest = Long.MAX_VALUE;
        for (Held h : queue) {
            b += h.bytes.length;
            if (h.hasTimestamp && h.timestamp < lowest) {
                lowest = h.timestamp;
            }
        }
        bytes = b;
        lowestTimestamp = lowest;
        publish();
    }

    private void publish() {
        publishedBytes = bytes;
        Held oldest = queue.peekFirst();
        oldestSinceMs = oldest == null ? Long.MAX_VALUE : oldest.sinceMs;
        publishedCount = queue.size();
    }
}
