//! The legal evolutions of the coordination state.
//!
//! The controller moves the state one [step](is_step) at a time. Gates may miss intermediate
//! states (a watch that coalesces or re-lists), so [`check_transition`] accepts every state that
//! some sequence of legal steps reaches, and refuses the rest: an older epoch, a toggle value that
//! moves after it was set, a state of the same epoch that lies behind the current one.

use crate::error::ProtocolError;
use crate::state::{CoordinationState, Toggle};
use crate::vocabulary::{Color, Stage};

/// Whether `next` may follow `prev`: `Ok` when some sequence of zero or more legal controller
/// steps leads from `prev` to `next`. Both must be [valid](CoordinationState::validate). The
/// deletion delay is configuration and may change in any step.
pub fn check_transition(
    prev: &CoordinationState,
    next: &CoordinationState,
) -> Result<(), ProtocolError> {
    prev.validate()?;
    next.validate()?;
    if next.epoch < prev.epoch {
        return Err(ProtocolError::StaleEpoch {
            current: prev.epoch,
            offered: next.epoch,
        });
    }
    let verdict = if next.epoch == prev.epoch {
        within_epoch(prev, next)
    } else {
        across_epochs(prev, next)
    };
    verdict.map_err(|reason| ProtocolError::IllegalTransition {
        epoch: next.epoch,
        from: prev.to_string(),
        to: next.to_string(),
        reason,
    })
}

/// One legal controller step (the edges of the state machine in `docs/protocol.md`). A change of
/// the deletion delay alone is also a step. The floor is constant within an epoch, except that
/// completing a handover (step 6) sets it to W; a new epoch either carries it into a transition
/// (step 9) or clears it from RUNNING (step 10).
pub fn is_step(prev: &CoordinationState, next: &CoordinationState) -> bool {
    use Stage::{
        ClearToTeardown as C, Failing as F, Initializing as I, Running as R, Transitioning as T,
    };
    use Toggle::{NotSet, Proposed, Set};
    if prev.validate().is_err() || next.validate().is_err() {
        return false;
    }
    let same_color = prev.active == next.active;
    let same_floor = prev.floor == next.floor;
    if prev.epoch.checked_add(1) == Some(next.epoch) {
        return prev.stage == R
            && match next.stage {
                T => next.toggle == NotSet && !same_color && same_floor,
                R => same_color && next.floor.is_none(),
                _ => false,
            };
    }
    if next.epoch != prev.epoch {
        return false;
    }
    match ((prev.stage, prev.toggle), (next.stage, next.toggle)) {
        ((C, Set(w)), (R, _)) => same_color && next.floor == Some(w),
        _ if !same_floor => false,
        (a, b) if a == b => same_color,
        ((I, _), (R, _)) | ((T, NotSet), (T, Proposed(_))) => same_color,
        ((T, Set(w)), (C, Set(w2))) | ((T, Proposed(w)), (T, Set(w2))) => same_color && w2 == w,
        ((T, Proposed(w)), (T, Proposed(w2))) => same_color && w2 > w,
        ((T, t), (F, t2)) => same_color && t == t2,
        ((F, _), (R, _)) => next.active == prev.active.other(),
        _ => false,
    }
}

/// Completing a handover, seen from any state of its epoch: RUNNING with the incoming color.
fn promotes(prev: &CoordinationState, next: &CoordinationState) -> bool {
    next.stage == Stage::Running
        && matches!(prev.stage, Stage::Transitioning | Stage::ClearToTeardown)
        && next.active == prev.active
}

fn within_epoch(prev: &CoordinationState, next: &CoordinationState) -> Result<(), &'static str> {
    let promoted = promotes(prev, next);
    if !promoted && next.floor != prev.floor {
        return Err(
            "the floor may not change within an epoch; only completing the handover (CLEAR_TO_TEARDOWN -> RUNNING) sets it, to W",
        );
    }
    stage_within_epoch(prev, next)?;
    if !promoted {
        return Ok(());
    }
    let floor_ok = next.floor.is_some_and(|g| match prev.toggle {
        Toggle::NotSet => prev.floor.is_none_or(|f| g > f),
        Toggle::Proposed(w) => g >= w,
        Toggle::Set(w) => g == w,
    });
    if floor_ok {
        Ok(())
    } else {
        Err(
            "completing the handover sets the floor to its W (a W that is or may still be proposed)",
        )
    }
}

