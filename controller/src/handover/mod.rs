//! The handover state machine: `plan(&Observed) -> Plan`, a pure function (no client required).
//!
//! The plan's status is written first (intent), then its actions run in order; every action is
//! idempotent and every phase re-derives its actions from the status, so a controller that stops
//! anywhere resumes where it was. The ConfigMap write, when there is one, always comes first.
//!
//! By idea: [`Plan`] and its actions (`actions`), the ConfigMap a status stands for
//! (`configmap`), the entry into a handover from the steady state (`entry`), the active job's
//! gates in the steady state (`gates`), the phases before W
//! is set (`phases`), promotion (`promotion`), teardown (`teardown`), aborting (`abort`), forward
//! repair (`repair`), the history record of a finished handover (`history`), deletion
//! ([`plan_cleanup`], `cleanup`) and the trigger ids of Flink requests (`triggers`). Conditions are derived in [`crate::conditions`].

use std::time::Duration;

use bluegreen_protocol::{Color, CoordinationState};
use jiff::Timestamp;

use crate::conditions::{self, ConditionType, Health, Reason};
use crate::events::EventReason;
use crate::names::ManualAction;
use crate::observed::{ClusterDown, ConfigMapObs, Observed};
use crate::resource::{
    FlinkBlueGreenDeploymentStatus, MicroTime, Phase, Transition, TransitionRecord,
};

pub use actions::{Action, Note, Plan};
pub use cleanup::{ends_handover_first, plan_cleanup};
pub use configmap::desired_configmap;
pub use history::HISTORY_LEN;
pub use triggers::{final_savepoint_trigger_id, savepoint_trigger_id, stop_trigger_id};

use configmap::diverged;

/// How often an active handover is re-observed.
const ACTIVE_REQUEUE: Duration = Duration::from_millis(500);
/// How often a cluster a child runs in that cannot be used is tried again.
const CLUSTER_RETRY: Duration = Duration::from_secs(10);
/// How often a steady deployment is re-observed.
const STEADY_REQUEUE: Duration = Duration::from_secs(30);
/// How often a phase that waits only for watched objects (the child's status) is re-observed as a
/// safety net; their changes trigger a reconcile anyway.
const WATCHED_REQUEUE: Duration = Duration::from_secs(5);

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
        outgoing_up: None,
    };
    let current_cm = desired_configmap(&p.status, obs);
    if let Some(reason) = diverged(&obs.configmap, current_cm.as_ref()) {
        p.health.degraded(Reason::ConfigMapDiverged, reason);
        return p.finish(None);
    }
    if let Some(down) = &obs.cluster_down {
        p.requeue = CLUSTER_RETRY;
        let decided = obs
            .valid
            .as_ref()
            .is_ok_and(|valid| p.incoming_cluster_down(&valid.settings, down));
        if !decided {
            // A child was not looked for: nothing is decided about it, nor forgotten.
            p.degraded_with_event(
                Reason::ClusterUnavailable,
                EventReason::ClusterUnavailable,
                format!("{}; nothing is done until it can", down.why),
            );
        }
        let desired = desired_configmap(&p.status, obs);
        return p.finish(desired);
    }
    match &obs.valid {
        Err(refused) => p.invalid_spec(refused),
        Ok(valid) => match p.status.transition.clone() {
            None => p.steady(&valid.settings),
            Some(t) => {
                // The steady state's watch of the gates starts afresh after the handover.
                p.status.gates_trouble_since = None;
                p.transition().incoming_cluster_down_since = None;
                p.drive(&valid.settings, &t);
            }
        },
    }
    if obs.valid.is_ok() {
        p.forget_gone_clusters();
    }
    let desired = desired_configmap(&p.status, obs);
    p.finish(desired)
}

/// One planning step: the observation, the status being planned and what it decided so far.
struct Planner<'a> {
    obs: &'a Observed,
    status: FlinkBlueGreenDeploymentStatus,
    actions: Vec<Action>,
    notes: Vec<Note>,
    requeue: Duration,
    health: Health,
    finished: Option<TransitionRecord>,
    /// How long the outgoing job has run without a restart (`outgoing::outgoing_readiness`).
    outgoing_up: Option<Duration>,
}

