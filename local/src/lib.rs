//! Run bluegreen without a cluster.
//!
//! * [`apiserver`]: an in-process Kubernetes API server that speaks the real HTTP API, so
//!   that `kube::Client` (and `kubectl`) talk to it unchanged.
//! * [`flink`]: a local FlinkDeployment runner with simulated jobs that really stream, gate and
//!   checkpoint, behind a Flink-compatible REST endpoint.
//! * [`ledger`]: the oracle that counts duplicates, losses and wrong-color emissions.
#![forbid(unsafe_code)]

pub mod apiserver;
mod error;
pub mod file_ledger;
pub mod flink;
pub mod ledger;

pub use error::{Error, Result};
