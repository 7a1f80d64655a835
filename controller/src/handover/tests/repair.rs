//! Forward repair of an incoming job that fails for good after W is set.

use super::*;

/// Green (template h2) FAILED for good after W = 70 s was set: job `green-1`, whose REST API
/// still names its own latest checkpoint.
fn failed_green() -> crate::observed::ChildObs {
    let mut green = running("h2", 1, 2, Some(72_000), 71_000);
    green.job_state = Some(JobStatus::Failed.into());
    green.lifecycle = Some(LifecycleState::Failed.into());
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
    let mut obs = at(handover(Phase::ToggleSet, Some(70_000)).green(green), now);
    obs.status.deployed_spec = Some(deployed_v1());
    obs
}

fn repair(p: &crate::handover::Plan) -> &crate::resource::ForwardRepair {
    transition(p)
        .forward_repair
        .as_ref()
        .expect("forward repair")
}

fn noted(p: &crate::handover::Plan, reason: EventReason) -> bool {
    p.notes.iter().any(|n| n.reason == reason)
}

/// The repair step: blue's template h1, green's own checkpoint.
fn repair_action() -> Action {
    Action::RepairChild {
        color: Color::Green,
        spec: Box::new(crate::handover::repair::repair_spec(&deployed_v1())),
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
    assert!(noted(&p, EventReason::IncomingFailedAfterToggle));
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "IncomingFailedAfterToggle")
    );
    // Within the grace (2m by default): still nothing; the failure time is kept.
    let mut later = at(obs.clone(), "2026-01-01T01:01:59Z");
    later.status = p.status.clone();
    let p2 = plan(&later);
    assert!(p2.actions.is_empty(), "{:?}", p2.actions);
    assert_eq!(repair(&p2).failed_since, time("2026-01-01T01:00:00Z"));
    assert!(
        !noted(&p2, EventReason::IncomingFailedAfterToggle),
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
    assert!(noted(&p3, EventReason::ForwardRepair));
    assert_eq!(transition(&p3).phase, Phase::ToggleSet, "never aborted");
    assert_eq!(transition(&p3).template_hash, "h2");
    assert_eq!(
        condition(&p3, ConditionType::Progressing),
        ("True", "ForwardRepairing")
    );
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
    let (status, reason) = condition(&p, ConditionType::Degraded);
    assert_eq!((status, reason), ("True", "IncomingFailedAfterToggle"));
    let message = &cond(&p, ConditionType::Degraded).message;
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
    let stale = obs.blue(running("h0", 1, 2, Some(70_000), 71_000));
    let p = plan(&stale);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "IncomingFailedAfterToggle")
    );
}

#[test]
fn the_first_deployment_and_every_promotion_record_the_spec_they_deployed() {
    let mut obs = observed();
    obs.spec.template.spec.image = Some("example.com/orders:v7".into());
    obs = first_deployment_started(obs);
    let obs = obs.blue(running("h1", 0, 0, None, i64::MIN));
    let p = plan(&obs);
    assert_eq!(p.status.deployed_spec.as_ref(), Some(&obs.spec));
    // A promotion without repair records the spec of the promoted template.
    let mut promote = handover(Phase::ToggleSet, Some(70_000))
        .green(running("h2", 1, 2, Some(72_000), 71_000))
        .blue(running("h1", 1, 2, Some(70_000), 71_000));
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
        condition(&p, ConditionType::Degraded),
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
    assert!(
        !noted(&p, EventReason::ForwardRepair),
        "the event was published once"
    );
    // Applied (green annotated h1) but the Flink operator has not redeployed yet: wait.
    let mut applied = failed_green();
    applied.template_hash = Some("h1".into());
    let p = plan(&repairing(applied.clone(), "2026-01-01T01:02:30Z", false));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(
        condition(&p, ConditionType::Progressing),
        ("True", "ForwardRepairing")
    );
    // No redeploy within abortGracePeriod (10m): the status says so, still nothing is aborted.
    let p = plan(&repairing(applied, "2026-01-01T01:12:30Z", false));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "ForwardRepairFailed")
    );
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
}

#[test]
fn a_repaired_incoming_job_is_followed_to_promotion_with_the_outgoing_template() {
    // The operator redeployed green (new job, template h1), which runs past W.
    let mut green = running("h1", 1, 2, Some(72_000), 71_000);
    green.job_id = Some("green-1".into());
    let obs = repairing(green, "2026-01-01T01:05:00Z", false).blue(running(
        "h1",
        1,
        2,
        Some(70_000),
        71_000,
    ));
    let p = plan(&obs);
    assert!(repair(&p).redeployed, "seen out of FAILED");
    assert_eq!(transition(&p).phase, Phase::ClearToTeardown);
    // The active child runs h1: that is the deployed template, and h2 is not retried.
    assert_eq!(p.status.deployed_template_hash.as_deref(), Some("h1"));
    assert_eq!(p.status.deployed_spec, Some(deployed_v1()));
    assert_eq!(p.status.failed_template_hash.as_deref(), Some("h2"));
    assert_eq!(p.status.deployed_redeploy_nonce, None);
    assert!(noted(&p, EventReason::ForwardRepaired));
}

#[test]
fn a_repaired_incoming_job_that_fails_again_waits_for_a_person() {
    let mut again = failed_green();
    again.template_hash = Some("h1".into());
    again.job_id = Some("green-2".into());
    let p = plan(&repairing(again.clone(), "2026-01-01T02:00:00Z", true));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "ForwardRepairFailed")
    );
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
    // A new job id alone shows the redeploy, even if its FAILED came before we looked.
    let p = plan(&repairing(again, "2026-01-01T01:02:30Z", false));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert!(repair(&p).redeployed);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "ForwardRepairFailed")
    );
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
    let mut obs = repairing(
        running("h1", 1, 2, None, 80_000),
        "2026-01-01T01:10:00Z",
        true,
    )
    .without(Color::Blue);
    let t = obs.status.transition.as_mut().unwrap();
    t.phase = Phase::TearingDown;
    obs.status.active_color = Some(Color::Green);
    obs.status.deployed_template_hash = Some("h1".into());
    obs.status.failed_template_hash = Some("h2".into());
    obs.configmap = ConfigMapObs::Valid(
        crate::handover::desired_configmap(&obs.status, &obs).expect("desired"),
    );
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
        condition(&p, ConditionType::Degraded),
        ("True", "ForwardRepaired"),
        "said at once, as an abort is"
    );
    // Steady on green running h1 while the template says h2: no new handover to h2.
    let mut steady = obs;
    steady.status = p.status;
    steady.configmap = ConfigMapObs::Valid(
        crate::handover::desired_configmap(&steady.status, &steady).expect("desired"),
    );
    let p = plan(&steady);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert!(p.status.transition.is_none());
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "ForwardRepaired")
    );
    // A new template starts a handover again.
    steady.template_hash = "h3".into();
    let p = plan(&steady);
    assert_eq!(transition(&p).template_hash, "h3");
}
