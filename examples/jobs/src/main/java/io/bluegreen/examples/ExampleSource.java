package io.bluegreen.examples;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A FLIP-27 source over the deterministic topic of {@link Records}: {@code splits} splits, each
 * read in offset order, paced by the schedule (a record is emitted no earlier than its scheduled
 * wall-clock time; a restored job catches up at full speed). The split state is the next offset,
 * so a restore from a checkpoint or savepoint resumes exactly there. With {@code recordsPerSplit
 * > 0} the source is bounded (offsets {@code 0..recordsPerSplit-1}), otherwise unbounded.
 * Split s goes to reader {@code s % parallelism}.
 */
public final class ExampleSource implements Source<Event, ExampleSource.Split, List<ExampleSource.Split>> {
    private static final long serialVersionUID = 1L;

    private final Records records;
    private final int splits;
    private final long recordsPerSplit;
    private final long catchUpRate;

    /**
     * A source of {@code splits} splits; {@code catchUpRate} > 0 caps how fast a reader that is
     * behind its schedule (after a restore) emits, in records per second per reader (0: at full
     * speed), so that a replay takes a while, as a large backlog does on a real cluster.
     */
    ExampleSource(Records records, int splits, long recordsPerSplit, long catchUpRate) {
        if (splits < 1) {
            throw new IllegalArgumentException("--splits must be >= 1, got " + splits);
        }
        if (recordsPerSplit < 0) {
            throw new IllegalArgumentException("--records-per-split must be >= 0 (0: unbounded), got " + recordsPerSplit);
        }
        if (catchUpRate < 0) {
            throw new IllegalArgumentException("--catch-up-rate must be >= 0 (0: full speed), got " + catchUpRate);
        }
        this.records = records;
        this.splits = splits;
        this.recordsPerSplit = recordsPerSplit;
        this.catchUpRate = catchUpRate;
    }

