//! Abandoning a handover before W is set: a failing or slow incoming job, the manual abort, a
//! template change.

use super::*;

#[test]
fn green_not_running_within_the_grace_period_aborts_and_deletes_it() {
    let mut obs = handover(Phase::Deploying, None);
    let mut green = running("h2", 1, 0, None, i64::MIN);
    green.job_state = Some(JobStatus::Created.into());
    obs = obs.green(green);
    assert!(
        plan(&at(obs.clone(), "2026-01-01T00:09:00Z"))
            .actions
            .is_empty()
    );
    let p = plan(&at(obs, "2026-01-01T00:10:01Z"));
    assert_eq!(
        p.actions,
        vec![
            write_configmap(1, Stage::Failing, Color::Green, Toggle::NotSet),
            Action::DeleteChild(Color::Green),
        ]
    );
    assert_eq!(transition(&p).phase, Phase::Aborting);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "IncomingNotRunning")
    );
}

#[test]
fn a_failed_green_aborts_at_once() {
    let mut obs = handover(Phase::Deploying, None);
    let mut green = running("h2", 1, 0, None, i64::MIN);
    green.job_state = Some(JobStatus::Failed.into());
    green.error = Some("ClassNotFoundException".into());
    obs = obs.green(green);
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
        vec![write_configmap(
            1,
            Stage::Running,
            Color::Blue,
            Toggle::NotSet
        )]
    );
    assert!(p.status.transition.is_none());
    assert_eq!(p.status.active_color, Some(Color::Blue));
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "HandoverAborted")
    );
    // Next reconcile: same template → nothing; the abort reset every per-transition field.
    let mut next = obs.clone();
    next.status = p.status.clone();
    next.configmap = configmap(1, Stage::Running, Color::Blue, Toggle::NotSet);
    let p2 = plan(&next);
    assert!(p2.actions.is_empty());
    assert_eq!(
        condition(&p2, ConditionType::Degraded),
        ("True", "HandoverAborted")
    );
    // A new template tries again, with a fresh epoch and no stale trigger id.
    next.template_hash = "h3".into();
    next.status = p2.status;
    let p3 = plan(&next);
    let t = transition(&p3);
    assert_eq!(
        (t.epoch, t.savepoint_trigger_id.clone(), t.toggle),
        (
            2,
            Some(crate::handover::savepoint_trigger_id("h3", 2, 0)),
            None
        )
    );
    assert_eq!(p3.actions, vec![trigger(Color::Blue, "h3", 2, 0)]);
}

#[test]
fn an_abort_after_w_is_set_is_refused() {
    let mut obs =
        handover(Phase::ToggleSet, Some(70_000)).green(running("h2", 1, 2, Some(72_000), 0));
    obs.action = Some(ManualAction::Abort);
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
    assert_eq!(p.actions, vec![Action::ClearManualAction]);
    assert!(
        p.notes
            .iter()
            .any(|n| n.reason == EventReason::ActionRefused)
    );
}

#[test]
fn a_manual_abort_before_w_is_set_aborts() {
    let mut obs = handover(Phase::Deploying, None).green(running("h2", 1, 0, None, 0));
    obs.action = Some(ManualAction::Abort);
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::Aborting);
    assert!(p.actions.contains(&Action::ClearManualAction));
    assert!(p.actions.contains(&Action::DeleteChild(Color::Green)));
}

#[test]
fn a_template_change_before_w_is_set_aborts_and_starts_over() {
    let mut obs =
        handover(Phase::ConfirmingToggle, Some(70_000)).green(running("h2", 1, 0, None, 0));
    obs.template_hash = "h3".into();
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::Aborting);
    assert_eq!(
        p.actions[0],
        write_configmap(1, Stage::Failing, Color::Green, Toggle::Proposed(70_000))
    );
    assert!(
        p.status.failed_template_hash.is_none(),
        "a superseded template is not a failed one"
    );
}
