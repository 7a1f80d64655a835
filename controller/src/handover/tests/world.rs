//! A model of the world around the controller — the ConfigMap, two jobs with gates that see the
//! ConfigMap late, savepoints, checkpoints, deletions, an incoming job that fails for good after W
//! is set — driven by `plan` with crashes between any two actions. Each job emits one record per
//! event-time tick through the protocol's rule into a transactional sink (visible at the job's
//! next checkpoint or stop-with-savepoint, discarded when it fails); after the handovers every
//! tick must have been emitted exactly once.

use std::collections::BTreeMap;

use bluegreen_protocol::flink::{JobStatus, LifecycleState};
use bluegreen_protocol::{
    AppliedState, Color, CoordinationState, Decision, GateReport, Rule, Stage, WatermarkStage,
    check_transition,
};
use jiff::SignedDuration;
use proptest::prelude::*;

use crate::fixtures::observed;
use crate::handover::{Action, plan};
use crate::observed::{ChildObs, ConfigMapObs, FlinkObs, GateObs, Observed, SavepointObs};
use crate::resource::{FlinkBlueGreenDeploymentStatus, Outcome, Phase};

/// Deterministic choices from a proptest seed.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One simulated job.
#[derive(Clone, Debug)]
struct Job {
    color: Color,
    hash: String,
    /// Steps until it runs.
    starting: u64,
    deleting: bool,
    /// Next tick to process (records are in event-time order: the watermark is `next - 1`).
    next: i64,
    max_passed: Option<i64>,
    /// The ConfigMap states this job's gates have seen, newest last; they apply them late.
    seen: Vec<CoordinationState>,
    /// Index in `seen` of the state the gates apply: it only moves forward, late.
    applied: usize,
    /// A savepoint: its trigger id, the steps until it completes and the tick it stands for.
    savepoint: Option<(String, u64, i64)>,
    /// A stop-with-savepoint: its trigger id and the steps until the job is FINISHED.
    stop: Option<(String, u64)>,
    checkpoints: u64,
    /// Position and maximum passed tick at the last completed checkpoint.
    checkpoint: Option<(i64, Option<i64>)>,
    /// Ticks passed since the last checkpoint: not visible yet (transactional sink).
    pending: Vec<i64>,
    /// Failed for good (the restart strategy is exhausted).
    failed: bool,
    /// When the tasks of the current attempt started (world time, ms): Flink's vertex
    /// `start-time`, new on every restart.
    tasks_started_at: i64,
    /// Where the job started (the tick its restore path stands for).
    origin: i64,
    /// Restarts so far (a failover from the last checkpoint; the job stays RUNNING).
    restarts: u32,
    /// `spec.restartNonce` of its FlinkDeployment.
    restart_nonce: Option<i64>,
    /// After a restart, Flink's metric store serves the previous attempt's gate report until
    /// this world time (ms).
    stale: Option<(i64, GateReport)>,
}

impl Job {
    fn view(&self) -> Option<&CoordinationState> {
        self.seen.get(self.applied)
    }

    fn running(&self) -> bool {
        self.starting == 0 && !self.deleting && !self.finished() && !self.failed
    }

    fn checkpoint_path(&self) -> Option<String> {
        self.checkpoint
            .map(|(pos, _)| format!("cp-{}-{pos}", self.color.suffix()))
    }

    fn finished(&self) -> bool {
        self.stop.as_ref().is_some_and(|(_, left)| *left == 0)
    }

    /// The gate report of the current attempt.
    fn report(&self) -> GateReport {
        GateReport {
            applied: self.view().map(AppliedState::from),
            max_passed: self.max_passed,
            watermark: Some(self.next - 1),
            idle: false,
            color: Some(self.color),
            problem: None,
        }
    }

    /// Back to the last checkpoint (a failover, or a restart after a failure): the open
    /// transaction and a stop in progress are gone, the tasks get a new start time, and the
    /// metric store serves the old report for `stale_ms`.
    fn rewind(&mut self, now: i64, stale_ms: i64) {
        if stale_ms > 0 && self.running() {
            self.stale = Some((now + stale_ms, self.report()));
        }
        let (next, max_passed) = self.checkpoint.unwrap_or((self.origin, None));
        self.next = next;
        self.max_passed = max_passed;
        self.pending.clear();
        self.stop = None;
        self.restarts += 1;
        self.tasks_started_at = now;
    }
}

