//! The `FlinkBlueGreenDeployment` custom resource (bluegreen.dev/v1alpha1).

use std::collections::BTreeMap;

use bluegreen_protocol::{Color, Stage};
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The API group of our resources.
pub const GROUP: &str = "bluegreen.dev";

/// A stateful Flink job upgraded by exactly-once blue/green handovers.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "bluegreen.dev",
    version = "v1alpha1",
    kind = "FlinkBlueGreenDeployment",
    namespaced,
    shortname = "fbgd",
    status = "FlinkBlueGreenDeploymentStatus",
    printcolumn = r#"{"name":"Active","type":"string","jsonPath":".status.activeColor"}"#,
    printcolumn = r#"{"name":"Stage","type":"string","jsonPath":".status.stage"}"#,
    printcolumn = r#"{"name":"W","type":"integer","jsonPath":".status.transition.toggle"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct FlinkBlueGreenDeploymentSpec {
    /// The job, as a FlinkDeployment template: passed through to the children `<name>-blue` and
    /// `<name>-green`.
    pub template: FlinkDeploymentTemplate,
    /// How handovers are coordinated.
    #[serde(default)]
    pub coordination: Coordination,
    /// The `bluegreen-sidecar` the controller adds to the children's TaskManager pods.
    #[serde(default)]
    pub sidecar: SidecarInjection,
    /// The Kubernetes cluster the next deployment of the job runs in; absent: this cluster, in
    /// the resource's namespace. A change of it moves the job there by a handover
    /// (docs/operations.md, "Moving a job to another cluster").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<Box<TargetCluster>>,
}

/// Another Kubernetes cluster a color's child runs in, reached through a kubeconfig kept in a
/// Secret of the resource's namespace. The coordination ConfigMap stays in this cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetCluster {
    /// The Secret, in the resource's namespace, holding the kubeconfig of the target cluster.
    /// Only inline credentials are accepted (no `exec`, `auth-provider` or file paths).
    pub kubeconfig_secret: KubeconfigSecret,
    /// The namespace of the child in the target cluster; default the resource's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// How the controller reaches a child's Flink REST API in that cluster: a URL template with
    /// `{name}` (the child) and `{namespace}` (its namespace in the target cluster), e.g.
    /// `https://{name}.flink.example.com` for an Ingress per job.
    pub flink_rest_url: String,
    /// The URL of this (the home) cluster's API server as pods in the target cluster reach it,
    /// for the gates' credential there; default the controller's `--home-api-server`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_api_server: Option<String>,
}

/// A key of a Secret holding a kubeconfig.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeconfigSecret {
    /// The Secret's name.
    pub name: String,
    /// The key holding the kubeconfig; default `kubeconfig`.
    #[serde(default = "default_kubeconfig_key")]
    pub key: String,
}

fn default_kubeconfig_key() -> String {
    "kubeconfig".into()
}

/// The `bluegreen-sidecar` container added to the TaskManager pod template of both children
/// (docs/operations.md, "Sidecar injection and gate RBAC"). A change of it (other than to the
/// defaults) is rolled out by a handover, like a template change.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SidecarInjection {
    /// Add the sidecar (default). `false` for images that embed the JNI shim
    /// (`JniStateSource`) or that run their own sidecar; the gate RBAC is created either way.
    pub inject: bool,
    /// Its image; default `bluegreen/sidecar:<the controller's version>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Its resources; default requests `cpu: 10m, memory: 32Mi`, limits `memory: 64Mi`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    /// The port it listens on at 127.0.0.1 (loopback only), handed to the job as
    /// `BLUEGREEN_SIDECAR_URL`.
    pub port: u16,
}

impl Default for SidecarInjection {
    fn default() -> Self {
        Self {
            inject: true,
            image: None,
            resources: None,
            port: 8787,
        }
    }
}

/// Metadata and spec of the child FlinkDeployments.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlinkDeploymentTemplate {
    /// Labels and annotations copied onto both children.
    #[serde(default, skip_serializing_if = "TemplateMetadata::is_empty")]
    pub metadata: TemplateMetadata,
    /// The FlinkDeployment spec (flink.apache.org/v1beta1) of the job.
    pub spec: FlinkDeploymentSpec,
}

/// Labels and annotations of the children.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct TemplateMetadata {
    /// Labels added to both children.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations added to both children.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl TemplateMetadata {
    fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.annotations.is_empty()
    }
}

