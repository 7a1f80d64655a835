//! The floor: carried through the next handover, kept by an abort, cleared by hand.

use super::*;

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
    obs.green(running("h2", 1, 0, Some(5_000), 4_000))
}

#[test]
fn the_floor_is_carried_through_the_next_handover_and_w_is_proposed_above_it() {
    // Green's progress (5 s) + 1 min is below the floor (70 s): W = F + 1.
    let mut obs = steady_green_with_floor("h3");
    flink_of(&mut obs, Color::Green).savepoint =
        Some(SavepointObs::Completed("file:///sp/2".into()));
    let p = plan(&obs);
    assert_eq!(p.actions, vec![trigger(Color::Green, "h3", 2, 0)]);
    let mut next = obs.clone();
    next.status = p.status.clone();
    next.status
        .transition
        .as_mut()
        .unwrap()
        .savepoint_trigger_id = Some("t".into());
    next.configmap = ConfigMapObs::Valid(
        crate::handover::desired_configmap(&next.status, &next).expect("desired"),
    );
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
        crate::handover::desired_configmap(&deploying.status, &deploying).expect("desired"),
    );
    let deploying = ready_for_a_minute(deploying.blue(running("h3", 2, 0, None, i64::MIN)));
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
        incoming_cluster_down_since: None,
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
            write_configmap(2, Stage::Running, Color::Green, Toggle::NotSet),
            Action::ClearManualAction
        ],
        "step 10"
    );
    assert_eq!((p.status.floor, p.status.epoch), (None, 2));
    assert!(
        p.notes
            .iter()
            .any(|n| n.reason == EventReason::FloorCleared)
    );
    let mut during = handover(Phase::ToggleSet, Some(70_000));
    during.status.floor = Some(10_000);
    during.configmap = ConfigMapObs::Valid(
        crate::handover::desired_configmap(&during.status, &during).expect("desired"),
    );
    during.action = Some(ManualAction::ClearFloor);
    let p = plan(&during);
    assert_eq!(p.actions, vec![Action::ClearManualAction]);
    assert_eq!(p.status.floor, Some(10_000));
    assert!(
        p.notes
            .iter()
            .any(|n| n.warning && n.reason == EventReason::ActionRefused)
    );
}
