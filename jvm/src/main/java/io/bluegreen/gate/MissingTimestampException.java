package io.bluegreen.gate;

/**
 * Thrown by a gate configured to fail ({@link GateProcessFunction#failOnMissingTimestamp()}, the
 * default) when a record has no event time: the gate cannot tell which color owns it.
 */
public final class MissingTimestampException extends Exception {
    private static final long serialVersionUID = 1L;

    public MissingTimestampException(String message) {
        super(message);
    }
}
