//! After promotion: the deletion delay, the stop-with-savepoint of the outgoing job (with drain,
//! resent, retried) and the restart of a failed outgoing job.

use super::*;

#[test]
fn teardown_waits_for_the_deletion_delay_then_deletes_blue_then_finishes() {
    let mut obs =
        handover(Phase::ClearToTeardown, Some(70_000)).green(running("h2", 1, 2, None, 80_000));
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
    let trigger = crate::handover::stop_trigger_id("h2", 1, 0);
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
    let mut finished = obs.clone().blue(stopped_blue(Some(SavepointObs::Completed(
        "file:///sp/final".into(),
    ))));
    finished.status = p.status.clone();
    let p = plan(&finished);
    assert_eq!(p.actions, vec![Action::DeleteChild(Color::Blue)]);
    // Blue gone: RUNNING green, history says Promoted.
    let mut gone = obs.without(Color::Blue);
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
    assert_eq!(condition(&p, ConditionType::Ready).0, "True");
}

#[test]
fn the_plan_carries_the_finished_handover_until_its_status_is_written() {
    let mut obs =
        handover(Phase::TearingDown, Some(70_000)).green(running("h2", 1, 2, None, 80_000));
    obs.status.active_color = Some(Color::Green);
    let obs = obs.without(Color::Blue);
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
        trigger_id: crate::handover::stop_trigger_id("h2", 1, 0),
        drain: false,
    }));
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
        trigger_id: crate::handover::stop_trigger_id("h2", 1, 0),
        drain: true,
    };
    assert!(p.actions.contains(&stop), "{:?}", p.actions);
    assert!(
        transition(&p).stop.drain,
        "the drain is recorded with the trigger"
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.reason == EventReason::OutgoingDrained)
    );
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
    blue.job_state = Some(JobStatus::Finished.into());
    blue.flink = Some(crate::observed::FlinkObs {
        savepoint: stop,
        ..crate::observed::FlinkObs::default()
    });
    blue
}

/// Tearing down blue → green at W = 70 s, the stop of blue in `stop`, blue running with the
/// stop's status `polled`.
fn tearing_down(stop: OutgoingStop, polled: Option<SavepointObs>) -> Observed {
    let mut obs =
        handover(Phase::TearingDown, Some(70_000)).green(running("h2", 1, 2, None, 80_000));
    obs.status.active_color = Some(Color::Green);
    obs.status.transition.as_mut().unwrap().stop = stop;
    if let Some(flink) = obs.blue.as_mut().and_then(|b| b.flink.as_mut()) {
        flink.savepoint = polled;
    }
    obs
}

fn stop_sent(attempts: u32, since: &str) -> OutgoingStop {
    OutgoingStop {
        trigger_id: Some(crate::handover::stop_trigger_id("h2", 1, attempts)),
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
    assert!(
        p.notes
            .iter()
            .any(|n| n.reason == EventReason::OutgoingStopped)
    );
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
            trigger_id: crate::handover::stop_trigger_id("h2", 1, 0),
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
            .any(|n| n.warning && n.reason == EventReason::OutgoingStopFailed)
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
            trigger_id: crate::handover::stop_trigger_id("h2", 1, 1),
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
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "OutgoingStopFailed")
    );
    let mut given_up = tearing_down(OutgoingStop::default(), None);
    given_up.status = p.status.clone();
    let p = plan(&at(given_up.clone(), "2026-01-01T01:00:00Z"));
    assert!(p.actions.is_empty(), "never cancelled: {:?}", p.actions);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "OutgoingStopFailed")
    );
    let message = &cond(&p, ConditionType::Degraded).message;
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
    let mut deleted = given_up.without(Color::Blue);
    deleted.status.transition.as_mut().unwrap().stop.attempts = 3;
    let p = plan(&deleted);
    assert!(p.status.transition.is_none());
    assert_eq!(p.status.history[0].outcome, Outcome::Promoted);
}

#[test]
fn an_outgoing_job_that_already_ended_is_deleted_without_a_stop() {
    for state in [JobStatus::Finished, JobStatus::Canceled] {
        let mut obs = tearing_down(OutgoingStop::default(), None);
        obs.blue.as_mut().unwrap().job_state = Some(state.into());
        let p = plan(&obs);
        assert_eq!(p.actions, vec![Action::DeleteChild(Color::Blue)], "{state}");
    }
}

/// Blue FAILED for good in `phase` (after W = 70 000).
fn failed_blue(phase: Phase) -> Observed {
    let mut obs = handover(phase, Some(70_000)).green(running("h2", 1, 2, None, 80_000));
    let blue = obs.blue.as_mut().unwrap();
    blue.job_state = Some(JobStatus::Failed.into());
    blue.lifecycle = Some(LifecycleState::Failed.into());
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
            condition(&p, ConditionType::Degraded),
            ("True", "OutgoingFailed"),
            "{phase:?}"
        );
        assert!(
            p.notes
                .iter()
                .any(|n| n.warning && n.reason == EventReason::OutgoingFailed),
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
        attempts: crate::handover::outgoing::OUTGOING_RESTARTS,
        ran: true,
        ..transition(&again).outgoing_restart.clone().unwrap()
    });
    let given_up = plan(&obs);
    assert!(given_up.actions.is_empty());
    assert_eq!(
        condition(&given_up, ConditionType::Degraded).1,
        "OutgoingRestartFailed"
    );
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
    assert_eq!(
        condition(&p, ConditionType::Progressing).1,
        "OutgoingNotReady"
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.reason == EventReason::OutgoingRestarted)
    );
    // minReady (10 s) later with the same start time, past W: stopped.
    obs.status = p.status;
    let later = plan(&at(obs.clone(), "2026-01-01T00:00:11Z"));
    assert!(
        matches!(later.actions.as_slice(), [Action::StopJob { .. }]),
        "{:?}",
        later.actions
    );
    // Still below W after minReady (the replay has not reached it): not stopped.
    flink_of(&mut obs, Color::Blue).gates = Some(crate::observed::GateObs {
        reports: vec![crate::fixtures::report(1, 2, Some(60_000), 65_000)],
        vertices: [(crate::fixtures::GATE_VERTEX.to_owned(), 1)].into(),
    });
    let below = plan(&at(obs, "2026-01-01T00:00:11Z"));
    assert!(below.actions.is_empty(), "{:?}", below.actions);
}
