//! Every phase × event cell of the handover, one test each.

use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle};

use super::{Action, plan};
use crate::error::SpecError;
use crate::fixtures::{observed, running, valid, with_child};
use crate::observed::{ConfigMapObs, ManualAction, Observed, SavepointObs};
use crate::resource::{
    MicroTime, Outcome, OutgoingStop, Phase, RestoreFrom, TasksReady, Transition,
};

/// A status timestamp.
fn time(rfc3339: &str) -> MicroTime {
    MicroTime(rfc3339.parse().expect("RFC 3339"))
}

const MINUTE: i64 = 60_000;

fn at(obs: Observed, rfc3339: &str) -> Observed {
    Observed {
        now: rfc3339.parse().unwrap(),
        ..obs
    }
}

/// Condition `type_` of the status `plan` writes.
fn cond<'a>(plan: &'a super::Plan, type_: &str) -> &'a crate::resource::Condition {
    plan.status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} condition"))
}

fn condition<'a>(plan: &'a super::Plan, type_: &str) -> (&'a str, &'a str) {
    let c = cond(plan, type_);
    (c.status.as_str(), c.reason.as_str())
}

/// A handover in ToggleSet at `w` that can promote: green (h2) and blue (h1) running past W.
fn ready_to_promote(w: i64) -> Observed {
    with_child(
        with_child(
            handover(Phase::ToggleSet, Some(w)),
            Color::Green,
            Some(running("h2", 1, 2, Some(w + 2_000), w + 1)),
        ),
        Color::Blue,
        Some(running("h1", 1, 2, Some(w), w + 1_000)),
    )
}

/// The status, reason and message of condition `type_`.
fn condition_message<'a>(plan: &'a super::Plan, type_: &str) -> (&'a str, &'a str, &'a str) {
    let c = cond(plan, type_);
    (c.status.as_str(), c.reason.as_str(), c.message.as_str())
}

/// Blue running with template h1 in steady state (epoch 0), the template now `hash`.
fn steady_blue(hash: &str) -> Observed {
    let mut obs = observed();
    obs.template_hash = hash.into();
    obs.status.active_color = Some(Color::Blue);
    obs.status.deployed_template_hash = Some("h1".into());
    obs.configmap = ConfigMapObs::Valid(CoordinationState::new(
        0,
        Stage::Running,
        Color::Blue,
        Toggle::NotSet,
    ));
    with_child(
        obs,
        Color::Blue,
        Some(running("h1", 0, 0, Some(1_000), 900)),
    )
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
    });
    if let (Phase::ClearToTeardown | Phase::TearingDown, Some(w)) = (phase, toggle) {
        // Promoted: blue's gates applied W and its watermark passed it.
        obs = with_child(
            obs,
            Color::Blue,
            Some(running("h1", 1, 2, Some(w), w + 5_000)),
        );
    }
    let desired = super::desired_configmap(&obs.status, &obs).expect("desired");
    obs.configmap = ConfigMapObs::Valid(desired);
    obs
}

fn transition(plan: &super::Plan) -> &Transition {
    plan.status.transition.as_ref().expect("transition")
}

#[test]
fn first_deployment_writes_initializing_then_creates_blue() {
    let p = plan(&observed());
    assert_eq!(
        p.actions,
        vec![
            Action::WriteConfigMap(CoordinationState::new(
                0,
                Stage::Initializing,
                Color::Blue,
                Toggle::NotSet
            )),
            Action::ApplyChild {
                color: Color::Blue,
                template_hash: "h1".into(),
                restore_path: None
            },
        ]
    );
    assert_eq!(transition(&p).phase, Phase::Deploying);
    assert_eq!(condition(&p, "Ready").0, "False");
}

#[test]
fn first_deployment_starts_from_the_initial_savepoint() {
    let mut obs = observed();
    obs.initial_savepoint = Some("s3://sp/old".into());
    let p = plan(&obs);
    assert!(p.actions.contains(&Action::ApplyChild {
        color: Color::Blue,
        template_hash: "h1".into(),
        restore_path: Some("s3://sp/old".into())
    }));
}

#[test]
fn first_deployment_completes_when_blue_runs() {
    let mut obs = observed();
    obs.status = plan(&obs).status;
    obs.configmap = ConfigMapObs::Valid(CoordinationState::new(
        0,
        Stage::Initializing,
        Color::Blue,
        Toggle::NotSet,
    ));
    let obs = with_child(obs, Color::Blue, Some(running("h1", 0, 0, None, i64::MIN)));
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![Action::WriteConfigMap(CoordinationState::new(
            0,
            Stage::Running,
            Color::Blue,
            Toggle::NotSet
        ))]
    );
    assert_eq!(p.status.active_color, Some(Color::Blue));
    assert!(p.status.transition.is_none());
    assert_eq!(condition(&p, "Ready"), ("True", "Running"));
    assert_eq!(p.status.history[0].outcome, Outcome::Deployed);
}

#[test]
fn steady_state_without_changes_does_nothing() {
    let p = plan(&steady_blue("h1"));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(condition(&p, "Ready").0, "True");
    assert_eq!(condition(&p, "Degraded").0, "False");
}

#[test]
fn suspend_is_applied_in_place_without_a_handover() {
    let mut obs = steady_blue("h1");
    obs.wanted_job_state = crate::observed::JobState::Suspended;
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![Action::ApplyChild {
            color: Color::Blue,
            template_hash: "h1".into(),
            restore_path: None
        }]
    );
    assert!(p.status.transition.is_none());
}

#[test]
fn a_template_change_starts_with_a_savepoint_and_leaves_the_configmap_alone() {
    let p = plan(&steady_blue("h2"));
    assert_eq!(p.actions, vec![trigger(Color::Blue, "h2", 1, 0)]);
    let t = transition(&p);
    assert_eq!(
        (t.phase, t.from, t.to, t.epoch),
        (Phase::Snapshotting, Some(Color::Blue), Color::Green, 1)
    );
    assert_eq!(p.status.epoch, 0);
    assert_eq!(condition(&p, "Progressing"), ("True", "Snapshotting"));
}

#[test]
fn a_completed_savepoint_moves_the_configmap_before_creating_green() {
    let mut obs = handover(Phase::Snapshotting, None);
    obs.status.transition.as_mut().unwrap().savepoint_trigger_id = Some("t1".into());
    obs.blue.as_mut().unwrap().flink.as_mut().unwrap().savepoint =
        Some(SavepointObs::Completed("file:///sp/9".into()));
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![
            Action::WriteConfigMap(CoordinationState::new(
                1,
                Stage::Transitioning,
                Color::Green,
                Toggle::NotSet
            )),
            Action::ApplyChild {
                color: Color::Green,
                template_hash: "h2".into(),
                restore_path: Some("file:///sp/9".into())
            },
        ]
    );
    assert_eq!(transition(&p).phase, Phase::Deploying);
    assert_eq!(p.status.epoch, 1);
}

#[test]
fn a_failed_savepoint_is_retried_after_backoff_then_the_handover_is_given_up() {
    let mut obs = handover(Phase::Snapshotting, None);
    obs.status.transition.as_mut().unwrap().savepoint_trigger_id = Some("t1".into());
    obs.blue.as_mut().unwrap().flink.as_mut().unwrap().savepoint =
        Some(SavepointObs::Failed("disk full".into()));
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert_eq!(transition(&p).savepoint_attempts, 1);
    assert!(transition(&p).savepoint_trigger_id.is_none());
    // Within the backoff: wait.
    let mut again = obs.clone();
    again.status = p.status.clone();
    again
        .blue
        .as_mut()
        .unwrap()
        .flink
        .as_mut()
        .unwrap()
        .savepoint = None;
    assert!(
        plan(&at(again.clone(), "2026-01-01T00:00:05Z"))
            .actions
            .is_empty()
    );
    // After it: trigger again.
    let p2 = plan(&at(again, "2026-01-01T00:00:11Z"));
    assert_eq!(p2.actions, vec![trigger(Color::Blue, "h2", 1, 1)]);
    // The third failure gives up: nothing deployed, ConfigMap untouched, Degraded.
    let mut last = obs;
    last.status.transition.as_mut().unwrap().savepoint_attempts = 2;
    let p3 = plan(&last);
    assert!(p3.status.transition.is_none());
    assert!(p3.actions.is_empty(), "{:?}", p3.actions);
    assert_eq!(condition(&p3, "Degraded"), ("True", "SavepointFailed"));
    assert_eq!(p3.status.failed_template_hash.as_deref(), Some("h2"));
    assert_eq!(p3.status.history[0].outcome, Outcome::Aborted);
}

#[test]
fn a_savepoint_that_takes_too_long_counts_as_failed() {
    let mut obs = handover(Phase::Snapshotting, None);
    obs.status.transition.as_mut().unwrap().savepoint_trigger_id = Some("t1".into());
    obs.blue.as_mut().unwrap().flink.as_mut().unwrap().savepoint = Some(SavepointObs::InProgress);
    assert!(
        plan(&at(obs.clone(), "2026-01-01T00:05:00Z"))
            .actions
            .is_empty()
    );
    let p = plan(&at(obs, "2026-01-01T00:10:01Z"));
    assert_eq!(transition(&p).savepoint_attempts, 1);
}

#[test]
fn a_savepoint_whose_request_never_arrived_is_resent_under_the_same_trigger() {
    // The trigger id is in the status before the request goes out: a crash in between leaves a
    // trigger the job does not know.
    let p = plan(&steady_blue("h2"));
    let id = super::savepoint_trigger_id("h2", 1, 0);
    assert_eq!(transition(&p).savepoint_trigger_id.as_ref(), Some(&id));
    let mut obs = steady_blue("h2");
    obs.status = p.status;
    obs.blue.as_mut().unwrap().flink.as_mut().unwrap().savepoint = Some(SavepointObs::Unknown);
    let resent = plan(&at(obs.clone(), "2026-01-01T00:05:00Z"));
    assert_eq!(resent.actions, vec![trigger(Color::Blue, "h2", 1, 0)]);
    let t = transition(&resent);
    assert_eq!(
        (t.savepoint_trigger_id.as_ref(), t.savepoint_attempts),
        (Some(&id), 0)
    );
    // No result within the timeout: a failed attempt, like any other.
    let p = plan(&at(obs, "2026-01-01T00:10:01Z"));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(transition(&p).savepoint_attempts, 1);
}

#[test]
fn restore_from_last_checkpoint_skips_the_savepoint() {
    let mut obs = steady_blue("h2");
    obs.valid = valid(|s| {
        s.coordination.restore_from = RestoreFrom::LastCheckpoint;
        s.template
            .spec
            .flink_configuration
            .insert("state.checkpoints.num-retained".into(), "2".into());
    });
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::Deploying);
    assert!(p.actions.contains(&Action::ApplyChild {
        color: Color::Green,
        template_hash: "h2".into(),
        restore_path: Some("file:///cp/3".into())
    }));
}

#[test]
fn a_new_redeploy_nonce_starts_from_the_given_savepoint() {
    let mut obs = steady_blue("h2");
    obs.redeploy_nonce = Some(7);
    obs.initial_savepoint = Some("s3://sp/given".into());
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::Deploying);
    assert_eq!(
        transition(&p).restore_path.as_deref(),
        Some("s3://sp/given")
    );
}

#[test]
fn green_not_running_within_the_grace_period_aborts_and_deletes_it() {
    let mut obs = handover(Phase::Deploying, None);
    let mut green = running("h2", 1, 0, None, i64::MIN);
    green.job_state = Some("CREATED".into());
    obs = with_child(obs, Color::Green, Some(green));
    assert!(
        plan(&at(obs.clone(), "2026-01-01T00:09:00Z"))
            .actions
            .is_empty()
    );
    let p = plan(&at(obs, "2026-01-01T00:10:01Z"));
    assert_eq!(
        p.actions,
        vec![
            Action::WriteConfigMap(CoordinationState::new(
                1,
                Stage::Failing,
                Color::Green,
                Toggle::NotSet
            )),
            Action::DeleteChild(Color::Green),
        ]
    );
    assert_eq!(transition(&p).phase, Phase::Aborting);
    assert_eq!(condition(&p, "Degraded"), ("True", "IncomingNotRunning"));
}

