//! Generates the shared JSON test vectors from the decision table of `docs/protocol.md` (written
//! out below, independently of the implementation), checks the implementation against them, and
//! checks that the committed files under `protocol/vectors/` are exactly what is generated.
//!
//! After an intended change of the protocol: `BLUEGREEN_BLESS=1 cargo test -p bluegreen-protocol
//! --test vectors`, then review the diff of `protocol/vectors/`.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use bluegreen_protocol::{
    Color, CoordinationState, Decision, GateReport, Stage, WatermarkStage, decide, keys,
};
use common::{TOGGLE_VALUES, probes, state, toggle};
use serde_json::{Value, json};

use Decision::{Drop as D, Hold as H, Pass as P};
use Stage::{ClearToTeardown, Failing, Initializing, Running, Transitioning};
use WatermarkStage::{NotSet, Set, WaitingForWatermark as Waiting};

/// The decision table of docs/protocol.md: (stage, watermark stage, is the gate's color the
/// `active-deployment-type`?, is the combination valid?) → (decision for event time <= W,
/// decision for event time > W). Without W both columns hold the decision for every record.
/// Invalid rows are states that do not parse: a gate without a previous state holds.
///
/// The floor F on top: a valid state with a valid floor (none in INITIALIZING, below W) drops
/// every `t <= F`; a state with an invalid floor does not parse and holds.
const TABLE: [(Stage, WatermarkStage, bool, bool, Decision, Decision); 30] = [
    (Initializing, NotSet, true, true, P, P),
    (Initializing, NotSet, false, true, D, D),
    (Initializing, Waiting, true, false, H, H),
    (Initializing, Waiting, false, false, H, H),
    (Initializing, Set, true, false, H, H),
    (Initializing, Set, false, false, H, H),
    (Running, NotSet, true, true, P, P),
    (Running, NotSet, false, true, D, D),
    (Running, Waiting, true, false, H, H),
    (Running, Waiting, false, false, H, H),
    (Running, Set, true, false, H, H),
    (Running, Set, false, false, H, H),
    (Transitioning, NotSet, true, true, H, H),
    (Transitioning, NotSet, false, true, P, P),
    (Transitioning, Waiting, true, true, H, H),
    (Transitioning, Waiting, false, true, P, H),
    (Transitioning, Set, true, true, D, P),
    (Transitioning, Set, false, true, P, D),
    (ClearToTeardown, NotSet, true, false, H, H),
    (ClearToTeardown, NotSet, false, false, H, H),
    (ClearToTeardown, Waiting, true, false, H, H),
    (ClearToTeardown, Waiting, false, false, H, H),
    (ClearToTeardown, Set, true, true, D, P),
    (ClearToTeardown, Set, false, true, P, D),
    (Failing, NotSet, true, true, D, D),
    (Failing, NotSet, false, true, P, P),
    (Failing, Waiting, true, true, D, D),
    (Failing, Waiting, false, true, P, P),
    (Failing, Set, true, false, H, H),
    (Failing, Set, false, false, H, H),
];

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors")
}

/// The floors to try with a row: none, the i64 bounds and the neighbours of W (or of the other
/// toggle values when there is no W). Invalid ones (F >= W, any F in INITIALIZING) included.
fn floors_for(w: Option<i64>) -> Vec<Option<i64>> {
    let mut floors: Vec<Option<i64>> = vec![None, Some(i64::MIN), Some(i64::MAX)];
    match w {
        Some(w) => floors.extend(
            [w.saturating_sub(1), w, w.saturating_add(1)]
                .into_iter()
                .map(Some),
        ),
        None => floors.extend(TOGGLE_VALUES.iter().copied().map(Some)),
    }
    floors.sort_unstable();
    floors.dedup();
    floors
}

/// The expected decision, from the table row and the floor rule (written independently of the
/// implementation).
fn expected(
    (stage, valid, at_or_below, above): (Stage, bool, Decision, Decision),
    w: Option<i64>,
    floor: Option<i64>,
    t: i64,
) -> Decision {
    let floor_valid = match (stage, floor, w) {
        (Initializing, Some(_), _) => false,
        (_, Some(f), Some(w)) => f < w,
        (_, None, _) | (_, Some(_), None) => true,
    };
    if !valid || !floor_valid {
        return H;
    }
    if floor.is_some_and(|f| t <= f) {
        return D;
    }
    match w {
        Some(w) if t > w => above,
        _ => at_or_below,
    }
}

