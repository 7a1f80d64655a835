//! `check_transition` against its definition: the reflexive-transitive closure of single legal
//! steps (`is_step`), computed by breadth-first search over a finite universe of states.

mod common;

use std::collections::{BTreeSet, VecDeque};

use bluegreen_protocol::{
    Color, CoordinationState, ProtocolError, Stage, Toggle, WatermarkStage, check_transition,
    is_step,
};
use common::toggle;

const EPOCHS: [u64; 5] = [0, 1, 2, 3, 4];

/// W and floor values at each end of i64, contiguous so that every integer a chain of handovers
/// needs between two of them is in the universe (a floor rises only by a handover whose W is
/// above it). The oracle walks through all of them but is compared only on states whose values
/// lie in the inner three (`COMPARED`): a path may need a W just beyond those (a handover that
/// completes above the floor and is then cleared, or a first floor below the target), and it
/// must find it in the universe. `F + 1` overflows at the top.
const LOW: [i64; 5] = [
    i64::MIN,
    i64::MIN + 1,
    i64::MIN + 2,
    i64::MIN + 3,
    i64::MIN + 4,
];
const HIGH: [i64; 5] = [
    i64::MAX - 4,
    i64::MAX - 3,
    i64::MAX - 2,
    i64::MAX - 1,
    i64::MAX,
];

/// Every valid state whose W and floor are in `values` (or absent).
fn universe(values: &[i64]) -> Vec<CoordinationState> {
    let floors: Vec<Option<i64>> = std::iter::once(None)
        .chain(values.iter().copied().map(Some))
        .collect();
    let mut all = Vec::new();
    for &epoch in &EPOCHS {
        for &active in Color::ALL {
            for &stage in Stage::ALL {
                for &wstage in WatermarkStage::ALL {
                    let ws: &[i64] = if wstage == WatermarkStage::NotSet {
                        &[0]
                    } else {
                        values
                    };
                    for &w in ws {
                        for &floor in &floors {
                            let s = CoordinationState {
                                floor,
                                active,
                                deletion_delay_ms: 0,
                                stage,
                                toggle: toggle(wstage, w),
                                epoch,
                            };
                            if s.validate().is_ok() {
                                all.push(s);
                            }
                        }
                    }
                }
            }
        }
    }
    all
}

/// The reflexive-transitive closure of `is_step` from `start`, by breadth-first search.
fn reachable_from(start: usize, steps: &[Vec<usize>]) -> BTreeSet<usize> {
    let mut seen = BTreeSet::from([start]);
    let mut queue = VecDeque::from([start]);
    while let Some(i) = queue.pop_front() {
        for &j in &steps[i] {
            if seen.insert(j) {
                queue.push_back(j);
            }
        }
    }
    seen
}

/// Checks `check_transition` against the oracle on every pair of states whose W and floor lie in
/// `compared`, walking through `values`.
fn check_against_the_oracle(values: &[i64], compared: std::ops::RangeInclusive<i64>) {
    let states = universe(values);
    let steps: Vec<Vec<usize>> = states
        .iter()
        .map(|prev| {
            (0..states.len())
                .filter(|&j| is_step(prev, &states[j]))
                .collect()
        })
        .collect();
    let inside = |s: &CoordinationState| {
        s.toggle
            .value()
            .into_iter()
            .chain(s.floor)
            .all(|v| compared.contains(&v))
    };
    let mut accepted = 0;
    let mut pairs = 0;
    for (i, prev) in states.iter().enumerate().filter(|(_, s)| inside(s)) {
        let reachable = reachable_from(i, &steps);
        for (j, next) in states.iter().enumerate().filter(|(_, s)| inside(s)) {
            let verdict = check_transition(prev, next);
            assert_eq!(
                verdict.is_ok(),
                reachable.contains(&j),
                "{prev} -> {next}: check_transition says {verdict:?}"
            );
            accepted += usize::from(verdict.is_ok());
            pairs += 1;
        }
    }
    // The oracle is not vacuous: both answers occur many times.
    assert!(pairs > 50_000, "only {pairs} pairs compared");
    assert!(
        accepted > 10_000 && accepted < pairs / 2,
        "{accepted} of {pairs}"
    );
}

#[test]
fn check_transition_accepts_exactly_the_states_reachable_by_legal_steps_near_i64_min() {
    check_against_the_oracle(&LOW, i64::MIN..=i64::MIN + 2);
}

#[test]
fn check_transition_accepts_exactly_the_states_reachable_by_legal_steps_near_i64_max() {
    check_against_the_oracle(&HIGH, i64::MAX - 2..=i64::MAX);
}

fn s(epoch: u64, stage: Stage, t: Toggle, active: Color) -> CoordinationState {
    CoordinationState {
        floor: None,
        active,
        deletion_delay_ms: 1000,
        stage,
        toggle: t,
        epoch,
    }
}

#[test]
fn an_older_epoch_is_stale() {
    let now = s(4, Stage::Running, Toggle::NotSet, Color::Blue);
    let old = s(3, Stage::ClearToTeardown, Toggle::Set(10), Color::Blue);
    assert_eq!(
        check_transition(&now, &old),
        Err(ProtocolError::StaleEpoch {
            current: 4,
            offered: 3
        })
    );
}

#[test]
fn w_may_not_move_once_set() {
    let set = s(2, Stage::Transitioning, Toggle::Set(100), Color::Green);
    let moved = s(2, Stage::Transitioning, Toggle::Set(101), Color::Green);
    let err = check_transition(&set, &moved).expect_err("W moved");
    assert!(err.to_string().contains("may not change once set"), "{err}");
}