#[test]
fn a_failed_green_aborts_at_once() {
    let mut obs = handover(Phase::Deploying, None);
    let mut green = running("h2", 1, 0, None, i64::MIN);
    green.job_state = Some("FAILED".into());
    green.error = Some("ClassNotFoundException".into());
    obs = with_child(obs, Color::Green, Some(green));
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::Aborting);
    assert!(
        transition(&p)
            .abort_reason
            .as_deref()
            .unwrap()
            .contains("ClassNotFoundException")
    );
}

#[test]
fn an_abort_completes_once_green_is_gone_and_the_template_is_not_retried() {
    let mut obs = handover(Phase::Aborting, None);
    obs.status.transition.as_mut().unwrap().abort_reason = Some("IncomingFailed: boom".into());
    obs.status.failed_template_hash = Some("h2".into());
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![Action::WriteConfigMap(CoordinationState::new(
            1,
            Stage::Running,
            Color::Blue,
            Toggle::NotSet
        ))]
    );
    assert!(p.status.transition.is_none());
    assert_eq!(p.status.active_color, Some(Color::Blue));
    assert_eq!(condition(&p, "Degraded"), ("True", "HandoverAborted"));
    // Next reconcile: same template → nothing; the abort reset every per-transition field.
    let mut next = obs.clone();
    next.status = p.status.clone();
    next.configmap = ConfigMapObs::Valid(CoordinationState::new(
        1,
        Stage::Running,
        Color::Blue,
        Toggle::NotSet,
    ));
    let p2 = plan(&next);
    assert!(p2.actions.is_empty());
    assert_eq!(condition(&p2, "Degraded"), ("True", "HandoverAborted"));
    // A new template tries again, with a fresh epoch and no stale trigger id.
    next.template_hash = "h3".into();
    next.status = p2.status;
    let p3 = plan(&next);
    let t = transition(&p3);
    assert_eq!(
        (t.epoch, t.savepoint_trigger_id.clone(), t.toggle),
        (2, Some(super::savepoint_trigger_id("h3", 2, 0)), None)
    );
    assert_eq!(p3.actions, vec![trigger(Color::Blue, "h3", 2, 0)]);
}

#[test]
fn green_running_proposes_w_after_the_outgoing_progress() {
    let obs = with_child(
        handover(Phase::Deploying, None),
        Color::Green,
        Some(running("h2", 1, 0, None, i64::MIN)),
    );
    let p = plan(&obs);
    // Blue's gates passed up to 1_000 and its watermark is 900: W = 1_000 + 1 minute.
    let w = 1_000 + MINUTE;
    assert_eq!(
        p.actions,
        vec![Action::WriteConfigMap(CoordinationState::new(
            1,
            Stage::Transitioning,
            Color::Green,
            Toggle::Proposed(w)
        ))]
    );
    assert_eq!(
        (transition(&p).phase, transition(&p).toggle),
        (Phase::ConfirmingToggle, Some(w))
    );
}

#[test]
fn an_outgoing_job_whose_inputs_are_all_idle_gets_w_at_its_progress_without_the_offset() {
    let mut obs = with_child(
        handover(Phase::Deploying, None),
        Color::Green,
        Some(running("h2", 1, 0, None, i64::MIN)),
    );
    // Blue passed up to 1_000; its watermark stalled at 900 with every input idle: a window
    // ending at 1_999 is still in its state, which it cannot fire (its sources are idle).
    blue_gates(&mut obs, 900, true);
    let p = plan(&obs);
    assert_eq!(
        transition(&p).toggle,
        Some(1_000),
        "W at the progress: the pending window (1_999) belongs to green, which fires it"
    );
    assert!(
        p.notes.iter().any(
            |n| n.reason == "ToggleProposed" && n.message.contains("without the toggle offset")
        ),
        "{:?}",
        p.notes
    );
    // One gate still active: the offset applies as ever.
    let gates = blue_gate_obs(&mut obs);
    gates.reports[0].idle = false;
    assert_eq!(transition(&plan(&obs)).toggle, Some(1_000 + MINUTE));
}

#[test]
fn an_outgoing_job_without_gates_cannot_hand_over() {
    let mut obs = with_child(
        handover(Phase::Deploying, None),
        Color::Green,
        Some(running("h2", 1, 0, None, i64::MIN)),
    );
    obs.blue.as_mut().unwrap().flink.as_mut().unwrap().gates = None;
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert_eq!(condition(&p, "Progressing"), ("True", "NoGateMetrics"));
}

#[test]
fn w_is_set_only_after_every_outgoing_gate_acknowledged_it() {
    let w = 70_000;
    let green = running("h2", 1, 0, None, i64::MIN);
    let not_acked = with_child(
        with_child(
            handover(Phase::ConfirmingToggle, Some(w)),
            Color::Green,
            Some(green.clone()),
        ),
        Color::Blue,
        Some(running("h1", 1, 0, Some(5_000), 4_000)),
    );
    assert!(plan(&not_acked).actions.is_empty());
    let mut acked = with_child(
        not_acked,
        Color::Blue,
        Some(running("h1", 1, 1, Some(5_000), 4_000)),
    );
    // Green has run with every task RUNNING for a minute (minReady is 10 s).
    acked.status.transition.as_mut().unwrap().incoming_ready = Some(TasksReady {
        tasks_started_at: crate::fixtures::TASKS_STARTED_AT,
        since: time("2025-12-31T23:59:00Z"),
    });
    let p = plan(&acked);
    assert_eq!(
        p.actions,
        vec![Action::WriteConfigMap(CoordinationState::new(
            1,
            Stage::Transitioning,
            Color::Green,
            Toggle::Set(w)
        ))]
    );
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
}

#[test]
fn an_outgoing_gate_seen_earlier_in_the_handover_and_missing_now_has_not_acknowledged() {
    let w = 70_000;
    let mut obs = with_child(
        with_child(
            handover(Phase::ConfirmingToggle, Some(w)),
            Color::Green,
            Some(running("h2", 1, 0, None, i64::MIN)),
        ),
        Color::Blue,
        Some(running("h1", 1, 1, Some(5_000), 4_000)),
    );
    let t = obs.status.transition.as_mut().unwrap();
    t.incoming_ready = Some(TasksReady {
        tasks_started_at: crate::fixtures::TASKS_STARTED_AT,
        since: time("2025-12-31T23:59:00Z"),
    });
    // A second gate vertex reported earlier in this handover; Flink's metric store lacks it now.
    t.outgoing_gates = [
        (crate::fixtures::GATE_VERTEX.to_owned(), 1),
        ("sink-b".to_owned(), 1),
    ]
    .into();
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "W is not set: {:?}", p.actions);
    assert_eq!(transition(&p).phase, Phase::ConfirmingToggle);
    let (_, reason, message) = condition_message(&p, "Progressing");
    assert_eq!(reason, "GatesNotAcknowledged");
    assert!(message.contains("1 of 1 on vertex sink-b"), "{message}");
    // The layout is kept (the most seen per vertex), not shrunk to what reports now.
    assert_eq!(transition(&p).outgoing_gates.get("sink-b"), Some(&1));
    // It reports again, acknowledging W: W is set.
    let gates = blue_gate_obs(&mut obs);
    gates.vertices.insert("sink-b".into(), 1);
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::ToggleSet, "{:?}", p.actions);
    // After promotion, the stop waits for a missing gate too: it may not be past W.
    let mut teardown = handover(Phase::ClearToTeardown, Some(w));
    teardown.status.active_color = Some(Color::Green);
    teardown.action = Some(ManualAction::Teardown);
    teardown.status.transition.as_mut().unwrap().outgoing_gates = [
        (crate::fixtures::GATE_VERTEX.to_owned(), 1),
        ("sink-b".to_owned(), 1),
    ]
    .into();
    let p = plan(&teardown);
    assert!(
        !p.actions
            .iter()
            .any(|a| matches!(a, Action::StopJob { .. })),
        "{:?}",
        p.actions
    );
    let (_, reason, message) = condition_message(&p, "Progressing");
    assert_eq!(reason, "OutgoingNotReady");
    assert!(message.contains("sink-b"), "{message}");
}

#[test]
fn w_is_raised_when_an_outgoing_gate_already_passed_it() {
    let w = 70_000;
    let obs = with_child(
        with_child(
            handover(Phase::ConfirmingToggle, Some(w)),
            Color::Green,
            Some(running("h2", 1, 0, None, i64::MIN)),
        ),
        Color::Blue,
        Some(running("h1", 1, 1, Some(80_000), 4_000)),
    );
    let p = plan(&obs);
    let raised = 80_000 + MINUTE;
    assert_eq!(
        p.actions,
        vec![Action::WriteConfigMap(CoordinationState::new(
            1,
            Stage::Transitioning,
            Color::Green,
            Toggle::Proposed(raised)
        ))]
    );
    assert_eq!(transition(&p).phase, Phase::ConfirmingToggle);
}

/// Confirming W = 70 s with every blue gate acknowledging it, green's tasks RUNNING since
/// `green_started` (`None`: one is not), the status having seen `seen` (start time, since when),
/// observed at `now`.
fn confirming(green_started: Option<i64>, seen: Option<(i64, &str)>, now: &str) -> Observed {
    let mut green = running("h2", 1, 1, None, i64::MIN);
    green.flink.as_mut().unwrap().tasks_started_at = green_started;
    let mut obs = with_child(
        with_child(
            handover(Phase::ConfirmingToggle, Some(crate::fixtures::W)),
            Color::Green,
            Some(green),
        ),
        Color::Blue,
        Some(running("h1", 1, 1, Some(5_000), 4_000)),
    );
    obs.status.transition.as_mut().unwrap().incoming_ready =
        seen.map(|(tasks_started_at, since)| TasksReady {
            tasks_started_at,
            since: time(since),
        });
    at(obs, now)
}

fn sets_w(p: &super::Plan) -> bool {
    p.actions.iter().any(
        |a| matches!(a, Action::WriteConfigMap(cm) if cm.toggle == Toggle::Set(crate::fixtures::W)),
    )
}

/// The defect seen under load: a crash-looping incoming job seen RUNNING between two restarts
/// got W set. Its tasks' start time changed since the last look (a restart, though the job is
/// RUNNING again): W is not set, and the wait for `minReady` starts again.
#[test]
fn w_is_not_set_when_the_incoming_job_restarted_since_the_last_look() {
    let started = crate::fixtures::TASKS_STARTED_AT;
    let restarted = started + 5_000;
    let obs = confirming(
        Some(restarted),
        Some((started, "2025-12-31T23:59:00Z")),
        "2026-01-01T00:00:30Z",
    );
    let p = plan(&obs);
    assert!(!sets_w(&p), "{:?}", p.actions);
    assert_eq!(transition(&p).phase, Phase::ConfirmingToggle);
    assert_eq!(
        transition(&p).incoming_ready,
        Some(TasksReady {
            tasks_started_at: restarted,
            since: time("2026-01-01T00:00:30Z"),
        }),
        "the readiness timer starts again"
    );
    assert_eq!(condition(&p, "Progressing"), ("True", "IncomingNotReady"));
    assert!(
        p.notes
            .iter()
            .any(|n| n.warning && n.reason == "IncomingRestarted")
    );
}

