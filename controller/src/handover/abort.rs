//! Abandoning a handover before W is set: the incoming child deleted, the template remembered
//! when it should not be retried.

use bluegreen_protocol::Color;

use super::{Action, Planner};
use crate::conditions::Reason;
use crate::events::EventReason;
use crate::resource::{Outcome, Phase};

impl Planner<'_> {
    /// Whether the child of `color` is gone; deletes it (once) while it is not.
    pub(super) fn deleted(&mut self, color: Color, reason: Reason) -> bool {
        let Some(child) = self.obs.child(color) else {
            return true;
        };
        if !child.deleting {
            self.actions.push(Action::DeleteChild(color));
        }
        self.health
            .progressing(reason, format!("deleting the {} job", color.suffix()));
        false
    }

    /// Abandons the handover before W is set. `remember` keeps the template from being retried
    /// until it changes.
    pub(super) fn abort(&mut self, reason: Reason, message: &str, remember: bool) {
        let t = self.transition().clone();
        self.note(
            true,
            EventReason::HandoverAborting,
            format!("{reason}: {message}"),
        );
        if remember {
            self.status.failed_template_hash = Some(t.template_hash.clone());
        }
        if t.phase == Phase::Snapshotting {
            // Nothing was deployed and the ConfigMap was not touched.
            self.finish_transition(Outcome::Aborted, Some(format!("{reason}: {message}")));
        } else {
            self.set_phase(Phase::Aborting);
            self.transition().abort_reason = Some(format!("{reason}: {message}"));
            self.aborting();
        }
        if remember {
            self.health.degraded(reason, message.to_owned());
        }
    }

    pub(super) fn aborting(&mut self) {
        let t = self.transition().clone();
        if self.deleted(t.to, Reason::Aborting) {
            let reason = t.abort_reason.clone();
            self.finish_transition(Outcome::Aborted, reason.clone());
            if let Some(reason) = reason
                && self.status.failed_template_hash.is_some()
            {
                self.health.degraded(Reason::HandoverAborted, reason);
            }
        }
    }
}