#[test]
fn a_proposed_w_may_only_rise() {
    let proposed = s(2, Stage::Transitioning, Toggle::Proposed(100), Color::Green);
    let higher = s(2, Stage::Transitioning, Toggle::Proposed(150), Color::Green);
    let lower = s(2, Stage::Transitioning, Toggle::Proposed(99), Color::Green);
    assert!(check_transition(&proposed, &higher).is_ok());
    assert!(check_transition(&proposed, &lower).is_err());
    assert!(
        check_transition(
            &proposed,
            &s(2, Stage::Transitioning, Toggle::Set(150), Color::Green)
        )
        .is_ok()
    );
}

#[test]
fn a_gate_that_missed_updates_accepts_the_newer_state() {
    let running = s(0, Stage::Running, Toggle::NotSet, Color::Blue);
    let set_next_epoch = s(1, Stage::Transitioning, Toggle::Set(100), Color::Green);
    assert!(check_transition(&running, &set_next_epoch).is_ok());
    let wrong_color = s(1, Stage::Transitioning, Toggle::Set(100), Color::Blue);
    assert!(check_transition(&running, &wrong_color).is_err());
}

#[test]
fn replaying_the_current_state_is_accepted() {
    let cur = s(3, Stage::Transitioning, Toggle::Proposed(5), Color::Blue);
    assert!(check_transition(&cur, &cur).is_ok());
}

#[test]
fn the_deletion_delay_may_change_in_any_step() {
    let a = s(1, Stage::Transitioning, Toggle::Set(5), Color::Blue);
    let b = CoordinationState {
        floor: None,
        deletion_delay_ms: 5,
        ..a
    };
    assert!(check_transition(&a, &b).is_ok());
    assert!(is_step(&a, &b));
}

#[test]
fn an_abort_after_w_is_set_is_refused() {
    let set = s(1, Stage::Transitioning, Toggle::Set(5), Color::Green);
    let back = s(1, Stage::Running, Toggle::NotSet, Color::Blue);
    assert!(check_transition(&set, &back).is_err());
    let before = s(1, Stage::Transitioning, Toggle::Proposed(5), Color::Green);
    assert!(check_transition(&before, &back).is_ok());
}

fn floored(floor: Option<i64>, state: CoordinationState) -> CoordinationState {
    CoordinationState { floor, ..state }
}

#[test]
fn completing_a_handover_sets_the_floor_to_w() {
    let clear = floored(
        Some(3),
        s(2, Stage::ClearToTeardown, Toggle::Set(10), Color::Green),
    );
    let done = floored(Some(10), s(2, Stage::Running, Toggle::NotSet, Color::Green));
    assert!(is_step(&clear, &done));
    assert!(check_transition(&clear, &done).is_ok());
    for wrong in [None, Some(3), Some(9), Some(11)] {
        let other = floored(wrong, done);
        assert!(!is_step(&clear, &other), "{wrong:?}");
        let err = check_transition(&clear, &other).expect_err("floor other than W");
        assert!(err.to_string().contains("floor"), "{err}");
    }
    // A gate that missed CLEAR_TO_TEARDOWN accepts the floor that W will be.
    let proposed = floored(
        Some(3),
        s(2, Stage::Transitioning, Toggle::Proposed(10), Color::Green),
    );
    assert!(check_transition(&proposed, &floored(Some(12), done)).is_ok());
    assert!(check_transition(&proposed, &floored(Some(9), done)).is_err());
}

#[test]
fn a_new_transition_carries_the_floor() {
    let running = floored(Some(10), s(2, Stage::Running, Toggle::NotSet, Color::Green));
    let next = floored(
        Some(10),
        s(3, Stage::Transitioning, Toggle::NotSet, Color::Blue),
    );
    assert!(is_step(&running, &next));
    assert!(check_transition(&running, &next).is_ok());
    let dropped = floored(None, next);
    assert!(!is_step(&running, &dropped));
    assert!(check_transition(&running, &dropped).is_err());
    // An abort keeps it.
    let failing = floored(Some(10), s(3, Stage::Failing, Toggle::NotSet, Color::Blue));
    let back = floored(Some(10), s(3, Stage::Running, Toggle::NotSet, Color::Green));
    assert!(is_step(&failing, &back));
    assert!(!is_step(&failing, &floored(None, back)));
    assert!(check_transition(&next, &back).is_ok());
}

#[test]
fn a_new_epoch_may_clear_the_floor_for_reprocessing() {
    let running = floored(Some(10), s(2, Stage::Running, Toggle::NotSet, Color::Green));
    let cleared = floored(None, s(3, Stage::Running, Toggle::NotSet, Color::Green));
    assert!(is_step(&running, &cleared));
    assert!(check_transition(&running, &cleared).is_ok());
    // Not within the epoch, and not to another value.
    assert!(!is_step(&running, &floored(None, running)));
    assert!(!is_step(&running, &floored(Some(11), cleared)));
}

#[test]
fn a_hand_deleted_floor_is_refused() {
    for state in [
        floored(Some(10), s(2, Stage::Running, Toggle::NotSet, Color::Green)),
        floored(
            Some(10),
            s(3, Stage::Transitioning, Toggle::Set(20), Color::Blue),
        ),
        floored(
            Some(10),
            s(3, Stage::Failing, Toggle::Proposed(20), Color::Blue),
        ),
    ] {
        let deleted = floored(None, state);
        let err = check_transition(&state, &deleted).expect_err("floor deleted");
        assert!(
            matches!(err, ProtocolError::IllegalTransition { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("floor"), "{err}");
        let moved = floored(Some(9), state);
        assert!(check_transition(&state, &moved).is_err());
    }
}