#[test]
fn w_is_set_only_once_the_incoming_job_has_run_min_ready_without_a_restart() {
    let started = Some(crate::fixtures::TASKS_STARTED_AT);
    // First seen ready now: the wait starts.
    let p = plan(&confirming(started, None, "2026-01-01T00:00:00Z"));
    assert!(!sets_w(&p), "{:?}", p.actions);
    let ready = transition(&p).incoming_ready.clone().expect("recorded");
    assert_eq!(ready.since, time("2026-01-01T00:00:00Z"));
    let message = &cond(&p, "Progressing").message;
    assert!(message.contains("every task RUNNING"), "{message}");
    // 9 s later (minReady is 10 s by default): still waiting, the record unchanged.
    let seen = Some((ready.tasks_started_at, "2026-01-01T00:00:00Z"));
    let p = plan(&confirming(started, seen, "2026-01-01T00:00:09Z"));
    assert!(!sets_w(&p), "{:?}", p.actions);
    assert_eq!(transition(&p).incoming_ready.as_ref(), Some(&ready));
    assert_eq!(condition(&p, "Progressing").1, "IncomingNotReady");
    // 10 s: W is set.
    let p = plan(&confirming(started, seen, "2026-01-01T00:00:10Z"));
    assert!(sets_w(&p), "{:?}", p.actions);
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
    // With minReady 0 the first look with every task RUNNING is enough, but not none.
    let mut obs = confirming(started, None, "2026-01-01T00:00:00Z");
    obs.valid = valid(|s| s.coordination.min_ready = "0s".into());
    assert!(sets_w(&plan(&obs)));
    let mut obs = confirming(None, None, "2026-01-01T00:00:00Z");
    obs.valid = valid(|s| s.coordination.min_ready = "0s".into());
    assert!(!sets_w(&plan(&obs)));
}

#[test]
fn an_incoming_job_with_a_task_that_is_not_running_is_not_ready() {
    let seen = Some((crate::fixtures::TASKS_STARTED_AT, "2025-12-31T23:59:00Z"));
    // A vertex (or a subtask of one) is not RUNNING: Flink's REST API says so although the job
    // is RUNNING (a region failover).
    let p = plan(&confirming(None, seen, "2026-01-01T00:00:30Z"));
    assert!(!sets_w(&p), "{:?}", p.actions);
    assert_eq!(transition(&p).incoming_ready, None, "the wait starts again");
    assert_eq!(condition(&p, "Progressing").1, "IncomingNotReady");
    // The job itself is RESTARTING.
    let mut obs = confirming(
        Some(crate::fixtures::TASKS_STARTED_AT),
        seen,
        "2026-01-01T00:00:30Z",
    );
    obs.green.as_mut().unwrap().job_state = Some("RESTARTING".into());
    obs.green.as_mut().unwrap().flink = None;
    let p = plan(&obs);
    assert!(!sets_w(&p), "{:?}", p.actions);
    assert_eq!(transition(&p).incoming_ready, None);
    // Its REST API does not answer: nothing is known, the record is kept, W waits.
    let mut obs = confirming(
        Some(crate::fixtures::TASKS_STARTED_AT),
        seen,
        "2026-01-01T00:00:30Z",
    );
    obs.green.as_mut().unwrap().flink = None;
    let p = plan(&obs);
    assert!(!sets_w(&p), "{:?}", p.actions);
    assert_eq!(
        transition(&p)
            .incoming_ready
            .as_ref()
            .map(|r| r.tasks_started_at),
        Some(crate::fixtures::TASKS_STARTED_AT)
    );
}

#[test]
fn an_incoming_job_that_never_stays_up_is_aborted_after_the_grace() {
    // ConfirmingToggle started at 00:00:00; the abort grace is 10 minutes. The incoming job
    // restarted again just now.
    let started = crate::fixtures::TASKS_STARTED_AT;
    let p = plan(&confirming(
        Some(started + 600_000),
        Some((started, "2026-01-01T00:09:58Z")),
        "2026-01-01T00:10:01Z",
    ));
    assert!(!sets_w(&p), "{:?}", p.actions);
    assert_eq!(transition(&p).phase, Phase::Aborting);
    assert!(
        transition(&p)
            .abort_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("IncomingNotReady")),
        "{:?}",
        transition(&p).abort_reason
    );
}

#[test]
fn the_readiness_record_survives_a_status_write_and_read() {
    let p = plan(&confirming(
        Some(crate::fixtures::TASKS_STARTED_AT),
        None,
        "2026-01-01T00:00:00.250Z",
    ));
    let written = serde_json::to_value(&p.status).expect("serialisable");
    assert_eq!(
        written["transition"]["incomingReady"],
        serde_json::json!({"tasksStartedAt": 1_000, "since": "2026-01-01T00:00:00.250000Z"}),
        "{written}"
    );
    let read: crate::resource::FlinkBlueGreenDeploymentStatus =
        serde_json::from_value(written).expect("reads back");
    assert_eq!(read.transition, p.status.transition);
}

#[test]
fn promotion_waits_for_checkpoints_and_both_watermarks() {
    let w = 70_000;
    let base = handover(Phase::ToggleSet, Some(w));
    let obs = with_child(
        with_child(
            base,
            Color::Green,
            Some(running("h2", 1, 2, Some(71_000), 69_000)),
        ),
        Color::Blue,
        Some(running("h1", 1, 2, Some(70_000), 71_000)),
    );
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert!(condition(&p, "Progressing").1 == "ToggleSet");
    let ready = with_child(
        obs,
        Color::Green,
        Some(running("h2", 1, 2, Some(72_000), 70_001)),
    );
    let p = plan(&ready);
    assert_eq!(
        p.actions,
        vec![Action::WriteConfigMap(CoordinationState::new(
            1,
            Stage::ClearToTeardown,
            Color::Green,
            Toggle::Set(w)
        ))]
    );
    assert_eq!(p.status.active_color, Some(Color::Green));
    assert_eq!(p.status.deployed_template_hash.as_deref(), Some("h2"));
    assert_eq!(transition(&p).phase, Phase::ClearToTeardown);
}

#[test]
fn manual_promotion_waits_for_the_annotation() {
    let w = 70_000;
    let mut obs = ready_to_promote(w);
    obs.valid = valid(|s| s.coordination.promotion = crate::resource::Promotion::Manual);
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert_eq!(condition(&p, "Progressing").1, "AwaitingPromotion");
    obs.action = Some(ManualAction::Promote);
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::ClearToTeardown);
    assert!(p.actions.contains(&Action::ClearManualAction));
}

#[test]
fn an_abort_after_w_is_set_is_refused() {
    let mut obs = with_child(
        handover(Phase::ToggleSet, Some(70_000)),
        Color::Green,
        Some(running("h2", 1, 2, Some(72_000), 0)),
    );
    obs.action = Some(ManualAction::Abort);
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
    assert_eq!(p.actions, vec![Action::ClearManualAction]);
    assert!(p.notes.iter().any(|n| n.reason == "ActionRefused"));
}

#[test]
fn a_manual_abort_before_w_is_set_aborts() {
    let mut obs = with_child(
        handover(Phase::Deploying, None),
        Color::Green,
        Some(running("h2", 1, 0, None, 0)),
    );
    obs.action = Some(ManualAction::Abort);
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::Aborting);
    assert!(p.actions.contains(&Action::ClearManualAction));
    assert!(p.actions.contains(&Action::DeleteChild(Color::Green)));
}

#[test]
fn a_template_change_before_w_is_set_aborts_and_starts_over() {
    let mut obs = with_child(
        handover(Phase::ConfirmingToggle, Some(70_000)),
        Color::Green,
        Some(running("h2", 1, 0, None, 0)),
    );
    obs.template_hash = "h3".into();
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::Aborting);
    assert_eq!(
        p.actions[0],
        Action::WriteConfigMap(CoordinationState::new(
            1,
            Stage::Failing,
            Color::Green,
            Toggle::Proposed(70_000)
        ))
    );
    assert!(
        p.status.failed_template_hash.is_none(),
        "a superseded template is not a failed one"
    );
}

#[test]
fn a_template_change_after_w_is_set_updates_green_in_place() {
    let mut obs = with_child(
        handover(Phase::ToggleSet, Some(70_000)),
        Color::Green,
        Some(running("h2", 1, 2, None, 0)),
    );
    obs.template_hash = "h3".into();
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![Action::ApplyChild {
            color: Color::Green,
            template_hash: "h3".into(),
            restore_path: None
        }]
    );
    assert_eq!(transition(&p).template_hash, "h3");
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
    // The operator has not applied the update yet: green runs, past W, but it is the job of h2;
    // promotion waits, or a failing update would be found only after the handover.
    let w = 70_000;
    let mut next = ready_to_promote(w);
    next.green.as_mut().unwrap().template_hash = Some("h3".into());
    next.template_hash = "h3".into();
    next.status = p.status.clone();
    next.green.as_mut().unwrap().upgrading = true;
    let p = plan(&next);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    let (_, reason, message) = condition_message(&p, "Progressing");
    assert_eq!(reason, "ToggleSet");
    assert!(message.contains("updated template"), "{message}");
    // Applied: promoted.
    next.green.as_mut().unwrap().upgrading = false;
    assert_eq!(
        transition(&plan(&next)).phase,
        Phase::ClearToTeardown,
        "promoted once the update is applied"
    );
}

#[test]
fn green_failing_after_w_is_set_is_degraded_but_never_aborted() {
    let mut green = running("h2", 1, 2, None, 0);
    green.job_state = Some("FAILED".into());
    let obs = with_child(
        handover(Phase::ToggleSet, Some(70_000)),
        Color::Green,
        Some(green),
    );
    let p = plan(&at(obs, "2026-01-01T05:00:00Z"));
    assert!(p.actions.is_empty());
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
    assert_eq!(
        condition(&p, "Degraded"),
        ("True", "IncomingFailedAfterToggle")
    );
}

#[test]
fn green_deleted_after_w_is_set_is_not_recreated_from_the_old_savepoint() {
    let obs = with_child(handover(Phase::ToggleSet, Some(70_000)), Color::Green, None);
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert_eq!(condition(&p, "Degraded").1, "IncomingMissingAfterToggle");
}

#[test]
fn teardown_waits_for_the_deletion_delay_then_deletes_blue_then_finishes() {
    let mut obs = with_child(
        handover(Phase::ClearToTeardown, Some(70_000)),
        Color::Green,
        Some(running("h2", 1, 2, None, 80_000)),
    );
    obs.valid = valid(|s| s.coordination.deployment_deletion_delay = "30s".into());
    let delay_cm = |c: CoordinationState| CoordinationState {
        floor: None,
        deletion_delay_ms: 30_000,
        ..c
    };
    obs.configmap = ConfigMapObs::Valid(delay_cm(CoordinationState::new(
        1,
        Stage::ClearToTeardown,
        Color::Green,
        Toggle::Set(70_000),
    )));
    obs.status.active_color = Some(Color::Green);
    assert!(
        plan(&at(obs.clone(), "2026-01-01T00:00:29Z"))
            .actions
            .is_empty()
    );
    let p = plan(&at(obs.clone(), "2026-01-01T00:00:30Z"));
    let trigger = super::stop_trigger_id("h2", 1, 0);
    assert_eq!(
        p.actions,
        vec![Action::StopJob {
            color: Color::Blue,
            trigger_id: trigger.clone(),
            drain: false,
        }]
    );
    assert_eq!(transition(&p).phase, Phase::TearingDown);
    assert_eq!(
        transition(&p).stop.trigger_id.as_deref(),
        Some(trigger.as_str()),
        "the trigger is in the status written before the stop is sent"
    );
    // Blue stopped (FINISHED): now it is deleted.
    let mut finished = with_child(
        obs.clone(),
        Color::Blue,
        Some(stopped_blue(Some(SavepointObs::Completed(
            "file:///sp/final".into(),
        )))),
    );
    finished.status = p.status.clone();
    let p = plan(&finished);
    assert_eq!(p.actions, vec![Action::DeleteChild(Color::Blue)]);
    // Blue gone: RUNNING green, history says Promoted.
    let mut gone = with_child(obs, Color::Blue, None);
    gone.status = p.status;
    let p = plan(&gone);
    assert_eq!(
        p.actions,
        vec![Action::WriteConfigMap(CoordinationState {
            floor: Some(70_000),
            ..delay_cm(CoordinationState::new(
                1,
                Stage::Running,
                Color::Green,
                Toggle::NotSet
            ))
        })],
        "step 6: RUNNING with the floor at W"
    );
    assert!(p.status.transition.is_none());
    assert_eq!(p.status.floor, Some(70_000));
    assert_eq!(p.status.history[0].outcome, Outcome::Promoted);
    assert_eq!(p.status.history[0].toggle, Some(70_000));
    assert_eq!(condition(&p, "Ready").0, "True");
}

