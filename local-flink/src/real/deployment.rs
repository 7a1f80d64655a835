//! The real job of one `FlinkDeployment`, as the runner shell's [`Job`]: reconciles the spec
//! against the running processes and moves the status as the Apache operator does (see
//! `docs/local-flink.md`, "Real mode").

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bluegreen_protocol::flink::{JobStatus, LifecycleState};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::Shared;
use super::flink_rest::{CompletedCheckpoint, FlinkRest};
use super::process::{JobProcess, Launch, SecretVolume, next_run, run_dir};
use super::spec::{DeploymentSpec, JobSpec, JobStateSpec, UpgradeMode, deployable};
use crate::shell::{Clock, Deployment, JmStatus, Job, WallClock};
use crate::{DeploymentRef, Error};

/// The real job of one deployment: its processes and what the next run restores.
pub(super) struct RealDeployment {
    shared: Arc<Shared>,
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
    run: u32,
    /// A start that waits for a Secret its pod template mounts.
    waiting: Option<WaitingStart>,
}

/// A start held back, as a kubelet holds a pod in `ContainerCreating` while a Secret it mounts
/// is missing; tried again every [`RealDeployment::RETRY_MS`].
struct WaitingStart {
    spec: DeploymentSpec,
    job: JobSpec,
    raw: Value,
    from: Option<String>,
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

/// The status's `jobStatus.state` for the state Flink's REST API reported; `RECONCILING` for a
/// spelling Flink's `JobStatus` lacks.
fn job_state(state: &str) -> JobStatus {
    state.parse().unwrap_or(JobStatus::Reconciling)
}

impl Job for RealDeployment {
    type Clock = WallClock;
    /// A failed reconciliation (e.g. a failed stop-with-savepoint) is retried 2 s later.
    const RETRY_MS: i64 = 2_000;
    /// A failed status write is written again with the next change (every poll of a live job).
    const STATUS_RETRY_MS: Option<i64> = None;

    fn clock(&self) -> &WallClock {
        &WallClock
    }

    async fn reconcile(&mut self, d: &mut Deployment, raw: &Value) -> Result<(), Error> {
        let parsed = DeploymentSpec::parse(raw).and_then(|s| s.job().cloned().map(|j| (s, j)));
        let (spec, job) = match parsed {
            Ok(p) => p,
            Err(e) => {
                fail(d, e.to_string(), JmStatus::Missing);
                return Ok(());
            }
        };
        let raw = raw.clone();
        let wanted = deployable(&raw);
        let wants_running = job.state == JobStateSpec::Running;
        let Some(previous) = self.reconciled.clone() else {
            self.reconciled = Some(wanted);
            self.nonce = job.savepoint_redeploy_nonce;
            self.restore_point.clone_from(&job.initial_savepoint_path);
            if wants_running {
                let from = self.restore_point.clone();
                self.deploy(d, &spec, &job, raw, from).await;
            } else {
                self.mark_suspended(d, raw);
            }
            return Ok(());
        };
        let nonce_changed = job.savepoint_redeploy_nonce != self.nonce;
        if !wants_running {
            if !self.suspended {
                self.stop(d, job.upgrade_mode).await?;
                self.mark_suspended(d, raw);
            }
            if nonce_changed {
                self.restore_point.clone_from(&job.initial_savepoint_path);
            }
            self.reconciled = Some(wanted);
            self.nonce = job.savepoint_redeploy_nonce;
            return Ok(());
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
            self.deploy(d, &spec, &job, raw, from).await;
            return Ok(());
        }
        if previous == wanted {
            return Ok(());
        }
        let before = d.status.lifecycle;
        d.status.lifecycle = LifecycleState::Upgrading;
        d.status.upgrading = true;
        d.write_status(&*self).await;
        let mode = if nonce_changed {
            UpgradeMode::Stateless
        } else {
            job.upgrade_mode
        };
        let from = match self.stop(d, mode).await {
            Ok(_) if nonce_changed => job.initial_savepoint_path.clone(),
            Ok(path) => path,
            Err(e) => {
                // The job keeps running.
                d.status.lifecycle = before;
                d.status.upgrading = false;
                return Err(e);
            }
        };
        tracing::info!(deployment = %d.key, ?mode, from = ?from, "upgrading");
        self.reconciled = Some(wanted);
        self.nonce = job.savepoint_redeploy_nonce;
        self.deploy(d, &spec, &job, raw, from).await;
        Ok(())
    }