/// The part of the Apache operator's FlinkDeployment spec that bluegreen reads; every other
/// field (jobManager, taskManager, podTemplate, ingress, logConfiguration …) is kept as written
/// and passed through.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct FlinkDeploymentSpec {
    /// Container image of the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Flink version, e.g. `v1_20`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flink_version: Option<String>,
    /// Flink configuration; bluegreen adds its `bluegreen.gate.*` keys in the children.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flink_configuration: BTreeMap<String, String>,
    /// The job.
    pub job: JobSpec,
    /// Every other field of the FlinkDeployment spec, passed through unchanged.
    #[serde(flatten)]
    #[schemars(skip)]
    pub other: BTreeMap<String, Value>,
}

/// The job section of the FlinkDeployment spec.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct JobSpec {
    /// URI of the job jar.
    #[serde(rename = "jarURI")]
    pub jar_uri: String,
    /// Parallelism of the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,
    /// Entry class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_class: Option<String>,
    /// Program arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// `running` (default) or `suspended`: applied to the active child in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The Apache operator's upgrade mode for in-place changes of a child (`savepoint` or
    /// `last-state`; `stateless` is refused unless `coordination.restoreFrom` is `stateless`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_mode: Option<String>,
    /// The state the very first deployment starts from; a change of
    /// `savepointRedeployNonce` starts a handover from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_savepoint_path: Option<String>,
    /// Change it (with `initialSavepointPath`) to start a handover from that savepoint instead
    /// of one of the active job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savepoint_redeploy_nonce: Option<i64>,
    /// Every other field of the job spec, passed through unchanged.
    #[serde(flatten)]
    #[schemars(skip)]
    pub other: BTreeMap<String, Value>,
}

/// How handovers are coordinated.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Coordination {
    /// How the watermark toggle value W is chosen.
    pub toggle: ToggleChoice,
    /// How long the outgoing job keeps running after the handover (a duration such as `30s`).
    pub deployment_deletion_delay: String,
    /// How long the incoming job may take to be RUNNING before the handover is aborted.
    pub abort_grace_period: String,
    /// How long the incoming job must have run with every task RUNNING and without a restart
    /// before W is set (a duration such as `10s`); a restart starts the wait again. Within
    /// `abortGracePeriod`, or the handover is aborted.
    pub min_ready: String,
    /// Which state of the active job the incoming job starts from.
    pub restore_from: RestoreFrom,
    /// `auto`: promote once healthy; `manual`: wait for the `bluegreen.dev/action: promote`
    /// annotation.
    pub promotion: Promotion,
    /// What the incoming job must show before it is promoted.
    pub health: HealthRequirements,
    /// Savepoint retries.
    pub savepoint: SavepointPolicy,
    /// What happens to the jobs when the resource is deleted.
    pub on_delete: DeletionPolicy,
    /// Automatic forward repair of an incoming job that fails for good after W is set.
    pub forward_repair: ForwardRepairPolicy,
    /// `file://` path prefixes every cluster the job moves between mounts as one file system
    /// (an NFS share): checkpoint and savepoint directories under them count as shared when the
    /// job moves to another cluster. Other schemes (`s3://`, `gs://`, `hdfs://` …) always do.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared_storage: Vec<String>,
}

impl Default for Coordination {
    fn default() -> Self {
        Self {
            toggle: ToggleChoice::default(),
            deployment_deletion_delay: "0s".into(),
            abort_grace_period: "10m".into(),
            min_ready: "10s".into(),
            restore_from: RestoreFrom::Savepoint,
            promotion: Promotion::Auto,
            health: HealthRequirements::default(),
            savepoint: SavepointPolicy::default(),
            on_delete: DeletionPolicy::Delete,
            forward_repair: ForwardRepairPolicy::default(),
            shared_storage: Vec::new(),
        }
    }
}

/// How W is chosen: exactly one of `offset` (added to the outgoing job's progress) or `value`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToggleChoice {
    /// Added to the outgoing job's progress (its gates' maximum passed event time or its
    /// watermark, whichever is later), as a duration such as `1m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<String>,
    /// An explicit W in epoch milliseconds; refused if the outgoing job has already passed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<i64>,
}

impl Default for ToggleChoice {
    fn default() -> Self {
        Self {
            offset: Some("1m".into()),
            value: None,
        }
    }
}

