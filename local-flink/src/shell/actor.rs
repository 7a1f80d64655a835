//! One actor per `FlinkDeployment`: the loop both runners run, the status it writes, and the
//! [`Job`] a runner puts behind it.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bluegreen_protocol::flink::{JobStatus, Reported};
use kube::Api;
use kube::api::DynamicObject;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::DeploymentRef;
use super::status::{StatusModel, write_status};
use crate::Error;

/// What the watch tells an actor.
pub(super) enum Msg {
    /// The resource as it is now.
    Apply(Box<DynamicObject>),
    /// The resource is gone.
    Deleted,
}

/// A clock in milliseconds: the simulation's or the wall clock.
pub(crate) trait Clock: Clone + Send + Sync + 'static {
    /// Now, in ms.
    fn now_ms(&self) -> i64;
    /// Resolves once the clock reaches `at_ms`.
    fn sleep_until(&self, at_ms: i64) -> impl Future<Output = ()> + Send;
}

/// The wall clock: epoch milliseconds (real mode).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WallClock;

impl Clock for WallClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    async fn sleep_until(&self, at_ms: i64) {
        let wait = u64::try_from(at_ms.saturating_sub(self.now_ms())).unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

/// What a runner does with the job of one deployment; the shell's actor drives it.
pub(crate) trait Job: Send + Sync + 'static {
    /// The clock the deployment's times are on.
    type Clock: Clock;
    /// How long after a failed reconciliation the spec is tried again (ms).
    const RETRY_MS: i64;
    /// How long after a failed status write it is written again (ms; `None`: with the next
    /// change).
    const STATUS_RETRY_MS: Option<i64>;

    /// The clock.
    fn clock(&self) -> &Self::Clock;

    /// Reconciles the resource's `spec` (new, or one that failed before). An error goes into the
    /// status, and the spec is tried again after [`Job::RETRY_MS`].
    fn reconcile(
        &mut self,
        d: &mut Deployment,
        spec: &Value,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Resolves when the job asks for its actor: a deadline of its own, a change, a poll.
    fn wake(&mut self, d: &Deployment) -> impl Future<Output = ()> + Send;

    /// Acts on a wake-up.
    fn on_wake(&mut self, d: &mut Deployment) -> impl Future<Output = ()> + Send;

    /// Mirrors the job into the status, after every event.
    fn observe(&mut self, d: &mut Deployment) -> impl Future<Output = ()> + Send;

    /// The resource is gone: ends the job.
    fn on_deleted(&mut self, d: &Deployment) -> impl Future<Output = ()> + Send;

    /// Adds what only this runner writes to a status about to be written.
    fn complete_status(&self, _status: &mut Value) {}

    /// The deployment's deadlines may have changed (before every wait and status write).
    fn deadlines_changed(&self, _d: &Deployment) {}
}

/// What the shell keeps of one `FlinkDeployment`: its status, what was written last, and the
/// retries due.
pub(crate) struct Deployment {
    /// The resource.
    pub key: DeploymentRef,
    api: Api<DynamicObject>,
    /// The status as the job sees it; written by [`Deployment::write_status`].
    pub status: StatusModel,
    written: Option<Value>,
    /// Write the status again at this time: the last write failed (the API server refused it
    /// or was unreachable). The Apache operator retries a failed reconcile, status update
    /// included, after `kubernetes.operator.retry.initial.interval`.
    status_retry: Option<i64>,
    /// A spec that could not be reconciled, and when to try it again.
    retry: Option<(Box<DynamicObject>, i64)>,
}

impl Deployment {
    pub(super) fn new(key: DeploymentRef, api: Api<DynamicObject>) -> Self {
        Self {
            status: StatusModel::new(key.name.clone()),
            key,
            api,
            written: None,
            status_retry: None,
            retry: None,
        }
    }

    /// Whether a status was ever written.
    pub fn has_written(&self) -> bool {
        self.written.is_some()
    }

