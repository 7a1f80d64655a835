//! Errors of the simulated Flink and its runner.

/// Why a simulated deployment, job or request could not proceed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A `spec.flinkConfiguration` value (or another spec field) is invalid.
    #[error("invalid value {value:?} for `{key}`: expected {expected}")]
    Config {
        /// The offending key.
        key: &'static str,
        /// The value found.
        value: String,
        /// What the key must hold.
        expected: &'static str,
    },
    /// `initialSavepointPath` (or an upgrade path) names no stored snapshot.
    #[error(
        "no savepoint or checkpoint at {path}: the local runner stores snapshots in memory (and optionally on disk); take one first"
    )]
    SnapshotNotFound {
        /// The path asked for.
        path: String,
    },
    /// A snapshot cannot be restored into this job.
    #[error("snapshot {path} cannot be restored: {reason}")]
    IncompatibleSnapshot {
        /// The snapshot's path.
        path: String,
        /// Why not.
        reason: String,
    },
    /// A snapshot file on disk could not be read or written.
    #[error("snapshot file {path}: {reason}")]
    SnapshotIo {
        /// The file.
        path: String,
        /// The I/O or JSON error.
        reason: String,
    },
    /// The REST server could not bind its listener.
    #[error("cannot bind the simulated Flink REST server to {addr}: {source}")]
    Bind {
        /// The requested address.
        addr: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A Kubernetes API call failed.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The FlinkDeployment CRD could not be installed.
    #[error("installing the FlinkDeployment CRD: {0}")]
    Crd(String),
    /// A job was asked for something its state does not allow.
    #[error("job {job_id} is {state}: {action} is not possible")]
    JobState {
        /// The job.
        job_id: String,
        /// Its state.
        state: String,
        /// What was asked.
        action: &'static str,
    },
    /// A condition did not hold within its deadline.
    #[error("timed out after {waited_ms} ms waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long (wall clock).
        waited_ms: u128,
    },
}
