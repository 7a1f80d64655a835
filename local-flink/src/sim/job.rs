//! A simulated Flink job: an [`Engine`] driven by the simulation clock on its own task, with
//! periodic checkpoints, savepoints, stop-with-savepoint, cancellation, restarts from the last
//! checkpoint (Flink's fixed-delay restart strategy) and injected faults. Its progress is
//! published as a [`JobView`] that the REST endpoint and the local operator read.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bluegreen_protocol::flink::JobStatus;

use bluegreen_gate::{ConfigMapSource, GateHandle, SharedState, StateOptions};
use bluegreen_protocol::Color;
use tokio::sync::{mpsc, watch};

use super::clock::SimClock;
use super::config::JobSettings;
use super::engine::{Engine, Held, NO_WATERMARK, SubtaskCounters};
use super::faults::{Faults, JobFailure};
use super::ledger::Ledger;
use super::snapshot::{Snapshot, SnapshotKind, SnapshotStore};
use crate::DeploymentRef;
use crate::Error;

/// Flink's job status, as far as the simulation goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Submitted, not running yet.
    Created,
    /// Processing.
    Running,
    /// Restarting after a failure (waiting for the restart delay).
    Restarting,
    /// Failed for good.
    Failed,
    /// Cancelled (uncommitted output discarded).
    Canceled,
    /// Stopped with a savepoint.
    Finished,
}

impl JobState {
    /// Flink's job state.
    pub const fn status(self) -> JobStatus {
        match self {
            Self::Created => JobStatus::Created,
            Self::Running => JobStatus::Running,
            Self::Restarting => JobStatus::Restarting,
            Self::Failed => JobStatus::Failed,
            Self::Canceled => JobStatus::Canceled,
            Self::Finished => JobStatus::Finished,
        }
    }

    /// Flink's spelling.
    pub const fn as_str(self) -> &'static str {
        self.status().as_str()
    }

    /// Whether the job will never run again.
    pub const fn is_terminal(self) -> bool {
        self.status().is_terminal()
    }
}

/// The outcome of a savepoint request (Flink's asynchronous operation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SavepointOp {
    /// Not finished.
    InProgress,
    /// Stored at `location`.
    Completed {
        /// The savepoint path.
        location: String,
    },
    /// Failed.
    Failed {
        /// Java-style failure cause.
        cause: String,
    },
}

/// What the job looks like from outside, updated after every step.
#[derive(Debug, Clone)]
pub struct JobView {
    /// Job status.
    pub state: JobState,
    /// Simulation time the job started running.
    pub start_time_ms: i64,
    /// Simulation time it ended.
    pub end_time_ms: Option<i64>,
    /// Current attempt (restarts so far).
    pub attempt: u32,
    /// Simulation time the current attempt's tasks were deployed: Flink's vertex `start-time`
    /// (the earliest DEPLOYING timestamp of the current attempts), new on every restart.
    pub attempt_started_ms: i64,
    /// Watermark of the `Count -> Gate -> Sink` vertex.
    pub job_watermark: i64,
    /// Every input of that vertex is idle.
    pub inputs_idle: bool,
    /// Output watermark of every source subtask.
    pub source_watermarks: Vec<i64>,
    /// Records read per split.
    pub positions: Vec<u64>,
    /// Counters per gate-vertex subtask.
    pub counters: Vec<SubtaskCounters>,
    /// The gates of the current attempt.
    pub gates: Vec<GateHandle>,
    /// Completed checkpoints (savepoints included, as Flink counts them).
    pub completed_checkpoints: u64,
    /// Failed checkpoints and savepoints.
    pub failed_checkpoints: u64,
    /// Latest completed periodic checkpoint.
    pub latest_checkpoint: Option<Arc<Snapshot>>,
    /// Latest completed savepoint.
    pub latest_savepoint: Option<Arc<Snapshot>>,
    /// The snapshot the current attempt restored, and when.
    pub restored: Option<(Arc<Snapshot>, i64)>,
    /// Savepoint operations by request id.
    pub savepoints: HashMap<String, SavepointOp>,
    /// Why the job failed (last failure, also while restarting).
    pub failure: Option<String>,
    /// Simulation time the job has processed up to.
    pub processed_to: i64,
    /// Since when the gate holds a record, if it does.
    pub held_since: Option<i64>,
    /// When a restarting job runs again.
    pub restart_at: Option<i64>,
    /// The gates' shared-state generation the last step applied.
    pub gate_generation: Option<u64>,
}

