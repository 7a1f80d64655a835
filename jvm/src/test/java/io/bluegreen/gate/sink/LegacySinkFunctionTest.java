package io.bluegreen.gate.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.bluegreen.gate.GateSinkWrapper;
import io.bluegreen.gate.LegacyTransactionalSinkException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.common.typeutils.base.VoidSerializer;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.SinkFunction;
import org.apache.flink.streaming.api.functions.sink.TwoPhaseCommitSinkFunction;
import org.apache.flink.streaming.api.functions.sink.filesystem.StreamingFileSink;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Legacy SinkFunctions ({@code DataStream#addSink}, Flink 1.20 only: this file is left out of the
 * flink2 build, jvm/pom.xml) behind the gate operator: a transactional one chained after the gate
 * fails the job at start, before it restores any state, naming its class and what to use instead;
 * a plain one keeps working.
 */
@SuppressWarnings("deprecation") // SinkFunction, TwoPhaseCommitSinkFunction and StreamingFileSink are deprecated in 1.20
final class LegacySinkFunctionTest {
    static final AtomicBoolean TX_STATE_INITIALIZED = new AtomicBoolean();
    static final AtomicBoolean TX_INVOKED = new AtomicBoolean();
    static final AtomicLong PLAIN_RECEIVED = new AtomicLong();

    /** A two-phase-commit sink function that records whether it ever restored its state or got a record. */
    static final class TxFunction extends TwoPhaseCommitSinkFunction<Long, String, Void> {
        private static final long serialVersionUID = 1L;

        TxFunction() {
            super(StringSerializer.INSTANCE, VoidSerializer.INSTANCE);
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            TX_STATE_INITIALIZED.set(true);
            super.initializeState(context);
        }

        @Override
        protected void invoke(String transaction, Long value, Context context) {
            TX_INVOKED.set(true);
        }

        @Override
        protected String beginTransaction() {
            return "tx";
        }

        @Override
        protected void preCommit(String transaction) {}

        @Override
        protected void commit(String transaction) {}

        @Override
        protected void abort(String transaction) {}
    }

    /** A plain, stateless sink function: counts what it receives. */
    static final class PlainFunction implements SinkFunction<Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public void invoke(Long value, Context context) {
            PLAIN_RECEIVED.incrementAndGet();
        }
    }

    static LegacyTransactionalSinkException refusal(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof LegacyTransactionalSinkException) {
                return (LegacyTransactionalSinkException) t;
            }
        }
        return null;
    }

    static void assertRefused(StreamExecutionEnvironment env, Class<?> sinkClass, String kind, String instead) throws Exception {
        long start = System.nanoTime();
        Throwable failure = GateOperatorSinkV2Test.run(env);
        assertNotNull(failure, "the job must fail");
        LegacyTransactionalSinkException e = refusal(failure);
        assertNotNull(e, "fails with LegacyTransactionalSinkException: " + failure);
        String m = e.getMessage();
        System.out.println("     refused in " + (System.nanoTime() - start) / 1_000_000 + " ms: " + m);
        assertTrue(m.contains(sinkClass.getName()), "names the sink's class: " + m);
        assertTrue(m.contains("a " + kind), "names what it is: " + m);
        assertTrue(m.contains("BlueGreenSinks.sinkTo(stream, gate, sink, uid)"), "says what to use instead: " + m);
        assertTrue(m.contains(instead), "names the Sink V2 replacement: " + m);
    }

    @Test
    @DisplayName("legacy sink check (Flink 1.20): a TwoPhaseCommitSinkFunction chained after the gate fails the job at start, before it restores state or gets a record")
    void twoPhaseCommitAfterGateRefused() throws Exception {
        TX_STATE_INITIALIZED.set(false);
        TX_INVOKED.set(false);
        StreamExecutionEnvironment env = GateOperatorSinkV2Test.env(false);
        GateSinkWrapper.gate(GateOperatorSinkV2Test.ids(env), GateOperatorSinkV2Test.gate()).addSink(new TxFunction()).uid("sink").name("sink");
        assertRefused(env, TxFunction.class, "TwoPhaseCommitSinkFunction", "KafkaSink");
        assertFalse(TX_STATE_INITIALIZED.get(), "the 2PC function never restored (so never committed or aborted) its state");
        assertFalse(TX_INVOKED.get(), "the 2PC function got no record");
    }

    @Test
    @DisplayName("legacy sink check (Flink 1.20): a TwoPhaseCommitSinkFunction behind the gate and a chained map is refused too")
    void twoPhaseCommitAfterGateAndMapRefused() throws Exception {
        TX_STATE_INITIALIZED.set(false);
        StreamExecutionEnvironment env = GateOperatorSinkV2Test.env(false);
        GateSinkWrapper.gate(GateOperatorSinkV2Test.ids(env), GateOperatorSinkV2Test.gate()).map(x -> x).addSink(new TxFunction())
                .uid("sink").name("sink");
        assertRefused(env, TxFunction.class, "TwoPhaseCommitSinkFunction", "KafkaSink");
        assertFalse(TX_STATE_INITIALIZED.get(), "the 2PC function never restored its state");
    }

    @Test
    @DisplayName("legacy sink check (Flink 1.20): a StreamingFileSink chained after the gate is refused, naming FileSink")
    void streamingFileSinkAfterGateRefused() throws Exception {
        Path dir = Files.createTempDirectory("bluegreen-streaming-file-sink");
        StreamExecutionEnvironment env = GateOperatorSinkV2Test.env(false);
        GateSinkWrapper.gate(GateOperatorSinkV2Test.ids(env), GateOperatorSinkV2Test.gate())
                .addSink(StreamingFileSink.forRowFormat(new org.apache.flink.core.fs.Path(dir.toUri()), new SimpleStringEncoder<Long>()).build())
                .uid("sink").name("sink");
        assertRefused(env, StreamingFileSink.class, "StreamingFileSink", "BlueGreenSinks.rowFormat");
    }

    @Test
    @DisplayName("legacy sink check (Flink 1.20): a plain SinkFunction chained after the gate keeps working; every record arrives")
    void plainSinkFunctionAfterGateRuns() throws Exception {
        PLAIN_RECEIVED.set(0);
        StreamExecutionEnvironment env = GateOperatorSinkV2Test.env(false);
        GateSinkWrapper.gate(GateOperatorSinkV2Test.ids(env), GateOperatorSinkV2Test.gate()).addSink(new PlainFunction()).uid("sink").name("sink");
        Throwable failure = GateOperatorSinkV2Test.run(env);
        assertTrue(failure == null, "job succeeds: " + failure);
        assertEquals(GateOperatorSinkV2Test.N, PLAIN_RECEIVED.get(), "records received");
    }

    @Test
    @DisplayName("legacy sink check (Flink 1.20): a TwoPhaseCommitSinkFunction in another task than the gate (another parallelism) is NOT caught")
    void twoPhaseCommitNotChainedNotCaught() throws Exception {
        TX_STATE_INITIALIZED.set(false);
        StreamExecutionEnvironment env = GateOperatorSinkV2Test.env(false);
        GateSinkWrapper.gate(GateOperatorSinkV2Test.ids(env), GateOperatorSinkV2Test.gate()).addSink(new TxFunction()).setParallelism(1)
                .uid("sink").name("sink");
        Throwable failure = GateOperatorSinkV2Test.run(env);
        assertTrue(failure == null, "the documented gap: the job runs: " + failure);
        assertTrue(TX_STATE_INITIALIZED.get(), "the 2PC function ran");
    }
}
