//! Conformance tests for the local Kubernetes API server, through `kube::Api`, one file per
//! topic; what every scenario starts from is in `common.rs`.
//!
//! By default every test starts its own local API server. With `BLUEGREEN_TEST_KUBECONFIG`
//! set to a kubeconfig path, the same tests run against that cluster instead (each in its own
//! namespace); tests that need fault injection or restarts only run locally and say so.
#![allow(
    clippy::too_many_lines,
    clippy::needless_pass_by_value,
    reason = "test scenarios read top to bottom; helpers take values for call-site brevity"
)]

mod common;
mod custom_resources;
mod kinds;
mod objects;
mod patch_apply;
mod server;
mod watches;
