//! The bluegreen gate: per-record pass/drop/hold decisions inside every subtask of both jobs,
//! fed by a watch of the coordination ConfigMap (`docs/gate.md`, `docs/protocol.md`).
//!
//! ```no_run
//! # async fn demo(client: kube::Client) {
//! use bluegreen_gate::{ConfigMapSource, Gate, SharedState, StateOptions};
//! use bluegreen_protocol::{Color, Decision, configmap_name};
//!
//! // One state and one watch per process...
//! let shared = SharedState::new(StateOptions::default());
//! ConfigMapSource::new(client, "flink", &configmap_name("orders"), shared.clone()).spawn();
//! // ...one gate per subtask.
//! let mut gate = Gate::new(Color::Blue, shared.clone());
//! match gate.decide(1_700_000_000_000) {
//!     Decision::Pass => { /* emit */ }
//!     Decision::Drop => { /* discard */ }
//!     Decision::Hold => { /* wait with decide_or_wait, then fail the task */ }
//! }
//! # }
//! ```
#![forbid(unsafe_code)]

mod cell;
mod error;
mod gate;
mod metrics;
mod shared;
mod source;

pub use cell::GateSnapshot;
pub use error::Error;
pub use gate::{FLUSH_EVERY, Gate, GateHandle};
pub use metrics::ColorAggregate;
pub use shared::{Applied, SharedState, SourceStats, StateOptions};
pub use source::{ConfigMapSource, SourceOptions};

#[cfg(test)]
mod tests;
