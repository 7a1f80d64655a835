//! The handover state machine: `plan(&Observed) -> Plan`, a pure function (no client required).
//!
//! The plan's status is written first (intent), then its actions run in order; every action is
//! idempotent and every phase re-derives its actions from the status, so a controller that stops
//! anywhere resumes where it was. The ConfigMap write, when there is one, always comes first.

use std::time::Duration;

use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle, check_transition};
use jiff::Timestamp;

use crate::conditions::{self, Health};
use crate::observed::{
    ChildObs, ConfigMapObs, FlinkObs, GateObs, ManualAction, Observed, SavepointObs,
};
use crate::resource::WatermarkWait;
use crate::resource::{
    FlinkBlueGreenDeploymentSpec, FlinkBlueGreenDeploymentStatus, OutgoingStop, Phase, RestoreFrom,
    Transition, TransitionRecord,
};
use crate::settings::{Settings, ToggleRule};

use repair::{repaired, summary};

pub use cleanup::{final_savepoint_trigger_id, plan_cleanup};

/// How many finished handovers the status keeps.
pub const HISTORY_LEN: usize = 10;

/// One side effect, executed in order after the status is written.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Move the coordination ConfigMap to this state (checked with `check_transition`, guarded by
    /// the observed resourceVersion).
    WriteConfigMap(CoordinationState),
    /// Server-side apply the child of `color` from the current template, starting from
    /// `restore_path` (a new job only; ignored by the Flink operator for a running one).
    ApplyChild {
        /// The child's color.
        color: Color,
        /// The template's hash, recorded on the child.
        template_hash: String,
        /// `initialSavepointPath` of the child.
        restore_path: Option<String>,
    },
    /// Forward repair: server-side apply the child of `color` rendered from `spec` — the spec
    /// the outgoing child runs (`status.deployedSpec`, the template that last ran well) with
    /// upgrade mode `last-state` — with `initialSavepointPath` = `restore_path`, the failed job's
    /// own latest checkpoint. The Flink operator redeploys the failed job from its latest
    /// checkpoint; never from the handover's starting state.
    RepairChild {
        /// The incoming child's color.
        color: Color,
        /// What to render the child from.
        spec: Box<FlinkBlueGreenDeploymentSpec>,
        /// The hash of that template (the outgoing child's), recorded on the repaired child.
        template_hash: String,
        /// The failed incoming job's own latest completed checkpoint.
        restore_path: String,
    },
    /// Delete the child of `color`.
    DeleteChild(Color),
    /// Trigger a savepoint of the child of `color` through Flink's REST API and record the
    /// trigger id in the status.
    TriggerSavepoint(Color),
    /// Stop the job of the child of `color` with a savepoint (`POST /jobs/:jid/stop`, no drain)
    /// under `trigger_id`, which the status already records. Resending it is idempotent.
    StopJob {
        /// The child's color.
        color: Color,
        /// The trigger id Flink deduplicates the request by.
        trigger_id: String,
    },
    /// Remove the `bluegreen.dev/action` annotation (the operation was handled or refused).
    ClearManualAction,
    /// Deletion with `onDelete: orphan`: drop the owner reference of the child of `color`, so
    /// its job outlives the resource.
    Orphan(Color),
    /// Delete the coordination ConfigMap.
    DeleteConfigMap,
    /// Trigger the final savepoint of the child of `color` under `trigger_id`, which derives
    /// from the resource's uid: a retried cleanup takes one savepoint.
    TriggerFinalSavepoint {
        /// The active child's color.
        color: Color,
        /// The trigger id Flink deduplicates the request by.
        trigger_id: String,
    },
    /// Keep the finalizer: the cleanup fails with `FinalSavepointPending` (and is retried) until
    /// the final savepoint has ended.
    AwaitFinalSavepoint,
}

/// A Kubernetes Event to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// `Warning` rather than `Normal`.
    pub warning: bool,
    /// CamelCase reason.
    pub reason: &'static str,
    /// Message.
    pub message: String,
}

/// The outcome of one planning step.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The status to write before acting.
    pub status: FlinkBlueGreenDeploymentStatus,
    /// What to do, in order.
    pub actions: Vec<Action>,
    /// Events to publish.
    pub notes: Vec<Note>,
    /// When to look again at the latest.
    pub requeue_after: Duration,
    /// The handover this plan finishes: its record is the newest in `status.history`, counted
    /// in the metrics once that status is written.
    pub finished: Option<TransitionRecord>,
}

/// How often an active handover is re-observed.
const ACTIVE_REQUEUE: Duration = Duration::from_millis(500);
/// How often a steady deployment is re-observed.
const STEADY_REQUEUE: Duration = Duration::from_secs(30);
/// How often a phase that waits only for watched objects (the child's status) is re-observed as a
/// safety net; their changes trigger a reconcile anyway.
const WATCHED_REQUEUE: Duration = Duration::from_secs(5);

/// The trigger id of attempt `attempt` to stop the outgoing job of the handover to
/// `template_hash` at `epoch`: 32 hex digits (Flink's `TriggerId`), the same on every replan.
pub fn stop_trigger_id(template_hash: &str, epoch: u64, attempt: u32) -> String {
    use sha2::{Digest as _, Sha256};
    let digest = Sha256::digest(format!("bluegreen-stop/{template_hash}/{epoch}/{attempt}"));
    digest
        .iter()
        .take(16)
        .fold(String::with_capacity(32), |mut hex, b| {
            use std::fmt::Write as _;
            write!(hex, "{b:02x}").expect("writing to a String cannot fail");
            hex
        })
}