/// Which state the incoming job starts from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RestoreFrom {
    /// A savepoint of the active job taken for the handover (default).
    Savepoint,
    /// The active job's latest completed checkpoint (faster; needs retained checkpoints).
    LastCheckpoint,
    /// Empty state. Only when asked for explicitly.
    Stateless,
}

/// When the incoming job is promoted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Promotion {
    /// As soon as the health requirements hold.
    Auto,
    /// After the health requirements hold and the `bluegreen.dev/action: promote` annotation is set.
    Manual,
}

/// Health requirements of the incoming job before promotion.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct HealthRequirements {
    /// Completed checkpoints of the incoming job since it started.
    pub min_checkpoints: u32,
    /// If set, the incoming job's watermark may lag the outgoing job's by at most this much
    /// (a duration) at promotion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_lag: Option<String>,
}

impl Default for HealthRequirements {
    fn default() -> Self {
        Self {
            min_checkpoints: 1,
            max_lag: None,
        }
    }
}

/// Automatic forward repair: once W is set the outgoing job has dropped the records above it, so
/// an incoming job that fails for good is never aborted; after `grace` the controller redeploys
/// it with the template that last ran well (the outgoing job's) from the incoming job's own
/// latest checkpoint (docs/controller.md, "Forward repair").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ForwardRepairPolicy {
    /// Repair automatically (default). `false`: wait for a person to change the template.
    pub enabled: bool,
    /// How long the incoming job stays FAILED before it is repaired (a duration such as `2m`);
    /// a template change within it is applied instead.
    pub grace: String,
}

impl Default for ForwardRepairPolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            grace: "2m".into(),
        }
    }
}

/// Savepoint retries.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SavepointPolicy {
    /// Attempts before the handover is given up (`Degraded`, reason `SavepointFailed`).
    pub max_attempts: u32,
    /// Wait before the second attempt; doubles per attempt.
    pub backoff: String,
    /// How long one savepoint may take.
    pub timeout: String,
    /// `target-directory` passed to Flink; Flink's `state.savepoints.dir` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_directory: Option<String>,
}

impl Default for SavepointPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            backoff: "10s".into(),
            timeout: "10m".into(),
            target_directory: None,
        }
    }
}

/// What deleting the resource does to the jobs.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DeletionPolicy {
    /// Delete both children (their jobs stop).
    Delete,
    /// Take a savepoint of the active job first (its path is recorded in an Event), then delete.
    SavepointThenDelete,
    /// Leave the children running, without owner.
    Orphan,
}

/// Observed state, written by the controller only. The `transition` block is written before
/// each action of a handover, so a restarted controller resumes where it was.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlinkBlueGreenDeploymentStatus {
    /// The color that owns the output (after promotion: the incoming one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_color: Option<Color>,
    /// The coordination stage, as in the ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// The coordination epoch, as in the ConfigMap.
    #[serde(default)]
    pub epoch: u64,
    /// The floor F, as in the ConfigMap: the W of the last completed handover. Both colors drop
    /// every record `t <= F`, so a record is emitted at most once; cleared only by the
    /// `bluegreen.dev/action=clear-floor` annotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<i64>,
    /// `metadata.generation` last acted upon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Hash of the template the active child runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_template_hash: Option<String>,
    /// `savepointRedeployNonce` of the template the active child runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_redeploy_nonce: Option<i64>,
    /// The spec the active child was rendered from, recorded with `deployedTemplateHash`: the
    /// template that last ran well, which forward repair redeploys a failed incoming job with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "recorded_spec_schema")]
    pub deployed_spec: Option<FlinkBlueGreenDeploymentSpec>,
    /// Hash of a template whose handover was aborted: not retried until the template changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_template_hash: Option<String>,
    /// The handover in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transition: Option<Transition>,
    /// With no handover in progress: since when the active job's gates have held every record
    /// or reported a problem (their state source unreachable, an update refused). Once that has
    /// lasted 30 s, `Degraded` is `True` with reason `GatesHolding`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates_trouble_since: Option<MicroTime>,
    /// `Ready`, `Progressing`, `Degraded`: at most one of each type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The last handovers, newest first (at most 10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<TransitionRecord>,
    /// The cluster each color's child was created in (`spec.cluster` then), recorded before it
    /// is created and cleared once it is gone; absent: this cluster.
    #[serde(default, skip_serializing_if = "ChildClusters::is_empty")]
    pub clusters: ChildClusters,
}

