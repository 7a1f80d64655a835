//! What one reconcile saw: the resource, its children, the ConfigMap and what Flink's REST API
//! reported. Gathered by `observe` (or `observe_deletion`), consumed by the pure `handover::plan`
//! (or `handover::plan_cleanup`).

use std::collections::BTreeMap;

use bluegreen_protocol::flink::{JobStatus, LifecycleState, Reported};
use bluegreen_protocol::{Color, CoordinationState, GateReport};
use jiff::Timestamp;

use crate::checks::ValidSpec;
use crate::error::SpecError;
use crate::names::ManualAction;
use crate::resource::{FlinkBlueGreenDeploymentSpec, FlinkBlueGreenDeploymentStatus};

/// `spec.job.state` of a job: running or suspended (applied in place, without a handover).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// `running` (the default).
    #[default]
    Running,
    /// `suspended`.
    Suspended,
}

impl JobState {
    /// Parses a spec value; `None` for any other (validation refuses such a spec).
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "running" => Some(Self::Running),
            "suspended" => Some(Self::Suspended),
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
    /// `status.lifecycleState`.
    pub lifecycle: Option<Reported<LifecycleState>>,
    /// `status.jobStatus.state`.
    pub job_state: Option<Reported<JobStatus>>,
    /// `status.jobStatus.jobId`.
    pub job_id: Option<String>,
    /// `status.error`.
    pub error: Option<String>,
    /// `spec.job.state` of the child.
    pub spec_job_state: Option<JobState>,
    /// `spec.restartNonce` of the child.
    pub restart_nonce: Option<i64>,
    /// The Apache operator has not yet applied the child's latest spec: `status.observedGeneration`
    /// is below `metadata.generation`, or `status.reconciliationStatus.state` is `UPGRADING`.
    /// What runs (and what its gates report) is the job of an older spec.
    pub upgrading: bool,
    /// What the job's REST API reported, if it was reachable.
    pub flink: Option<FlinkObs>,
}

impl ChildObs {
    /// The job is running (Apache operator's view) and not being deleted.
    pub fn running(&self) -> bool {
        !self.deleting
            && self
                .job_state
                .as_ref()
                .is_some_and(|s| s.is(JobStatus::Running))
    }

    /// The job has ended without failing, or is suspended, so it holds no uncommitted output:
    /// deleting its child loses nothing. A FAILED job does not qualify: its output after its
    /// last completed checkpoint exists only in that checkpoint.
    pub fn holds_no_output(&self) -> bool {
        !self.failed()
            && (matches!(
                self.job_state.as_ref().and_then(Reported::known),
                Some(JobStatus::Finished | JobStatus::Canceled | JobStatus::Suspended)
            ) || self
                .lifecycle
                .as_ref()
                .is_some_and(|l| l.is(LifecycleState::Suspended)))
    }

    /// The job failed for good (restart strategy exhausted or deployment error).
    pub fn failed(&self) -> bool {
        self.job_state
            .as_ref()
            .is_some_and(|s| s.is(JobStatus::Failed))
            || self
                .lifecycle
                .as_ref()
                .is_some_and(|l| l.is(LifecycleState::Failed))
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
    /// The `bluegreenGateAppliedState` line of every gate subtask; `None` when the job has no
    /// gate.
    pub gates: Option<GateObs>,
    /// When the current attempts of the job's tasks started (Flink's clock, epoch ms): the latest
    /// subtask `start-time` of `GET /jobs/:jid/vertices/:vid` (the DEPLOYING timestamp of its
    /// current execution attempt) when every vertex and every subtask is RUNNING; `None` while
    /// one is not (deploying, restarting, failed over), and unless asked for (the incoming job
    /// before W). Any restart of any subtask, global or region failover, moves it on, even though
    /// the job's state stays RUNNING through a region failover.
    pub tasks_started_at: Option<i64>,
}

impl FlinkObs {
    /// The job's handover watermark: the minimum of its gates' watermarks, idle gates left
    /// out; `None` when a gate that is not idle has none, or there is no gate.
    pub fn watermark(&self) -> Option<i64> {
        self.gates.as_ref().and_then(GateObs::watermark)
    }
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

/// The gates of one job: one report per gate subtask, over every vertex.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateObs {
    /// Every gate subtask's `bluegreenGateAppliedState` line.
    pub reports: Vec<GateReport>,
    /// Per job vertex id, how many gates report from it (distinct metric ids).
    pub vertices: BTreeMap<String, u32>,
}

impl GateObs {
    /// The gates of `expected` (per vertex id, how many) that do not report now, described;
    /// `None` when every one does.
    pub fn missing(&self, expected: &BTreeMap<String, u32>) -> Option<String> {
        let missing: Vec<String> = expected
            .iter()
            .filter_map(|(vertex, n)| {
                let seen = self.vertices.get(vertex).copied().unwrap_or(0);
                (seen < *n).then(|| format!("{} of {n} on vertex {vertex}", n - seen))
            })
            .collect();
        (!missing.is_empty()).then(|| missing.join(", "))
    }

