package io.bluegreen.gate;

import java.io.Serializable;

/**
 * Gives a record's event time (epoch milliseconds) for the gate's decision. The default
 * ({@link #fromContext()}) uses the timestamp Flink attached to the record
 * ({@code ProcessFunction.Context#timestamp()}), i.e. the one assigned by the job's
 * {@code WatermarkStrategy}.
 */
@FunctionalInterface
public interface TimestampExtractor<T> extends Serializable {
    /**
     * @param record the record
     * @param contextTimestamp the record's Flink timestamp, or {@code null} if it has none
     * @return the event time, or {@code null} if the record has none (see the gate's
     *     missing-timestamp policy)
     */
    Long eventTime(T record, Long contextTimestamp);

    /**
     * The record's Flink timestamp; {@code Long.MIN_VALUE} counts as <b>no timestamp</b>, because
     * Flink uses it as its "no timestamp" marker ({@code TimestampAssigner.NO_TIMESTAMP}: a FLIP-27
     * source without a timestamp assigner stamps every record with it). The default.
     */
    static <T> TimestampExtractor<T> fromContext() {
        return (record, ts) -> ts == null || ts == Long.MIN_VALUE ? null : ts;
    }

    /** The record's Flink timestamp as is, {@code Long.MIN_VALUE} included (an event time {@code <= W} for every W). */
    static <T> TimestampExtractor<T> fromContextRaw() {
        return (record, ts) -> ts;
    }
}
