//! The local operator: watches `FlinkDeployment`s (as JSON) and runs a simulated job for each,
//! moving their status the way the Apache Flink Kubernetes Operator does.
//!
//! Per deployment one actor task owns the deployment's state; the watch only forwards events.
//! Lifecycle of a deployment with `job.state: running`:
//! `CREATED` → `DEPLOYED` (JobManager `DEPLOYING`, job `RECONCILING`) → after half the start-up
//! delay JobManager `DEPLOYED_NOT_READY`, job `CREATED` → after the start-up delay JobManager
//! `READY`, job `RUNNING` → `STABLE`. A spec change upgrades the job per `job.upgradeMode`
//! (`savepoint`: stop-with-savepoint; `last-state`: the latest checkpoint; `stateless`: from
//! scratch); `job.state: suspended` stops it the same way (lifecycle `SUSPENDED`); a change of
//! `job.savepointRedeployNonce` redeploys from `job.initialSavepointPath`. Deleting the resource
//! cancels the job.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bluegreen_protocol::wire::flink_deployment;
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::clock::SimClock;
use super::config::JobSettings;
use super::faults::{DeploymentRef, Faults};
use super::job::{JobRuntime, JobState, JobView, SavepointOp, SimJob, new_job_id, start_job};
use super::ledger::{Ledger, SinkMode};
use super::rest;
use super::shared::Shared;
use super::snapshot::{Snapshot, SnapshotStore};
use crate::Error;
use crate::status::{JmStatus, Lifecycle, StatusModel, write_status};

/// How long after a failed reconciliation the operator tries again (simulated ms).
const RETRY_MS: i64 = 1000;

/// How long the operator waits (wall clock) for a savepoint during an upgrade or suspend.
const SAVEPOINT_WAIT: Duration = Duration::from_mins(1);
/// How long after a failed status write it is written again (simulated ms): the Apache
/// operator's `kubernetes.operator.retry.initial.interval`.
const STATUS_RETRY_MS: i64 = 5_000;

/// The `FlinkDeployment` kind, as a dynamic resource.
pub fn flink_deployment_resource() -> ApiResource {
    ApiResource {
        group: flink_deployment::GROUP.into(),
        version: flink_deployment::VERSION.into(),
        api_version: flink_deployment::API_VERSION.into(),
        kind: flink_deployment::KIND.into(),
        plural: flink_deployment::PLURAL.into(),
    }
}

/// Settings of a [`LocalFlink`].
#[derive(Clone)]
pub struct LocalFlinkOptions {
    /// The simulation clock (default: manual, at [`DEFAULT_START_MS`](super::DEFAULT_START_MS)).
    pub clock: SimClock,
    /// How the sinks write into the ledger.
    pub sink_mode: SinkMode,
    /// Watch only this namespace (`None`: all namespaces).
    pub namespace: Option<String>,
    /// Port of the REST server on 127.0.0.1 (`0`: any free port).
    pub rest_port: u16,
    /// Also keep snapshots as JSON files here (they survive the runner).
    pub snapshot_dir: Option<PathBuf>,
    /// The client the jobs' gates watch their coordination ConfigMap with: in a cluster, the
    /// sidecar next to the TaskManager uses its pod's service account, so a test of RBAC
    /// passes a client acting as that service account here. `None`: the runner's own client.
    pub gate_client: Option<kube::Client>,
}

impl std::fmt::Debug for LocalFlinkOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalFlinkOptions")
            .field("clock", &self.clock)
            .field("sink_mode", &self.sink_mode)
            .field("namespace", &self.namespace)
            .field("rest_port", &self.rest_port)
            .field("snapshot_dir", &self.snapshot_dir)
            .field(
                "gate_client",
                &self.gate_client.as_ref().map(|_| "kube::Client"),
            )
            .finish()
    }
}

impl Default for LocalFlinkOptions {
    fn default() -> Self {
        Self {
            clock: SimClock::default(),
            sink_mode: SinkMode::Transactional,
            namespace: None,
            rest_port: 0,
            snapshot_dir: None,
            gate_client: None,
        }
    }
}

