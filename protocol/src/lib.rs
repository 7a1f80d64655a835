//! The bluegreen coordination contract, shared by the controller, the gates and every JVM binding.
//!
//! - [`CoordinationState`]: the content of the coordination ConfigMap (`<deployment>-bluegreen`),
//!   parsed strictly from and written to its string data.
//! - [`decide`] / [`Rule`]: the gate's per-record rule (pass, drop or hold).
//! - [`check_transition`]: which updates of the state are legal.
//! - [`GateReport`]: a gate's acknowledgement, the value of its `bluegreenGateAppliedState` gauge.
//! - [`flink`]: the job, lifecycle and reconciliation states Flink and its operator report.
//! - [`wire`]: the Flink configuration keys, environment variables, metric names and the
//!   `FlinkDeployment` resource that the controller, the gates and the Java library share.
//!
//! Data and pure functions only: no I/O, no async runtime. The specification is
//! `docs/protocol.md`; the JSON vectors under `protocol/vectors/` pin it for other languages.
#![forbid(unsafe_code)]

#[macro_use]
mod vocabulary;
mod decide;
mod error;
pub mod flink;
pub mod keys;
mod report;
mod state;
mod transition;
pub mod wire;

pub use decide::{Decision, Rule, decide};
pub use error::ProtocolError;
pub use report::{AppliedState, GATE_REPORT_METRIC, GateReport, GateReportError, report_keys};
pub use state::{CoordinationState, PROTOCOL_VERSION, Toggle, configmap_name};
pub use transition::{check_transition, is_step};
pub use vocabulary::{Color, Stage, WatermarkStage};