#[test]
fn the_plan_carries_the_finished_handover_until_its_status_is_written() {
    let mut obs = with_child(
        handover(Phase::TearingDown, Some(70_000)),
        Color::Green,
        Some(running("h2", 1, 2, None, 80_000)),
    );
    obs.status.active_color = Some(Color::Green);
    let obs = with_child(obs, Color::Blue, None);
    let p = plan(&obs);
    let record = p
        .finished
        .clone()
        .expect("blue is gone: the handover finishes");
    assert_eq!(record, p.status.history[0]);
    assert_eq!(record.outcome, Outcome::Promoted);
    // The status write failed (a 409): the replan finishes the same handover, so it is counted
    // once, when a write succeeds.
    assert_eq!(plan(&obs).finished, Some(record));
    let mut written = obs;
    written.status = p.status;
    assert_eq!(
        plan(&written).finished,
        None,
        "written: nothing finishes again"
    );
    assert_eq!(
        plan(&handover(Phase::ToggleSet, Some(70_000))).finished,
        None,
        "a step that finishes nothing carries nothing"
    );
}

#[test]
fn manual_teardown_skips_the_deletion_delay() {
    let mut obs = handover(Phase::ClearToTeardown, Some(70_000));
    obs.status.active_color = Some(Color::Green);
    obs.action = Some(ManualAction::Teardown);
    let p = plan(&obs);
    assert!(p.actions.contains(&Action::StopJob {
        color: Color::Blue,
        trigger_id: super::stop_trigger_id("h2", 1, 0),
        drain: false,
    }));
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

#[test]
fn an_outgoing_job_past_w_only_by_idle_inputs_is_stopped_with_drain() {
    let mut obs = handover(Phase::ClearToTeardown, Some(70_000));
    obs.status.active_color = Some(Color::Green);
    obs.action = Some(ManualAction::Teardown);
    // Every input idle, the watermark below W: windows and timers up to W are still in state.
    blue_gates(&mut obs, 60_000, true);
    let p = plan(&obs);
    let stop = Action::StopJob {
        color: Color::Blue,
        trigger_id: super::stop_trigger_id("h2", 1, 0),
        drain: true,
    };
    assert!(p.actions.contains(&stop), "{:?}", p.actions);
    assert!(
        transition(&p).stop.drain,
        "the drain is recorded with the trigger"
    );
    assert!(p.notes.iter().any(|n| n.reason == "OutgoingDrained"));
    // Resent after a crash: the same trigger, drained again, whatever the gates say now.
    let mut resend = tearing_down(
        OutgoingStop {
            drain: true,
            ..stop_sent(0, "2026-01-01T00:00:00Z")
        },
        Some(SavepointObs::Unknown),
    );
    blue_gates(&mut resend, 60_000, true);
    assert_eq!(plan(&resend).actions, vec![stop]);
    // Idle but with the watermark past W: everything up to W has fired; no drain.
    let mut past = handover(Phase::ClearToTeardown, Some(70_000));
    past.status.active_color = Some(Color::Green);
    past.action = Some(ManualAction::Teardown);
    blue_gates(&mut past, 70_001, true);
    let p = plan(&past);
    assert!(
        p.actions
            .iter()
            .any(|a| matches!(a, Action::StopJob { drain: false, .. })),
        "{:?}",
        p.actions
    );
    // One gate idle below W, the other past it: being past rests on idleness; drained.
    let mut mixed = past.clone();
    blue_gate_obs(&mut mixed).reports[0].watermark = Some(60_000);
    let p = plan(&mixed);
    assert!(
        p.actions
            .iter()
            .any(|a| matches!(a, Action::StopJob { drain: true, .. })),
        "{:?}",
        p.actions
    );
}

/// Blue after a stop-with-savepoint: FINISHED, its REST API answering for the stop only.
fn stopped_blue(stop: Option<SavepointObs>) -> crate::observed::ChildObs {
    let mut blue = running("h1", 1, 2, Some(1_000), 900);
    blue.job_state = Some("FINISHED".into());
    blue.flink = Some(crate::observed::FlinkObs {
        savepoint: stop,
        ..crate::observed::FlinkObs::default()
    });
    blue
}

/// Tearing down blue → green at W = 70 s, the stop of blue in `stop`, blue running with the
/// stop's status `polled`.
fn tearing_down(stop: OutgoingStop, polled: Option<SavepointObs>) -> Observed {
    let mut obs = with_child(
        handover(Phase::TearingDown, Some(70_000)),
        Color::Green,
        Some(running("h2", 1, 2, None, 80_000)),
    );
    obs.status.active_color = Some(Color::Green);
    obs.status.transition.as_mut().unwrap().stop = stop;
    if let Some(flink) = obs.blue.as_mut().and_then(|b| b.flink.as_mut()) {
        flink.savepoint = polled;
    }
    obs
}

fn stop_sent(attempts: u32, since: &str) -> OutgoingStop {
    OutgoingStop {
        trigger_id: Some(super::stop_trigger_id("h2", 1, attempts)),
        attempts,
        since: Some(time(since)),
        ..OutgoingStop::default()
    }
}

#[test]
fn teardown_never_deletes_a_running_outgoing_job_before_its_stop_completes() {
    // In progress: wait; nothing is deleted.
    let obs = tearing_down(
        stop_sent(0, "2026-01-01T00:00:00Z"),
        Some(SavepointObs::InProgress),
    );
    let p = plan(&at(obs, "2026-01-01T00:00:05Z"));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    // Completed but the job still shows RUNNING: the savepoint path is kept, still no delete.
    let obs = tearing_down(
        stop_sent(0, "2026-01-01T00:00:00Z"),
        Some(SavepointObs::Completed("file:///sp/final".into())),
    );
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(
        transition(&p).stop.savepoint.as_deref(),
        Some("file:///sp/final")
    );
    assert!(p.notes.iter().any(|n| n.reason == "OutgoingStopped"));
}

#[test]
fn a_stop_whose_request_never_arrived_is_resent_under_the_same_trigger() {
    // A crash after the status write: the job does not know the trigger.
    let obs = tearing_down(
        stop_sent(0, "2026-01-01T00:00:00Z"),
        Some(SavepointObs::Unknown),
    );
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![Action::StopJob {
            color: Color::Blue,
            trigger_id: super::stop_trigger_id("h2", 1, 0),
            drain: false,
        }]
    );
    assert_eq!(transition(&p).stop.attempts, 0);
}

#[test]
fn a_failed_stop_is_retried_with_backoff_then_the_job_is_kept_and_degraded() {
    // Attempt 1 fails: counted, no delete, retried after the 10 s backoff with a new trigger.
    let obs = tearing_down(
        stop_sent(0, "2026-01-01T00:00:00Z"),
        Some(SavepointObs::Failed("CheckpointException: declined".into())),
    );
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    let stop = &transition(&p).stop;
    assert_eq!((stop.attempts, stop.trigger_id.as_ref()), (1, None));
    assert!(
        p.notes
            .iter()
            .any(|n| n.warning && n.reason == "OutgoingStopFailed")
    );
    let mut again = obs.clone();
    again.status = p.status.clone();
    assert!(
        plan(&at(again.clone(), "2026-01-01T00:00:09Z"))
            .actions
            .is_empty()
    );
    let p = plan(&at(again, "2026-01-01T00:00:10Z"));
    assert_eq!(
        p.actions,
        vec![Action::StopJob {
            color: Color::Blue,
            trigger_id: super::stop_trigger_id("h2", 1, 1),
            drain: false,
        }]
    );
    // The last attempt (3) times out: Degraded, the job is kept, nothing is deleted.
    let obs = tearing_down(
        stop_sent(2, "2026-01-01T00:00:00Z"),
        Some(SavepointObs::InProgress),
    );
    let p = plan(&at(obs, "2026-01-01T00:10:01Z"));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(condition(&p, "Degraded"), ("True", "OutgoingStopFailed"));
    let mut given_up = tearing_down(OutgoingStop::default(), None);
    given_up.status = p.status.clone();
    let p = plan(&at(given_up.clone(), "2026-01-01T01:00:00Z"));
    assert!(p.actions.is_empty(), "never cancelled: {:?}", p.actions);
    assert_eq!(condition(&p, "Degraded"), ("True", "OutgoingStopFailed"));
    let message = &cond(&p, "Degraded").message;
    assert!(
        message.contains("bluegreen.dev/action=teardown"),
        "{message}"
    );
    // The teardown annotation retries.
    let mut retry = given_up.clone();
    retry.action = Some(ManualAction::Teardown);
    let p = plan(&retry);
    assert_eq!(p.actions, vec![Action::ClearManualAction]);
    assert_eq!(transition(&p).stop.attempts, 0);
    // A person deletes blue: the handover finishes.
    let mut deleted = with_child(given_up, Color::Blue, None);
    deleted.status.transition.as_mut().unwrap().stop.attempts = 3;
    let p = plan(&deleted);
    assert!(p.status.transition.is_none());
    assert_eq!(p.status.history[0].outcome, Outcome::Promoted);
}

#[test]
fn an_outgoing_job_that_already_ended_is_deleted_without_a_stop() {
    for state in ["FINISHED", "CANCELED"] {
        let mut obs = tearing_down(OutgoingStop::default(), None);
        obs.blue.as_mut().unwrap().job_state = Some(state.into());
        let p = plan(&obs);
        assert_eq!(p.actions, vec![Action::DeleteChild(Color::Blue)], "{state}");
    }
}

/// Blue FAILED for good in `phase` (after W = 70 000).
fn failed_blue(phase: Phase) -> Observed {
    let mut obs = with_child(
        handover(phase, Some(70_000)),
        Color::Green,
        Some(running("h2", 1, 2, None, 80_000)),
    );
    let blue = obs.blue.as_mut().unwrap();
    blue.job_state = Some("FAILED".into());
    blue.lifecycle = Some("FAILED".into());
    blue.error = Some("restart strategy exhausted".into());
    blue.flink = None;
    obs
}

#[test]
fn a_failed_outgoing_job_is_restarted_from_its_checkpoint_never_deleted() {
    // Before promotion, waiting for it, and after, at any point of the teardown: its records
    // t <= W after its last checkpoint exist only in that checkpoint.
    for phase in [Phase::ToggleSet, Phase::ClearToTeardown, Phase::TearingDown] {
        let p = plan(&failed_blue(phase));
        assert_eq!(
            p.actions,
            vec![Action::RestartChild {
                color: Color::Blue,
                nonce: 1_001
            }],
            "{phase:?}"
        );
        let restart = transition(&p)
            .outgoing_restart
            .clone()
            .expect("recorded first");
        assert_eq!(
            (restart.nonce, restart.attempts, restart.ran),
            (1_001, 1, false)
        );
        assert_eq!(
            condition(&p, "Degraded"),
            ("True", "OutgoingFailed"),
            "{phase:?}"
        );
        assert!(
            p.notes
                .iter()
                .any(|n| n.warning && n.reason == "OutgoingFailed"),
            "{phase:?}: {:?}",
            p.notes
        );
        assert_eq!(
            transition(&p).phase,
            phase,
            "nothing moves on while it is failed"
        );
        assert!(p.finished.is_none());
    }
}