/// The local FlinkDeployment runner ("local operator") and its REST server.
#[derive(Debug)]
pub struct LocalFlink {
    shared: Arc<Shared>,
    rest_addr: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
}

impl LocalFlink {
    /// Starts watching `FlinkDeployment`s through `client` and serving the REST endpoint.
    /// The FlinkDeployment CRD must be installed (see [`crd`](super::crd)).
    pub async fn start(client: kube::Client, options: LocalFlinkOptions) -> Result<Self, Error> {
        let rt = JobRuntime {
            clock: options.clock.clone(),
            ledger: Arc::new(Ledger::new(options.sink_mode)),
            store: Arc::new(SnapshotStore::new(options.snapshot_dir)),
            faults: Faults::new(options.clock),
            gate_client: options.gate_client.unwrap_or_else(|| client.clone()),
            client: client.clone(),
        };
        let shared = Arc::new(Shared {
            rt,
            jobs: Mutex::default(),
            deadlines: Mutex::default(),
        });
        let (rest_addr, rest_task) = rest::serve(Arc::clone(&shared), options.rest_port).await?;
        let api: Api<DynamicObject> = match &options.namespace {
            Some(ns) => Api::namespaced_with(client, ns, &flink_deployment_resource()),
            None => Api::all_with(client, &flink_deployment_resource()),
        };
        let watch_task = tokio::spawn(watch_deployments(api, Arc::clone(&shared)));
        Ok(Self {
            shared,
            rest_addr,
            tasks: vec![rest_task, watch_task],
        })
    }

    /// The REST URL template to configure the controller with:
    /// `http://127.0.0.1:<port>/{namespace}/{name}`.
    pub fn rest_url_template(&self) -> String {
        format!("http://{}/{{namespace}}/{{name}}", self.rest_addr)
    }

    /// The REST base URL of one deployment.
    pub fn rest_url(&self, d: &DeploymentRef) -> String {
        format!("http://{}/{}/{}", self.rest_addr, d.namespace, d.name)
    }

    /// The simulation clock.
    pub fn clock(&self) -> &SimClock {
        &self.shared.rt.clock
    }

    /// The ledger every sink writes to.
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.shared.rt.ledger
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> &Faults {
        &self.shared.rt.faults
    }

    /// Where checkpoints and savepoints are kept.
    pub fn snapshots(&self) -> &Arc<SnapshotStore> {
        &self.shared.rt.store
    }

    /// A stored snapshot by path.
    pub fn snapshot(&self, path: &str) -> Result<Arc<Snapshot>, Error> {
        self.shared.rt.store.get(path)
    }

    /// The current job of a deployment.
    pub fn job(&self, d: &DeploymentRef) -> Option<Arc<SimJob>> {
        self.shared.jobs().get(d).and_then(|j| j.last().cloned())
    }

    /// Every job a deployment has run, oldest first.
    pub fn jobs(&self, d: &DeploymentRef) -> Vec<Arc<SimJob>> {
        self.shared.jobs().get(d).cloned().unwrap_or_default()
    }

