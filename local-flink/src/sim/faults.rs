//! Fault injection: a typed handle that makes simulated deployments, jobs, savepoints, splits
//! and REST endpoints misbehave on purpose.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::clock::SimClock;
use crate::DeploymentRef;

/// How an injected job failure ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobFailure {
    /// The job restarts from its last checkpoint, as Flink's restart strategy does (if it has
    /// attempts left).
    Restart,
    /// The job fails for good (status FAILED), whatever its restart strategy.
    Permanent,
}

/// How a deployment's REST endpoint misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestFault {
    /// Answers normally.
    #[default]
    Healthy,
    /// Answers every request with 500 Internal Server Error.
    ServerError,
    /// Never answers (the client's timeout fires).
    Hang,
}

#[derive(Debug, Default)]
struct DeploymentFaults {
    fail_at: Vec<(i64, JobFailure)>,
    failing_savepoints: u32,
    savepoint_delay_ms: i64,
    extra_startup_ms: i64,
    crash_loop: bool,
    rest: RestFault,
    gate_in_source: bool,
    lag_ms: i64,
}

#[derive(Debug, Default)]
struct State {
    deployments: HashMap<DeploymentRef, DeploymentFaults>,
    stopped_splits: HashMap<u32, i64>,
}

/// What the next savepoint of a deployment suffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SavepointFault {
    pub fail: bool,
    pub delay_ms: i64,
}

/// The fault-injection handle of a runner (cheap to clone).
#[derive(Debug, Clone)]
pub struct Faults {
    clock: SimClock,
    state: Arc<Mutex<State>>,
    /// Bumped on every change, so that idle jobs notice a fault at once.
    changes: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Faults {
    pub(crate) fn new(clock: SimClock) -> Self {
        Self {
            clock,
            state: Arc::default(),
            changes: Arc::new(tokio::sync::watch::channel(0).0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        self.changes.send_modify(|v| *v += 1);
    }

    /// A receiver that changes whenever a fault is injected or cleared.
    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn with<R>(&self, d: &DeploymentRef, f: impl FnOnce(&mut DeploymentFaults) -> R) -> R {
        let r = f(self.lock().deployments.entry(d.clone()).or_default());
        self.bump();
        r
    }

    /// Fails the job of `d` when the simulation clock reaches `at_ms` (at once if it already
    /// has).
    pub fn fail_job_at(&self, d: &DeploymentRef, at_ms: i64, how: JobFailure) {
        self.with(d, |f| f.fail_at.push((at_ms, how)));
    }

    /// Fails the job of `d` at the current simulation time.
    pub fn fail_job_now(&self, d: &DeploymentRef, how: JobFailure) {
        self.fail_job_at(d, self.clock.now_ms(), how);
    }

    /// Makes the next `count` savepoints of `d` fail (REST status COMPLETED with a
    /// `failure-cause`; a stop-with-savepoint leaves the job running).
    pub fn fail_next_savepoints(&self, d: &DeploymentRef, count: u32) {
        self.with(d, |f| f.failing_savepoints = count);
    }

    /// Serves the gate's metrics of `d` on the source vertex, as when the gate is chained into
    /// it; that vertex has no input watermark (`/watermarks` answers `[]`), as in Flink.
    pub fn chain_gate_into_source(&self, d: &DeploymentRef, on: bool) {
        self.with(d, |f| f.gate_in_source = on);
    }

    /// Whether the gate of `d` is served on the source vertex.
    pub(crate) fn gate_in_source(&self, d: &DeploymentRef) -> bool {
        self.lock()
            .deployments
            .get(d)
            .is_some_and(|f| f.gate_in_source)
    }

    /// Makes every savepoint of `d` take `delay_ms` of simulated time (0: immediate).
    pub fn delay_savepoints(&self, d: &DeploymentRef, delay_ms: i64) {
        self.with(d, |f| f.savepoint_delay_ms = delay_ms.max(0));
    }

    /// Adds `extra_ms` to the start-up delay of `d`'s next deployments.
    pub fn slow_start(&self, d: &DeploymentRef, extra_ms: i64) {
        self.with(d, |f| f.extra_startup_ms = extra_ms.max(0));
    }

    /// Makes every attempt of `d`'s job fail right after it starts (until switched off).
    pub fn crash_loop(&self, d: &DeploymentRef, on: bool) {
        self.with(d, |f| f.crash_loop = on);
    }

    /// Makes the job of `d` lag behind the topic: it reads only records that arrived at least
    /// `lag_ms` ago (a slow consumer, far behind the other color); `0` lets it catch up at once.
    pub fn lag(&self, d: &DeploymentRef, lag_ms: i64) {
        self.with(d, |f| f.lag_ms = lag_ms.max(0));
    }

    /// How far the job of `d` lags behind the topic (ms).
    pub(crate) fn lag_ms(&self, d: &DeploymentRef) -> i64 {
        self.lock().deployments.get(d).map_or(0, |f| f.lag_ms)
    }

    /// Makes `split` of the topic deliver nothing from now on (its records pile up) until
    /// [`resume_split`](Self::resume_split).
    pub fn stop_split(&self, split: u32) {
        let now = self.clock.now_ms();
        self.lock().stopped_splits.entry(split).or_insert(now);
        self.bump();
    }

    /// Lets a stopped split deliver again (its backlog at once).
    pub fn resume_split(&self, split: u32) {
        self.lock().stopped_splits.remove(&split);
        self.bump();
    }

    /// Makes the REST endpoint of `d` misbehave (or heal with [`RestFault::Healthy`]).
    pub fn rest(&self, d: &DeploymentRef, fault: RestFault) {
        self.with(d, |f| f.rest = fault);
    }

    /// Removes every fault of `d`.
    pub fn clear(&self, d: &DeploymentRef) {
        self.lock().deployments.remove(d);
        self.bump();
    }

    pub(crate) fn take_due_failure(&self, d: &DeploymentRef, now_ms: i64) -> Option<JobFailure> {
        let mut state = self.lock();
        let f = state.deployments.get_mut(d)?;
        let i = f.fail_at.iter().position(|(at, _)| *at <= now_ms)?;
        Some(f.fail_at.remove(i).1)
    }

    pub(crate) fn take_savepoint_fault(&self, d: &DeploymentRef) -> SavepointFault {
        let mut state = self.lock();
        let f = state.deployments.entry(d.clone()).or_default();
        {
            let fail = f.failing_savepoints > 0;
            if fail {
                f.failing_savepoints -= 1;
            }
            SavepointFault {
                fail,
                delay_ms: f.savepoint_delay_ms,
            }
        }
    }

    pub(crate) fn extra_startup_ms(&self, d: &DeploymentRef) -> i64 {
        self.lock()
            .deployments
            .get(d)
            .map_or(0, |f| f.extra_startup_ms)
    }

    pub(crate) fn is_crash_looping(&self, d: &DeploymentRef) -> bool {
        self.lock().deployments.get(d).is_some_and(|f| f.crash_loop)
    }

    pub(crate) fn rest_fault(&self, d: &DeploymentRef) -> RestFault {
        self.lock()
            .deployments
            .get(d)
            .map_or(RestFault::Healthy, |f| f.rest)
    }

    /// Per split, since when it is stopped.
    pub(crate) fn stopped_splits(&self, splits: u32) -> Vec<Option<i64>> {
        let state = self.lock();
        (0..splits)
            .map(|s| state.stopped_splits.get(&s).copied())
            .collect()
    }
}
