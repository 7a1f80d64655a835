//! Errors of the plugin, each naming what to check.

/// What can go wrong talking to the cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No usable kubeconfig or in-cluster configuration.
    #[error(
        "cannot load the Kubernetes client configuration: {0} (check --kubeconfig, --context or $KUBECONFIG)"
    )]
    Config(String),
    /// The named resource does not exist.
    #[error(
        "flinkbluegreendeployment {namespace}/{name} not found (check the name and -n/--namespace; `kubectl bluegreen list -A` lists them all)"
    )]
    NotFound {
        /// Namespace searched.
        namespace: String,
        /// Name asked for.
        name: String,
    },
    /// An API call failed.
    #[error("{action}: {source}")]
    Api {
        /// What was being done.
        action: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The watch stream failed.
    #[error("watching {what}: {source}")]
    Watch {
        /// What was watched.
        what: String,
        /// The watcher's error.
        #[source]
        source: kube::runtime::watcher::Error,
    },
    /// `--timeout` is not a duration.
    #[error("--timeout {value:?} is not a duration: {reason} (use e.g. 90s, 5m or 1h)")]
    Timeout {
        /// The flag's value.
        value: String,
        /// Why it does not parse.
        reason: String,
    },
    /// Writing the output failed.
    #[error("writing output: {0}")]
    Output(String),
}

impl Error {
    /// Wraps an API error with what was being done.
    pub fn api(action: impl Into<String>, source: kube::Error) -> Self {
        Self::Api {
            action: action.into(),
            source,
        }
    }
}