/// Plans one reconcile of one resource.
pub fn plan(obs: &Observed) -> Plan {
    let mut p = Planner {
        obs,
        status: obs.status.clone(),
        actions: Vec::new(),
        notes: Vec::new(),
        requeue: STEADY_REQUEUE,
        health: Health::default(),
        finished: None,
    };
    let current_cm = desired_configmap(&p.status, obs);
    if let Some(reason) = diverged(&obs.configmap, current_cm.as_ref()) {
        p.health.degraded("ConfigMapDiverged", reason);
        return p.finish(None);
    }
    match &obs.settings {
        Err((field, message)) => p.invalid_spec(field, message),
        Ok(settings) => match p.status.transition.clone() {
            None => p.steady(settings),
            Some(t) => p.drive(settings, &t),
        },
    }
    let desired = desired_configmap(&p.status, obs);
    p.finish(desired)
}

/// The ConfigMap state a status stands for (`None` before the first deployment).
pub fn desired_configmap(
    status: &FlinkBlueGreenDeploymentStatus,
    obs: &Observed,
) -> Option<CoordinationState> {
    let delay = obs.settings.as_ref().ok().map_or_else(
        || current_delay(obs),
        |s| u64::try_from(s.deletion_delay.as_millis()).unwrap_or(u64::MAX),
    );
    let state = |active, stage, toggle, epoch| CoordinationState {
        floor: if stage == Stage::Initializing {
            None
        } else {
            status.floor
        },
        active,
        deletion_delay_ms: delay,
        stage,
        toggle,
        epoch,
    };
    let Some(t) = &status.transition else {
        return status
            .active_color
            .map(|active| state(active, Stage::Running, Toggle::NotSet, status.epoch));
    };
    let proposed = t.toggle.map_or(Toggle::NotSet, Toggle::Proposed);
    let set = Toggle::Set(t.toggle.unwrap_or(i64::MAX));
    Some(match (t.from, t.phase) {
        (None, _) => state(t.to, Stage::Initializing, Toggle::NotSet, t.epoch),
        (Some(from), Phase::Snapshotting) => {
            state(from, Stage::Running, Toggle::NotSet, status.epoch)
        }
        (Some(_), Phase::Deploying) => state(t.to, Stage::Transitioning, Toggle::NotSet, t.epoch),
        (Some(_), Phase::ConfirmingToggle) => state(t.to, Stage::Transitioning, proposed, t.epoch),
        (Some(_), Phase::ToggleSet) => state(t.to, Stage::Transitioning, set, t.epoch),
        (Some(_), Phase::ClearToTeardown | Phase::TearingDown) => {
            state(t.to, Stage::ClearToTeardown, set, t.epoch)
        }
        (Some(_), Phase::Aborting) => state(t.to, Stage::Failing, proposed, t.epoch),
    })
}

fn current_delay(obs: &Observed) -> u64 {
    match &obs.configmap {
        ConfigMapObs::Valid(s) => s.deletion_delay_ms,
        _ => 0,
    }
}

/// Why the observed ConfigMap cannot be brought to `desired` (a hand edit or another writer).
fn diverged(observed: &ConfigMapObs, desired: Option<&CoordinationState>) -> Option<String> {
    let (ConfigMapObs::Valid(seen), Some(desired)) = (observed, desired) else {
        return None;
    };
    let mut comparable = *seen;
    comparable.deletion_delay_ms = desired.deletion_delay_ms;
    if comparable == *desired {
        return None;
    }
    check_transition(seen, desired).err().map(|e| {
        format!(
            "the coordination ConfigMap holds `{seen}`, which the controller did not write and cannot move on from ({e}); \
             restore it to `{desired}` or delete it so the controller rewrites it"
        )
    })
}

struct Planner<'a> {
    obs: &'a Observed,
    status: FlinkBlueGreenDeploymentStatus,
    actions: Vec<Action>,
    notes: Vec<Note>,
    requeue: Duration,
    health: Health,
    finished: Option<TransitionRecord>,
}

