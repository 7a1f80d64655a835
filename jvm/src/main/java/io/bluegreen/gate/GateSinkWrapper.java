package io.bluegreen.gate;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;

/**
 * Places the gate operator ({@link GateOperator}) just before a sink; the alternative to the gate
 * inside the sink ({@link GatedSink}) where that does not apply (inputs that can be idle, sinks with
 * their own operators). A gate before a sink: the gate must be the last operator before the records leave
 * the job (nothing downstream may reorder, duplicate or emit on its own), with the same parallelism
 * as the sink so that Flink chains them. The gate's uid is the same in the blue and the green job
 * (green restores blue's gate state from the savepoint).
 */
public final class GateSinkWrapper {
    /** The gate operator's uid and name. */
    public static final String UID = "bluegreen-gate";

    private GateSinkWrapper() {}

    /** The gate ({@link GateOperator}) with uid {@link #UID}, chained with what follows. */
    public static <T> SingleOutputStreamOperator<T> gate(DataStream<T> stream, GateProcessFunction<T> gate) {
        return gate(stream, gate, UID);
    }

    /**
     * The gate with its own {@code uid}, for a job with several gated sinks (Flink refuses two
     * operators with one uid); use the same uid in the blue and the green job.
     */
    public static <T> SingleOutputStreamOperator<T> gate(DataStream<T> stream, GateProcessFunction<T> gate, String uid) {
        return stream.transform(uid + " (" + gate.color() + ")", stream.getType(), GateOperator.factory(gate))
                .uid(uid)
                .setParallelism(stream.getParallelism());
    }

    /** The gate, then {@code sink}, at the stream's parallelism. */
    public static <T> DataStreamSink<T> sinkTo(DataStream<T> stream, GateProcessFunction<T> gate, Sink<T> sink) {
        SingleOutputStreamOperator<T> gated = gate(stream, gate);
        return gated.sinkTo(sink).setParallelism(gated.getParallelism());
    }
}
