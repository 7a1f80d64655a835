package io.bluegreen.gate.sink;

import io.bluegreen.gate.Color;
import io.bluegreen.gate.GateProcessFunction;
import io.bluegreen.gate.GateSinkWrapper;
import io.bluegreen.gate.GatedSink;
import java.util.Locale;
import org.apache.flink.api.common.serialization.BulkWriter;
import org.apache.flink.api.common.serialization.Encoder;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.functions.sink.filesystem.OutputFileConfig;
import org.apache.flink.streaming.api.functions.sink.filesystem.RollingPolicy;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;

/** Per-color settings for sinks that take part in a blue/green handover (see {@link ColorIsolatedSink}). */
public final class BlueGreenSinks {
    private BlueGreenSinks() {}

    /**
     * The gate, then {@code sink} isolated for the gate's color ({@link ColorIsolatedSink#wrap}), at
     * the gate's parallelism, with uid {@code sinkUid} (the same in both colors).
     *
     * @throws IllegalArgumentException when the sink cannot be made safe for a handover (see {@link ColorIsolatedSink#wrap})
     */
    public static <T> DataStreamSink<T> sinkTo(DataStream<T> stream, GateProcessFunction<T> gate, Sink<T> sink, String sinkUid) {
        Sink<T> isolated = ColorIsolatedSink.wrap(sink, gate.color());
        SingleOutputStreamOperator<T> gated = GateSinkWrapper.gate(stream, gate);
        return gated.sinkTo(isolated).uid(sinkUid).name(sinkUid).setParallelism(gated.getParallelism());
    }

    /**
     * {@code sink} isolated for the gate's color ({@link ColorIsolatedSink#wrap}) with the gate inside
     * its writer ({@link GatedSink#wrap}): no extra operator. Use it as any sink,
     * {@code stream.sinkTo(BlueGreenSinks.gated(sink, gate)).uid("orders-sink")}, with the same uid in
     * both colors. A sink writer does not learn of idleness from Flink: when every input goes quiet
     * during a handover, the handover waits {@link GateProcessFunction#withSinkIdleness} (30 s by
     * default) before the gate reports the input idle; {@link #sinkTo} learns of it at once.
     *
     * @throws IllegalArgumentException when the sink cannot be made safe for a handover (see
     *     {@link ColorIsolatedSink#wrap}) or adds its own operators (see {@link GatedSink#wrap})
     */
    public static <T> Sink<T> gated(Sink<T> sink, GateProcessFunction<T> gate) {
        return GatedSink.wrap(ColorIsolatedSink.wrap(sink, gate.color()), gate);
    }

    /** {@code base + "-blue"} or {@code base + "-green"}: a per-color name. */
    private static String perColor(String base, Color color) {
        return base + "-" + color.wire().toLowerCase(Locale.ROOT);
    }

    /**
     * A per-color transactional id prefix, e.g. for {@code KafkaSink.builder().setTransactionalIdPrefix(...)}:
     * each color's writers then abort and fence only their own transactions.
     */
    public static String transactionalIdPrefix(String base, Color color) {
        return perColor(base, color);
    }

    /** A per-color sink uid: the alternative to {@link ColorIsolatedSink} that needs {@code allowNonRestoredState}. */
    public static String sinkUid(String base, Color color) {
        return perColor(base, color);
    }

    /** Part files named {@code <base>-<color>-...}: each file's writer is visible in its name. */
    public static OutputFileConfig outputFileConfig(String base, Color color) {
        return OutputFileConfig.builder().withPartPrefix(perColor(base, color)).build();
    }

    /** Rolls on every checkpoint, and between checkpoints whenever {@code between} rolls (size, age, inactivity). */
    public static <IN, B> RollOnCheckpoint<IN, B> rollOnCheckpoint(RollingPolicy<IN, B> between) {
        return new RollOnCheckpoint<>(between);
    }

    /**
     * A row-format FileSink builder that rolls on checkpoint and names its part files per color
     * ({@code part-<color>-...}); build it and pass it to {@link ColorIsolatedSink#wrap}.
     */
    public static <IN> FileSink.DefaultRowFormatBuilder<IN> rowFormat(Path path, Encoder<IN> encoder, Color color) {
        return FileSink.forRowFormat(path, encoder)
                .withRollingPolicy(OnCheckpointRollingPolicy.build())
                .withOutputFileConfig(outputFileConfig("part", color));
    }

    /** A bulk-format FileSink builder (bulk formats always roll on checkpoint) with per-color part file names. */
    public static <IN> FileSink.DefaultBulkFormatBuilder<IN> bulkFormat(Path path, BulkWriter.Factory<IN> factory, Color color) {
        return FileSink.forBulkFormat(path, factory).withOutputFileConfig(outputFileConfig("part", color));
    }
}