/// Where each color's child runs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ChildClusters {
    /// The blue child's cluster; absent: this cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blue: Option<Box<TargetCluster>>,
    /// The green child's cluster; absent: this cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub green: Option<Box<TargetCluster>>,
}

impl ChildClusters {
    /// Whether both children run (or would run) in this cluster.
    pub fn is_empty(&self) -> bool {
        self.blue.is_none() && self.green.is_none()
    }

    /// The cluster of `color`'s child.
    pub fn of(&self, color: Color) -> Option<&TargetCluster> {
        match color {
            Color::Blue => self.blue.as_deref(),
            Color::Green => self.green.as_deref(),
        }
    }

    /// Records the cluster of `color`'s child.
    pub fn set(&mut self, color: Color, cluster: Option<Box<TargetCluster>>) {
        match color {
            Color::Blue => self.blue = cluster,
            Color::Green => self.green = cluster,
        }
    }
}

/// `status.deployedSpec` is written by the controller alone, as a copy of a spec the API server
/// has validated: the CRD keeps it as an object instead of repeating the spec's whole schema.
fn recorded_spec_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "nullable": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A handover in progress.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
    /// Outgoing color (`None` for the first deployment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Color>,
    /// Incoming color.
    pub to: Color,
    /// The epoch of this handover.
    pub epoch: u64,
    /// Hash of the template the incoming child runs.
    pub template_hash: String,
    /// The generation that asked for it.
    pub generation: i64,
    /// `savepointRedeployNonce` of the incoming template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redeploy_nonce: Option<i64>,
    /// Where the handover is.
    pub phase: Phase,
    /// W, once proposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toggle: Option<i64>,
    /// The savepoint trigger id at the outgoing job's REST API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savepoint_trigger_id: Option<String>,
    /// The state the incoming job starts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_path: Option<String>,
    /// Failed savepoint attempts so far.
    #[serde(default)]
    pub savepoint_attempts: u32,
    /// When the handover started.
    pub started_at: MicroTime,
    /// When the current phase started.
    pub phase_started_at: MicroTime,
    /// Why the handover is being aborted, once it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_reason: Option<String>,
    /// The outgoing job's stop-with-savepoint at teardown.
    #[serde(default, skip_serializing_if = "OutgoingStop::is_empty")]
    pub stop: OutgoingStop,
    /// The jobs whose gates' watermark the handover waits on to pass W.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_for_watermarks: Vec<WatermarkWait>,
    /// The colors whose gates counted as past W at promotion only because all their inputs
    /// were idle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub past_w_by_idleness: Vec<Color>,
    /// The incoming job failed for good after W was set: its forward repair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_repair: Option<ForwardRepair>,
    /// Before W is set: the incoming job last seen with every task RUNNING, and since when
    /// without a restart. W is set only once this is `coordination.minReady` old.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incoming_ready: Option<TasksReady>,
    /// After W is set: the outgoing job last seen with every task RUNNING, and since when
    /// without a restart. Its gates' reports are trusted as past W, for promotion and for its
    /// stop, only once this is `coordination.minReady` old: Flink's metric store can serve a
    /// previous attempt's line, and a restart replays from a checkpoint below W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outgoing_ready: Option<TasksReady>,
    /// After W is set: the restart of an outgoing job that failed for good, from its own latest
    /// checkpoint, so that it emits and commits its records `t <= W` before it is stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outgoing_restart: Option<OutgoingRestart>,
    /// The outgoing job's gates as seen so far in this handover: per job vertex id, how many
    /// gates report from it (the most seen at once). Its gates are trusted (for W, its
    /// acknowledgement, promotion and the stop) only while every one of them reports: a gate
    /// missing from Flink's metric store, after a restart or on a TaskManager not fetched yet,
    /// has neither acknowledged W nor passed it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub outgoing_gates: std::collections::BTreeMap<String, u32>,
    /// Before W is set: since when the incoming child's cluster (`status.clusters.<to>`) has
    /// not been usable; the handover is aborted once that lasts `abortGracePeriod`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incoming_cluster_down_since: Option<MicroTime>,
}

