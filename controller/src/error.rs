//! The controller's error type.

/// Everything that can go wrong in the controller.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The resource's spec is invalid; nothing that runs was changed.
    #[error("invalid spec: `{field}` {message}")]
    InvalidSpec {
        /// The offending field, as a JSON path.
        field: &'static str,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// Like [`Error::InvalidSpec`], for a field whose path is known only at run time (a template
    /// field the upstream FlinkDeployment schema refuses, `metadata.name`); nothing that runs was
    /// changed.
    #[error("invalid spec: `{field}` {message}")]
    InvalidField {
        /// The offending field, as a JSON path.
        field: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A Kubernetes API call failed.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A Flink REST call failed.
    #[error("Flink REST API at {url}: {message}")]
    FlinkRest {
        /// The URL called.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The coordination ConfigMap cannot be moved to the state the controller needs.
    #[error("coordination ConfigMap {name}: {source}")]
    Coordination {
        /// The ConfigMap's name.
        name: String,
        /// The protocol rule that refused the write.
        #[source]
        source: bluegreen_protocol::ProtocolError,
    },
    /// JSON (de)serialisation of a resource failed.
    #[error("serialisation: {0}")]
    Json(#[from] serde_json::Error),
    /// The resource lacks a namespace or name.
    #[error("resource has no {0}")]
    MissingMetadata(&'static str),
    /// Deletion waits for the final savepoint (`onDelete: savepointThenDelete`); kube's
    /// finalizer helper keeps the finalizer only when cleanup returns an error.
    #[error("deletion waits for the final savepoint of {0}")]
    FinalSavepointPending(String),
    /// The finalizer helper failed (an unnamed object or an invalid finalizer name).
    #[error("finalizer: {0}")]
    Finalizer(String),
    /// A reconcile took longer than its bound (a hung API or REST call); it is retried.
    #[error("reconcile did not finish within {0:?}; retrying")]
    ReconcileTimeout(std::time::Duration),
    /// Leader election failed.
    #[error("leader election: {0}")]
    Lease(String),
}

impl Error {
    /// A short label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::InvalidSpec { .. } | Self::InvalidField { .. } => "invalid_spec",
            Self::Kube(_) => "kube",
            Self::FlinkRest { .. } => "flink_rest",
            Self::Coordination { .. } => "coordination",
            Self::Json(_) => "json",
            Self::MissingMetadata(_) => "metadata",
            Self::FinalSavepointPending(_) => "final_savepoint_pending",
            Self::ReconcileTimeout(_) => "timeout",
            Self::Finalizer(_) => "finalizer",
            Self::Lease(_) => "lease",
        }
    }
}

/// The controller's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
