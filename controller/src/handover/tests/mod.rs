//! Every phase × event cell of the handover, one test each, in one file per phase; the scenario
//! builders they share are here.

use bluegreen_protocol::flink::{JobStatus, LifecycleState};
use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle};

use super::{Action, plan};
use crate::conditions::ConditionType;
use crate::error::SpecError;
use crate::events::EventReason;
use crate::fixtures::{Scenario, flink_of, gates_of, observed, running, valid};
use crate::names::ManualAction;
use crate::observed::{ConfigMapObs, Observed, SavepointObs};
use crate::resource::{
    MicroTime, Outcome, OutgoingStop, Phase, RestoreFrom, TasksReady, Transition,
};

mod abort;
mod clusters;
mod deletion;
mod floor;
mod promotion;
mod repair;
mod snapshotting;
mod steady;
mod teardown;
mod toggle;
mod world;

/// The plan writes the ConfigMap state `epoch`, `stage`, `active`, `toggle`.
fn write_configmap(epoch: u64, stage: Stage, active: Color, toggle: Toggle) -> Action {
    Action::WriteConfigMap(CoordinationState::new(epoch, stage, active, toggle))
}

/// The ConfigMap observed in the state `epoch`, `stage`, `active`, `toggle`.
fn configmap(epoch: u64, stage: Stage, active: Color, toggle: Toggle) -> ConfigMapObs {
    ConfigMapObs::Valid(CoordinationState::new(epoch, stage, active, toggle))
}

/// `obs` after the first plan of its first deployment: the status written, the ConfigMap
/// INITIALIZING towards blue.
fn first_deployment_started(mut obs: Observed) -> Observed {
    obs.status = plan(&obs).status;
    obs.configmap = configmap(0, Stage::Initializing, Color::Blue, Toggle::NotSet);
    obs
}

/// A status timestamp.
fn time(rfc3339: &str) -> MicroTime {
    MicroTime(rfc3339.parse().expect("RFC 3339"))
}

fn at(obs: Observed, rfc3339: &str) -> Observed {
    Observed {
        now: rfc3339.parse().unwrap(),
        ..obs
    }
}

/// Condition `type_` of the status `plan` writes.
fn cond(plan: &super::Plan, type_: ConditionType) -> &crate::resource::Condition {
    plan.status
        .conditions
        .iter()
        .find(|c| c.type_ == type_.as_str())
        .unwrap_or_else(|| panic!("no {type_} condition"))
}

fn condition(plan: &super::Plan, type_: ConditionType) -> (&str, &str) {
    let c = cond(plan, type_);
    (c.status.as_str(), c.reason.as_str())
}

/// A handover in ToggleSet at `w` that can promote: green (h2) and blue (h1) running past W.
fn ready_to_promote(w: i64) -> Observed {
    handover(Phase::ToggleSet, Some(w))
        .green(running("h2", 1, 2, Some(w + 2_000), w + 1))
        .blue(running("h1", 1, 2, Some(w), w + 1_000))
}

/// The status, reason and message of condition `type_`.
fn condition_message(plan: &super::Plan, type_: ConditionType) -> (&str, &str, &str) {
    let c = cond(plan, type_);
    (c.status.as_str(), c.reason.as_str(), c.message.as_str())
}

/// Blue running with template h1 in steady state (epoch 0), the template now `hash`.
fn steady_blue(hash: &str) -> Observed {
    let mut obs = observed();
    obs.template_hash = hash.into();
    obs.status.active_color = Some(Color::Blue);
    obs.status.deployed_template_hash = Some("h1".into());
    obs.configmap = configmap(0, Stage::Running, Color::Blue, Toggle::NotSet);
    obs.blue(running("h1", 0, 0, Some(1_000), 900))
}

/// The savepoint of the outgoing `color` for attempt `attempt` of the handover to `hash` at
/// `epoch`, under the trigger id the status records first.
fn trigger(color: Color, hash: &str, epoch: u64, attempt: u32) -> Action {
    Action::TriggerSavepoint {
        color,
        trigger_id: super::savepoint_trigger_id(hash, epoch, attempt),
    }
}

/// A handover blue → green (epoch 1, template h2) in `phase`, with the matching ConfigMap.
fn handover(phase: Phase, toggle: Option<i64>) -> Observed {
    let mut obs = steady_blue("h2");
    obs.status.epoch = u64::from(phase != Phase::Snapshotting);
    obs.status.transition = Some(Transition {
        from: Some(Color::Blue),
        to: Color::Green,
        epoch: 1,
        template_hash: "h2".into(),
        generation: 2,
        redeploy_nonce: None,
        phase,
        toggle,
        savepoint_trigger_id: None,
        restore_path: Some("file:///sp/1".into()),
        savepoint_attempts: 0,
        started_at: time("2026-01-01T00:00:00Z"),
        phase_started_at: time("2026-01-01T00:00:00Z"),
        abort_reason: None,
        stop: OutgoingStop::default(),
        waiting_for_watermarks: Vec::new(),
        past_w_by_idleness: Vec::new(),
        forward_repair: None,
        incoming_ready: None,
        // Blue has run unchanged since long before the handover.
        outgoing_ready: Some(TasksReady {
            tasks_started_at: crate::fixtures::TASKS_STARTED_AT,
            since: time("2025-12-31T00:00:00Z"),
        }),
        outgoing_restart: None,
        outgoing_gates: std::collections::BTreeMap::new(),
        incoming_cluster_down_since: None,
    });
    if let (Phase::ClearToTeardown | Phase::TearingDown, Some(w)) = (phase, toggle) {
        // Promoted: blue's gates applied W and its watermark passed it.
        obs = obs.blue(running("h1", 1, 2, Some(w), w + 5_000));
    }
    let desired = super::desired_configmap(&obs.status, &obs).expect("desired");
    obs.configmap = ConfigMapObs::Valid(desired);
    obs
}

/// The incoming job has run with every task RUNNING for a minute (minReady is 10 s).
fn ready_for_a_minute(mut obs: Observed) -> Observed {
    obs.status
        .transition
        .as_mut()
        .expect("handover")
        .incoming_ready = Some(TasksReady {
        tasks_started_at: crate::fixtures::TASKS_STARTED_AT,
        since: time("2025-12-31T23:59:00Z"),
    });
    obs
}

fn transition(plan: &super::Plan) -> &Transition {
    plan.status.transition.as_ref().expect("transition")
}

/// Blue's gates, to change what they report.
fn blue_gate_obs(obs: &mut Observed) -> &mut crate::observed::GateObs {
    obs.blue
        .as_mut()
        .and_then(|b| b.flink.as_mut())
        .and_then(|f| f.gates.as_mut())
        .expect("blue has gates")
}

/// Sets the watermark and idleness of every gate of blue.
fn blue_gates(obs: &mut Observed, watermark: i64, idle: bool) {
    let gates = blue_gate_obs(obs);
    for r in &mut gates.reports {
        r.watermark = Some(watermark);
        r.idle = idle;
    }
}
