//! Forward repair: an incoming job that fails for good after W is set is never aborted (the
//! outgoing job has dropped the records above W). After `coordination.forwardRepair.grace` the
//! planner redeploys it with the template that last ran well — the spec the outgoing child was
//! rendered from, `status.deployedSpec` — from the failed job's **own** latest checkpoint (never
//! the handover's starting state, which would emit records twice), then follows the redeploy.
//! Every step is written to `status.transition.forwardRepair` before it is taken, and re-derived
//! from it on every plan.

use std::time::Duration;

use bluegreen_protocol::Color;

use super::{Action, Planner};
use crate::conditions::Reason;
use crate::events::EventReason;
use crate::observed::ChildObs;
use crate::resource::{FlinkBlueGreenDeploymentSpec, ForwardRepair, MicroTime, Transition};
use crate::settings::Settings;

/// The Apache operator's upgrade mode that restores a job from its own latest checkpoint (its
/// HA metadata) when its spec changes, also after it has FAILED.
pub const LAST_STATE: &str = "last-state";

/// What the repaired child is rendered from: the spec that last ran well, upgraded `last-state`.
pub fn repair_spec(deployed: &FlinkBlueGreenDeploymentSpec) -> FlinkBlueGreenDeploymentSpec {
    let mut spec = deployed.clone();
    spec.template.spec.job.upgrade_mode = Some(LAST_STATE.into());
    spec
}

/// The forward repair of `t` once it was decided (not while its grace runs).
pub(super) fn repaired(t: &Transition) -> Option<&ForwardRepair> {
    t.forward_repair.as_ref().filter(|r| r.started_at.is_some())
}

/// The history's reason for a handover completed after a forward repair.
pub(super) fn summary(r: &ForwardRepair, w: Option<i64>) -> String {
    format!(
        "ForwardRepaired: the incoming job failed after W = {} was set ({}); it was redeployed with the outgoing job's template {} from its own checkpoint {}",
        w.map_or_else(|| "?".to_owned(), |w| w.to_string()),
        r.error.as_deref().unwrap_or("no error reported"),
        r.template_hash.as_deref().unwrap_or("?"),
        r.restore_path.as_deref().unwrap_or("?"),
    )
}

