//! The bluegreen sidecar: runs next to a Flink TaskManager, watches the coordination ConfigMap
//! once per pod (through `bluegreen-gate`'s [`ConfigMapSource`](bluegreen_gate::ConfigMapSource)
//! and [`SharedState`](bluegreen_gate::SharedState)) and serves it to the JVM gates on localhost
//! (`docs/sidecar.md`; the long-poll contract is in `docs/jvm.md`).
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), bluegreen_sidecar::Error> {
//! use bluegreen_gate::{ConfigMapSource, SharedState, StateOptions};
//! use bluegreen_sidecar::{Sidecar, SidecarOptions};
//!
//! let shared = SharedState::new(StateOptions::default());
//! ConfigMapSource::new(client, "flink", "orders-bluegreen", shared.clone()).spawn();
//! let sidecar = Sidecar::new(shared, SidecarOptions::default())?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
//! sidecar.serve(listener, std::future::pending()).await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod error;
mod request;
mod server;
mod wait;

pub use error::Error;
pub use request::{DecideRequest, StateRequest};
pub use server::{Sidecar, SidecarOptions, StateBody};
pub use wait::parse_wait;
