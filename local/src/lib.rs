//! Run bluegreen without a cluster.
//!
//! * [`apiserver`]: an in-process Kubernetes API server that speaks the real HTTP API, so
//!   that `kube::Client` (and `kubectl`) talk to it unchanged.
#![forbid(unsafe_code)]

pub mod apiserver;
mod error;

pub use error::{Error, Result};
