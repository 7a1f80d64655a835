//! Generates the shared JSON test vectors from the decision table of `docs/protocol.md` (written
//! out below, independently of the implementation), checks the implementation against them, and
//! checks that the committed files under `protocol/vectors/` are exactly what is generated.
//!
//! After an intended change of the protocol: `BLUEGREEN_BLESS=1 cargo test -p bluegreen-protocol
//! --test vectors`, then review the diff of `protocol/vectors/`.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use bluegreen_protocol::{Color, CoordinationState, Decision, Stage, WatermarkStage, decide, keys};
use common::{TOGGLE_VALUES, probes, state, toggle};
use serde_json::{Value, json};

use Decision::{Drop as D, Hold as H, Pass as P};
use Stage::{ClearToTeardown, Failing, Initializing, Running, Transitioning};
use WatermarkStage::{NotSet, Set, WaitingForWatermark as Waiting};

/// The decision table of docs/protocol.md: (stage, watermark stage, is the gate's color the
/// `active-deployment-type`?) → (decision for event time <= W, decision for event time > W).
/// Without W both columns hold the decision for every record. Rows marked invalid are states
/// that do not parse: a gate without a previous state holds.
const TABLE: [(Stage, WatermarkStage, bool, Decision, Decision); 30] = [
    (Initializing, NotSet, true, P, P),
    (Initializing, NotSet, false, D, D),
    (Initializing, Waiting, true, H, H),  // invalid
    (Initializing, Waiting, false, H, H), // invalid
    (Initializing, Set, true, H, H),      // invalid
    (Initializing, Set, false, H, H),     // invalid
    (Running, NotSet, true, P, P),
    (Running, NotSet, false, D, D),
    (Running, Waiting, true, H, H),  // invalid
    (Running, Waiting, false, H, H), // invalid
    (Running, Set, true, H, H),      // invalid
    (Running, Set, false, H, H),     // invalid
    (Transitioning, NotSet, true, H, H),
    (Transitioning, NotSet, false, P, P),
    (Transitioning, Waiting, true, H, H),
    (Transitioning, Waiting, false, P, H),
    (Transitioning, Set, true, D, P),
    (Transitioning, Set, false, P, D),
    (ClearToTeardown, NotSet, true, H, H),   // invalid
    (ClearToTeardown, NotSet, false, H, H),  // invalid
    (ClearToTeardown, Waiting, true, H, H),  // invalid
    (ClearToTeardown, Waiting, false, H, H), // invalid
    (ClearToTeardown, Set, true, D, P),
    (ClearToTeardown, Set, false, P, D),
    (Failing, NotSet, true, D, D),
    (Failing, NotSet, false, P, P),
    (Failing, Waiting, true, D, D),
    (Failing, Waiting, false, P, P),
    (Failing, Set, true, H, H),  // invalid
    (Failing, Set, false, H, H), // invalid
];

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors")
}

fn decision_cases() -> Vec<Value> {
    let mut cases = Vec::new();
    for &(stage, wstage, is_active, at_or_below, above) in &TABLE {
        let ws: Vec<Option<i64>> = if wstage == NotSet {
            vec![None]
        } else {
            TOGGLE_VALUES.iter().copied().map(Some).collect()
        };
        for active in Color::ALL {
            let color = if is_active { *active } else { active.other() };
            for w in &ws {
                // to_data writes inconsistent cells as they are; they fail to parse.
                let data = state(stage, toggle(wstage, w.unwrap_or(0)), *active).to_data();
                let decisions: Vec<Value> = probes(*w)
                    .into_iter()
                    .map(|t| {
                        let expected = match w {
                            Some(w) if t > *w => above,
                            _ => at_or_below,
                        };
                        json!({ "event_time": t.to_string(), "decision": expected })
                    })
                    .collect();
                cases.push(
                    json!({ "configmap": data, "color": color.as_str(), "decisions": decisions }),
                );
            }
        }
    }
    cases
}

fn decisions_document() -> Value {
    json!({
        "description": "Gate decisions: parse `configmap` (as a gate with no previous state: a parse error means HOLD), then for a gate of `color` each `event_time` (a decimal i64 string, epoch milliseconds) gets `decision`.",
        "generated_by": "protocol/tests/vectors.rs (BLUEGREEN_BLESS=1 cargo test -p bluegreen-protocol --test vectors)",
        "cases": decision_cases(),
    })
}

fn valid_data() -> BTreeMap<String, String> {
    state(Transitioning, toggle(Set, 1_700_000_000_000), Color::Green).to_data()
}

fn with(key: &str, value: Option<&str>) -> BTreeMap<String, String> {
    let mut data = valid_data();
    match value {
        Some(v) => data.insert(key.to_owned(), v.to_owned()),
        None => data.remove(key),
    };
    data
}

