//! The active job's gates with no handover in progress: gates that report the other color make
//! the resource `Degraded` at once; gates that hold every record or report a problem (their state
//! source unreachable, an update refused) once that has lasted [`GATES_GRACE`], so a short outage
//! (a sidecar restarting) does not flap.

use std::time::Duration;

use bluegreen_protocol::Color;

use super::Planner;
use super::phases::color_mismatch;
use crate::conditions::{ConditionType, Reason};
use crate::events::EventReason;
use crate::observed::ChildObs;
use crate::resource::MicroTime;

/// How long the gates' trouble must last before it is reported: longer than a state source's
/// retry backoff (5 s) and a sidecar restart, shorter than anyone waits for output.
pub(super) const GATES_GRACE: Duration = Duration::from_secs(30);

impl Planner<'_> {
    /// Checks the gates of the running `active` job; records since when they have trouble in
    /// `status.gatesTroubleSince` and raises `Degraded/GatesHolding` (with a Warning event) once
    /// it has lasted [`GATES_GRACE`], unless a worse problem is already reported.
    pub(super) fn check_gates(&mut self, color: Color, active: &ChildObs) {
        let gates = active
            .flink
            .as_ref()
            .and_then(|f| f.gates.as_ref())
            .filter(|_| active.running());
        if let Some(wrong) = gates.and_then(|g| g.wrong_color(color)) {
            if self.health.degraded.is_none() {
                let message = format!(
                    "{}; the active job's output is wrong until it runs gates of its own color (change the template to hand it over to a job that does)",
                    color_mismatch(&wrong)
                );
                self.degraded_with_event(
                    Reason::GateColorMismatch,
                    EventReason::GateColorMismatch,
                    message,
                );
            }
            return;
        }
        let trouble = gates.and_then(crate::observed::GateObs::trouble);
        let raised = self.obs.status.conditions.iter().any(|c| {
            c.type_ == ConditionType::Degraded.as_str()
                && c.status == "True"
                && c.reason == Reason::GatesHolding.as_str()
        });
        let Some(trouble) = trouble else {
            self.status.gates_trouble_since = None;
            if raised {
                self.note(
                    false,
                    EventReason::GatesRecovered,
                    "the active job's gates have a coordination state and report no problem",
                );
            }
            return;
        };
        let now = MicroTime(self.now());
        let since = self.status.gates_trouble_since.get_or_insert(now).clone();
        let lasted = self.since(&since);
        if lasted < GATES_GRACE {
            self.requeue = self.requeue.min(GATES_GRACE.saturating_sub(lasted));
            return;
        }
        if self.health.degraded.is_some() {
            return;
        }
        let message = format!(
            "the active job's gates are in trouble since {}: {trouble}. A gate without a coordination state writes nothing, and a handover cannot go through gates that cannot see the ConfigMap (it would abort with GatesNotAcknowledged): check that the job reaches the bluegreen sidecar (BLUEGREEN_SIDECAR_URL) and the sidecar can read the coordination ConfigMap",
            since.0
        );
        self.degraded_with_event(Reason::GatesHolding, EventReason::GatesHolding, message);
    }
}