impl Planner<'_> {
    fn now(&self) -> Timestamp {
        self.obs.now
    }

    fn note(&mut self, warning: bool, reason: &'static str, message: impl Into<String>) {
        self.notes.push(Note {
            warning,
            reason,
            message: message.into(),
        });
    }

    fn since(&self, rfc3339: &str) -> Duration {
        rfc3339
            .parse::<Timestamp>()
            .ok()
            .and_then(|then| Duration::try_from(self.now().duration_since(then)).ok())
            .unwrap_or(Duration::ZERO)
    }

    fn consume_action(&mut self, wanted: ManualAction) -> bool {
        if self.obs.action == Some(wanted) {
            self.actions.push(Action::ClearManualAction);
            true
        } else {
            false
        }
    }

    /// No handover in progress.
    fn steady(&mut self, settings: &Settings) {
        let Some(active) = self.status.active_color else {
            self.start_first_deployment();
            return;
        };
        if self.consume_action(ManualAction::ClearFloor) {
            self.clear_floor();
        } else if let Some(action) = self.obs.action {
            self.actions.push(Action::ClearManualAction);
            self.note(
                true,
                "ActionRefused",
                format!("{action:?} needs a handover in progress; there is none"),
            );
        }
        let template_changed =
            self.status.deployed_template_hash.as_deref() != Some(&self.obs.template_hash);
        let already_failed =
            self.status.failed_template_hash.as_deref() == Some(&self.obs.template_hash);
        match self.obs.child(active) {
            None => self.health.degraded(
                "ActiveChildMissing",
                format!("the active FlinkDeployment ({}) is gone; recreate it from a savepoint with savepointRedeployNonce", active.suffix()),
            ),
            Some(child) if template_changed && !already_failed => {
                let child = child.clone();
                match self.toggle_in_past(settings, &child) {
                    Some(why) => self.invalid_spec("spec.coordination.toggle.value", &why),
                    None => self.start_handover(settings, active, &child),
                }
            }
            Some(child) => {
                if !template_changed && child.spec_job_state.as_deref() != Some(&self.obs.wanted_job_state) {
                    self.apply(active, None);
                }
                if child.failed() {
                    self.health.degraded("ActiveJobFailed", child.error.clone().unwrap_or_else(|| "the active job failed".into()));
                } else if already_failed && template_changed && !self.repaired_degraded() {
                    self.health.degraded(
                        "HandoverAborted",
                        "the last handover to this template was aborted; change the template to try again".into(),
                    );
                }
                self.health.ready = child.running() || self.obs.wanted_job_state == "suspended";
            }
        }
    }

    /// `Degraded/InvalidSpec` naming the field and the fix, with a Warning event when the
    /// message is new (not again on every resync). Nothing that runs is touched.
    fn invalid_spec(&mut self, field: &str, message: &str) {
        let message = format!("`{field}` {message}; the running job is left untouched");
        let reported =
            self.obs.status.conditions.iter().any(|c| {
                c.type_ == "Degraded" && c.reason == "InvalidSpec" && c.message == message
            });
        if !reported {
            self.note(true, "InvalidSpec", message.clone());
        }
        self.health.degraded("InvalidSpec", message);
        self.requeue = STEADY_REQUEUE;
    }

    /// Why `coordination.toggle.value` cannot be the next W: it is not after the live job's
    /// progress (its gates' highest passed event time or watermark) or not above the floor.
    /// Such a handover would abort only after the incoming job ran, so it is not started.
    fn toggle_in_past(&self, settings: &Settings, live: &ChildObs) -> Option<String> {
        let ToggleRule::Value(w) = settings.toggle else {
            return None;
        };
        let progress = live
            .flink
            .as_ref()
            .and_then(|f| f.gates.as_ref())
            .and_then(|g| g.max_passed().max(g.watermark()));
        let mut past = Vec::new();
        if let Some(progress) = progress.filter(|p| w <= *p) {
            past.push(format!(
                "the running job's progress {progress} (its gates' highest passed event time or watermark)"
            ));
        }
        if let Some(floor) = self.status.floor.filter(|f| w <= *f) {
            past.push(format!("the floor {floor} (the W of the last handover)"));
        }
        if w == i64::MIN {
            past.push("every event time".to_owned());
        }
        (!past.is_empty()).then(|| {
            format!(
                "{w} is not after {}: W must be later than every record the running job may \
                 already have emitted; set a later value (epoch milliseconds), or use `offset`",
                past.join(" nor ")
            )
        })
    }

    /// Step 10: a new epoch, RUNNING without a floor.
    fn clear_floor(&mut self) {
        match self.status.floor.take() {
            Some(floor) => {
                self.status.epoch += 1;
                self.note(
                    false,
                    "FloorCleared",
                    format!(
                        "floor {floor} cleared (epoch {}): records at or below it are emitted again",
                        self.status.epoch
                    ),
                );
            }
            None => self.note(false, "FloorCleared", "there is no floor to clear"),
        }
    }

    fn start_first_deployment(&mut self) {
        let now = self.now().to_string();
        self.status.epoch = 0;
        self.status.transition = Some(Transition {
            from: None,
            to: Color::Blue,
            epoch: 0,
            template_hash: self.obs.template_hash.clone(),
            generation: self.obs.generation,
            redeploy_nonce: self.obs.redeploy_nonce,
            phase: Phase::Deploying,
            toggle: None,
            savepoint_trigger_id: None,
            restore_path: self.obs.initial_savepoint.clone(),
            savepoint_attempts: 0,
            started_at: now.clone(),
            phase_started_at: now,
            abort_reason: None,
            stop: OutgoingStop::default(),
            waiting_for_watermarks: Vec::new(),
            past_w_by_idleness: Vec::new(),
            forward_repair: None,
        });
        self.note(
            false,
            "Deploying",
            "first deployment: creating the blue job",
        );
        self.deploying_first();
    }

    fn start_handover(&mut self, settings: &Settings, from: Color, child: &ChildObs) {
        let now = self.now().to_string();
        let nonce_redeploy = self.obs.redeploy_nonce.is_some()
            && self.obs.redeploy_nonce != self.status.deployed_redeploy_nonce
            && self.obs.initial_savepoint.is_some();
        let (phase, restore_path) = if nonce_redeploy {
            (Phase::Deploying, self.obs.initial_savepoint.clone())
        } else if settings.restore_from == RestoreFrom::Stateless {
            (Phase::Deploying, None)
        } else {
            (Phase::Snapshotting, None)
        };
        let epoch = self.status.epoch + 1;
        self.status.failed_template_hash = None;
        self.status.transition = Some(Transition {
            from: Some(from),
            to: from.other(),
            epoch,
            template_hash: self.obs.template_hash.clone(),
            generation: self.obs.generation,
            redeploy_nonce: self.obs.redeploy_nonce,
            phase,
            toggle: None,
            savepoint_trigger_id: None,
            restore_path,
            savepoint_attempts: 0,
            started_at: now.clone(),
            phase_started_at: now,
            abort_reason: None,
            stop: OutgoingStop::default(),
            waiting_for_watermarks: Vec::new(),
            past_w_by_idleness: Vec::new(),
            forward_repair: None,
        });
        self.note(
            false,
            "HandoverStarted",
            format!(
                "spec changed: handing over from {from} to {} (epoch {epoch})",
                from.other()
            ),
        );
        self.requeue = ACTIVE_REQUEUE;
        if phase == Phase::Snapshotting {
            self.snapshotting(settings, child);
        } else {
            self.enter_deploying();
        }
    }

    fn drive(&mut self, settings: &Settings, t: &Transition) {
        self.requeue = ACTIVE_REQUEUE;
        let Some(from) = t.from else {
            self.deploying_first();
            return;
        };
        if self.consume_action(ManualAction::ClearFloor) {
            self.note(
                true,
                "ActionRefused",
                "clear-floor refused: a handover is in progress; set it again once it has finished",
            );
        }
        let spec_changed = self.obs.template_hash != t.template_hash;
        let before_set = matches!(
            t.phase,
            Phase::Snapshotting | Phase::Deploying | Phase::ConfirmingToggle
        );
        if before_set && spec_changed {
            self.abort(
                "SpecChanged",
                "the template changed before W was set; starting over with the new template",
                false,
            );
            return;
        }
        if before_set && self.consume_action(ManualAction::Abort) {
            self.abort(
                "ManualAbort",
                "aborted by the bluegreen.dev/action annotation",
                true,
            );
            return;
        }
        let outgoing = self.obs.child(from).cloned().unwrap_or_default();
        match t.phase {
            Phase::Snapshotting => self.snapshotting(settings, &outgoing),
            Phase::Deploying => self.awaiting_incoming(settings, &outgoing),
            Phase::ConfirmingToggle => self.confirming_toggle(settings, &outgoing),
            Phase::ToggleSet => self.toggle_set(settings, &outgoing, spec_changed),
            Phase::ClearToTeardown => self.clear_to_teardown(settings),
            Phase::TearingDown => self.tearing_down(settings, from),
            Phase::Aborting => self.aborting(),
        }
    }

    fn transition(&mut self) -> &mut Transition {
        self.status
            .transition
            .as_mut()
            .expect("a handover is in progress in this phase")
    }

    fn set_phase(&mut self, phase: Phase) {
        let now = self.now().to_string();
        let t = self.transition();
        t.phase = phase;
        t.phase_started_at = now;
    }

    fn apply(&mut self, color: Color, restore_path: Option<String>) {
        self.actions.push(Action::ApplyChild {
            color,
            template_hash: self.obs.template_hash.clone(),
            restore_path,
        });
    }

    fn ensure_child(&mut self, color: Color, hash: &str, restore_path: Option<String>) {
        let up_to_date = self.obs.child(color).is_some_and(|c| {
            !c.deleting
                && c.template_hash.as_deref() == Some(hash)
                && c.spec_job_state.as_deref() == Some(&self.obs.wanted_job_state)
        });
        if !up_to_date && hash == self.obs.template_hash {
            self.apply(color, restore_path);
        }
    }

    /// First deployment: the blue job starts (from `initialSavepointPath` if given).
    fn deploying_first(&mut self) {
        self.requeue = WATCHED_REQUEUE;
        let t = self.transition().clone();
        if self.obs.template_hash != t.template_hash {
            let hash = self.obs.template_hash.clone();
            self.transition().template_hash = hash;
        }
        let hash = self.obs.template_hash.clone();
        self.ensure_child(t.to, &hash, t.restore_path.clone());
        let child = self.obs.child(t.to).cloned().unwrap_or_default();
        if child.running() {
            self.status.active_color = Some(t.to);
            self.status.deployed_template_hash = Some(hash);
            self.status.deployed_spec = Some(self.obs.spec.clone());
            self.status.deployed_redeploy_nonce = t.redeploy_nonce;
            self.finish_transition("Deployed", None);
            self.note(
                false,
                "Deployed",
                format!("the {} job is running", t.to.suffix()),
            );
            self.health.ready = true;
        } else if child.failed() {
            self.health.degraded(
                "FirstDeploymentFailed",
                child.error.unwrap_or_else(|| "the job failed".into()),
            );
        } else {
            self.health.progressing(
                "Deploying",
                format!("waiting for the {} job to run", t.to.suffix()),
            );
        }
    }

    fn snapshotting(&mut self, settings: &Settings, outgoing: &ChildObs) {
        let t = self.transition().clone();
        let flink = outgoing.flink.clone().unwrap_or_default();
        match settings.restore_from {
            RestoreFrom::Stateless => self.enter_deploying(),
            RestoreFrom::LastCheckpoint => match flink.latest_checkpoint {
                Some(path) => {
                    self.transition().restore_path = Some(path);
                    self.enter_deploying();
                }
                None => self.wait_or_abort(
                    settings,
                    &t,
                    "NoCheckpoint",
                    "the outgoing job has no completed checkpoint yet",
                ),
            },
            RestoreFrom::Savepoint => {
                if !outgoing.running() {
                    self.wait_or_abort(
                        settings,
                        &t,
                        "OutgoingNotRunning",
                        "a savepoint needs the outgoing job to be running",
                    );
                    return;
                }
                match (&t.savepoint_trigger_id, flink.savepoint) {
                    (None, _) => {
                        let backoff = settings.savepoint_backoff
                            * 2u32.saturating_pow(t.savepoint_attempts.saturating_sub(1));
                        if t.savepoint_attempts > 0 && self.since(&t.phase_started_at) < backoff {
                            self.health.progressing(
                                "SavepointBackoff",
                                format!("retrying the savepoint after {backoff:?}"),
                            );
                        } else {
                            let now = self.now().to_string();
                            self.transition().phase_started_at = now;
                            self.actions.push(Action::TriggerSavepoint(
                                t.from.expect("handover has an outgoing color"),
                            ));
                            self.health.progressing(
                                "Snapshotting",
                                "savepoint of the outgoing job requested".into(),
                            );
                        }
                    }
                    (Some(_), Some(SavepointObs::Completed(path))) => {
                        self.note(false, "SavepointCompleted", format!("savepoint at {path}"));
                        self.transition().restore_path = Some(path);
                        self.enter_deploying();
                    }
                    (Some(_), Some(SavepointObs::Failed(reason))) => {
                        self.savepoint_failed(settings, reason);
                    }
                    (Some(trigger), Some(SavepointObs::Unknown)) => {
                        self.savepoint_failed(
                            settings,
                            format!("savepoint trigger {trigger} is unknown to the job"),
                        );
                    }
                    (Some(_), _)
                        if self.since(&t.phase_started_at) > settings.savepoint_timeout =>
                    {
                        self.savepoint_failed(
                            settings,
                            format!("no result within {:?}", settings.savepoint_timeout),
                        );
                    }
                    (Some(_), _) => self
                        .health
                        .progressing("Snapshotting", "savepoint in progress".into()),
                }
            }
        }
    }

    fn savepoint_failed(&mut self, settings: &Settings, reason: String) {
        let now = self.now().to_string();
        let t = self.transition();
        t.savepoint_attempts += 1;
        t.savepoint_trigger_id = None;
        t.phase_started_at = now;
        let attempts = t.savepoint_attempts;
        if attempts >= settings.savepoint_attempts {
            self.abort(
                "SavepointFailed",
                &format!("savepoint failed {attempts} times, last: {reason}"),
                true,
            );
        } else {
            self.note(
                true,
                "SavepointFailed",
                format!(
                    "attempt {attempts} of {}: {reason}",
                    settings.savepoint_attempts
                ),
            );
            self.health.progressing("SavepointBackoff", reason);
        }
    }

    fn wait_or_abort(
        &mut self,
        settings: &Settings,
        t: &Transition,
        reason: &'static str,
        message: &str,
    ) {
        if self.since(&t.phase_started_at) > settings.abort_grace {
            self.abort(
                reason,
                &format!("{message} (waited {:?})", settings.abort_grace),
                true,
            );
        } else {
            self.health.progressing(reason, message.to_owned());
        }
    }

    fn enter_deploying(&mut self) {
        self.set_phase(Phase::Deploying);
        let t = self.transition().clone();
        self.status.epoch = t.epoch;
        self.ensure_child(t.to, &t.template_hash, t.restore_path.clone());
        self.health.progressing(
            "Deploying",
            format!(
                "creating the {} job; its gates hold until W is set",
                t.to.suffix()
            ),
        );
    }

    fn incoming(&self) -> ChildObs {
        let t = self
            .status
            .transition
            .as_ref()
            .expect("handover in progress");
        self.obs.child(t.to).cloned().unwrap_or_default()
    }

    /// The incoming child; `None` (after starting the abort) when its job failed before W is set.
    fn incoming_unless_failed(&mut self) -> Option<ChildObs> {
        let incoming = self.incoming();
        if !incoming.failed() {
            return Some(incoming);
        }
        let why = incoming.error.unwrap_or_else(|| "job FAILED".into());
        let message = format!("the incoming job failed before W was set: {why}");
        self.abort("IncomingFailed", &message, true);
        None
    }

    fn awaiting_incoming(&mut self, settings: &Settings, outgoing: &ChildObs) {
        let t = self.transition().clone();
        self.ensure_child(t.to, &t.template_hash, t.restore_path.clone());
        let Some(incoming) = self.incoming_unless_failed() else {
            return;
        };
        if !incoming.running() {
            self.wait_or_abort(
                settings,
                &t,
                "IncomingNotRunning",
                "waiting for the incoming job to run",
            );
            return;
        }
        let Some(gates) = outgoing.flink.as_ref().and_then(|f| f.gates.clone()) else {
            self.wait_or_abort(settings, &t, "NoGateMetrics", "the outgoing job reports no bluegreen gate metrics: is a GateProcessFunction in the pipeline?");
            return;
        };
        let watermark = gates.watermark().unwrap_or(i64::MIN);
        let progress = gates.max_passed().unwrap_or(i64::MIN).max(watermark);
        let above_floor = self.status.floor.map_or(i64::MIN, |f| f.saturating_add(1));
        let w = match settings.toggle {
            ToggleRule::Offset(offset) => progress.saturating_add(offset).max(above_floor),
            ToggleRule::Value(v) if v > progress && v >= above_floor => v,
            ToggleRule::Value(v) => {
                self.abort("ToggleInPast", &format!("coordination.toggle.value {v} is not after the outgoing job's progress {progress} and the floor {:?}", self.status.floor), true);
                return;
            }
        };
        self.set_phase(Phase::ConfirmingToggle);
        self.transition().toggle = Some(w);
        self.note(
            false,
            "ToggleProposed",
            format!("W = {w} proposed (outgoing progress {progress})"),
        );
        self.health.progressing(
            "ConfirmingToggle",
            format!("waiting for every outgoing gate to apply W = {w}"),
        );
    }

    fn confirming_toggle(&mut self, settings: &Settings, outgoing: &ChildObs) {
        let t = self.transition().clone();
        let w = t.toggle.expect("W is proposed in ConfirmingToggle");
        if self.incoming_unless_failed().is_none() {
            return;
        }
        let acked = outgoing
            .flink
            .as_ref()
            .and_then(|f| f.gates.clone())
            .filter(|g| g.acknowledge(t.epoch, w));
        let Some(gates) = acked else {
            self.wait_or_abort(
                settings,
                &t,
                "GatesNotAcknowledged",
                &format!("waiting for every outgoing gate to apply W = {w}"),
            );
            return;
        };
        match gates.max_passed() {
            Some(max) if max > w => {
                let raised = match settings.toggle {
                    ToggleRule::Offset(offset) => max.saturating_add(offset),
                    ToggleRule::Value(_) => max.saturating_add(1),
                };
                self.transition().toggle = Some(raised);
                self.note(
                    true,
                    "ToggleRaised",
                    format!(
                        "an outgoing gate had already passed {max} > W = {w}; W raised to {raised}"
                    ),
                );
                self.health
                    .progressing("ConfirmingToggle", format!("W raised to {raised}"));
            }
            _ => {
                self.set_phase(Phase::ToggleSet);
                self.note(
                    false,
                    "ToggleSet",
                    format!("W = {w} set: the outgoing job emits t <= W, the incoming t > W"),
                );
                self.health.progressing(
                    "ToggleSet",
                    "waiting for health and both watermarks past W".into(),
                );
            }
        }
    }

    fn toggle_set(&mut self, settings: &Settings, outgoing: &ChildObs, spec_changed: bool) {
        let t = self.transition().clone();
        let w = t.toggle.expect("W is set in ToggleSet");
        if spec_changed {
            let hash = self.obs.template_hash.clone();
            self.transition().template_hash.clone_from(&hash);
            self.transition().redeploy_nonce = self.obs.redeploy_nonce;
            // A person's template replaces a forward repair (pending or under way).
            self.transition().forward_repair = None;
            self.apply(t.to, None);
            self.note(false, "IncomingUpdatedInPlace", "W is set, so the handover can only go forward: the incoming job is updated in place from its own state");
            return;
        }
        if self.consume_action(ManualAction::Abort) {
            self.note(true, "ActionRefused", format!("abort refused: W = {w} is set and the outgoing job has dropped records above it; fix the incoming job forward (change the template)"));
        }
        let Some(incoming) = self.obs.child(t.to).cloned() else {
            self.health.degraded(
                "IncomingMissingAfterToggle",
                format!("the incoming FlinkDeployment was deleted after W = {w} was set; recreating it from the handover's starting state would emit records twice, so it needs a person: recreate it from its latest checkpoint"),
            );
            return;
        };
        if self.forward_repair(settings, &t, &incoming) {
            return;
        }
        let flink = incoming.flink.clone().unwrap_or_default();
        let in_gates = flink.gates.clone().unwrap_or_default();
        let out_gates = outgoing
            .flink
            .as_ref()
            .and_then(|f| f.gates.clone())
            .unwrap_or_default();
        let in_wm = flink.watermark().unwrap_or(i64::MIN);
        let out_wm = outgoing.flink.as_ref().and_then(FlinkObs::watermark);
        let from = t.from.expect("handover");
        let outgoing_gone = self.obs.child(from).is_none();
        let mut watermark_waits = Vec::new();
        if !in_gates.past(w) {
            watermark_waits.push(WatermarkWait {
                color: t.to,
                watermark: flink.watermark(),
                toggle: w,
            });
        }
        if !outgoing_gone && !out_gates.past(w) {
            watermark_waits.push(WatermarkWait {
                color: from,
                watermark: out_wm,
                toggle: w,
            });
        }
        self.watermark_waits(&watermark_waits);
        let mut waiting = Vec::new();
        if !incoming.running() {
            waiting.push("the incoming job to run".to_owned());
        }
        if flink.checkpoints_completed < u64::from(settings.min_checkpoints) {
            waiting.push(format!(
                "{} of {} checkpoints",
                flink.checkpoints_completed, settings.min_checkpoints
            ));
        }
        for wait in &watermark_waits {
            waiting.push(wait.to_string());
        }
        if let (Some(max_lag), Some(out)) = (settings.max_lag, out_wm) {
            let lag = out.saturating_sub(in_wm);
            if u128::try_from(lag).unwrap_or(0) > max_lag.as_millis() {
                waiting.push(format!("the incoming job to catch up (lag {lag} ms)"));
            }
        }
        let manual_promote = self.obs.action == Some(ManualAction::Promote);
        if !waiting.is_empty() {
            self.health
                .progressing("ToggleSet", format!("waiting for {}", waiting.join(", ")));
            return;
        }
        if settings.promotion == crate::resource::Promotion::Manual && !manual_promote {
            self.health.progressing(
                "AwaitingPromotion",
                "healthy; set the annotation bluegreen.dev/action=promote to promote".into(),
            );
            return;
        }
        if manual_promote {
            self.actions.push(Action::ClearManualAction);
        }
        self.promote(settings, &t, [(t.to, &in_gates), (from, &out_gates)]);
    }

    /// Promotes the incoming color: ClearToTeardown, noting which gates passed W by idleness.
    fn promote(&mut self, settings: &Settings, t: &Transition, gates: [(Color, &GateObs); 2]) {
        let w = t.toggle.expect("W is set in ToggleSet");
        let idle: Vec<Color> = gates
            .into_iter()
            .filter(|(_, g)| g.relies_on_idleness(w))
            .map(|(c, _)| c)
            .collect();
        if !idle.is_empty() {
            self.note(
                false,
                "PastWByIdleness",
                format!(
                    "the gates of {idle:?} count as past W = {w} because all their inputs are idle"
                ),
            );
        }
        self.transition().past_w_by_idleness = idle;
        self.status.active_color = Some(t.to);
        if let Some(repair) = repaired(t) {
            // The incoming child runs the outgoing job's template: that is what is deployed, and
            // the template of this handover is not retried until it changes.
            self.status
                .deployed_template_hash
                .clone_from(&repair.template_hash);
            self.status.failed_template_hash = Some(t.template_hash.clone());
            self.note(
                false,
                "ForwardRepaired",
                format!(
                    "{} promoted at W = {w} after its forward repair: it runs the outgoing job's template {}, not {}; change the template to try again",
                    t.to,
                    repair.template_hash.as_deref().unwrap_or("?"),
                    t.template_hash
                ),
            );
        } else {
            // Promotion waits in ToggleSet, which applies a template change first: the observed
            // spec is the one this handover deployed.
            self.status.deployed_template_hash = Some(t.template_hash.clone());
            self.status.deployed_spec = Some(self.obs.spec.clone());
            self.status.deployed_redeploy_nonce = t.redeploy_nonce;
        }
        self.transition().waiting_for_watermarks.clear();
        self.set_phase(Phase::ClearToTeardown);
        self.note(false, "Promoted", format!("{} promoted at W = {w}", t.to));
        self.health.progressing(
            "ClearToTeardown",
            format!("keeping the outgoing job for {:?}", settings.deletion_delay),
        );
    }

    /// Records the watermarks the handover waits on; an event when that set changes.
    fn watermark_waits(&mut self, waits: &[WatermarkWait]) {
        let before: Vec<Color> = self
            .transition()
            .waiting_for_watermarks
            .iter()
            .map(|w| w.color)
            .collect();
        let now: Vec<Color> = waits.iter().map(|w| w.color).collect();
        if !now.is_empty() && before != now {
            let list: Vec<String> = waits.iter().map(ToString::to_string).collect();
            self.note(
                false,
                "WaitingForWatermark",
                format!("waiting for {}", list.join(", ")),
            );
        }
        self.transition().waiting_for_watermarks = waits.to_vec();
    }

    fn clear_to_teardown(&mut self, settings: &Settings) {
        let t = self.transition().clone();
        let early = self.consume_action(ManualAction::Teardown);
        if early || self.since(&t.phase_started_at) >= settings.deletion_delay {
            self.set_phase(Phase::TearingDown);
            self.tearing_down(settings, t.from.expect("handover has an outgoing color"));
        } else {
            self.health.progressing(
                "ClearToTeardown",
                format!("keeping the outgoing job for {:?}", settings.deletion_delay),
            );
        }
    }

    /// Stops the outgoing job with a savepoint, which commits its output, and deletes its child
    /// once the job is FINISHED. A job that cannot be stopped is kept: cancelling it would
    /// discard its uncommitted records `t <= W`.
    fn tearing_down(&mut self, settings: &Settings, from: Color) {
        let Some(outgoing) = self.obs.child(from).cloned() else {
            let t = self.transition().clone();
            self.finish_transition("Promoted", None);
            let stopped = t
                .stop
                .savepoint
                .map_or_else(String::new, |p| format!("; its final savepoint is {p}"));
            self.note(
                false,
                "HandoverCompleted",
                format!("{} is the only job{stopped}", t.to),
            );
            self.health.ready = true;
            self.repaired_degraded();
            return;
        };
        if outgoing.deleting {
            self.health
                .progressing("TearingDown", format!("deleting the {} job", from.suffix()));
            return;
        }
        if outgoing.holds_no_output() {
            self.actions.push(Action::DeleteChild(from));
            self.health
                .progressing("TearingDown", format!("deleting the {} job", from.suffix()));
            return;
        }
        let stop = self.transition().stop.clone();
        match (
            &stop.trigger_id,
            outgoing.flink.as_ref().and_then(|f| f.savepoint.clone()),
        ) {
            (None, _) if stop.attempts >= settings.savepoint_attempts => {
                self.stop_given_up(from, &stop);
            }
            (None, _) => self.start_stop(settings, from, &outgoing, &stop),
            (Some(_), Some(SavepointObs::Completed(path))) => {
                if stop.savepoint.as_deref() != Some(&path) {
                    self.note(
                        false,
                        "OutgoingStopped",
                        format!("the outgoing job committed its output and stopped with a savepoint at {path}"),
                    );
                    self.transition().stop.savepoint = Some(path);
                }
                self.health.progressing(
                    "TearingDown",
                    "waiting for the outgoing job to be FINISHED".into(),
                );
            }
            (Some(_), Some(SavepointObs::Failed(reason))) => self.stop_failed(settings, reason),
            (Some(_), _)
                if stop
                    .since
                    .as_deref()
                    .is_some_and(|s| self.since(s) > settings.savepoint_timeout) =>
            {
                self.stop_failed(
                    settings,
                    format!("no result within {:?}", settings.savepoint_timeout),
                );
            }
            (Some(trigger_id), Some(SavepointObs::Unknown)) if outgoing.running() => {
                // The request may never have arrived (a crash after the status write).
                self.actions.push(Action::StopJob {
                    color: from,
                    trigger_id: trigger_id.clone(),
                });
                self.health.progressing(
                    "TearingDown",
                    "stopping the outgoing job with a savepoint".into(),
                );
            }
            (Some(_), _) => self.health.progressing(
                "TearingDown",
                "the outgoing job's stop-with-savepoint is in progress".into(),
            ),
        }
    }

    /// Every stop attempt failed: the job is kept (never cancelled) until a person acts.
    fn stop_given_up(&mut self, from: Color, stop: &OutgoingStop) {
        if self.consume_action(ManualAction::Teardown) {
            self.transition().stop.attempts = 0;
            self.note(false, "OutgoingStopRetried", "retrying the stop-with-savepoint of the outgoing job (bluegreen.dev/action=teardown)");
            self.requeue = ACTIVE_REQUEUE;
            return;
        }
        self.requeue = WATCHED_REQUEUE;
        self.health.degraded(
            "OutgoingStopFailed",
            format!(
                "the outgoing {from} job could not be stopped with a savepoint ({} attempts, last: {}); it keeps running because cancelling it would discard its uncommitted output (records t <= W). Fix the cause and set bluegreen.dev/action=teardown to retry, or stop the job with a savepoint yourself; deleting its FlinkDeployment also finishes the handover, losing that output",
                stop.attempts,
                stop.last_error.as_deref().unwrap_or("unknown"),
            ),
        );
    }

    /// Sends the stop-with-savepoint (after the backoff of a failed attempt), its trigger id
    /// recorded in the status first.
    fn start_stop(
        &mut self,
        settings: &Settings,
        from: Color,
        outgoing: &ChildObs,
        stop: &OutgoingStop,
    ) {
        let backoff =
            settings.savepoint_backoff * 2u32.saturating_pow(stop.attempts.saturating_sub(1));
        let waited = stop
            .since
            .as_deref()
            .map_or(Duration::MAX, |s| self.since(s));
        if stop.attempts > 0 && waited < backoff {
            self.health.progressing(
                "TeardownBackoff",
                format!("retrying the stop-with-savepoint of the outgoing job after {backoff:?}"),
            );
        } else if !outgoing.running() {
            self.health.progressing(
                "TearingDown",
                "waiting for the outgoing job to run, to stop it with a savepoint".into(),
            );
        } else {
            let t = self.transition().clone();
            let trigger_id = stop_trigger_id(&t.template_hash, t.epoch, stop.attempts);
            let now = self.now().to_string();
            let s = &mut self.transition().stop;
            s.trigger_id = Some(trigger_id.clone());
            s.since = Some(now);
            self.actions.push(Action::StopJob {
                color: from,
                trigger_id,
            });
            self.health.progressing(
                "TearingDown",
                "stopping the outgoing job with a savepoint".into(),
            );
        }
    }

    fn stop_failed(&mut self, settings: &Settings, reason: String) {
        let now = self.now().to_string();
        let s = &mut self.transition().stop;
        s.attempts += 1;
        s.trigger_id = None;
        s.since = Some(now);
        s.last_error = Some(reason.clone());
        let attempts = s.attempts;
        if attempts >= settings.savepoint_attempts {
            self.note(
                true,
                "OutgoingStopFailed",
                format!("the outgoing job could not be stopped with a savepoint after {attempts} attempts (last: {reason}); it is kept running so that its uncommitted output is not discarded"),
            );
            self.health.degraded(
                "OutgoingStopFailed",
                format!("stop-with-savepoint of the outgoing job failed {attempts} times, last: {reason}; set bluegreen.dev/action=teardown to retry"),
            );
        } else {
            self.note(
                true,
                "OutgoingStopFailed",
                format!(
                    "stop-with-savepoint attempt {attempts} of {}: {reason}",
                    settings.savepoint_attempts
                ),
            );
            self.health.progressing("TeardownBackoff", reason);
        }
    }

    /// Whether the child of `color` is gone; deletes it (once) while it is not.
    fn deleted(&mut self, color: Color, reason: &str) -> bool {
        let Some(child) = self.obs.child(color) else {
            return true;
        };
        if !child.deleting {
            self.actions.push(Action::DeleteChild(color));
        }
        self.health
            .progressing(reason, format!("deleting the {} job", color.suffix()));
        false
    }

    /// Abandons the handover before W is set. `remember` keeps the template from being retried
    /// until it changes.
    fn abort(&mut self, reason: &'static str, message: &str, remember: bool) {
        let t = self.transition().clone();
        self.note(true, "HandoverAborting", format!("{reason}: {message}"));
        if remember {
            self.status.failed_template_hash = Some(t.template_hash.clone());
        }
        if t.phase == Phase::Snapshotting {
            // Nothing was deployed and the ConfigMap was not touched.
            self.finish_transition("Aborted", Some(format!("{reason}: {message}")));
        } else {
            self.set_phase(Phase::Aborting);
            self.transition().abort_reason = Some(format!("{reason}: {message}"));
            self.aborting();
        }
        if remember {
            self.health.degraded(reason, message.to_owned());
        }
    }

    fn aborting(&mut self) {
        let t = self.transition().clone();
        if self.deleted(t.to, "Aborting") {
            let reason = t.abort_reason.clone();
            self.finish_transition("Aborted", reason.clone());
            if let Some(reason) = reason
                && self.status.failed_template_hash.is_some()
            {
                self.health.degraded("HandoverAborted", reason);
            }
        }
    }

    /// Ends the handover: history entry, no transition, stage RUNNING.
    fn finish_transition(&mut self, outcome: &str, reason: Option<String>) {
        let Some(t) = self.status.transition.take() else {
            return;
        };
        if outcome == "Promoted" {
            // Step 6: W stays in force as the floor until the next handover completes.
            self.status.floor = t.toggle;
        }
        let now = self.now();
        let started = t.started_at.parse::<Timestamp>().unwrap_or(now);
        let forward_repair = repaired(&t).cloned();
        let reason = reason.or_else(|| forward_repair.as_ref().map(|r| summary(r, t.toggle)));
        let record = TransitionRecord {
            epoch: t.epoch,
            from: t.from,
            to: t.to,
            toggle: t.toggle,
            outcome: outcome.to_owned(),
            reason,
            past_w_by_idleness: t.past_w_by_idleness.clone(),
            forward_repair,
            started_at: t.started_at.clone(),
            finished_at: now.to_string(),
            duration_seconds: now.duration_since(started).as_secs_f64(),
        };
        self.status.history.insert(0, record.clone());
        self.status.history.truncate(HISTORY_LEN);
        self.finished = Some(record);
    }

    fn finish(mut self, desired: Option<CoordinationState>) -> Plan {
        if let Some(desired) = desired {
            let write = match &self.obs.configmap {
                ConfigMapObs::Valid(seen) => *seen != desired,
                ConfigMapObs::Absent => true,
                ConfigMapObs::Invalid(why) => {
                    self.note(
                        true,
                        "ConfigMapRepaired",
                        format!("the coordination ConfigMap did not parse ({why}); rewriting it"),
                    );
                    true
                }
            };
            if write {
                self.actions.insert(0, Action::WriteConfigMap(desired));
            }
            self.status.stage = Some(desired.stage);
        }
        self.status.observed_generation = Some(self.obs.generation);
        let phase = self.status.transition.as_ref().map(|t| t.phase);
        conditions::update(
            &mut self.status.conditions,
            &self.health,
            phase,
            self.obs.generation,
            self.obs.now,
        );
        Plan {
            status: self.status,
            actions: self.actions,
            notes: self.notes,
            requeue_after: self.requeue,
            finished: self.finished,
        }
    }
}

mod cleanup;
mod repair;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod world;
