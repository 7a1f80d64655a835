//! `check_transition` against its definition: the reflexive-transitive closure of single legal
//! steps (`is_step`), computed by breadth-first search over a finite universe of states.

mod common;

use std::collections::{BTreeSet, VecDeque};

use bluegreen_protocol::{
    Color, CoordinationState, ProtocolError, Stage, Toggle, WatermarkStage, check_transition,
    is_step,
};
use common::toggle;

const EPOCHS: [u64; 4] = [0, 1, 2, 3];
const WS: [i64; 4] = [i64::MIN, -5, 0, 7];

fn universe() -> Vec<CoordinationState> {
    let mut all = Vec::new();
    for &epoch in &EPOCHS {
        for &active in Color::ALL {
            for &stage in Stage::ALL {
                for &wstage in WatermarkStage::ALL {
                    let ws: &[i64] = if wstage == WatermarkStage::NotSet {
                        &[0]
                    } else {
                        &WS
                    };
                    for &w in ws {
                        let s = CoordinationState {
                            floor: None,
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
    all
}

fn reachable_from(start: usize, states: &[CoordinationState]) -> BTreeSet<usize> {
    let mut seen = BTreeSet::from([start]);
    let mut queue = VecDeque::from([start]);
    while let Some(i) = queue.pop_front() {
        for (j, next) in states.iter().enumerate() {
            if !seen.contains(&j) && is_step(&states[i], next) {
                seen.insert(j);
                queue.push_back(j);
            }
        }
    }
    seen
}

#[test]
fn check_transition_accepts_exactly_the_states_reachable_by_legal_steps() {
    let states = universe();
    assert!(states.len() > 150, "universe too small: {}", states.len());
    let mut accepted = 0;
    for (i, prev) in states.iter().enumerate() {
        let reachable = reachable_from(i, &states);
        for (j, next) in states.iter().enumerate() {
            let verdict = check_transition(prev, next);
            assert_eq!(
                verdict.is_ok(),
                reachable.contains(&j),
                "{prev} -> {next}: check_transition says {verdict:?}"
            );
            accepted += usize::from(verdict.is_ok());
        }
    }
    // The oracle is not vacuous: both answers occur many times.
    assert!(
        accepted > 1000 && accepted < states.len() * states.len() / 2,
        "{accepted}"
    );
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
