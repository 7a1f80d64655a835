//! After W is set: waiting for health and both watermarks past W, then promotion.

use bluegreen_protocol::Color;

use super::repair::repaired;
use super::{Action, Planner};
use crate::conditions::Reason;
use crate::events::EventReason;
use crate::names::ManualAction;
use crate::observed::{ChildObs, FlinkObs, GateObs};
use crate::resource::{Phase, Transition, WatermarkWait};
use crate::settings::Settings;

impl Planner<'_> {
    pub(super) fn toggle_set(
        &mut self,
        settings: &Settings,
        outgoing: &ChildObs,
        spec_changed: bool,
    ) {
        let t = self.transition().clone();
        let w = t.toggle.expect("W is set in ToggleSet");
        if spec_changed {
            let hash = self.obs.template_hash.clone();
            self.transition().template_hash.clone_from(&hash);
            self.transition().redeploy_nonce = self.obs.redeploy_nonce;
            // A person's template replaces a forward repair (pending or under way).
            self.transition().forward_repair = None;
            self.apply(t.to, None);
            self.note(false, EventReason::IncomingUpdatedInPlace, "W is set, so the handover can only go forward: the incoming job is updated in place from its own state");
            return;
        }
        if self.consume_action(ManualAction::Abort) {
            self.note(true, EventReason::ActionRefused, format!("abort refused: W = {w} is set and the outgoing job has dropped records above it; fix the incoming job forward (change the template)"));
        }
        let Some(incoming) = self.obs.child(t.to).cloned() else {
            self.health.degraded(
                Reason::IncomingMissingAfterToggle,
                format!("the incoming FlinkDeployment was deleted after W = {w} was set; recreating it from the handover's starting state would emit records twice, so it needs a person: recreate it from its latest checkpoint"),
            );
            return;
        };
        if self.forward_repair(settings, &t, &incoming) {
            return;
        }
        let from = t.from.expect("handover");
        let outgoing_gone = self.obs.child(from).is_none();
        if !outgoing_gone && outgoing.failed() {
            self.restart_outgoing(from, outgoing, w);
            return;
        }
        let flink = incoming.flink.clone().unwrap_or_default();
        let in_gates = flink.gates.clone().unwrap_or_default();
        let out_gates = outgoing
            .flink
            .as_ref()
            .and_then(|f| f.gates.clone())
            .unwrap_or_default();
        let in_wm = flink.watermark().unwrap_or(i64::MIN);
        let out_wm = outgoing.flink.as_ref().and_then(FlinkObs::watermark);
        let mut watermark_waits = Vec::new();
        if !in_gates.past(w) {
            watermark_waits.push(WatermarkWait {
                color: t.to,
                watermark: flink.watermark(),
                toggle: w,
            });
        }
        if !outgoing_gone && !out_gates.past(w) {
            watermark_waits.push(WatermarkWait {
                color: from,
                watermark: out_wm,
                toggle: w,
            });
        }
        self.watermark_waits(&watermark_waits);
        let mut waiting = incoming_waits(settings, &incoming);
        if !outgoing_gone && let Some(why) = self.outgoing_unsettled(settings, outgoing) {
            // Its report of being past W may be a previous attempt's (a restart replays from a
            // checkpoint below W).
            waiting.push(why);
        }
        if !outgoing_gone && let Some(missing) = self.outgoing_gates_missing(&out_gates) {
            waiting.push(missing);
        }
        for wait in &watermark_waits {
            waiting.push(wait.to_string());
        }
        if let (Some(max_lag), Some(out)) = (settings.max_lag, out_wm) {
            let lag = out.saturating_sub(in_wm);
            if u128::try_from(lag).unwrap_or(0) > max_lag.as_millis() {
                waiting.push(format!("the incoming job to catch up (lag {lag} ms)"));
            }
        }
        let manual_promote = self.obs.action == Some(ManualAction::Promote);
        if !waiting.is_empty() {
            self.health.progressing(
                Reason::ToggleSet,
                format!("waiting for {}", waiting.join(", ")),
            );
            return;
        }
        if settings.promotion == crate::resource::Promotion::Manual && !manual_promote {
            self.health.progressing(
                Reason::AwaitingPromotion,
                "healthy; set the annotation bluegreen.dev/action=promote to promote".into(),
            );
            return;
        }
        if manual_promote {
            self.actions.push(Action::ClearManualAction);
        }
        self.promote(settings, &t, [(t.to, &in_gates), (from, &out_gates)]);
    }

    /// Promotes the incoming color: ClearToTeardown, noting which gates passed W by idleness.
    pub(super) fn promote(
        &mut self,
        settings: &Settings,
        t: &Transition,
        gates: [(Color, &GateObs); 2],
    ) {
        let w = t.toggle.expect("W is set in ToggleSet");
        let idle: Vec<Color> = gates
            .into_iter()
            .filter(|(_, g)| g.relies_on_idleness(w))
            .map(|(c, _)| c)
            .collect();
        if !idle.is_empty() {
            self.note(
                false,
                EventReason::PastWByIdleness,
                format!(
                    "the gates of {idle:?} count as past W = {w} because all their inputs are idle"
                ),
            );
        }
        self.transition().past_w_by_idleness = idle;
        self.status.active_color = Some(t.to);
        if let Some(repair) = repaired(t) {
            // The incoming child runs the outgoing job's template: that is what is deployed, and
            // the template of this handover is not retried until it changes.
            self.status
                .deployed_template_hash
                .clone_from(&repair.template_hash);
            self.status.failed_template_hash = Some(t.template_hash.clone());
            self.note(
                false,
                EventReason::ForwardRepaired,
                format!(
                    "{} promoted at W = {w} after its forward repair: it runs the outgoing job's template {}, not {}; change the template to try again",
                    t.to,
                    repair.template_hash.as_deref().unwrap_or("?"),
                    t.template_hash
                ),
            );
        } else {
            // Promotion waits in ToggleSet, which applies a template change first: the observed
            // spec is the one this handover deployed.
            self.status.deployed_template_hash = Some(t.template_hash.clone());
            self.status.deployed_spec = Some(self.obs.spec.clone());
            self.status.deployed_redeploy_nonce = t.redeploy_nonce;
        }
        self.transition().waiting_for_watermarks.clear();
        self.set_phase(Phase::ClearToTeardown);
        self.note(
            false,
            EventReason::Promoted,
            format!("{} promoted at W = {w}", t.to),
        );
        self.health.progressing(
            Reason::ClearToTeardown,
            format!("keeping the outgoing job for {:?}", settings.deletion_delay),
        );
    }

    /// Records the watermarks the handover waits on; an event when that set changes.
    pub(super) fn watermark_waits(&mut self, waits: &[WatermarkWait]) {
        let before: Vec<Color> = self
            .transition()
            .waiting_for_watermarks
            .iter()
            .map(|w| w.color)
            .collect();
        let now: Vec<Color> = waits.iter().map(|w| w.color).collect();
        if !now.is_empty() && before != now {
            let list: Vec<String> = waits.iter().map(ToString::to_string).collect();
            self.note(
                false,
                EventReason::WaitingForWatermark,
                format!("waiting for {}", list.join(", ")),
            );
        }
        self.transition().waiting_for_watermarks = waits.to_vec();
    }
}

/// What the incoming job still needs before promotion: to run the current template and to have
/// completed `minCheckpoints` checkpoints.
fn incoming_waits(settings: &Settings, incoming: &ChildObs) -> Vec<String> {
    let mut waiting = Vec::new();
    if !incoming.running() {
        waiting.push("the incoming job to run".to_owned());
    } else if incoming.upgrading {
        // Updated in place (a template change in ToggleSet): what runs, and reports, is the job
        // of the old template until the operator has applied the new one; if that upgrade
        // fails, the forward repair takes over.
        waiting.push("the Flink operator to apply the incoming job's updated template".to_owned());
    }
    let completed = incoming
        .flink
        .as_ref()
        .map_or(0, |f| f.checkpoints_completed);
    if completed < u64::from(settings.min_checkpoints) {
        waiting.push(format!(
            "{completed} of {} checkpoints",
            settings.min_checkpoints
        ));
    }
    waiting
}