    /// `jobStatus.state` as last written.
    pub fn written_job_state(&self) -> Option<Reported<JobStatus>> {
        self.written
            .as_ref()
            .and_then(|w| w.pointer("/jobStatus/state"))
            .and_then(Value::as_str)
            .map(Reported::parse)
    }

    /// The shell's next deadline: a retry of a spec or of a status write.
    pub fn next_retry(&self) -> Option<i64> {
        let spec = self.retry.as_ref().map(|(_, at)| *at);
        [spec, self.status_retry].into_iter().flatten().min()
    }

    /// Writes the status through the status subresource if it changed (`updateTime` alone
    /// does not count).
    pub async fn write_status<J: Job>(&mut self, job: &J) {
        job.deadlines_changed(self);
        let mut status = self.status.to_json();
        job.complete_status(&mut status);
        if let Some(w) = &self.written {
            let mut a = w.clone();
            a["jobStatus"]["updateTime"] = Value::Null;
            let mut b = status.clone();
            b["jobStatus"]["updateTime"] = Value::Null;
            if a == b {
                self.status_retry = None;
                return;
            }
        }
        let now = job.clock().now_ms();
        status["jobStatus"]["updateTime"] = json!(now.to_string());
        if write_status(&self.api, &self.key, &status).await {
            self.written = Some(status);
            self.status_retry = None;
        } else {
            self.status_retry = J::STATUS_RETRY_MS.map(|ms| now.saturating_add(ms));
        }
    }
}

/// The actor of one deployment: until the resource is gone (or the watch ends), each event,
/// then the job observed and the status written.
pub(super) async fn run<J: Job>(
    mut job: J,
    mut d: Deployment,
    mut rx: mpsc::UnboundedReceiver<Msg>,
) {
    loop {
        job.deadlines_changed(&d);
        let clock = job.clock().clone();
        let retry_at = d.retry.as_ref().map(|(_, at)| *at);
        let retry = sleep_until(&clock, retry_at);
        let status_retry = sleep_until(&clock, d.status_retry);
        tokio::select! {
            msg = rx.recv() => match msg {
                None | Some(Msg::Deleted) => {
                    job.on_deleted(&d).await;
                    tracing::info!(deployment = %d.key, "FlinkDeployment deleted: job cancelled");
                    return;
                }
                Some(Msg::Apply(obj)) => {
                    // A status write echoes back as an event of the same generation: it must
                    // not pull a pending retry forward.
                    let pending_same_spec = d.retry.as_ref().is_some_and(|(pending, _)| {
                        pending.metadata.generation == obj.metadata.generation
                    });
                    if !pending_same_spec {
                        d.retry = None;
                        reconcile(&mut job, &mut d, obj).await;
                    }
                }
            },
            () = job.wake(&d) => job.on_wake(&mut d).await,
            () = status_retry => {}
            () = retry => {
                if let Some((obj, _)) = d.retry.take() {
                    reconcile(&mut job, &mut d, obj).await;
                }
            }
        }
        job.observe(&mut d).await;
        d.write_status(&job).await;
    }
}

/// Reconciles `obj`'s spec; a failure is kept in the status and tried again later.
async fn reconcile<J: Job>(job: &mut J, d: &mut Deployment, obj: Box<DynamicObject>) {
    d.status.observed_generation = obj.metadata.generation;
    let spec = obj.data.get("spec").cloned().unwrap_or(Value::Null);
    if let Err(e) = job.reconcile(d, &spec).await {
        tracing::warn!(deployment = %d.key, error = %e, "cannot reconcile FlinkDeployment; retrying");
        d.status.error = Some(e.to_string());
        d.retry = Some((obj, job.clock().now_ms().saturating_add(J::RETRY_MS)));
    }
}

/// Resolves at `at` on `clock`; never without a time.
async fn sleep_until(clock: &impl Clock, at: Option<i64>) {
    match at {
        Some(at) => clock.sleep_until(at).await,
        None => std::future::pending().await,
    }
}