    /// Waits (bounded, wall clock) until the current job of `d` satisfies `pred`.
    pub async fn wait_for_job(
        &self,
        d: &DeploymentRef,
        timeout: Duration,
        pred: impl Fn(&JobView) -> bool,
    ) -> Result<Arc<SimJob>, Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(job) = self.job(d) {
                let mut rx = job.subscribe();
                loop {
                    if pred(&job.view()) {
                        return Ok(job);
                    }
                    let changed = tokio::time::timeout(Duration::from_millis(20), rx.changed());
                    if tokio::time::Instant::now() > deadline {
                        break;
                    }
                    match changed.await {
                        Ok(Ok(())) => {}
                        // The job may have been replaced: look it up again.
                        Ok(Err(_)) | Err(_) => break,
                    }
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::Timeout {
                    what: format!("job of {d}"),
                    waited_ms: timeout.as_millis(),
                });
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits (bounded, wall clock) until the operator has made every start-up step due by the
    /// clock's current time and every job has processed everything up to it (a job stopped at
    /// a record its gate holds, waiting for a later restart, or ended counts as settled).
    pub async fn settle(&self, timeout: Duration) -> Result<(), Error> {
        let target = self.clock().now_ms();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let due = self
                .shared
                .deadlines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .any(|d| *d <= target);
            if !due {
                break;
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::Timeout {
                    what: format!("deployments to start by {target}"),
                    waited_ms: timeout.as_millis(),
                });
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let jobs: Vec<Arc<SimJob>> = self
            .shared
            .jobs()
            .values()
            .filter_map(|j| j.last().cloned())
            .collect();
        let wait = async {
            for job in jobs {
                let mut rx = job.subscribe();
                loop {
                    if job.settled_at(target) {
                        break;
                    }
                    if rx.changed().await.is_err() {
                        break;
                    }
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| Error::Timeout {
                what: format!("jobs to process up to {target}"),
                waited_ms: timeout.as_millis(),
            })
    }

    /// Advances a manual clock by `total_ms` in steps of `step_ms`, letting every job catch up
    /// after each step (so checkpoints, idleness and gate decisions see time pass gradually).
    pub async fn advance(
        &self,
        total_ms: i64,
        step_ms: i64,
        timeout: Duration,
    ) -> Result<(), Error> {
        let step = step_ms.max(1);
        let end = self.clock().now_ms().saturating_add(total_ms);
        while self.clock().now_ms() < end {
            let next = (self.clock().now_ms() + step).min(end);
            self.clock().set(next);
            self.settle(timeout).await?;
        }
        Ok(())
    }

    /// Stops the watch and the REST server; running jobs are cancelled (uncommitted output is
    /// discarded). Dropping the runner does the same.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for LocalFlink {
    /// Stops the watch and the REST server and cancels every job (as [`LocalFlink::shutdown`]).
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        let jobs: Vec<Arc<SimJob>> = self.shared.jobs().values().flatten().cloned().collect();
        for job in jobs {
            job.cancel();
        }
    }
}

enum Msg {
    Apply(Box<DynamicObject>),
    Deleted,
}

/// Forwards watch events to one actor per deployment.
async fn watch_deployments(api: Api<DynamicObject>, shared: Arc<Shared>) {
    let mut actors: HashMap<DeploymentRef, mpsc::UnboundedSender<Msg>> = HashMap::new();
    let mut listed: HashSet<DeploymentRef> = HashSet::new();
    let mut stream = watcher(api.clone(), watcher::Config::default()).boxed();
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                tracing::debug!(error = %e, "FlinkDeployment watch error (retrying)");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        match event {
            watcher::Event::Init => listed.clear(),
            watcher::Event::InitApply(obj) | watcher::Event::Apply(obj) => {
                let key = DeploymentRef::new(obj.namespace().unwrap_or_default(), obj.name_any());
                listed.insert(key.clone());
                let tx = actors.entry(key.clone()).or_insert_with(|| {
                    let (tx, rx) = mpsc::unbounded_channel();
                    let ns_api = Api::namespaced_with(
                        shared.rt.client.clone(),
                        &key.namespace,
                        &flink_deployment_resource(),
                    );
                    tokio::spawn(Actor::new(key.clone(), Arc::clone(&shared), ns_api, rx).run());
                    tx
                });
                let _ = tx.send(Msg::Apply(Box::new(obj)));
            }
            watcher::Event::InitDone => {
                let gone: Vec<DeploymentRef> = actors
                    .keys()
                    .filter(|k| !listed.contains(*k))
                    .cloned()
                    .collect();
                for key in gone {
                    if let Some(tx) = actors.remove(&key) {
                        let _ = tx.send(Msg::Deleted);
                    }
                }
            }
            watcher::Event::Delete(obj) => {
                let key = DeploymentRef::new(obj.namespace().unwrap_or_default(), obj.name_any());
                if let Some(tx) = actors.remove(&key) {
                    let _ = tx.send(Msg::Deleted);
                }
            }
        }
    }
}

/// Where a deployment is.
#[derive(Debug, Clone)]
enum Phase {
    /// Not deployed (initially suspended, or the spec is invalid).
    Idle,
    /// The JobManager is starting; the job runs at `ready_at`.
    Deploying {
        settings: Arc<JobSettings>,
        restore: Option<Arc<Snapshot>>,
        job_id: String,
        not_ready_at: i64,
        ready_at: i64,
    },
    /// The job runs (or restarts, or has failed: see its view).
    Running(Arc<SimJob>),
    /// Suspended by `job.state: suspended`.
    Suspended,
}

struct Actor {
    key: DeploymentRef,
    shared: Arc<Shared>,
    api: Api<DynamicObject>,
    rx: mpsc::UnboundedReceiver<Msg>,
    /// The spec the deployment runs (last reconciled).
    reconciled: Option<Value>,
    phase: Phase,
    status: StatusModel,
    written: Option<Value>,
    /// Retry a spec that could not be reconciled (wall clock).
    /// Whether a job was ever deployed for this resource.
    ever_deployed: bool,
    /// Retry a spec that could not be reconciled at this simulation time.
    retry: Option<(Box<DynamicObject>, i64)>,
    /// Write the status again at this simulation time: the last write failed (the API server
    /// refused it or was unreachable). The Apache operator retries a failed reconcile, status
    /// update included, after `kubernetes.operator.retry.initial.interval` (5 s).
    status_retry: Option<i64>,
}

fn job_field<'a>(spec: &'a Value, field: &str) -> Option<&'a Value> {
    spec.get("job").and_then(|j| j.get(field))
}

