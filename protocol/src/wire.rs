//! The names other programs see besides the ConfigMap's keys: the Flink configuration keys and
//! the environment variables that tell a job's gates and its sidecar where their coordination
//! state is, the gates' metric names, and the Apache Flink operator's `FlinkDeployment` resource.
//!
//! They are wire format: a job built with one release is read by a controller of another, so a
//! value never changes. `protocol/vectors/wire-names.json` lists every one with its value; the
//! Rust tests (`protocol/tests/wire_names.rs`) check it against these constants and the Java tests
//! (`WireNamesTest`) against the Java library's.

/// Flink configuration keys the controller sets on each child `FlinkDeployment`
/// (`spec.flinkConfiguration`), read by the gates in the job.
pub mod flink_config {
    /// The gate's color (`BLUE`/`GREEN`).
    pub const COLOR: &str = "bluegreen.gate.color";
    /// The coordination ConfigMap's name.
    pub const CONFIGMAP: &str = "bluegreen.gate.configmap";
    /// The coordination ConfigMap's namespace.
    pub const NAMESPACE: &str = "bluegreen.gate.namespace";
}

/// Environment variables of the gate's side: the controller sets them on the TaskManager's main
/// container and on the injected sidecar; the sidecar reads them as its configuration, the JNI
/// shim and the example job in the main container.
pub mod env {
    /// The child's color (`BLUE`/`GREEN`).
    pub const COLOR: &str = "BLUEGREEN_COLOR";
    /// The coordination ConfigMap's name.
    pub const CONFIGMAP: &str = "BLUEGREEN_CONFIGMAP";
    /// The coordination ConfigMap's namespace.
    pub const NAMESPACE: &str = "BLUEGREEN_NAMESPACE";
    /// The sidecar's base URL, for the job's `SidecarStateSource` (main container only).
    pub const SIDECAR_URL: &str = "BLUEGREEN_SIDECAR_URL";
    /// Where the sidecar listens (sidecar container only).
    pub const LISTEN: &str = "BLUEGREEN_LISTEN";
    /// The kubeconfig for the home API server, for the JNI shim of a job in another cluster
    /// without the sidecar (main container only; the sidecar gets `KUBECONFIG`).
    pub const HOME_KUBECONFIG: &str = "BLUEGREEN_HOME_KUBECONFIG";
}

/// The metrics every gate subtask registers in its operator metric group (the Java library's
/// `GateProcessFunction.METRIC_*`). Flink's REST API lists them as `<operator>.<name>`.
pub mod metrics {
    /// Counter: records passed.
    pub const PASSED: &str = "bluegreenGatePassed";
    /// Counter: records dropped (the other color's, or at or below W on the outgoing side).
    pub const DROPPED: &str = "bluegreenGateDropped";
    /// Counter: records dropped because they are at or below the floor F.
    pub const DROPPED_LATE: &str = "bluegreenGateDroppedLate";
    /// Counter: records held.
    pub const HELD: &str = "bluegreenGateHeld";
    /// Gauge: coordination updates refused as illegal transitions.
    pub const REFUSED_UPDATES: &str = "bluegreenGateRefusedUpdates";
    /// Gauge: errors of the gate's state source.
    pub const SOURCE_ERRORS: &str = "bluegreenGateSourceErrors";
    /// Gauge: the highest event time passed (restored state included).
    pub const MAX_PASSED_EVENT_TIME: &str = "bluegreenGateMaxPassedEventTime";
    /// Gauge: the applied epoch (`-1` before any state).
    pub const EPOCH: &str = "bluegreenGateEpoch";
    /// Gauge: the applied watermark stage (`-1` before any state).
    pub const WATERMARK_STAGE: &str = "bluegreenGateWatermarkStage";
    /// Gauge: the applied watermark toggle value W.
    pub const TOGGLE: &str = "bluegreenGateToggle";
    /// String gauge: the gate's acknowledgement line ([`crate::GateReport`]); the controller
    /// matches metric ids ending in it.
    pub const APPLIED_STATE: &str = "bluegreenGateAppliedState";
    /// Gauge: records in the hold buffer.
    pub const HELD_RECORDS: &str = "bluegreenGateHeldRecords";
    /// Gauge: bytes in the hold buffer.
    pub const HELD_BYTES: &str = "bluegreenGateHeldBytes";
    /// Gauge: age of the oldest held record, in milliseconds.
    pub const HELD_OLDEST_AGE_MS: &str = "bluegreenGateHeldOldestAgeMs";
}

/// The Apache Flink Kubernetes Operator's `FlinkDeployment`: the children the controller writes.
pub mod flink_deployment {
    /// The API group.
    pub const GROUP: &str = "flink.apache.org";
    /// The API version within [`GROUP`].
    pub const VERSION: &str = "v1beta1";
    /// `apiVersion`: `<GROUP>/<VERSION>`.
    pub const API_VERSION: &str = "flink.apache.org/v1beta1";
    /// `kind`.
    pub const KIND: &str = "FlinkDeployment";
    /// The resource's plural (its REST path segment).
    pub const PLURAL: &str = "flinkdeployments";
}

#[cfg(test)]
mod tests {
    use super::flink_deployment::{API_VERSION, GROUP, VERSION};

    #[test]
    fn the_api_version_is_group_and_version() {
        assert_eq!(API_VERSION, format!("{GROUP}/{VERSION}"));
    }
}
