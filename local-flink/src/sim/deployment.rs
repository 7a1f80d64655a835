//! The simulated job of one `FlinkDeployment`, as the runner shell's [`Job`]: it moves the
//! status the way the Apache Flink Kubernetes Operator does, on the simulation clock.
//!
//! Lifecycle of a deployment with `job.state: running`:
//! `CREATED` → `DEPLOYED` (JobManager `DEPLOYING`, job `RECONCILING`) → after half the start-up
//! delay JobManager `DEPLOYED_NOT_READY`, job `CREATED` → after the start-up delay JobManager
//! `READY`, job `RUNNING` → `STABLE`. A spec change upgrades the job per `job.upgradeMode`
//! (`savepoint`: stop-with-savepoint; `last-state`: the latest checkpoint; `stateless`: from
//! scratch); `job.state: suspended` stops it the same way (lifecycle `SUSPENDED`); a change of
//! `job.savepointRedeployNonce` redeploys from `job.initialSavepointPath`. Deleting the resource
//! cancels the job.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use bluegreen_protocol::flink::{JobStatus, LifecycleState};
use serde_json::{Value, json};

use super::clock::SimClock;
use super::config::JobSettings;
use super::job::{JobState, SavepointOp, SimJob, new_job_id, start_job};
use super::shared::Shared;
use super::snapshot::Snapshot;
use crate::Error;
use crate::secret_volume::{kubeconfig_mount, materialize};
use crate::shell::{Deployment, JmStatus, Job};

/// How long the operator waits (wall clock) for a savepoint during an upgrade or suspend.
const SAVEPOINT_WAIT: Duration = Duration::from_mins(1);

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

/// The simulated job of one deployment.
pub(super) struct SimDeployment {
    shared: Arc<Shared>,
    /// The spec the deployment runs (last reconciled).
    reconciled: Option<Value>,
    phase: Phase,
    /// Whether a job was ever deployed for this resource.
    ever_deployed: bool,
    /// The running job and its change notifications, kept across waits, so that a job change
    /// while the status is written still wakes the actor.
    watched: Option<(Arc<SimJob>, tokio::sync::watch::Receiver<u64>)>,
    /// The Secret volume of the running job's gates' kubeconfig, if it mounts one.
    home_dir: Option<tempfile::TempDir>,
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

impl Job for SimDeployment {
    type Clock = SimClock;
    /// How long after a failed reconciliation the operator tries again (simulated ms).
    const RETRY_MS: i64 = 1000;
    /// The Apache operator's `kubernetes.operator.retry.initial.interval` (simulated ms).
    const STATUS_RETRY_MS: Option<i64> = Some(5_000);

    fn clock(&self) -> &SimClock {
        &self.shared.rt.clock
    }

