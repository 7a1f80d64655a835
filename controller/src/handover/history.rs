//! The end of a handover: its record in the status's history, which the plan also carries for
//! the metrics.

use super::Planner;
use super::repair::{repaired, summary};
use crate::resource::{MicroTime, Outcome, TransitionRecord};

/// How many finished handovers the status keeps.
pub const HISTORY_LEN: usize = 10;

impl Planner<'_> {
    /// Ends the handover: history entry, no transition, stage RUNNING.
    pub(super) fn finish_transition(&mut self, outcome: Outcome, reason: Option<String>) {
        let Some(t) = self.status.transition.take() else {
            return;
        };
        if outcome == Outcome::Promoted {
            // Step 6: W stays in force as the floor until the next handover completes.
            self.status.floor = t.toggle;
        }
        let now = self.now();
        let forward_repair = repaired(&t).cloned();
        let reason = reason.or_else(|| forward_repair.as_ref().map(|r| summary(r, t.toggle)));
        let record = TransitionRecord {
            epoch: t.epoch,
            from: t.from,
            to: t.to,
            toggle: t.toggle,
            outcome,
            reason,
            past_w_by_idleness: t.past_w_by_idleness.clone(),
            forward_repair,
            started_at: t.started_at.clone(),
            finished_at: MicroTime(now),
            duration_seconds: now.duration_since(t.started_at.0).as_secs_f64(),
        };
        self.status.history.insert(0, record.clone());
        self.status.history.truncate(HISTORY_LEN);
        self.finished = Some(record);
    }
}
