//! Children in another cluster (`spec.cluster`): where each child is recorded to run, a move
//! started by a cluster change, the storage a move needs, and polling the unwatched clusters.

use super::*;
use crate::resource::{KubeconfigSecret, TargetCluster};

/// The cluster of Secret `east`, namespace `jobs`.
fn east() -> TargetCluster {
    TargetCluster {
        kubeconfig_secret: KubeconfigSecret {
            name: "east".into(),
            key: "kubeconfig".into(),
        },
        namespace: Some("jobs".into()),
        flink_rest_url: "https://{name}.flink.east.example.com".into(),
    }
}

/// Blue running here in steady state, `spec.cluster` now `east` with shared savepoints.
fn moving_to_east() -> Observed {
    let mut obs = steady_blue("h2");
    obs.spec.cluster = Some(Box::new(east()));
    obs.spec.template.spec.flink_configuration.insert(
        "state.savepoints.dir".into(),
        "s3://bucket/savepoints".into(),
    );
    obs.status.deployed_spec = Some(obs.spec.clone());
    obs
}

#[test]
fn a_child_is_recorded_in_the_cluster_it_is_created_in_before_it_is() {
    let mut obs = observed();
    obs.spec.cluster = Some(Box::new(east()));
    let p = plan(&obs);
    assert!(p.actions.iter().any(|a| matches!(
        a,
        Action::ApplyChild {
            color: Color::Blue,
            ..
        }
    )));
    assert_eq!(p.status.clusters.of(Color::Blue), Some(&east()));
    assert_eq!(p.status.clusters.of(Color::Green), None);
}

#[test]
fn a_child_that_exists_stays_in_its_cluster_and_a_gone_one_is_forgotten() {
    // Blue runs here; the spec names east: its suspend is applied here, in place.
    let mut obs = steady_blue("h1");
    obs.wanted_job_state = crate::observed::JobState::Suspended;
    obs.status
        .clusters
        .set(Color::Green, Some(Box::new(east())));
    let p = plan(&obs);
    assert!(p.actions.iter().any(|a| matches!(
        a,
        Action::ApplyChild {
            color: Color::Blue,
            ..
        }
    )));
    assert_eq!(p.status.clusters.of(Color::Blue), None);
    // Green is gone from east: east is not looked at again.
    assert_eq!(p.status.clusters.of(Color::Green), None);
}

#[test]
fn a_change_of_the_cluster_moves_the_job_by_a_handover() {
    let p = plan(&moving_to_east());
    assert_eq!(transition(&p).phase, Phase::Snapshotting);
    assert_eq!(transition(&p).to, Color::Green);
    // The incoming child is placed only when it is created.
    assert_eq!(p.status.clusters.of(Color::Green), None);
    // Created once the savepoint is known: recorded in east first.
    let mut deploying = moving_to_east();
    deploying.status = p.status;
    let t = deploying.status.transition.as_mut().expect("handover");
    t.phase = Phase::Deploying;
    t.restore_path = Some("s3://bucket/savepoints/sp-1".into());
    let p = plan(&deploying);
    assert!(
        p.actions.iter().any(|a| matches!(
            a,
            Action::ApplyChild {
                color: Color::Green,
                ..
            }
        )),
        "{:?}",
        p.actions
    );
    assert_eq!(p.status.clusters.of(Color::Green), Some(&east()));
}

#[test]
fn a_job_running_elsewhere_than_the_spec_says_moves_even_with_its_hash_deployed() {
    // The cluster changed after W of the last handover: the promoted job kept its cluster.
    let mut obs = moving_to_east();
    obs.template_hash = "h1".into();
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::Snapshotting);
}

#[test]
fn a_move_with_local_state_storage_is_refused_naming_the_key_and_nothing_runs() {
    let mut obs = moving_to_east();
    obs.spec.template.spec.flink_configuration.insert(
        "state.checkpoints.dir".into(),
        "file:///data/checkpoints".into(),
    );
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert!(p.status.transition.is_none());
    let (status, reason, message) = condition_message(&p, ConditionType::Degraded);
    assert_eq!((status, reason), ("True", "InvalidSpec"));
    assert!(
        message.contains("flinkConfiguration[\"state.checkpoints.dir\"]"),
        "{message}"
    );
    // A handover within one cluster needs no shared storage.
    let mut here = obs;
    here.spec.cluster = None;
    assert_eq!(transition(&plan(&here)).phase, Phase::Snapshotting);
}

#[test]
fn a_handover_waiting_on_a_child_in_another_cluster_polls_it() {
    let mut obs = handover(Phase::Deploying, None);
    obs.status
        .clusters
        .set(Color::Green, Some(Box::new(east())));
    obs.green = Some(running("h2", 1, 0, None, i64::MIN));
    let p = plan(&obs);
    assert!(
        p.requeue_after <= std::time::Duration::from_secs(1),
        "{:?}",
        p.requeue_after
    );
}

#[test]
fn a_cluster_a_child_runs_in_that_cannot_be_used_stops_everything_and_forgets_nothing() {
    let mut obs = handover(Phase::Deploying, None);
    obs.status
        .clusters
        .set(Color::Green, Some(Box::new(east())));
    // Green was not looked for.
    obs.green = None;
    obs.cluster_down = Some("the cluster the green job runs in cannot be used".into());
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(p.status.transition, obs.status.transition);
    assert_eq!(p.status.clusters.of(Color::Green), Some(&east()));
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "ClusterUnavailable")
    );
    assert_eq!(
        p.notes.iter().map(|n| n.reason).collect::<Vec<_>>(),
        [EventReason::ClusterUnavailable]
    );
    // Said once, not on every retry.
    let again = Observed {
        status: p.status,
        ..obs
    };
    assert!(plan(&again).notes.is_empty());
}
