//! The local blue/green upgrade demo (README, quick start command 1).
//!
//! Until the local cluster pieces land, it walks one handover blue → green through the
//! coordination ConfigMap's states and prints what each color's gate does with records around W.

use bluegreen_protocol::{Color, CoordinationState, Rule, Stage, Toggle, check_transition};

fn main() -> anyhow::Result<()> {
    let w = 1_700_000_060_000;
    let running = CoordinationState {
        stage: Stage::Running,
        ..CoordinationState::initial(Color::Blue, 30_000)
    };
    let transitioning = CoordinationState {
        active: Color::Green,
        stage: Stage::Transitioning,
        epoch: 1,
        ..running
    };
    let steps = [
        running,
        transitioning,
        CoordinationState {
            toggle: Toggle::Proposed(w),
            ..transitioning
        },
        CoordinationState {
            toggle: Toggle::Set(w),
            ..transitioning
        },
        CoordinationState {
            stage: Stage::ClearToTeardown,
            toggle: Toggle::Set(w),
            ..transitioning
        },
        CoordinationState {
            stage: Stage::Running,
            ..transitioning
        },
    ];
    let probes = [w - 1, w, w + 1];
    println!("handover blue -> green at W = {w}; records at event times W-1, W, W+1\n");
    println!(
        "{:<72} {:>24} {:>24}",
        "coordination state", "BLUE gate", "GREEN gate"
    );
    let mut prev: Option<&CoordinationState> = None;
    for state in &steps {
        if let Some(prev) = prev {
            check_transition(prev, state)?;
        }
        let row = |color| {
            let rule = Rule::for_state(state, color);
            probes
                .iter()
                .map(|t| format!("{:?}", rule.decide(*t)))
                .collect::<Vec<_>>()
                .join("/")
        };
        println!(
            "{:<72} {:>24} {:>24}",
            state.to_string(),
            row(Color::Blue),
            row(Color::Green)
        );
        prev = Some(state);
    }
    Ok(())
}