fn decision_cases() -> Vec<Value> {
    let mut cases = Vec::new();
    for &(stage, wstage, is_active, valid, at_or_below, above) in &TABLE {
        let ws: Vec<Option<i64>> = if wstage == NotSet {
            vec![None]
        } else {
            TOGGLE_VALUES.iter().copied().map(Some).collect()
        };
        for active in Color::ALL {
            let color = if is_active { *active } else { active.other() };
            for w in &ws {
                for floor in floors_for(*w) {
                    // to_data writes inconsistent cells as they are; they fail to parse.
                    let mut s = state(stage, toggle(wstage, w.unwrap_or(0)), *active);
                    s.floor = floor;
                    let mut ts = probes(*w);
                    if let Some(f) = floor {
                        ts.extend([f.saturating_sub(1), f, f.saturating_add(1)]);
                        ts.sort_unstable();
                        ts.dedup();
                    }
                    let decisions: Vec<Value> = ts
                        .into_iter()
                        .map(|t| {
                            let d = expected((stage, valid, at_or_below, above), *w, floor, t);
                            json!({ "event_time": t.to_string(), "decision": d })
                        })
                        .collect();
                    cases.push(json!({
                        "configmap": s.to_data(),
                        "color": color.as_str(),
                        "decisions": decisions,
                    }));
                }
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
    let bad: [(&str, &[&str]); 8] = [
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
        (
            keys::FLOOR,
            &["-", "1e3", "+5", " 5", "9223372036854775808", "none"],
        ),
    ];
    for (key, values) in bad {
        for v in values {
            inputs.push((format!("{key} = {v:?}"), with(key, Some(v))));
        }
    }
    let mut inconsistent = state(Running, toggle(NotSet, 0), Color::Blue).to_data();
    inconsistent.insert(keys::WATERMARK_TOGGLE_VALUE.into(), "5".into());
    inputs.push(("RUNNING with a toggle value".into(), inconsistent));
    // The floor: empty is none; it must be below W and absent in INITIALIZING (W is 1700000000000).
    for floor in [
        "",
        "-9223372036854775808",
        "-1",
        "1699999999999",
        "1700000000000",
        "1700000000001",
        "9223372036854775807",
    ] {
        inputs.push((
            format!("floor = {floor:?} with W set"),
            with(keys::FLOOR, Some(floor)),
        ));
        let mut proposed = with(keys::FLOOR, Some(floor));
        proposed.insert(keys::WATERMARK_STAGE.into(), Waiting.as_str().into());
        inputs.push((format!("floor = {floor:?} with W proposed"), proposed));
    }
    for stage in [Initializing, Running] {
        for floor in ["", "0", "9223372036854775807"] {
            let mut data = state(stage, toggle(NotSet, 0), Color::Blue).to_data();
            data.insert(keys::FLOOR.into(), floor.into());
            inputs.push((format!("{stage} with floor = {floor:?}"), data));
        }
    }
    // protocol-version is read as a u64: every other number than 1 is unsupported, beyond u64 invalid.
    for v in ["18446744073709551615", "18446744073709551616", "1 ", "0x1"] {
        inputs.push((
            format!("{} = {v:?}", keys::PROTOCOL_VERSION),
            with(keys::PROTOCOL_VERSION, Some(v)),
        ));
    }
    for (name, data, _) in several_errors() {
        inputs.push((name.to_owned(), data));
    }
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

/// A named ConfigMap and the error kind and key it must get.
type ErrorCase = (
    &'static str,
    BTreeMap<String, String>,
    (&'static str, &'static str),
);

/// ConfigMaps with several faults and the one error each must get: the first in the order of
/// docs/protocol.md ("Which error a bad ConfigMap gets"), written out by hand.
fn several_errors() -> Vec<ErrorCase> {
    let edit = |edits: &[(&str, Option<&str>)]| {
        let mut data = valid_data();
        for (key, value) in edits {
            match value {
                Some(v) => data.insert((*key).to_owned(), (*v).to_owned()),
                None => data.remove(*key),
            };
        }
        data
    };
    vec![
        (
            "several errors: an unsupported version wins over a bad stage",
            edit(&[
                (keys::PROTOCOL_VERSION, Some("2")),
                (keys::STAGE, Some("DONE")),
            ]),
            ("UnsupportedVersion", keys::PROTOCOL_VERSION),
        ),
        (
            "several errors: a missing version wins over a missing epoch",
            edit(&[(keys::PROTOCOL_VERSION, None), (keys::EPOCH, None)]),
            ("MissingKey", keys::PROTOCOL_VERSION),
        ),
        (
            "several errors: the active color before the deletion delay",
            edit(&[
                (keys::ACTIVE_DEPLOYMENT_TYPE, Some("RED")),
                (keys::DEPLOYMENT_DELETION_DELAY_MS, Some("-1")),
            ]),
            ("InvalidValue", keys::ACTIVE_DEPLOYMENT_TYPE),
        ),
        (
            "several errors: the deletion delay before a missing stage",
            edit(&[
                (keys::DEPLOYMENT_DELETION_DELAY_MS, Some("10s")),
                (keys::STAGE, None),
            ]),
            ("InvalidValue", keys::DEPLOYMENT_DELETION_DELAY_MS),
        ),
        (
            "several errors: the stage before the watermark stage and the epoch",
            edit(&[
                (keys::STAGE, Some("running")),
                (keys::WATERMARK_STAGE, Some("SET")),
                (keys::EPOCH, Some("x")),
            ]),
            ("InvalidValue", keys::STAGE),
        ),
        (
            "several errors: the epoch before the toggle value",
            edit(&[
                (keys::EPOCH, Some("-3")),
                (keys::WATERMARK_TOGGLE_VALUE, Some("1e3")),
            ]),
            ("InvalidValue", keys::EPOCH),
        ),
        (
            "several errors: the toggle value before the floor",
            edit(&[
                (keys::WATERMARK_TOGGLE_VALUE, Some("+5")),
                (keys::FLOOR, Some("none")),
            ]),
            ("InvalidValue", keys::WATERMARK_TOGGLE_VALUE),
        ),
        (
            "several errors: a bad floor before stages that contradict each other",
            edit(&[
                (keys::STAGE, Some("INITIALIZING")),
                (keys::FLOOR, Some("x")),
            ]),
            ("InvalidValue", keys::FLOOR),
        ),
        (
            "several errors: contradicting stages before a floor above W",
            edit(&[
                (keys::STAGE, Some("CLEAR_TO_TEARDOWN")),
                (keys::WATERMARK_STAGE, Some("WAITING_FOR_WATERMARK")),
                (keys::FLOOR, Some("1700000000001")),
            ]),
            ("Inconsistent", keys::WATERMARK_STAGE),
        ),
    ]
}

#[test]
fn several_errors_get_the_first_in_the_documented_order() {
    for (name, data, (kind, key)) in several_errors() {
        let e = CoordinationState::from_data(&data).expect_err(name);
        assert_eq!((e.kind(), e.key()), (kind, key), "{name}");
    }
}

fn state_json(s: &CoordinationState) -> Value {
    json!({
        "active": s.active.as_str(),
        "deletion_delay_ms": s.deletion_delay_ms.to_string(),
        "stage": s.stage.as_str(),
        "watermark_stage": s.toggle.stage().as_str(),
        "toggle": s.toggle.value().map(|w| w.to_string()),
        "epoch": s.epoch.to_string(),
        "floor": s.floor.map(|f| f.to_string()),
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

/// An applied state's cells: epoch, stage, active, watermark-stage code, toggle, floor.
type AppliedCells = (
    &'static str,
    &'static str,
    &'static str,
    i8,
    Option<&'static str>,
    Option<&'static str>,
);

/// What a report line parses to, written out by hand (independently of the implementation).
enum Expect {
    /// The fields: epoch, stage, active, watermark-stage code, toggle, floor (all `None` before a
    /// state is applied), max-passed, watermark (`None` = none), idle, color, problem.
    Fields {
        applied: Option<AppliedCells>,
        max_passed: Option<&'static str>,
        watermark: Option<&'static str>,
        idle: bool,
        /// The gate's own `color` (`None` without the key).
        color: Option<&'static str>,
        /// The decoded `problem` (`None` without the key).
        problem: Option<&'static str>,
    },
    /// The error kind and the key it names.
    Error(&'static str, &'static str),
}

const MIN: &str = "-9223372036854775808";

/// `bluegreenGateAppliedState` lines → parsed fields or the error (docs/protocol.md, "The gates'
/// acknowledgement").
#[allow(clippy::too_many_lines)] // one row per case
fn report_table() -> Vec<(&'static str, String, Expect)> {
    use Expect::{Error, Fields};
    let base = |rest: &str| format!("epoch=7 stage=TRANSITIONING active=GREEN {rest}");
    let proposed = Some(("7", "TRANSITIONING", "GREEN", 1, Some("1000"), None));
    vec![
        (
            "proposal acknowledged",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false"),
            Fields { applied: proposed, max_passed: Some("998"), watermark: Some("995"), idle: false, color: None, problem: None },
        ),
        (
            "no state applied yet, nothing passed, no watermark",
            format!("epoch= stage= active= watermark-stage=-1 toggle= floor= max-passed={MIN} watermark={MIN} idle=false"),
            Fields { applied: None, max_passed: None, watermark: None, idle: false, color: None, problem: None },
        ),
        (
            "no state applied yet but records restored and idle",
            "epoch= stage= active= watermark-stage=-1 toggle= floor= max-passed=5 watermark=-3 idle=true".to_owned(),
            Fields { applied: None, max_passed: Some("5"), watermark: Some("-3"), idle: true, color: None, problem: None },
        ),
        (
            "running under a floor",
            format!("epoch=0 stage=RUNNING active=BLUE watermark-stage=0 toggle= floor=-1000 max-passed={MIN} watermark=9223372036854775807 idle=false"),
            Fields { applied: Some(("0", "RUNNING", "BLUE", 0, None, Some("-1000"))), max_passed: None, watermark: Some("9223372036854775807"), idle: false, color: None, problem: None },
        ),
        (
            "W set at the i64 bounds, epoch at u64::MAX",
            format!("epoch=18446744073709551615 stage=CLEAR_TO_TEARDOWN active=BLUE watermark-stage=2 toggle=9223372036854775807 floor={MIN} max-passed=9223372036854775807 watermark={MIN} idle=true"),
            Fields { applied: Some(("18446744073709551615", "CLEAR_TO_TEARDOWN", "BLUE", 2, Some("9223372036854775807"), Some(MIN))), max_passed: Some("9223372036854775807"), watermark: None, idle: true, color: None, problem: None },
        ),
        (
            "unknown keys appended are ignored",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false lag=12 x-future"),
            Fields { applied: proposed, max_passed: Some("998"), watermark: Some("995"), idle: false, color: None, problem: None },
        ),
        (
            "a gate whose state source fails: problem percent-encoded after idle",
            format!("epoch= stage= active= watermark-stage=-1 toggle= floor= max-passed={MIN} watermark={MIN} idle=false problem=state%20source:%20sidecar%20http://127.0.0.1:8787/v1/state?wait=30000ms:%20java.net.ConnectException%20%E2%80%94%20100%25"),
            Fields { applied: None, max_passed: None, watermark: None, idle: false, color: None, problem: Some("state source: sidecar http://127.0.0.1:8787/v1/state?wait=30000ms: java.net.ConnectException \u{2014} 100%") },
        ),
        (
            "a refused update among unknown trailing keys",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false lag=12 problem=refused%20update:%20epoch%206%20is%20older x-future"),
            Fields { applied: proposed, max_passed: Some("998"), watermark: Some("995"), idle: false, color: None, problem: Some("refused update: epoch 6 is older") },
        ),
        (
            "a gate's own color after idle",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false color=BLUE"),
            Fields { applied: proposed, max_passed: Some("998"), watermark: Some("995"), idle: false, color: Some("BLUE"), problem: None },
        ),
        (
            "color and problem after idle among unknown keys",
            format!("epoch= stage= active= watermark-stage=-1 toggle= floor= max-passed={MIN} watermark={MIN} idle=false lag=1 color=GREEN problem=no%20state x-future"),
            Fields { applied: None, max_passed: None, watermark: None, idle: false, color: Some("GREEN"), problem: Some("no state") },
        ),
        (
            "a color that is no color",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false color=RED"),
            Error("InvalidValue", "color"),
        ),
        (
            "an empty color",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false color="),
            Error("InvalidValue", "color"),
        ),
        ("empty line", String::new(), Error("MissingKey", "epoch")),
        (
            "truncated after floor",
            base("watermark-stage=1 toggle=1000 floor="),
            Error("MissingKey", "max-passed"),
        ),
        (
            "idle missing",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995"),
            Error("MissingKey", "idle"),
        ),
        (
            "tabs and runs of spaces between the keys",
            "\tepoch=7  stage=TRANSITIONING\tactive=GREEN \n watermark-stage=1\ttoggle=1000 floor= max-passed=998\r\nwatermark=995 idle=false ".to_owned(),
            Fields { applied: proposed, max_passed: Some("998"), watermark: Some("995"), idle: false, color: None, problem: None },
        ),
        (
            "a misspelt key in place of a known one",
            base("watermark-stage=1 toggle=1000 flor= max-passed=998 watermark=995 idle=false"),
            Error("UnexpectedKey", "floor"),
        ),
        (
            "keys out of order",
            "stage=TRANSITIONING epoch=7 active=GREEN watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false".to_owned(),
            Error("UnexpectedKey", "epoch"),
        ),
        (
            "old spelling of a key",
            base("watermark-stage=1 toggle=1000 floor= maxPassed=998 watermark=995 idle=false"),
            Error("UnexpectedKey", "max-passed"),
        ),
        (
            "key without =",
            base("watermark-stage=1 toggle=1000 floor max-passed=998 watermark=995 idle=false"),
            Error("UnexpectedKey", "floor"),
        ),
        (
            "negative epoch",
            "epoch=-1 stage=RUNNING active=BLUE watermark-stage=0 toggle= floor= max-passed=0 watermark=0 idle=false".to_owned(),
            Error("InvalidValue", "epoch"),
        ),
        (
            "epoch beyond u64",
            "epoch=18446744073709551616 stage=RUNNING active=BLUE watermark-stage=0 toggle= floor= max-passed=0 watermark=0 idle=false".to_owned(),
            Error("InvalidValue", "epoch"),
        ),
        (
            "lower-case stage",
            "epoch=1 stage=running active=BLUE watermark-stage=0 toggle= floor= max-passed=0 watermark=0 idle=false".to_owned(),
            Error("InvalidValue", "stage"),
        ),
        (
            "unknown color",
            "epoch=1 stage=RUNNING active=RED watermark-stage=0 toggle= floor= max-passed=0 watermark=0 idle=false".to_owned(),
            Error("InvalidValue", "active"),
        ),
        (
            "watermark stage spelled out",
            base("watermark-stage=WATERMARK_SET toggle=1000 floor= max-passed=998 watermark=995 idle=false"),
            Error("InvalidValue", "watermark-stage"),
        ),
        (
            "watermark stage out of range",
            base("watermark-stage=3 toggle=1000 floor= max-passed=998 watermark=995 idle=false"),
            Error("InvalidValue", "watermark-stage"),
        ),
        (
            "toggle with a plus sign",
            base("watermark-stage=1 toggle=+1000 floor= max-passed=998 watermark=995 idle=false"),
            Error("InvalidValue", "toggle"),
        ),
        (
            "floor beyond i64",
            base("watermark-stage=1 toggle=1000 floor=9223372036854775808 max-passed=998 watermark=995 idle=false"),
            Error("InvalidValue", "floor"),
        ),
        (
            "max-passed empty (never a silent 0)",
            base("watermark-stage=1 toggle=1000 floor= max-passed= watermark=995 idle=false"),
            Error("InvalidValue", "max-passed"),
        ),
        (
            "max-passed as a fraction",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998.5 watermark=995 idle=false"),
            Error("InvalidValue", "max-passed"),
        ),
        (
            "watermark empty",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998 watermark= idle=false"),
            Error("InvalidValue", "watermark"),
        ),
        (
            "idle capitalised",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=True"),
            Error("InvalidValue", "idle"),
        ),
        (
            "toggle set while NOT_SET",
            base("watermark-stage=0 toggle=1000 floor= max-passed=998 watermark=995 idle=false"),
            Error("Inconsistent", "toggle"),
        ),
        (
            "toggle empty while SET",
            base("watermark-stage=2 toggle= floor= max-passed=998 watermark=995 idle=false"),
            Error("Inconsistent", "toggle"),
        ),
        (
            "epoch without a stage",
            "epoch=3 stage= active= watermark-stage=-1 toggle= floor= max-passed=0 watermark=0 idle=false".to_owned(),
            Error("Inconsistent", "stage"),
        ),
        (
            "state without a watermark stage",
            base("watermark-stage=-1 toggle= floor= max-passed=998 watermark=995 idle=false"),
            Error("Inconsistent", "watermark-stage"),
        ),
        (
            "problem with a cut escape",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false problem=sidecar%2"),
            Error("InvalidValue", "problem"),
        ),
        (
            "problem with a non-hex escape",
            base("watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false problem=%ZZ"),
            Error("InvalidValue", "problem"),
        ),
        (
            "floor before any state",
            "epoch= stage= active= watermark-stage=-1 toggle= floor=5 max-passed=0 watermark=0 idle=false".to_owned(),
            Error("Inconsistent", "floor"),
        ),
    ]
}

fn opt_json(v: Option<&str>) -> Value {
    v.map_or(Value::Null, |s| json!(s))
}

fn gate_report_cases() -> Vec<Value> {
    report_table()
        .into_iter()
        .map(|(name, line, expect)| {
            let expect = match expect {
                Expect::Fields {
                    applied,
                    max_passed,
                    watermark,
                    idle,
                    color,
                    problem,
                } => {
                    let (epoch, stage, active, ws, toggle, floor) = match applied {
                        Some((epoch, stage, active, ws, toggle, floor)) => {
                            (Some(epoch), Some(stage), Some(active), ws, toggle, floor)
                        }
                        None => (None, None, None, -1, None, None),
                    };
                    json!({ "report": {
                        "epoch": opt_json(epoch),
                        "stage": opt_json(stage),
                        "active": opt_json(active),
                        "watermark_stage": ws,
                        "toggle": opt_json(toggle),
                        "floor": opt_json(floor),
                        "max_passed": opt_json(max_passed),
                        "watermark": opt_json(watermark),
                        "idle": idle,
                        "color": opt_json(color),
                        "problem": opt_json(problem),
                    }})
                }
                Expect::Error(kind, key) => json!({ "error": { "kind": kind, "key": key } }),
            };
            json!({ "name": name, "line": line, "expect": expect })
        })
        .collect()
}

fn gate_reports_document() -> Value {
    json!({
        "description": "bluegreenGateAppliedState lines: `line` parses to `expect.report` (null = empty on the wire, or i64::MIN for max_passed and watermark; color: the gate's own `color` token after idle, null without one; problem: the decoded `problem` token after idle, null without one), or fails with `expect.error` (kind and key). 64-bit numbers are decimal strings.",
        "generated_by": "protocol/tests/vectors.rs (BLUEGREEN_BLESS=1 cargo test -p bluegreen-protocol --test vectors)",
        "cases": gate_report_cases(),
    })
}

#[test]
fn committed_gate_report_vectors_are_generated_from_the_table() {
    check_committed("gate-reports.json", &gate_reports_document());
}

#[test]
fn implementation_follows_every_gate_report_vector() {
    let text =
        std::fs::read_to_string(vectors_dir().join("gate-reports.json")).expect("read vectors");
    let doc: Value = serde_json::from_str(&text).expect("vectors are JSON");
    let cases = doc["cases"].as_array().expect("cases");
    for case in cases {
        let line = case["line"].as_str().expect("line");
        let parsed = line.parse::<GateReport>();
        match (&parsed, case["expect"].get("report")) {
            (Ok(r), Some(want)) => {
                let a = r.applied;
                let got = json!({
                    "epoch": a.map(|a| a.epoch.to_string()),
                    "stage": a.map(|a| a.stage.as_str()),
                    "active": a.map(|a| a.active.as_str()),
                    "watermark_stage": a.map_or(-1, |a| match a.toggle.stage() {
                        WatermarkStage::NotSet => 0,
                        WatermarkStage::WaitingForWatermark => 1,
                        WatermarkStage::Set => 2,
                    }),
                    "toggle": a.and_then(|a| a.toggle.value()).map(|w| w.to_string()),
                    "floor": a.and_then(|a| a.floor).map(|f| f.to_string()),
                    "max_passed": r.max_passed.map(|v| v.to_string()),
                    "watermark": r.watermark.map(|v| v.to_string()),
                    "idle": r.idle,
                    "color": r.color.map(Color::as_str),
                    "problem": r.problem,
                });
                assert_eq!(&got, want, "{line:?}");
                // Writing the parsed report gives the line back (single spaces, without ignored
                // trailing keys).
                let written = r.to_string();
                let core = written
                    .split(" color=")
                    .next()
                    .and_then(|c| c.split(" problem=").next())
                    .unwrap_or_default();
                let spaced = line.split_ascii_whitespace().collect::<Vec<_>>().join(" ");
                assert!(spaced.starts_with(core), "{line:?} vs {r}");
                assert_eq!(written.parse::<GateReport>().as_ref(), Ok(r), "{written:?}");
            }
            (Err(e), None) => {
                let want = &case["expect"]["error"];
                assert_eq!(
                    (e.kind(), e.key()),
                    (
                        want["kind"].as_str().unwrap(),
                        want["key"].as_str().unwrap()
                    ),
                    "{line:?}: {e}"
                );
                assert!(e.to_string().contains(e.key()), "{e}");
            }
            _ => panic!("{line:?}: got {parsed:?}, expected {}", case["expect"]),
        }
    }
    assert!(
        cases.len() >= 25,
        "only {} gate report vectors",
        cases.len()
    );
}

/// The floor parse cases of configmaps.json, expected by hand: the floor parsed, or the error's
/// kind and key.
#[test]
fn floor_configmap_vectors_follow_the_spec() {
    let floor = |v: Option<&str>| json!({ "floor": v });
    let refused = |kind: &str, key: &str| json!({ "error": { "kind": kind, "key": key } });
    let table: [(&str, Value); 16] = [
        ("floor = \"\" with W set", floor(None)),
        (
            "floor = \"-9223372036854775808\" with W set",
            floor(Some("-9223372036854775808")),
        ),
        (
            "floor = \"1699999999999\" with W set",
            floor(Some("1699999999999")),
        ),
        (
            "floor = \"1700000000000\" with W set",
            refused("Inconsistent", "floor"),
        ),
        (
            "floor = \"1700000000001\" with W proposed",
            refused("Inconsistent", "floor"),
        ),
        (
            "floor = \"9223372036854775807\" with W set",
            refused("Inconsistent", "floor"),
        ),
        (
            "floor = \"1699999999999\" with W proposed",
            floor(Some("1699999999999")),
        ),
        ("INITIALIZING with floor = \"\"", floor(None)),
        (
            "INITIALIZING with floor = \"0\"",
            refused("Inconsistent", "floor"),
        ),
        (
            "RUNNING with floor = \"9223372036854775807\"",
            floor(Some("9223372036854775807")),
        ),
        ("floor = \"1e3\"", refused("InvalidValue", "floor")),
        ("floor = \"+5\"", refused("InvalidValue", "floor")),
        ("floor = \" 5\"", refused("InvalidValue", "floor")),
        ("floor = \"-\"", refused("InvalidValue", "floor")),
        (
            "floor = \"9223372036854775808\"",
            refused("InvalidValue", "floor"),
        ),
        ("missing floor", floor(None)),
    ];
    let cases = configmap_cases();
    for (name, want) in table {
        let case = cases
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no configmap vector {name:?}"));
        let got = match case["expect"].get("state") {
            Some(state) => json!({ "floor": state["floor"] }),
            None => case["expect"].clone(),
        };
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn floor_vectors_probe_both_sides_of_the_floor() {
    let cases = decision_cases();
    // RUNNING, active color, floor F = 1700000000000: F-1 and F dropped (late), F+1 passed.
    let f = 1_700_000_000_000_i64;
    let f_text = f.to_string();
    let case = cases
        .iter()
        .find(|c| {
            c["configmap"][keys::STAGE] == "RUNNING"
                && c["configmap"][keys::FLOOR] == f_text.as_str()
                && c["configmap"][keys::ACTIVE_DEPLOYMENT_TYPE] == c["color"]
        })
        .expect("RUNNING vector with a floor");
    let at = |t: i64| {
        let t = t.to_string();
        case["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["event_time"] == t.as_str())
            .map(|d| d["decision"].clone())
    };
    assert_eq!(at(f - 1), Some(json!("DROP")));
    assert_eq!(at(f), Some(json!("DROP")));
    assert_eq!(at(f + 1), Some(json!("PASS")));
    assert_eq!(at(i64::MIN), Some(json!("DROP")));
    // Without a floor a record at i64::MIN is not late.
    let no_floor = cases
        .iter()
        .find(|c| {
            c["configmap"][keys::STAGE] == "RUNNING"
                && c["configmap"][keys::FLOOR] == ""
                && c["configmap"][keys::ACTIVE_DEPLOYMENT_TYPE] == c["color"]
        })
        .expect("RUNNING vector without a floor");
    assert_eq!(no_floor["decisions"][0]["event_time"], i64::MIN.to_string());
    assert_eq!(no_floor["decisions"][0]["decision"], "PASS");
}