fn wants_running(spec: &Value) -> bool {
    job_field(spec, "state").and_then(Value::as_str) != Some("suspended")
}

fn upgrade_mode(spec: &Value) -> &str {
    job_field(spec, "upgradeMode")
        .and_then(Value::as_str)
        .unwrap_or("stateless")
}

/// The spec without `job.state` (a state change is a suspend or resume, not an upgrade).
fn deployable(spec: &Value) -> Value {
    let mut s = spec.clone();
    if let Some(job) = s.get_mut("job").and_then(Value::as_object_mut) {
        job.remove("state");
    }
    s
}

impl Actor {
    fn new(
        key: DeploymentRef,
        shared: Arc<Shared>,
        api: Api<DynamicObject>,
        rx: mpsc::UnboundedReceiver<Msg>,
    ) -> Self {
        Self {
            status: StatusModel::new(key.name.clone()),
            key,
            shared,
            api,
            rx,
            reconciled: None,
            phase: Phase::Idle,
            written: None,
            retry: None,
            ever_deployed: false,
            status_retry: None,
        }
    }

    fn clock(&self) -> &SimClock {
        &self.shared.rt.clock
    }

    async fn run(mut self) {
        // Kept across iterations, so that a job change while the status is written still wakes us.
        let mut watched: Option<(Arc<SimJob>, tokio::sync::watch::Receiver<u64>)> = None;
        loop {
            let deadline = match &self.phase {
                Phase::Deploying {
                    not_ready_at,
                    ready_at,
                    ..
                } => Some(if self.status.jm == JmStatus::Deploying {
                    *not_ready_at
                } else {
                    *ready_at
                }),
                _ => None,
            };
            self.publish_deadline();
            let job = match &self.phase {
                Phase::Running(job) => Some(Arc::clone(job)),
                _ => None,
            };
            let clock = self.clock().clone();
            let timer = async {
                match deadline {
                    Some(at) => clock.sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            match &job {
                Some(job) if !watched.as_ref().is_some_and(|(w, _)| Arc::ptr_eq(w, job)) => {
                    let mut rx = job.subscribe();
                    rx.mark_changed();
                    watched = Some((Arc::clone(job), rx));
                }
                Some(_) => {}
                None => watched = None,
            }
            let job_changed = async {
                match watched.as_mut() {
                    Some((_, rx)) => {
                        let _ = rx.changed().await;
                    }
                    None => std::future::pending().await,
                }
            };
            let retry_at = self.retry.as_ref().map(|(_, at)| *at);
            let retry = async {
                match retry_at {
                    Some(at) => clock.sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let status_retry_at = self.status_retry;
            let status_retry = async {
                match status_retry_at {
                    Some(at) => clock.sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                msg = self.rx.recv() => match msg {
                    None | Some(Msg::Deleted) => {
                        self.on_deleted();
                        return;
                    }
                    Some(Msg::Apply(obj)) => {
                        // A status write echoes back as an event of the same generation: it must
                        // not pull a pending retry forward.
                        let pending_same_spec = self.retry.as_ref().is_some_and(|(pending, _)| {
                            pending.metadata.generation == obj.metadata.generation
                        });
                        if !pending_same_spec {
                            self.retry = None;
                            self.on_spec(obj).await;
                        }
                    }
                },
                () = timer => self.on_timer().await,
                () = job_changed => {}
                () = status_retry => {}
                () = retry => {
                    if let Some((obj, _)) = self.retry.take() {
                        self.on_spec(obj).await;
                    }
                }
            }
            self.observe_job();
            self.write_status().await;
        }
    }

    /// The next start-up deadline, as [`LocalFlink::settle`] needs it.
    fn next_deadline(&self) -> Option<i64> {
        let retry = self.retry.as_ref().map(|(_, at)| *at);
        let startup = match &self.phase {
            Phase::Deploying {
                not_ready_at,
                ready_at,
                ..
            } => Some(if self.status.jm == JmStatus::Deploying {
                *not_ready_at
            } else {
                *ready_at
            }),
            _ => None,
        };
        [retry, startup, self.status_retry]
            .into_iter()
            .flatten()
            .min()
    }

    fn publish_deadline(&self) {
        let mut deadlines = self
            .shared
            .deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match self.next_deadline() {
            Some(at) => deadlines.insert(self.key.clone(), at),
            None => deadlines.remove(&self.key),
        };
    }

    fn on_deleted(&mut self) {
        if let Phase::Running(job) = &self.phase {
            job.cancel();
        }
        self.shared.jobs().remove(&self.key);
        self.shared
            .deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
        tracing::info!(deployment = %self.key, "FlinkDeployment deleted: job cancelled");
    }

    async fn on_spec(&mut self, obj: Box<DynamicObject>) {
        let spec = obj.data.get("spec").cloned().unwrap_or(Value::Null);
        self.status.observed_generation = obj.metadata.generation;
        if self.reconciled.as_ref() == Some(&spec) {
            return;
        }
        let settings = match JobSettings::from_spec(&self.key.namespace, &self.key.name, &spec) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                self.status.error = Some(e.to_string());
                return;
            }
        };
        self.status.job_name.clone_from(&settings.job_name);
        let result = match self.reconciled.take() {
            None => self.first_deploy(&spec, settings).await,
            Some(previous) => {
                let r = self.change(&previous, &spec, settings).await;
                if r.is_err() {
                    self.reconciled = Some(previous);
                }
                r
            }
        };
        match result {
            Ok(()) => {
                self.status.error = None;
                self.reconciled = Some(spec.clone());
                self.status.reconciled_spec = Some(spec);
                self.status.reconciliation_ms = self.clock().now_ms();
            }
            Err(e) => {
                tracing::warn!(deployment = %self.key, error = %e, "cannot reconcile FlinkDeployment");
                self.status.error = Some(e.to_string());
                self.status.upgrading = false;
                if self.status.lifecycle == Lifecycle::Upgrading {
                    // The old job keeps running (a failed stop-with-savepoint leaves it alone).
                    self.status.lifecycle = if matches!(self.phase, Phase::Running(_)) {
                        Lifecycle::Stable
                    } else {
                        Lifecycle::Failed
                    };
                }
                let at = self.clock().now_ms().saturating_add(RETRY_MS);
                self.retry = Some((obj, at));
            }
        }
    }

    fn restore_from(&self, path: Option<&str>) -> Result<Option<Arc<Snapshot>>, Error> {
        match path.filter(|p| !p.is_empty()) {
            None => Ok(None),
            Some(p) => self.shared.rt.store.get(p).map(Some),
        }
    }

    async fn first_deploy(
        &mut self,
        spec: &Value,
        settings: Arc<JobSettings>,
    ) -> Result<(), Error> {
        // The operator records the resource first (CREATED), then deploys.
        self.status.lifecycle = Lifecycle::Created;
        self.write_status().await;
        if !wants_running(spec) {
            self.phase = Phase::Suspended;
            self.status.lifecycle = Lifecycle::Suspended;
            return Ok(());
        }
        let path = job_field(spec, "initialSavepointPath").and_then(Value::as_str);
        let restore = self.restore_from(path)?;
        self.begin_deploy(settings, restore);
        Ok(())
    }

    async fn change(
        &mut self,
        previous: &Value,
        spec: &Value,
        settings: Arc<JobSettings>,
    ) -> Result<(), Error> {
        let redeploy_nonce_changed = job_field(previous, "savepointRedeployNonce")
            != job_field(spec, "savepointRedeployNonce");
        let upgrade = deployable(previous) != deployable(spec);
        let live = matches!(self.phase, Phase::Running(_) | Phase::Deploying { .. });
        if !upgrade && wants_running(previous) == wants_running(spec) && live == wants_running(spec)
        {
            return Ok(());
        }
        // Stop whatever runs, keeping its state as the upgrade mode says.
        let kept = if live {
            self.status.lifecycle = Lifecycle::Upgrading;
            self.status.upgrading = true;
            self.write_status().await;
            let kept = self.stop_keeping_state(upgrade_mode(spec)).await?;
            if let Some(path) = &kept {
                self.status.upgrade_savepoint_path = Some(path.clone());
                self.status.last_savepoint = Some((path.clone(), self.clock().now_ms()));
            }
            kept
        } else {
            self.status.upgrade_savepoint_path.clone()
        };
        self.status.upgrading = false;
        if !wants_running(spec) {
            self.phase = Phase::Suspended;
            self.status.lifecycle = Lifecycle::Suspended;
            self.status.jm = JmStatus::Missing;
            self.status.job_state = Some("SUSPENDED");
            return Ok(());
        }
        // The first deployment (also after starting suspended) and a redeploy nonce change
        // start from `initialSavepointPath`.
        let path = if redeploy_nonce_changed || !self.ever_deployed {
            job_field(spec, "initialSavepointPath")
                .and_then(Value::as_str)
                .map(str::to_owned)
        } else if upgrade_mode(spec) == "stateless" {
            None
        } else {
            kept
        };
        let restore = self.restore_from(path.as_deref())?;
        self.begin_deploy(settings, restore);
        Ok(())
    }

    /// Stops the current job per `mode`; returns the path to resume from.
    async fn stop_keeping_state(&mut self, mode: &str) -> Result<Option<String>, Error> {
        let job = match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Running(job) => job,
            Phase::Deploying { restore, .. } => return Ok(restore.map(|s| s.path.clone())),
            other => {
                self.phase = other;
                return Ok(None);
            }
        };
        let view = job.view();
        if mode == "savepoint" && view.state == JobState::Running {
            let request = job.trigger_savepoint(true)?;
            match job.await_savepoint(&request, SAVEPOINT_WAIT).await? {
                SavepointOp::Completed { location } => return Ok(Some(location)),
                op @ (SavepointOp::Failed { .. } | SavepointOp::InProgress) => {
                    let cause = match op {
                        SavepointOp::Failed { cause } => cause,
                        _ => "still in progress".to_owned(),
                    };
                    self.phase = Phase::Running(job);
                    return Err(Error::JobState {
                        job_id: view_job_id(&self.phase),
                        state: format!("RUNNING (stop-with-savepoint failed: {cause})"),
                        action: "upgrade with a savepoint",
                    });
                }
            }
        }
        job.cancel();
        // Best effort: the job ends at its next step.
        let _ = job.await_terminal(Duration::from_secs(5)).await;
        if mode == "stateless" {
            return Ok(None);
        }
        let view = job.view();
        let latest = [
            view.latest_checkpoint,
            view.latest_savepoint,
            view.restored.map(|r| r.0),
        ]
        .into_iter()
        .flatten()
        .max_by_key(|s| s.taken_at_ms);
        Ok(latest.map(|s| s.path.clone()))
    }

    fn begin_deploy(&mut self, settings: Arc<JobSettings>, restore: Option<Arc<Snapshot>>) {
        self.ever_deployed = true;
        let now = self.clock().now_ms();
        let delay = settings.startup_delay_ms.max(0);
        // A slow start delays readiness, not the JobManager deployment.
        let extra = self.shared.rt.faults.extra_startup_ms(&self.key);
        self.status.lifecycle = Lifecycle::Deployed;
        self.status.jm = JmStatus::Deploying;
        self.status.job_state = Some("RECONCILING");
        self.status.job_id = None;
        self.status.start_time_ms = None;
        self.status.error = None;
        self.phase = Phase::Deploying {
            settings,
            restore,
            job_id: new_job_id(),
            not_ready_at: now.saturating_add(delay / 2),
            ready_at: now.saturating_add(delay).saturating_add(extra),
        };
    }

    async fn on_timer(&mut self) {
        let now = self.clock().now_ms();
        let Phase::Deploying {
            settings,
            restore,
            job_id,
            not_ready_at,
            ready_at,
        } = self.phase.clone()
        else {
            return;
        };
        if self.status.jm == JmStatus::Deploying && now >= not_ready_at {
            self.status.jm = JmStatus::DeployedNotReady;
            self.status.job_state = Some("CREATED");
            self.status.job_id = Some(job_id.clone());
        }
        if now >= ready_at {
            let job = start_job(
                &self.shared.rt,
                job_id.clone(),
                self.key.clone(),
                settings,
                restore,
            );
            self.shared
                .jobs()
                .entry(self.key.clone())
                .or_default()
                .push(Arc::clone(&job));
            self.status.jm = JmStatus::Ready;
            self.status.job_id = Some(job_id);
            self.status.start_time_ms = Some(now);
            self.phase = Phase::Running(job);
            self.observe_job();
            // The operator reports RUNNING while DEPLOYED first, then marks the spec stable.
            self.status.lifecycle = Lifecycle::Deployed;
            self.write_status().await;
        }
    }

    /// Mirrors the job's state into the status.
    fn observe_job(&mut self) {
        let Phase::Running(job) = &self.phase else {
            return;
        };
        let view = job.view();
        self.status.job_state = Some(view.state.as_str());
        self.status.update_time_ms = self.clock().now_ms();
        match view.state {
            JobState::Running => {
                if matches!(
                    self.status.lifecycle,
                    Lifecycle::Deployed | Lifecycle::Failed
                ) && self.written.is_some()
                    && self.status.jm == JmStatus::Ready
                    && self.written_job_state() == Some("RUNNING")
                {
                    self.status.lifecycle = Lifecycle::Stable;
                    self.status
                        .stable_spec
                        .clone_from(&self.status.reconciled_spec);
                }
            }
            JobState::Failed => {
                self.status.lifecycle = Lifecycle::Failed;
                self.status.jm = JmStatus::Ready;
                self.status.error = Some(
                    json!({
                        "type": "org.apache.flink.runtime.JobException",
                        "message": view.failure.unwrap_or_default(),
                    })
                    .to_string(),
                );
            }
            JobState::Finished | JobState::Canceled | JobState::Created | JobState::Restarting => {}
        }
    }

    fn written_job_state(&self) -> Option<&str> {
        self.written
            .as_ref()
            .and_then(|w| w.pointer("/jobStatus/state"))
            .and_then(Value::as_str)
    }

    /// Writes the status through the status subresource if it changed.
    async fn write_status(&mut self) {
        self.publish_deadline();
        let mut status = self.status.to_json();
        if let Some(w) = &self.written {
            // updateTime alone does not justify a write.
            let mut a = w.clone();
            a["jobStatus"]["updateTime"] = Value::Null;
            let mut b = status.clone();
            b["jobStatus"]["updateTime"] = Value::Null;
            if a == b {
                self.status_retry = None;
                return;
            }
        }
        status["jobStatus"]["updateTime"] = json!(self.clock().now_ms().to_string());
        if write_status(&self.api, &self.key, &status).await {
            self.written = Some(status);
            self.status_retry = None;
        } else {
            self.status_retry = Some(self.clock().now_ms().saturating_add(STATUS_RETRY_MS));
        }
    }
}

fn view_job_id(phase: &Phase) -> String {
    match phase {
        Phase::Running(job) => job.job_id.clone(),
        _ => String::new(),
    }
}
