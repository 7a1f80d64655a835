//! The gate's decision rule: one pure function of the coordination state, the gate's color and a
//! record's event time. The whole table is documented in `docs/protocol.md`.

use crate::state::{CoordinationState, Toggle};
use crate::vocabulary::{Color, Stage};

/// What a gate does with one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[repr(u8)]
pub enum Decision {
    /// Emit the record: this color owns it.
    Pass = 0,
    /// Discard the record: the other color owns it.
    Drop = 1,
    /// The gate cannot know yet: neither emit nor discard; wait for a newer state (bounded), then
    /// fail the task so Flink restarts it. Never guess.
    Hold = 2,
}

/// A gate's whole rule for one state and one color: records with event time `<= w` get
/// `at_or_below`, the others `above`. Gates precompute it once per state update so that each
/// record costs one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rule {
    /// The split point (W, or `i64::MAX` for a rule that treats every record alike).
    pub w: i64,
    /// Decision for event times `<= w`.
    pub at_or_below: Decision,
    /// Decision for event times `> w`.
    pub above: Decision,
}

impl Rule {
    /// A rule that gives every record the same decision.
    pub const fn uniform(decision: Decision) -> Self {
        Self {
            w: i64::MAX,
            at_or_below: decision,
            above: decision,
        }
    }

    /// The rule of a gate that has no valid state (yet): hold everything.
    pub const HOLD: Self = Self::uniform(Decision::Hold);

    /// The decision for one record.
    #[inline]
    pub const fn decide(&self, event_time_ms: i64) -> Decision {
        if event_time_ms <= self.w {
            self.at_or_below
        } else {
            self.above
        }
    }

    /// The rule of color `color` under `state`. Combinations that [`CoordinationState::validate`]
    /// rejects give [`Rule::HOLD`].
    pub fn for_state(state: &CoordinationState, color: Color) -> Self {
        use Decision::{Drop, Hold, Pass};
        let incoming = color == state.active;
        let split = |w, at_or_below, above| Self {
            w,
            at_or_below,
            above,
        };
        match (state.stage, state.toggle) {
            (Stage::Initializing | Stage::Running, Toggle::NotSet) => {
                Self::uniform(if incoming { Pass } else { Drop })
            }
            (Stage::Transitioning, Toggle::NotSet) => {
                Self::uniform(if incoming { Hold } else { Pass })
            }
            (Stage::Transitioning, Toggle::Proposed(w)) => {
                if incoming {
                    Self::uniform(Hold)
                } else {
                    split(w, Pass, Hold)
                }
            }
            (Stage::Transitioning | Stage::ClearToTeardown, Toggle::Set(w)) => {
                if incoming {
                    split(w, Drop, Pass)
                } else {
                    split(w, Pass, Drop)
                }
            }
            (Stage::Failing, Toggle::NotSet | Toggle::Proposed(_)) => {
                Self::uniform(if incoming { Drop } else { Pass })
            }
            (Stage::Initializing | Stage::Running, Toggle::Proposed(_) | Toggle::Set(_))
            | (Stage::ClearToTeardown, Toggle::NotSet | Toggle::Proposed(_))
            | (Stage::Failing, Toggle::Set(_)) => Self::HOLD,
        }
    }
}

/// The gate rule: what a gate of color `color` does with a record of event time `event_time_ms`
/// under `state`. `None` (no valid state known) holds.
#[inline]
pub fn decide(state: Option<&CoordinationState>, color: Color, event_time_ms: i64) -> Decision {
    match state {
        Some(state) => Rule::for_state(state, color).decide(event_time_ms),
        None => Decision::Hold,
    }
}