/// Raw ConfigMap data → parsed state or the error: every key missing, every key with bad values,
/// inconsistent combinations, an unknown extra key, and every valid stage combination.
fn configmap_cases() -> Vec<Value> {
    let mut inputs: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    for key in keys::ALL {
        inputs.push((format!("missing {key}"), with(key, None)));
    }
    let bad: [(&str, &[&str]); 7] = [
        (keys::ACTIVE_DEPLOYMENT_TYPE, &["", "blue", "RED", " BLUE"]),
        (
            keys::DEPLOYMENT_DELETION_DELAY_MS,
            &["", "-1", "1.5", "+5", "10s", "18446744073709551616"],
        ),
        (keys::STAGE, &["", "running", "DONE"]),
        (
            keys::WATERMARK_TOGGLE_VALUE,
            &["", "-", "1e3", "+5", " 5", "9223372036854775808"],
        ),
        (keys::WATERMARK_STAGE, &["", "SET", "watermark_set"]),
        (keys::EPOCH, &["", "-3", "x", "18446744073709551616"]),
        (keys::PROTOCOL_VERSION, &["", "one", "2", "-1"]),
    ];
    for (key, values) in bad {
        for v in values {
            inputs.push((format!("{key} = {v:?}"), with(key, Some(v))));
        }
    }
    let mut inconsistent = state(Running, toggle(NotSet, 0), Color::Blue).to_data();
    inconsistent.insert(keys::WATERMARK_TOGGLE_VALUE.into(), "5".into());
    inputs.push(("RUNNING with a toggle value".into(), inconsistent));
    let mut extra = valid_data();
    extra.insert("is-first-deployment".into(), "false".into());
    extra.insert("x-future-key".into(), "anything".into());
    inputs.push(("unknown keys are ignored".into(), extra));
    for stage in Stage::ALL {
        for wstage in WatermarkStage::ALL {
            let data = state(*stage, toggle(*wstage, -42), Color::Blue).to_data();
            inputs.push((format!("{stage} with {wstage}"), data));
        }
    }
    inputs
        .into_iter()
        .map(|(name, data)| {
            let expect = match CoordinationState::from_data(&data) {
                Ok(s) => json!({ "state": state_json(&s) }),
                Err(e) => json!({ "error": { "kind": e.kind(), "key": e.key() } }),
            };
            json!({ "name": name, "configmap": data, "expect": expect })
        })
        .collect()
}

fn state_json(s: &CoordinationState) -> Value {
    json!({
        "active": s.active.as_str(),
        "deletion_delay_ms": s.deletion_delay_ms.to_string(),
        "stage": s.stage.as_str(),
        "watermark_stage": s.toggle.stage().as_str(),
        "toggle": s.toggle.value().map(|w| w.to_string()),
        "epoch": s.epoch.to_string(),
    })
}

fn configmaps_document() -> Value {
    json!({
        "description": "ConfigMap parsing: `configmap` parses to `expect.state`, or fails with `expect.error` (kind and key). 64-bit numbers are decimal strings.",
        "generated_by": "protocol/tests/vectors.rs (BLUEGREEN_BLESS=1 cargo test -p bluegreen-protocol --test vectors)",
        "cases": configmap_cases(),
    })
}

fn check_committed(file: &str, generated: &Value) {
    let path = vectors_dir().join(file);
    let text = serde_json::to_string_pretty(generated).expect("vectors serialise") + "\n";
    if std::env::var_os("BLUEGREEN_BLESS").is_some() {
        std::fs::write(&path, &text).expect("write vectors");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; generate it with BLUEGREEN_BLESS=1",
            path.display()
        )
    });
    assert!(
        committed == text,
        "{} differs from what the table generates; if the protocol changed on purpose, run \
         BLUEGREEN_BLESS=1 cargo test -p bluegreen-protocol --test vectors and review the diff",
        path.display()
    );
}

#[test]
fn committed_decision_vectors_are_generated_from_the_table() {
    check_committed("decisions.json", &decisions_document());
}

#[test]
fn committed_configmap_vectors_are_generated() {
    check_committed("configmaps.json", &configmaps_document());
}

#[test]
fn implementation_follows_every_decision_vector() {
    let text = std::fs::read_to_string(vectors_dir().join("decisions.json")).expect("read vectors");
    let doc: Value = serde_json::from_str(&text).expect("vectors are JSON");
    let mut checked = 0;
    for case in doc["cases"].as_array().expect("cases") {
        let data: BTreeMap<String, String> =
            serde_json::from_value(case["configmap"].clone()).expect("configmap data");
        let parsed = CoordinationState::from_data(&data).ok();
        let color: Color = case["color"].as_str().unwrap().parse().unwrap();
        for d in case["decisions"].as_array().expect("decisions") {
            let t: i64 = d["event_time"].as_str().unwrap().parse().unwrap();
            let expected: Decision = serde_json::from_value(d["decision"].clone()).unwrap();
            assert_eq!(decide(parsed.as_ref(), color, t), expected, "{case} at {t}");
            checked += 1;
        }
    }
    assert!(checked > 500, "only {checked} decision vectors");
}

#[test]
fn every_table_cell_and_boundary_is_covered() {
    let cases = decision_cases();
    for &(stage, wstage, ..) in &TABLE {
        for color in Color::ALL {
            let found = cases.iter().any(|c| {
                c["configmap"][keys::STAGE] == stage.as_str()
                    && c["configmap"][keys::WATERMARK_STAGE] == wstage.as_str()
                    && c["color"] == color.as_str()
            });
            assert!(found, "no vector for {stage} × {wstage} × {color}");
        }
    }
    let all: Vec<(&Value, &Value)> = cases
        .iter()
        .flat_map(|c| {
            c["decisions"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |d| (c, d))
        })
        .collect();
    for t in [i64::MIN, i64::MAX] {
        let t = t.to_string();
        assert!(
            all.iter()
                .any(|(_, d)| d["event_time"].as_str() == Some(t.as_str()))
        );
    }
    // W itself goes to the outgoing color.
    let at_w = all.iter().find(|(c, d)| {
        c["configmap"][keys::STAGE] == "TRANSITIONING"
            && c["configmap"][keys::WATERMARK_STAGE] == "WATERMARK_SET"
            && c["configmap"][keys::WATERMARK_TOGGLE_VALUE] == d["event_time"]
            && c["configmap"][keys::ACTIVE_DEPLOYMENT_TYPE] != c["color"]
    });
    assert_eq!(at_w.expect("vector at W").1["decision"], "PASS");
}