fn stage_within_epoch(
    prev: &CoordinationState,
    next: &CoordinationState,
) -> Result<(), &'static str> {
    use Stage::{
        ClearToTeardown as C, Failing as F, Initializing as I, Running as R, Transitioning as T,
    };
    use Toggle::{NotSet, Proposed, Set};
    let same_color = prev.active == next.active;
    if (prev.stage, prev.toggle, prev.active) == (next.stage, next.toggle, next.active) {
        return Ok(());
    }
    if next.stage == I {
        return Err("INITIALIZING only starts a deployment's first epoch");
    }
    if prev.stage == R {
        return Err("RUNNING ends an epoch; a new transition must increase the epoch");
    }
    match (prev.stage, prev.toggle) {
        (I, _) if next.stage == R && same_color => Ok(()),
        (I, _) => Err("INITIALIZING can only become RUNNING with the same active color"),
        (F, _) if next.stage == R && next.active == prev.active.other() => Ok(()),
        (F, _) => Err("FAILING can only become RUNNING with the outgoing color active again"),
        (T | C, _) if next.stage == R => {
            if same_color || prev.toggle_allows_abort() {
                Ok(())
            } else {
                Err("after WATERMARK_SET the incoming color stays active")
            }
        }
        _ if !same_color => Err("the active color may not change within a transition"),
        (T, NotSet) => Ok(()),
        (T, Proposed(w)) => match (next.stage, next.toggle) {
            (T | F, Proposed(w2)) | (T | C, Set(w2)) if w2 >= w => Ok(()),
            (_, NotSet) => Err("a proposed watermark toggle value cannot be withdrawn"),
            _ => Err("the watermark toggle value may only rise before it is set"),
        },
        (T, Set(w)) => match (next.stage, next.toggle) {
            (C, Set(w2)) if w2 == w => Ok(()),
            (F, _) => Err("FAILING is only reachable before the toggle is set"),
            _ => Err("the watermark toggle value may not change once set"),
        },
        (C, _) => Err("CLEAR_TO_TEARDOWN can only become RUNNING with the same active color"),
        _ => Err("not reachable by legal steps"),
    }
}

fn across_epochs(prev: &CoordinationState, next: &CoordinationState) -> Result<(), &'static str> {
    if next.stage == Stage::Initializing {
        return Err("INITIALIZING only starts a deployment's first epoch");
    }
    // The RUNNING states each epoch can end in, from `prev`'s epoch up to the one before `next`'s.
    let mut running = Running::within(prev);
    for _ in 1..next.epoch - prev.epoch {
        let later = running.next_epoch();
        if later == running {
            break;
        }
        running = later;
    }
    if next.stage == Stage::Running {
        // Step 10 (clear the floor), or a transition of `next`'s epoch that ended in RUNNING.
        return if running.next_epoch().of(next.active).contains(next.floor) {
            Ok(())
        } else {
            Err(
                "no sequence of handovers leaves this color RUNNING with this floor in this epoch (the floor is the W of the last completed handover, or cleared from RUNNING)",
            )
        };
    }
    // A transition starts from RUNNING with the other color and carries its floor (step 9); from
    // there every state of the transition with that floor is reachable.
    if running.of(next.active.other()).contains(next.floor) {
        Ok(())
    } else if running.of(next.active.other()) == Floors::EMPTY {
        Err(
            "the new epoch's incoming color must differ from the color left running by the previous epoch",
        )
    } else {
        Err(
            "a new transition carries the floor of the RUNNING state it starts from; the floor may not be changed or deleted by hand",
        )
    }
}

/// The floors a RUNNING state of one color may carry at the end of an epoch: none, one exact
/// value, and every value from a lower bound on (the W of a handover still to be proposed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Floors {
    none: bool,
    exact: Option<i64>,
    /// Every floor `>= from`; an i128 so that "above `i64::MAX`" is empty rather than overflowing.
    from: Option<i128>,
}

impl Floors {
    const EMPTY: Self = Self {
        none: false,
        exact: None,
        from: None,
    };

