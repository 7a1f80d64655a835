//! The crate's error type.

use std::path::PathBuf;

/// Errors returned by the public API of `bluegreen-local-apiserver`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server could not bind its TCP listener.
    #[error("cannot bind the local API server to {addr}: {source}")]
    Bind {
        /// Address that was requested.
        addr: String,
        /// Underlying I/O error.
        source: std::io::Error,
    },
    /// Reading or writing the persistence directory failed.
    #[error("persistence error at {path}: {source}")]
    Persistence {
        /// File or directory involved.
        path: PathBuf,
        /// Underlying I/O error.
        source: std::io::Error,
    },
    /// A persisted snapshot could not be parsed.
    #[error("corrupt snapshot {path}: {source}")]
    CorruptSnapshot {
        /// Snapshot file.
        path: PathBuf,
        /// JSON error.
        source: serde_json::Error,
    },
    /// A document (CRD or object) given to a helper was not valid JSON or YAML.
    #[error("cannot parse document: {0}")]
    Parse(String),
    /// The API server rejected a request made by a helper (for example `apply_crd`).
    #[error("the local API server rejected the request: {code} {reason}: {message}")]
    Rejected {
        /// HTTP status code.
        code: u16,
        /// Kubernetes `Status.reason`.
        reason: String,
        /// Kubernetes `Status.message`.
        message: String,
    },
    /// Building a `kube::Client` for the server failed.
    #[error("cannot build a kube client: {0}")]
    Client(#[from] kube::Error),
    /// Waiting for a condition timed out.
    #[error("timed out: {0}")]
    Timeout(String),
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
