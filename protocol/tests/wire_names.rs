//! `protocol/vectors/wire-names.json` pins every constant of `bluegreen_protocol::wire`: the same
//! names, in the same order, with the same values. The Java tests (`WireNamesTest`) check the Java
//! library's constants against the same file. The file is written by hand: a changed value is a
//! change of the wire format and must show in its diff.

use std::path::PathBuf;

use bluegreen_protocol::wire::{env, flink_config, flink_deployment, metrics};
use serde_json::Value;

/// Every wire name: (its path under `bluegreen_protocol::wire`, its value).
const NAMES: [(&str, &str); 27] = [
    ("flink_config::COLOR", flink_config::COLOR),
    ("flink_config::CONFIGMAP", flink_config::CONFIGMAP),
    ("flink_config::NAMESPACE", flink_config::NAMESPACE),
    ("env::COLOR", env::COLOR),
    ("env::CONFIGMAP", env::CONFIGMAP),
    ("env::NAMESPACE", env::NAMESPACE),
    ("env::SIDECAR_URL", env::SIDECAR_URL),
    ("env::LISTEN", env::LISTEN),
    ("metrics::PASSED", metrics::PASSED),
    ("metrics::DROPPED", metrics::DROPPED),
    ("metrics::DROPPED_LATE", metrics::DROPPED_LATE),
    ("metrics::HELD", metrics::HELD),
    ("metrics::REFUSED_UPDATES", metrics::REFUSED_UPDATES),
    ("metrics::SOURCE_ERRORS", metrics::SOURCE_ERRORS),
    (
        "metrics::MAX_PASSED_EVENT_TIME",
        metrics::MAX_PASSED_EVENT_TIME,
    ),
    ("metrics::EPOCH", metrics::EPOCH),
    ("metrics::WATERMARK_STAGE", metrics::WATERMARK_STAGE),
    ("metrics::TOGGLE", metrics::TOGGLE),
    ("metrics::APPLIED_STATE", metrics::APPLIED_STATE),
    ("metrics::HELD_RECORDS", metrics::HELD_RECORDS),
    ("metrics::HELD_BYTES", metrics::HELD_BYTES),
    ("metrics::HELD_OLDEST_AGE_MS", metrics::HELD_OLDEST_AGE_MS),
    ("flink_deployment::GROUP", flink_deployment::GROUP),
    ("flink_deployment::VERSION", flink_deployment::VERSION),
    (
        "flink_deployment::API_VERSION",
        flink_deployment::API_VERSION,
    ),
    ("flink_deployment::KIND", flink_deployment::KIND),
    ("flink_deployment::PLURAL", flink_deployment::PLURAL),
];

/// The Java library's constant of each gate metric: `GateProcessFunction.<field>`.
const JAVA_METRICS: [(&str, &str); 14] = [
    ("metrics::PASSED", "METRIC_PASSED"),
    ("metrics::DROPPED", "METRIC_DROPPED"),
    ("metrics::DROPPED_LATE", "METRIC_DROPPED_LATE"),
    ("metrics::HELD", "METRIC_HELD"),
    ("metrics::REFUSED_UPDATES", "METRIC_REFUSED"),
    ("metrics::SOURCE_ERRORS", "METRIC_SOURCE_ERRORS"),
    ("metrics::MAX_PASSED_EVENT_TIME", "METRIC_MAX_PASSED"),
    ("metrics::EPOCH", "METRIC_EPOCH"),
    ("metrics::WATERMARK_STAGE", "METRIC_WATERMARK_STAGE"),
    ("metrics::TOGGLE", "METRIC_TOGGLE"),
    ("metrics::APPLIED_STATE", "METRIC_APPLIED_STATE"),
    ("metrics::HELD_RECORDS", "METRIC_HELD_RECORDS"),
    ("metrics::HELD_BYTES", "METRIC_HELD_BYTES"),
    ("metrics::HELD_OLDEST_AGE_MS", "METRIC_HELD_OLDEST_AGE"),
];

/// The Java constant that must hold the value of the wire name `name`, if any.
fn java(name: &str) -> Option<String> {
    JAVA_METRICS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, field)| format!("GateProcessFunction.{field}"))
}

fn committed() -> Vec<(String, String, Option<String>)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors/wire-names.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text).expect("wire-names.json is JSON");
    assert!(
        doc["description"].is_string(),
        "wire-names.json: description"
    );
    doc["cases"]
        .as_array()
        .expect("wire-names.json: cases")
        .iter()
        .map(|c| {
            let field = |key: &str| c[key].as_str().map(str::to_owned);
            (
                field("name").expect("a name"),
                field("value").expect("a value"),
                field("java"),
            )
        })
        .collect()
}

#[test]
fn the_vectors_list_every_wire_constant_with_its_value() {
    let expected: Vec<(String, String, Option<String>)> = NAMES
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned(), java(name)))
        .collect();
    let committed = committed();
    for (want, got) in expected.iter().zip(&committed) {
        assert_eq!(want, got, "protocol/vectors/wire-names.json");
    }
    assert_eq!(
        expected.len(),
        committed.len(),
        "protocol/vectors/wire-names.json lists {} names, bluegreen_protocol::wire has {}",
        committed.len(),
        expected.len()
    );
}

#[test]
fn wire_names_are_unique_within_their_kind() {
    for (i, (name, value)) in NAMES.iter().enumerate() {
        let kind = name.split("::").next();
        for (other, other_value) in &NAMES[i + 1..] {
            if other.split("::").next() == kind {
                assert_ne!(value, other_value, "{name} and {other}");
            }
        }
    }
}

#[test]
fn every_gate_metric_and_only_they_name_a_java_constant() {
    for (name, _) in NAMES {
        assert_eq!(
            name.starts_with("metrics::"),
            java(name).is_some(),
            "{name}: the Java constant"
        );
    }
    assert_eq!(
        bluegreen_protocol::GATE_REPORT_METRIC,
        metrics::APPLIED_STATE
    );
}
