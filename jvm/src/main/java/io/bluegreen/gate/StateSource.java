package io.bluegreen.gate;

import java.io.Serializable;

/**
 * Where a gate gets the coordination ConfigMap from. The instance is configuration: it is
 * serialized with the job graph and {@link #subscribe} is called once per parallel gate instance
 * (subtask), in {@code open()}, on the task manager.
 *
 * <p>A source delivers the ConfigMap's <b>raw data map</b> to the listener, in the order it
 * observed it, from any thread; the gate parses it with its own strict parser
 * ({@link CoordinationState#fromData}) and checks it with {@link Transitions#check} against the
 * state it already applied, so a source never has to validate anything and can never make a gate
 * accept an illegal state. Redelivering the same data is harmless. Implementations:
 *
 * <ul>
 *   <li>{@link SidecarStateSource}: long-polls the bluegreen sidecar over HTTP on localhost (the
 *       sidecar watches the ConfigMap; the JSON contract is in {@code docs/jvm.md}).
 *   <li>{@link ManualStateSource}: states pushed by the test (or an embedding program) in-process.
 *   <li>{@link StaticStateSource}: one fixed state (tests, pinned deployments).
 *   <li>A JNI-backed source (later): a native watch in the Rust gate crate calls
 *       {@link StateListener#onConfigMap} from its thread; {@link Subscription#close} stops it.
 * </ul>
 */
public interface StateSource extends Serializable {

    /**
     * Starts delivering states to {@code listener} until the returned subscription is closed.
     * Must not block for long: do the watching on a thread of your own (daemon) or in native code.
     *
     * @param gateName a human-readable name of the subscribing gate instance (for logs and threads)
     */
    Subscription subscribe(String gateName, StateListener listener) throws Exception;

    /** Receives the coordination ConfigMap as its source sees it. Thread-safe; may be called from any thread. */
    interface StateListener {
        /** The ConfigMap's current {@code data} (unknown keys included; the gate ignores them). */
        void onConfigMap(java.util.Map<String, String> data);

        /**
         * The source has trouble (connection refused, bad response...). The gate keeps its last
         * good state (it holds if it has none) and counts the error; the source keeps retrying.
         */
        void onSourceError(String message, Throwable cause);

        /**
         * The source reached its state and found nothing new (e.g. a long poll answered 304): an
         * earlier {@link #onSourceError} is over. Delivering a ConfigMap says the same.
         */
        default void onSourceOk() {}
    }

    /** A running delivery; closing it stops the delivery (idempotent). */
    interface Subscription extends AutoCloseable {
        @Override
        void close();
    }
}
