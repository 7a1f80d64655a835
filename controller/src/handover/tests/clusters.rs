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
        home_api_server: None,
    }
}

/// Blue running here in steady state, `spec.cluster` now `east` with shared savepoints.
/// Whether the plan `p` applies the child of `color`.
fn applies(p: &super::super::Plan, color: Color) -> bool {
    p.actions
        .iter()
        .any(|a| matches!(a, Action::ApplyChild { color: c, .. } if *c == color))
}

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
    assert!(applies(&p, Color::Blue), "{:?}", p.actions);
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
    assert!(applies(&p, Color::Blue), "{:?}", p.actions);
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
    assert!(applies(&p, Color::Green), "{:?}", p.actions);
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
    obs.cluster_down = Some(crate::observed::ClusterDown {
        colors: vec![Color::Green],
        why: "the cluster the green job runs in cannot be used".into(),
    });
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    // Only when it went away is recorded (for the abort after the grace, below).
    let mut kept = obs.status.transition.clone().expect("handover");
    kept.incoming_cluster_down_since = Some(time("2026-01-01T00:00:00Z"));
    assert_eq!(p.status.transition, Some(kept));
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

/// A handover to green in east in `phase` (W 70 000 proposed unless `Deploying`), east not
/// answering: green was not looked for.
fn green_in_east_unseen(phase: Phase) -> Observed {
    let toggle = (phase != Phase::Deploying).then_some(crate::fixtures::W);
    let mut obs = handover(phase, toggle);
    obs.status
        .clusters
        .set(Color::Green, Some(Box::new(east())));
    obs.green = None;
    obs.cluster_down = Some(crate::observed::ClusterDown {
        colors: vec![Color::Green],
        why: "the cluster the green job runs in (status.clusters.green) cannot be used: the cluster at https://east is not reachable".into(),
    });
    obs
}

/// `obs` after `p`: its status written, its ConfigMap write applied, at `now`.
fn after(obs: Observed, p: &super::super::Plan, now: &str) -> Observed {
    let mut next = at(obs, now);
    next.status = p.status.clone();
    for action in &p.actions {
        if let Action::WriteConfigMap(state) = action {
            next.configmap = ConfigMapObs::Valid(*state);
        }
    }
    next
}

#[test]
fn an_incoming_cluster_unusable_before_w_aborts_after_the_grace_and_blue_keeps_everything() {
    for phase in [Phase::Deploying, Phase::ConfirmingToggle] {
        // Within abortGracePeriod (10m): nothing is done, the time it went away is recorded.
        let obs = green_in_east_unseen(phase);
        let toggle = obs.status.transition.as_ref().and_then(|t| t.toggle);
        let p = plan(&obs);
        assert!(p.actions.is_empty(), "{phase:?}: {:?}", p.actions);
        assert_eq!(transition(&p).phase, phase);
        assert_eq!(
            transition(&p).incoming_cluster_down_since,
            Some(time("2026-01-01T00:00:00Z"))
        );
        let (_, reason, message) = condition_message(&p, ConditionType::Degraded);
        assert_eq!(reason, "ClusterUnavailable");
        assert!(message.contains("abortGracePeriod"), "{message}");
        assert_eq!(
            p.notes.iter().map(|n| n.reason).collect::<Vec<_>>(),
            [EventReason::ClusterUnavailable]
        );
        let p = plan(&after(obs.clone(), &p, "2026-01-01T00:09:00Z"));
        assert!(p.actions.is_empty(), "{phase:?}: {:?}", p.actions);
        assert!(p.notes.is_empty(), "said once: {:?}", p.notes);

        // Past the grace: aborted. Blue passes everything (FAILING), green, unseen, is not
        // taken for gone.
        let p = plan(&after(obs.clone(), &p, "2026-01-01T00:10:01Z"));
        assert_eq!(transition(&p).phase, Phase::Aborting, "{phase:?}");
        assert_eq!(
            p.actions,
            [write_configmap(
                1,
                Stage::Failing,
                Color::Green,
                toggle.map_or(Toggle::NotSet, Toggle::Proposed)
            )]
        );
        assert_eq!(p.status.failed_template_hash.as_deref(), Some("h2"));
        assert_eq!(p.status.clusters.of(Color::Green), Some(&east()));
        assert_eq!(
            condition(&p, ConditionType::Degraded),
            ("True", "ClusterUnavailable")
        );
        assert!(
            p.notes
                .iter()
                .any(|n| n.reason == EventReason::HandoverAborting),
            "{:?}",
            p.notes
        );

        // Still unusable: the abort waits, recorded (a restarted controller resumes it).
        let aborting = after(obs.clone(), &p, "2026-01-01T01:00:00Z");
        let p = plan(&aborting);
        assert!(p.actions.is_empty(), "{:?}", p.actions);
        assert_eq!(transition(&p).phase, Phase::Aborting);

        // East answers: green is deleted there, then the abort completes, blue RUNNING.
        let mut back = after(aborting, &p, "2026-01-01T01:00:10Z");
        back.cluster_down = None;
        back.green = Some(running("h2", 1, 0, None, i64::MIN));
        let p = plan(&back);
        assert_eq!(p.actions, [Action::DeleteChild(Color::Green)]);
        let mut gone = after(back, &p, "2026-01-01T01:00:20Z");
        gone.green = None;
        let p = plan(&gone);
        assert!(p.status.transition.is_none());
        assert_eq!(p.status.active_color, Some(Color::Blue));
        assert_eq!(p.status.clusters.of(Color::Green), None);
        assert_eq!(
            p.status.history.last().map(|h| h.outcome),
            Some(Outcome::Aborted)
        );
        assert!(
            p.actions.iter().any(|a| matches!(
                a,
                Action::WriteConfigMap(s) if s.stage == Stage::Running && s.active == Color::Blue
            )),
            "{:?}",
            p.actions
        );
    }
}

