//! The gate crate's one error type.

use std::time::Duration;

use bluegreen_protocol::{Color, ProtocolError};

/// Everything that can go wrong in the gate crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A record stayed on HOLD for the whole wait: the gate never saw a state under which it could
    /// decide it. In Flink this fails the task so that it restarts from its checkpoint; the gate
    /// never guesses.
    #[error(
        "{color} gate: record at event time {event_time_ms} ms still on HOLD after {waited:?} \
         (state: {state}); failing instead of guessing"
    )]
    HoldTimeout {
        /// The gate's color.
        color: Color,
        /// The event time of the held record.
        event_time_ms: i64,
        /// How long the gate waited.
        waited: Duration,
        /// The state the gate last applied, in short form (or why it has none).
        state: String,
    },
    /// A coordination state was refused (see [`SharedState::offer`](crate::SharedState::offer)).
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// Registering the gate's metrics failed (most often: the names are already registered).
    #[error("registering bluegreen_gate_* metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    /// The ConfigMap watch ended, which a `kube::runtime::watcher` never does on its own.
    #[error("watch of ConfigMap {namespace}/{name} ended")]
    WatchEnded {
        /// The ConfigMap's namespace.
        namespace: String,
        /// The ConfigMap's name.
        name: String,
    },
}
