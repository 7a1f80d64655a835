package io.bluegreen.gate.sink;

import java.lang.reflect.Field;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.streaming.api.functions.sink.filesystem.PartFileInfo;
import org.apache.flink.streaming.api.functions.sink.filesystem.RollingPolicy;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.CheckpointRollingPolicy;

/**
 * Checks, when the job is built, that a {@link FileSink} survives a handover: its rolling policy
 * rolls on every checkpoint (no in-progress part file is ever in the sink state, and the outgoing
 * job's stop-with-savepoint commits its last records) and it does not compact (the compactor's
 * operators hold committables of both colors). FileSink exposes neither setting, so they are read
 * reflectively; a Flink version where that fails is refused too. Public only for
 * {@link io.bluegreen.gate.GatedSink}, which needs the compaction check.
 */
public final class FileSinkCheck {
    private FileSinkCheck() {}

    static void check(FileSink<?> sink) {
        Object builder = field(sink, "bucketsBuilder");
        Object policy = field(builder, "rollingPolicy");
        if (!rollsOnEveryCheckpoint((RollingPolicy<?, ?>) policy)) {
            throw new IllegalArgumentException("FileSink rolling policy " + policy.getClass().getName()
                    + " does not roll on every checkpoint: the incoming job would resume the outgoing job's in-progress part files"
                    + " (damaged files, lost records) and the outgoing job's last records would never be committed at its"
                    + " stop-with-savepoint. Use .withRollingPolicy(OnCheckpointRollingPolicy.build()), or"
                    + " BlueGreenSinks.rollOnCheckpoint(policy) to keep size/time rolls as well");
        }
        if (compactionConfigured(builder)) {
            throw new IllegalArgumentException("FileSink compaction (enableCompact/disableCompact) is not supported by ColorIsolatedSink:"
                    + " the compactor operators keep committables of both colors; build the FileSink without compaction settings");
        }
    }

    /**
     * Refuses a FileSink with compaction settings, whose compactor operators (its pre-commit
     * topology) a wrapper cannot carry; without them FileSink's pre-commit topology is not needed.
     */
    public static void checkNoCompaction(FileSink<?> sink, String wrapper) {
        if (compactionConfigured(field(sink, "bucketsBuilder"))) {
            throw new IllegalArgumentException("FileSink compaction (enableCompact/disableCompact) is not supported by " + wrapper
                    + ": its compactor operators are outside the wrapper; build the FileSink without compaction settings");
        }
    }

    private static boolean compactionConfigured(Object builder) {
        return field(builder, "compactStrategy") != null || (Boolean) field(builder, "isCompactDisabledExplicitly");
    }

    /** True when {@code policy} is a {@link CheckpointRollingPolicy} that does not override {@code shouldRollOnCheckpoint}. */
    static boolean rollsOnEveryCheckpoint(RollingPolicy<?, ?> policy) {
        if (!(policy instanceof CheckpointRollingPolicy)) {
            return false;
        }
        try {
            return policy.getClass().getMethod("shouldRollOnCheckpoint", PartFileInfo.class).getDeclaringClass()
                    == CheckpointRollingPolicy.class;
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Object field(Object target, String name) {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            } catch (NoSuchFieldException e) {
                // look in the superclass
            } catch (ReflectiveOperationException | RuntimeException e) {
                throw cannotCheck(target, name, e);
            }
        }
        throw cannotCheck(target, name, null);
    }

    private static IllegalArgumentException cannotCheck(Object target, String name, Throwable cause) {
        return new IllegalArgumentException("cannot verify this FileSink for a blue/green handover (no field '" + name + "' in "
                + target.getClass().getName() + " on this Flink version); ColorIsolatedSink supports FileSink of Flink 1.20", cause);
    }
}
