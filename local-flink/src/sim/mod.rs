//! The simulated runner: [`LocalFlink`] runs a simulated job per `FlinkDeployment` on the
//! simulation clock, serves Flink's REST API for them, and writes what their sinks emit into the
//! [`Ledger`](ledger::Ledger). The crate root re-exports its public modules and types.

pub mod clock;
pub mod config;
mod deployment;
mod engine;
pub mod faults;
mod job;
pub mod ledger;
mod operator;
pub mod rest;
mod shared;
pub mod snapshot;
pub mod source;

pub use engine::NO_WATERMARK;
pub use job::{JobState, JobView, SavepointOp, SimJob};
pub use operator::{LocalFlink, LocalFlinkOptions};
