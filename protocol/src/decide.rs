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

/// A gate's whole rule for one state and one color: records at or below the floor F are late
/// and dropped; of the others, records with event time `<= w` get `at_or_below`, the rest
/// `above`. Gates precompute it once per state update so that each record costs two comparisons
/// and no branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rule {
    /// F; meaningful only when `has_floor` (so that no floor and F = `i64::MIN` differ).
    floor: i64,
    has_floor: bool,
    /// The split point (W, or `i64::MAX` for a rule that treats every record above F alike).
    w: i64,
    /// Decisions for late records, for `F < t <= w` and for `t > w`, indexed by
    /// `!late as usize + (t > w) as usize` (F < w whenever both exist).
    decisions: [Decision; 3],
}

impl Rule {
    /// A rule that gives every record the same decision (no floor).
    pub const fn uniform(decision: Decision) -> Self {
        Self::split(None, i64::MAX, decision, decision)
    }

    /// The rule of a gate that has no valid state (yet): hold everything.
    pub const HOLD: Self = Self::uniform(Decision::Hold);

    /// Records `<= floor` dropped as late; of the rest, `<= w` get `at_or_below`, `> w` get
    /// `above`. Needs `floor < w` (guaranteed by [`CoordinationState::validate`]).
    const fn split(floor: Option<i64>, w: i64, at_or_below: Decision, above: Decision) -> Self {
        let (floor, has_floor) = match floor {
            Some(f) => (f, true),
            None => (i64::MIN, false),
        };
        Self {
            floor,
            has_floor,
            w,
            decisions: [Decision::Drop, at_or_below, above],
        }
    }

    /// The floor F: records with event time `<= F` are late.
    pub const fn floor(&self) -> Option<i64> {
        if self.has_floor {
            Some(self.floor)
        } else {
            None
        }
    }

    /// Whether a record is late: at or below the floor (never without one, even at `i64::MIN`).
    /// Late records are dropped by both colors and counted apart.
    #[inline]
    pub const fn is_late(&self, event_time_ms: i64) -> bool {
        self.has_floor && event_time_ms <= self.floor
    }

    /// The decision for one record.
    #[inline]
    pub const fn decide(&self, event_time_ms: i64) -> Decision {
        let index = (!self.is_late(event_time_ms)) as usize + (event_time_ms > self.w) as usize;
        self.decisions[index]
    }

    /// The rule of color `color` under `state`, floor included. States that
    /// [`CoordinationState::validate`] rejects give [`Rule::HOLD`].
    pub fn for_state(state: &CoordinationState, color: Color) -> Self {
        use Decision::{Drop, Hold, Pass};
        if state.validate_floor().is_err() {
            return Self::HOLD;
        }
        let incoming = color == state.active;
        let floor = state.floor;
        let split = |w, at_or_below, above| Self::split(floor, w, at_or_below, above);
        let uniform = |decision| Self::split(floor, i64::MAX, decision, decision);
        match (state.stage, state.toggle) {
            (Stage::Initializing | Stage::Running, Toggle::NotSet) => {
                uniform(if incoming { Pass } else { Drop })
            }
            (Stage::Transitioning, Toggle::NotSet) => uniform(if incoming { Hold } else { Pass }),
            (Stage::Transitioning, Toggle::Proposed(w)) => {
                if incoming {
                    uniform(Hold)
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
                uniform(if incoming { Drop } else { Pass })
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