struct World {
    obs: Observed,
    configmap: Option<CoordinationState>,
    jobs: BTreeMap<Color, Job>,
    /// Emissions per tick.
    ledger: BTreeMap<i64, u32>,
    savepoints: BTreeMap<String, i64>,
    dice: Dice,
    /// Fail the incoming job for good once, at a random step of `ToggleSet` in the handover to
    /// this template.
    fail_incoming_of: Option<String>,
    /// A planted defect: the operator restores a repaired job from the handover's starting
    /// savepoint instead of its own latest checkpoint.
    repair_from_starting_savepoint: bool,
    /// Fail the incoming job only once a checkpoint of its own has committed records above W.
    fail_after_commit: bool,
    /// Restart the incoming job at random before W is set (a crash loop that settles), at most
    /// this many times per job.
    restarts_before_w: u32,
    /// Overrides the uptime the oracle requires of the incoming job when W is set.
    required_up_ms: Option<i64>,
    /// Fail the outgoing job for good once, at a random step after W is set and before its
    /// stop completes, in the handover to this template.
    fail_outgoing_of: Option<String>,
    /// Restart (fail over) the outgoing job at random after W is set, at most this many times
    /// per handover.
    outgoing_restarts_after_w: u32,
    /// How long after a restart the metric store serves the previous attempt's gate report.
    stale_ms: i64,
    /// The outgoing job checkpoints rarely once W is proposed (a checkpoint interval longer
    /// than the handover), so a restart goes back below W.
    sparse_outgoing_checkpoints: bool,
}

impl World {
    fn new(seed: u64) -> Self {
        let mut obs = observed();
        obs.valid = crate::fixtures::valid(|s| {
            s.coordination.toggle.offset = Some("20ms".into());
            s.coordination.forward_repair.grace = "3s".into();
            s.coordination.health.min_checkpoints = 3;
            s.coordination.min_ready = "4s".into();
        });
        Self {
            obs,
            configmap: None,
            jobs: BTreeMap::new(),
            ledger: BTreeMap::new(),
            savepoints: BTreeMap::new(),
            dice: Dice(seed),
            fail_incoming_of: None,
            repair_from_starting_savepoint: false,
            fail_after_commit: false,
            restarts_before_w: 3,
            required_up_ms: None,
            fail_outgoing_of: None,
            outgoing_restarts_after_w: 0,
            stale_ms: 0,
            sparse_outgoing_checkpoints: false,
        }
    }

    /// Restarts the incoming job at random while W is not set (Deploying, ConfirmingToggle), as
    /// a region failover does: back to its last checkpoint, its open transaction discarded, new
    /// task start times, and the job RUNNING throughout.
    fn maybe_restart_incoming(&mut self) {
        let Some(t) = &self.obs.status.transition else {
            return;
        };
        if !matches!(t.phase, Phase::Deploying | Phase::ConfirmingToggle) || t.from.is_none() {
            return;
        }
        let to = t.to;
        let coin = self.dice.below(4) == 0;
        let now = self.obs.now.as_millisecond();
        let limit = self.restarts_before_w;
        let stale_ms = self.stale_ms;
        if let Some(job) = self.jobs.get_mut(&to)
            && job.running()
            && coin
            && job.restarts < limit
        {
            job.rewind(now, stale_ms);
        }
    }

    /// After W is set and until its stop completes, the outgoing job fails over at random (back
    /// to its last checkpoint, which may lie below W) and, in one chosen handover, fails for
    /// good once.
    fn maybe_disturb_outgoing(&mut self) {
        let Some(t) = &self.obs.status.transition else {
            return;
        };
        let after_w = matches!(
            t.phase,
            Phase::ToggleSet | Phase::ClearToTeardown | Phase::TearingDown
        );
        let Some(from) = t.from.filter(|_| after_w) else {
            return;
        };
        let fail = self.fail_outgoing_of.as_deref() == Some(t.template_hash.as_str())
            && self.dice.below(3) == 0;
        let restart = self.dice.below(3) == 0;
        let now = self.obs.now.as_millisecond();
        let (limit, stale_ms) = (self.outgoing_restarts_after_w, self.stale_ms);
        let Some(job) = self.jobs.get_mut(&from).filter(|j| j.running()) else {
            return;
        };
        if fail {
            job.failed = true;
            job.pending.clear();
            job.stop = None;
            self.fail_outgoing_of = None;
        } else if restart && job.restarts < limit {
            job.rewind(now, stale_ms);
        }
    }

