//! Abandoning a handover before W is set: the incoming child deleted, the template remembered
//! when it should not be retried.

use std::time::Duration;

use bluegreen_protocol::Color;

use super::{Action, ClusterDown, MicroTime, Planner};
use crate::conditions::Reason;
use crate::events::EventReason;
use crate::resource::{Outcome, Phase};
use crate::settings::Settings;

impl Planner<'_> {
    /// Whether the child of `color` is gone; deletes it (once) while it is not.
    /// A child in a cluster that cannot be used was not looked for, and is not gone.
    pub(super) fn deleted(&mut self, color: Color, reason: Reason) -> bool {
        let Some(child) = self.obs.child(color) else {
            return !self
                .obs
                .cluster_down
                .as_ref()
                .is_some_and(|down| down.colors.contains(&color));
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

    /// Only the incoming child's cluster cannot be used (`down`) before W is set: the handover
    /// is aborted once that has lasted `abortGracePeriod`, and the child is deleted once its
    /// cluster answers (the status says `Aborting` until then). Until W is set the outgoing job
    /// has dropped nothing (from the proposal on it holds what is above W), so it keeps every
    /// record. Returns `false` (nothing decided) in every other case.
    pub(super) fn incoming_cluster_down(
        &mut self,
        settings: &Settings,
        down: &ClusterDown,
    ) -> bool {
        let Some(t) = self.status.transition.clone() else {
            return false;
        };
        let before_w = matches!(
            t.phase,
            Phase::Deploying | Phase::ConfirmingToggle | Phase::Aborting
        );
        let (Some(from), true) = (t.from, before_w && down.colors == [t.to]) else {
            return false;
        };
        let to = t.to;
        if t.phase == Phase::Aborting {
            self.degraded_with_event(
                Reason::ClusterUnavailable,
                EventReason::ClusterUnavailable,
                format!(
                    "{}; the handover is aborted and the {from} job keeps every record: the {to} job is deleted there once it can be used",
                    down.why
                ),
            );
            return true;
        }
        let since = t
            .incoming_cluster_down_since
            .clone()
            .unwrap_or_else(|| MicroTime(self.now()));
        self.transition().incoming_cluster_down_since = Some(since.clone());
        if self.since(&since) > settings.abort_grace {
            self.abort(
                Reason::ClusterUnavailable,
                &format!(
                    "{} for longer than abortGracePeriod ({:?}) before W was set: the {from} job keeps every record; the {to} job is deleted there once it can be used",
                    down.why, settings.abort_grace
                ),
                true,
            );
        } else {
            // Looked at again when the grace ends, if that is before the next retry.
            let left = settings.abort_grace.saturating_sub(self.since(&since));
            self.requeue = self.requeue.min(left + Duration::from_millis(100));
            self.degraded_with_event(
                Reason::ClusterUnavailable,
                EventReason::ClusterUnavailable,
                format!(
                    "{}; W is not set while it cannot, and the handover is aborted if that lasts abortGracePeriod ({:?})",
                    down.why, settings.abort_grace
                ),
            );
        }
        true
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
