//! One task per `FlinkDeployment`: reconciles its spec against the running processes and writes
//! its status, as the Apache operator does (see `docs/local-flink.md`, "Real mode").

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kube::Api;
use kube::api::DynamicObject;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Shared;
use super::flink_rest::{CompletedCheckpoint, FlinkRest};
use super::process::{JobProcess, Launch, next_run};
use super::spec::{DeploymentSpec, JobSpec, JobStateSpec, UpgradeMode, deployable};
use crate::DeploymentRef;
use crate::Error;
use crate::status::{JmStatus, Lifecycle, StatusModel, write_status};

/// How long after a failed reconciliation (e.g. a failed stop-with-savepoint) it is retried.
const RETRY: Duration = Duration::from_secs(2);

/// Flink's job states (`JobStatus`), as the status's `jobStatus.state`.
const JOB_STATES: [&str; 11] = [
    "INITIALIZING",
    "CREATED",
    "RUNNING",
    "FAILING",
    "FAILED",
    "CANCELLING",
    "CANCELED",
    "FINISHED",
    "RESTARTING",
    "SUSPENDED",
    "RECONCILING",
];

/// What the watch tells an actor.
pub(crate) enum Msg {
    Apply(Box<DynamicObject>),
    Deleted,
}

pub(crate) struct Actor {
    key: DeploymentRef,
    shared: Arc<Shared>,
    api: Api<DynamicObject>,
    rx: mpsc::UnboundedReceiver<Msg>,
    status: StatusModel,
    written: Option<Value>,
    /// The spec (without `job.state`) last deployed or suspended.
    reconciled: Option<Value>,
    nonce: Option<i64>,
    suspended: bool,
    /// Where the current run started from, or the last savepoint (suspend, upgrade).
    restore_point: Option<String>,
    /// The current run's latest completed checkpoint.
    last_checkpoint: Option<CompletedCheckpoint>,
    /// When the current run was started (for the start-up timeout).
    started: Option<Instant>,
    retry: Option<(Box<DynamicObject>, Instant)>,
    run: u32,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A fresh 32-hex-digit Flink job id.
fn new_job_id(run: u32) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let low = u64::try_from(nanos & u128::from(u64::MAX)).unwrap_or_default();
    format!("{low:016x}{:08x}{run:08x}", std::process::id())
}

/// A Java stack trace as one line: the exception, and its innermost cause when there is one.
fn summarize_trace(trace: &str) -> String {
    let first = trace.lines().next().unwrap_or_default().trim();
    match trace
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("Caused by: "))
    {
        Some(root) => format!("{first}; caused by {root}"),
        None => first.to_owned(),
    }
}

fn job_state(state: &str) -> &'static str {
    JOB_STATES
        .iter()
        .find(|s| **s == state)
        .copied()
        .unwrap_or("RECONCILING")
}

