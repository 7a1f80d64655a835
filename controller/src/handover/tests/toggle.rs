//! Proposing W, the gates acknowledging it, the incoming job's readiness, and setting W.

use super::*;

const MINUTE: i64 = 60_000;

#[test]
fn green_running_proposes_w_after_the_outgoing_progress() {
    let obs = ready_for_a_minute(handover(Phase::Deploying, None).green(running(
        "h2",
        1,
        0,
        None,
        i64::MIN,
    )));
    let p = plan(&obs);
    // Blue's gates passed up to 1_000 and its watermark is 900: W = 1_000 + 1 minute.
    let w = 1_000 + MINUTE;
    assert_eq!(
        p.actions,
        vec![write_configmap(
            1,
            Stage::Transitioning,
            Color::Green,
            Toggle::Proposed(w)
        )]
    );
    assert_eq!(
        (transition(&p).phase, transition(&p).toggle),
        (Phase::ConfirmingToggle, Some(w))
    );
}

/// The defect `scripts/bench upgrade` showed: W was proposed when green first ran, so with the
/// default `minReady` (10 s) blue held every record above W, and green everything, for about
/// 10 s: the handover's worst output latency was 13.5 s against 7.4 s for an in-place upgrade.
/// W is proposed only once green has run `minReady`.
#[test]
fn w_is_proposed_only_once_the_incoming_job_has_run_min_ready() {
    let deploying = |seen: Option<&str>, now: &str| {
        let mut obs = handover(Phase::Deploying, None).green(running("h2", 1, 0, None, i64::MIN));
        obs.status.transition.as_mut().unwrap().incoming_ready = seen.map(|since| TasksReady {
            tasks_started_at: crate::fixtures::TASKS_STARTED_AT,
            since: time(since),
        });
        at(obs, now)
    };
    // First seen with every task RUNNING: the wait starts, nothing is written to the ConfigMap.
    let p = plan(&deploying(None, "2026-01-01T00:00:05Z"));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(
        (transition(&p).phase, transition(&p).toggle),
        (Phase::Deploying, None)
    );
    assert_eq!(
        transition(&p)
            .incoming_ready
            .as_ref()
            .map(|r| r.since.clone()),
        Some(time("2026-01-01T00:00:05Z"))
    );
    let (status, reason, message) = condition_message(&p, ConditionType::Progressing);
    assert_eq!((status, reason), ("True", "IncomingNotReady"));
    assert!(message.contains("before W is proposed"), "{message}");
    // 9.9 s later: still waiting.
    let p = plan(&deploying(
        Some("2026-01-01T00:00:05Z"),
        "2026-01-01T00:00:14.9Z",
    ));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    // 10 s: W is proposed, and set as soon as blue's gates acknowledge it (below).
    let p = plan(&deploying(
        Some("2026-01-01T00:00:05Z"),
        "2026-01-01T00:00:15Z",
    ));
    assert_eq!(
        p.actions,
        vec![write_configmap(
            1,
            Stage::Transitioning,
            Color::Green,
            Toggle::Proposed(1_000 + MINUTE)
        )]
    );
    // A restart of green while waiting starts the wait again, before any W.
    let mut restarted = deploying(Some("2026-01-01T00:00:05Z"), "2026-01-01T00:00:15Z");
    flink_of(&mut restarted, Color::Green).tasks_started_at =
        Some(crate::fixtures::TASKS_STARTED_AT + 1);
    let p = plan(&restarted);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(
        condition(&p, ConditionType::Progressing),
        ("True", "IncomingNotReady")
    );
}

#[test]
fn an_outgoing_job_whose_inputs_are_all_idle_gets_w_at_its_progress_without_the_offset() {
    let mut obs = ready_for_a_minute(handover(Phase::Deploying, None).green(running(
        "h2",
        1,
        0,
        None,
        i64::MIN,
    )));
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
        p.notes
            .iter()
            .any(|n| n.reason == EventReason::ToggleProposed
                && n.message.contains("without the toggle offset")),
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
    let mut obs = ready_for_a_minute(handover(Phase::Deploying, None).green(running(
        "h2",
        1,
        0,
        None,
        i64::MIN,
    )));
    flink_of(&mut obs, Color::Blue).gates = None;
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert_eq!(
        condition(&p, ConditionType::Progressing),
        ("True", "NoGateMetrics")
    );
}

#[test]
fn w_is_set_only_after_every_outgoing_gate_acknowledged_it() {
    let w = 70_000;
    let green = running("h2", 1, 0, None, i64::MIN);
    let not_acked = handover(Phase::ConfirmingToggle, Some(w))
        .green(green.clone())
        .blue(running("h1", 1, 0, Some(5_000), 4_000));
    assert!(plan(&not_acked).actions.is_empty());
    let acked = ready_for_a_minute(not_acked.blue(running("h1", 1, 1, Some(5_000), 4_000)));
    let p = plan(&acked);
    assert_eq!(
        p.actions,
        vec![write_configmap(
            1,
            Stage::Transitioning,
            Color::Green,
            Toggle::Set(w)
        )]
    );
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
}

