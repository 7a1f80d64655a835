//! Deletion under `onDelete: savepointThenDelete` during a handover (`plan_cleanup`): the
//! handover ends first, then the only job is stopped with the final savepoint.

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

fn reasons(p: &super::super::Plan) -> Vec<EventReason> {
    p.notes.iter().map(|n| n.reason).collect()
}

#[test]
fn before_w_is_set_the_handover_is_aborted_then_blue_is_stopped() {
    for (phase, toggle) in [
        (Phase::Deploying, None),
        (Phase::ConfirmingToggle, Some(70_000)),
    ] {
        let obs = deleting(
            handover(phase, toggle).green(running("h2", 1, 0, None, 0)),
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
            condition(&p, ConditionType::Progressing),
            ("True", "DeletionWaitsForHandover")
        );
        assert_eq!(
            reasons(&p),
            [EventReason::DeletionWaitsForHandover],
            "{phase:?}"
        );
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
        condition(&p, ConditionType::Progressing),
        ("True", "DeletionWaitsForHandover")
    );
    // Promoted, the outgoing job is stopped at once, not after the deletion delay.
    let mut obs = deleting(
        handover(Phase::ClearToTeardown, Some(w)),
        DeletionPolicy::SavepointThenDelete,
    );
    obs.valid = valid(|s| s.coordination.deployment_deletion_delay = "10m".into());
    obs = obs.green(running("h2", 1, 2, Some(72_000), 71_000));
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
    obs = obs.green(running("h2", 1, 2, Some(72_000), 71_000));
    let p = plan_cleanup(&obs);
    assert!(p.status.transition.is_none());
    assert_eq!(p.status.history[0].outcome, Outcome::Promoted);
    assert_eq!(p.actions.last(), Some(&Action::AwaitFinalSavepoint));
    let mut obs = deleting(observed(), DeletionPolicy::SavepointThenDelete);
    obs.status = p.status;
    obs = obs.green(running("h2", 1, 2, Some(72_000), 71_000));
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