    /// How long the incoming job must have run since its last (re)start when W is set: the
    /// `coordination.minReady` of the world's settings, unless a test plants a defect.
    fn min_ready_ms(&self) -> i64 {
        self.required_up_ms.unwrap_or_else(|| {
            let valid = self.obs.valid.as_ref().expect("a valid spec");
            i64::try_from(valid.settings.min_ready.as_millis()).expect("small")
        })
    }

    /// Makes the pending emissions of `color` visible (a checkpoint or a stop-with-savepoint).
    fn commit(&mut self, color: Color) {
        let job = self.jobs.get_mut(&color).expect("job");
        for tick in job.pending.drain(..) {
            *self.ledger.entry(tick).or_default() += 1;
        }
    }

    /// Fails the incoming job for good, once, while the handover waits in `ToggleSet` (W set)
    /// and the job has a checkpoint of its own: its open transaction is discarded. At latest
    /// when it has two checkpoints, so before it can be promoted (three are required).
    fn maybe_fail_incoming(&mut self) {
        let Some(t) = &self.obs.status.transition else {
            return;
        };
        if t.phase != Phase::ToggleSet
            || self.fail_incoming_of.as_deref() != Some(t.template_hash.as_str())
        {
            return;
        }
        let coin = self.dice.below(2) == 0;
        let after_commit = self.fail_after_commit;
        if let Some(job) = self.jobs.get_mut(&t.to)
            && job.running()
            && let Some((_, committed_max)) = job.checkpoint
            && if after_commit {
                committed_max.is_some()
            } else {
                coin || job.checkpoints >= 2
            }
        {
            job.failed = true;
            job.pending.clear();
            self.fail_incoming_of = None;
        }
    }

    /// Jobs process up to 5 ticks each (a Hold stalls them); savepoints progress; deletions finish.
    fn advance(&mut self) {
        self.obs.now += SignedDuration::from_secs(1);
        let cm = self.configmap;
        let colors: Vec<Color> = self.jobs.keys().copied().collect();
        for color in colors {
            let steps = self.dice.below(6);
            let lag_change = self.dice.below(4);
            let job = self.jobs.get_mut(&color).expect("job");
            if job.deleting {
                self.jobs.remove(&color);
                continue;
            }
            if let Some(cm) = cm
                && job.seen.last() != Some(&cm)
            {
                job.seen.push(cm);
            }
            let lag = usize::try_from(lag_change).expect("small");
            job.applied = job.applied.max(job.seen.len().saturating_sub(1 + lag));
            if job.finished() {
                // Stopped with a savepoint (at once when the stop took no step): committed.
                self.commit(color);
                continue;
            }
            if job.starting > 0 || job.failed {
                job.starting = job.starting.saturating_sub(1);
                if job.starting == 0 && !job.failed {
                    job.tasks_started_at = self.obs.now.as_millisecond();
                }
                continue;
            }
            if let Some((_, left)) = job.stop.as_mut() {
                *left -= 1;
                if *left == 0 {
                    // The stop-with-savepoint completes: it commits the job's output.
                    self.commit(color);
                    continue;
                }
            }
            let sparse = self.sparse_outgoing_checkpoints
                && self
                    .obs
                    .status
                    .transition
                    .as_ref()
                    .is_some_and(|t| t.from == Some(color) && t.toggle.is_some());
            let checkpoint = self.dice.below(if sparse { 40 } else { 2 }) == 0;
            let job = self.jobs.get_mut(&color).expect("job");
            let rule = job
                .view()
                .map_or(Rule::HOLD, |s| Rule::for_state(s, job.color));
            for _ in 0..steps {
                match rule.decide(job.next) {
                    Decision::Hold => break,
                    Decision::Pass => {
                        job.pending.push(job.next);
                        job.max_passed = Some(job.max_passed.map_or(job.next, |m| m.max(job.next)));
                    }
                    Decision::Drop => {}
                }
                job.next += 1;
            }
            if let Some((_, left, _)) = job.savepoint.as_mut() {
                *left = left.saturating_sub(1);
            }
            if checkpoint {
                job.checkpoints += 1;
                job.checkpoint = Some((job.next, job.max_passed));
                let path = job.checkpoint_path().expect("just taken");
                self.savepoints.insert(path, job.next);
                self.commit(color);
            }
        }
        self.maybe_fail_incoming();
        self.maybe_restart_incoming();
        self.maybe_disturb_outgoing();
    }

