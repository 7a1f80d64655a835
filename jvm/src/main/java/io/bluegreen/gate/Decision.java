package io.bluegreen.gate;

/** What a gate does with one record. */
public enum Decision {
    /** Emit the record: this color owns it. */
    PASS,
    /** Discard the record: the other color owns it. */
    DROP,
    /**
     * The gate cannot know yet: neither emit nor discard; wait (bounded) for a newer state, then
     * fail the task so that Flink restarts it. Never guess.
     */
    HOLD
}