#[test]
fn a_restart_of_the_outgoing_job_is_resent_until_applied_then_retried_if_it_fails_again() {
    let mut obs = failed_blue(Phase::TearingDown);
    let first = plan(&obs);
    obs.status = first.status.clone();
    // A crash before the patch: the same nonce again; once the child carries it, nothing.
    assert_eq!(plan(&obs).actions, first.actions);
    obs.blue.as_mut().unwrap().restart_nonce = Some(1_001);
    assert!(plan(&obs).actions.is_empty());
    // Restarted and FAILED again as another job before the controller saw it run: the restart
    // took effect, so another one is asked for (the id tells).
    let mut failed_again = obs.clone();
    failed_again.blue.as_mut().unwrap().job_id = Some("job-2".into());
    assert_eq!(
        plan(&failed_again).actions,
        vec![Action::RestartChild {
            color: Color::Blue,
            nonce: 1_002
        }]
    );
    // It ran, then failed again: a second restart, with another nonce.
    let mut running_blue = obs.clone();
    running_blue.blue = Some(running("h1", 1, 2, Some(70_000), 60_000));
    let ran = plan(&running_blue);
    assert!(transition(&ran).outgoing_restart.as_ref().unwrap().ran);
    obs.status = ran.status;
    let again = plan(&obs);
    assert_eq!(
        again.actions,
        vec![Action::RestartChild {
            color: Color::Blue,
            nonce: 1_002
        }]
    );
    // After the last restart failed too: a person decides; the teardown annotation deletes it.
    let t = obs.status.transition.as_mut().unwrap();
    t.outgoing_restart = Some(crate::resource::OutgoingRestart {
        attempts: super::outgoing::OUTGOING_RESTARTS,
        ran: true,
        ..transition(&again).outgoing_restart.clone().unwrap()
    });
    let given_up = plan(&obs);
    assert!(given_up.actions.is_empty());
    assert_eq!(condition(&given_up, "Degraded").1, "OutgoingRestartFailed");
    obs.action = Some(ManualAction::Teardown);
    assert_eq!(
        plan(&obs).actions,
        vec![Action::ClearManualAction, Action::DeleteChild(Color::Blue)]
    );
}

#[test]
fn a_restarted_outgoing_job_is_stopped_only_after_min_ready_past_w() {
    // Blue failed over after promotion: new task start times, a stale report past W.
    let mut obs = tearing_down(OutgoingStop::default(), None);
    let blue = obs.blue.as_mut().unwrap();
    blue.flink.as_mut().unwrap().tasks_started_at = Some(5_000);
    let p = plan(&at(obs.clone(), "2026-01-01T00:00:00Z"));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(condition(&p, "Progressing").1, "OutgoingNotReady");
    assert!(p.notes.iter().any(|n| n.reason == "OutgoingRestarted"));
    // minReady (10 s) later with the same start time, past W: stopped.
    obs.status = p.status;
    let later = plan(&at(obs.clone(), "2026-01-01T00:00:11Z"));
    assert!(
        matches!(later.actions.as_slice(), [Action::StopJob { .. }]),
        "{:?}",
        later.actions
    );
    // Still below W after minReady (the replay has not reached it): not stopped.
    obs.blue.as_mut().unwrap().flink.as_mut().unwrap().gates = Some(crate::observed::GateObs {
        reports: vec![crate::fixtures::report(1, 2, Some(60_000), 65_000)],
        vertices: [(crate::fixtures::GATE_VERTEX.to_owned(), 1)].into(),
    });
    let below = plan(&at(obs, "2026-01-01T00:00:11Z"));
    assert!(below.actions.is_empty(), "{:?}", below.actions);
}

#[test]
fn an_invalid_spec_changes_nothing_that_runs() {
    let mut obs = steady_blue("h2");
    obs.valid = Err(SpecError::new(
        "spec.coordination.abortGracePeriod",
        "\"soon\" is not a duration",
    ));
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert!(p.status.transition.is_none());
    let (status, reason) = condition(&p, "Degraded");
    assert_eq!((status, reason), ("True", "InvalidSpec"));
    let message = &cond(&p, "Degraded").message;
    assert!(
        message.contains("spec.coordination.abortGracePeriod"),
        "{message}"
    );
}

#[test]
fn a_hand_edited_configmap_that_cannot_be_reconciled_stops_the_controller() {
    let mut obs = handover(Phase::Deploying, None);
    obs.configmap = ConfigMapObs::Valid(CoordinationState::new(
        1,
        Stage::Transitioning,
        Color::Green,
        Toggle::Set(5),
    ));
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert_eq!(condition(&p, "Degraded").1, "ConfigMapDiverged");
}

#[test]
fn a_configmap_that_does_not_parse_is_rewritten() {
    let mut obs = steady_blue("h1");
    obs.configmap = ConfigMapObs::Invalid("key `stage` has invalid value".into());
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![Action::WriteConfigMap(CoordinationState::new(
            0,
            Stage::Running,
            Color::Blue,
            Toggle::NotSet
        ))]
    );
    assert!(p.notes.iter().any(|n| n.reason == "ConfigMapRepaired"));
}

#[test]
fn replanning_the_same_observation_is_idempotent() {
    let obs = with_child(
        handover(Phase::Deploying, None),
        Color::Green,
        Some({
            let mut g = running("h2", 1, 0, None, 0);
            g.job_state = Some("CREATED".into());
            g
        }),
    );
    let p1 = plan(&obs);
    let mut again = obs;
    again.status = p1.status.clone();
    let p2 = plan(&again);
    assert_eq!(p1.actions, p2.actions);
    assert!(
        p1.actions.is_empty(),
        "green exists with the right hash and the ConfigMap is current"
    );
}

/// Green running alone after a handover at W = 70 s: the floor is 70 s (epoch 1).
fn steady_green_with_floor(hash: &str) -> Observed {
    let mut obs = observed();
    obs.template_hash = hash.into();
    obs.status.active_color = Some(Color::Green);
    obs.status.deployed_template_hash = Some("h2".into());
    obs.status.epoch = 1;
    obs.status.floor = Some(70_000);
    obs.configmap = ConfigMapObs::Valid(CoordinationState {
        floor: Some(70_000),
        ..CoordinationState::new(1, Stage::Running, Color::Green, Toggle::NotSet)
    });
    with_child(
        obs,
        Color::Green,
        Some(running("h2", 1, 0, Some(5_000), 4_000)),
    )
}

#[test]
fn the_floor_is_carried_through_the_next_handover_and_w_is_proposed_above_it() {
    // Green's progress (5 s) + 1 min is below the floor (70 s): W = F + 1.
    let mut obs = steady_green_with_floor("h3");
    obs.green
        .as_mut()
        .unwrap()
        .flink
        .as_mut()
        .unwrap()
        .savepoint = Some(SavepointObs::Completed("file:///sp/2".into()));
    let p = plan(&obs);
    assert_eq!(p.actions, vec![trigger(Color::Green, "h3", 2, 0)]);
    let mut next = obs.clone();
    next.status = p.status.clone();
    next.status
        .transition
        .as_mut()
        .unwrap()
        .savepoint_trigger_id = Some("t".into());
    next.configmap =
        ConfigMapObs::Valid(super::desired_configmap(&next.status, &next).expect("desired"));
    let p = plan(&next);
    assert_eq!(
        p.actions.first(),
        Some(&Action::WriteConfigMap(CoordinationState {
            floor: Some(70_000),
            ..CoordinationState::new(2, Stage::Transitioning, Color::Blue, Toggle::NotSet)
        })),
        "step 9 carries the floor"
    );
    let mut deploying = next;
    deploying.status = p.status;
    deploying.configmap = ConfigMapObs::Valid(
        super::desired_configmap(&deploying.status, &deploying).expect("desired"),
    );
    let deploying = with_child(
        deploying,
        Color::Blue,
        Some(running("h3", 2, 0, None, i64::MIN)),
    );
    let p = plan(&deploying);
    assert_eq!(transition(&p).toggle, Some(70_001), "W >= F + 1");
    assert_eq!(
        p.actions,
        vec![Action::WriteConfigMap(CoordinationState {
            floor: Some(70_000),
            ..CoordinationState::new(
                2,
                Stage::Transitioning,
                Color::Blue,
                Toggle::Proposed(70_001)
            )
        })]
    );
}

#[test]
fn an_abort_keeps_the_floor() {
    let mut obs = steady_green_with_floor("h3");
    obs.status.transition = Some(Transition {
        from: Some(Color::Green),
        to: Color::Blue,
        epoch: 2,
        template_hash: "h3".into(),
        generation: 3,
        redeploy_nonce: None,
        phase: Phase::Aborting,
        toggle: None,
        savepoint_trigger_id: None,
        restore_path: None,
        savepoint_attempts: 0,
        started_at: time("2026-01-01T00:00:00Z"),
        phase_started_at: time("2026-01-01T00:00:00Z"),
        abort_reason: Some("IncomingFailed: test".into()),
        stop: OutgoingStop::default(),
        waiting_for_watermarks: Vec::new(),
        past_w_by_idleness: Vec::new(),
        forward_repair: None,
        incoming_ready: None,
        outgoing_ready: None,
        outgoing_restart: None,
        outgoing_gates: std::collections::BTreeMap::new(),
    });
    obs.status.epoch = 2;
    obs.configmap = ConfigMapObs::Valid(CoordinationState {
        floor: Some(70_000),
        ..CoordinationState::new(2, Stage::Failing, Color::Blue, Toggle::NotSet)
    });
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![Action::WriteConfigMap(CoordinationState {
            floor: Some(70_000),
            ..CoordinationState::new(2, Stage::Running, Color::Green, Toggle::NotSet)
        })],
        "step 8 keeps the floor"
    );
    assert_eq!(p.status.floor, Some(70_000));
}

#[test]
fn clear_floor_starts_a_new_epoch_without_a_floor_and_is_refused_during_a_handover() {
    let mut obs = steady_green_with_floor("h2");
    obs.action = Some(ManualAction::ClearFloor);
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![
            Action::WriteConfigMap(CoordinationState::new(
                2,
                Stage::Running,
                Color::Green,
                Toggle::NotSet
            )),
            Action::ClearManualAction
        ],
        "step 10"
    );
    assert_eq!((p.status.floor, p.status.epoch), (None, 2));
    assert!(p.notes.iter().any(|n| n.reason == "FloorCleared"));
    let mut during = handover(Phase::ToggleSet, Some(70_000));
    during.status.floor = Some(10_000);
    during.configmap =
        ConfigMapObs::Valid(super::desired_configmap(&during.status, &during).expect("desired"));
    during.action = Some(ManualAction::ClearFloor);
    let p = plan(&during);
    assert_eq!(p.actions, vec![Action::ClearManualAction]);
    assert_eq!(p.status.floor, Some(10_000));
    assert!(
        p.notes
            .iter()
            .any(|n| n.warning && n.reason == "ActionRefused")
    );
}

#[test]
fn a_new_stage_with_a_stale_maximum_does_not_acknowledge_a_raised_w() {
    // W was raised from 70 s (the fixture's) to 140 s; blue's gates still report the old
    // proposal: epoch and stage are current, but the line's W and maximum are the old ones.
    let w = 140_000;
    let obs = with_child(
        with_child(
            handover(Phase::ConfirmingToggle, Some(w)),
            Color::Green,
            Some(running("h2", 1, 0, None, i64::MIN)),
        ),
        Color::Blue,
        Some(running("h1", 1, 1, Some(69_000), 60_000)),
    );
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(transition(&p).phase, Phase::ConfirmingToggle);
    assert_eq!(condition(&p, "Progressing").1, "GatesNotAcknowledged");
}

