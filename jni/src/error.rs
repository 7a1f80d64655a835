//! The JNI crate's one error type; every variant becomes a Java exception at the boundary.

/// Everything that can go wrong in the JNI shim.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The process-wide tokio runtime could not be started (thread creation failed).
    #[error("starting the bluegreen gate runtime thread: {0}")]
    Runtime(String),
    /// No Kubernetes client configuration (in-cluster service account or kubeconfig).
    #[error("no Kubernetes configuration for the ConfigMap watch (in-cluster or kubeconfig): {0}")]
    Kube(#[from] kube::Error),
    /// The kubeconfig for the home API server (`BLUEGREEN_HOME_KUBECONFIG`) cannot be used.
    #[error(
        "the kubeconfig in BLUEGREEN_HOME_KUBECONFIG ({path}) cannot be used: {message}; it is the Secret <child>-bluegreen-home the controller writes for a job in another cluster, check that the pod mounts it"
    )]
    HomeKubeconfig {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// A handle that was never opened or is already closed.
    #[error("bluegreen gate handle {0} is unknown or already closed")]
    UnknownHandle(i64),
    /// [`Watches::offer`](crate::Watches::offer) on a watch fed by a ConfigMap.
    #[error("{0} is fed by its ConfigMap watch; only manual watches accept offered data")]
    NotManual(String),
    /// Offered data that is not a JSON object whose values are strings.
    #[error("offered data must be a JSON object of strings (the ConfigMap's data): {0}")]
    Json(#[from] serde_json::Error),
    /// A color that is not `BLUE` or `GREEN`.
    #[error("color {0:?}: expected BLUE or GREEN")]
    Color(String),
    /// A call into the JVM failed.
    #[error("JNI: {0}")]
    Jni(#[from] jni::errors::Error),
    /// Native code panicked; caught before it could cross into the JVM.
    #[error("bluegreen gate native code panicked: {0}")]
    Panic(String),
}