#[test]
fn an_outgoing_gate_seen_earlier_in_the_handover_and_missing_now_has_not_acknowledged() {
    let w = 70_000;
    let mut obs = handover(Phase::ConfirmingToggle, Some(w))
        .green(running("h2", 1, 0, None, i64::MIN))
        .blue(running("h1", 1, 1, Some(5_000), 4_000));
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
    let (_, reason, message) = condition_message(&p, ConditionType::Progressing);
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
    let (_, reason, message) = condition_message(&p, ConditionType::Progressing);
    assert_eq!(reason, "OutgoingNotReady");
    assert!(message.contains("sink-b"), "{message}");
}

#[test]
fn w_is_raised_when_an_outgoing_gate_already_passed_it() {
    let w = 70_000;
    let obs = handover(Phase::ConfirmingToggle, Some(w))
        .green(running("h2", 1, 0, None, i64::MIN))
        .blue(running("h1", 1, 1, Some(80_000), 4_000));
    let p = plan(&obs);
    let raised = 80_000 + MINUTE;
    assert_eq!(
        p.actions,
        vec![write_configmap(
            1,
            Stage::Transitioning,
            Color::Green,
            Toggle::Proposed(raised)
        )]
    );
    assert_eq!(transition(&p).phase, Phase::ConfirmingToggle);
}

/// Confirming W = 70 s with every blue gate acknowledging it, green's tasks RUNNING since
/// `green_started` (`None`: one is not), the status having seen `seen` (start time, since when),
/// observed at `now`.
fn confirming(green_started: Option<i64>, seen: Option<(i64, &str)>, now: &str) -> Observed {
    let mut green = running("h2", 1, 1, None, i64::MIN);
    green.flink.as_mut().unwrap().tasks_started_at = green_started;
    let mut obs = handover(Phase::ConfirmingToggle, Some(crate::fixtures::W))
        .green(green)
        .blue(running("h1", 1, 1, Some(5_000), 4_000));
    obs.status.transition.as_mut().unwrap().incoming_ready =
        seen.map(|(tasks_started_at, since)| TasksReady {
            tasks_started_at,
            since: time(since),
        });
    at(obs, now)
}

fn sets_w(p: &crate::handover::Plan) -> bool {
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
    assert_eq!(
        condition(&p, ConditionType::Progressing),
        ("True", "IncomingNotReady")
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.warning && n.reason == EventReason::IncomingRestarted)
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
    let message = &cond(&p, ConditionType::Progressing).message;
    assert!(message.contains("every task RUNNING"), "{message}");
    // 9 s later (minReady is 10 s by default): still waiting, the record unchanged.
    let seen = Some((ready.tasks_started_at, "2026-01-01T00:00:00Z"));
    let p = plan(&confirming(started, seen, "2026-01-01T00:00:09Z"));
    assert!(!sets_w(&p), "{:?}", p.actions);
    assert_eq!(transition(&p).incoming_ready.as_ref(), Some(&ready));
    assert_eq!(
        condition(&p, ConditionType::Progressing).1,
        "IncomingNotReady"
    );
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
    assert_eq!(
        condition(&p, ConditionType::Progressing).1,
        "IncomingNotReady"
    );
    // The job itself is RESTARTING.
    let mut obs = confirming(
        Some(crate::fixtures::TASKS_STARTED_AT),
        seen,
        "2026-01-01T00:00:30Z",
    );
    obs.green.as_mut().unwrap().job_state = Some(JobStatus::Restarting.into());
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
fn a_new_stage_with_a_stale_maximum_does_not_acknowledge_a_raised_w() {
    // W was raised from 70 s (the fixture's) to 140 s; blue's gates still report the old
    // proposal: epoch and stage are current, but the line's W and maximum are the old ones.
    let w = 140_000;
    let obs = handover(Phase::ConfirmingToggle, Some(w))
        .green(running("h2", 1, 0, None, i64::MIN))
        .blue(running("h1", 1, 1, Some(69_000), 60_000));
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(transition(&p).phase, Phase::ConfirmingToggle);
    assert_eq!(
        condition(&p, ConditionType::Progressing).1,
        "GatesNotAcknowledged"
    );
}

#[test]
fn every_gate_subtask_must_acknowledge_and_pass_w() {
    let w = crate::fixtures::W;
    let mut blue = running("h1", 1, 1, Some(5_000), 4_000);
    // One of blue's gate subtasks has not applied the proposal yet.
    gates_of(&mut blue).reports[1] = crate::fixtures::report(1, 0, Some(5_000), 4_000);
    let obs = handover(Phase::ConfirmingToggle, Some(w))
        .green(running("h2", 1, 0, None, i64::MIN))
        .blue(blue);
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
    let obs = handover(Phase::ToggleSet, Some(w))
        .green(green)
        .blue(running("h1", 1, 2, Some(70_000), 71_000));
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
    assert!(
        p.notes
            .iter()
            .any(|n| n.reason == EventReason::WaitingForWatermark)
    );
}

#[test]
fn an_idle_gate_counts_as_past_w_and_the_status_says_so() {
    let w = crate::fixtures::W;
    // Blue's gate is chained into its (now idle) source: no watermark past W, but idle.
    let mut blue = running("h1", 1, 2, Some(70_000), i64::MIN);
    for r in &mut gates_of(&mut blue).reports {
        r.idle = true;
    }
    let obs = handover(Phase::ToggleSet, Some(w))
        .green(running("h2", 1, 2, Some(72_000), 70_001))
        .blue(blue);
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::ClearToTeardown);
    assert_eq!(transition(&p).past_w_by_idleness, vec![Color::Blue]);
    assert!(
        p.notes
            .iter()
            .any(|n| n.reason == EventReason::PastWByIdleness)
    );
}

