//! The reasons of the Kubernetes Events the controller publishes; docs/controller.md lists
//! them all (a test keeps the two in agreement).

named_enum!(
    /// An Event's `reason`.
    EventReason {
        /// The first deployment's child is applied.
        Deploying,
        /// The first deployment's job runs.
        Deployed,
        /// The first deployment's job failed.
        FirstDeploymentFailed,
        /// The spec is refused (once per message).
        InvalidSpec,
        /// A cluster a child runs in cannot be used (once per message).
        ClusterUnavailable,
        /// A handover starts.
        HandoverStarted,
        /// The savepoint a handover starts from completed.
        SavepointCompleted,
        /// That savepoint failed.
        SavepointFailed,
        /// W is proposed.
        ToggleProposed,
        /// A proposed W is raised above a gate's progress.
        ToggleRaised,
        /// W is set.
        ToggleSet,
        /// The incoming color is promoted.
        Promoted,
        /// The outgoing job is gone; the handover is over.
        HandoverCompleted,
        /// A handover is being aborted before W was set.
        HandoverAborting,
        /// A manual action is refused.
        ActionRefused,
        /// The coordination ConfigMap is rewritten from the status.
        ConfigMapRepaired,
        /// The final savepoint of a deleted resource completed.
        FinalSavepoint,
        /// The outgoing job is stopped with a savepoint.
        OutgoingStopped,
        /// The outgoing job's stop drains (its inputs are idle).
        OutgoingDrained,
        /// The outgoing job's stop-with-savepoint failed for good.
        OutgoingStopFailed,
        /// The outgoing job's stop-with-savepoint is retried by `bluegreen.dev/action=teardown`.
        OutgoingStopRetried,
        /// The outgoing job restarted after W was set.
        OutgoingRestarted,
        /// The outgoing job failed for good after W was set.
        OutgoingFailed,
        /// A failed outgoing job is deleted by `bluegreen.dev/action=teardown`.
        OutgoingDeleted,
        /// A gate's watermark has not passed W yet.
        WaitingForWatermark,
        /// A job counts as past W because its inputs are idle.
        PastWByIdleness,
        /// The floor is cleared, or there is none to clear.
        FloorCleared,
        /// The incoming job restarted.
        IncomingRestarted,
        /// The incoming job failed for good after W was set.
        IncomingFailedAfterToggle,
        /// A template change after W is applied to the incoming job in place.
        IncomingUpdatedInPlace,
        /// A failed incoming job is repaired forward.
        ForwardRepair,
        /// The forward repair brought the incoming job back.
        ForwardRepaired,
        /// A job's gates report the other color than their deployment's.
        GateColorMismatch,
        /// The active job's gates hold or report a problem.
        GatesHolding,
        /// The active job's gates recovered.
        GatesRecovered,
        /// The job is being suspended (`job.state: suspended`).
        Suspending,
        /// The job is being resumed (`job.state: running`).
        Resuming,
        /// The resource's deletion waits for the handover in progress.
        DeletionWaitsForHandover,
        /// The final savepoint of a deleted resource failed.
        FinalSavepointFailed,
    }
);

#[cfg(test)]
mod tests {
    use super::EventReason;

    /// The reasons docs/controller.md lists, in its order.
    fn documented() -> Vec<String> {
        let doc = include_str!("../../docs/controller.md");
        let start = doc
            .find("- Events (events.k8s.io/v1):")
            .expect("the list of events");
        let list = &doc[start..];
        let end = list.find("\n- ").expect("the next item");
        list[..end]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn docs_list_every_event_reason_and_no_other() {
        let names: Vec<&str> = EventReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(documented(), names);
    }
}