    /// The next poll of a live job, or the next try of a start that waits for a Secret (none
    /// while neither).
    async fn wake(&mut self, d: &Deployment) {
        if self.shared.rest_port(&d.key).is_some() {
            tokio::time::sleep(self.shared.options.poll_interval).await;
        } else if self.waiting.is_some() {
            tokio::time::sleep(std::time::Duration::from_millis(
                Self::RETRY_MS.unsigned_abs(),
            ))
            .await;
        } else {
            std::future::pending::<()>().await;
        }
    }

    /// Tries a waiting start again; a poll needs nothing more than [`Job::observe`].
    async fn on_wake(&mut self, d: &mut Deployment) {
        if let Some(w) = self.waiting.take() {
            self.deploy(d, &w.spec, &w.job, w.raw, w.from).await;
        }
    }

    /// Follows the running job through its REST API and notices a dead JVM.
    async fn observe(&mut self, d: &mut Deployment) {
        let exited = self
            .shared
            .processes()
            .get_mut(&d.key)
            .and_then(JobProcess::exited);
        if let Some(why) = exited {
            self.kill(&d.key);
            fail(d, why, JmStatus::Error);
            return;
        }
        let Some((rest, job_id)) = self.rest(&d.key) else {
            return;
        };
        match rest.job(&job_id).await {
            Ok(Some(details)) => {
                d.status.jm = JmStatus::Ready;
                let state = job_state(&details.state);
                d.status.job_state = Some(state);
                match state {
                    JobStatus::Running => {
                        d.status.start_time_ms = Some(details.start_time);
                        let written_running = d
                            .written_job_state()
                            .is_some_and(|s| s.is(JobStatus::Running));
                        if d.status.lifecycle == LifecycleState::Deployed && written_running {
                            d.status.lifecycle = LifecycleState::Stable;
                            d.status.stable_spec.clone_from(&d.status.reconciled_spec);
                        }
                    }
                    JobStatus::Failed if d.status.lifecycle != LifecycleState::Failed => {
                        let cause = rest.root_exception(&job_id).await.ok().flatten();
                        let why = cause.as_deref().map_or_else(
                            || "see GET /jobs/:id/exceptions".to_owned(),
                            summarize_trace,
                        );
                        fail(d, format!("job {job_id} failed: {why}"), JmStatus::Ready);
                    }
                    _ => {}
                }
                if let Ok(Some(c)) = rest.latest_checkpoint(&job_id).await {
                    self.last_checkpoint = Some(c);
                }
            }
            Ok(None) => d.status.jm = JmStatus::DeployedNotReady,
            Err(e) => {
                let timeout = self.shared.options.startup_timeout;
                if d.status.jm == JmStatus::Deploying
                    && self.started.is_some_and(|t| t.elapsed() > timeout)
                {
                    self.kill(&d.key);
                    fail(
                        d,
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

    async fn on_deleted(&mut self, d: &Deployment) {
        if let Some((rest, job_id)) = self.rest(&d.key)
            && let Err(e) = rest
                .cancel(&job_id, self.shared.options.operation_timeout)
                .await
        {
            tracing::warn!(deployment = %d.key, error = %e, "cancel on deletion failed; killing the JVM");
        }
        self.kill(&d.key);
    }

    /// The latest completed checkpoint the runner has seen.
    fn complete_status(&self, status: &mut Value) {
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
    }
}

/// The deployment failed: `FAILED`, with `jm` and the cause in `error`.
fn fail(d: &mut Deployment, error: String, jm: JmStatus) {
    tracing::warn!(deployment = %d.key, %error, "FlinkDeployment failed");
    d.status.lifecycle = LifecycleState::Failed;
    d.status.jm = jm;
    d.status.job_state = Some(JobStatus::Failed);
    d.status.error = Some(error);
}

impl RealDeployment {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            reconciled: None,
            nonce: None,
            suspended: false,
            restore_point: None,
            last_checkpoint: None,
            started: None,
            run: 0,
            waiting: None,
        }
    }

    fn rest(&self, key: &DeploymentRef) -> Option<(FlinkRest, String)> {
        let procs = self.shared.processes();
        let p = procs.get(key)?;
        Some((
            FlinkRest::new(self.shared.http.clone(), p.rest_port),
            p.job_id.clone(),
        ))
    }

    /// Kills the deployment's processes (if any).
    fn kill(&self, key: &DeploymentRef) {
        let process = self.shared.processes().remove(key);
        drop(process);
    }

    fn mark_suspended(&mut self, d: &mut Deployment, raw: Value) {
        self.suspended = true;
        self.waiting = None;
        d.status.lifecycle = LifecycleState::Suspended;
        d.status.jm = JmStatus::Missing;
        d.status.job_state = Some(JobStatus::Suspended);
        d.status.upgrading = false;
        d.status.error = None;
        d.status.reconciled_spec = Some(raw);
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
    async fn stop(
        &mut self,
        d: &mut Deployment,
        mode: UpgradeMode,
    ) -> Result<Option<String>, Error> {
        self.waiting = None;
        let timeout = self.shared.options.operation_timeout;
        let live = self
            .rest(&d.key)
            .filter(|_| d.status.job_state != Some(JobStatus::Failed));
        let Some((rest, job_id)) = live else {
            // Nothing runs (failed, or the JVM died): the last known state, as upstream's
            // last-state recovery does.
            self.kill(&d.key);
            return Ok(match mode {
                UpgradeMode::Stateless => None,
                UpgradeMode::Savepoint | UpgradeMode::LastState => self.latest_known(),
            });
        };
        let path = match mode {
            UpgradeMode::Savepoint => {
                let location = rest.stop_with_savepoint(&job_id, timeout).await?;
                d.status.last_savepoint = Some((location.clone(), WallClock.now_ms()));
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
        self.kill(&d.key);
        if path.is_some() {
            d.status.upgrade_savepoint_path.clone_from(&path);
            self.restore_point.clone_from(&path);
        }
        Ok(path)
    }

    async fn deploy(
        &mut self,
        d: &mut Deployment,
        spec: &DeploymentSpec,
        job: &JobSpec,
        raw: Value,
        from: Option<String>,
    ) {
        self.waiting = None;
        self.kill(&d.key);
        let dir = self.shared.deployment_dir(&d.key);
        self.run = next_run(&dir, self.run);
        self.last_checkpoint = None;
        let job_id = new_job_id(self.run);
        d.status.reconciled_spec = Some(raw.clone());
        d.status.upgrading = false;
        d.status.error = None;
        d.status.start_time_ms = None;
        d.status.job_id = Some(job_id.clone());
        self.restore_point = from;
        let jar = match job.jar_path() {
            Ok(j) => j,
            Err(e) => {
                fail(d, e.to_string(), JmStatus::Missing);
                return;
            }
        };
        let line = match self.shared.options.line(spec.flink_version.as_deref()) {
            Ok(line) => line,
            Err(e) => {
                fail(d, e.to_string(), JmStatus::Missing);
                return;
            }
        };
        let volume = match spec.sidecar_kubeconfig() {
            None => None,
            Some(mount) => {
                let client = &self.shared.client;
                match SecretVolume::mount(
                    client,
                    &d.key.namespace,
                    &mount,
                    &run_dir(&dir, self.run),
                )
                .await
                {
                    Ok(volume) => Some(volume),
                    Err(e) => {
                        tracing::warn!(deployment = %d.key, error = %e, "the sidecar's Secret volume cannot be mounted; the job starts once it can");
                        self.waiting = Some(WaitingStart {
                            spec: spec.clone(),
                            job: job.clone(),
                            raw,
                            from: self.restore_point.clone(),
                        });
                        d.status.lifecycle = LifecycleState::Deployed;
                        d.status.jm = JmStatus::Deploying;
                        d.status.job_state = Some(JobStatus::Reconciling);
                        return;
                    }
                }
            }
        };
        let launch = Launch {
            namespace: &d.key.namespace,
            line,
            spec,
            jar: &jar,
            job_id: &job_id,
            restore: self.restore_point.as_deref(),
            dir: &dir,
            run: self.run,
        };
        match JobProcess::spawn(&self.shared.options, &launch, volume) {
            Ok(process) => {
                tracing::info!(deployment = %d.key, %job_id, pid = process.pid(), rest_port = process.rest_port, from = ?self.restore_point, "job process started");
                self.shared.processes().insert(d.key.clone(), process);
                self.started = Some(Instant::now());
                d.status.lifecycle = LifecycleState::Deployed;
                d.status.jm = JmStatus::Deploying;
                d.status.job_state = Some(JobStatus::Reconciling);
            }
            Err(e) => fail(d, e.to_string(), JmStatus::Error),
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
