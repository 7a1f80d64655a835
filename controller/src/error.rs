//! The controller's error type.

/// Everything that can go wrong in the controller.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The resource's spec is invalid; nothing that runs was changed.
    #[error("invalid spec: {0}")]
    InvalidSpec(#[from] SpecError),
    /// A Kubernetes API call failed.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A Flink REST call failed (an error status, or an answer that contradicts the request).
    #[error("Flink REST API at {url}: {message}")]
    FlinkRest {
        /// The URL called.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// A Flink REST call got no answer (connection refused, timeout, a broken body).
    #[error("Flink REST API at {url}: {source}")]
    FlinkRequest {
        /// The URL called.
        url: String,
        /// The HTTP client's error.
        #[source]
        source: reqwest::Error,
    },
    /// A Flink REST answer that is not the JSON shape the controller reads (a changed API).
    #[error("Flink REST API at {url}: unexpected answer ({source}): {excerpt}")]
    FlinkAnswer {
        /// The URL called.
        url: String,
        /// The start of the answer.
        excerpt: String,
        /// Why it does not deserialise.
        #[source]
        source: serde_json::Error,
    },
    /// A gate subtask's `bluegreenGateAppliedState` line that does not parse.
    #[error("Flink REST API at {url}: {metric} of subtask {subtask} does not parse: {source}")]
    GateReport {
        /// The URL called.
        url: String,
        /// The metric's id.
        metric: String,
        /// The subtask.
        subtask: u32,
        /// The protocol's reason.
        #[source]
        source: bluegreen_protocol::GateReportError,
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
    /// A plan acts on a child in a cluster the observation did not resolve.
    #[error("the cluster of the {0} child was not resolved in this reconcile; retrying")]
    ClusterUnresolved(bluegreen_protocol::Color),
    /// Leader election failed.
    #[error("leader election: {0}")]
    Lease(String),
    /// A TokenRequest for the remote gates' ServiceAccount was answered without a token.
    #[error(
        "TokenRequest for ServiceAccount {service_account} answered without a token: the API server must serve serviceaccounts/token (Kubernetes 1.22+); retrying"
    )]
    TokenRequest {
        /// `namespace/name` of the ServiceAccount.
        service_account: String,
    },
}

impl Error {
    /// A short label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::InvalidSpec(_) => "invalid_spec",
            Self::Kube(_) => "kube",
            Self::FlinkRest { .. }
            | Self::FlinkRequest { .. }
            | Self::FlinkAnswer { .. }
            | Self::GateReport { .. } => "flink_rest",
            Self::Coordination { .. } => "coordination",
            Self::Json(_) => "json",
            Self::MissingMetadata(_) => "metadata",
            Self::FinalSavepointPending(_) => "final_savepoint_pending",
            Self::ReconcileTimeout(_) => "timeout",
            Self::Finalizer(_) => "finalizer",
            Self::Lease(_) => "lease",
            Self::ClusterUnresolved(_) => "cluster",
            Self::TokenRequest { .. } => "token_request",
        }
    }
}

/// Why a spec is refused: the field, as a JSON path (`spec.…` or `metadata.name`), and what is
/// wrong with it and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {message}")]
pub struct SpecError {
    /// The offending field, as a JSON path.
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl SpecError {
    /// The refusal of `field` with `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// The controller's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
