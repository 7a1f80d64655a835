//! Errors of the real-mode runner.

/// Why a real-mode deployment, process or REST call could not proceed.
#[derive(Debug, thiserror::Error)]
pub enum RealError {
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
    /// A child process (the launcher JVM or the sidecar) could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The REST proxy could not bind its listener.
    #[error("cannot bind the Flink REST proxy to {addr}: {source}")]
    Bind {
        /// The requested address.
        addr: String,
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
    /// A condition did not hold within its deadline.
    #[error("timed out after {waited_ms} ms waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        waited_ms: u128,
    },
    /// A Kubernetes API call failed.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}
