package io.bluegreen.gate;

/**
 * Thrown by a gate that held a record for its whole hold timeout without learning a state that
 * decides it. It fails the task on purpose: Flink restarts it from its last checkpoint (the gate
 * never guesses).
 */
public final class GateHoldTimeoutException extends Exception {
    private static final long serialVersionUID = 1L;

    public GateHoldTimeoutException(String message) {
        super(message);
    }
}