impl Planner<'_> {
    fn now(&self) -> Timestamp {
        self.obs.now
    }

    fn note(&mut self, warning: bool, reason: EventReason, message: impl Into<String>) {
        self.notes.push(Note {
            warning,
            reason,
            message: message.into(),
        });
    }

    /// Records a problem, with a Warning event when the `Degraded` condition does not say it
    /// already (not again on every resync).
    fn degraded_with_event(&mut self, reason: Reason, event: EventReason, message: String) {
        let reported = self.obs.status.conditions.iter().any(|c| {
            c.type_ == ConditionType::Degraded.as_str()
                && c.reason == reason.as_str()
                && c.message == message
        });
        if !reported {
            self.note(true, event, message.clone());
        }
        self.health.degraded(reason, message);
    }

    /// The time since `then`; zero for a `then` in the future.
    fn since(&self, then: &MicroTime) -> Duration {
        Duration::try_from(self.now().duration_since(then.0)).unwrap_or(Duration::ZERO)
    }

    fn consume_action(&mut self, wanted: ManualAction) -> bool {
        if self.obs.action == Some(wanted) {
            self.actions.push(Action::ClearManualAction);
            true
        } else {
            false
        }
    }

    fn transition(&mut self) -> &mut Transition {
        self.status
            .transition
            .as_mut()
            .expect("a handover is in progress in this phase")
    }

    fn set_phase(&mut self, phase: Phase) {
        let now = MicroTime(self.now());
        let t = self.transition();
        t.phase = phase;
        t.phase_started_at = now;
    }

    fn apply(&mut self, color: Color, restore_path: Option<String>) {
        self.place(color);
        self.actions.push(Action::ApplyChild {
            color,
            template_hash: self.obs.template_hash.clone(),
            restore_path,
        });
    }

    /// Records where the child of `color` is about to be created (`spec.cluster`), before it
    /// is: a child that exists stays in its cluster, and an apply updates it there.
    fn place(&mut self, color: Color) {
        if self.obs.child(color).is_none() {
            self.status
                .clusters
                .set(color, self.obs.spec.cluster.clone());
        }
    }

    /// Forgets the cluster of every child that is gone and not being created now, so a cluster
    /// nothing runs in any more is not looked at again. Not the incoming child's after W: a
    /// person recreates it where it ran (`IncomingMissingAfterToggle`), and it is looked for there.
    fn forget_gone_clusters(&mut self) {
        let recreated_by_hand = self
            .status
            .transition
            .as_ref()
            .filter(|t| t.phase == Phase::ToggleSet)
            .map(|t| t.to);
        for color in [Color::Blue, Color::Green] {
            if recreated_by_hand == Some(color) {
                continue;
            }
            let applied = self.actions.iter().any(|a| {
                matches!(a, Action::ApplyChild { color: c, .. } | Action::RepairChild { color: c, .. } if *c == color)
            });
            if self.obs.child(color).is_none() && !applied {
                self.status.clusters.set(color, None);
            }
        }
    }

    fn ensure_child(&mut self, color: Color, hash: &str, restore_path: Option<String>) {
        let up_to_date = self.obs.child(color).is_some_and(|c| {
            !c.deleting
                && c.template_hash.as_deref() == Some(hash)
                && c.spec_job_state == Some(self.obs.wanted_job_state)
        });
        if !up_to_date && hash == self.obs.template_hash {
            self.apply(color, restore_path);
        }
    }

    fn finish(mut self, desired: Option<CoordinationState>) -> Plan {
        if let Some(desired) = desired {
            let write = match &self.obs.configmap {
                ConfigMapObs::Valid(seen) => *seen != desired,
                ConfigMapObs::Absent => true,
                ConfigMapObs::Invalid(why) => {
                    self.note(
                        true,
                        EventReason::ConfigMapRepaired,
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
        // Children in another cluster are not watched: a phase that waits on them polls.
        if !self.status.clusters.is_empty() && self.requeue == WATCHED_REQUEUE {
            self.requeue = ACTIVE_REQUEUE;
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

mod abort;
mod actions;
mod cleanup;
mod configmap;
mod entry;
mod gates;
mod history;
mod outgoing;
mod phases;
mod promotion;
mod repair;
mod teardown;
#[cfg(test)]
mod tests;
mod triggers;
