//! `SharedState::accepted_data`: the raw ConfigMap data of the last accepted offer, which the
//! sidecar and the JNI shim serve verbatim to JVM gates.

use std::collections::BTreeMap;

use bluegreen_gate::{SharedState, StateOptions};
use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle};

fn running(epoch: u64) -> CoordinationState {
    CoordinationState {
        floor: None,
        active: Color::Blue,
        deletion_delay_ms: 0,
        stage: Stage::Running,
        toggle: Toggle::NotSet,
        epoch,
    }
}

fn current(shared: &SharedState) -> Option<(u64, BTreeMap<String, String>)> {
    shared
        .accepted_data()
        .borrow()
        .as_ref()
        .map(|(number, data)| (*number, (**data).clone()))
}

#[test]
fn accepted_data_is_numbered_by_change_and_never_shows_refused_data() {
    let shared = SharedState::new(StateOptions::default());
    assert_eq!(current(&shared), None);
    // A state offered without data (tests, the simulator) has no raw data.
    shared.offer(running(1)).expect("offer");
    assert_eq!(current(&shared), None);

    let first = running(2).to_data();
    shared.offer_data(&first).expect("accepted");
    assert_eq!(current(&shared), Some((1, first.clone())));
    let mut receiver = shared.accepted_data();
    receiver.borrow_and_update();

    // A replay (a probe, a re-list) is not a change.
    shared.offer_data(&first).expect("replay accepted");
    assert!(!receiver.has_changed().expect("sender alive"));

    // Refused data (older epoch, malformed value) never shows.
    assert!(shared.offer_data(&running(1).to_data()).is_err());
    let mut malformed = first.clone();
    malformed.insert("epoch".into(), "two".into());
    assert!(shared.offer_data(&malformed).is_err());
    assert!(!receiver.has_changed().expect("sender alive"));
    assert_eq!(current(&shared), Some((1, first.clone())));

    // Same state, a new unknown key: new raw data, new number.
    let mut annotated = first;
    annotated.insert("is-first-deployment".into(), "false".into());
    shared.offer_data(&annotated).expect("accepted");
    assert!(receiver.has_changed().expect("sender alive"));
    assert_eq!(current(&shared), Some((2, annotated)));
}