    /// Exactly `floor`.
    fn of(floor: Option<i64>) -> Self {
        match floor {
            None => Self {
                none: true,
                ..Self::EMPTY
            },
            Some(f) => Self {
                exact: Some(f),
                ..Self::EMPTY
            },
        }
    }

    /// Every floor `>= from` (a W yet to be proposed).
    fn from(from: i128) -> Self {
        Self {
            from: (from <= i128::from(i64::MAX)).then_some(from),
            ..Self::EMPTY
        }
    }

    /// Every W a transition starting at `floor` may complete with: any W above it.
    fn above(floor: Option<i64>) -> Self {
        Self::from(floor.map_or(i128::from(i64::MIN), |f| i128::from(f) + 1))
    }

    fn contains(self, floor: Option<i64>) -> bool {
        match floor {
            None => self.none,
            Some(f) => self.exact == Some(f) || self.from.is_some_and(|from| i128::from(f) >= from),
        }
    }

    fn union(self, other: Self) -> Self {
        // Exact floors come only from the state an epoch starts in, one per color, and stay with
        // their color: two different ones never meet.
        debug_assert!(self.exact.is_none() || other.exact.is_none() || self.exact == other.exact);
        Self {
            none: self.none || other.none,
            exact: self.exact.or(other.exact),
            from: match (self.from, other.from) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }

    /// What the other color may carry after a handover started from one of these floors.
    fn handed_over(self) -> Self {
        let mut out = Self::EMPTY;
        if self.none {
            out = out.union(Self::above(None));
        }
        if let Some(f) = self.exact {
            out = out.union(Self::above(Some(f)));
        }
        if let Some(from) = self.from {
            out = out.union(Self::from(from + 1));
        }
        out
    }
}

/// The RUNNING states (color and floor) an epoch can end in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Running {
    blue: Floors,
    green: Floors,
}

impl Running {
    fn of(&self, color: Color) -> Floors {
        match color {
            Color::Blue => self.blue,
            Color::Green => self.green,
        }
    }

    fn with(color: Color, floors: Floors) -> Self {
        let mut running = Self {
            blue: Floors::EMPTY,
            green: Floors::EMPTY,
        };
        match color {
            Color::Blue => running.blue = floors,
            Color::Green => running.green = floors,
        }
        running
    }

    fn union(self, other: Self) -> Self {
        Self {
            blue: self.blue.union(other.blue),
            green: self.green.union(other.green),
        }
    }

    /// Where `state`'s own epoch can end.
    fn within(state: &CoordinationState) -> Self {
        let x = state.active;
        let abort = Self::with(x.other(), Floors::of(state.floor));
        match (state.stage, state.toggle) {
            (Stage::Initializing | Stage::Running, _) => Self::with(x, Floors::of(state.floor)),
            (Stage::Failing, _) => abort,
            (Stage::Transitioning, Toggle::NotSet) => {
                abort.union(Self::with(x, Floors::above(state.floor)))
            }
            (Stage::Transitioning, Toggle::Proposed(w)) => {
                abort.union(Self::with(x, Floors::from(i128::from(w))))
            }
            (Stage::Transitioning, Toggle::Set(w)) => Self::with(x, Floors::of(Some(w))),
            // Valid only with W set: the floor becomes W.
            (Stage::ClearToTeardown, toggle) => Self::with(x, Floors::of(toggle.value())),
        }
    }

    /// Where the next epoch can end: each RUNNING state clears its floor (step 10), or starts a
    /// transition (step 9) that is aborted (same color and floor) or completes (the other color,
    /// floor above this one).
    fn next_epoch(self) -> Self {
        let step = |floors: Floors| {
            if floors == Floors::EMPTY {
                Floors::EMPTY
            } else {
                floors.union(Floors::of(None))
            }
        };
        Self {
            blue: step(self.blue).union(self.green.handed_over()),
            green: step(self.green).union(self.blue.handed_over()),
        }
    }
}

impl CoordinationState {
    /// Whether RUNNING with the outgoing color active may follow (an abort is still possible).
    fn toggle_allows_abort(&self) -> bool {
        self.stage == Stage::Transitioning && !matches!(self.toggle, Toggle::Set(_))
    }
}