#[test]
fn every_gate_subtask_must_acknowledge_and_pass_w() {
    let w = crate::fixtures::W;
    let mut blue = running("h1", 1, 1, Some(5_000), 4_000);
    // One of blue's gate subtasks has not applied the proposal yet.
    blue.flink.as_mut().unwrap().gates.as_mut().unwrap().reports[1] =
        crate::fixtures::report(1, 0, Some(5_000), 4_000);
    let obs = with_child(
        with_child(
            handover(Phase::ConfirmingToggle, Some(w)),
            Color::Green,
            Some(running("h2", 1, 0, None, i64::MIN)),
        ),
        Color::Blue,
        Some(blue),
    );
    assert!(plan(&obs).actions.is_empty());
    // W set: one green subtask lags below W, so nothing is promoted; the status says which job,
    // which watermark and which W, with an event.
    let mut green = running("h2", 1, 2, Some(72_000), 71_000);
    green
        .flink
        .as_mut()
        .unwrap()
        .gates
        .as_mut()
        .unwrap()
        .reports[0] = crate::fixtures::report(1, 2, Some(72_000), 69_500);
    let obs = with_child(
        with_child(
            handover(Phase::ToggleSet, Some(w)),
            Color::Green,
            Some(green),
        ),
        Color::Blue,
        Some(running("h1", 1, 2, Some(70_000), 71_000)),
    );
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    let waits = &transition(&p).waiting_for_watermarks;
    assert_eq!(
        waits,
        &vec![crate::resource::WatermarkWait {
            color: Color::Green,
            watermark: Some(69_500),
            toggle: w
        }]
    );
    assert!(p.notes.iter().any(|n| n.reason == "WaitingForWatermark"));
}

#[test]
fn an_idle_gate_counts_as_past_w_and_the_status_says_so() {
    let w = crate::fixtures::W;
    // Blue's gate is chained into its (now idle) source: no watermark past W, but idle.
    let mut blue = running("h1", 1, 2, Some(70_000), i64::MIN);
    for r in &mut blue.flink.as_mut().unwrap().gates.as_mut().unwrap().reports {
        r.idle = true;
    }
    let obs = with_child(
        with_child(
            handover(Phase::ToggleSet, Some(w)),
            Color::Green,
            Some(running("h2", 1, 2, Some(72_000), 70_001)),
        ),
        Color::Blue,
        Some(blue),
    );
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::ClearToTeardown);
    assert_eq!(transition(&p).past_w_by_idleness, vec![Color::Blue]);
    assert!(p.notes.iter().any(|n| n.reason == "PastWByIdleness"));
}

/// Green (template h2) FAILED for good after W = 70 s was set: job `green-1`, whose REST API
/// still names its own latest checkpoint.
fn failed_green() -> crate::observed::ChildObs {
    let mut green = running("h2", 1, 2, Some(72_000), 71_000);
    green.job_state = Some("FAILED".into());
    green.lifecycle = Some("FAILED".into());
    green.job_id = Some("green-1".into());
    green.error = Some("java.lang.IllegalStateException: boom".into());
    green.flink = Some(crate::observed::FlinkObs {
        checkpoints_completed: 7,
        latest_checkpoint: Some("file:///cp/green-1/chk-7".into()),
        ..crate::observed::FlinkObs::default()
    });
    green
}

/// The spec blue (template h1) was deployed with, as the status recorded it.
fn deployed_v1() -> crate::resource::FlinkBlueGreenDeploymentSpec {
    let mut s = crate::fixtures::spec("local:///job.jar");
    s.template.spec.image = Some("example.com/orders:v1".into());
    s
}

/// ToggleSet at W = 70 s with green in `green`, observed at `now`; the status records blue's
/// spec.
fn toggle_set_with(green: crate::observed::ChildObs, now: &str) -> Observed {
    let mut obs = at(
        with_child(
            handover(Phase::ToggleSet, Some(70_000)),
            Color::Green,
            Some(green),
        ),
        now,
    );
    obs.status.deployed_spec = Some(deployed_v1());
    obs
}

fn repair(p: &super::Plan) -> &crate::resource::ForwardRepair {
    transition(p)
        .forward_repair
        .as_ref()
        .expect("forward repair")
}

fn noted(p: &super::Plan, reason: &str) -> bool {
    p.notes.iter().any(|n| n.reason == reason)
}

/// The repair step: blue's template h1, green's own checkpoint.
fn repair_action() -> Action {
    Action::RepairChild {
        color: Color::Green,
        spec: Box::new(super::repair::repair_spec(&deployed_v1())),
        template_hash: "h1".into(),
        restore_path: "file:///cp/green-1/chk-7".into(),
    }
}

#[test]
fn an_incoming_job_failing_after_w_is_set_is_repaired_forward_only_after_the_grace() {
    // First seen FAILED: the failure is recorded (the grace runs from here), nothing is done.
    let obs = toggle_set_with(failed_green(), "2026-01-01T01:00:00Z");
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    let r = repair(&p);
    assert_eq!(r.failed_since, time("2026-01-01T01:00:00Z"));
    assert_eq!(r.failed_job_id.as_deref(), Some("green-1"));
    assert_eq!(r.started_at, None);
    assert!(noted(&p, "IncomingFailedAfterToggle"));
    assert_eq!(
        condition(&p, "Degraded"),
        ("True", "IncomingFailedAfterToggle")
    );
    // Within the grace (2m by default): still nothing; the failure time is kept.
    let mut later = at(obs.clone(), "2026-01-01T01:01:59Z");
    later.status = p.status.clone();
    let p2 = plan(&later);
    assert!(p2.actions.is_empty(), "{:?}", p2.actions);
    assert_eq!(repair(&p2).failed_since, time("2026-01-01T01:00:00Z"));
    assert!(
        !noted(&p2, "IncomingFailedAfterToggle"),
        "one event per failure"
    );
    // After the grace: the intent (template, checkpoint) is in the status the action follows.
    let mut due = at(obs, "2026-01-01T01:02:01Z");
    due.status = p2.status;
    let p3 = plan(&due);
    assert_eq!(p3.actions, vec![repair_action()]);
    let Action::RepairChild { spec, .. } = &p3.actions[0] else {
        unreachable!()
    };
    assert_eq!(
        (
            spec.template.spec.image.as_deref(),
            spec.template.spec.job.upgrade_mode.as_deref()
        ),
        (Some("example.com/orders:v1"), Some("last-state")),
        "blue's spec, resumed from the failed job's own latest checkpoint"
    );
    let r = repair(&p3);
    assert_eq!(r.started_at, Some(time("2026-01-01T01:02:01Z")));
    assert_eq!(r.template_hash.as_deref(), Some("h1"));
    assert_eq!(r.restore_path.as_deref(), Some("file:///cp/green-1/chk-7"));
    assert!(!r.redeployed);
    assert!(noted(&p3, "ForwardRepair"));
    assert_eq!(transition(&p3).phase, Phase::ToggleSet, "never aborted");
    assert_eq!(transition(&p3).template_hash, "h2");
    assert_eq!(condition(&p3, "Progressing"), ("True", "ForwardRepairing"));
}

#[test]
fn forward_repair_never_restores_the_handovers_starting_savepoint() {
    // Green failed before completing a checkpoint of its own: the only state it could resume
    // from would be the handover's savepoint (file:///sp/1); the controller waits for a person.
    let mut green = failed_green();
    green.flink.as_mut().unwrap().latest_checkpoint = None;
    green.flink.as_mut().unwrap().checkpoints_completed = 0;
    let mut obs = toggle_set_with(green, "2026-01-01T01:10:00Z");
    obs.status.transition.as_mut().unwrap().forward_repair = Some(crate::resource::ForwardRepair {
        failed_job_id: Some("green-1".into()),
        ..crate::resource::ForwardRepair::new(time("2026-01-01T01:00:00Z"))
    });
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(repair(&p).started_at, None);
    let (status, reason) = condition(&p, "Degraded");
    assert_eq!((status, reason), ("True", "IncomingFailedAfterToggle"));
    let message = &cond(&p, "Degraded").message;
    assert!(
        message.contains("no completed checkpoint of its own"),
        "{message}"
    );
    // Its REST API does not answer: the checkpoint is unknown, so it waits too.
    obs.green.as_mut().unwrap().flink = None;
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(repair(&p).started_at, None);
}

#[test]
fn forward_repair_needs_the_spec_the_outgoing_job_runs() {
    let mut obs = toggle_set_with(failed_green(), "2026-01-01T01:10:00Z");
    obs.status.transition.as_mut().unwrap().forward_repair = Some(crate::resource::ForwardRepair {
        ..crate::resource::ForwardRepair::new(time("2026-01-01T01:00:00Z"))
    });
    // Not recorded (a resource deployed before forward repair existed): wait for a person.
    let mut unrecorded = obs.clone();
    unrecorded.status.deployed_spec = None;
    let p = plan(&unrecorded);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(repair(&p).started_at, None);
    // Blue no longer runs the recorded template h1: the record is not trusted.
    let stale = with_child(
        obs,
        Color::Blue,
        Some(running("h0", 1, 2, Some(70_000), 71_000)),
    );
    let p = plan(&stale);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(
        condition(&p, "Degraded"),
        ("True", "IncomingFailedAfterToggle")
    );
}

#[test]
fn the_first_deployment_and_every_promotion_record_the_spec_they_deployed() {
    let mut obs = observed();
    obs.spec.template.spec.image = Some("example.com/orders:v7".into());
    obs.status = plan(&obs).status;
    obs.configmap = ConfigMapObs::Valid(CoordinationState::new(
        0,
        Stage::Initializing,
        Color::Blue,
        Toggle::NotSet,
    ));
    let obs = with_child(obs, Color::Blue, Some(running("h1", 0, 0, None, i64::MIN)));
    let p = plan(&obs);
    assert_eq!(p.status.deployed_spec.as_ref(), Some(&obs.spec));
    // A promotion without repair records the spec of the promoted template.
    let mut promote = with_child(
        with_child(
            handover(Phase::ToggleSet, Some(70_000)),
            Color::Green,
            Some(running("h2", 1, 2, Some(72_000), 71_000)),
        ),
        Color::Blue,
        Some(running("h1", 1, 2, Some(70_000), 71_000)),
    );
    promote.status.deployed_spec = Some(deployed_v1());
    promote.spec.template.spec.image = Some("example.com/orders:v2".into());
    let p = plan(&promote);
    assert_eq!(transition(&p).phase, Phase::ClearToTeardown);
    assert_eq!(p.status.deployed_spec.as_ref(), Some(&promote.spec));
}

#[test]
fn forward_repair_off_waits_for_a_person() {
    let mut obs = toggle_set_with(failed_green(), "2026-01-01T05:00:00Z");
    obs.valid = valid(|s| s.coordination.forward_repair.enabled = false);
    obs.status.transition.as_mut().unwrap().forward_repair = Some(crate::resource::ForwardRepair {
        ..crate::resource::ForwardRepair::new(time("2026-01-01T01:00:00Z"))
    });
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(
        condition(&p, "Degraded"),
        ("True", "IncomingFailedAfterToggle")
    );
}

/// ToggleSet with the repair decided at 01:02:01 (status written), green in `green`.
fn repairing(green: crate::observed::ChildObs, now: &str, redeployed: bool) -> Observed {
    let mut obs = toggle_set_with(green, now);
    obs.status.transition.as_mut().unwrap().forward_repair = Some(crate::resource::ForwardRepair {
        failed_since: time("2026-01-01T01:00:00Z"),
        failed_job_id: Some("green-1".into()),
        error: Some("java.lang.IllegalStateException: boom".into()),
        started_at: Some(time("2026-01-01T01:02:01Z")),
        template_hash: Some("h1".into()),
        restore_path: Some("file:///cp/green-1/chk-7".into()),
        redeployed,
    });
    obs
}

#[test]
fn a_repair_is_resent_after_a_restart_until_the_child_runs_the_outgoing_template() {
    // A crash after the status write: green still carries h2, so the same step is sent again.
    let p = plan(&repairing(failed_green(), "2026-01-01T01:02:05Z", false));
    assert_eq!(p.actions, vec![repair_action()]);
    assert!(!noted(&p, "ForwardRepair"), "the event was published once");
    // Applied (green annotated h1) but the Flink operator has not redeployed yet: wait.
    let mut applied = failed_green();
    applied.template_hash = Some("h1".into());
    let p = plan(&repairing(applied.clone(), "2026-01-01T01:02:30Z", false));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(condition(&p, "Progressing"), ("True", "ForwardRepairing"));
    // No redeploy within abortGracePeriod (10m): the status says so, still nothing is aborted.
    let p = plan(&repairing(applied, "2026-01-01T01:12:30Z", false));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(condition(&p, "Degraded"), ("True", "ForwardRepairFailed"));
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
}

