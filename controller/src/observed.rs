//! What one reconcile saw: the resource, its children, the ConfigMap and what Flink's REST API
//! reported. Gathered by `observe`, consumed by the pure `handover::plan`.

use bluegreen_protocol::{Color, CoordinationState};
use jiff::Timestamp;

use crate::resource::FlinkBlueGreenDeploymentStatus;
use crate::settings::Settings;

/// A manual operation requested with the `bluegreen.dev/action` annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManualAction {
    /// Promote now (manual promotion), once both watermarks are past W.
    Promote,
    /// Abort the handover (only before W is set).
    Abort,
    /// Delete the outgoing job now instead of after the deletion delay.
    Teardown,
    /// Clear the floor (no handover in progress): a new epoch in which records at or below the
    /// last W are emitted again, for a deliberate reprocessing.
    ClearFloor,
}

impl ManualAction {
    /// Parses the annotation value.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "promote" => Some(Self::Promote),
            "abort" => Some(Self::Abort),
            "teardown" => Some(Self::Teardown),
            "clear-floor" => Some(Self::ClearFloor),
            _ => None,
        }
    }
}

/// The coordination ConfigMap as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigMapObs {
    /// No ConfigMap.
    Absent,
    /// A ConfigMap that parses.
    Valid(CoordinationState),
    /// A ConfigMap that does not parse (hand-edited); the message says why.
    Invalid(String),
}

/// One child FlinkDeployment as found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildObs {
    /// The `bluegreen.dev/template-hash` annotation.
    pub template_hash: Option<String>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `status.lifecycleState` (CREATED, DEPLOYED, STABLE, FAILED, SUSPENDED, ...).
    pub lifecycle: Option<String>,
    /// `status.jobStatus.state` (CREATED, RUNNING, FAILING, FAILED, ...).
    pub job_state: Option<String>,
    /// `status.jobStatus.jobId`.
    pub job_id: Option<String>,
    /// `status.error`.
    pub error: Option<String>,
    /// `spec.job.state` of the child (`running` or `suspended`).
    pub spec_job_state: Option<String>,
    /// What the job's REST API reported, if it was reachable.
    pub flink: Option<FlinkObs>,
}

impl ChildObs {
    /// The job is running (Apache operator's view) and not being deleted.
    pub fn running(&self) -> bool {
        !self.deleting && self.job_state.as_deref() == Some("RUNNING")
    }

    /// The job has ended or is suspended, so it holds no uncommitted output: deleting its child
    /// loses nothing.
    pub fn holds_no_output(&self) -> bool {
        self.failed()
            || matches!(
                self.job_state.as_deref(),
                Some("FINISHED" | "CANCELED" | "SUSPENDED")
            )
            || self.lifecycle.as_deref() == Some("SUSPENDED")
    }

    /// The job failed for good (restart strategy exhausted or deployment error).
    pub fn failed(&self) -> bool {
        self.job_state.as_deref() == Some("FAILED") || self.lifecycle.as_deref() == Some("FAILED")
    }
}

/// What a job's REST API reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlinkObs {
    /// Completed checkpoints of the current job.
    pub checkpoints_completed: u64,
    /// External path of the latest completed checkpoint.
    pub latest_checkpoint: Option<String>,
    /// Status of the savepoint whose trigger id is in the resource's status.
    pub savepoint: Option<SavepointObs>,
    /// The gates' metrics, aggregated over subtasks.
    pub gates: Option<GateObs>,
    /// The minimum current input watermark over the gate operator's subtasks.
    pub watermark: Option<i64>,
}

/// A savepoint's progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SavepointObs {
    /// Still being taken.
    InProgress,
    /// Done, at this path.
    Completed(String),
    /// Failed, for this reason.
    Failed(String),
    /// The trigger id is unknown to the job: the request never arrived, or the JobManager failed
    /// over.
    Unknown,
}

/// Gate metrics of one job, aggregated over its subtasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GateObs {
    /// The lowest epoch any gate has applied.
    pub min_epoch: u64,
    /// The lowest watermark stage any gate has applied (0 not set, 1 waiting, 2 set).
    pub min_watermark_stage: u8,
    /// The highest event time any gate has passed (`None`: nothing passed yet).
    pub max_passed: Option<i64>,
}

/// Everything `plan` needs for one resource.
#[derive(Debug, Clone)]
pub struct Observed {
    /// Wall-clock time of the observation.
    pub now: Timestamp,
    /// `metadata.generation`.
    pub generation: i64,
    /// The validated settings, or why the spec is invalid.
    pub settings: Result<Settings, (String, String)>,
    /// Hash of `spec.template` without `job.state` (which is applied in place).
    pub template_hash: String,
    /// `spec.template.spec.job.initialSavepointPath`.
    pub initial_savepoint: Option<String>,
    /// `spec.template.spec.job.savepointRedeployNonce`.
    pub redeploy_nonce: Option<i64>,
    /// `spec.template.spec.job.state`, defaulting to `running`.
    pub wanted_job_state: String,
    /// The current status.
    pub status: FlinkBlueGreenDeploymentStatus,
    /// The ConfigMap.
    pub configmap: ConfigMapObs,
    /// The blue child.
    pub blue: Option<ChildObs>,
    /// The green child.
    pub green: Option<ChildObs>,
    /// A pending manual operation.
    pub action: Option<ManualAction>,
}

impl Observed {
    /// The child of `color`.
    pub fn child(&self, color: Color) -> Option<&ChildObs> {
        match color {
            Color::Blue => self.blue.as_ref(),
            Color::Green => self.green.as_ref(),
        }
    }
}
