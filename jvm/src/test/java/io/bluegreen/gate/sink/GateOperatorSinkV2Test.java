package io.bluegreen.gate.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.bluegreen.gate.Color;
import io.bluegreen.gate.CoordinationState;
import io.bluegreen.gate.GateProcessFunction;
import io.bluegreen.gate.GateSinkWrapper;
import io.bluegreen.gate.StaticStateSource;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The gate operator's check for legacy transactional sinks chained after it (LegacySinkCheck) lets
 * Sink V2 sinks through, on both Flink lines (on Flink 2.x there is no legacy sink to find). The
 * legacy SinkFunctions themselves are in LegacySinkFunctionTest (Flink 1.20 only).
 */
final class GateOperatorSinkV2Test {
    static final int N = 3_000;

    /** A bounded job of ids 0..N-1 (event time from the id) at parallelism {@link SinkHandover#P}, restarts off. */
    static StreamExecutionEnvironment env(boolean checkpoints) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(SinkHandover.P);
        if (checkpoints) {
            env.enableCheckpointing(200);
        }
        return env;
    }

    static DataStream<Long> ids(StreamExecutionEnvironment env) {
        return env.fromSequence(0, N - 1).setParallelism(1)
                .assignTimestampsAndWatermarks(WatermarkStrategy.<Long>forMonotonousTimestamps()
                        .withTimestampAssigner((id, ts) -> SinkHandover.eventTime(id))).setParallelism(1)
                .rebalance().map(x -> x);
    }

    /** The active blue gate: it passes everything. */
    static GateProcessFunction<Long> gate() {
        return new GateProcessFunction<>(Color.BLUE, StaticStateSource.of(CoordinationState.initial(Color.BLUE, 0)));
    }

    /** Runs the job; returns null on success, the failure otherwise. */
    static Throwable run(StreamExecutionEnvironment env) throws Exception {
        JobID job = SinkHandover.cluster().submitJob(env.getStreamGraph().getJobGraph()).get(30, TimeUnit.SECONDS).getJobID();
        JobResult r = SinkHandover.cluster().requestJobResult(job).get(120, TimeUnit.SECONDS);
        if (r.isSuccess()) {
            return null;
        }
        return r.getSerializedThrowable().isPresent()
                ? r.getSerializedThrowable().get().deserializeError(GateOperatorSinkV2Test.class.getClassLoader())
                : new AssertionError("job failed without a throwable");
    }

    static void assertEveryIdOnce(List<String> committed) {
        int[] counts = new int[N];
        for (String rec : committed) {
            counts[Integer.parseInt(rec.split(" ")[1])]++;
        }
        for (int i = 0; i < N; i++) {
            assertEquals(1, counts[i], "id " + i + " committed");
        }
    }

    @Test
    @DisplayName("legacy sink check: the gate operator then an isolated transactional Sink V2 sink (BlueGreenSinks.sinkTo) runs; every id committed once")
    void sinkV2AfterGateRuns() throws Exception {
        String run = SinkHandover.run("gate-sinkv2");
        TxBroker broker = TxBroker.create(run);
        StreamExecutionEnvironment env = env(true);
        BlueGreenSinks.sinkTo(ids(env), gate(), new TxBroker.TxSink(run, BlueGreenSinks.transactionalIdPrefix("orders", Color.BLUE), Color.BLUE), "sink");
        Throwable failure = run(env);
        assertTrue(failure == null, "job succeeds: " + failure);
        assertEveryIdOnce(broker.committed());
    }

    @Test
    @DisplayName("legacy sink check: the gate operator, a chained map, then a Sink V2 sink runs; every id committed once")
    void sinkV2AfterGateAndMapRuns() throws Exception {
        String run = SinkHandover.run("gate-map-sinkv2");
        TxBroker broker = TxBroker.create(run);
        StreamExecutionEnvironment env = env(true);
        GateSinkWrapper.gate(ids(env), gate()).map(x -> x)
                .sinkTo(ColorIsolatedSink.wrap(new TxBroker.TxSink(run, BlueGreenSinks.transactionalIdPrefix("orders", Color.BLUE), Color.BLUE),
                        Color.BLUE)).uid("sink").name("sink");
        Throwable failure = run(env);
        assertTrue(failure == null, "job succeeds: " + failure);
        assertEveryIdOnce(broker.committed());
    }
}
