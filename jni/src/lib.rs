//! The bluegreen gate inside a JVM (a TaskManager) through JNI (`docs/jvm.md`, "The JNI shim").
//!
//! The library is loaded once per JVM process by `io.bluegreen.gate.JniNative`. It runs **one**
//! ConfigMap watch per `(namespace, ConfigMap)` for the whole process, on one small tokio runtime
//! thread (`bluegreen-gate-watch`), however many subtasks subscribe: [`Watches`] is that
//! process-wide registry, reference-counted by [`WatchHandle`]s; the watch stops when the last
//! handle is released (a cancelled job closes its sources). Java reads the raw data of the last
//! accepted ConfigMap version ([`Watches::await_data`], which `JniStateSource` feeds to the Java
//! gate) or decides records through a Rust [`gate::Gate`](bluegreen_gate::Gate) ([`NativeGate`],
//! one per subtask; measured in `docs/performance.md`, and not worth it per record).
//!
//! # Why this crate allows `unsafe`
//! The workspace denies `unsafe_code`; this crate is the one exception, because a JNI library
//! cannot be written without it: the exported functions need `#[unsafe(no_mangle)]` so that the
//! JVM finds them by name, and a [`NativeGate`] lives behind a raw pointer that Java holds as a
//! `long` (a table lookup per record would cost more than the decision). Every `unsafe` block is
//! in [`ffi`] and says why it is sound. No panic crosses the boundary: every entry point runs
//! under `catch_unwind` and turns a panic or an error into a Java exception.
#![allow(unsafe_code)]

mod error;
pub mod ffi;
pub mod inputs;
mod native_gate;
mod watches;

pub use error::Error;
pub use native_gate::NativeGate;
pub use watches::{
    AcceptedData, HOME_KUBECONFIG, WatchHandle, WatchKey, Watches, client, state_json,
};
