//! Hand-edited ConfigMap values: every key, every way to get it wrong, gives an error that names
//! the key, quotes the value and says what was expected.

mod common;

use bluegreen_protocol::{Color, CoordinationState, ProtocolError, Stage, Toggle, keys};
use common::state;

fn edited(key: &str, value: &str) -> Result<CoordinationState, ProtocolError> {
    let mut data = state(Stage::Transitioning, Toggle::Set(1_000), Color::Green).to_data();
    data.insert(key.to_owned(), value.to_owned());
    CoordinationState::from_data(&data)
}

fn assert_names(key: &str, value: &str, expected_fragment: &str) {
    let err = edited(key, value).expect_err(&format!("{key} = {value:?} must be refused"));
    assert_eq!(err.key(), key, "{err}");
    let message = err.to_string();
    assert!(
        message.contains(&format!("`{key}`")),
        "message does not name the key: {message}"
    );
    assert!(
        message.contains(expected_fragment),
        "message lacks {expected_fragment:?}: {message}"
    );
}

#[test]
fn active_deployment_type_must_be_blue_or_green() {
    assert_names(keys::ACTIVE_DEPLOYMENT_TYPE, "blue", "one of BLUE, GREEN");
    assert_names(keys::ACTIVE_DEPLOYMENT_TYPE, "", "\"\"");
}

#[test]
fn deletion_delay_must_be_a_non_negative_integer() {
    assert_names(keys::DEPLOYMENT_DELETION_DELAY_MS, "-5", "non-negative");
    assert_names(keys::DEPLOYMENT_DELETION_DELAY_MS, "5m", "\"5m\"");
}

#[test]
fn stage_must_be_a_flip_504_stage() {
    assert_names(keys::STAGE, "Running", "one of INITIALIZING, RUNNING");
}

#[test]
fn watermark_toggle_value_must_be_an_i64_when_set() {
    assert_names(
        keys::WATERMARK_TOGGLE_VALUE,
        "soon",
        "event time in epoch milliseconds",
    );
    assert_names(
        keys::WATERMARK_TOGGLE_VALUE,
        "9223372036854775808",
        "within i64",
    );
    assert_names(keys::WATERMARK_TOGGLE_VALUE, "", "\"\"");
}

#[test]
fn watermark_toggle_value_may_be_negative() {
    let parsed =
        edited(keys::WATERMARK_TOGGLE_VALUE, "-86400000").expect("negative W is an event time");
    assert_eq!(parsed.toggle, Toggle::Set(-86_400_000));
}

#[test]
fn watermark_stage_must_be_a_flip_504_watermark_stage() {
    assert_names(keys::WATERMARK_STAGE, "SET", "one of WATERMARK_NOT_SET");
}

#[test]
fn watermark_stage_must_agree_with_the_stage() {
    let mut data = state(Stage::Running, Toggle::NotSet, Color::Blue).to_data();
    data.insert(keys::WATERMARK_STAGE.into(), "WATERMARK_SET".into());
    data.insert(keys::WATERMARK_TOGGLE_VALUE.into(), "5".into());
    let err = CoordinationState::from_data(&data).expect_err("RUNNING with W set");
    assert_eq!(err.key(), keys::WATERMARK_STAGE);
    assert!(
        err.to_string()
            .contains("RUNNING require WATERMARK_NOT_SET"),
        "{err}"
    );
}

#[test]
fn a_toggle_value_without_a_watermark_stage_is_refused() {
    let mut data = state(Stage::Transitioning, Toggle::NotSet, Color::Blue).to_data();
    data.insert(keys::WATERMARK_TOGGLE_VALUE.into(), "5".into());
    let err = CoordinationState::from_data(&data).expect_err("W without stage");
    assert_eq!(err.key(), keys::WATERMARK_TOGGLE_VALUE);
}

#[test]
fn epoch_must_be_a_non_negative_integer() {
    assert_names(keys::EPOCH, "-1", "non-negative");
    assert_names(keys::EPOCH, "1.0", "\"1.0\"");
}

#[test]
fn protocol_version_must_be_supported() {
    assert_names(keys::PROTOCOL_VERSION, "2", "upgrade the gate");
    assert_names(keys::PROTOCOL_VERSION, "v1", "non-negative");
}

#[test]
fn every_missing_required_key_is_named() {
    // `floor` is optional: ConfigMaps written before it existed have none.
    for key in keys::ALL.into_iter().filter(|k| *k != keys::FLOOR) {
        let mut data = state(Stage::Running, Toggle::NotSet, Color::Blue).to_data();
        data.remove(key);
        let err = CoordinationState::from_data(&data).expect_err(key);
        assert_eq!(err.key(), key);
        assert!(err.to_string().contains("is missing"), "{err}");
    }
}

#[test]
fn floor_must_be_an_event_time_or_empty() {
    assert_names(keys::FLOOR, "soon", "event time in epoch milliseconds");
    assert_names(keys::FLOOR, "+5", "\"+5\"");
    assert_names(keys::FLOOR, "9223372036854775808", "within i64");
    assert_eq!(edited(keys::FLOOR, "").map(|s| s.floor), Ok(None));
    assert_eq!(edited(keys::FLOOR, "-7").map(|s| s.floor), Ok(Some(-7)));
}

#[test]
fn floor_must_be_below_w() {
    // The edited state has W = 1000.
    assert_eq!(edited(keys::FLOOR, "999").map(|s| s.floor), Ok(Some(999)));
    assert_names(keys::FLOOR, "1000", "below W");
    assert_names(keys::FLOOR, "9223372036854775807", "below W");
    let mut proposed = state(Stage::Transitioning, Toggle::Proposed(5), Color::Blue);
    proposed.floor = Some(5);
    assert_eq!(proposed.validate().map_err(|e| e.key()), Err(keys::FLOOR));
    proposed.floor = Some(4);
    assert_eq!(proposed.validate(), Ok(()));
}

#[test]
fn initializing_has_no_floor() {
    let mut first = state(Stage::Initializing, Toggle::NotSet, Color::Blue);
    first.floor = Some(0);
    let err = CoordinationState::from_data(&first.to_data()).expect_err("floor in INITIALIZING");
    assert_eq!(err.key(), keys::FLOOR, "{err}");
    assert!(err.to_string().contains("INITIALIZING"), "{err}");
    let mut running = state(Stage::Running, Toggle::NotSet, Color::Blue);
    running.floor = Some(i64::MAX);
    assert_eq!(
        CoordinationState::from_data(&running.to_data()),
        Ok(running)
    );
}