    /// Whether every gate subtask applied the proposal of `w` in `epoch`. Decided on the
    /// lines' content alone, so a late metric store cannot pair a new stage with an old maximum.
    pub fn acknowledge(&self, epoch: u64, w: i64) -> bool {
        !self.reports.is_empty() && self.reports.iter().all(|r| r.acknowledges(epoch, w))
    }

    /// The highest event time any gate passed (`None`: nothing passed yet).
    pub fn max_passed(&self) -> Option<i64> {
        self.reports.iter().filter_map(|r| r.max_passed).max()
    }

    /// Whether every gate's watermark is past `w` (an idle gate counts as past).
    pub fn past(&self, w: i64) -> bool {
        !self.reports.is_empty() && self.reports.iter().all(|r| r.past(w))
    }

    /// Whether being past `w` rests on an idle gate whose own watermark is not past it.
    pub fn relies_on_idleness(&self, w: i64) -> bool {
        self.reports
            .iter()
            .any(|r| r.idle && r.watermark.is_none_or(|wm| wm <= w))
    }

    /// What keeps the gates from working, as they report it: subtasks that applied no
    /// coordination state (they hold every record) and the distinct problems they name (at most
    /// three); `None` when every gate has a state and names no problem.
    pub fn trouble(&self) -> Option<String> {
        let total = self.reports.len();
        let stateless = self.reports.iter().filter(|r| r.applied.is_none()).count();
        let with_problem = self.reports.iter().filter(|r| r.problem.is_some()).count();
        let mut problems: Vec<&str> = self
            .reports
            .iter()
            .filter_map(|r| r.problem.as_deref())
            .collect();
        problems.sort_unstable();
        problems.dedup();
        let mut parts = Vec::new();
        if stateless > 0 {
            parts.push(format!(
                "{stateless} of {total} gate subtasks have no coordination state and hold every record"
            ));
        }
        if with_problem > 0 {
            let more = problems.len().saturating_sub(3);
            problems.truncate(3);
            let named = problems.join(" | ");
            let more = if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            };
            parts.push(format!("{with_problem} of {total} report: {named}{more}"));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// The gates of the `color` job that report the other color (they were built with it, so they
    /// pass what the other color owns and drop what this one owns), described; `None` when none
    /// does (a gate older than the report's `color` key says nothing).
    pub fn wrong_color(&self, color: Color) -> Option<String> {
        let wrong = self
            .reports
            .iter()
            .filter(|r| r.color.is_some_and(|c| c != color))
            .count();
        (wrong > 0).then(|| {
            format!(
                "{wrong} of {} gate subtasks of the {} job report color={}",
                self.reports.len(),
                color.suffix(),
                color.other()
            )
        })
    }

    /// The minimum watermark over the gates that are not idle; `None` when one has none, or
    /// there are no such gates.
    pub fn watermark(&self) -> Option<i64> {
        self.reports
            .iter()
            .filter(|r| !r.idle)
            .map(|r| r.watermark)
            .min_by_key(|w| w.unwrap_or(i64::MIN))
            .flatten()
    }
}

/// Clusters children run in that could not be used at one observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDown {
    /// The colors whose children run there and were not looked for.
    pub colors: Vec<Color>,
    /// Why, naming `status.clusters.<color>` (the first such cluster's).
    pub why: String,
}

/// Everything `plan` needs for one resource.
#[derive(Debug, Clone)]
pub struct Observed {
    /// Wall-clock time of the observation.
    pub now: Timestamp,
    /// `metadata.generation`.
    pub generation: i64,
    /// `metadata.uid` (the final savepoint's trigger id derives from it).
    pub uid: String,
    /// What validating the resource found (its settings, what rendering its children uses), or
    /// why it is invalid.
    pub valid: Result<ValidSpec, SpecError>,
    /// The clusters children run in (`status.clusters`) that could not be used: their children
    /// were not looked for, so nothing is decided about them until they can be used.
    pub cluster_down: Option<ClusterDown>,
    /// Hash of `spec.template` without `job.state` (which is applied in place).
    pub template_hash: String,
    /// `spec.template.spec.job.initialSavepointPath`.
    pub initial_savepoint: Option<String>,
    /// `spec.template.spec.job.savepointRedeployNonce`.
    pub redeploy_nonce: Option<i64>,
    /// `spec.template.spec.job.state`, defaulting to `running`.
    pub wanted_job_state: JobState,
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
    /// The spec, recorded in the status when its template is deployed.
    pub spec: FlinkBlueGreenDeploymentSpec,
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