#[test]
fn gates_not_acknowledging_w_name_the_cause_they_report() {
    let problem = "state source: sidecar http://127.0.0.1:8787/v1/state: java.net.ConnectException";
    let mut blue = running("h1", 1, 0, Some(5_000), 4_000);
    for r in &mut gates_of(&mut blue).reports {
        r.problem = Some(problem.into());
    }
    let obs = handover(Phase::ConfirmingToggle, Some(crate::fixtures::W))
        .green(running("h2", 1, 0, None, i64::MIN))
        .blue(blue);
    let waiting = plan(&obs);
    let progressing = cond(&waiting, ConditionType::Progressing);
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

/// Sets the color every gate of `color`'s job reports.
fn gates_say(obs: &mut Observed, color: Color, said: Option<Color>) {
    for r in &mut flink_of(obs, color).gates.as_mut().expect("gates").reports {
        r.color = said;
    }
}

/// Found on real Flink: a green job whose gates were built BLUE (a fixed `--color` in the
/// template) was handed W and promoted; both jobs then passed what blue owns (duplicates) and
/// nobody what green owns (losses). Gates now say their color, and W is never given to such a job.
#[test]
fn an_incoming_job_whose_gates_say_the_other_color_is_aborted_before_w() {
    // Before the proposal.
    let mut obs = ready_for_a_minute(handover(Phase::Deploying, None).green(running(
        "h2",
        1,
        0,
        None,
        i64::MIN,
    )));
    gates_say(&mut obs, Color::Green, Some(Color::Blue));
    gates_say(&mut obs, Color::Blue, Some(Color::Blue));
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![
            write_configmap(1, Stage::Failing, Color::Green, Toggle::NotSet),
            Action::DeleteChild(Color::Green),
        ]
    );
    assert_eq!(transition(&p).phase, Phase::Aborting);
    let (status, reason, message) = condition_message(&p, ConditionType::Degraded);
    assert_eq!((status, reason), ("True", "GateColorMismatch"));
    assert!(
        message.contains("2 of 2 gate subtasks of the green job report color=BLUE")
            && message.contains("BLUEGREEN_COLOR"),
        "{message}"
    );
    // With W proposed (the gates reported late): aborted, W never set.
    let mut obs = ready_for_a_minute(
        handover(Phase::ConfirmingToggle, Some(1_000 + MINUTE))
            .green(running("h2", 1, 1, None, i64::MIN))
            .blue(running("h1", 1, 1, Some(1_000), 900)),
    );
    gates_say(&mut obs, Color::Green, Some(Color::Blue));
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::Aborting);
    assert!(
        !p.actions.iter().any(|a| matches!(
            a,
            Action::WriteConfigMap(s) if matches!(s.toggle, Toggle::Set(_))
        )),
        "{:?}",
        p.actions
    );
    // The same handover with gates that say their own color (or nothing, as older gates) goes on.
    for said in [Some(Color::Green), None] {
        let mut obs = ready_for_a_minute(handover(Phase::Deploying, None).green(running(
            "h2",
            1,
            0,
            None,
            i64::MIN,
        )));
        gates_say(&mut obs, Color::Green, said);
        gates_say(&mut obs, Color::Blue, said.map(|_| Color::Blue));
        let p = plan(&obs);
        assert_eq!(transition(&p).phase, Phase::ConfirmingToggle, "{said:?}");
    }
}

#[test]
fn w_is_proposed_only_once_the_incoming_gates_report() {
    let mut obs = ready_for_a_minute(handover(Phase::Deploying, None).green(running(
        "h2",
        1,
        0,
        None,
        i64::MIN,
    )));
    flink_of(&mut obs, Color::Green).gates = None;
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    let (status, reason, message) = condition_message(&p, ConditionType::Progressing);
    assert_eq!((status, reason), ("True", "NoGateMetrics"));
    assert!(message.contains("incoming job"), "{message}");
}