    /// Commits what every job still has pending (a last checkpoint before judging).
    fn commit_all(&mut self) {
        let colors: Vec<Color> = self.jobs.keys().copied().collect();
        for color in colors {
            self.commit(color);
        }
    }

    fn child_obs(&self, color: Color, trigger: Option<&String>) -> Option<ChildObs> {
        let job = self.jobs.get(&color)?;
        let now = self.obs.now.as_millisecond();
        let stopping = self
            .obs
            .status
            .transition
            .as_ref()
            .is_some_and(|t| t.phase == Phase::TearingDown);
        let savepoint = match (trigger, &job.savepoint, &job.stop) {
            (Some(id), _, Some((stop_id, left))) if stopping && id == stop_id => {
                Some(if *left == 0 {
                    SavepointObs::Completed(format!("stop-{}", color.suffix()))
                } else {
                    SavepointObs::InProgress
                })
            }
            (Some(_), _, _) if stopping => Some(SavepointObs::Unknown),
            (Some(id), Some((sp_id, 0, pos)), _) if id == sp_id => Some(SavepointObs::Completed(
                format!("sp-{}-{pos}", color.suffix()),
            )),
            (Some(id), Some((sp_id, _, _)), _) if id == sp_id => Some(SavepointObs::InProgress),
            // Never sent (a crash after the status write): the job does not know the trigger.
            (Some(_), _, _) => Some(SavepointObs::Unknown),
            (None, _, _) => None,
        };
        Some(ChildObs {
            template_hash: Some(job.hash.clone()),
            deleting: job.deleting,
            lifecycle: Some(
                if job.failed {
                    LifecycleState::Failed
                } else {
                    LifecycleState::Stable
                }
                .into(),
            ),
            job_state: Some(
                if job.running() {
                    JobStatus::Running
                } else if job.finished() {
                    JobStatus::Finished
                } else if job.failed {
                    JobStatus::Failed
                } else {
                    JobStatus::Created
                }
                .into(),
            ),
            job_id: Some(format!("{}-job", color.suffix())),
            error: job.failed.then(|| "injected failure".into()),
            spec_job_state: Some(crate::observed::JobState::Running),
            restart_nonce: job.restart_nonce,
            upgrading: false,
            flink: if job.failed {
                // An ended job's REST API still names its latest checkpoint.
                Some(FlinkObs {
                    checkpoints_completed: job.checkpoints,
                    latest_checkpoint: job.checkpoint_path(),
                    ..FlinkObs::default()
                })
            } else if job.finished() {
                Some(FlinkObs {
                    savepoint,
                    ..FlinkObs::default()
                })
            } else {
                job.running().then(|| FlinkObs {
                    checkpoints_completed: job.checkpoints,
                    latest_checkpoint: job.checkpoint_path(),
                    savepoint,
                    gates: Some(GateObs {
                        reports: vec![match &job.stale {
                            Some((until, report)) if now < *until => report.clone(),
                            _ => job.report(),
                        }],
                        vertices: [("gate".to_owned(), 1)].into(),
                    }),
                    tasks_started_at: Some(job.tasks_started_at),
                })
            },
        })
    }

    /// What `observe::observe` reads: the outgoing job answers for the trigger in the status.
    fn observe(&mut self) {
        let trigger = self.obs.status.transition.as_ref().and_then(|t| {
            let id = if t.phase == Phase::TearingDown {
                t.stop.trigger_id.clone()
            } else {
                t.savepoint_trigger_id.clone()
            };
            t.from.zip(id)
        });
        let of = |color: Color| {
            trigger
                .as_ref()
                .filter(|(from, _)| *from == color)
                .map(|(_, id)| id)
        };
        self.obs.configmap = self
            .configmap
            .map_or(ConfigMapObs::Absent, ConfigMapObs::Valid);
        self.obs.blue = self.child_obs(Color::Blue, of(Color::Blue));
        self.obs.green = self.child_obs(Color::Green, of(Color::Green));
    }