    @Override
    public Boundedness getBoundedness() {
        return recordsPerSplit > 0 ? Boundedness.BOUNDED : Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public SourceReader<Event, Split> createReader(SourceReaderContext ctx) {
        return new Reader(records, recordsPerSplit, catchUpRate);
    }

    @Override
    public SplitEnumerator<Split, List<Split>> createEnumerator(SplitEnumeratorContext<Split> ctx) {
        List<Split> all = new ArrayList<>();
        for (int s = 0; s < splits; s++) {
            all.add(new Split(s, 0));
        }
        return new Enumerator(ctx, all, recordsPerSplit > 0);
    }

    @Override
    public SplitEnumerator<Split, List<Split>> restoreEnumerator(SplitEnumeratorContext<Split> ctx, List<Split> pending) {
        return new Enumerator(ctx, new ArrayList<>(pending), recordsPerSplit > 0);
    }

    @Override
    public SimpleVersionedSerializer<Split> getSplitSerializer() {
        return new SplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<List<Split>> getEnumeratorCheckpointSerializer() {
        return new PendingSerializer();
    }

    /** A split and the next offset to read from it. */
    public static final class Split implements SourceSplit {
        final int split;
        final long nextOffset;

        Split(int split, long nextOffset) {
            this.split = split;
            this.nextOffset = nextOffset;
        }

        @Override
        public String splitId() {
            return "split-" + split;
        }

        @Override
        public String toString() {
            return splitId() + "@" + nextOffset;
        }
    }

    /** Hands each split to reader {@code split % parallelism} when that reader registers. */
    static final class Enumerator implements SplitEnumerator<Split, List<Split>> {
        private final SplitEnumeratorContext<Split> ctx;
        private final List<Split> pending;
        private final boolean bounded;

        Enumerator(SplitEnumeratorContext<Split> ctx, List<Split> pending, boolean bounded) {
            this.ctx = ctx;
            this.pending = pending;
            this.bounded = bounded;
        }

        @Override
        public void start() {}

        @Override
        public void handleSplitRequest(int subtaskId, String requesterHostname) {}

        @Override
        public void addSplitsBack(List<Split> back, int subtaskId) {
            pending.addAll(back);
            if (ctx.registeredReaders().containsKey(subtaskId)) {
                addReader(subtaskId);
            }
        }

        @Override
        public void addReader(int subtaskId) {
            int parallelism = ctx.currentParallelism();
            List<Split> mine = new ArrayList<>();
            for (Iterator<Split> it = pending.iterator(); it.hasNext(); ) {
                Split s = it.next();
                if (s.split % parallelism == subtaskId) {
                    mine.add(s);
                    it.remove();
                }
            }
            for (Split s : mine) {
                ctx.assignSplit(s, subtaskId);
            }
            if (bounded) {
                ctx.signalNoMoreSplits(subtaskId);
            }
        }

        @Override
        public List<Split> snapshotState(long checkpointId) {
            return new ArrayList<>(pending);
        }

        @Override
        public void close() {}
    }

    /** Reads its splits in offset order, each no earlier than its schedule. */
    static final class Reader implements SourceReader<Event, Split> {
        private final Records records;
        private final long recordsPerSplit;
        /** Nanoseconds between two records at the catch-up cap; 0: no cap. */
        private final long catchUpNanos;
        /** {@link System#nanoTime()} before which the next record is not emitted (the cap). */
        private long nextAllowedNanos = Long.MIN_VALUE;
        private final List<State> splits = new ArrayList<>();
        private boolean noMoreSplits;
        private CompletableFuture<Void> available = CompletableFuture.completedFuture(null);

        private static final class State {
            final int split;
            long next;
            SourceOutput<Event> output;

            State(int split, long next) {
                this.split = split;
                this.next = next;
            }

            String id() {
                return "split-" + split;
            }
        }

        Reader(Records records, long recordsPerSplit, long catchUpRate) {
            this.records = records;
            this.recordsPerSplit = recordsPerSplit;
            this.catchUpNanos = catchUpRate > 0 ? 1_000_000_000L / catchUpRate : 0;
        }

        @Override
        public void start() {}

        @Override
        public InputStatus pollNext(ReaderOutput<Event> output) {
            State best = null;
            long bestDue = Long.MAX_VALUE;
            for (Iterator<State> it = splits.iterator(); it.hasNext(); ) {
                State s = it.next();
                if (recordsPerSplit > 0 && s.next >= recordsPerSplit) {
                    output.releaseOutputForSplit(s.id());
                    it.remove();
                    continue;
                }
                long due = records.schedule(s.split, s.next);
                if (due < bestDue) {
                    bestDue = due;
                    best = s;
                }
            }
            if (best == null) {
                if (noMoreSplits) {
                    return InputStatus.END_OF_INPUT;
                }
                available = new CompletableFuture<>();
                return InputStatus.NOTHING_AVAILABLE;
            }
            long wait = bestDue - System.currentTimeMillis();
            if (wait <= 0 && catchUpNanos > 0) {
                long now = System.nanoTime();
                if (nextAllowedNanos != Long.MIN_VALUE && now - nextAllowedNanos < 0) {
                    wait = Math.max(1, (nextAllowedNanos - now) / 1_000_000);
                } else {
                    nextAllowedNanos = (nextAllowedNanos == Long.MIN_VALUE || now - nextAllowedNanos > catchUpNanos
                            ? now : nextAllowedNanos) + catchUpNanos;
                }
            }
            if (wait > 0) {
                CompletableFuture<Void> f = new CompletableFuture<>();
                available = f;
                CompletableFuture.delayedExecutor(wait, TimeUnit.MILLISECONDS).execute(() -> f.complete(null));
                return InputStatus.NOTHING_AVAILABLE;
            }
            if (best.output == null) {
                best.output = output.createOutputForSplit(best.id());
            }
            Event e = records.event(best.split, best.next);
            best.output.collect(e, e.eventTime);
            best.next++;
            return InputStatus.MORE_AVAILABLE;
        }

        @Override
        public List<Split> snapshotState(long checkpointId) {
            List<Split> out = new ArrayList<>();
            for (State s : splits) {
                out.add(new Split(s.split, s.next));
            }
            return out;
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return available;
        }

        @Override
        public void addSplits(List<Split> added) {
            for (Split s : added) {
                splits.add(new State(s.split, s.nextOffset));
            }
            available.complete(null);
        }

        @Override
        public void notifyNoMoreSplits() {
            noMoreSplits = true;
            available.complete(null);
        }

        @Override
        public void close() {}
    }

    static final class SplitSerializer implements SimpleVersionedSerializer<Split> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Split s) throws IOException {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream(12);
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                out.writeInt(s.split);
                out.writeLong(s.nextOffset);
            }
            return bytes.toByteArray();
        }

        @Override
        public Split deserialize(int version, byte[] data) throws IOException {
            if (version != 1) {
                throw new IOException("unknown split serializer version " + version + " (this job writes 1)");
            }
            try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(data))) {
                return new Split(in.readInt(), in.readLong());
            }
        }
    }

    static final class PendingSerializer implements SimpleVersionedSerializer<List<Split>> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(List<Split> pending) throws IOException {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                out.writeInt(pending.size());
                for (Split s : pending) {
                    out.writeInt(s.split);
                    out.writeLong(s.nextOffset);
                }
            }
            return bytes.toByteArray();
        }

        @Override
        public List<Split> deserialize(int version, byte[] data) throws IOException {
            if (version != 1) {
                throw new IOException("unknown enumerator state version " + version + " (this job writes 1)");
            }
            try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(data))) {
                int n = in.readInt();
                List<Split> pending = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    pending.add(new Split(in.readInt(), in.readLong()));
                }
                return pending;
            }
        }
    }
}