impl Actor {
    pub fn new(
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
            written: None,
            reconciled: None,
            nonce: None,
            suspended: false,
            restore_point: None,
            last_checkpoint: None,
            started: None,
            retry: None,
            run: 0,
        }
    }

    pub async fn run(mut self) {
        loop {
            let live = self.shared.rest_port(&self.key).is_some();
            let interval = self.shared.options.poll_interval;
            let poll = async {
                if live {
                    tokio::time::sleep(interval).await;
                } else {
                    std::future::pending::<()>().await;
                }
            };
            let retry_at = self.retry.as_ref().map(|(_, at)| *at);
            let retry = async {
                match retry_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                msg = self.rx.recv() => match msg {
                    None | Some(Msg::Deleted) => {
                        self.on_deleted().await;
                        return;
                    }
                    Some(Msg::Apply(obj)) => {
                        // A status write echoes back with the same generation: it must not
                        // pull a pending retry forward.
                        let pending = self.retry.as_ref().is_some_and(|(p, _)| {
                            p.metadata.generation == obj.metadata.generation
                        });
                        if !pending {
                            self.retry = None;
                            self.on_spec(obj).await;
                        }
                    }
                },
                () = poll => {}
                () = retry => {
                    if let Some((obj, _)) = self.retry.take() {
                        self.on_spec(obj).await;
                    }
                }
            }
            self.observe().await;
            self.write_status().await;
        }
    }

    fn rest(&self) -> Option<(FlinkRest, String)> {
        let procs = self.shared.processes();
        let p = procs.get(&self.key)?;
        Some((
            FlinkRest::new(self.shared.http.clone(), p.rest_port),
            p.job_id.clone(),
        ))
    }

    /// Kills the deployment's processes (if any).
    fn kill(&self) {
        let process = self.shared.processes().remove(&self.key);
        drop(process);
    }

    fn fail(&mut self, error: String, jm: JmStatus) {
        tracing::warn!(deployment = %self.key, %error, "FlinkDeployment failed");
        self.status.lifecycle = Lifecycle::Failed;
        self.status.jm = jm;
        self.status.job_state = Some("FAILED");
        self.status.error = Some(error);
    }

    async fn on_spec(&mut self, obj: Box<DynamicObject>) {
        self.status.observed_generation = obj.metadata.generation;
        let raw = obj.data.get("spec").cloned().unwrap_or(Value::Null);
        let parsed = DeploymentSpec::parse(&raw).and_then(|s| s.job().cloned().map(|j| (s, j)));
        let (spec, job) = match parsed {
            Ok(p) => p,
            Err(e) => {
                self.fail(e.to_string(), JmStatus::Missing);
                return;
            }
        };
        let wanted = deployable(&raw);
        let wants_running = job.state == JobStateSpec::Running;
        let Some(previous) = self.reconciled.clone() else {
            self.reconciled = Some(wanted);
            self.nonce = job.savepoint_redeploy_nonce;
            self.restore_point.clone_from(&job.initial_savepoint_path);
            if wants_running {
                let from = self.restore_point.clone();
                self.deploy(&spec, &job, raw, from);
            } else {
                self.mark_suspended(raw);
            }
            return;
        };
        let nonce_changed = job.savepoint_redeploy_nonce != self.nonce;
        if !wants_running {
            if !self.suspended {
                if let Err(e) = self.stop(job.upgrade_mode).await {
                    self.retry_later(obj, &e);
                    return;
                }
                self.mark_suspended(raw);
            }
            if nonce_changed {
                self.restore_point.clone_from(&job.initial_savepoint_path);
            }
            self.reconciled = Some(wanted);
            self.nonce = job.savepoint_redeploy_nonce;
            return;
        }
        if self.suspended {
            self.suspended = false;
            if nonce_changed {
                self.restore_point.clone_from(&job.initial_savepoint_path);
            }
            let from = match job.upgrade_mode {
                UpgradeMode::Stateless if !nonce_changed => None,
                _ => self.restore_point.clone(),
            };
            self.reconciled = Some(wanted);
            self.nonce = job.savepoint_redeploy_nonce;
            self.deploy(&spec, &job, raw, from);
            return;
        }
        if previous == wanted {
            return;
        }
        let before = self.status.lifecycle;
        self.status.lifecycle = Lifecycle::Upgrading;
        self.status.upgrading = true;
        self.write_status().await;
        let mode = if nonce_changed {
            UpgradeMode::Stateless
        } else {
            job.upgrade_mode
        };
        let from = match self.stop(mode).await {
            Ok(_) if nonce_changed => job.initial_savepoint_path.clone(),
            Ok(path) => path,
            Err(e) => {
                self.status.lifecycle = before;
                self.status.upgrading = false;
                self.retry_later(obj, &e);
                return;
            }
        };
        tracing::info!(deployment = %self.key, ?mode, from = ?from, "upgrading");
        self.reconciled = Some(wanted);
        self.nonce = job.savepoint_redeploy_nonce;
        self.deploy(&spec, &job, raw, from);
    }

    fn retry_later(&mut self, obj: Box<DynamicObject>, error: &Error) {
        tracing::warn!(deployment = %self.key, %error, "reconciliation failed; the job keeps running, retrying");
        self.status.error = Some(error.to_string());
        self.retry = Some((obj, Instant::now() + RETRY));
    }

    fn mark_suspended(&mut self, raw: Value) {
        self.suspended = true;
        self.status.lifecycle = Lifecycle::Suspended;
        self.status.jm = JmStatus::Missing;
        self.status.job_state = Some("SUSPENDED");
        self.status.upgrading = false;
        self.status.error = None;
        self.status.reconciled_spec = Some(raw);
    }

    /// The latest state of the current (or last) run: its newest checkpoint, else where it
    /// started from.
    fn latest_known(&self) -> Option<String> {
        self.last_checkpoint
            .as_ref()
            .map(|c| c.external_path.clone())
            .or_else(|| self.restore_point.clone())
    }

    /// Stops the running job per `mode` and kills its processes; returns the path the next
    /// run restores from (`None`: start empty). On an error the job keeps running.
    async fn stop(&mut self, mode: UpgradeMode) -> Result<Option<String>, Error> {
        let timeout = self.shared.options.operation_timeout;
        let live = self
            .rest()
            .filter(|_| self.status.job_state != Some("FAILED"));
        let Some((rest, job_id)) = live else {
            // Nothing runs (failed, or the JVM died): the last known state, as upstream's
            // last-state recovery does.
            self.kill();
            return Ok(match mode {
                UpgradeMode::Stateless => None,
                UpgradeMode::Savepoint | UpgradeMode::LastState => self.latest_known(),
            });
        };
        let path = match mode {
            UpgradeMode::Savepoint => {
                let location = rest.stop_with_savepoint(&job_id, timeout).await?;
                self.status.last_savepoint = Some((location.clone(), now_ms()));
                Some(location)
            }
            UpgradeMode::LastState => {
                rest.cancel(&job_id, timeout).await?;
                // Read after the cancel, so no checkpoint completes after the one chosen.
                if let Some(mut c) = rest.latest_checkpoint(&job_id).await? {
                    if let Some(newer) = newest_retained_checkpoint(&c.external_path) {
                        c.external_path = newer;
                    }
                    self.last_checkpoint = Some(c);
                }
                self.latest_known()
            }
            UpgradeMode::Stateless => {
                rest.cancel(&job_id, timeout).await?;
                None
            }
        };
        self.kill();
        if path.is_some() {
            self.status.upgrade_savepoint_path.clone_from(&path);
            self.restore_point.clone_from(&path);
        }
        Ok(path)
    }

    fn deploy(&mut self, spec: &DeploymentSpec, job: &JobSpec, raw: Value, from: Option<String>) {
        self.kill();
        let dir = self.shared.deployment_dir(&self.key);
        self.run = next_run(&dir, self.run);
        self.last_checkpoint = None;
        let job_id = new_job_id(self.run);
        self.status.reconciled_spec = Some(raw);
        self.status.upgrading = false;
        self.status.error = None;
        self.status.start_time_ms = None;
        self.status.job_id = Some(job_id.clone());
        self.restore_point = from;
        let jar = match job.jar_path() {
            Ok(j) => j,
            Err(e) => {
                self.fail(e.to_string(), JmStatus::Missing);
                return;
            }
        };
        let launch = Launch {
            namespace: &self.key.namespace,
            spec,
            jar: &jar,
            job_id: &job_id,
            restore: self.restore_point.as_deref(),
            dir: &dir,
            run: self.run,
        };
        match JobProcess::spawn(&self.shared.options, &launch) {
            Ok(process) => {
                tracing::info!(deployment = %self.key, %job_id, pid = process.pid(), rest_port = process.rest_port, from = ?self.restore_point, "job process started");
                self.shared.processes().insert(self.key.clone(), process);
                self.started = Some(Instant::now());
                self.status.lifecycle = Lifecycle::Deployed;
                self.status.jm = JmStatus::Deploying;
                self.status.job_state = Some("RECONCILING");
            }
            Err(e) => self.fail(e.to_string(), JmStatus::Error),
        }
    }

    /// Follows the running job through its REST API and notices a dead JVM.
    async fn observe(&mut self) {
        let exited = self
            .shared
            .processes()
            .get_mut(&self.key)
            .and_then(JobProcess::exited);
        if let Some(why) = exited {
            self.kill();
            self.fail(why, JmStatus::Error);
            return;
        }
        let Some((rest, job_id)) = self.rest() else {
            return;
        };
        match rest.job(&job_id).await {
            Ok(Some(details)) => {
                self.status.jm = JmStatus::Ready;
                let state = job_state(&details.state);
                self.status.job_state = Some(state);
                match state {
                    "RUNNING" => {
                        self.status.start_time_ms = Some(details.start_time);
                        let written_running = self
                            .written
                            .as_ref()
                            .is_some_and(|w| w["jobStatus"]["state"] == "RUNNING");
                        if self.status.lifecycle == Lifecycle::Deployed && written_running {
                            self.status.lifecycle = Lifecycle::Stable;
                            self.status
                                .stable_spec
                                .clone_from(&self.status.reconciled_spec);
                        }
                    }
                    "FAILED" if self.status.lifecycle != Lifecycle::Failed => {
                        let cause = rest.root_exception(&job_id).await.ok().flatten();
                        let why = cause.as_deref().map_or_else(
                            || "see GET /jobs/:id/exceptions".to_owned(),
                            summarize_trace,
                        );
                        self.fail(format!("job {job_id} failed: {why}"), JmStatus::Ready);
                    }
                    _ => {}
                }
                if let Ok(Some(c)) = rest.latest_checkpoint(&job_id).await {
                    self.last_checkpoint = Some(c);
                }
            }
            Ok(None) => self.status.jm = JmStatus::DeployedNotReady,
            Err(e) => {
                let timeout = self.shared.options.startup_timeout;
                if self.status.jm == JmStatus::Deploying
                    && self.started.is_some_and(|t| t.elapsed() > timeout)
                {
                    self.kill();
                    self.fail(
                        format!(
                            "the JobManager's REST API did not answer within {} s: {e}",
                            timeout.as_secs()
                        ),
                        JmStatus::Error,
                    );
                }
            }
        }
    }

    async fn on_deleted(&mut self) {
        if let Some((rest, job_id)) = self.rest()
            && let Err(e) = rest
                .cancel(&job_id, self.shared.options.operation_timeout)
                .await
        {
            tracing::warn!(deployment = %self.key, error = %e, "cancel on deletion failed; killing the JVM");
        }
        self.kill();
        tracing::info!(deployment = %self.key, "FlinkDeployment deleted: job cancelled");
    }

    async fn write_status(&mut self) {
        let mut status = self.status.to_json();
        if let Some(c) = &self.last_checkpoint {
            status["jobStatus"]["checkpointInfo"] = json!({
                "lastCheckpoint": {
                    "timeStamp": c.latest_ack_timestamp,
                    "triggerType": "PERIODIC",
                    "formatType": "FULL",
                },
                "lastPeriodicCheckpointTimestamp": c.latest_ack_timestamp,
            });
        }
        if let Some(w) = &self.written {
            let mut a = w.clone();
            a["jobStatus"]["updateTime"] = Value::Null;
            let mut b = status.clone();
            b["jobStatus"]["updateTime"] = Value::Null;
            if a == b {
                return;
            }
        }
        status["jobStatus"]["updateTime"] = json!(now_ms().to_string());
        if write_status(&self.api, &self.key, &status).await {
            self.written = Some(status);
        }
    }
}

