//! Run bluegreen's Flink side without a cluster: the local FlinkDeployment runners (simulated and
//! real) and the ledgers that judge what their jobs emitted. The Kubernetes API server they talk
//! to is the crate `bluegreen-local-apiserver`.
//!
//! * The simulated Flink, described below.
//! * [`real`]: real Flink 1.20 jobs, one JVM per deployment, with the real sidecar.
//! * [`ledger`]: the oracle that counts duplicates, losses and wrong-color emissions of the
//!   simulated jobs; [`file_ledger`]: the same for the part files of the example job.
//! * [`secret_volume`]: a pod template's kubeconfig in a Secret volume, written to a directory as
//!   a kubelet would.
//! * [`Error`]: the crate's one error type.
//!
//! # The simulated Flink
//!
//! A simulated Flink for the local setup: the pieces the controller talks to, behind the same
//! interfaces as the real thing.
//!
//! * [`LocalFlink`] (the "local operator"): watches `FlinkDeployment` resources
//!   (flink.apache.org/v1beta1) through a `kube::Client` as plain JSON, runs a simulated job for
//!   each, and moves their status the way the Apache Flink Kubernetes Operator does.
//! * Simulated jobs: a deterministic, replayable source ([`source`]), Flink's watermarks with
//!   idleness, a keyed running count, the real `bluegreen-gate` per subtask and a sink into the
//!   [`Ledger`](crate::ledger::Ledger); periodic checkpoints, savepoints, restarts.
//! * A Flink-REST-compatible endpoint for every deployment under one server
//!   ([`LocalFlink::rest_url_template`]).
//! * [`SimClock`]: manual or scaled time; [`Faults`]: fault injection.
//!
//! The configuration keys are in [`config::keys`] and `docs/local-flink.md`.
#![forbid(unsafe_code)]

pub mod crd;
mod error;
pub mod file_ledger;
pub mod real;
pub mod secret_volume;
mod shell;
mod sim;

pub use error::{Error, Result};
pub use shell::DeploymentRef;
pub use sim::clock::{DEFAULT_START_MS, SimClock};
pub use sim::config::{GateTarget, JobSettings, RestartStrategy};
pub use sim::faults::{Faults, JobFailure, RestFault};
pub use sim::{
    JobState, JobView, LocalFlink, LocalFlinkOptions, NO_WATERMARK, SavepointOp, SimJob,
};
pub use sim::{clock, config, faults, ledger, rest, snapshot, source};