#[test]
fn a_repaired_incoming_job_is_followed_to_promotion_with_the_outgoing_template() {
    // The operator redeployed green (new job, template h1), which runs past W.
    let mut green = running("h1", 1, 2, Some(72_000), 71_000);
    green.job_id = Some("green-1".into());
    let obs = with_child(
        repairing(green, "2026-01-01T01:05:00Z", false),
        Color::Blue,
        Some(running("h1", 1, 2, Some(70_000), 71_000)),
    );
    let p = plan(&obs);
    assert!(repair(&p).redeployed, "seen out of FAILED");
    assert_eq!(transition(&p).phase, Phase::ClearToTeardown);
    // The active child runs h1: that is the deployed template, and h2 is not retried.
    assert_eq!(p.status.deployed_template_hash.as_deref(), Some("h1"));
    assert_eq!(p.status.deployed_spec, Some(deployed_v1()));
    assert_eq!(p.status.failed_template_hash.as_deref(), Some("h2"));
    assert_eq!(p.status.deployed_redeploy_nonce, None);
    assert!(noted(&p, "ForwardRepaired"));
}

#[test]
fn a_repaired_incoming_job_that_fails_again_waits_for_a_person() {
    let mut again = failed_green();
    again.template_hash = Some("h1".into());
    again.job_id = Some("green-2".into());
    let p = plan(&repairing(again.clone(), "2026-01-01T02:00:00Z", true));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(condition(&p, "Degraded"), ("True", "ForwardRepairFailed"));
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
    // A new job id alone shows the redeploy, even if its FAILED came before we looked.
    let p = plan(&repairing(again, "2026-01-01T01:02:30Z", false));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert!(repair(&p).redeployed);
    assert_eq!(condition(&p, "Degraded"), ("True", "ForwardRepairFailed"));
}

#[test]
fn a_template_change_during_the_grace_or_the_repair_is_applied_in_place_instead() {
    for started in [false, true] {
        let mut obs = if started {
            repairing(failed_green(), "2026-01-01T01:03:00Z", false)
        } else {
            let mut obs = toggle_set_with(failed_green(), "2026-01-01T01:01:00Z");
            obs.status.transition.as_mut().unwrap().forward_repair =
                Some(crate::resource::ForwardRepair {
                    ..crate::resource::ForwardRepair::new(time("2026-01-01T01:00:00Z"))
                });
            obs
        };
        obs.template_hash = "h3".into();
        let p = plan(&obs);
        assert_eq!(
            p.actions,
            vec![Action::ApplyChild {
                color: Color::Green,
                template_hash: "h3".into(),
                restore_path: None
            }],
            "started: {started}"
        );
        assert_eq!(transition(&p).forward_repair, None, "a person took over");
    }
}

#[test]
fn a_repaired_handover_finishes_with_history_and_stays_degraded_until_the_template_changes() {
    let mut obs = with_child(
        repairing(
            running("h1", 1, 2, None, 80_000),
            "2026-01-01T01:10:00Z",
            true,
        ),
        Color::Blue,
        None,
    );
    let t = obs.status.transition.as_mut().unwrap();
    t.phase = Phase::TearingDown;
    obs.status.active_color = Some(Color::Green);
    obs.status.deployed_template_hash = Some("h1".into());
    obs.status.failed_template_hash = Some("h2".into());
    obs.configmap =
        ConfigMapObs::Valid(super::desired_configmap(&obs.status, &obs).expect("desired"));
    let p = plan(&obs);
    assert!(p.status.transition.is_none());
    let h = &p.status.history[0];
    assert_eq!(h.outcome, Outcome::Promoted);
    assert!(
        h.reason
            .as_deref()
            .is_some_and(|r| r.starts_with("ForwardRepaired")),
        "{h:?}"
    );
    let r = h
        .forward_repair
        .as_ref()
        .expect("the history keeps the repair");
    assert_eq!(r.restore_path.as_deref(), Some("file:///cp/green-1/chk-7"));
    assert_eq!(
        condition(&p, "Degraded"),
        ("True", "ForwardRepaired"),
        "said at once, as an abort is"
    );
    // Steady on green running h1 while the template says h2: no new handover to h2.
    let mut steady = obs;
    steady.status = p.status;
    steady.configmap =
        ConfigMapObs::Valid(super::desired_configmap(&steady.status, &steady).expect("desired"));
    let p = plan(&steady);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert!(p.status.transition.is_none());
    assert_eq!(condition(&p, "Degraded"), ("True", "ForwardRepaired"));
    // A new template starts a handover again.
    steady.template_hash = "h3".into();
    let p = plan(&steady);
    assert_eq!(transition(&p).template_hash, "h3");
}

#[test]
fn a_template_crossing_flink_major_versions_is_refused_naming_the_field() {
    let mut obs = steady_blue("h2");
    let mut deployed = obs.spec.clone();
    deployed.template.spec.flink_version = Some("v1_20".into());
    obs.status.deployed_spec = Some(deployed);
    obs.spec.template.spec.flink_version = Some("v2_1".into());
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert!(p.status.transition.is_none());
    let degraded = cond(&p, "Degraded");
    assert_eq!(degraded.reason, "InvalidSpec");
    assert!(
        degraded.message.contains("spec.template.spec.flinkVersion")
            && degraded.message.contains("v1_20")
            && degraded.message.contains("restoreFrom: stateless"),
        "{}",
        degraded.message
    );
    // Within a major line, and with an explicitly stateless start, the handover starts.
    obs.spec.template.spec.flink_version = Some("v1_19".into());
    assert!(plan(&obs).status.transition.is_some());
    obs.spec.template.spec.flink_version = Some("v2_1".into());
    obs.valid = valid(|s| s.coordination.restore_from = RestoreFrom::Stateless);
    assert!(plan(&obs).status.transition.is_some());
}

#[test]
fn a_suspended_job_is_reported_as_suspended_not_running() {
    let mut obs = steady_blue("h1");
    obs.status.deployed_template_hash = Some("h1".into());
    obs.wanted_job_state = crate::observed::JobState::Suspended;
    // The spec asks for it: the child is applied suspended, with a Normal event.
    let p = plan(&obs);
    assert!(
        matches!(p.actions.as_slice(), [Action::ApplyChild { .. }]),
        "{:?}",
        p.actions
    );
    assert!(
        p.notes
            .iter()
            .any(|n| !n.warning && n.reason == "Suspending"),
        "{:?}",
        p.notes
    );
    // Once suspended: Ready False "Suspended", nothing degraded, no handover.
    let blue = obs.blue.as_mut().unwrap();
    blue.spec_job_state = Some(crate::observed::JobState::Suspended);
    blue.job_state = Some("SUSPENDED".into());
    blue.lifecycle = Some("SUSPENDED".into());
    blue.flink = None;
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(condition(&p, "Ready"), ("False", "Suspended"));
    assert_eq!(condition(&p, "Degraded"), ("False", "AsExpected"));
    assert_eq!(condition(&p, "Progressing"), ("False", "Idle"));
}

#[test]
fn a_blocked_handover_is_not_reported_as_idle() {
    // The first deployment's job failed (e.g. a sink refused at job start): the conditions say
    // the same thing, and none says "no handover in progress".
    let mut obs = observed();
    let p = plan(&obs);
    obs.status = p.status.clone();
    obs.configmap = ConfigMapObs::Valid(super::desired_configmap(&obs.status, &obs).expect("cm"));
    obs.blue = Some(crate::observed::ChildObs {
        template_hash: Some(obs.template_hash.clone()),
        job_state: Some("FAILED".into()),
        lifecycle: Some("FAILED".into()),
        error: Some("the FileSink cannot survive a handover: use OnCheckpointRollingPolicy".into()),
        spec_job_state: Some(crate::observed::JobState::Running),
        ..crate::observed::ChildObs::default()
    });
    let p = plan(&obs);
    let (ready, degraded, progressing) = (
        cond(&p, "Ready"),
        cond(&p, "Degraded"),
        cond(&p, "Progressing"),
    );
    assert_eq!(degraded.status, "True");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.message, degraded.message, "Ready names the problem");
    assert_eq!(progressing.status, "False");
    assert_ne!(progressing.reason, "Idle", "{progressing:?}");
    assert!(progressing.message.contains("blocked"), "{progressing:?}");
}

/// Steady blue whose gates report `problem`, one of them with no coordination state.
fn steady_blue_gates_in_trouble(problem: Option<&str>, now: &str) -> Observed {
    let mut obs = at(steady_blue("h1"), now);
    let gates = obs.blue.as_mut().unwrap().flink.as_mut().unwrap();
    for r in &mut gates.gates.as_mut().unwrap().reports {
        r.problem = problem.map(str::to_owned);
    }
    gates.gates.as_mut().unwrap().reports[0].applied = None;
    obs
}

fn holding_notes(p: &super::Plan) -> Vec<(bool, &'static str)> {
    p.notes
        .iter()
        .filter(|n| n.reason.starts_with("Gates"))
        .map(|n| (n.warning, n.reason))
        .collect()
}

