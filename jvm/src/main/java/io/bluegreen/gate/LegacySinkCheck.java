package io.bluegreen.gate;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.api.common.functions.Function;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.graph.StreamConfig;
import org.apache.flink.streaming.api.graph.StreamEdge;
import org.apache.flink.streaming.api.operators.AbstractUdfStreamOperator;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.operators.UdfStreamOperatorFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Refuses legacy transactional sinks chained after the gate operator ({@link GateOperator}), which
 * run this check when they are created: before any operator of the task restores its state.
 *
 * <p>A legacy sink keeps its pending transactions or files in its own operator state. Green
 * restores blue's savepoint while blue still runs, so such a sink would commit, abort or truncate
 * what blue is still writing; unlike a Sink V2 sink ({@code ColorIsolatedSink}) it cannot be
 * isolated per color from outside. The classes are recognised by name, so that this compiles and
 * runs on both Flink lines: on Flink 2.x, where {@code DataStream#addSink} is gone, the check finds
 * nothing. It sees only the operators chained after the gate in the same task; a sink in another
 * task (another parallelism, {@code disableChaining}, a {@code keyBy} in between) is not seen.
 */
final class LegacySinkCheck {
    private static final Logger LOG = LoggerFactory.getLogger(LegacySinkCheck.class);

    /** Refused classes (superclasses of the user function or the operator), Flink 1.20 and 2.x names. */
    private static final Map<String, String> REFUSED = Map.of(
            "org.apache.flink.streaming.api.functions.sink.TwoPhaseCommitSinkFunction", "TwoPhaseCommitSinkFunction",
            "org.apache.flink.streaming.api.functions.sink.legacy.TwoPhaseCommitSinkFunction", "TwoPhaseCommitSinkFunction",
            "org.apache.flink.streaming.api.functions.sink.filesystem.StreamingFileSink", "StreamingFileSink",
            "org.apache.flink.streaming.api.functions.sink.filesystem.legacy.StreamingFileSink", "StreamingFileSink",
            "org.apache.flink.streaming.runtime.operators.GenericWriteAheadSink", "GenericWriteAheadSink");

    /** The operator of {@code DataStream#addSink} (the same name on both lines). */
    private static final String STREAM_SINK = "org.apache.flink.streaming.api.operators.StreamSink";

    private LegacySinkCheck() {}

    /**
     * Walks the operators chained after the gate ({@code gateConfig}) within its task, whose head
     * config {@code taskConfig} holds every chained operator's config.
     *
     * @throws LegacyTransactionalSinkException when one of them is a legacy transactional sink
     */
    static void check(StreamConfig gateConfig, StreamConfig taskConfig, ClassLoader cl, String gateName) {
        Map<Integer, StreamConfig> chained;
        List<StreamEdge> first;
        try {
            chained = taskConfig.getTransitiveChainedTaskConfigsWithSelf(cl);
            first = gateConfig.getChainedOutputs(cl);
        } catch (RuntimeException | LinkageError e) {
            LOG.warn("bluegreen gate ({}): cannot read the operators chained after the gate, legacy sinks not checked", gateName, e);
            return;
        }
        Deque<StreamEdge> todo = new ArrayDeque<>(first);
        Set<Integer> seen = new HashSet<>();
        while (!todo.isEmpty()) {
            StreamEdge edge = todo.pop();
            StreamConfig c = chained.get(edge.getTargetId());
            if (c == null || !seen.add(edge.getTargetId())) {
                continue;
            }
            checkOperator(c, cl, gateName);
            try {
                todo.addAll(c.getChainedOutputs(cl));
            } catch (RuntimeException | LinkageError e) {
                LOG.warn("bluegreen gate ({}): cannot read the outputs of {}, legacy sinks after it not checked", gateName, c.getOperatorName(), e);
            }
        }
    }

    private static void checkOperator(StreamConfig c, ClassLoader cl, String gateName) {
        Object operator = null;
        Function fn = null;
        try {
            StreamOperatorFactory<?> factory = c.getStreamOperatorFactory(cl);
            if (factory instanceof UdfStreamOperatorFactory) {
                fn = ((UdfStreamOperatorFactory<?>) factory).getUserFunction();
            }
            if (factory instanceof SimpleOperatorFactory) {
                operator = ((SimpleOperatorFactory<?>) factory).getOperator();
                if (fn == null && operator instanceof AbstractUdfStreamOperator) {
                    fn = ((AbstractUdfStreamOperator<?, ?>) operator).getUserFunction();
                }
            }
        } catch (RuntimeException | LinkageError e) {
            LOG.warn("bluegreen gate ({}): cannot read the operator {} chained after the gate, not checked", gateName, c.getOperatorName(), e);
            return;
        }
        for (Object o : new Object[] {fn, operator}) {
            String refused = refused(o);
            if (refused != null) {
                throw new LegacyTransactionalSinkException(message(o.getClass().getName(), refused, c.getOperatorName(), gateName));
            }
        }
        if (fn != null && operator != null && STREAM_SINK.equals(operator.getClass().getName())
                && (fn instanceof CheckpointedFunction || fn instanceof CheckpointListener)) {
            LOG.warn("bluegreen gate ({}): the legacy SinkFunction {} (operator \"{}\") chained after the gate keeps state of its own "
                    + "(CheckpointedFunction or CheckpointListener), which blue and green both restore from the savepoint: the gate "
                    + "does not isolate it per color. If it holds records, files or transactions to commit, use a Sink V2 sink "
                    + "through BlueGreenSinks.sinkTo(stream, gate, sink, uid) or BlueGreenSinks.gated(sink, gate) instead "
                    + "(docs/jvm.md, \"Legacy SinkFunctions\").",
                    gateName, fn.getClass().getName(), c.getOperatorName());
        }
    }

    /** The refused class {@code o} extends, or null. */
    static String refused(Object o) {
        if (o == null) {
            return null;
        }
        for (Class<?> k = o.getClass(); k != null; k = k.getSuperclass()) {
            String r = REFUSED.get(k.getName());
            if (r != null) {
                return r;
            }
        }
        return null;
    }

    static String message(String className, String kind, String operatorName, String gateName) {
        String instead;
        switch (kind) {
            case "StreamingFileSink":
                instead = "a FileSink (BlueGreenSinks.rowFormat or BlueGreenSinks.bulkFormat)";
                break;
            case "GenericWriteAheadSink":
                instead = "a Sink V2 sink with a committer";
                break;
            default:
                instead = "KafkaSink (EXACTLY_ONCE, setTransactionalIdPrefix(BlueGreenSinks.transactionalIdPrefix(base, color))) "
                        + "for the legacy FlinkKafkaProducer, or your own transactional sink as a Sink V2 sink with a committer "
                        + "(SupportsCommitter)";
                break;
        }
        return "bluegreen gate (" + gateName + "): the legacy sink " + className + " (a " + kind + ", operator \"" + operatorName
                + "\") is chained after the gate operator. It is not isolated per color: its pending transactions, files or records are "
                + "in its own operator state, which green restores from blue's savepoint and commits or aborts while blue still "
                + "writes. Refused. Use a Sink V2 sink through BlueGreenSinks.sinkTo(stream, gate, sink, uid) or "
                + "stream.sinkTo(BlueGreenSinks.gated(sink, gate)), which isolate its state and committables per color: "
                + instead + ". See docs/jvm.md, \"Legacy SinkFunctions\".";
    }
}