    /// Applies the child of `color`: updates a running job's template, or starts a new job.
    fn apply_child(&mut self, color: Color, template_hash: &str, restore_path: Option<&String>) {
        if let Some(job) = self.jobs.get_mut(&color) {
            template_hash.clone_into(&mut job.hash);
            return;
        }
        let cm = self
            .configmap
            .expect("the ConfigMap is written before any child");
        if cm.stage == Stage::Transitioning {
            assert_eq!(
                cm.active, color,
                "a new incoming child needs TRANSITIONING towards it first"
            );
        }
        let start = restore_path.map_or(0, |p| self.savepoints[p]);
        let starting = 1 + self.dice.below(5);
        self.jobs.insert(
            color,
            Job {
                color,
                hash: template_hash.to_owned(),
                starting,
                deleting: false,
                next: start,
                max_passed: None,
                seen: Vec::new(),
                applied: 0,
                savepoint: None,
                stop: None,
                checkpoints: 0,
                checkpoint: None,
                pending: Vec::new(),
                failed: false,
                tasks_started_at: 0,
                origin: start,
                restarts: 0,
                restart_nonce: None,
                stale: None,
            },
        );
    }

    /// The Flink operator's `last-state` upgrade of the failed incoming job: it restarts from its
    /// own latest checkpoint (with the planted defect: from the handover's starting savepoint).
    fn repair_child(
        &mut self,
        color: Color,
        template_hash: &str,
        restore_path: &str,
        upgrade_mode: Option<&str>,
    ) {
        let cm = self.configmap.expect("ConfigMap");
        assert!(
            cm.stage == Stage::Transitioning
                && cm.toggle.stage() == WatermarkStage::Set
                && cm.active == color,
            "only an incoming job is repaired, only after W is set: {cm}"
        );
        assert_eq!(upgrade_mode, Some("last-state"));
        let starting_savepoint = self
            .obs
            .status
            .transition
            .as_ref()
            .and_then(|t| t.restore_path.clone());
        let starting = 1 + self.dice.below(5);
        let job = self.jobs.get_mut(&color).expect("the failed incoming job");
        assert!(job.failed, "only a failed job is repaired");
        assert_eq!(
            Some(restore_path),
            job.checkpoint_path().as_deref(),
            "a repair resumes from the failed job's own latest checkpoint"
        );
        let (mut next, max_passed) = job.checkpoint.expect("checked above");
        if self.repair_from_starting_savepoint {
            next = self.savepoints[&starting_savepoint.expect("a savepoint handover")];
        }
        template_hash.clone_into(&mut job.hash);
        job.failed = false;
        job.starting = starting;
        job.next = next;
        job.max_passed = max_passed;
        job.seen.clear();
        job.applied = 0;
    }

    /// The Flink operator's reaction to a new `restartNonce` of a FAILED job: a redeploy from
    /// its own latest checkpoint (a running job would be upgraded; the model allows no such
    /// patch).
    fn restart_child(&mut self, color: Color, nonce: i64) {
        let cm = self.configmap.expect("ConfigMap");
        let t = self
            .obs
            .status
            .transition
            .as_ref()
            .expect("during a handover");
        assert!(
            t.from == Some(color)
                && (cm.toggle.stage() == WatermarkStage::Set || cm.stage == Stage::ClearToTeardown),
            "only the outgoing job is restarted, only after W is set: {cm}"
        );
        let now = self.obs.now.as_millisecond();
        let starting = 1 + self.dice.below(5);
        let job = self.jobs.get_mut(&color).expect("the failed outgoing job");
        if job.restart_nonce == Some(nonce) {
            return;
        }
        job.restart_nonce = Some(nonce);
        assert!(job.failed, "only a failed job is restarted by its nonce");
        job.rewind(now, 0);
        job.failed = false;
        job.starting = starting;
        job.seen.clear();
        job.applied = 0;
    }

