package io.bluegreen.gate.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.bluegreen.gate.Color;
import io.bluegreen.gate.GatedSink;
import io.bluegreen.gate.GatedSinkAccess;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.flink.api.common.serialization.BulkWriter;
import org.apache.flink.api.common.serialization.Encoder;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.connector.file.sink.compactor.FileCompactStrategy;
import org.apache.flink.connector.file.sink.compactor.IdenticalFileCompactor;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.functions.sink.filesystem.PartFileInfo;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.BasePathBucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.CheckpointRollingPolicy;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.DefaultRollingPolicy;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Sinks across a blue -> green handover on a MiniCluster ({@link SinkHandover}): with
 * {@link ColorIsolatedSink} (and per-color settings) every id is committed exactly once and no file
 * is damaged; with the isolation switched off the same handover shows the defect.
 */
public final class SinkIsolationTest {
    static final int N = 12_000;

    /** "COLOR id\n" per record. */
    static final class LineEncoder implements Encoder<Long> {
        private static final long serialVersionUID = 1L;
        private final Color color;

        LineEncoder(Color color) {
            this.color = color;
        }

        @Override
        public void encode(Long id, OutputStream out) throws IOException {
            out.write((color.wire() + " " + id + "\n").getBytes(StandardCharsets.UTF_8));
        }
    }

    /** A bulk format writing "COLOR id\n" lines. */
    static final class LineBulkFormat implements BulkWriter.Factory<Long> {
        private static final long serialVersionUID = 1L;
        private final Color color;

        LineBulkFormat(Color color) {
            this.color = color;
        }

        @Override
        public BulkWriter<Long> create(FSDataOutputStream out) {
            return new BulkWriter<>() {
                @Override
                public void addElement(Long id) throws IOException {
                    out.write((color.wire() + " " + id + "\n").getBytes(StandardCharsets.UTF_8));
                }

                @Override
                public void flush() throws IOException {
                    out.flush();
                }

                @Override
                public void finish() throws IOException {
                    out.flush();
                }
            };
        }
    }

    /** Overrides shouldRollOnCheckpoint: a CheckpointRollingPolicy that does not roll on every checkpoint. */
    static final class SometimesOnCheckpoint extends CheckpointRollingPolicy<Long, String> {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean shouldRollOnCheckpoint(PartFileInfo<String> partFileState) {
            return partFileState.getLastUpdateTime() < 0;
        }

        @Override
        public boolean shouldRollOnEvent(PartFileInfo<String> partFileState, Long element) {
            return false;
        }

        @Override
        public boolean shouldRollOnProcessingTime(PartFileInfo<String> partFileState, long currentTime) {
            return false;
        }
    }

    /**
     * A sink object implementing {@code Sink} plus {@code capabilities}, for checks of what
     * {@link ColorIsolatedSink#wrap} decides from the interfaces alone; calling it fails.
     */
    @SuppressWarnings("unchecked")
    static Sink<Long> sinkWith(Class<?>... capabilities) {
        Class<?>[] all = new Class<?>[capabilities.length + 1];
        all[0] = Sink.class;
        System.arraycopy(capabilities, 0, all, 1, capabilities.length);
        return (Sink<Long>) java.lang.reflect.Proxy.newProxyInstance(SinkIsolationTest.class.getClassLoader(), all, (proxy, m, args) -> {
            if (m.getName().equals("toString")) {
                return "sink with " + java.util.Arrays.toString(capabilities);
            }
            throw new AssertionError("wrap must not call " + m);
        });
    }

    static org.apache.flink.core.fs.Path flinkPath(Path p) {
        return new org.apache.flink.core.fs.Path(p.toUri());
    }

    /** A file handover: {@code sinks} writes under out/, the result is read from the committed part files. */
    static SinkHandover.Result fileHandover(String what, java.util.function.BiFunction<Path, Color, Sink<Long>> sinks) throws Exception {
        return fileHandover(what, sinks, SinkHandover.OPERATOR);
    }

