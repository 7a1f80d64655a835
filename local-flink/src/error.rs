//! The crate's one error type: the simulated Flink, the real-mode runner and the file ledger.

use std::path::PathBuf;

/// Why a simulated or real deployment, job, request or ledger read could not proceed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
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
    /// A server of the runner (the simulated Flink REST server, the real-mode REST proxy) could
    /// not bind its listener.
    #[error("cannot bind the {server} to {addr}: {source}")]
    Bind {
        /// Which server.
        server: &'static str,
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
    /// A `FlinkDeployment` spec field is missing or invalid for real mode.
    #[error("`{field}`: {problem}; {fix}")]
    Spec {
        /// The field, e.g. `spec.job.jarURI`.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
        /// How to fix it.
        fix: &'static str,
    },
    /// A deployment's `spec.flinkVersion` asks for a Flink line the real runner was not given.
    #[error(
        "`spec.flinkVersion` {version} asks for {line}, which this runner was not given (RealFlinkOptions::{field} is None); install it with {hint} (bluegreen-local and the tests then find it under target/), or set spec.flinkVersion to a line the runner has"
    )]
    FlinkLineMissing {
        /// The deployment's `spec.flinkVersion`.
        version: String,
        /// The line it asks for.
        line: crate::real::FlinkMajor,
        /// The option that would give it.
        field: &'static str,
        /// The commands that install it.
        hint: &'static str,
    },
    /// A file or directory of the runner could not be written or read.
    #[error("{what} {path}: {source}")]
    Io {
        /// What the runner was doing.
        what: &'static str,
        /// The path involved.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A Secret a pod template mounts as a volume cannot be given to the pod (see
    /// [`secret_volume`](crate::secret_volume)); a kubelet keeps the pod in `ContainerCreating`.
    #[error(
        "Secret {namespace}/{secret}, mounted into the pod template, cannot be mounted: {reason}; create it (the controller writes it before it creates a child in another cluster)"
    )]
    SecretVolume {
        /// The pod's namespace.
        namespace: String,
        /// The Secret.
        secret: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A child process (the launcher JVM or the sidecar) could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No port in the range the runner hands out was free.
    #[error("no free port on 127.0.0.1 in {from}..{to} for a job's REST API or sidecar")]
    NoFreePort {
        /// The range's first port.
        from: u16,
        /// The range's end (exclusive).
        to: u16,
    },
    /// A request to a job's Flink REST API failed or answered something unexpected.
    #[error("Flink REST {url}: {reason}")]
    Rest {
        /// The URL requested.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// A stop-with-savepoint or a savepoint failed.
    #[error("savepoint of job {job_id} failed: {cause}")]
    Savepoint {
        /// The job.
        job_id: String,
        /// Flink's failure cause.
        cause: String,
    },
    /// The file ledger cannot list a directory or read a file.
    #[error("file ledger: cannot read {}: {source}", path.display())]
    LedgerIo {
        /// The directory or file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file ledger's output directory does not exist or is not a directory.
    #[error("file ledger: {} is not a directory (expected the job's --output directory)", .0.display())]
    NotADirectory(PathBuf),
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