    /// Executes `action`, checking the invariants a real cluster relies on.
    fn execute(&mut self, action: &Action, status: &FlinkBlueGreenDeploymentStatus) {
        match action {
            Action::WriteConfigMap(next) => {
                if let Some(prev) = &self.configmap {
                    check_transition(prev, next)
                        .unwrap_or_else(|e| panic!("illegal ConfigMap write: {e}"));
                    if next.stage == Stage::Transitioning
                        && next.toggle.stage() == WatermarkStage::Set
                        && prev.toggle.stage() != WatermarkStage::Set
                    {
                        // (A job that failed for good after the decision, before a crashed
                        // controller wrote it, is forward repaired.)
                        let job = &self.jobs[&next.active];
                        let up = self.obs.now.as_millisecond() - job.tasks_started_at;
                        assert!(
                            job.failed || (job.running() && up >= self.min_ready_ms()),
                            "W set while the incoming job has run only {up} ms since its last (re)start (running: {})",
                            job.running()
                        );
                    }
                }
                self.configmap = Some(*next);
            }
            Action::ApplyChild {
                color,
                template_hash,
                restore_path,
            } => self.apply_child(*color, template_hash, restore_path.as_ref()),
            Action::RepairChild {
                color,
                spec,
                template_hash,
                restore_path,
            } => self.repair_child(
                *color,
                template_hash,
                restore_path,
                spec.template.spec.job.upgrade_mode.as_deref(),
            ),
            Action::RestartChild { color, nonce } => self.restart_child(*color, *nonce),
            Action::DeleteChild(color) => {
                let cm = self.configmap.expect("ConfigMap");
                if Some(*color) == status.transition.as_ref().map(|t| t.to) {
                    assert_eq!(
                        cm.stage,
                        Stage::Failing,
                        "the incoming job is deleted only in an abort"
                    );
                } else {
                    assert_eq!(
                        cm.stage,
                        Stage::ClearToTeardown,
                        "the outgoing job is deleted only after promotion"
                    );
                }
                if let Some(job) = self.jobs.get_mut(color) {
                    assert!(
                        cm.stage == Stage::Failing || job.finished(),
                        "the outgoing job is deleted only once its stop-with-savepoint finished it"
                    );
                    // A cancel discards the open transaction.
                    job.pending.clear();
                    job.deleting = true;
                }
            }
            Action::StopJob {
                color,
                trigger_id,
                drain,
            } => self.stop_job(*color, trigger_id, *drain),
            Action::TriggerSavepoint { color, trigger_id } => {
                assert_eq!(
                    status
                        .transition
                        .as_ref()
                        .and_then(|t| t.savepoint_trigger_id.as_ref()),
                    Some(trigger_id),
                    "the status records the trigger before it is sent"
                );
                let steps = self.dice.below(4);
                let job = self
                    .jobs
                    .get_mut(color)
                    .expect("savepoint of a running job");
                // Resent under the same trigger: the same savepoint.
                if job
                    .savepoint
                    .as_ref()
                    .is_none_or(|(id, _, _)| id != trigger_id)
                {
                    let path = format!("sp-{}-{}", color.suffix(), job.next);
                    self.savepoints.insert(path, job.next);
                    job.savepoint = Some((trigger_id.clone(), steps, job.next));
                }
            }
            Action::ClearManualAction => self.obs.action = None,
            Action::Orphan(_) | Action::DeleteConfigMap | Action::AwaitFinalSavepoint => {
                panic!("{action:?} is planned only on deletion")
            }
        }
    }

    /// The stop-with-savepoint of the outgoing job, after promotion; a resend is a no-op.
    fn stop_job(&mut self, color: Color, trigger_id: &str, drain: bool) {
        assert!(
            !drain,
            "a job whose gates are never idle is stopped without drain"
        );
        let cm = self.configmap.expect("ConfigMap");
        assert_eq!(
            cm.stage,
            Stage::ClearToTeardown,
            "the outgoing job is stopped only after promotion"
        );
        let steps = self.dice.below(4);
        let job = self.jobs.get_mut(&color).expect("stop of a running job");
        assert!(job.running(), "only a running job is stopped");
        if job.stop.as_ref().is_none_or(|(id, _)| id != trigger_id) {
            job.stop = Some((trigger_id.to_owned(), steps));
        }
    }

    /// One reconcile; the controller may crash after writing its status, before any action.
    fn reconcile(&mut self) {
        self.observe();
        let p = plan(&self.obs);
        self.obs.status = p.status.clone();
        let crash_after = usize::try_from(self.dice.below(8)).expect("small");
        for action in p.actions.iter().take(if crash_after < 2 {
            crash_after
        } else {
            usize::MAX
        }) {
            self.execute(action, &p.status);
        }
    }
}

fn run_until(world: &mut World, done: impl Fn(&World) -> bool, what: &str) {
    for _ in 0..2_000 {
        if done(world) {
            return;
        }
        world.reconcile();
        world.advance();
    }
    panic!(
        "{what} did not happen: status {:#?}, configmap {:?}",
        world.obs.status, world.configmap
    );
}

