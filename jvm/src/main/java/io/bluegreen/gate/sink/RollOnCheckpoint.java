package io.bluegreen.gate.sink;

import java.io.IOException;
import org.apache.flink.streaming.api.functions.sink.filesystem.PartFileInfo;
import org.apache.flink.streaming.api.functions.sink.filesystem.RollingPolicy;

/**
 * A rolling policy that rolls on every checkpoint and, between checkpoints, whenever the wrapped
 * policy rolls on an event or on processing time (e.g. {@code DefaultRollingPolicy}'s size and
 * age limits). Built by {@link BlueGreenSinks#rollOnCheckpoint}.
 */
public final class RollOnCheckpoint<IN, B>
        extends org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.CheckpointRollingPolicy<IN, B> {
    private static final long serialVersionUID = 1L;
    private final RollingPolicy<IN, B> between;

    RollOnCheckpoint(RollingPolicy<IN, B> between) {
        this.between = between;
    }

    @Override
    public boolean shouldRollOnEvent(PartFileInfo<B> partFileState, IN element) throws IOException {
        return between.shouldRollOnEvent(partFileState, element);
    }

    @Override
    public boolean shouldRollOnProcessingTime(PartFileInfo<B> partFileState, long currentTime) throws IOException {
        return between.shouldRollOnProcessingTime(partFileState, currentTime);
    }
}
