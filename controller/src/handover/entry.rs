//! The entry into a handover: the steady state, where a template change starts a handover (or a
//! first deployment), refuses an invalid spec or a W in the past, and clears the floor.

use bluegreen_protocol::Color;

use super::{ACTIVE_REQUEUE, Action, Planner, STEADY_REQUEUE};
use crate::conditions::Reason;
use crate::error::SpecError;
use crate::events::EventReason;
use crate::names::ManualAction;
use crate::observed::{ChildObs, JobState};
use crate::resource::{MicroTime, OutgoingStop, Phase, RestoreFrom, Transition};
use crate::settings::{Settings, ToggleRule};

impl Planner<'_> {
    /// No handover in progress.
    pub(super) fn steady(&mut self, settings: &Settings) {
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
                EventReason::ActionRefused,
                format!("{action:?} needs a handover in progress; there is none"),
            );
        }
        // A job that runs elsewhere than `spec.cluster` says (changed after W of the last
        // handover, which could not move it any more) moves too.
        let moved = self.status.clusters.of(active) != self.obs.spec.cluster.as_deref();
        let template_changed =
            moved || self.status.deployed_template_hash.as_deref() != Some(&self.obs.template_hash);
        let already_failed =
            self.status.failed_template_hash.as_deref() == Some(&self.obs.template_hash);
        match self.obs.child(active) {
            None => self.health.degraded(
                Reason::ActiveChildMissing,
                format!("the active FlinkDeployment ({}) is gone; recreate it from a savepoint with savepointRedeployNonce", active.suffix()),
            ),
            Some(child) if template_changed && !already_failed => {
                let child = child.clone();
                if let Some(why) = self.major_version_crossed(settings) {
                    self.invalid_spec(&SpecError::new("spec.template.spec.flinkVersion", why));
                } else if let Some(why) = self.toggle_in_past(settings, &child) {
                    self.invalid_spec(&SpecError::new("spec.coordination.toggle.value", why));
                } else if let Some(refused) = self.move_refused(active) {
                    self.invalid_spec(&refused);
                } else {
                    self.start_handover(settings, active, &child);
                }
            }
            Some(child) => {
                if !template_changed && child.spec_job_state != Some(self.obs.wanted_job_state) {
                    self.apply(active, None);
                    let (reason, what) = match self.obs.wanted_job_state {
                        JobState::Suspended => (EventReason::Suspending, "suspending the job (job.state: suspended): the Flink operator stops it with a savepoint"),
                        JobState::Running => (EventReason::Resuming, "resuming the job (job.state: running) from its savepoint"),
                    };
                    self.note(false, reason, what);
                }
                if child.failed() {
                    self.health.degraded(Reason::ActiveJobFailed, child.error.clone().unwrap_or_else(|| "the active job failed".into()));
                } else if already_failed && template_changed && !self.repaired_degraded() {
                    self.health.degraded(
                        Reason::HandoverAborted,
                        "the last handover to this template was aborted; change the template to try again".into(),
                    );
                }
                // Suspended on purpose: not ready (nothing runs), and said so, not an error.
                self.health.suspended = self.obs.wanted_job_state == JobState::Suspended;
                self.health.ready = child.running() && !self.health.suspended;
                self.check_gates(active, child);
            }
        }
    }

    /// `Degraded/InvalidSpec` naming the field and the fix, with a Warning event when the
    /// message is new (not again on every resync). Nothing that runs is touched.
    pub(super) fn invalid_spec(&mut self, refused: &SpecError) {
        let message = format!("{refused}; the running job is left untouched");
        self.degraded_with_event(Reason::InvalidSpec, EventReason::InvalidSpec, message);
        self.requeue = STEADY_REQUEUE;
    }

    /// Why the new template cannot start from the running job's state: its `flinkVersion`
    /// (`v1_20`, `v2_1`, …) is of another major line than the deployed one, and Flink restores
    /// no savepoint or checkpoint across major versions. `None` when both are in one line, one
    /// is not known, or `coordination.restoreFrom` is `stateless`.
    pub(super) fn major_version_crossed(&self, settings: &Settings) -> Option<String> {
        if settings.restore_from == RestoreFrom::Stateless {
            return None;
        }
        let major = |v: &str| {
            v.strip_prefix('v')
                .and_then(|rest| rest.split('_').next())
                .map(str::to_owned)
        };
        let deployed = self
            .status
            .deployed_spec
            .as_ref()
            .and_then(|s| s.template.spec.flink_version.clone())?;
        let wanted = self.obs.spec.template.spec.flink_version.clone()?;
        let (from, to) = (major(&deployed)?, major(&wanted)?);
        (from != to).then(|| {
            format!(
                "moves the job from {deployed} to {wanted}: Flink restores no savepoint or checkpoint across major versions, so the incoming job could not start from the running one's state. Upgrade within the {deployed} line, or migrate the state (Flink's State Processor API) and hand over with `coordination.restoreFrom: stateless` and `job.initialSavepointPath` set to the migrated savepoint"
            )
        })
    }

    /// Why the `active` job's state cannot move to the cluster `spec.cluster` names: its
    /// checkpoint and savepoint directories, the running job's and the new template's, are not
    /// on storage both clusters reach (`checks::cluster::move_storage`). `None` when the job
    /// stays in its cluster, or can move.
    fn move_refused(&self, active: Color) -> Option<SpecError> {
        if self.status.clusters.of(active) == self.obs.spec.cluster.as_deref() {
            return None;
        }
        crate::checks::cluster::move_storage(self.status.deployed_spec.as_ref(), &self.obs.spec)
            .err()
    }

    /// Why `coordination.toggle.value` cannot be the next W: it is not after the live job's
    /// progress (its gates' highest passed event time or watermark) or not above the floor.
    /// Such a handover would abort only after the incoming job ran, so it is not started.
    pub(super) fn toggle_in_past(&self, settings: &Settings, live: &ChildObs) -> Option<String> {
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
    pub(super) fn clear_floor(&mut self) {
        match self.status.floor.take() {
            Some(floor) => {
                self.status.epoch += 1;
                self.note(
                    false,
                    EventReason::FloorCleared,
                    format!(
                        "floor {floor} cleared (epoch {}): records at or below it are emitted again",
                        self.status.epoch
                    ),
                );
            }
            None => self.note(
                false,
                EventReason::FloorCleared,
                "there is no floor to clear",
            ),
        }
    }

    pub(super) fn start_first_deployment(&mut self) {
        self.status.epoch = 0;
        self.status.transition = Some(self.new_transition(
            None,
            Color::Blue,
            0,
            Phase::Deploying,
            self.obs.initial_savepoint.clone(),
        ));
        self.note(
            false,
            EventReason::Deploying,
            "first deployment: creating the blue job",
        );
        self.deploying_first();
    }

    pub(super) fn start_handover(&mut self, settings: &Settings, from: Color, child: &ChildObs) {
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
        let transition = self.new_transition(Some(from), from.other(), epoch, phase, restore_path);
        self.status.transition = Some(transition);
        self.note(
            false,
            EventReason::HandoverStarted,
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

    /// A new transition to `to` (from `from`; `None` for the first deployment) in `epoch`,
    /// starting in `phase` from `restore_path`, for the observed template.
    fn new_transition(
        &self,
        from: Option<Color>,
        to: Color,
        epoch: u64,
        phase: Phase,
        restore_path: Option<String>,
    ) -> Transition {
        let now = MicroTime(self.now());
        Transition {
            from,
            to,
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
            incoming_ready: None,
            outgoing_ready: None,
            outgoing_restart: None,
            outgoing_gates: std::collections::BTreeMap::new(),
            incoming_cluster_down_since: None,
        }
    }
}