fn steady(world: &World, color: Color, hash: &str) -> bool {
    let status = &world.obs.status;
    // After a forward repair the active job runs the previous template and `hash` is the failed
    // one.
    let deployed = status.deployed_template_hash.as_deref() == Some(hash)
        || (status.failed_template_hash.as_deref() == Some(hash)
            && status
                .history
                .first()
                .is_some_and(|h| h.forward_repair.is_some()));
    status.transition.is_none()
        && status.active_color == Some(color)
        && deployed
        && world.jobs.len() == 1
        && world.jobs.contains_key(&color)
        && world
            .configmap
            .is_some_and(|c| c.stage == Stage::Running && c.active == color)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Deploy, then hand over blue → green → blue → green with crashes anywhere and gates that
    /// apply the ConfigMap late: every tick up to the final watermark is emitted exactly once.
    #[test]
    fn handovers_with_crashes_and_late_gates_emit_every_record_exactly_once(seed in any::<u64>()) {
        let mut world = World::new(seed);
        let wrong = hand_over_three_times(&mut world);
        prop_assert!(wrong.is_empty(), "ticks not emitted exactly once (tick, count): {:?}", wrong);
        prop_assert_eq!(world.obs.status.history.len(), 4);
        prop_assert!(world.obs.status.history.iter().take(3).all(|h| h.outcome == Outcome::Promoted));
    }

    /// The same, with the incoming job of one handover failing for good after W is set: the
    /// controller repairs it forward (the previous template, its own latest checkpoint), crashes
    /// anywhere in between, and still every tick is emitted exactly once.
    #[test]
    fn an_incoming_job_failing_after_w_is_repaired_forward_exactly_once(seed in any::<u64>(), failing in 0usize..3) {
        let mut world = World::new(seed);
        let hashes = ["h2", "h3", "h4"];
        world.fail_incoming_of = Some(hashes[failing].into());
        let wrong = hand_over_three_times(&mut world);
        prop_assert!(world.fail_incoming_of.is_none(), "the failure happened");
        prop_assert!(wrong.is_empty(), "ticks not emitted exactly once (tick, count): {:?}", wrong);
        let repaired: Vec<bool> = world.obs.status.history.iter().take(3).rev()
            .map(|h| h.forward_repair.is_some()).collect();
        prop_assert_eq!(repaired, (0..3).map(|i| i == failing).collect::<Vec<_>>());
        prop_assert!(world.obs.status.history.iter().take(3).all(|h| h.outcome == Outcome::Promoted));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// The outgoing job of every handover fails over after W is set (back to a checkpoint that
    /// may lie below W, with Flink's metric store serving the previous attempt's report for a
    /// while), and the one of one handover fails for good: it is restarted from its own latest
    /// checkpoint and stopped only once past W again, so every tick is emitted exactly once.
    #[test]
    fn an_outgoing_job_restarting_or_failing_after_w_loses_nothing(seed in any::<u64>(), failing in 0usize..3) {
        let mut world = World::new(seed);
        let hashes = ["h2", "h3", "h4"];
        world.fail_outgoing_of = Some(hashes[failing].into());
        world.outgoing_restarts_after_w = 2;
        world.stale_ms = 3_000;
        world.sparse_outgoing_checkpoints = true;
        let wrong = hand_over_three_times(&mut world);
        prop_assert!(wrong.is_empty(), "ticks not emitted exactly once (tick, count): {:?}", wrong);
        prop_assert!(world.obs.status.history.iter().take(3).all(|h| h.outcome == Outcome::Promoted));
    }
}

#[test]
fn the_ledger_catches_a_stop_that_trusts_a_stale_report() {
    // The oracle can fail: without the wait for minReady after a restart, the controller trusts
    // the previous attempt's report of being past W and stops a job that replays below W.
    let caught = (0..40).any(|seed| {
        let mut world = World::new(seed);
        world.obs.valid = crate::fixtures::valid(|s| {
            s.coordination.toggle.offset = Some("20ms".into());
            s.coordination.min_ready = "0s".into();
        });
        world.outgoing_restarts_after_w = 3;
        world.stale_ms = 5_000;
        world.sparse_outgoing_checkpoints = true;
        let wrong = hand_over_three_times(&mut world);
        wrong.iter().any(|(_, n)| *n == 0)
    });
    assert!(
        caught,
        "a stop below W after a restart must show up as losses"
    );
}

/// Deploys h1 on blue, then hands over to h2, h3 and h4; returns the ticks up to the final
/// watermark not emitted exactly once (at most five).
fn hand_over_three_times(world: &mut World) -> Vec<(i64, u32)> {
    run_until(world, |w| steady(w, Color::Blue, "h1"), "first deployment");
    let mut color = Color::Blue;
    for (i, hash) in ["h2", "h3", "h4"].into_iter().enumerate() {
        world.obs.template_hash = hash.into();
        world.obs.generation = i64::try_from(i).unwrap() + 2;
        color = color.other();
        run_until(world, |w| steady(w, color, hash), "handover");
    }
    world.commit_all();
    let horizon = world.jobs[&color].next - 1;
    (0..horizon)
        .map(|t| (t, world.ledger.get(&t).copied().unwrap_or(0)))
        .filter(|(_, n)| *n != 1)
        .take(5)
        .collect()
}

#[test]
fn the_ledger_catches_a_repair_from_the_handovers_starting_savepoint() {
    // The oracle can fail: a repaired job that resumed from the handover's savepoint instead of
    // its own latest checkpoint emits again what it had already committed above W.
    let caught = (0..20).any(|seed| {
        let mut world = World::new(seed);
        world.obs.valid = crate::fixtures::valid(|s| {
            s.coordination.toggle.offset = Some("20ms".into());
            s.coordination.forward_repair.grace = "3s".into();
            s.coordination.health.min_checkpoints = 20;
        });
        world.fail_incoming_of = Some("h2".into());
        world.fail_after_commit = true;
        world.repair_from_starting_savepoint = true;
        let wrong = hand_over_three_times(&mut world);
        wrong.iter().any(|(_, n)| *n > 1)
    });
    assert!(
        caught,
        "resuming from the starting savepoint must show up as duplicates"
    );
}

#[test]
fn the_ledger_catches_a_w_set_without_acknowledgement() {
    // The oracle can fail: if green applied WATERMARK_SET while a blue gate still saw
    // WATERMARK_NOT_SET (what the acknowledgement step prevents), both pass records above W.
    let mut world = World::new(7);
    run_until(
        &mut world,
        |w| steady(w, Color::Blue, "h1"),
        "first deployment",
    );
    world.obs.template_hash = "h2".into();
    run_until(
        &mut world,
        |w| w.jobs.len() == 2 && w.jobs.values().all(Job::running),
        "both jobs running",
    );
    let epoch = world.configmap.expect("ConfigMap").epoch;
    let transitioning = |toggle| CoordinationState {
        floor: None,
        active: Color::Green,
        deletion_delay_ms: 0,
        stage: Stage::Transitioning,
        toggle,
        epoch,
    };
    let w = world.jobs[&Color::Blue].next;
    world.configmap = None;
    world.jobs.get_mut(&Color::Blue).unwrap().seen =
        vec![transitioning(bluegreen_protocol::Toggle::NotSet)];
    world.jobs.get_mut(&Color::Green).unwrap().seen =
        vec![transitioning(bluegreen_protocol::Toggle::Set(w))];
    world.jobs.get_mut(&Color::Green).unwrap().next = w;
    for job in world.jobs.values_mut() {
        job.applied = 0;
    }
    for _ in 0..20 {
        world.advance();
    }
    assert!(
        world.ledger.values().any(|n| *n > 1),
        "both colors passing above W must show up as duplicates"
    );
}

#[test]
fn the_model_catches_w_set_right_after_an_incoming_restart() {
    // The oracle can fail: a controller without the readiness wait (minReady 0) sets W while the
    // incoming job restarts, which the model requires to have run 4 s.
    let caught = (0..40).any(|seed| {
        std::panic::catch_unwind(|| {
            let mut world = World::new(seed);
            world.obs.valid = crate::fixtures::valid(|s| {
                s.coordination.toggle.offset = Some("20ms".into());
                s.coordination.min_ready = "0s".into();
            });
            world.required_up_ms = Some(4_000);
            world.restarts_before_w = 100;
            hand_over_three_times(&mut world);
        })
        .is_err_and(|e| {
            e.downcast_ref::<String>()
                .is_some_and(|m| m.starts_with("W set while the incoming job has run only"))
        })
    });
    assert!(caught, "W set within 4 s of a restart must be caught");
}
