package io.bluegreen.gate.sink;

import io.bluegreen.gate.Color;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * An in-memory transactional "broker" with Kafka's transaction semantics, living in the test JVM
 * (static, so the MiniCluster's tasks reach it by name), and {@link TxSink}, a Sink V2 that uses it
 * the way Flink's KafkaSink (exactly-once) uses Kafka:
 * <ul>
 *   <li>transactional ids {@code <prefix>-<subtask>-<checkpointId>}; a writer opens the id of the
 *       next checkpoint after each snapshot;</li>
 *   <li>{@code initTransactions(id)} bumps the id's producer epoch, fencing the producer that held it,
 *       and aborts the id's open transaction;</li>
 *   <li>a writer starting (fresh or restored) aborts the lingering transactions above the restored
 *       checkpoint, probing ids upward until one was never used, for its own prefix and for every
 *       prefix found in its restored state (as KafkaWriter does);</li>
 *   <li>the committer commits on notifyCheckpointComplete with the epoch the writer recorded; a
 *       fenced or aborted transaction fails the request with a known reason (logged, the records are
 *       lost: KafkaCommitter's behaviour); a repeated commit of a committed transaction is a no-op.</li>
 * </ul>
 */
final class TxBroker {
    static final Map<String, TxBroker> BROKERS = new ConcurrentHashMap<>();

    /** One transactional id's producer epoch and open transaction. */
    private static final class Txn {
        int epoch;
        List<String> open = new ArrayList<>();
        int committedEpoch = -1;
    }

    final String name;
    private final Map<String, Txn> ids = new HashMap<>();
    private final List<String> committed = new ArrayList<>();
    private int fenced;
    private int abortedRecords;
    private int foreignCommits;
    private int failOneCommitAfter = -1;

    private TxBroker(String name) {
        this.name = name;
    }

    static TxBroker create(String name) {
        TxBroker b = new TxBroker(name);
        BROKERS.put(name, b);
        return b;
    }

    static TxBroker get(String name) {
        return BROKERS.get(name);
    }

    /** Kafka's initTransactions: bumps the epoch (fencing the previous holder) and aborts the open transaction. */
    synchronized int initTransactions(String id) {
        Txn t = ids.computeIfAbsent(id, k -> new Txn());
        if (t.epoch > 0 && t.committedEpoch != t.epoch) {
            fenced++;
            abortedRecords += t.open.size();
        }
        t.open = new ArrayList<>();
        t.epoch++;
        return t.epoch;
    }

    /** Makes the first commit once {@code records} are committed fail (the committer throws: a task failure). */
    synchronized void failOneCommitAfter(int records) {
        failOneCommitAfter = records;
    }

    /** Whether the commit failure armed by {@link #failOneCommitAfter} happened. */
    synchronized boolean commitFailed() {
        return failOneCommitAfter == -2;
    }

    private synchronized void maybeFailCommit() throws IOException {
        if (failOneCommitAfter >= 0 && committed.size() >= failOneCommitAfter) {
            failOneCommitAfter = -2;
            throw new IOException("injected commit failure (test)");
        }
    }

    synchronized boolean used(String id) {
        return ids.containsKey(id);
    }

    synchronized void send(String id, int epoch, String record) {
        Txn t = ids.get(id);
        if (t.epoch != epoch) {
            throw new IllegalStateException("ProducerFencedException: " + id + " epoch " + epoch + " fenced by epoch " + t.epoch);
        }
        t.open.add(record);
    }

    /** Commits {@code id}; {@code committerPrefix} is the prefix of the sink whose committer commits it. */
    synchronized void commit(String id, int epoch, String committerPrefix) {
        Txn t = ids.get(id);
        if (!id.startsWith(committerPrefix + "-")) {
            foreignCommits++;
        }
        if (t.committedEpoch == epoch) {
            return;
        }
        if (t.epoch != epoch) {
            throw new IllegalStateException("ProducerFencedException: cannot commit " + id + " epoch " + epoch + ": fenced by epoch " + t.epoch);
        }
        committed.addAll(t.open);
        t.open = new ArrayList<>();
        t.committedEpoch = epoch;
    }

    /** Committed records ("COLOR id"), in commit order. */
    synchronized List<String> committed() {
        return new ArrayList<>(committed);
    }

    /** Producers fenced while their transaction was open, and the records their aborted transactions held. */
    synchronized String fencing() {
        return fenced + " open transaction(s) fenced and aborted (" + abortedRecords + " records), "
                + foreignCommits + " commit(s) of another prefix's transaction";
    }

    synchronized int fenced() {
        return fenced;
    }

    synchronized int foreignCommits() {
        return foreignCommits;
    }

    // ---- the sink ------------------------------------------------------------------------------

    /** The sink's writer state: its transactional id prefix (as KafkaWriterState). */
    static final class TxState {
        final String prefix;

        TxState(String prefix) {
            this.prefix = prefix;
        }
    }

    /** A prepared transaction: id and the producer epoch that wrote it (as KafkaCommittable). */
    static final class TxCommittable {
        final String id;
        final int epoch;

        TxCommittable(String id, int epoch) {
            this.id = id;
            this.epoch = epoch;
        }
    }

    /**
     * The Kafka-semantics sink; records are written as "COLOR id" with the job's color. It extends
     * DiscardingSink only to compile against Flink 1.20 and 2.x (as HandoverJob's RecordingSink).
     */
    static final class TxSink extends DiscardingSink<Long> implements SupportsWriterState<Long, TxState>, SupportsCommitter<TxCommittable>,
            TransactionalIdPrefixSink {
        private static final long serialVersionUID = 1L;
        private final String broker;
        private final String prefix;
        private final Color color;

        TxSink(String broker, String prefix, Color color) {
            this.broker = broker;
            this.prefix = prefix;
            this.color = color;
        }

        @Override
        public String transactionalIdPrefix() {
            return prefix;
        }

        @Override
        public TxWriter createWriter(WriterInitContext context) {
            return new TxWriter(this, context, List.of());
        }

        @Override
        public TxWriter restoreWriter(WriterInitContext context, Collection<TxState> recovered) {
            return new TxWriter(this, context, recovered);
        }

        @Override
        public SimpleVersionedSerializer<TxState> getWriterStateSerializer() {
            return new StringSerializer<>(s -> s.prefix, TxState::new);
        }

        @Override
        public Committer<TxCommittable> createCommitter(CommitterInitContext context) {
            TxBroker b = get(broker);
            return new Committer<>() {
                @Override
                public void commit(Collection<CommitRequest<TxCommittable>> requests) throws IOException {
                    b.maybeFailCommit();
                    for (CommitRequest<TxCommittable> r : requests) {
                        try {
                            b.commit(r.getCommittable().id, r.getCommittable().epoch, prefix);
                        } catch (IllegalStateException e) {
                            r.signalFailedWithKnownReason(e);
                        }
                    }
                }

                @Override
                public void close() {}
            };
        }

        @Override
        public SimpleVersionedSerializer<TxCommittable> getCommittableSerializer() {
            return new StringSerializer<>(c -> c.id + "@" + c.epoch,
                    s -> new TxCommittable(s.substring(0, s.lastIndexOf('@')), Integer.parseInt(s.substring(s.lastIndexOf('@') + 1))));
        }
    }

    /** KafkaWriter's transaction lifecycle on the broker. */
    static final class TxWriter implements StatefulSinkWriter<Long, TxState>, CommittingSinkWriter<Long, TxCommittable> {
        private final TxBroker broker;
        private final String prefix;
        private final String color;
        private final int subtask;
        private String id;
        private int epoch;
        private int records;

        TxWriter(TxSink sink, WriterInitContext context, Collection<TxState> recovered) {
            this.broker = get(sink.broker);
            this.prefix = sink.prefix;
            this.color = sink.color.wire();
            this.subtask = context.getTaskInfo().getIndexOfThisSubtask();
            long restored = context.getRestoredCheckpointId().orElse(0L);
            Set<String> prefixes = new LinkedHashSet<>();
            prefixes.add(prefix);
            for (TxState s : recovered) {
                prefixes.add(s.prefix);
            }
            for (String p : prefixes) {
                for (long cp = restored + 1; broker.used(p + "-" + subtask + "-" + cp); cp++) {
                    broker.initTransactions(p + "-" + subtask + "-" + cp);
                }
            }
            begin(restored + 1);
        }

        private void begin(long checkpointId) {
            id = prefix + "-" + subtask + "-" + checkpointId;
            epoch = broker.initTransactions(id);
            records = 0;
        }

        @Override
        public void write(Long element, Context context) {
            broker.send(id, epoch, color + " " + element);
            records++;
        }

        @Override
        public void flush(boolean endOfInput) {}

        @Override
        public Collection<TxCommittable> prepareCommit() {
            return records == 0 ? List.of() : List.of(new TxCommittable(id, epoch));
        }

        @Override
        public List<TxState> snapshotState(long checkpointId) {
            begin(checkpointId + 1);
            return List.of(new TxState(prefix));
        }

        @Override
        public void close() {}
    }

    /** A serializer of objects that are one string. */
    static final class StringSerializer<T> implements SimpleVersionedSerializer<T> {
        interface Fn<A, B> extends java.io.Serializable {
            B apply(A a);
        }

        private final Fn<T, String> to;
        private final Fn<String, T> from;

        StringSerializer(Fn<T, String> to, Fn<String, T> from) {
            this.to = to;
            this.from = from;
        }

        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(T obj) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            new DataOutputStream(b).writeUTF(to.apply(obj));
            return b.toByteArray();
        }

        @Override
        public T deserialize(int version, byte[] serialized) throws IOException {
            return from.apply(new DataInputStream(new ByteArrayInputStream(serialized)).readUTF());
        }
    }
}
