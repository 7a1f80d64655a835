package io.bluegreen.gate;

import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The hold, release and timeout of one gate subtask, written once for both placements of the gate:
 * the operator ({@link GateOperator}) and the sink writer ({@link GatedSink}). A record the rule
 * cannot decide yet is serialized into the {@link HoldBuffer}; while the buffer is full the task
 * reads nothing more (it yields to the mailbox, where the placement's tick applies newer states);
 * a new rule re-decides the held records in arrival order; the oldest held record older than the
 * hold timeout fails the task. The placement says where a passed record goes and how a newer state
 * is applied while it waits. Task thread only.
 */
final class HeldRecords<T> {
    private static final Logger LOG = LoggerFactory.getLogger(HeldRecords.class);

    /** What a placement does around the hold. */
    interface Placement<T> {
        /** Counts {@code value} (event time {@code eventTime}) as passed and hands it downstream. */
        void emitPassed(T value, boolean hasTimestamp, long timestamp, long eventTime) throws Exception;

        /**
         * Called while the buffer is full, after yielding to the mailbox: applies a newer state if
         * there is one (releasing what it decides) and returns the snapshot that decides now.
         */
        Gate.Snapshot refresh() throws Exception;
    }

    private final GateProcessFunction<T> fn;
    private final TypeSerializer<T> serializer;
    private final MailboxExecutor mailbox;
    private final Placement<T> placement;
    /** The placement's name in log lines ("gate", "gate in the sink"). */
    private final String where;
    private final HoldBuffer buffer;
    private final DataOutputSerializer scratch = new DataOutputSerializer(256);
    private boolean backpressureLogged;

    HeldRecords(GateProcessFunction<T> fn, TypeSerializer<T> serializer, MailboxExecutor mailbox, HoldBuffer buffer,
            Placement<T> placement, String where) {
        this.fn = fn;
        this.serializer = serializer;
        this.mailbox = mailbox;
        this.buffer = buffer;
        this.placement = placement;
        this.where = where;
    }

    /**
     * Holds {@code value} (event time {@code t}), first waiting while the buffer is full. Returns
     * false when a newer state decided the record during that wait (it was then passed or dropped),
     * true when it is held.
     */
    boolean hold(T value, boolean hasTimestamp, long timestamp, long t) throws Exception {
        scratch.clear();
        serializer.serialize(value, scratch);
        byte[] bytes = scratch.getCopyOfBuffer();
        // Backpressure: while the buffer is full, read nothing; mails of this operator's priority
        // (the tick) still run, and may release records or decide this one. Checkpoint mails have
        // a lower priority and wait, so no checkpoint sees this record neither held nor emitted.
        while (buffer.full(fn.holdMaxRecords(), fn.holdMaxBytes(), bytes.length)) {
            if (!backpressureLogged) {
                backpressureLogged = true;
                LOG.warn("bluegreen {} ({}): hold buffer full ({} records, {} bytes; bounds {} records, {} bytes): "
                        + "backpressure until held records are released (GateProcessFunction.withHoldBuffer sets the bounds)",
                        where, fn.color(), buffer.size(), buffer.bytes(), fn.holdMaxRecords(), fn.holdMaxBytes());
            }
            mailbox.yield();
            Gate.Snapshot s = placement.refresh();
            Decision d = s.rule.decide(t);
            if (d == Decision.PASS) {
                placement.emitPassed(value, hasTimestamp, timestamp, t);
                return false;
            }
            if (d == Decision.DROP) {
                fn.drop(s.rule, t);
                return false;
            }
        }
        backpressureLogged = false;
        fn.countHeld();
        buffer.add(new HoldBuffer.Held(bytes, hasTimestamp, timestamp, t, System.currentTimeMillis()));
        return true;
    }

    /** Re-decides every held record under {@code rule}, in arrival order; returns whether any was decided. */
    boolean release(Rule rule) throws Exception {
        return buffer.release(rule, new HoldBuffer.Outcome() {
            @Override
            public void pass(HoldBuffer.Held h) throws Exception {
                T value = serializer.deserialize(new DataInputDeserializer(h.bytes));
                placement.emitPassed(value, h.hasTimestamp, h.timestamp, h.eventTime);
            }

            @Override
            public void drop(HoldBuffer.Held h) {
                fn.drop(rule, h.eventTime);
            }
        });
    }

    /** Fails the task once the oldest held record has waited longer than the hold timeout. */
    void checkTimeout() throws GateHoldTimeoutException {
        HoldBuffer.Held oldest = buffer.oldest();
        if (oldest != null) {
            long heldMs = System.currentTimeMillis() - oldest.sinceMs;
            if (heldMs * 1_000_000L > fn.holdTimeoutNanos()) {
                throw new GateHoldTimeoutException(fn.holdTimeoutMessage(oldest.eventTime, heldMs));
            }
        }
    }

    /** At the end of a bounded input: yields until the tick has released (or timed out) every held record. */
    void awaitAllDecided() throws InterruptedException {
        while (!buffer.isEmpty()) {
            mailbox.yield();
        }
    }
}
