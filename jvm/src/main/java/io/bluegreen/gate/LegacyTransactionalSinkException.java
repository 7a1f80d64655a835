package io.bluegreen.gate;

/**
 * Thrown when the gate operator starts with a legacy transactional sink chained after it (a
 * {@code TwoPhaseCommitSinkFunction}, a {@code StreamingFileSink} or a {@code GenericWriteAheadSink},
 * Flink 1.20's {@code DataStream#addSink}): such a sink keeps its pending transactions in its own
 * state, which the blue and the green job would both restore and commit or abort, so it cannot take
 * part in a handover. It fails the task while its operators are created, before any of them
 * restores its state; the message names the sink's class and the Sink V2 sink to use instead.
 */
public final class LegacyTransactionalSinkException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public LegacyTransactionalSinkException(String message) {
        super(message);
    }
}
