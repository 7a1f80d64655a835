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
/// the deletion delay alone is also a step.
pub fn is_step(prev: &CoordinationState, next: &CoordinationState) -> bool {
    use Stage::{
        ClearToTeardown as C, Failing as F, Initializing as I, Running as R, Transitioning as T,
    };
    use Toggle::{NotSet, Proposed, Set};
    if prev.validate().is_err() || next.validate().is_err() {
        return false;
    }
    let same_color = prev.active == next.active;
    if next.epoch == prev.epoch + 1 {
        return prev.stage == R
            && next.stage == T
            && next.toggle == NotSet
            && next.active == prev.active.other();
    }
    if next.epoch != prev.epoch {
        return false;
    }
    match ((prev.stage, prev.toggle), (next.stage, next.toggle)) {
        (a, b) if a == b => same_color,
        ((I | C, _), (R, _)) | ((T, NotSet), (T, Proposed(_))) => same_color,
        ((T, Set(w)), (C, Set(w2))) | ((T, Proposed(w)), (T, Set(w2))) => same_color && w2 == w,
        ((T, Proposed(w)), (T, Proposed(w2))) => same_color && w2 > w,
        ((T, t), (F, t2)) => same_color && t == t2,
        ((F, _), (R, _)) => next.active == prev.active.other(),
        _ => false,
    }
}

fn within_epoch(prev: &CoordinationState, next: &CoordinationState) -> Result<(), &'static str> {
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
    if next.stage == Stage::Running || next.epoch - prev.epoch >= 2 {
        return Ok(());
    }
    // Exactly one epoch later: the new transition's incoming color must be the other color of a
    // RUNNING state that `prev`'s epoch can still end in.
    if prev
        .running_colors_reachable()
        .contains(&next.active.other())
    {
        Ok(())
    } else {
        Err(
            "the new epoch's incoming color must differ from the color left running by the previous epoch",
        )
    }
}

impl CoordinationState {
    /// Whether RUNNING with the outgoing color active may follow (an abort is still possible).
    fn toggle_allows_abort(&self) -> bool {
        self.stage == Stage::Transitioning && !matches!(self.toggle, Toggle::Set(_))
    }

    /// The colors of the RUNNING states this state's epoch can end in.
    fn running_colors_reachable(&self) -> Vec<Color> {
        match self.stage {
            Stage::Failing => vec![self.active.other()],
            Stage::Transitioning if self.toggle_allows_abort() => {
                vec![self.active, self.active.other()]
            }
            _ => vec![self.active],
        }
    }
}
