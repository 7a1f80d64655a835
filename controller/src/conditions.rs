//! The `Ready`, `Progressing` and `Degraded` conditions, their types and reasons (pure).

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::resource::{Condition, Phase};

named_enum!(
    /// A condition's type: each status has the three.
    ConditionType {
        /// The active job runs and no handover is in progress.
        Ready,
        /// A handover is in progress (or blocked, then `False`).
        Progressing,
        /// A problem needs attention.
        Degraded,
    }
);

named_enum!(
    /// Why a condition has its status; shown as its name (`Running`, `ToggleSet`, ...).
    Reason {
        /// The active job runs and no handover is in progress (`Ready`).
        Running,
        /// A handover is in progress (`Ready`).
        HandoverInProgress,
        /// The active job does not run, or a problem needs attention (`Ready`).
        NotReady,
        /// The active job is suspended by `spec.template.spec.job.state: suspended` (`Ready`).
        Suspended,
        /// No handover is in progress (`Progressing`).
        Idle,
        /// No problem found (`Degraded`).
        AsExpected,
        /// Taking the state the incoming job starts from.
        Snapshotting,
        /// Waiting to retry a failed savepoint.
        SavepointBackoff,
        /// The savepoint failed too often.
        SavepointFailed,
        /// The outgoing job has no completed checkpoint to start from.
        NoCheckpoint,
        /// The outgoing job does not run.
        OutgoingNotRunning,
        /// Waiting for the incoming job to run.
        Deploying,
        /// The incoming job does not run yet.
        IncomingNotRunning,
        /// The incoming job failed before W was set.
        IncomingFailed,
        /// The incoming job has not yet run `minReady` with every task RUNNING and no restart.
        IncomingNotReady,
        /// A job reports no gate metrics.
        NoGateMetrics,
        /// A job's gates say they are of the other color than the deployment they run in.
        GateColorMismatch,
        /// W is proposed; waiting for the outgoing gates to acknowledge it.
        ConfirmingToggle,
        /// The outgoing gates have not acknowledged W.
        GatesNotAcknowledged,
        /// With no handover in progress, the active job's gates have held every record or reported
        /// a problem for the grace period.
        GatesHolding,
        /// W is not ahead of the outgoing gates.
        ToggleInPast,
        /// W is set; waiting for health and both watermarks past W.
        ToggleSet,
        /// Waiting for a manual promotion.
        AwaitingPromotion,
        /// Promoted; the outgoing job is kept for the deletion delay.
        ClearToTeardown,
        /// Stopping and deleting the outgoing job.
        TearingDown,
        /// Waiting to retry the outgoing job's stop-with-savepoint.
        TeardownBackoff,
        /// The outgoing job's stop-with-savepoint failed for good.
        OutgoingStopFailed,
        /// The outgoing job failed for good after W was set; it is restarted from its latest
        /// checkpoint.
        OutgoingFailed,
        /// The outgoing job kept failing after its restarts; it needs a person.
        OutgoingRestartFailed,
        /// The outgoing job restarted after W was set and has not run `minReady` since.
        OutgoingNotReady,
        /// Deleting the incoming child of an aborted handover.
        Aborting,
        /// A handover was aborted.
        HandoverAborted,
        /// The template changed before W was set.
        SpecChanged,
        /// Aborted by the `bluegreen.dev/action` annotation.
        ManualAbort,
        /// The active color's FlinkDeployment is missing.
        ActiveChildMissing,
        /// The active job failed.
        ActiveJobFailed,
        /// The first deployment's job failed.
        FirstDeploymentFailed,
        /// The spec cannot be rendered.
        InvalidSpec,
        /// A cluster a child runs in cannot be used (`spec.cluster`); nothing is done until it can.
        ClusterUnavailable,
        /// The coordination ConfigMap differs from the status.
        ConfigMapDiverged,
        /// The incoming job failed after W was set.
        IncomingFailedAfterToggle,
        /// The incoming child is missing after W was set.
        IncomingMissingAfterToggle,
        /// Redeploying a failed incoming job with the outgoing job's template.
        ForwardRepairing,
        /// The incoming job runs the outgoing job's template after a forward repair.
        ForwardRepaired,
        /// The forward repair did not bring the incoming job back.
        ForwardRepairFailed,
        /// The resource is being deleted (`onDelete: savepointThenDelete`): its handover ends first.
        DeletionWaitsForHandover,
    }
);

/// What one planning step concluded about the resource's health.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Health {
    /// The active job runs and no handover is in progress.
    pub ready: bool,
    /// The active job is suspended on purpose (`job.state: suspended`), not running.
    pub suspended: bool,
    /// Reason and message of work in progress.
    pub progressing: Option<(Reason, String)>,
    /// Reason and message of a problem that needs attention.
    pub degraded: Option<(Reason, String)>,
}

impl Health {
    /// Records work in progress.
    pub fn progressing(&mut self, reason: Reason, message: String) {
        self.progressing = Some((reason, message));
    }