/// A job seen with every task RUNNING: the start time of its tasks' current attempts and since
/// when it has been seen unchanged. A restart changes the start time (or shows a task that is
/// not RUNNING), and the wait starts again.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TasksReady {
    /// The latest subtask `start-time` Flink reported (its clock, epoch milliseconds).
    pub tasks_started_at: i64,
    /// When the controller first saw that start time with every task RUNNING (its clock).
    pub since: MicroTime,
}

impl TasksReady {
    /// The record after seeing the tasks RUNNING with start time `started` at `now`: `previous`
    /// when the start time is the same, else a new one from `now`; with the previous start time
    /// when this is a restart.
    pub fn follow(previous: Option<Self>, started: i64, now: MicroTime) -> (Self, Option<i64>) {
        match previous {
            Some(p) if p.tasks_started_at == started => (p, None),
            previous => (
                Self {
                    tasks_started_at: started,
                    since: now,
                },
                previous.map(|p| p.tasks_started_at),
            ),
        }
    }
}

/// The restart of an outgoing job that failed for good after W was set: its FlinkDeployment's
/// `spec.restartNonce` is set to `nonce`, which makes the Flink operator redeploy the failed job
/// from its own latest checkpoint (upgrade modes `savepoint` and `last-state` alike). Written
/// before the patch is sent, so a restarted controller resends the same nonce.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutgoingRestart {
    /// The `restartNonce` asked for.
    pub nonce: i64,
    /// Restarts asked for in this handover (1 for the first).
    pub attempts: u32,
    /// When the latest restart was asked for.
    pub requested_at: MicroTime,
    /// The restart took effect: since it was asked for, the job was seen not FAILED, or FAILED
    /// as another job (a new job id). Failing again then asks for another restart.
    #[serde(default)]
    pub ran: bool,
    /// The id of the job that failed (the child's `status.jobStatus.jobId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_job_id: Option<String>,
    /// Why the job failed (`status.error` of its FlinkDeployment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The forward repair of an incoming job that failed for good after W was set. Written before
/// each of its steps, so a restarted controller repeats the step it was at.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForwardRepair {
    /// When the controller first saw the incoming job FAILED; the grace runs from here.
    pub failed_since: MicroTime,
    /// The failed job's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_job_id: Option<String>,
    /// Why it failed (`status.error` of its FlinkDeployment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the redeploy was decided; absent while the grace runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<MicroTime>,
    /// Hash of the template the incoming child is redeployed with: the outgoing job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_hash: Option<String>,
    /// The failed incoming job's own latest completed checkpoint, which it resumes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_path: Option<String>,
    /// The Flink operator has redeployed the incoming job since (it left FAILED, or has a new
    /// job id); a failure after that is not repaired again.
    #[serde(default)]
    pub redeployed: bool,
}

impl ForwardRepair {
    /// The record of an incoming job first seen FAILED at `failed_since`: nothing decided yet.
    pub fn new(failed_since: MicroTime) -> Self {
        Self {
            failed_since,
            failed_job_id: None,
            error: None,
            started_at: None,
            template_hash: None,
            restore_path: None,
            redeployed: false,
        }
    }
}

/// A job whose gates' watermark has not passed W yet.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WatermarkWait {
    /// The job's color.
    pub color: Color,
    /// Its handover watermark: the minimum over its gates that are not idle (none yet: absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<i64>,
    /// W.
    pub toggle: i64,
}

impl std::fmt::Display for WatermarkWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.watermark {
            Some(wm) => write!(
                f,
                "the {} job's gate watermark ({wm}) to pass W = {}",
                self.color, self.toggle
            ),
            None => write!(
                f,
                "the {} job's gates to report a watermark past W = {}",
                self.color, self.toggle
            ),
        }
    }
}

/// The outgoing job's stop-with-savepoint (`POST /jobs/:jid/stop`, no drain) at teardown: it
/// commits the job's transactional output before its FlinkDeployment is deleted.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutgoingStop {
    /// The trigger id, chosen by the controller and written here before the request is sent
    /// (Flink deduplicates requests with the same trigger id, so resending it is safe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_id: Option<String>,
    /// Failed attempts so far.
    #[serde(default)]
    pub attempts: u32,
    /// When the current attempt started, or the last one failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<MicroTime>,
    /// Why the last attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Where the stop-with-savepoint was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savepoint: Option<String>,
    /// Whether the stop of `triggerId` drains the job (emits the maximum watermark, firing its
    /// windows and timers): chosen when the outgoing job counts as past W only because its
    /// inputs are idle, so that results it holds for `t <= W` are emitted, not lost.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drain: bool,
}

