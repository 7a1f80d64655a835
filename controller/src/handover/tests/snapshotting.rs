//! The start of a handover: the outgoing job's savepoint, or its latest checkpoint, or nothing.

use super::*;

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
    assert_eq!(
        condition(&p, ConditionType::Progressing),
        ("True", "Snapshotting")
    );
}

#[test]
fn a_completed_savepoint_moves_the_configmap_before_creating_green() {
    let mut obs = handover(Phase::Snapshotting, None);
    obs.status.transition.as_mut().unwrap().savepoint_trigger_id = Some("t1".into());
    flink_of(&mut obs, Color::Blue).savepoint =
        Some(SavepointObs::Completed("file:///sp/9".into()));
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![
            write_configmap(1, Stage::Transitioning, Color::Green, Toggle::NotSet),
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
    flink_of(&mut obs, Color::Blue).savepoint = Some(SavepointObs::Failed("disk full".into()));
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
    assert_eq!(
        condition(&p3, ConditionType::Degraded),
        ("True", "SavepointFailed")
    );
    assert_eq!(p3.status.failed_template_hash.as_deref(), Some("h2"));
    assert_eq!(p3.status.history[0].outcome, Outcome::Aborted);
}

#[test]
fn a_savepoint_that_takes_too_long_counts_as_failed() {
    let mut obs = handover(Phase::Snapshotting, None);
    obs.status.transition.as_mut().unwrap().savepoint_trigger_id = Some("t1".into());
    flink_of(&mut obs, Color::Blue).savepoint = Some(SavepointObs::InProgress);
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
    let id = crate::handover::savepoint_trigger_id("h2", 1, 0);
    assert_eq!(transition(&p).savepoint_trigger_id.as_ref(), Some(&id));
    let mut obs = steady_blue("h2");
    obs.status = p.status;
    flink_of(&mut obs, Color::Blue).savepoint = Some(SavepointObs::Unknown);
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