    /// Records a problem.
    pub fn degraded(&mut self, reason: Reason, message: String) {
        self.degraded = Some((reason, message));
    }
}

/// Sets the three conditions from `health`, keeping `lastTransitionTime` when a status is
/// unchanged.
pub fn update(
    conditions: &mut Vec<Condition>,
    health: &Health,
    phase: Option<Phase>,
    generation: i64,
    now: Timestamp,
) {
    let ready = health.ready && phase.is_none() && health.degraded.is_none();
    let (ready_reason, ready_message) = if ready {
        (Reason::Running, "the active job is running".to_owned())
    } else if let (Some(phase), None) = (phase, &health.degraded) {
        (
            Reason::HandoverInProgress,
            format!("handover in phase {phase:?}"),
        )
    } else if health.suspended && health.degraded.is_none() {
        (
            Reason::Suspended,
            "the job is suspended (spec.template.spec.job.state: suspended); set it to running to resume it from its savepoint".to_owned(),
        )
    } else {
        (
            Reason::NotReady,
            health.degraded.as_ref().map_or_else(
                || "the active job is not running".into(),
                |(_, m)| m.clone(),
            ),
        )
    };
    set(
        conditions,
        ConditionType::Ready,
        ready,
        ready_reason,
        ready_message,
        generation,
        now,
    );
    match &health.progressing {
        Some((reason, message)) if phase.is_some() => {
            set(
                conditions,
                ConditionType::Progressing,
                true,
                *reason,
                message.clone(),
                generation,
                now,
            );
        }
        // A handover that is blocked on a problem does not progress; one with nothing to report
        // still does. Never "no handover in progress" while one is.
        _ => match (phase, &health.degraded) {
            (Some(phase), Some((reason, message))) => set(
                conditions,
                ConditionType::Progressing,
                false,
                *reason,
                format!("the handover in phase {phase:?} is blocked: {message}"),
                generation,
                now,
            ),
            (Some(phase), None) => set(
                conditions,
                ConditionType::Progressing,
                true,
                Reason::HandoverInProgress,
                format!("handover in phase {phase:?}"),
                generation,
                now,
            ),
            (None, _) => set(
                conditions,
                ConditionType::Progressing,
                false,
                Reason::Idle,
                "no handover in progress".into(),
                generation,
                now,
            ),
        },
    }
    match &health.degraded {
        Some((reason, message)) => set(
            conditions,
            ConditionType::Degraded,
            true,
            *reason,
            message.clone(),
            generation,
            now,
        ),
        None => set(
            conditions,
            ConditionType::Degraded,
            false,
            Reason::AsExpected,
            "no problem found".into(),
            generation,
            now,
        ),
    }
}

fn set(
    conditions: &mut Vec<Condition>,
    type_: ConditionType,
    status: bool,
    reason: Reason,
    message: String,
    generation: i64,
    now: Timestamp,
) {
    let status = if status { "True" } else { "False" }.to_owned();
    // The CRD keys the list by type: keep the first entry of this type, drop any other.
    let mut seen = false;
    let type_ = type_.as_str();
    conditions.retain(|c| c.type_ != type_ || !std::mem::replace(&mut seen, true));
    let existing = conditions.iter_mut().find(|c| c.type_ == type_);
    let last_transition_time = match &existing {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Time(now),
    };
    let condition = Condition {
        type_: type_.to_owned(),
        status,
        reason: reason.as_str().to_owned(),
        message,
        last_transition_time,
        observed_generation: Some(generation),
    };
    match existing {
        Some(c) => *c = condition,
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_transition_time_changes_only_with_the_status() {
        let mut conditions = Vec::new();
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let t1: Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        let mut health = Health {
            ready: true,
            ..Health::default()
        };
        update(&mut conditions, &health, None, 1, t0);
        update(&mut conditions, &health, None, 1, t1);
        let ready = conditions
            .iter()
            .find(|c| c.type_ == ConditionType::Ready.as_str())
            .unwrap();
        assert_eq!(ready.last_transition_time, Time(t0));
        health.degraded(Reason::InvalidSpec, "broken".into());
        update(&mut conditions, &health, None, 2, t1);
        let ready = conditions
            .iter()
            .find(|c| c.type_ == ConditionType::Ready.as_str())
            .unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.last_transition_time.clone()),
            ("False", Time(t1))
        );
        let degraded = conditions
            .iter()
            .find(|c| c.type_ == ConditionType::Degraded.as_str())
            .unwrap();
        assert_eq!(
            (degraded.status.as_str(), degraded.reason.as_str()),
            ("True", "InvalidSpec")
        );
    }

    #[test]
    fn one_condition_per_type_is_kept() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let health = Health {
            ready: true,
            ..Health::default()
        };
        let mut conditions = Vec::new();
        update(&mut conditions, &health, None, 1, t0);
        let duplicate = conditions[0].clone();
        conditions.push(duplicate);
        update(&mut conditions, &health, None, 2, t0);
        let types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "Progressing", "Degraded"]);
    }
}