    /** The same with the gate placed by {@code placement}. */
    static SinkHandover.Result fileHandover(String what, java.util.function.BiFunction<Path, Color, Sink<Long>> sinks,
            SinkHandover.Placement placement) throws Exception {
        String run = SinkHandover.run(what);
        Path dir = Files.createTempDirectory("bluegreen-" + run);
        Path out = Files.createDirectories(dir.resolve("out"));
        Path sp = Files.createDirectories(dir.resolve("savepoints"));
        SinkHandover.Result r = SinkHandover.handover(run, N, sp, c -> sinks.apply(out, c), () -> SinkHandover.readFiles(out), placement);
        System.out.println("     " + what + ": " + r);
        if (!r.clean()) {
            System.out.println("     files: " + SinkHandover.listing(out));
        }
        return r;
    }

    @Test
    @DisplayName("sink isolation: wrap refuses FileSinks that cannot survive a handover, naming the fix")
    void wrapRefusesFileSinksThatCannotSurviveHandover() throws Exception {
        org.apache.flink.core.fs.Path p = new org.apache.flink.core.fs.Path("/tmp/bluegreen-never-written");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ColorIsolatedSink.wrap(FileSink.forRowFormat(p, new LineEncoder(Color.BLUE)).build(), Color.BLUE));
        assertTrue(e.getMessage().contains("OnCheckpointRollingPolicy") && e.getMessage().contains("BlueGreenSinks.rollOnCheckpoint"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ColorIsolatedSink.wrap(
                FileSink.forRowFormat(p, new LineEncoder(Color.BLUE)).withRollingPolicy(new SometimesOnCheckpoint()).build(), Color.BLUE));
        assertTrue(e.getMessage().contains("does not roll on every checkpoint"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ColorIsolatedSink.wrap(
                BlueGreenSinks.rowFormat(p, new LineEncoder(Color.BLUE), Color.BLUE)
                        .enableCompact(FileCompactStrategy.Builder.newBuilder().enableCompactionOnCheckpoint(1).build(), new IdenticalFileCompactor())
                        .build(), Color.BLUE));
        assertTrue(e.getMessage().contains("compaction"), e.getMessage());
        // Accepted: OnCheckpointRollingPolicy, the default policy made to roll on checkpoint, a bulk format.
        assertTrue(ColorIsolatedSink.wrap(BlueGreenSinks.rowFormat(p, new LineEncoder(Color.BLUE), Color.BLUE).build(), Color.BLUE)
                instanceof ColorIsolatedSink, "row format rolling on checkpoint");
        assertTrue(ColorIsolatedSink.wrap(FileSink.forRowFormat(p, new LineEncoder(Color.GREEN))
                .withRollingPolicy(BlueGreenSinks.rollOnCheckpoint(DefaultRollingPolicy.builder().build())).build(), Color.GREEN)
                instanceof ColorIsolatedSink, "default policy made to roll on checkpoint");
        assertTrue(ColorIsolatedSink.wrap(BlueGreenSinks.bulkFormat(p, new LineBulkFormat(Color.GREEN), Color.GREEN).build(), Color.GREEN)
                instanceof ColorIsolatedSink, "bulk format");
    }

    @Test
    @DisplayName("sink isolation: wrap keeps exactly the sink's capabilities and refuses extra topologies")
    void wrapKeepsExactlySinkSCapabilitiesRefuses() throws Exception {
        Sink<Long> plain = sinkWith();
        assertTrue(ColorIsolatedSink.wrap(plain, Color.BLUE) == plain, "nothing to isolate: returned as is");
        Sink<Long> w = ColorIsolatedSink.wrap(sinkWith(org.apache.flink.api.connector.sink2.SupportsWriterState.class), Color.BLUE);
        assertTrue(w instanceof org.apache.flink.api.connector.sink2.SupportsWriterState
                && !(w instanceof org.apache.flink.api.connector.sink2.SupportsCommitter), "writer state only: " + w.getClass());
        w = ColorIsolatedSink.wrap(sinkWith(org.apache.flink.api.connector.sink2.SupportsCommitter.class), Color.GREEN);
        assertTrue(w instanceof org.apache.flink.api.connector.sink2.SupportsCommitter
                && !(w instanceof org.apache.flink.api.connector.sink2.SupportsWriterState), "committer only: " + w.getClass());
        w = ColorIsolatedSink.wrap(sinkWith(org.apache.flink.api.connector.sink2.SupportsWriterState.class,
                org.apache.flink.api.connector.sink2.SupportsCommitter.class), Color.GREEN);
        assertTrue(w instanceof org.apache.flink.api.connector.sink2.SupportsCommitter
                && w instanceof org.apache.flink.api.connector.sink2.SupportsWriterState, "both: " + w.getClass());
        for (Class<?> topology : new Class<?>[] {org.apache.flink.streaming.api.connector.sink2.SupportsPreWriteTopology.class,
                org.apache.flink.streaming.api.connector.sink2.SupportsPreCommitTopology.class,
                org.apache.flink.streaming.api.connector.sink2.SupportsPostCommitTopology.class}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ColorIsolatedSink.wrap(
                    sinkWith(org.apache.flink.api.connector.sink2.SupportsCommitter.class, topology), Color.BLUE));
            assertTrue(e.getMessage().contains(topology.getSimpleName()), e.getMessage());
        }
        Sink<Long> once = ColorIsolatedSink.wrap(sinkWith(org.apache.flink.api.connector.sink2.SupportsCommitter.class), Color.BLUE);
        assertThrows(IllegalArgumentException.class, () -> ColorIsolatedSink.wrap(once, Color.BLUE));
    }