#[test]
fn gates_that_hold_or_cannot_reach_their_source_degrade_a_steady_job_after_the_grace() {
    let problem = "state source: sidecar http://127.0.0.1:8787/v1/state?wait=30000ms: java.net.ConnectException";
    // First seen: recorded, not reported yet; looked at again when the grace ends.
    let p = plan(&steady_blue_gates_in_trouble(
        Some(problem),
        "2026-01-01T00:00:00Z",
    ));
    assert_eq!(
        p.status.gates_trouble_since,
        Some(time("2026-01-01T00:00:00Z"))
    );
    assert_eq!(condition(&p, "Ready"), ("True", "Running"));
    assert_eq!(condition(&p, "Degraded"), ("False", "AsExpected"));
    assert!(p.requeue_after <= super::gates::GATES_GRACE);
    assert!(holding_notes(&p).is_empty());
    // Still within the grace.
    let mut obs = steady_blue_gates_in_trouble(Some(problem), "2026-01-01T00:00:20Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(condition(&p, "Degraded").0, "False");
    assert_eq!(p.requeue_after, std::time::Duration::from_secs(10));
    // Past the grace: Degraded and not Ready, naming the gates' own words; one Warning event.
    let mut obs = steady_blue_gates_in_trouble(Some(problem), "2026-01-01T00:00:31Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(condition(&p, "Degraded"), ("True", "GatesHolding"));
    assert_eq!(condition(&p, "Ready"), ("False", "NotReady"));
    let degraded = cond(&p, "Degraded");
    assert!(degraded.message.contains(problem), "{}", degraded.message);
    assert!(
        degraded
            .message
            .contains("1 of 2 gate subtasks have no coordination state"),
        "{}",
        degraded.message
    );
    assert_eq!(holding_notes(&p), [(true, "GatesHolding")]);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    // Still so a minute later: the same condition, no second event.
    let mut obs = steady_blue_gates_in_trouble(Some(problem), "2026-01-01T00:01:31Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(condition(&p, "Degraded"), ("True", "GatesHolding"));
    assert!(holding_notes(&p).is_empty(), "{:?}", p.notes);
    // Recovered: healthy at once, said with a Normal event.
    let mut obs = at(steady_blue("h1"), "2026-01-01T00:01:40Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(condition(&p, "Degraded"), ("False", "AsExpected"));
    assert_eq!(condition(&p, "Ready"), ("True", "Running"));
    assert_eq!(p.status.gates_trouble_since, None);
    assert_eq!(holding_notes(&p), [(false, "GatesRecovered")]);
}

#[test]
fn gates_trouble_that_clears_within_the_grace_is_never_reported() {
    let p = plan(&steady_blue_gates_in_trouble(None, "2026-01-01T00:00:00Z"));
    let mut obs = at(steady_blue("h1"), "2026-01-01T00:00:10Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(p.status.gates_trouble_since, None);
    // Trouble again: the grace starts over.
    let mut obs = steady_blue_gates_in_trouble(None, "2026-01-01T00:00:20Z");
    obs.status = p.status;
    let p = plan(&obs);
    let mut obs = steady_blue_gates_in_trouble(None, "2026-01-01T00:00:45Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(condition(&p, "Degraded").0, "False");
    assert!(p.notes.is_empty(), "{:?}", p.notes);
    // A worse problem is reported instead: the active job failed.
    let mut obs = steady_blue_gates_in_trouble(None, "2026-01-01T00:01:00Z");
    obs.status = p.status;
    obs.blue.as_mut().unwrap().job_state = Some("FAILED".into());
    assert_eq!(condition(&plan(&obs), "Degraded").1, "ActiveJobFailed");
}

#[test]
fn gates_not_acknowledging_w_name_the_cause_they_report() {
    let problem = "state source: sidecar http://127.0.0.1:8787/v1/state: java.net.ConnectException";
    let mut blue = running("h1", 1, 0, Some(5_000), 4_000);
    for r in &mut blue.flink.as_mut().unwrap().gates.as_mut().unwrap().reports {
        r.problem = Some(problem.into());
    }
    let obs = with_child(
        with_child(
            handover(Phase::ConfirmingToggle, Some(crate::fixtures::W)),
            Color::Green,
            Some(running("h2", 1, 0, None, i64::MIN)),
        ),
        Color::Blue,
        Some(blue),
    );
    let waiting = plan(&obs);
    let progressing = cond(&waiting, "Progressing");
    assert_eq!(progressing.reason, "GatesNotAcknowledged");
    assert!(
        progressing.message.contains(problem),
        "{}",
        progressing.message
    );
    // After the abort grace, the abort names it too.
    let p = plan(&at(obs, "2026-01-01T00:11:00Z"));
    assert_eq!(transition(&p).phase, Phase::Aborting);
    let reason = transition(&p).abort_reason.clone().unwrap();
    assert!(reason.starts_with("GatesNotAcknowledged: "), "{reason}");
    assert!(reason.contains(problem), "{reason}");
    assert!(
        p.notes
            .iter()
            .any(|n| n.warning && n.message.contains(problem)),
        "{:?}",
        p.notes
    );
}

/// Deletion under `onDelete: savepointThenDelete` during a handover (`plan_cleanup`): the
/// handover ends first, then the only job is stopped with the final savepoint.
mod deleting_during_a_handover {
    use super::*;
    use crate::handover::{final_savepoint_trigger_id, plan_cleanup};
    use crate::resource::{DeletionPolicy, Promotion};

    fn deleting(mut obs: Observed, policy: DeletionPolicy) -> Observed {
        obs.spec.coordination.on_delete = policy;
        obs
    }

    fn final_stop(color: Color) -> Vec<Action> {
        vec![
            Action::StopJob {
                color,
                trigger_id: final_savepoint_trigger_id("uid-1"),
                drain: false,
            },
            Action::AwaitFinalSavepoint,
        ]
    }

    fn reasons(p: &super::super::Plan) -> Vec<&'static str> {
        p.notes.iter().map(|n| n.reason).collect()
    }

    #[test]
    fn before_w_is_set_the_handover_is_aborted_then_blue_is_stopped() {
        for (phase, toggle) in [
            (Phase::Deploying, None),
            (Phase::ConfirmingToggle, Some(70_000)),
        ] {
            let obs = deleting(
                with_child(
                    handover(phase, toggle),
                    Color::Green,
                    Some(running("h2", 1, 0, None, 0)),
                ),
                DeletionPolicy::SavepointThenDelete,
            );
            let p = plan_cleanup(&obs);
            assert_eq!(transition(&p).phase, Phase::Aborting, "{phase:?}");
            let Some(Action::WriteConfigMap(cm)) = p.actions.first() else {
                panic!("{phase:?}: the ConfigMap first: {:?}", p.actions);
            };
            assert_eq!(cm.stage, Stage::Failing, "{phase:?}");
            assert_eq!(
                p.actions[1..],
                [
                    Action::DeleteChild(Color::Green),
                    Action::AwaitFinalSavepoint
                ],
                "{phase:?}"
            );
            assert_eq!(
                condition(&p, "Progressing"),
                ("True", "DeletionWaitsForHandover")
            );
            assert_eq!(reasons(&p), ["DeletionWaitsForHandover"], "{phase:?}");
            // The next cleanup, from the status written, says nothing new.
            let again = plan_cleanup(&Observed {
                status: p.status.clone(),
                configmap: ConfigMapObs::Valid(*cm),
                ..obs
            });
            assert!(reasons(&again).is_empty(), "{:?}", again.notes);
        }
        // Green gone: the abort ends, blue is live again and still held by the finalizer.
        let mut obs = deleting(
            handover(Phase::Aborting, None),
            DeletionPolicy::SavepointThenDelete,
        );
        obs.green = None;
        let p = plan_cleanup(&obs);
        assert!(p.status.transition.is_none());
        assert_eq!(p.status.active_color, Some(Color::Blue));
        assert_eq!(p.status.history[0].outcome, Outcome::Aborted);
        assert_eq!(p.actions.last(), Some(&Action::AwaitFinalSavepoint));
        // Then blue alone: its final stop-with-savepoint.
        let obs = deleting(steady_blue("h2"), DeletionPolicy::SavepointThenDelete);
        assert_eq!(plan_cleanup(&obs).actions, final_stop(Color::Blue));
    }

    #[test]
    fn while_snapshotting_nothing_was_deployed_and_blue_is_stopped_at_once() {
        let obs = deleting(
            handover(Phase::Snapshotting, None),
            DeletionPolicy::SavepointThenDelete,
        );
        let p = plan_cleanup(&obs);
        assert_eq!(p.actions, final_stop(Color::Blue));
        assert_eq!(p.status, obs.status);
    }

    #[test]
    fn once_w_is_set_the_handover_is_finished_without_a_person_or_the_deletion_delay() {
        let w = 70_000;
        let mut obs = deleting(ready_to_promote(w), DeletionPolicy::SavepointThenDelete);
        obs.valid = valid(|s| {
            s.coordination.promotion = Promotion::Manual;
            s.coordination.deployment_deletion_delay = "10m".into();
        });
        let p = plan_cleanup(&obs);
        assert_eq!(p.status.active_color, Some(Color::Green), "promoted");
        assert_ne!(transition(&p).phase, Phase::ToggleSet);
        assert_eq!(p.actions.last(), Some(&Action::AwaitFinalSavepoint));
        assert!(
            !p.actions.iter().any(|a| matches!(
                a,
                Action::StopJob {
                    color: Color::Green,
                    ..
                }
            )),
            "green is not stopped before the handover ended: {:?}",
            p.actions
        );
        assert_eq!(
            condition(&p, "Progressing"),
            ("True", "DeletionWaitsForHandover")
        );
        // Promoted, the outgoing job is stopped at once, not after the deletion delay.
        let mut obs = deleting(
            handover(Phase::ClearToTeardown, Some(w)),
            DeletionPolicy::SavepointThenDelete,
        );
        obs.valid = valid(|s| s.coordination.deployment_deletion_delay = "10m".into());
        obs = with_child(
            obs,
            Color::Green,
            Some(running("h2", 1, 2, Some(72_000), 71_000)),
        );
        let p = plan_cleanup(&obs);
        assert_eq!(transition(&p).phase, Phase::TearingDown);
        assert!(
            p.actions
                .iter()
                .any(|a| matches!(a, Action::StopJob { color: Color::Blue, trigger_id, .. } if *trigger_id != final_savepoint_trigger_id("uid-1"))),
            "{:?}",
            p.actions
        );
        // Blue gone: the handover completes; then green alone gets the final stop.
        let mut obs = deleting(
            handover(Phase::TearingDown, Some(w)),
            DeletionPolicy::SavepointThenDelete,
        );
        obs.blue = None;
        obs.status.active_color = Some(Color::Green);
        obs = with_child(
            obs,
            Color::Green,
            Some(running("h2", 1, 2, Some(72_000), 71_000)),
        );
        let p = plan_cleanup(&obs);
        assert!(p.status.transition.is_none());
        assert_eq!(p.status.history[0].outcome, Outcome::Promoted);
        assert_eq!(p.actions.last(), Some(&Action::AwaitFinalSavepoint));
        let mut obs = deleting(observed(), DeletionPolicy::SavepointThenDelete);
        obs.status = p.status;
        obs = with_child(
            obs,
            Color::Green,
            Some(running("h2", 1, 2, Some(72_000), 71_000)),
        );
        assert_eq!(plan_cleanup(&obs).actions, final_stop(Color::Green));
    }

    #[test]
    fn delete_and_orphan_do_not_wait_for_a_handover() {
        for (policy, actions) in [
            (
                DeletionPolicy::Delete,
                vec![
                    Action::DeleteChild(Color::Blue),
                    Action::DeleteChild(Color::Green),
                    Action::DeleteConfigMap,
                ],
            ),
            (
                DeletionPolicy::Orphan,
                vec![Action::Orphan(Color::Blue), Action::Orphan(Color::Green)],
            ),
        ] {
            let obs = deleting(handover(Phase::ToggleSet, Some(70_000)), policy);
            let p = plan_cleanup(&obs);
            assert_eq!(p.actions, actions, "{policy:?}");
            assert_eq!(p.status, obs.status, "{policy:?}");
        }
    }
}

#[test]
fn a_refused_first_deployment_reaches_every_condition_whole_with_one_warning_event() {
    // The launcher's refusal of an unsafe FileSink: the cause chain, well over 1000 characters.
    let refusal = format!(
        "the job could not be submitted: {}<- java.lang.IllegalArgumentException: FileSink rolling policy DefaultRollingPolicy does not roll on every checkpoint. Use .withRollingPolicy(OnCheckpointRollingPolicy.build()), or BlueGreenSinks.rollOnCheckpoint(policy) to keep size/time rolls as well",
        "org.apache.flink.client.program.ProgramInvocationException: The main method caused an error. ".repeat(12)
    );
    let mut obs = observed();
    obs.status = plan(&obs).status;
    obs.configmap = ConfigMapObs::Valid(CoordinationState::new(
        0,
        Stage::Initializing,
        Color::Blue,
        Toggle::NotSet,
    ));
    let mut blue = running("h1", 0, 0, None, i64::MIN);
    blue.job_state = Some("FAILED".into());
    blue.lifecycle = Some("FAILED".into());
    blue.error = Some(refusal.clone());
    blue.flink = None;
    let obs = with_child(obs, Color::Blue, Some(blue));
    let p = plan(&obs);
    let get = |type_: &str| cond(&p, type_);
    let degraded = get("Degraded");
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_str()),
        ("True", "FirstDeploymentFailed")
    );
    assert_eq!(degraded.message, refusal);
    assert_eq!(get("Ready").message, refusal);
    assert!(get("Progressing").message.ends_with(&refusal));
    assert_eq!(get("Progressing").status, "False");
    let warnings: Vec<_> = p.notes.iter().filter(|n| n.warning).collect();
    assert_eq!(warnings.len(), 1, "{:?}", p.notes);
    assert_eq!(warnings[0].reason, "FirstDeploymentFailed");
    assert!(
        warnings[0]
            .message
            .contains("BlueGreenSinks.rollOnCheckpoint(policy)")
    );
    // Not again on the next look.
    let mut again = obs.clone();
    again.status = p.status.clone();
    assert!(
        plan(&again).notes.iter().all(|n| !n.warning),
        "{:?}",
        plan(&again).notes
    );
}
