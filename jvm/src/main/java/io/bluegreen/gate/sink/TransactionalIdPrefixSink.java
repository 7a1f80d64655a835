package io.bluegreen.gate.sink;

/**
 * A transactional sink whose transactional ids start with a configurable prefix (as Kafka's).
 * {@link ColorIsolatedSink#wrap} refuses such a sink unless the prefix is per color
 * ({@link BlueGreenSinks#transactionalIdPrefix}): on start, a writer aborts the lingering
 * transactions of its prefix, which with a shared prefix are the outgoing job's live ones.
 */
public interface TransactionalIdPrefixSink {
    /** The prefix of every transactional id this sink's writers use. */
    String transactionalIdPrefix();
}