impl OutgoingStop {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The phases of a handover, in order. `Aborting` leaves the sequence before `ToggleSet`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum Phase {
    /// Taking (or choosing) the state the incoming job starts from.
    Snapshotting,
    /// Creating the incoming child and waiting for its job to run; its gates hold.
    Deploying,
    /// W is proposed; waiting for every outgoing gate to acknowledge it.
    ConfirmingToggle,
    /// W is set; waiting for health and both watermarks past W.
    ToggleSet,
    /// Promoted; the outgoing job is kept for the deletion delay.
    ClearToTeardown,
    /// Stopping the outgoing job with a savepoint, then deleting its child.
    TearingDown,
    /// Aborting before W was set: deleting the incoming child.
    Aborting,
}

/// How a handover (or the first deployment) ended; serialised as its name (`Promoted`, ...).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Outcome {
    /// The first deployment's job runs.
    Deployed,
    /// The incoming color was promoted and the outgoing job is gone.
    Promoted,
    /// The handover was abandoned before W was set.
    Aborted,
}

impl Outcome {
    /// The name it is serialised as (also the metrics label).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deployed => "Deployed",
            Self::Promoted => "Promoted",
            Self::Aborted => "Aborted",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finished handover.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransitionRecord {
    /// Epoch of the handover.
    pub epoch: u64,
    /// Outgoing color.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Color>,
    /// Incoming color.
    pub to: Color,
    /// W: the one set (`Promoted`), or the one proposed when the handover was aborted before W
    /// was set; absent if none was proposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toggle: Option<i64>,
    /// How it ended.
    pub outcome: Outcome,
    /// Why, for an abort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The colors whose gates counted as past W only because all their inputs were idle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub past_w_by_idleness: Vec<Color>,
    /// The incoming job was repaired forward: it runs the outgoing job's template, not the one
    /// the handover was for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_repair: Option<ForwardRepair>,
    /// Start.
    pub started_at: MicroTime,
    /// End.
    pub finished_at: MicroTime,
    /// Duration in seconds.
    pub duration_seconds: f64,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::FlinkBlueGreenDeploymentStatus;

    #[test]
    fn a_status_timestamp_that_does_not_parse_is_a_deserialization_error() {
        let status = |phase_started_at: &str| {
            serde_json::from_value::<FlinkBlueGreenDeploymentStatus>(json!({
                "transition": {
                    "to": "BLUE", "epoch": 0, "templateHash": "h1", "generation": 1,
                    "phase": "Deploying", "startedAt": "2026-01-01T00:00:00Z",
                    "phaseStartedAt": phase_started_at,
                },
            }))
        };
        let parsed = status("2026-01-01T00:00:00Z").expect("RFC 3339");
        assert_eq!(
            parsed.transition.unwrap().phase_started_at.0,
            "2026-01-01T00:00:00Z".parse().unwrap()
        );
        for bad in ["yesterday", ""] {
            assert!(status(bad).is_err(), "{bad:?}");
        }
    }

    /// The phase timers (abort grace, deletion delay, forward repair grace) run from stored
    /// timestamps: a status write and read must keep them to the millisecond, or a 2 s grace
    /// stored as a whole second can end after 1 s.
    #[test]
    fn stored_timestamps_keep_their_milliseconds() {
        let status: FlinkBlueGreenDeploymentStatus = serde_json::from_value(json!({
            "transition": {
                "to": "BLUE", "epoch": 0, "templateHash": "h1", "generation": 1,
                "phase": "Deploying", "startedAt": "2026-01-01T00:00:00.250Z",
                "phaseStartedAt": "2026-01-01T00:00:00.750Z",
            },
        }))
        .expect("RFC 3339 with a fraction");
        let written = serde_json::to_value(&status).expect("serialisable");
        let read: FlinkBlueGreenDeploymentStatus =
            serde_json::from_value(written.clone()).expect("reads back");
        assert_eq!(read, status, "{written}");
        let transition = read.transition.expect("a transition");
        assert_eq!(
            transition.phase_started_at.0,
            "2026-01-01T00:00:00.750Z".parse().unwrap(),
            "{written}"
        );
    }
}
