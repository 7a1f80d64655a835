//! The states Flink and the Apache Flink Kubernetes operator report, spelled once for the
//! controller, the local runners and their REST fakes. Flink or the operator may report a value
//! this list lacks: [`Reported`] keeps it, by its spelling, as [`Reported::Unknown`].

use std::fmt;
use std::str::FromStr;

spelled_enum!(
    /// A Flink job's state (Flink's `JobStatus`): `GET /jobs/:jid`'s `state`, the overview's
    /// `status` and the FlinkDeployment's `status.jobStatus.state`.
    JobStatus, "one of INITIALIZING, CREATED, RUNNING, FAILING, FAILED, CANCELLING, CANCELED, FINISHED, RESTARTING, SUSPENDED, RECONCILING", {
        /// The job is being submitted.
        Initializing => "INITIALIZING",
        /// Submitted, its tasks not yet scheduled.
        Created => "CREATED",
        /// Processing.
        Running => "RUNNING",
        /// Failing, its tasks being cancelled.
        Failing => "FAILING",
        /// Failed for good.
        Failed => "FAILED",
        /// Being cancelled.
        Cancelling => "CANCELLING",
        /// Cancelled.
        Canceled => "CANCELED",
        /// Finished (a bounded job's end, or stopped with a savepoint).
        Finished => "FINISHED",
        /// Restarting after a failure.
        Restarting => "RESTARTING",
        /// Suspended (the JobManager lost leadership, or the operator suspended it).
        Suspended => "SUSPENDED",
        /// Being recovered by a new JobManager.
        Reconciling => "RECONCILING",
    }
);

impl JobStatus {
    /// Whether the job will never run again (Flink's globally terminal states).
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Finished | Self::Canceled | Self::Failed)
    }
}

spelled_enum!(
    /// A FlinkDeployment's `status.lifecycleState` (the operator's `ResourceLifecycleState`).
    LifecycleState, "one of CREATED, SUSPENDED, UPGRADING, DEPLOYED, STABLE, ROLLING_BACK, ROLLED_BACK, FAILED, DELETING, DELETED", {
        /// Created, not yet deployed.
        Created => "CREATED",
        /// Suspended by its spec.
        Suspended => "SUSPENDED",
        /// A new spec is being applied.
        Upgrading => "UPGRADING",
        /// Deployed, not yet known to be stable.
        Deployed => "DEPLOYED",
        /// Deployed and running as its spec asks.
        Stable => "STABLE",
        /// Rolling back to the last stable spec.
        RollingBack => "ROLLING_BACK",
        /// Rolled back to the last stable spec.
        RolledBack => "ROLLED_BACK",
        /// Failed (job or deployment error).
        Failed => "FAILED",
        /// Being deleted.
        Deleting => "DELETING",
        /// Deleted.
        Deleted => "DELETED",
    }
);

spelled_enum!(
    /// A FlinkDeployment's `status.reconciliationStatus.state` (the operator's
    /// `ReconciliationState`).
    ReconciliationState, "one of DEPLOYED, UPGRADING, ROLLING_BACK, ROLLED_BACK", {
        /// The last reconciled spec is deployed.
        Deployed => "DEPLOYED",
        /// A new spec is being applied.
        Upgrading => "UPGRADING",
        /// Rolling back to the last stable spec.
        RollingBack => "ROLLING_BACK",
        /// Rolled back to the last stable spec.
        RolledBack => "ROLLED_BACK",
    }
);

/// A state as Flink or the operator reported it: one we know, or the spelling of one we do not
/// (never equal to a known state, kept for messages).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Reported<T> {
    /// A state of the list.
    Known(T),
    /// A spelling the list lacks.
    Unknown(String),
}

impl<T: FromStr> Reported<T> {
    /// The state of a spelling: known when it matches one exactly, unknown otherwise.
    #[must_use]
    pub fn parse(s: &str) -> Self {
        s.parse()
            .map_or_else(|_| Self::Unknown(s.to_owned()), Self::Known)
    }
}

impl<T: Copy + PartialEq> Reported<T> {
    /// Whether it is the known state `state`.
    pub fn is(&self, state: T) -> bool {
        self.known() == Some(state)
    }

    /// The known state, `None` for an unknown one.
    pub fn known(&self) -> Option<T> {
        match self {
            Self::Known(t) => Some(*t),
            Self::Unknown(_) => None,
        }
    }
}

impl<T> From<T> for Reported<T> {
    fn from(state: T) -> Self {
        Self::Known(state)
    }
}

impl<T: fmt::Display> fmt::Display for Reported<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Known(t) => t.fmt(f),
            Self::Unknown(s) => f.write_str(s),
        }
    }
}

impl<'de, T: FromStr> serde::Deserialize<'de> for Reported<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(Self::parse(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for s in JobStatus::ALL {
            assert_eq!(Reported::parse(s.as_str()), Reported::Known(*s));
        }
        for s in LifecycleState::ALL {
            assert_eq!(Reported::parse(s.as_str()), Reported::Known(*s));
        }
        for s in ReconciliationState::ALL {
            assert_eq!(s.as_str().parse::<ReconciliationState>(), Ok(*s));
        }
    }

    #[test]
    fn an_unknown_state_is_kept_and_matches_no_known_one() {
        let r = Reported::<JobStatus>::parse("running");
        assert_eq!(r, Reported::Unknown("running".into()));
        assert!(JobStatus::ALL.iter().all(|s| !r.is(*s)));
        assert_eq!(r.to_string(), "running");
        let r: Reported<LifecycleState> = serde_json::from_str("\"NEW_STATE\"").unwrap();
        assert_eq!(r.known(), None);
        assert_eq!(r.to_string(), "NEW_STATE");
    }
}