/// The newest completed checkpoint (`chk-N` with its `_metadata`) in the directory of `path`, a
/// `file:` checkpoint path. Flink's REST API serves checkpoint statistics from a cache (a few
/// seconds old), so the checkpoint it names as the latest can already be subsumed, and deleted,
/// by a newer one: seen as "Cannot find checkpoint" on a last-state upgrade.
fn newest_retained_checkpoint(path: &str) -> Option<String> {
    let local = path.strip_prefix("file:")?;
    let local = if local.starts_with("///") {
        &local[2..]
    } else {
        local
    };
    let dir = std::path::Path::new(local).parent()?;
    let (_, newest) = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let n: u64 = name.strip_prefix("chk-")?.parse().ok()?;
            entry
                .path()
                .join("_metadata")
                .exists()
                .then(|| (n, entry.path()))
        })
        .max_by_key(|(n, _)| *n)?;
    Some(format!("file:{}", newest.display()))
}

#[cfg(test)]
mod tests {
    use super::{newest_retained_checkpoint, summarize_trace};

    #[test]
    fn the_newest_retained_checkpoint_wins_over_a_stale_latest() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (n, complete) in [(5, false), (6, true), (7, false)] {
            let chk = dir.path().join(format!("chk-{n}"));
            std::fs::create_dir(&chk).expect("chk dir");
            if complete {
                std::fs::write(chk.join("_metadata"), b"m").expect("metadata");
            }
        }
        let stale = format!("file:{}/chk-5", dir.path().display());
        assert_eq!(
            newest_retained_checkpoint(&stale),
            Some(format!("file:{}/chk-6", dir.path().display())),
            "chk-5 was subsumed, chk-7 is incomplete"
        );
        let triple = format!("file://{}/chk-5", dir.path().display());
        assert!(newest_retained_checkpoint(&triple).is_some_and(|p| p.ends_with("chk-6")));
        assert_eq!(newest_retained_checkpoint("s3://bucket/chk-1"), None);
    }

    #[test]
    fn a_failure_is_summarized_by_its_exception_and_innermost_cause() {
        let trace = "org.apache.flink.runtime.JobException: Recovery is suppressed\n\tat a.b(C.java:1)\nCaused by: java.lang.RuntimeException: wrapped\n\tat d\nCaused by: java.lang.IllegalStateException: fails at 300\n\tat e";
        assert_eq!(
            summarize_trace(trace),
            "org.apache.flink.runtime.JobException: Recovery is suppressed; caused by java.lang.IllegalStateException: fails at 300"
        );
        assert_eq!(summarize_trace("java.lang.Error: x"), "java.lang.Error: x");
    }
}
