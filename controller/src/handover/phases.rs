//! The phase machine before W is set: from the first deployment and the outgoing job's savepoint
//! to the incoming job running and W proposed, acknowledged and set.

use std::time::Duration;

use super::{ACTIVE_REQUEUE, Action, Planner, WATCHED_REQUEUE, savepoint_trigger_id};
use crate::conditions::Reason;
use crate::events::EventReason;
use crate::names::ManualAction;
use crate::observed::{ChildObs, SavepointObs};
use crate::resource::{MicroTime, Outcome, Phase, RestoreFrom, TasksReady, Transition};
use crate::settings::{Settings, ToggleRule};

impl Planner<'_> {
    pub(super) fn drive(&mut self, settings: &Settings, t: &Transition) {
        self.requeue = ACTIVE_REQUEUE;
        let Some(from) = t.from else {
            self.deploying_first();
            return;
        };
        if self.consume_action(ManualAction::ClearFloor) {
            self.note(
                true,
                EventReason::ActionRefused,
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
                Reason::SpecChanged,
                "the template changed before W was set; starting over with the new template",
                false,
            );
            return;
        }
        if before_set && self.consume_action(ManualAction::Abort) {
            self.abort(
                Reason::ManualAbort,
                "aborted by the bluegreen.dev/action annotation",
                true,
            );
            return;
        }
        let outgoing = self.obs.child(from).cloned().unwrap_or_default();
        if t.phase != Phase::Aborting && self.obs.child(from).is_some() {
            // From the start, so that a job that never restarted is trusted at once after W.
            self.outgoing_up = self.outgoing_readiness(&outgoing);
            self.record_outgoing_gates(&outgoing);
        }
        match t.phase {
            Phase::Snapshotting => self.snapshotting(settings, &outgoing),
            Phase::Deploying => self.awaiting_incoming(settings, &outgoing),
            Phase::ConfirmingToggle => self.confirming_toggle(settings, &outgoing),
            Phase::ToggleSet => self.toggle_set(settings, &outgoing, spec_changed),
            Phase::ClearToTeardown => self.clear_to_teardown(settings, from),
            Phase::TearingDown => self.tearing_down(settings, from),
            Phase::Aborting => self.aborting(),
        }
    }

    /// First deployment: the blue job starts (from `initialSavepointPath` if given).
    pub(super) fn deploying_first(&mut self) {
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
            self.finish_transition(Outcome::Deployed, None);
            self.note(
                false,
                EventReason::Deployed,
                format!("the {} job is running", t.to.suffix()),
            );
            self.health.ready = true;
        } else if child.failed() {
            let why = child.error.unwrap_or_else(|| "the job failed".into());
            self.degraded_with_event(
                Reason::FirstDeploymentFailed,
                EventReason::FirstDeploymentFailed,
                why,
            );
        } else {
            self.health.progressing(
                Reason::Deploying,
                format!("waiting for the {} job to run", t.to.suffix()),
            );
        }
    }

    pub(super) fn snapshotting(&mut self, settings: &Settings, outgoing: &ChildObs) {
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
                    Reason::NoCheckpoint,
                    "the outgoing job has no completed checkpoint yet",
                ),
            },
            RestoreFrom::Savepoint => {
                if !outgoing.running() {
                    self.wait_or_abort(
                        settings,
                        &t,
                        Reason::OutgoingNotRunning,
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
                                Reason::SavepointBackoff,
                                format!("retrying the savepoint after {backoff:?}"),
                            );
                        } else {
                            // The intent first: the trigger id in the status, then the request.
                            let trigger_id = savepoint_trigger_id(
                                &t.template_hash,
                                t.epoch,
                                t.savepoint_attempts,
                            );
                            let now = MicroTime(self.now());
                            let planned = self.transition();
                            planned.phase_started_at = now;
                            planned.savepoint_trigger_id = Some(trigger_id.clone());
                            self.actions.push(Action::TriggerSavepoint {
                                color: t.from.expect("handover has an outgoing color"),
                                trigger_id,
                            });
                            self.health.progressing(
                                Reason::Snapshotting,
                                "savepoint of the outgoing job requested".into(),
                            );
                        }
                    }
                    (Some(_), Some(SavepointObs::Completed(path))) => {
                        self.note(
                            false,
                            EventReason::SavepointCompleted,
                            format!("savepoint at {path}"),
                        );
                        self.transition().restore_path = Some(path);
                        self.enter_deploying();
                    }
                    (Some(_), Some(SavepointObs::Failed(reason))) => {
                        self.savepoint_failed(settings, reason);
                    }
                    (Some(_), _)
                        if self.since(&t.phase_started_at) > settings.savepoint_timeout =>
                    {
                        self.savepoint_failed(
                            settings,
                            format!("no result within {:?}", settings.savepoint_timeout),
                        );
                    }
                    (Some(trigger_id), Some(SavepointObs::Unknown)) => {
                        // The request may never have arrived (a crash after the status write),
                        // or the JobManager failed over since: sent again under the same id.
                        self.actions.push(Action::TriggerSavepoint {
                            color: t.from.expect("handover has an outgoing color"),
                            trigger_id: trigger_id.clone(),
                        });
                        self.health.progressing(
                            Reason::Snapshotting,
                            "savepoint of the outgoing job requested".into(),
                        );
                    }
                    (Some(_), _) => self
                        .health
                        .progressing(Reason::Snapshotting, "savepoint in progress".into()),
                }
            }
        }
    }

    pub(super) fn savepoint_failed(&mut self, settings: &Settings, reason: String) {
        let now = MicroTime(self.now());
        let t = self.transition();
        t.savepoint_attempts += 1;
        t.savepoint_trigger_id = None;
        t.phase_started_at = now;
        let attempts = t.savepoint_attempts;
        if attempts >= settings.savepoint_attempts {
            self.abort(
                Reason::SavepointFailed,
                &format!("savepoint failed {attempts} times, last: {reason}"),
                true,
            );
        } else {
            self.note(
                true,
                EventReason::SavepointFailed,
                format!(
                    "attempt {attempts} of {}: {reason}",
                    settings.savepoint_attempts
                ),
            );
            self.health.progressing(Reason::SavepointBackoff, reason);
        }
    }

    pub(super) fn wait_or_abort(
        &mut self,
        settings: &Settings,
        t: &Transition,
        reason: Reason,
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

    pub(super) fn enter_deploying(&mut self) {
        self.set_phase(Phase::Deploying);
        let t = self.transition().clone();
        self.status.epoch = t.epoch;
        self.ensure_child(t.to, &t.template_hash, t.restore_path.clone());
        self.health.progressing(
            Reason::Deploying,
            format!(
                "creating the {} job; its gates hold until W is set",
                t.to.suffix()
            ),
        );
    }

    pub(super) fn incoming(&self) -> ChildObs {
        let t = self
            .status
            .transition
            .as_ref()
            .expect("handover in progress");
        self.obs.child(t.to).cloned().unwrap_or_default()
    }

    /// The incoming child; `None` (after starting the abort) when, before W is set, its job
    /// failed or its gates report the other color.
    pub(super) fn incoming_or_abort(&mut self) -> Option<ChildObs> {
        let incoming = self.incoming();
        let to = self.transition().to;
        if let Some(wrong) = incoming
            .flink
            .as_ref()
            .and_then(|f| f.gates.as_ref())
            .and_then(|g| g.wrong_color(to))
        {
            self.abort(Reason::GateColorMismatch, &color_mismatch(&wrong), true);
            return None;
        }
        if !incoming.failed() {
            return Some(incoming);
        }
        let why = incoming.error.unwrap_or_else(|| "job FAILED".into());
        let message = format!("the incoming job failed before W was set: {why}");
        self.abort(Reason::IncomingFailed, &message, true);
        None
    }

    pub(super) fn awaiting_incoming(&mut self, settings: &Settings, outgoing: &ChildObs) {
        let t = self.transition().clone();
        self.ensure_child(t.to, &t.template_hash, t.restore_path.clone());
        let Some(incoming) = self.incoming_or_abort() else {
            return;
        };
        if !incoming.running() {
            self.wait_or_abort(
                settings,
                &t,
                Reason::IncomingNotRunning,
                "waiting for the incoming job to run",
            );
            return;
        }
        // W is proposed only once the incoming job has run `minReady`: from the proposal on, the
        // outgoing job holds every record above W (and the incoming job everything) until W is
        // set, so a wait for `minReady` after it would be output latency users feel.
        let ready_for = self.incoming_readiness(&incoming);
        if ready_for.is_none_or(|d| d < settings.min_ready) {
            let seen = readiness_so_far(ready_for);
            self.wait_or_abort(
                settings,
                &t,
                Reason::IncomingNotReady,
                &format!(
                    "waiting for the incoming job to run {:?} with every task RUNNING and no restart before W is proposed (so far: {seen})",
                    settings.min_ready
                ),
            );
            return;
        }
        // Its gates must have reported (and so said their color) before W is proposed: a wait
        // here holds nothing back, unlike one after the proposal.
        if incoming
            .flink
            .as_ref()
            .and_then(|f| f.gates.as_ref())
            .is_none_or(|g| g.reports.is_empty())
        {
            self.wait_or_abort(settings, &t, Reason::NoGateMetrics, "the incoming job reports no bluegreen gate metrics yet: W is proposed once its gates report (is a GateProcessFunction in the pipeline?)");
            return;
        }
        let Some(gates) = outgoing.flink.as_ref().and_then(|f| f.gates.clone()) else {
            self.wait_or_abort(settings, &t, Reason::NoGateMetrics, "the outgoing job reports no bluegreen gate metrics: is a GateProcessFunction in the pipeline?");
            return;
        };
        if let Some(missing) = self.outgoing_gates_missing(&gates) {
            self.wait_or_abort(
                settings,
                &t,
                Reason::GatesNotAcknowledged,
                &format!("waiting for {missing}, to propose W from all of them"),
            );
            return;
        }
        let watermark = gates.watermark().unwrap_or(i64::MIN);
        let progress = gates.max_passed().unwrap_or(i64::MIN).max(watermark);
        let above_floor = self.status.floor.map_or(i64::MIN, |f| f.saturating_add(1));
        // Every input idle: nothing reaches the gates, so W needs no margin ahead of them. W at
        // the progress leaves what windows and timers before them hold (above their stalled
        // watermark) to the incoming job, which fires it once records return; the idle job
        // cannot: Flink passes not even a drain's maximum watermark through an idle source.
        let all_idle = gates.reports.iter().all(|r| r.idle) && progress > i64::MIN;
        let w = match settings.toggle {
            ToggleRule::Offset(_) if all_idle => progress.max(above_floor),
            ToggleRule::Offset(offset) => progress.saturating_add(offset).max(above_floor),
            ToggleRule::Value(v) if v > progress && v >= above_floor => v,
            ToggleRule::Value(v) => {
                self.abort(Reason::ToggleInPast, &format!("coordination.toggle.value {v} is not after the outgoing job's progress {progress} and the floor {:?}", self.status.floor), true);
                return;
            }
        };
        self.set_phase(Phase::ConfirmingToggle);
        self.transition().toggle = Some(w);
        self.note(
            false,
            EventReason::ToggleProposed,
            if all_idle && matches!(settings.toggle, ToggleRule::Offset(_)) {
                format!("W = {w} proposed (outgoing progress {progress}; every outgoing input is idle, so without the toggle offset: what its windows and timers hold goes to the incoming job)")
            } else {
                format!("W = {w} proposed (outgoing progress {progress})")
            },
        );
        self.health.progressing(
            Reason::ConfirmingToggle,
            format!("waiting for every outgoing gate to apply W = {w}"),
        );
    }

    pub(super) fn confirming_toggle(&mut self, settings: &Settings, outgoing: &ChildObs) {
        let t = self.transition().clone();
        let w = t.toggle.expect("W is proposed in ConfirmingToggle");
        let Some(incoming) = self.incoming_or_abort() else {
            return;
        };
        let ready_for = self.incoming_readiness(&incoming);
        let gates = outgoing.flink.as_ref().and_then(|f| f.gates.clone());
        let missing = gates.as_ref().and_then(|g| self.outgoing_gates_missing(g));
        let Some(gates) = gates.filter(|g| missing.is_none() && g.acknowledge(t.epoch, w)) else {
            // Name what the gates report, if anything: why they cannot apply W.
            let cause = outgoing
                .flink
                .as_ref()
                .and_then(|f| f.gates.as_ref())
                .and_then(crate::observed::GateObs::trouble)
                .map(|trouble| format!("; the gates report: {trouble}"))
                .into_iter()
                .chain(missing.map(|m| format!("; waiting for {m}")))
                .collect::<String>();
            self.wait_or_abort(
                settings,
                &t,
                Reason::GatesNotAcknowledged,
                &format!("waiting for every outgoing gate to apply W = {w}{cause}"),
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
                    EventReason::ToggleRaised,
                    format!(
                        "an outgoing gate had already passed {max} > W = {w}; W raised to {raised}"
                    ),
                );
                self.health
                    .progressing(Reason::ConfirmingToggle, format!("W raised to {raised}"));
            }
            _ if ready_for.is_none_or(|d| d < settings.min_ready) => {
                let seen = readiness_so_far(ready_for);
                self.wait_or_abort(
                    settings,
                    &t,
                    Reason::IncomingNotReady,
                    &format!(
                        "every outgoing gate applied W = {w}; waiting for the incoming job to run \
                         {:?} with every task RUNNING and no restart (so far: {seen})",
                        settings.min_ready
                    ),
                );
            }
            _ => {
                self.set_phase(Phase::ToggleSet);
                self.note(
                    false,
                    EventReason::ToggleSet,
                    format!("W = {w} set: the outgoing job emits t <= W, the incoming t > W"),
                );
                self.health.progressing(
                    Reason::ToggleSet,
                    "waiting for health and both watermarks past W".into(),
                );
            }
        }
    }

    /// Follows the incoming job's readiness in `transition.incomingReady`: every task RUNNING
    /// with the same start time since a controller time. Returns how long it has been so
    /// (`None`: not ready now). A restart (another start time, a task or the job not RUNNING)
    /// starts the wait again; an unanswered REST API keeps the record but is not ready.
    pub(super) fn incoming_readiness(&mut self, incoming: &ChildObs) -> Option<Duration> {
        let now = MicroTime(self.now());
        let started = if incoming.running() {
            match &incoming.flink {
                None => {
                    return None;
                }
                Some(flink) => flink.tasks_started_at,
            }
        } else {
            None
        };
        let previous = self.transition().incoming_ready.clone();
        let Some(started) = started else {
            if let Some(previous) = previous {
                self.transition().incoming_ready = None;
                self.note(
                    true,
                    EventReason::IncomingRestarted,
                    format!(
                        "the incoming job is not running with every task RUNNING (its tasks had run since {} ms); waiting for minReady again",
                        previous.tasks_started_at
                    ),
                );
            }
            return None;
        };
        let (record, restarted) = TasksReady::follow(previous, started, now);
        if let Some(was) = restarted {
            self.note(
                true,
                EventReason::IncomingRestarted,
                format!(
                    "the incoming job's tasks restarted (start time {started} ms, was {was} ms); waiting for minReady again"
                ),
            );
        }
        let since = record.since.clone();
        self.transition().incoming_ready = Some(record);
        Some(self.since(&since))
    }
}

/// How long the incoming job has run with every task RUNNING, for the `IncomingNotReady` message.
fn readiness_so_far(ready_for: Option<Duration>) -> String {
    ready_for.map_or_else(
        || "not RUNNING with every task now".to_owned(),
        |d| format!("{:.1}s", d.as_secs_f64()),
    )
}

/// Why gates that report the other color than their deployment's must never be given W, and the
/// fix.
pub(super) fn color_mismatch(wrong: &str) -> String {
    format!(
        "{wrong}: such gates would pass what the other color owns and drop what theirs owns (duplicates and losses at W). Build every gate with the color of the deployment it runs in, from BLUEGREEN_COLOR, which the controller sets in each pod (e.g. `new GateProcessFunction<>(Color.fromWire(System.getenv(\"BLUEGREEN_COLOR\")), ...)`), not with a fixed color or a `--color` argument in spec.template"
    )
}
