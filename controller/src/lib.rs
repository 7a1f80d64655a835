//! The `FlinkBlueGreenDeployment` operator: exactly-once blue/green handovers of stateful Flink
//! jobs, built on the Apache Flink Kubernetes Operator's `FlinkDeployment`.
//!
//! Pure core (no client required): [`checks::validate_resource`] (with [`settings::validate`]),
//! [`handover::plan`], [`child::build`] (with [`injection`]), [`gate_rbac`].
//! Shell: [`observe::observe`] gathers an [`observed::Observed`], [`execute::execute`] applies a
//! [`handover::Plan`], [`reconcile`] wires them into a kube-runtime `Controller`.
#![forbid(unsafe_code)]

/// Defines an enum of names written as the variants are named (condition types and reasons,
/// event reasons), with `ALL`, `as_str` and `Display`.
macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The name as written: the variant's.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => stringify!($variant),)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub mod checks;
pub mod child;
pub mod clusters;
pub mod conditions;
pub mod context;
pub mod error;
pub mod events;
pub mod execute;
#[cfg(any(test, feature = "fuzzing"))]
pub mod exercise;
pub mod flink_rest;
pub mod gate_rbac;
pub mod handover;
pub mod injection;
pub mod leader;
pub mod metrics;
pub mod names;
pub mod observe;
pub mod observed;
pub mod reconcile;
pub mod remote_gate;
pub mod resource;
pub mod server;
pub mod settings;

#[cfg(any(test, feature = "fuzzing"))]
mod fixtures;

pub use error::{Error, Result};
