package io.bluegreen.gate.sink;

import io.bluegreen.gate.Color;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.connector.sink2.SupportsPostCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreWriteTopology;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Sink V2 whose writer state and committables belong to one color. Green starts from blue's
 * savepoint, so it restores blue's sink state; through this wrapper the restored state of the
 * other color is handed to nobody: it is dropped from the writer state and its committables are
 * skipped by the committer (neither committed nor aborted: the color that wrote them commits them
 * itself, at its next checkpoint or its final stop-with-savepoint). State of the job's own color
 * is restored as usual, so restarts from the job's own checkpoints are unchanged. The sink's uid
 * stays the same in both colors; no {@code allowNonRestoredState} is needed.
 *
 * <p>{@link #wrap} refuses, when the job is built, what it cannot make safe: a {@link FileSink}
 * that does not roll on every checkpoint or that compacts, a transactional sink whose id prefix is
 * not per color ({@link TransactionalIdPrefixSink}), and sinks that add their own operators
 * (pre-write, pre-commit, post-commit topologies).
 *
 * <p>It extends Flink's {@code DiscardingSink} only to compile against both Flink 1.20 and 2.x:
 * 1.20's {@code Sink} still declares the abstract {@code createWriter(Sink.InitContext)}, a type 2.x
 * removed; that deprecated method, which Flink's runtime never calls, is DiscardingSink's. The
 * inherited {@code SupportsConcurrentExecutionAttempts} concerns speculative execution of batch
 * jobs only.
 */
public abstract class ColorIsolatedSink<T> extends DiscardingSink<T> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(ColorIsolatedSink.class);

    final Sink<T> inner;
    final Color color;

    ColorIsolatedSink(Sink<T> inner, Color color) {
        this.inner = inner;
        this.color = color;
    }

    /**
     * {@code sink} with its state isolated per color; a sink without writer state and without a
     * committer has nothing to isolate and is returned as is.
     *
     * @throws IllegalArgumentException when the sink cannot be made safe for a handover (the message names the fix)
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static <T> Sink<T> wrap(Sink<T> sink, Color color) {
        Objects.requireNonNull(sink, "sink");
        Objects.requireNonNull(color, "color");
        if (sink instanceof ColorIsolatedSink) {
            throw new IllegalArgumentException("sink is already wrapped by ColorIsolatedSink");
        }
        if (sink instanceof FileSink) {
            FileSinkCheck.check((FileSink<?>) sink);
        } else if (sink instanceof SupportsPreCommitTopology) {
            throw refused(sink, "adds a pre-commit topology (SupportsPreCommitTopology), whose operators keep committables of both colors");
        }
        if (sink instanceof SupportsPreWriteTopology) {
            throw refused(sink, "adds a pre-write topology (SupportsPreWriteTopology); put such operators before the gate yourself");
        }
        boolean kafka = KafkaSinkCheck.isKafkaSink(sink);
        if (kafka) {
            KafkaSinkCheck.check(sink, color);
        }
        // KafkaSink 5.x (Flink 2.x) is a SupportsPostCommitTopology that adds no operator: it only
        // co-locates its writer and committer, which the wrapper keeps chained.
        if (sink instanceof SupportsPostCommitTopology && !kafka) {
            throw refused(sink, "adds a post-commit topology (SupportsPostCommitTopology), whose operators would see committables of both colors");
        }
        if (sink instanceof TransactionalIdPrefixSink) {
            String prefix = ((TransactionalIdPrefixSink) sink).transactionalIdPrefix();
            String want = BlueGreenSinks.transactionalIdPrefix("", color);
            if (prefix == null || !prefix.endsWith(want)) {
                throw new IllegalArgumentException("the " + color + " job's transactional id prefix '" + prefix
                        + "' is not per color: the incoming job would abort and fence the outgoing job's transactions;"
                        + " use BlueGreenSinks.transactionalIdPrefix(base, color) (a prefix ending in '" + want + "')");
            }
        }
        boolean stateful = sink instanceof SupportsWriterState;
        boolean committing = sink instanceof SupportsCommitter;
        if (stateful && committing) {
            return new StatefulCommitting(sink, color);
        } else if (stateful) {
            return new Stateful(sink, color);
        } else if (committing) {
            return new Committing(sink, color);
        }
        return sink;
    }

    private static IllegalArgumentException refused(Sink<?> sink, String why) {
        return new IllegalArgumentException("ColorIsolatedSink cannot isolate " + sink.getClass().getName() + ": it " + why);
    }

    /** The color whose state this sink keeps. */
    public Color color() {
        return color;
    }

    @Override
    public SinkWriter<T> createWriter(WriterInitContext context) throws IOException {
        return new IsolatedWriter<>(inner.createWriter(context), color);
    }

    // ---- the three shapes (Flink picks the sink's topology by the interfaces it implements) --------

    /** A sink with writer state and a committer (FileSink, KafkaSink). */
    static final class StatefulCommitting<T> extends ColorIsolatedSink<T>
            implements SupportsWriterState<T, ColorTagged<Object>>, SupportsCommitter<ColorTagged<Object>> {
        private static final long serialVersionUID = 1L;

        StatefulCommitting(Sink<T> inner, Color color) {
            super(inner, color);
        }

        @Override
        public StatefulSinkWriter<T, ColorTagged<Object>> restoreWriter(WriterInitContext context,
                Collection<ColorTagged<Object>> states) throws IOException {
            return restore(this, context, states);
        }

        @Override
        public SimpleVersionedSerializer<ColorTagged<Object>> getWriterStateSerializer() {
            return writerStateSerializer(this);
        }

        @Override
        public Committer<ColorTagged<Object>> createCommitter(CommitterInitContext context) throws IOException {
            return committer(this, context);
        }

        @Override
        public SimpleVersionedSerializer<ColorTagged<Object>> getCommittableSerializer() {
            return committableSerializer(this);
        }
    }

    /** A sink with writer state only. */
    static final class Stateful<T> extends ColorIsolatedSink<T> implements SupportsWriterState<T, ColorTagged<Object>> {
        private static final long serialVersionUID = 1L;

        Stateful(Sink<T> inner, Color color) {
            super(inner, color);
        }

        @Override
        public StatefulSinkWriter<T, ColorTagged<Object>> restoreWriter(WriterInitContext context,
                Collection<ColorTagged<Object>> states) throws IOException {
            return restore(this, context, states);
        }

        @Override
        public SimpleVersionedSerializer<ColorTagged<Object>> getWriterStateSerializer() {
            return writerStateSerializer(this);
        }
    }

    /** A sink with a committer only. */
    static final class Committing<T> extends ColorIsolatedSink<T> implements SupportsCommitter<ColorTagged<Object>> {
        private static final long serialVersionUID = 1L;

        Committing(Sink<T> inner, Color color) {
            super(inner, color);
        }

        @Override
        public Committer<ColorTagged<Object>> createCommitter(CommitterInitContext context) throws IOException {
            return committer(this, context);
        }

        @Override
        public SimpleVersionedSerializer<ColorTagged<Object>> getCommittableSerializer() {
            return committableSerializer(this);
        }
    }

    @SuppressWarnings("unchecked")
    private static <T> StatefulSinkWriter<T, ColorTagged<Object>> restore(ColorIsolatedSink<T> s, WriterInitContext context,
            Collection<ColorTagged<Object>> states) throws IOException {
        List<Object> own = new ArrayList<>();
        int dropped = 0;
        for (ColorTagged<Object> st : states) {
            if (st.belongsTo(s.color)) {
                own.add(st.value());
            } else {
                dropped++;
            }
        }
        if (dropped > 0) {
            LOG.info("{} sink writer (subtask {}): dropped {} restored writer state(s) of the other color, kept {} of its own",
                    s.color, context.getTaskInfo().getIndexOfThisSubtask(), dropped, own.size());
        }
        SupportsWriterState<T, Object> inner = (SupportsWriterState<T, Object>) s.inner;
        return new IsolatedWriter<>(inner.restoreWriter(context, own), s.color);
    }

    @SuppressWarnings("unchecked")
    private static SimpleVersionedSerializer<ColorTagged<Object>> writerStateSerializer(ColorIsolatedSink<?> s) {
        return new ColorTagged.Serializer<>(((SupportsWriterState<?, Object>) s.inner).getWriterStateSerializer(), s.color);
    }

    @SuppressWarnings("unchecked")
    private static Committer<ColorTagged<Object>> committer(ColorIsolatedSink<?> s, CommitterInitContext context) throws IOException {
        return new IsolatedCommitter<>(((SupportsCommitter<Object>) s.inner).createCommitter(context), s.color,
                context.getTaskInfo().getIndexOfThisSubtask());
    }

    @SuppressWarnings("unchecked")
    private static SimpleVersionedSerializer<ColorTagged<Object>> committableSerializer(ColorIsolatedSink<?> s) {
        return new ColorTagged.Serializer<>(((SupportsCommitter<Object>) s.inner).getCommittableSerializer(), s.color);
    }

    /** Delegates to the wrapped writer and tags its state and committables with the color. */
    @SuppressWarnings("try") // close() delegates to a writer that may throw InterruptedException
    static final class IsolatedWriter<T, S, C>
            implements StatefulSinkWriter<T, ColorTagged<S>>, CommittingSinkWriter<T, ColorTagged<C>> {
        private final SinkWriter<T> inner;
        private final Color color;

        IsolatedWriter(SinkWriter<T> inner, Color color) {
            this.inner = inner;
            this.color = color;
        }

        @Override
        public void write(T element, Context context) throws IOException, InterruptedException {
            inner.write(element, context);
        }

        @Override
        public void flush(boolean endOfInput) throws IOException, InterruptedException {
            inner.flush(endOfInput);
        }

        @Override
        public void writeWatermark(Watermark watermark) throws IOException, InterruptedException {
            inner.writeWatermark(watermark);
        }

        @Override
        @SuppressWarnings("unchecked")
        public List<ColorTagged<S>> snapshotState(long checkpointId) throws IOException {
            List<ColorTagged<S>> out = new ArrayList<>();
            if (!(inner instanceof StatefulSinkWriter)) {
                return out; // a sink with a committer only (Flink asks only sinks with writer state)
            }
            for (S st : ((StatefulSinkWriter<T, S>) inner).snapshotState(checkpointId)) {
                out.add(ColorTagged.own(color, st));
            }
            return out;
        }

        @Override
        @SuppressWarnings("unchecked")
        public Collection<ColorTagged<C>> prepareCommit() throws IOException, InterruptedException {
            List<ColorTagged<C>> out = new ArrayList<>();
            if (!(inner instanceof CommittingSinkWriter)) {
                return out; // Flink calls this on every CommittingSinkWriter, also of a sink without a committer
            }
            for (C c : ((CommittingSinkWriter<T, C>) inner).prepareCommit()) {
                out.add(ColorTagged.own(color, c));
            }
            return out;
        }

        @Override
        public void close() throws Exception {
            inner.close();
        }
    }

    /** Commits the committables of its own color through the wrapped committer; skips the others. */
    @SuppressWarnings("try") // close() delegates to a committer that may throw InterruptedException
    static final class IsolatedCommitter<C> implements Committer<ColorTagged<C>> {
        private final Committer<C> inner;
        private final Color color;
        private final int subtask;

        IsolatedCommitter(Committer<C> inner, Color color, int subtask) {
            this.inner = inner;
            this.color = color;
            this.subtask = subtask;
        }

        @Override
        public void commit(Collection<CommitRequest<ColorTagged<C>>> requests) throws IOException, InterruptedException {
            List<CommitRequest<C>> own = new ArrayList<>(requests.size());
            int skipped = 0;
            for (CommitRequest<ColorTagged<C>> r : requests) {
                if (r.getCommittable().belongsTo(color)) {
                    own.add(new OwnRequest<>(r, color));
                } else {
                    skipped++;
                }
            }
            if (skipped > 0) {
                LOG.info("{} sink committer (subtask {}): skipped {} committable(s) of the other color (that job commits them itself)",
                        color, subtask, skipped);
            }
            if (!own.isEmpty()) {
                inner.commit(own);
            }
        }

        @Override
        public void close() throws Exception {
            inner.close();
        }
    }

    /** A commit request of the own color, as the wrapped committer sees it. */
    private static final class OwnRequest<C> implements Committer.CommitRequest<C> {
        private final Committer.CommitRequest<ColorTagged<C>> outer;
        private final Color color;

        OwnRequest(Committer.CommitRequest<ColorTagged<C>> outer, Color color) {
            this.outer = outer;
            this.color = color;
        }

        @Override
        public C getCommittable() {
            return outer.getCommittable().value();
        }

        @Override
        public int getNumberOfRetries() {
            return outer.getNumberOfRetries();
        }

        @Override
        public void signalFailedWithKnownReason(Throwable t) {
            outer.signalFailedWithKnownReason(t);
        }

        @Override
        public void signalFailedWithUnknownReason(Throwable t) {
            outer.signalFailedWithUnknownReason(t);
        }

        @Override
        public void retryLater() {
            outer.retryLater();
        }

        @Override
        public void updateAndRetryLater(C committable) {
            outer.updateAndRetryLater(ColorTagged.own(color, committable));
        }

        @Override
        public void signalAlreadyCommitted() {
            outer.signalAlreadyCommitted();
        }
    }
}