impl JobView {
    /// Whether the job has done everything it will do up to simulation time `t`: processed
    /// every record readable by then (or stopped at one its gate holds), or is waiting for a later
    /// restart, or has ended.
    pub fn settled_at(&self, t: i64) -> bool {
        match self.state {
            // A held job still steps (and publishes) whenever the clock moves.
            JobState::Running => self.processed_to >= t,
            JobState::Restarting => self.restart_at.is_some_and(|r| r > t),
            JobState::Created | JobState::Failed | JobState::Canceled | JobState::Finished => true,
        }
    }
}

enum Command {
    Savepoint {
        request_id: String,
        stop: bool,
        /// Simulation time of the request (an injected delay counts from here).
        at: i64,
    },
    Cancel,
}

/// The services every job uses.
#[derive(Clone)]
pub(crate) struct JobRuntime {
    pub clock: SimClock,
    pub ledger: Arc<Ledger>,
    pub store: Arc<SnapshotStore>,
    pub faults: Faults,
    /// What the gates read the coordination ConfigMap with (see
    /// [`LocalFlinkOptions::gate_client`](super::LocalFlinkOptions::gate_client)), unless the
    /// deployment mounts a kubeconfig for them ([`crate::secret_volume`]).
    pub gate_client: kube::Client,
    /// The runner's own client: the Secrets a deployment mounts are read with it.
    pub client: kube::Client,
}

impl std::fmt::Debug for JobRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobRuntime")
            .field("clock", &self.clock)
            .field("sink_mode", &self.ledger.mode())
            .finish_non_exhaustive()
    }
}

/// A job, shared between its driver task, the REST endpoint and the local operator.
#[derive(Debug)]
pub struct SimJob {
    /// Flink job id (32 hex digits).
    pub job_id: String,
    /// The deployment running it.
    pub deployment: DeploymentRef,
    /// Its settings.
    pub settings: Arc<JobSettings>,
    view: Mutex<JobView>,
    updates: watch::Sender<u64>,
    commands: mpsc::UnboundedSender<Command>,
    gate_state: Mutex<Option<Arc<SharedState>>>,
    clock: SimClock,
}

impl SimJob {
    /// A copy of the job's current view.
    pub fn view(&self) -> JobView {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, JobView> {
        self.view.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, f: impl FnOnce(&mut JobView)) {
        f(&mut self.lock());
        self.updates.send_modify(|v| *v += 1);
    }

    /// A receiver that changes whenever the view does.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.updates.subscribe()
    }