impl Planner<'_> {
    /// `Degraded/ForwardRepaired` when the last handover completed by a forward repair: the
    /// active job runs the previous template, not the one asked for. Returns whether it applies.
    pub(super) fn repaired_degraded(&mut self) -> bool {
        let Some(repair) = self
            .status
            .history
            .first()
            .and_then(|h| h.forward_repair.as_ref().map(|r| (h.to, r)))
        else {
            return false;
        };
        let (active, r) = repair;
        let message = format!(
            "the last handover's incoming job failed after W and was repaired forward: the {} job runs the previous template ({}), not the one asked for; change the template to try again",
            active.suffix(),
            r.template_hash.as_deref().unwrap_or("?")
        );
        self.health.degraded(Reason::ForwardRepaired, message);
        true
    }

    /// The incoming job in `ToggleSet`: records its failure, repairs it forward after the grace
    /// and follows the redeploy. Returns whether the handover waits on it.
    pub(super) fn forward_repair(
        &mut self,
        settings: &Settings,
        t: &Transition,
        incoming: &ChildObs,
    ) -> bool {
        let w = t.toggle.expect("W is set in ToggleSet");
        match t.forward_repair.clone() {
            None if !incoming.failed() => false,
            None => {
                let record = ForwardRepair {
                    failed_job_id: incoming.job_id.clone(),
                    error: incoming.error.clone(),
                    ..ForwardRepair::new(MicroTime(self.now()))
                };
                let next = match settings.forward_repair {
                    Some(grace) => format!(
                        "it is repaired forward in {grace:?} (coordination.forwardRepair.grace) unless the template changes first"
                    ),
                    None => {
                        "coordination.forwardRepair is off: change the template to repair it".into()
                    }
                };
                self.note(
                    true,
                    EventReason::IncomingFailedAfterToggle,
                    format!(
                        "the incoming {} job failed after W = {w} was set ({}); {next}",
                        t.to,
                        error(incoming)
                    ),
                );
                self.transition().forward_repair = Some(record.clone());
                self.failed_before_repair(settings, t, w, &record, incoming);
                true
            }
            Some(record) if record.started_at.is_none() => {
                if incoming.failed() {
                    self.failed_before_repair(settings, t, w, &record, incoming);
                    true
                } else {
                    // It left FAILED without us (a person redeployed it): nothing to repair.
                    self.transition().forward_repair = None;
                    false
                }
            }
            Some(record) => self.follow_repair(settings, t, w, record, incoming),
        }
    }

    /// The incoming job is FAILED and not repaired yet: waits for the grace, then decides the
    /// repair (status first, then the action).
    fn failed_before_repair(
        &mut self,
        settings: &Settings,
        t: &Transition,
        w: i64,
        record: &ForwardRepair,
        incoming: &ChildObs,
    ) {
        let failed = format!(
            "the incoming job failed after W = {w} was set ({}); the outgoing job still emits t <= W and nothing is lost",
            error(incoming)
        );
        let Some(grace) = settings.forward_repair else {
            self.health.degraded(
                Reason::IncomingFailedAfterToggle,
                format!("{failed}; coordination.forwardRepair is off: change the template to redeploy the incoming job in place from its own state"),
            );
            return;
        };
        if self.since(&record.failed_since) <= grace {
            self.health.degraded(
                Reason::IncomingFailedAfterToggle,
                format!("{failed}; it is repaired forward once it has been FAILED for {grace:?} (coordination.forwardRepair.grace), unless the template changes first"),
            );
            return;
        }
        let from = t.from.expect("a handover has an outgoing color");
        let outgoing_hash = self.obs.child(from).and_then(|c| c.template_hash.clone());
        let (Some(template_hash), Some(spec)) = (
            self.status.deployed_template_hash.clone(),
            self.status.deployed_spec.clone(),
        ) else {
            self.health.degraded(
                Reason::IncomingFailedAfterToggle,
                format!("{failed}; it cannot be repaired forward automatically: the status has no record of the spec the outgoing job was deployed with (status.deployedSpec, recorded since forward repair exists); change the template"),
            );
            return;
        };
        if outgoing_hash.as_deref() != Some(template_hash.as_str()) {
            self.health.degraded(
                Reason::IncomingFailedAfterToggle,
                format!("{failed}; it cannot be repaired forward automatically: the outgoing FlinkDeployment does not run the recorded template {template_hash} (it carries {outgoing_hash:?}); change the template"),
            );
            return;
        }
        let Some(flink) = &incoming.flink else {
            self.health.degraded(
                Reason::IncomingFailedAfterToggle,
                format!("{failed}; waiting for its Flink REST API to name its latest checkpoint, to repair it forward from there"),
            );
            return;
        };
        let Some(checkpoint) = flink.latest_checkpoint.clone() else {
            self.health.degraded(
                Reason::IncomingFailedAfterToggle,
                format!("{failed}; it has no completed checkpoint of its own to resume from, and the controller never restarts it from the handover's starting state (that can emit records twice), so it is not repaired automatically: change the template"),
            );
            return;
        };
        let now = MicroTime(self.now());
        let repair = self
            .transition()
            .forward_repair
            .get_or_insert_with(|| record.clone());
        repair.started_at = Some(now);
        repair.template_hash = Some(template_hash.clone());
        repair.restore_path = Some(checkpoint.clone());
        self.note(
            true,
            EventReason::ForwardRepair,
            format!(
                "the incoming {} job has been FAILED for over {grace:?} after W = {w}: redeploying it with the outgoing job's template {template_hash} (the one that last ran well) from its own latest checkpoint {checkpoint}",
                t.to
            ),
        );
        self.repair_step(t.to, &spec, template_hash, checkpoint);
        self.health
            .degraded(Reason::IncomingFailedAfterToggle, failed);
    }

    /// Applies the repaired child (again, after a restart: the step is idempotent).
    fn repair_step(
        &mut self,
        color: Color,
        deployed: &FlinkBlueGreenDeploymentSpec,
        template_hash: String,
        checkpoint: String,
    ) {
        self.health.progressing(
            Reason::ForwardRepairing,
            format!("redeploying the {} job with template {template_hash} from its own latest checkpoint {checkpoint}", color.suffix()),
        );
        self.place(color);
        self.actions.push(Action::RepairChild {
            color,
            spec: Box::new(repair_spec(deployed)),
            template_hash,
            restore_path: checkpoint,
        });
    }

    /// The repair was decided: resends it until the child carries the outgoing template, then
    /// waits for the Flink operator's redeploy. Returns whether the handover waits on it.
    fn follow_repair(
        &mut self,
        settings: &Settings,
        t: &Transition,
        w: i64,
        mut record: ForwardRepair,
        incoming: &ChildObs,
    ) -> bool {
        let hash = record.template_hash.clone().unwrap_or_default();
        let checkpoint = record.restore_path.clone().unwrap_or_default();
        let applied = incoming.template_hash.as_deref() == Some(hash.as_str());
        if applied
            && !record.redeployed
            && (!incoming.failed() || incoming.job_id != record.failed_job_id)
        {
            record.redeployed = true;
            self.transition().forward_repair = Some(record.clone());
        }
        if !applied {
            match self.status.deployed_spec.clone() {
                Some(spec) => self.repair_step(t.to, &spec, hash, checkpoint),
                None => self.health.degraded(
                    Reason::ForwardRepairFailed,
                    "the status lost the spec the repair redeploys (status.deployedSpec); change the template".into(),
                ),
            }
            return true;
        }
        if !incoming.failed() {
            return false;
        }
        if record.redeployed {
            self.health.degraded(
                Reason::ForwardRepairFailed,
                format!(
                    "the incoming job failed again after its forward repair with template {hash} ({}); it is not repaired again: change the template (applied in place from its own latest state); the outgoing job still emits t <= W = {w}",
                    error(incoming)
                ),
            );
            return true;
        }
        let waited = record
            .started_at
            .as_ref()
            .map_or(Duration::ZERO, |s| self.since(s));
        self.health.progressing(
            Reason::ForwardRepairing,
            format!("waiting for the Flink operator to redeploy the incoming job from its own latest checkpoint {checkpoint}"),
        );
        if waited > settings.abort_grace {
            self.health.degraded(
                Reason::ForwardRepairFailed,
                format!(
                    "the Flink operator has not redeployed the incoming job within {:?} (coordination.abortGracePeriod) of its forward repair ({}); check its FlinkDeployment (last-state upgrades need Flink HA), or change the template",
                    settings.abort_grace,
                    error(incoming)
                ),
            );
        } else {
            self.health.degraded(
                Reason::IncomingFailedAfterToggle,
                format!(
                    "the incoming job failed after W = {w} was set and is being repaired forward"
                ),
            );
        }
        true
    }
}

fn error(child: &ChildObs) -> &str {
    child.error.as_deref().unwrap_or("no error reported")
}