    async fn reconcile(&mut self, d: &mut Deployment, spec: &Value) -> Result<(), Error> {
        if self.reconciled.as_ref() == Some(spec) {
            return Ok(());
        }
        let settings = match JobSettings::from_spec(&d.key.namespace, &d.key.name, spec) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                d.status.error = Some(e.to_string());
                return Ok(());
            }
        };
        d.status.job_name.clone_from(&settings.job_name);
        let result = match self.reconciled.take() {
            None => self.first_deploy(d, spec, settings).await,
            Some(previous) => {
                let r = self.change(d, &previous, spec, settings).await;
                if r.is_err() {
                    self.reconciled = Some(previous);
                }
                r
            }
        };
        match result {
            Ok(()) => {
                d.status.error = None;
                self.reconciled = Some(spec.clone());
                d.status.reconciled_spec = Some(spec.clone());
                d.status.reconciliation_ms = self.clock().now_ms();
                Ok(())
            }
            Err(e) => {
                d.status.upgrading = false;
                if d.status.lifecycle == LifecycleState::Upgrading {
                    // The old job keeps running (a failed stop-with-savepoint leaves it alone).
                    d.status.lifecycle = if matches!(self.phase, Phase::Running(_)) {
                        LifecycleState::Stable
                    } else {
                        LifecycleState::Failed
                    };
                }
                Err(e)
            }
        }
    }

    /// The start-up deadline, or a change of the running job.
    async fn wake(&mut self, d: &Deployment) {
        let deadline = self.startup_deadline(d);
        let job = match &self.phase {
            Phase::Running(job) => Some(Arc::clone(job)),
            _ => None,
        };
        match &job {
            Some(job)
                if !self
                    .watched
                    .as_ref()
                    .is_some_and(|(w, _)| Arc::ptr_eq(w, job)) =>
            {
                let mut rx = job.subscribe();
                rx.mark_changed();
                self.watched = Some((Arc::clone(job), rx));
            }
            Some(_) => {}
            None => self.watched = None,
        }
        let clock = self.clock().clone();
        let timer = async {
            match deadline {
                Some(at) => clock.sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let job_changed = async {
            match self.watched.as_mut() {
                Some((_, rx)) => {
                    let _ = rx.changed().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = timer => {}
            () = job_changed => {}
        }
    }

    /// Moves a deploying job on when its start-up deadlines are due (a job change needs
    /// nothing more than [`Job::observe`]).
    async fn on_wake(&mut self, d: &mut Deployment) {
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
        if d.status.jm == JmStatus::Deploying && now >= not_ready_at {
            d.status.jm = JmStatus::DeployedNotReady;
            d.status.job_state = Some(JobStatus::Created);
            d.status.job_id = Some(job_id.clone());
        }
        if now >= ready_at {
            let gate_client = match self.gate_client(&d.key.namespace).await {
                Ok(client) => client,
                Err(e) => {
                    // As a kubelet keeps the pod in ContainerCreating: try again later.
                    tracing::info!(deployment = %d.key, error = %e, "TaskManager cannot start yet");
                    self.phase = Phase::Deploying {
                        settings,
                        restore,
                        job_id,
                        not_ready_at,
                        ready_at: now.saturating_add(Self::RETRY_MS),
                    };
                    return;
                }
            };
            let job = start_job(
                &self.shared.rt,
                job_id.clone(),
                d.key.clone(),
                settings,
                restore,
                gate_client,
            );
            self.shared
                .jobs()
                .entry(d.key.clone())
                .or_default()
                .push(Arc::clone(&job));
            d.status.jm = JmStatus::Ready;
            d.status.job_id = Some(job_id);
            d.status.start_time_ms = Some(now);
            self.phase = Phase::Running(job);
            self.observe_job(d);
            // The operator reports RUNNING while DEPLOYED first, then marks the spec stable.
            d.status.lifecycle = LifecycleState::Deployed;
            d.write_status(&*self).await;
        }
    }

    async fn observe(&mut self, d: &mut Deployment) {
        self.observe_job(d);
    }

    async fn on_deleted(&mut self, d: &Deployment) {
        if let Phase::Running(job) = &self.phase {
            job.cancel();
        }
        self.shared.jobs().remove(&d.key);
        self.shared
            .deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&d.key);
    }

    /// Publishes the next deadline, as [`LocalFlink::settle`](crate::LocalFlink::settle) needs
    /// it.
    fn deadlines_changed(&self, d: &Deployment) {
        let next = [d.next_retry(), self.startup_deadline(d)]
            .into_iter()
            .flatten()
            .min();
        let mut deadlines = self
            .shared
            .deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match next {
            Some(at) => deadlines.insert(d.key.clone(), at),
            None => deadlines.remove(&d.key),
        };
    }
}

impl SimDeployment {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            reconciled: None,
            phase: Phase::Idle,
            ever_deployed: false,
            watched: None,
            home_dir: None,
        }
    }

    /// The client of the gates of the deployment's next job when its TaskManager pod template
    /// mounts a kubeconfig for the `bluegreen-sidecar` from a Secret (a child in another
    /// cluster): the Secret, read from this runner's API server, written to a directory of its
    /// own as a kubelet would, and the kubeconfig in it. `None`: the runner's gate client.
    async fn gate_client(&mut self, namespace: &str) -> Result<Option<kube::Client>, Error> {
        let Some(mount) = self
            .reconciled
            .as_ref()
            .and_then(|spec| spec.pointer("/taskManager/podTemplate/spec"))
            .and_then(kubeconfig_mount)
        else {
            return Ok(None);
        };
        let dir = tempfile::tempdir().map_err(|source| Error::Io {
            what: "creating a Secret volume directory",
            path: std::env::temp_dir().display().to_string(),
            source,
        })?;
        materialize(&self.shared.rt.client, namespace, &mount, dir.path()).await?;
        let path = dir.path().join(&mount.file);
        let config_error = |e: &dyn std::fmt::Display| Error::SecretVolume {
            namespace: namespace.to_owned(),
            secret: mount.secret.clone(),
            reason: format!("its {} is not a usable kubeconfig: {e}", mount.file),
        };
        let kubeconfig =
            kube::config::Kubeconfig::read_from(&path).map_err(|e| config_error(&e))?;
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .map_err(|e| config_error(&e))?;
        let client = kube::Client::try_from(config)?;
        self.home_dir = Some(dir);
        Ok(Some(client))
    }

    /// The next start-up step of a deploying job.
    fn startup_deadline(&self, d: &Deployment) -> Option<i64> {
        match &self.phase {
            Phase::Deploying {
                not_ready_at,
                ready_at,
                ..
            } => Some(if d.status.jm == JmStatus::Deploying {
                *not_ready_at
            } else {
                *ready_at
            }),
            _ => None,
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
        d: &mut Deployment,
        spec: &Value,
        settings: Arc<JobSettings>,
    ) -> Result<(), Error> {
        // The operator records the resource first (CREATED), then deploys.
        d.status.lifecycle = LifecycleState::Created;
        d.write_status(&*self).await;
        if !wants_running(spec) {
            self.phase = Phase::Suspended;
            d.status.lifecycle = LifecycleState::Suspended;
            return Ok(());
        }
        let path = job_field(spec, "initialSavepointPath").and_then(Value::as_str);
        let restore = self.restore_from(path)?;
        self.begin_deploy(d, settings, restore);
        Ok(())
    }

    async fn change(
        &mut self,
        d: &mut Deployment,
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
            d.status.lifecycle = LifecycleState::Upgrading;
            d.status.upgrading = true;
            d.write_status(&*self).await;
            let kept = self.stop_keeping_state(upgrade_mode(spec)).await?;
            if let Some(path) = &kept {
                d.status.upgrade_savepoint_path = Some(path.clone());
                d.status.last_savepoint = Some((path.clone(), self.clock().now_ms()));
            }
            kept
        } else {
            d.status.upgrade_savepoint_path.clone()
        };
        d.status.upgrading = false;
        if !wants_running(spec) {
            self.phase = Phase::Suspended;
            d.status.lifecycle = LifecycleState::Suspended;
            d.status.jm = JmStatus::Missing;
            d.status.job_state = Some(JobStatus::Suspended);
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
        self.begin_deploy(d, settings, restore);
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
                    let job_id = job.job_id.clone();
                    self.phase = Phase::Running(job);
                    return Err(Error::JobState {
                        job_id,
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

    fn begin_deploy(
        &mut self,
        d: &mut Deployment,
        settings: Arc<JobSettings>,
        restore: Option<Arc<Snapshot>>,
    ) {
        self.ever_deployed = true;
        let now = self.clock().now_ms();
        let delay = settings.startup_delay_ms.max(0);
        // A slow start delays readiness, not the JobManager deployment.
        let extra = self.shared.rt.faults.extra_startup_ms(&d.key);
        d.status.lifecycle = LifecycleState::Deployed;
        d.status.jm = JmStatus::Deploying;
        d.status.job_state = Some(JobStatus::Reconciling);
        d.status.job_id = None;
        d.status.start_time_ms = None;
        d.status.error = None;
        self.phase = Phase::Deploying {
            settings,
            restore,
            job_id: new_job_id(),
            not_ready_at: now.saturating_add(delay / 2),
            ready_at: now.saturating_add(delay).saturating_add(extra),
        };
    }

    /// Mirrors the job's state into the status.
    fn observe_job(&self, d: &mut Deployment) {
        let Phase::Running(job) = &self.phase else {
            return;
        };
        let view = job.view();
        d.status.job_state = Some(view.state.status());
        d.status.update_time_ms = self.clock().now_ms();
        match view.state {
            JobState::Running => {
                if matches!(
                    d.status.lifecycle,
                    LifecycleState::Deployed | LifecycleState::Failed
                ) && d.has_written()
                    && d.status.jm == JmStatus::Ready
                    && d.written_job_state()
                        .is_some_and(|s| s.is(JobStatus::Running))
                {
                    d.status.lifecycle = LifecycleState::Stable;
                    d.status.stable_spec.clone_from(&d.status.reconciled_spec);
                }
            }
            JobState::Failed => {
                d.status.lifecycle = LifecycleState::Failed;
                d.status.jm = JmStatus::Ready;
                d.status.error = Some(
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
}