    @Test
    @DisplayName("gated sink: wrap always adds writer state, keeps the committer, refuses extra topologies; BlueGreenSinks.gated isolates first")
    void wrapAlwaysAddsWriterStateKeepsCommitter() throws Exception {
        io.bluegreen.gate.GateProcessFunction<Long> gate = new io.bluegreen.gate.GateProcessFunction<>(Color.BLUE,
                io.bluegreen.gate.StaticStateSource.of(SinkHandover.st(0, io.bluegreen.gate.Stage.RUNNING,
                        io.bluegreen.gate.WatermarkStage.WATERMARK_NOT_SET, 0, Color.BLUE)));
        Sink<Long> w = GatedSink.wrap(sinkWith(), gate);
        assertTrue(w instanceof org.apache.flink.api.connector.sink2.SupportsWriterState
                && !(w instanceof org.apache.flink.api.connector.sink2.SupportsCommitter), "stateless sink: writer state for the gate: " + w.getClass());
        w = GatedSink.wrap(sinkWith(org.apache.flink.api.connector.sink2.SupportsWriterState.class,
                org.apache.flink.api.connector.sink2.SupportsCommitter.class), gate);
        assertTrue(w instanceof org.apache.flink.api.connector.sink2.SupportsCommitter
                && w instanceof org.apache.flink.api.connector.sink2.SupportsWriterState, "both: " + w.getClass());
        for (Class<?> topology : new Class<?>[] {org.apache.flink.streaming.api.connector.sink2.SupportsPreWriteTopology.class,
                org.apache.flink.streaming.api.connector.sink2.SupportsPreCommitTopology.class,
                org.apache.flink.streaming.api.connector.sink2.SupportsPostCommitTopology.class}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GatedSink.wrap(sinkWith(topology), gate));
            assertTrue(e.getMessage().contains("GateSinkWrapper.gate"), e.getMessage());
        }
        Sink<Long> once = w;
        assertThrows(IllegalArgumentException.class, () -> GatedSink.wrap(once, gate));
        // FileSink: its pre-commit topology serves compaction only; without compaction it is taken.
        org.apache.flink.core.fs.Path fp = new org.apache.flink.core.fs.Path("/tmp/bluegreen-never-written");
        Sink<Long> files = GatedSink.wrap(FileSink.forRowFormat(fp, new LineEncoder(Color.BLUE)).build(), gate);
        assertTrue(files instanceof org.apache.flink.api.connector.sink2.SupportsCommitter
                && !(files instanceof org.apache.flink.streaming.api.connector.sink2.SupportsPreCommitTopology), "FileSink: " + files.getClass());
        IllegalArgumentException compact = assertThrows(IllegalArgumentException.class, () -> GatedSink.wrap(
                BlueGreenSinks.rowFormat(fp, new LineEncoder(Color.BLUE), Color.BLUE)
                        .enableCompact(FileCompactStrategy.Builder.newBuilder().enableCompactionOnCheckpoint(1).build(), new IdenticalFileCompactor())
                        .build(), gate));
        assertTrue(compact.getMessage().contains("compaction"), compact.getMessage());
        // BlueGreenSinks.gated: the color isolation's refusals apply too (FileSink's default rolling policy).
        org.apache.flink.core.fs.Path p = new org.apache.flink.core.fs.Path("/tmp/bluegreen-never-written");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> BlueGreenSinks.gated(FileSink.forRowFormat(p, new LineEncoder(Color.BLUE)).build(), gate));
        assertTrue(e.getMessage().contains("OnCheckpointRollingPolicy"), e.getMessage());
        Sink<Long> tx = BlueGreenSinks.gated(new TxBroker.TxSink("none", BlueGreenSinks.transactionalIdPrefix("orders", Color.BLUE), Color.BLUE), gate);
        assertTrue(tx instanceof GatedSink && tx instanceof org.apache.flink.api.connector.sink2.SupportsCommitter, "gated, isolated: " + tx.getClass());
    }

    @Test
    @DisplayName("gated sink: state entries round-trip; state of another version is the wrapped sink's own")
    void stateEntriesRoundTripStateAnotherVersion() throws Exception {
        io.bluegreen.gate.GateProcessFunction<Long> gate = new io.bluegreen.gate.GateProcessFunction<>(Color.BLUE,
                io.bluegreen.gate.StaticStateSource.of(SinkHandover.st(0, io.bluegreen.gate.Stage.RUNNING,
                        io.bluegreen.gate.WatermarkStage.WATERMARK_NOT_SET, 0, Color.BLUE)));
        TxBroker.TxSink inner = new TxBroker.TxSink("none", "p-blue", Color.BLUE);
        @SuppressWarnings("unchecked")
        SimpleVersionedSerializer<GatedSink.State> ser = ((GatedSink<Long>) GatedSink.wrap(inner, gate)).getWriterStateSerializer();
        assertEquals(GatedSink.STATE_VERSION, ser.getVersion(), "version");
        SimpleVersionedSerializer<TxBroker.TxState> innerSer = inner.getWriterStateSerializer();
        // Written by the same sink before the gate moved into it: handed to the wrapped sink.
        GatedSink.State legacy = ser.deserialize(innerSer.getVersion(), innerSer.serialize(new TxBroker.TxState("p-blue")));
        assertEquals("p-blue", ((TxBroker.TxState) GatedSinkAccess.inner(legacy)).prefix, "legacy state");
        GatedSink.State again = ser.deserialize(GatedSink.STATE_VERSION, ser.serialize(legacy));
        assertEquals("p-blue", ((TxBroker.TxState) GatedSinkAccess.inner(again)).prefix, "wrapped state round trip");
        GatedSink.State max = ser.deserialize(GatedSink.STATE_VERSION, ser.serialize(GatedSinkAccess.maxPassed(1234L)));
        assertEquals(1234L, GatedSinkAccess.maxPassedOf(max), "max passed");
        byte[] rec = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 42};
        GatedSink.State held = ser.deserialize(GatedSink.STATE_VERSION, ser.serialize(GatedSinkAccess.held(rec)));
        assertTrue(java.util.Arrays.equals(rec, GatedSinkAccess.heldOf(held)), "held record");
        assertThrows(IOException.class, () -> ser.deserialize(GatedSink.STATE_VERSION, new byte[] {9}));
    }

    @Test
    @DisplayName("sink isolation: wrap refuses a transactional sink whose id prefix is shared by both colors")
    void wrapRefusesTransactionalSinkWhoseIdPrefix() throws Exception {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ColorIsolatedSink.wrap(new TxBroker.TxSink("none", "orders", Color.GREEN), Color.GREEN));
        assertTrue(e.getMessage().contains("BlueGreenSinks.transactionalIdPrefix"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ColorIsolatedSink.wrap(
                new TxBroker.TxSink("none", BlueGreenSinks.transactionalIdPrefix("orders", Color.BLUE), Color.GREEN), Color.GREEN));
        assertTrue(ColorIsolatedSink.wrap(new TxBroker.TxSink("none", BlueGreenSinks.transactionalIdPrefix("orders", Color.GREEN), Color.GREEN),
                Color.GREEN) instanceof ColorIsolatedSink, "per-color prefix accepted");
    }

    @Test
    @DisplayName("sink isolation: tagged state round-trips; the other color's and untagged state stay raw bytes")
    void taggedStateRoundTripsOtherColorS() throws Exception {
        SimpleVersionedSerializer<TxBroker.TxState> inner = new TxBroker.TxSink("none", "p-blue", Color.BLUE).getWriterStateSerializer();
        ColorTagged.Serializer<TxBroker.TxState> blue = new ColorTagged.Serializer<>(inner, Color.BLUE);
        ColorTagged.Serializer<TxBroker.TxState> green = new ColorTagged.Serializer<>(inner, Color.GREEN);
        byte[] bytes = blue.serialize(ColorTagged.own(Color.BLUE, new TxBroker.TxState("p-blue")));
        ColorTagged<TxBroker.TxState> mine = blue.deserialize(ColorTagged.Serializer.VERSION, bytes);
        assertTrue(mine.belongsTo(Color.BLUE), "own state");
        assertEquals("p-blue", mine.value().prefix, "restored value");
        ColorTagged<TxBroker.TxState> theirs = green.deserialize(ColorTagged.Serializer.VERSION, bytes);
        assertTrue(!theirs.belongsTo(Color.GREEN) && theirs.color() == Color.BLUE, "blue's state in green: " + theirs);
        assertThrows(IllegalStateException.class, theirs::value);
        assertTrue(java.util.Arrays.equals(bytes, green.serialize(theirs)), "foreign state re-serialized unchanged");
        ColorTagged<TxBroker.TxState> legacy = green.deserialize(inner.getVersion(), inner.serialize(new TxBroker.TxState("x")));
        assertTrue(legacy.color() == null && !legacy.belongsTo(Color.GREEN) && !legacy.belongsTo(Color.BLUE), "untagged: " + legacy);
    }

    @Test
    @DisplayName("sink isolation: the committer commits its own color's committables (retries re-tagged) and skips the other color's")
    void committerCommitsOwnColorSCommittablesRetries() throws Exception {
        java.util.List<String> committed = new java.util.ArrayList<>();
        org.apache.flink.api.connector.sink2.Committer<String> inner = new org.apache.flink.api.connector.sink2.Committer<>() {
            @Override
            public void commit(java.util.Collection<CommitRequest<String>> requests) {
                for (CommitRequest<String> r : requests) {
                    committed.add(r.getCommittable());
                    if (r.getCommittable().equals("g2")) {
                        r.updateAndRetryLater("g2-retry");
                    }
                }
            }

            @Override
            public void close() {}
        };
        SimpleVersionedSerializer<String> strings = new TxBroker.StringSerializer<>(x -> x, x -> x);
        ColorTagged.Serializer<String> blueSer = new ColorTagged.Serializer<>(strings, Color.BLUE);
        ColorTagged.Serializer<String> greenSer = new ColorTagged.Serializer<>(strings, Color.GREEN);
        // What green restores from blue's savepoint plus its own: deserialized by green's serializer.
        java.util.List<ColorTagged<String>> restored = new java.util.ArrayList<>();
        for (String b : new String[] {"b1", "b2"}) {
            restored.add(greenSer.deserialize(ColorTagged.Serializer.VERSION, blueSer.serialize(ColorTagged.own(Color.BLUE, b))));
        }
        for (String g : new String[] {"g1", "g2"}) {
            restored.add(greenSer.deserialize(ColorTagged.Serializer.VERSION, greenSer.serialize(ColorTagged.own(Color.GREEN, g))));
        }
        java.util.List<ColorTagged<String>> retried = new java.util.ArrayList<>();
        java.util.List<org.apache.flink.api.connector.sink2.Committer.CommitRequest<ColorTagged<String>>> requests = new java.util.ArrayList<>();
        for (ColorTagged<String> t : restored) {
            requests.add(new org.apache.flink.api.connector.sink2.Committer.CommitRequest<>() {
                @Override public ColorTagged<String> getCommittable() { return t; }
                @Override public int getNumberOfRetries() { return 0; }
                @Override public void signalFailedWithKnownReason(Throwable x) { throw new AssertionError(x); }
                @Override public void signalFailedWithUnknownReason(Throwable x) { throw new AssertionError(x); }
                @Override public void retryLater() { throw new AssertionError("retryLater"); }
                @Override public void updateAndRetryLater(ColorTagged<String> c) { retried.add(c); }
                @Override public void signalAlreadyCommitted() { throw new AssertionError("signalAlreadyCommitted"); }
            });
        }
        new ColorIsolatedSink.IsolatedCommitter<>(inner, Color.GREEN, 0).commit(requests);
        assertEquals(java.util.List.of("g1", "g2"), committed, "committed by green");
        assertEquals(1, retried.size(), "retries");
        assertTrue(retried.get(0).belongsTo(Color.GREEN) && retried.get(0).value().equals("g2-retry"), "retry re-tagged: " + retried);
    }

    @Test
    @DisplayName("sink isolation: a color restarting from its own checkpoint commits its own restored committables (commit failure mid-run: 0/0)")
    void colorRestartingFromOwnCheckpointCommitsOwn() throws Exception {
        String run = SinkHandover.run("tx-own-recovery");
        TxBroker broker = TxBroker.create(run);
        int n = 6_000;
        // The committer fails once mid-run: the task restarts from the checkpoint whose
        // committables it did not commit, restores them and must commit them.
        broker.failOneCommitAfter(n / 3);
        io.bluegreen.gate.ManualStateSource.channel(run).publish(SinkHandover.st(0, io.bluegreen.gate.Stage.RUNNING,
                io.bluegreen.gate.WatermarkStage.WATERMARK_NOT_SET, 0, Color.BLUE));
        org.apache.flink.configuration.Configuration conf = new org.apache.flink.configuration.Configuration();
        conf.set(org.apache.flink.configuration.RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(org.apache.flink.configuration.RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 1);
        conf.set(org.apache.flink.configuration.RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, java.time.Duration.ofMillis(100));
        org.apache.flink.streaming.api.environment.StreamExecutionEnvironment env =
                org.apache.flink.streaming.api.environment.StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(SinkHandover.P);
        env.enableCheckpointing(300);
        org.apache.flink.streaming.api.datastream.DataStream<Long> s = env.fromSequence(0, n - 1).setParallelism(1)
                .assignTimestampsAndWatermarks(org.apache.flink.api.common.eventtime.WatermarkStrategy.<Long>forMonotonousTimestamps()
                        .withTimestampAssigner((id, ts) -> SinkHandover.eventTime(id))).setParallelism(1)
                .map(new SinkHandover.Pacer(3)).setParallelism(1)
                .rebalance().map(x -> x);
        BlueGreenSinks.sinkTo(s, new io.bluegreen.gate.GateProcessFunction<Long>(Color.BLUE, new io.bluegreen.gate.ManualStateSource(run)),
                new TxBroker.TxSink(run, BlueGreenSinks.transactionalIdPrefix("orders", Color.BLUE), Color.BLUE), "sink");
        org.apache.flink.runtime.minicluster.MiniCluster mc = SinkHandover.cluster();
        org.apache.flink.api.common.JobID job = mc.submitJob(env.getStreamGraph().getJobGraph())
                .get(30, java.util.concurrent.TimeUnit.SECONDS).getJobID();
        org.apache.flink.runtime.jobmaster.JobResult res = mc.requestJobResult(job).get(120, java.util.concurrent.TimeUnit.SECONDS);
        assertTrue(res.isSuccess(), "job succeeds after one restart: " + res.getSerializedThrowable());
        assertTrue(broker.commitFailed(), "the commit failure was injected");
        int[] counts = new int[n];
        for (String rec : broker.committed()) {
            counts[Integer.parseInt(rec.split(" ")[1])]++;
        }
        long dup = 0, lost = 0;
        for (int c : counts) {
            dup += Math.max(0, c - 1);
            lost += c == 0 ? 1 : 0;
        }
        System.out.println("     " + n + " ids, one commit failure after " + n / 3 + " committed: " + dup + " duplicates, " + lost
                + " losses; broker: " + broker.fencing());
        assertTrue(dup == 0 && lost == 0, dup + " duplicates, " + lost + " losses");
    }

    @Test
    @DisplayName("sink isolation handover: FileSink row format, default rolling policy, isolation off: damaged files or lost records")
    void filesinkRowFormatDefaultRollingPolicyIsolation() throws Exception {
        SinkHandover.Result r = fileHandover("row-default-raw", (out, c) -> FileSink.forRowFormat(flinkPath(out), new LineEncoder(c))
                .withBucketAssigner(new BasePathBucketAssigner<>()).build());
        assertTrue(!r.clean(), "the defect must show: " + r);
    }

    @Test
    @DisplayName("sink isolation handover: FileSink row format, OnCheckpointRollingPolicy, isolated: 0 duplicates, 0 losses, no damaged file")
    void filesinkRowFormatOnCheckpointRollingPolicyIsolated0Duplicates() throws Exception {
        SinkHandover.Result r = fileHandover("row-oncheckpoint", (out, c) -> ColorIsolatedSink.wrap(
                BlueGreenSinks.rowFormat(flinkPath(out), new LineEncoder(c), c).withBucketAssigner(new BasePathBucketAssigner<>()).build(), c));
        assertTrue(r.clean(), "exactly once, undamaged: " + r);
    }

    @Test
    @DisplayName("sink isolation handover: FileSink row format, default policy made to roll on checkpoint (2 KB parts), isolated: 0/0, no damaged file")
    void filesinkRowFormatDefaultPolicyMadeRoll() throws Exception {
        SinkHandover.Result r = fileHandover("row-rollOnCheckpoint", (out, c) -> ColorIsolatedSink.wrap(
                FileSink.forRowFormat(flinkPath(out), new LineEncoder(c)).withBucketAssigner(new BasePathBucketAssigner<>())
                        .withRollingPolicy(BlueGreenSinks.rollOnCheckpoint(DefaultRollingPolicy.builder().withMaxPartSize(
                                org.apache.flink.configuration.MemorySize.parse("2kb")).build()))
                        .withOutputFileConfig(BlueGreenSinks.outputFileConfig("part", c)).build(), c));
        assertTrue(r.clean(), "exactly once, undamaged: " + r);
    }

    @Test
    @DisplayName("sink isolation handover: FileSink row format, OnCheckpointRollingPolicy, isolation off: also 0/0 (rolling on checkpoint is what keeps FileSink safe)")
    void filesinkRowFormatOnCheckpointRollingPolicyIsolationOffAlso() throws Exception {
        SinkHandover.Result r = fileHandover("row-oncheckpoint-raw", (out, c) -> FileSink.forRowFormat(flinkPath(out), new LineEncoder(c))
                .withRollingPolicy(OnCheckpointRollingPolicy.build()).withBucketAssigner(new BasePathBucketAssigner<>()).build());
        assertTrue(r.clean(), "exactly once, undamaged: " + r);
    }

    @Test
    @DisplayName("sink isolation handover: FileSink bulk format, isolated: 0 duplicates, 0 losses, no damaged file")
    void filesinkBulkFormatIsolated0Duplicates0() throws Exception {
        SinkHandover.Result r = fileHandover("bulk", (out, c) -> ColorIsolatedSink.wrap(
                BlueGreenSinks.bulkFormat(flinkPath(out), new LineBulkFormat(c), c).withBucketAssigner(new BasePathBucketAssigner<>()).build(), c));
        assertTrue(r.clean(), "exactly once, undamaged: " + r);
    }

    @Test
    @DisplayName("sink isolation handover (gate in the sink, BlueGreenSinks.gated): FileSink row format, OnCheckpointRollingPolicy: 0/0, no damaged file")
    void gatedFileSinkRowFormatOnCheckpoint() throws Exception {
        SinkHandover.Result r = fileHandover("row-oncheckpoint-gated", (out, c) -> BlueGreenSinks.rowFormat(flinkPath(out), new LineEncoder(c), c)
                .withBucketAssigner(new BasePathBucketAssigner<>()).build(), SinkHandover.GATED);
        assertTrue(r.clean(), "exactly once, undamaged: " + r);
    }

    @Test
    @DisplayName("sink isolation handover (gate in the sink, BlueGreenSinks.gated): transactional sink (Kafka semantics), per-color prefixes: 0/0, nobody fenced")
    void gatedTransactionalSinkPerColorPrefixes() throws Exception {
        TxBroker broker = TxBroker.create(SinkHandover.run("tx-gated"));
        SinkHandover.Result r = txHandover(broker, false, true, SinkHandover.GATED);
        assertTrue(r.clean(), "exactly once: " + r);
        assertEquals(0, broker.fenced(), "producers fenced (" + broker.fencing() + ")");
        assertEquals(0, broker.foreignCommits(), "transactions committed by the other color's committer (" + broker.fencing() + ")");
    }

    @Test
    @DisplayName("sink isolation handover (gate in the sink), isolation off (one shared prefix): green fences blue, records lost")
    void gatedTransactionalSinkSharedPrefixFenced() throws Exception {
        TxBroker broker = TxBroker.create(SinkHandover.run("tx-shared-in-sink"));
        SinkHandover.Result r = txHandover(broker, false, false, SinkHandover.IN_SINK);
        assertTrue(!r.clean() && r.losses > 0 && broker.fenced() > 0, "the defect must show: " + r + "; " + broker.fencing());
    }

    @Test
    @DisplayName("sink isolation handover: transactional sink (Kafka semantics), isolated, per-color prefixes: 0/0, nobody fenced")
    void transactionalSinkKafkaSemanticsIsolatedPerColor() throws Exception {
        TxBroker broker = TxBroker.create(SinkHandover.run("tx-isolated"));
        SinkHandover.Result r = txHandover(broker, true, true);
        assertTrue(r.clean(), "exactly once: " + r);
        assertEquals(0, broker.fenced(), "producers fenced (" + broker.fencing() + ")");
        assertEquals(0, broker.foreignCommits(), "transactions committed by the other color's committer (" + broker.fencing() + ")");
    }

    @Test
    @DisplayName("sink isolation handover: transactional sink, isolation off (one shared prefix): green fences blue, records lost")
    void transactionalSinkIsolationOffOneSharedPrefix() throws Exception {
        TxBroker broker = TxBroker.create(SinkHandover.run("tx-shared"));
        SinkHandover.Result r = txHandover(broker, false, false);
        assertTrue(!r.clean() && r.losses > 0 && broker.fenced() > 0, "the defect must show: " + r + "; " + broker.fencing());
    }

    @Test
    @DisplayName("sink isolation handover: transactional sink, per-color prefixes without the wrapper: green still aborts blue's transactions")
    void transactionalSinkPerColorPrefixesWithoutWrapper() throws Exception {
        TxBroker broker = TxBroker.create(SinkHandover.run("tx-prefix-only"));
        SinkHandover.Result r = txHandover(broker, false, true);
        assertTrue(!r.clean() && r.losses > 0 && broker.fenced() > 0, "the defect must show: " + r + "; " + broker.fencing());
    }

    /** A handover through the broker-backed sink; {@code broker}'s name is the run's. */
    static SinkHandover.Result txHandover(TxBroker broker, boolean isolate, boolean perColorPrefix) throws Exception {
        return txHandover(broker, isolate, perColorPrefix, SinkHandover.OPERATOR);
    }

    /**
     * The same with the gate placed by {@code placement}; with {@link SinkHandover#GATED} the sink is
     * given raw (BlueGreenSinks.gated isolates it), so {@code isolate} must be false there.
     */
    static SinkHandover.Result txHandover(TxBroker broker, boolean isolate, boolean perColorPrefix, SinkHandover.Placement placement)
            throws Exception {
        String run = broker.name;
        Path sp = Files.createTempDirectory("bluegreen-" + run);
        SinkHandover.Result r = SinkHandover.handover(run, N, sp, c -> {
            String prefix = perColorPrefix ? BlueGreenSinks.transactionalIdPrefix("orders", c) : "orders";
            Sink<Long> sink = new TxBroker.TxSink(run, prefix, c);
            return isolate ? ColorIsolatedSink.wrap(sink, c) : sink;
        }, () -> {
            SinkHandover.Committed c = new SinkHandover.Committed();
            c.records.addAll(broker.committed());
            return c;
        }, placement);
        System.out.println("     " + run + ": " + r + "; broker: " + broker.fencing());
        return r;
    }
}