    /// Whether the job has done everything it will do up to simulation time `t` under the
    /// newest coordination state its gates have received (see [`JobView::settled_at`]).
    pub fn settled_at(&self, t: i64) -> bool {
        let view = self.lock();
        if !view.settled_at(t) {
            return false;
        }
        let current = self
            .gate_state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|s| s.generation());
        view.state != JobState::Running || current.is_none() || view.gate_generation == current
    }

    fn clock_now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The gate's color, if the job has a gate.
    pub fn color(&self) -> Option<Color> {
        self.settings.gate.as_ref().map(|g| g.color)
    }

    /// Triggers a savepoint (`stop`: then stop the job, like `POST /jobs/:id/stop`); returns
    /// the request id to poll.
    pub fn trigger_savepoint(&self, stop: bool) -> Result<String, Error> {
        self.request_savepoint(stop, None)
    }

    /// Triggers a savepoint under `trigger_id` (the `triggerId` of `POST /jobs/:id/savepoints`):
    /// a request under an id the job already knows is acknowledged without a second savepoint,
    /// as Flink deduplicates trigger ids.
    pub fn trigger_savepoint_under(
        &self,
        stop: bool,
        trigger_id: Option<String>,
    ) -> Result<String, Error> {
        if let Some(id) = &trigger_id
            && self.lock().savepoints.contains_key(id)
        {
            return Ok(id.clone());
        }
        self.request_savepoint(stop, trigger_id)
    }

    /// Stops the job with a savepoint, without drain (`POST /jobs/:id/stop`): the savepoint
    /// commits the sink and the job ends FINISHED. A request under a `trigger_id` the job already
    /// knows is acknowledged without a second stop, as Flink deduplicates trigger ids.
    pub fn stop_with_savepoint(&self, trigger_id: Option<String>) -> Result<String, Error> {
        if let Some(id) = &trigger_id
            && self.lock().savepoints.contains_key(id)
        {
            return Ok(id.clone());
        }
        self.request_savepoint(true, trigger_id)
    }

    fn request_savepoint(&self, stop: bool, trigger_id: Option<String>) -> Result<String, Error> {
        let state = self.lock().state;
        let request_id = trigger_id
            .unwrap_or_else(|| format!("{:032x}", u128::from(super::source::mix(rand_seed()))));
        if state != JobState::Running {
            let cause = format!(
                "org.apache.flink.runtime.checkpoint.CheckpointException: Job {} is {}: not all required tasks are currently running.",
                self.job_id,
                state.as_str()
            );
            self.publish(|v| {
                v.savepoints
                    .insert(request_id.clone(), SavepointOp::Failed { cause });
            });
            return Ok(request_id);
        }
        self.publish(|v| {
            v.savepoints
                .insert(request_id.clone(), SavepointOp::InProgress);
        });
        self.commands
            .send(Command::Savepoint {
                request_id: request_id.clone(),
                stop,
                at: self.clock_now(),
            })
            .map_err(|_| Error::JobState {
                job_id: self.job_id.clone(),
                state: state.as_str().into(),
                action: "savepoint",
            })?;
        Ok(request_id)
    }

    /// Waits until the savepoint `request_id` has finished (bounded by `timeout`, wall clock).
    pub async fn await_savepoint(
        &self,
        request_id: &str,
        timeout: Duration,
    ) -> Result<SavepointOp, Error> {
        let mut rx = self.subscribe();
        let wait = async {
            loop {
                match self.lock().savepoints.get(request_id) {
                    Some(SavepointOp::InProgress) => {}
                    Some(op) => return op.clone(),
                    None => {
                        return SavepointOp::Failed {
                            cause: format!("unknown savepoint request {request_id}"),
                        };
                    }
                }
                if rx.changed().await.is_err() {
                    return SavepointOp::Failed {
                        cause: "job ended".into(),
                    };
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| Error::Timeout {
                what: format!("savepoint {request_id} of job {}", self.job_id),
                waited_ms: timeout.as_millis(),
            })
    }

    /// Cancels the job: uncommitted output is discarded.
    pub fn cancel(&self) {
        // A send error means the driver has already ended: nothing to cancel.
        let _ = self.commands.send(Command::Cancel);
    }

    /// Waits until the job is in a terminal state.
    pub async fn await_terminal(&self, timeout: Duration) -> Result<JobState, Error> {
        let mut rx = self.subscribe();
        let wait = async {
            loop {
                let state = self.lock().state;
                if state.is_terminal() || rx.changed().await.is_err() {
                    return self.lock().state;
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| Error::Timeout {
                what: format!("job {} to end", self.job_id),
                waited_ms: timeout.as_millis(),
            })
    }
}

/// Some entropy for request ids (they need to be unique, not reproducible).
fn rand_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    h.finish()
}

/// A fresh Flink-style job id.
pub(crate) fn new_job_id() -> String {
    format!(
        "{:016x}{:016x}",
        super::source::mix(rand_seed()),
        super::source::mix(rand_seed())
    )
}

/// Starts a job now (it is RUNNING at once; the operator models the start-up delay before).
pub(crate) fn start_job(
    rt: &JobRuntime,
    job_id: String,
    deployment: DeploymentRef,
    settings: Arc<JobSettings>,
    restore: Option<Arc<Snapshot>>,
    gate_client: Option<kube::Client>,
) -> Arc<SimJob> {
    let now = rt.clock.now_ms();
    let (tx, rx) = mpsc::unbounded_channel();
    let job = Arc::new(SimJob {
        job_id,
        deployment,
        view: Mutex::new(JobView {
            state: JobState::Running,
            start_time_ms: now,
            end_time_ms: None,
            attempt: 0,
            attempt_started_ms: now,
            job_watermark: NO_WATERMARK,
            inputs_idle: false,
            source_watermarks: vec![NO_WATERMARK; settings.parallelism as usize],
            positions: vec![0; settings.source.splits as usize],
            counters: Vec::new(),
            gates: Vec::new(),
            completed_checkpoints: 0,
            failed_checkpoints: 0,
            latest_checkpoint: None,
            latest_savepoint: None,
            restored: restore.clone().map(|s| (s, now)),
            savepoints: HashMap::new(),
            failure: None,
            processed_to: now,
            held_since: None,
            restart_at: None,
            gate_generation: None,
        }),
        updates: watch::channel(0).0,
        commands: tx,
        gate_state: Mutex::new(None),
        clock: rt.clock.clone(),
        settings,
    });
    let gate = job.settings.gate.as_ref().map(|target| {
        let shared = SharedState::new(StateOptions::default());
        let watch = ConfigMapSource::new(
            gate_client.unwrap_or_else(|| rt.gate_client.clone()),
            &target.namespace,
            &target.configmap,
            Arc::clone(&shared),
        )
        .spawn();
        (target.color, shared, watch)
    });
    if let Some((_, shared, _)) = &gate {
        *job.gate_state
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(shared));
    }
    let driver = Driver {
        job: Arc::clone(&job),
        rt: rt.clone(),
        commands: rx,
        queue: VecDeque::new(),
        gate: gate.as_ref().map(|(c, s, _)| (*c, Arc::clone(s))),
        recovery: restore,
        checkpoint_id: 0,
        restarts: 0,
        faults_rx: rt.faults.subscribe(),
    };
    tokio::spawn(async move {
        driver.run().await;
        if let Some((_, _, watch)) = gate {
            watch.abort();
        }
    });
    job
}

struct Driver {
    job: Arc<SimJob>,
    rt: JobRuntime,
    commands: mpsc::UnboundedReceiver<Command>,
    queue: VecDeque<Command>,
    gate: Option<(Color, Arc<SharedState>)>,
    /// Where a restart resumes: the latest completed checkpoint, else the initial snapshot.
    recovery: Option<Arc<Snapshot>>,
    checkpoint_id: u64,
    restarts: u32,
    faults_rx: watch::Receiver<u64>,
}

struct PendingSavepoint {
    request_id: String,
    stop: bool,
    fail: bool,
    ready_at: i64,
}

/// Why an attempt ended.
enum AttemptEnd {
    Failed(JobFailure, String),
    Terminal,
}

impl Driver {
    async fn run(mut self) {
        self.checkpoint_id = self.recovery.as_ref().map_or(0, |s| s.id);
        loop {
            let attempt = self.restarts;
            match self.run_attempt(attempt).await {
                AttemptEnd::Terminal => return,
                AttemptEnd::Failed(how, reason) => {
                    if !self.fail(how, attempt, reason).await {
                        return;
                    }
                }
            }
        }
    }

    fn job_id(&self) -> &str {
        &self.job.job_id
    }

    /// Handles a failure of `attempt`; returns whether the job restarts.
    async fn fail(&mut self, how: JobFailure, attempt: u32, reason: String) -> bool {
        self.rt.ledger.abort(self.job_id(), attempt);
        let now = self.rt.clock.now_ms();
        let strategy = self.job.settings.restart;
        tracing::info!(job = %self.job.deployment, attempt, %reason, "simulated job failed");
        if how == JobFailure::Permanent || self.restarts >= strategy.attempts {
            self.job.publish(|v| {
                v.state = JobState::Failed;
                v.end_time_ms = Some(now);
                v.failure = Some(reason);
                v.held_since = None;
            });
            self.fail_pending_savepoints("the job failed");
            return false;
        }
        let restart_at = now.saturating_add(strategy.delay_ms);
        self.job.publish(|v| {
            v.state = JobState::Restarting;
            v.failure = Some(reason);
            v.held_since = None;
            v.restart_at = Some(restart_at);
        });
        loop {
            self.fail_pending_savepoints("the job is restarting");
            if self.queue.iter().any(|c| matches!(c, Command::Cancel)) {
                self.end(JobState::Canceled);
                return false;
            }
            let now = self.rt.clock.now_ms();
            if now >= restart_at {
                break;
            }
            tokio::select! {
                cmd = self.commands.recv() => match cmd {
                    Some(cmd) => self.queue.push_back(cmd),
                    None => return false,
                },
                () = self.rt.clock.sleep_until(restart_at) => {}
            }
        }
        self.restarts += 1;
        true
    }

    fn fail_pending_savepoints(&mut self, why: &str) {
        let mut failed = Vec::new();
        self.queue.retain(|c| match c {
            Command::Savepoint { request_id, .. } => {
                failed.push(request_id.clone());
                false
            }
            Command::Cancel => true,
        });
        while let Ok(cmd) = self.commands.try_recv() {
            match cmd {
                Command::Savepoint { request_id, .. } => failed.push(request_id),
                Command::Cancel => self.queue.push_back(Command::Cancel),
            }
        }
        self.decline_savepoints(failed, why);
    }

    /// Marks the savepoint requests `ids` failed because of `why`.
    fn decline_savepoints(&self, ids: impl IntoIterator<Item = String>, why: &str) {
        let failed: Vec<String> = ids.into_iter().collect();
        if !failed.is_empty() {
            tracing::info!(job = %self.job.deployment, count = failed.len(), %why, "pending savepoints declined");
            let cause = format!(
                "org.apache.flink.runtime.checkpoint.CheckpointException: {why}; savepoint declined"
            );
            self.job.publish(|v| {
                v.failed_checkpoints += failed.len() as u64;
                for id in failed {
                    v.savepoints.insert(
                        id,
                        SavepointOp::Failed {
                            cause: cause.clone(),
                        },
                    );
                }
            });
        }
    }

    fn end(&self, state: JobState) {
        self.end_at(state, self.rt.clock.now_ms());
    }

    fn end_at(&self, state: JobState, now: i64) {
        self.job.publish(|v| {
            v.state = state;
            v.end_time_ms = Some(now);
            v.held_since = None;
        });
    }

    /// Runs one attempt; a savepoint it had taken in hand but not finished is declined when it
    /// ends, as Flink aborts pending checkpoints and savepoints on a failover or when the job
    /// ends (left `IN_PROGRESS`, whoever waits for it would wait for ever).
    async fn run_attempt(&mut self, attempt: u32) -> AttemptEnd {
        let mut savepoints = Vec::new();
        let end = self.attempt(attempt, &mut savepoints).await;
        let why = match &end {
            AttemptEnd::Failed(..) => "the job failed over",
            AttemptEnd::Terminal => "the job ended",
        };
        self.decline_savepoints(savepoints.into_iter().map(|sp| sp.request_id), why);
        end
    }

    async fn attempt(
        &mut self,
        attempt: u32,
        savepoints: &mut Vec<PendingSavepoint>,
    ) -> AttemptEnd {
        let settings = Arc::clone(&self.job.settings);
        let start = self.rt.clock.now_ms();
        let mut engine = match Engine::new(
            Arc::clone(&settings),
            self.job.job_id.clone(),
            attempt,
            start,
            self.recovery.as_deref(),
            self.gate.clone(),
        ) {
            Ok(e) => e,
            Err(e) => return AttemptEnd::Failed(JobFailure::Permanent, e.to_string()),
        };
        let recovery = self.recovery.clone();
        self.job.publish(|v| {
            v.state = JobState::Running;
            v.restart_at = None;
            v.processed_to = start;
            v.attempt = attempt;
            v.attempt_started_ms = start;
            v.gates = engine.gate_handles();
            if attempt > 0 {
                v.restored = recovery.map(|s| (s, start));
            }
        });
        if self.rt.faults.is_crash_looping(&self.job.deployment) {
            return AttemptEnd::Failed(
                JobFailure::Restart,
                "java.lang.RuntimeException: injected crash loop".into(),
            );
        }
        let interval = settings.checkpoint_interval_ms;
        let mut next_checkpoint = interval.map(|i| start.saturating_add(i));
        loop {
            let now = self.rt.clock.now_ms();
            if self.take_commands(attempt, savepoints) {
                return AttemptEnd::Terminal;
            }
            if let Some(how) = self.rt.faults.take_due_failure(&self.job.deployment, now) {
                return AttemptEnd::Failed(
                    how,
                    "java.lang.RuntimeException: injected failure".into(),
                );
            }
            let stopped = self.rt.faults.stopped_splits(settings.source.splits);
            let lag = self.rt.faults.lag_ms(&self.job.deployment);
            while let (Some(at), Some(i)) = (next_checkpoint.filter(|at| *at <= now), interval) {
                engine.run_until(at.saturating_sub(lag), &stopped, &self.rt.ledger);
                if let Err(e) = self.complete_snapshot(&engine, SnapshotKind::Checkpoint, at) {
                    tracing::warn!(job = %self.job.deployment, error = %e, "checkpoint failed");
                    self.job.publish(|v| v.failed_checkpoints += 1);
                }
                next_checkpoint = Some(at.saturating_add(i));
            }
            let gate_seen = self.gate.as_ref().map(|g| g.1.generation());
            engine.refresh_gates();
            let held = engine.run_until(now.saturating_sub(lag), &stopped, &self.rt.ledger);
            if let Some(reason) = held.and_then(|h| self.hold_timeout(h, now)) {
                return AttemptEnd::Failed(JobFailure::Restart, reason);
            }
            let finished = self.finish_due_savepoints(&engine, savepoints, attempt, now);
            self.job.publish(|v| {
                v.job_watermark = engine.job_watermark();
                v.inputs_idle = engine.inputs_idle();
                v.source_watermarks = engine.source_watermarks().to_vec();
                v.positions = engine.positions().to_vec();
                v.counters = engine.counters().to_vec();
                v.processed_to = now;
                v.held_since = held.map(|h| h.since_ms);
                v.gate_generation = gate_seen;
            });
            if finished {
                self.end_at(JobState::Finished, now);
                return AttemptEnd::Terminal;
            }
            self.wait(now, gate_seen).await;
        }
    }

    /// Takes the queued commands: savepoint requests join `savepoints`; returns whether the job
    /// was cancelled.
    fn take_commands(&mut self, attempt: u32, savepoints: &mut Vec<PendingSavepoint>) -> bool {
        while let Ok(cmd) = self.commands.try_recv() {
            self.queue.push_back(cmd);
        }
        while let Some(cmd) = self.queue.pop_front() {
            match cmd {
                Command::Cancel => {
                    self.rt.ledger.abort(self.job_id(), attempt);
                    self.end(JobState::Canceled);
                    return true;
                }
                Command::Savepoint {
                    request_id,
                    stop,
                    at,
                } => {
                    let f = self.rt.faults.take_savepoint_fault(&self.job.deployment);
                    savepoints.push(PendingSavepoint {
                        request_id,
                        stop,
                        fail: f.fail,
                        ready_at: at.saturating_add(f.delay_ms),
                    });
                }
            }
        }
        false
    }

    /// The failure message if `held` has been on HOLD longer than the hold timeout.
    fn hold_timeout(&self, held: Held, now: i64) -> Option<String> {
        let waited = now.saturating_sub(held.since_ms);
        if waited <= self.job.settings.hold_timeout_ms {
            return None;
        }
        let err = bluegreen_gate::Error::HoldTimeout {
            color: self.gate.as_ref().map_or(Color::Blue, |g| g.0),
            event_time_ms: held.record.event_time,
            waited: Duration::from_millis(u64::try_from(waited).unwrap_or(0)),
            state: self
                .gate
                .as_ref()
                .and_then(|g| g.1.current())
                .map_or_else(|| "no valid state".to_owned(), |s| s.to_string()),
        };
        Some(err.to_string())
    }

    /// Completes the savepoints due by `now`; returns whether one of them stopped the job.
    fn finish_due_savepoints(
        &mut self,
        engine: &Engine,
        savepoints: &mut Vec<PendingSavepoint>,
        attempt: u32,
        now: i64,
    ) -> bool {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(savepoints)
            .into_iter()
            .partition(|sp| sp.ready_at <= now);
        *savepoints = later;
        let mut finished = false;
        for sp in due {
            finished |= self.finish_savepoint(engine, &sp, attempt, now);
        }
        finished
    }

    /// Sleeps until the clock moves, a command arrives or the gates' state changes.
    /// `gate_seen` is the gates' generation applied in the last step.
    async fn wait(&mut self, now: i64, gate_seen: Option<u64>) {
        let shared = self.gate.as_ref().map(|g| Arc::clone(&g.1));
        let faults = &mut self.faults_rx;
        let gate_changed = async {
            match (&shared, gate_seen) {
                (Some(s), Some(seen)) => s.changed(seen).await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            cmd = self.commands.recv() => {
                if let Some(cmd) = cmd {
                    self.queue.push_back(cmd);
                }
            }
            () = self.rt.clock.tick(now) => {}
            () = gate_changed => {}
            _ = faults.changed() => {}
        }
    }

    /// Completes a savepoint request; returns whether the job stops.
    fn finish_savepoint(
        &mut self,
        engine: &Engine,
        sp: &PendingSavepoint,
        attempt: u32,
        now: i64,
    ) -> bool {
        if sp.fail {
            let cause = "org.apache.flink.runtime.checkpoint.CheckpointException: injected savepoint failure".to_owned();
            self.job.publish(|v| {
                v.failed_checkpoints += 1;
                v.savepoints
                    .insert(sp.request_id.clone(), SavepointOp::Failed { cause });
            });
            return false;
        }
        match self.complete_snapshot(engine, SnapshotKind::Savepoint, now) {
            Ok(snapshot) => {
                if sp.stop {
                    // stop-with-savepoint is the one savepoint that commits side effects.
                    self.rt.ledger.commit(self.job_id(), attempt);
                }
                self.job.publish(|v| {
                    v.savepoints.insert(
                        sp.request_id.clone(),
                        SavepointOp::Completed {
                            location: snapshot.path.clone(),
                        },
                    );
                });
                sp.stop
            }
            Err(e) => {
                self.job.publish(|v| {
                    v.failed_checkpoints += 1;
                    v.savepoints.insert(
                        sp.request_id.clone(),
                        SavepointOp::Failed {
                            cause: e.to_string(),
                        },
                    );
                });
                false
            }
        }
    }

    /// Takes and stores a checkpoint or savepoint; a checkpoint also commits the sink.
    fn complete_snapshot(
        &mut self,
        engine: &Engine,
        kind: SnapshotKind,
        at: i64,
    ) -> Result<Arc<Snapshot>, Error> {
        self.checkpoint_id += 1;
        let id = self.checkpoint_id;
        let path = self.rt.store.new_path(kind, self.job_id(), id);
        let snapshot = self.rt.store.put(engine.snapshot(kind, id, path, at))?;
        if kind == SnapshotKind::Checkpoint {
            self.rt.ledger.commit(self.job_id(), engine.attempt());
            self.recovery = Some(Arc::clone(&snapshot));
        }
        let s = Arc::clone(&snapshot);
        self.job.publish(|v| {
            v.completed_checkpoints += 1;
            match kind {
                SnapshotKind::Checkpoint => v.latest_checkpoint = Some(s),
                SnapshotKind::Savepoint => v.latest_savepoint = Some(s),
            }
        });
        Ok(snapshot)
    }
}