#[test]
fn an_incoming_cluster_that_answers_again_within_the_grace_restarts_the_count() {
    let obs = green_in_east_unseen(Phase::Deploying);
    let p = plan(&obs);
    let mut back = after(obs.clone(), &p, "2026-01-01T00:09:00Z");
    back.cluster_down = None;
    back.green = Some(running("h2", 1, 0, None, i64::MIN));
    let p = plan(&back);
    assert_eq!(transition(&p).incoming_cluster_down_since, None);
    // Away again: counted from now, not aborted a minute later.
    let p = plan(&after(obs, &p, "2026-01-01T00:10:01Z"));
    assert_eq!(transition(&p).phase, Phase::Deploying);
    assert_eq!(
        transition(&p).incoming_cluster_down_since,
        Some(time("2026-01-01T00:10:01Z"))
    );
}

#[test]
fn a_cluster_unusable_after_w_or_for_the_outgoing_job_is_waited_for_never_aborted() {
    // After W: the outgoing job has dropped what is above W; only forward.
    let obs = at(
        green_in_east_unseen(Phase::ToggleSet),
        "2026-01-02T00:00:00Z",
    );
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(p.status.transition, obs.status.transition);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "ClusterUnavailable")
    );
    // The outgoing job's cluster (or both): nothing can be decided.
    let mut obs = at(
        green_in_east_unseen(Phase::Deploying),
        "2026-01-02T00:00:00Z",
    );
    obs.status.clusters.set(Color::Blue, Some(Box::new(east())));
    obs.cluster_down.as_mut().expect("down").colors = vec![Color::Blue, Color::Green];
    obs.blue = None;
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(p.status.transition, obs.status.transition);
}

#[test]
fn an_incoming_child_deleted_by_hand_after_w_is_looked_for_where_it_ran() {
    // As in one cluster: not recreated from the handover's savepoint, a person recreates it
    // from its latest checkpoint, in east, where the controller keeps looking for it.
    let mut obs = handover(Phase::ToggleSet, Some(crate::fixtures::W));
    obs.status
        .clusters
        .set(Color::Green, Some(Box::new(east())));
    obs.green = None;
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "IncomingMissingAfterToggle")
    );
    assert_eq!(p.status.clusters.of(Color::Green), Some(&east()));
    // Before W it is forgotten and created again where spec.cluster says.
    let mut before = handover(Phase::Deploying, None);
    before
        .status
        .clusters
        .set(Color::Green, Some(Box::new(east())));
    before.spec.cluster = Some(Box::new(east()));
    let p = plan(&before);
    assert!(applies(&p, Color::Green), "{:?}", p.actions);
    assert_eq!(p.status.clusters.of(Color::Green), Some(&east()));
}
