//! The coordination ConfigMap parser (`bluegreen-protocol`) and the gates' report line.
//!
//! Input: text; each line `key=value` is one ConfigMap data entry (a later line wins), a line
//! `---` starts a second ConfigMap (the state a gate is offered next). The whole text is also
//! parsed as a `bluegreenGateAppliedState` report line.
//!
//! Checked: nothing panics; a state that parses validates, writes back to data that parses to
//! the same state, and its precomputed rule decides every probe as `decide` does; `check_transition`
//! between two parsed states never panics and accepts a replay; a report that parses prints to
//! a line that parses back to it.
#![no_main]

use std::collections::BTreeMap;

use bluegreen_protocol::{Color, CoordinationState, GateReport, Rule, check_transition, decide};
use libfuzzer_sys::fuzz_target;

fn configmap(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn parsed(data: &BTreeMap<String, String>) -> Option<CoordinationState> {
    let state = CoordinationState::from_data(data).ok()?;
    assert_eq!(state.validate(), Ok(()), "{state}");
    let written = state.to_data();
    assert_eq!(
        CoordinationState::from_data(&written),
        Ok(state),
        "round trip of {data:?}"
    );
    let _ = state.to_string();
    let w = state.toggle.value().unwrap_or(0);
    let f = state.floor.unwrap_or(0);
    for color in [Color::Blue, Color::Green] {
        let rule = Rule::for_state(&state, color);
        for t in [
            i64::MIN,
            w.saturating_sub(1),
            w,
            w.saturating_add(1),
            f,
            f.saturating_add(1),
            i64::MAX,
        ] {
            assert_eq!(
                rule.decide(t),
                decide(Some(&state), color, t),
                "{state} {color} {t}"
            );
        }
    }
    Some(state)
}

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    let (first, second) = match text.split_once("\n---\n") {
        Some((a, b)) => (a, Some(b)),
        None => (text.as_ref(), None),
    };
    let from = parsed(&configmap(first));
    let to = second.and_then(|s| parsed(&configmap(s)));
    if let Some(from) = from {
        assert_eq!(check_transition(&from, &from), Ok(()), "a replay of {from}");
        if let Some(to) = to {
            let _ = check_transition(&from, &to);
        }
    }
    if let Ok(report) = text.parse::<GateReport>() {
        let line = report.to_string();
        assert_eq!(
            line.parse::<GateReport>().as_ref(),
            Ok(&report),
            "report {line:?}"
        );
    }
});
