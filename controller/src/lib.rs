//! The `FlinkBlueGreenDeployment` operator: exactly-once blue/green handovers of stateful Flink
//! jobs, built on the Apache Flink Kubernetes Operator's `FlinkDeployment`.
//!
//! Pure core: [`settings::validate`], [`handover::plan`], [`child::build`]. Shell: `observe`
//! gathers [`observed::Observed`], `execute` applies a [`handover::Plan`].
#![forbid(unsafe_code)]

pub mod child;
pub mod conditions;
pub mod error;
pub mod handover;
pub mod observed;
pub mod resource;
pub mod settings;

#[cfg(test)]
mod fixtures;

pub use error::{Error, Result};
