//! The runner shell: what the simulated runner ([`LocalFlink`](crate::LocalFlink)) and the real
//! one ([`RealFlink`](crate::real::RealFlink)) share, as the Apache operator does it for every
//! `FlinkDeployment`.
//!
//! * [`Shell`]: a runner's REST endpoint (one for every deployment) and its watch.
//! * [`watch`]: a watch of `FlinkDeployment`s that runs one actor per resource.
//! * The actor's loop ([`actor`]): a new spec, a retry of a spec that failed, a retry of a
//!   status write, a deletion or a wake-up of the job; then the job observes and the status is
//!   written if it changed. What a runner does with its job is behind [`Job`].
//! * [`status`]: the status, with the Apache operator's field names.

mod actor;
mod endpoint;
mod status;
mod watch;

pub(crate) use actor::{Clock, Deployment, Job, WallClock};
pub(crate) use endpoint::Shell;
pub(crate) use status::JmStatus;

/// A FlinkDeployment, by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeploymentRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl DeploymentRef {
    /// The deployment `name` in `namespace`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl std::fmt::Display for DeploymentRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}
