//! The state the local operator's watch, its actors and the REST server share.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::job::{JobRuntime, SimJob};
use crate::DeploymentRef;

/// State shared by the watch, the actors and the REST server.
#[derive(Debug)]
pub(crate) struct Shared {
    pub rt: JobRuntime,
    /// Jobs of every existing deployment, oldest first (the last one is the current job).
    pub jobs: Mutex<BTreeMap<DeploymentRef, Vec<Arc<SimJob>>>>,
    /// The next start-up deadline of every deploying deployment (simulation time), so that
    /// [`LocalFlink::settle`](crate::LocalFlink::settle) can wait for the operator too.
    pub deadlines: Mutex<BTreeMap<DeploymentRef, i64>>,
}

impl Shared {
    pub fn jobs(&self) -> MutexGuard<'_, BTreeMap<DeploymentRef, Vec<Arc<SimJob>>>> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
