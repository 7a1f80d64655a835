//! The plan interface: what one planning step decides — the status to write, the actions to run
//! in order, the events to publish and when to look again.

use std::time::Duration;

use bluegreen_protocol::{Color, CoordinationState};

use crate::events::EventReason;
use crate::resource::{
    FlinkBlueGreenDeploymentSpec, FlinkBlueGreenDeploymentStatus, TransitionRecord,
};

/// One side effect, executed in order after the status is written.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Move the coordination ConfigMap to this state (checked with `check_transition`, guarded by
    /// the observed resourceVersion).
    WriteConfigMap(CoordinationState),
    /// Server-side apply the child of `color` from the current template, starting from
    /// `restore_path` (a new job only; ignored by the Flink operator for a running one).
    ApplyChild {
        /// The child's color.
        color: Color,
        /// The template's hash, recorded on the child.
        template_hash: String,
        /// `initialSavepointPath` of the child.
        restore_path: Option<String>,
    },
    /// Forward repair: server-side apply the child of `color` rendered from `spec` — the spec
    /// the outgoing child runs (`status.deployedSpec`, the template that last ran well) with
    /// upgrade mode `last-state` — with `initialSavepointPath` = `restore_path`, the failed job's
    /// own latest checkpoint. The Flink operator redeploys the failed job from its latest
    /// checkpoint; never from the handover's starting state.
    RepairChild {
        /// The incoming child's color.
        color: Color,
        /// What to render the child from.
        spec: Box<FlinkBlueGreenDeploymentSpec>,
        /// The hash of that template (the outgoing child's), recorded on the repaired child.
        template_hash: String,
        /// The failed incoming job's own latest completed checkpoint.
        restore_path: String,
    },
    /// Restart the failed job of the child of `color` from its own latest checkpoint: merge
    /// `spec.restartNonce = nonce` into its FlinkDeployment (the Apache operator redeploys a
    /// FAILED job whose spec changed from its latest checkpoint). Resending it changes nothing.
    RestartChild {
        /// The child's color (the outgoing one).
        color: Color,
        /// The `restartNonce`, recorded in the status first.
        nonce: i64,
    },
    /// Delete the child of `color`, after the RoleBinding that lets its gates read the ConfigMap.
    DeleteChild(Color),
    /// Trigger a savepoint of the child of `color` through Flink's REST API under `trigger_id`,
    /// which the status already records. Resending it is idempotent.
    TriggerSavepoint {
        /// The child's color (the outgoing one).
        color: Color,
        /// The trigger id Flink deduplicates the request by.
        trigger_id: String,
    },
    /// Stop the job of the child of `color` with a savepoint (`POST /jobs/:jid/stop`) under
    /// `trigger_id`, which the status already records. Resending it is idempotent.
    StopJob {
        /// The child's color.
        color: Color,
        /// The trigger id Flink deduplicates the request by.
        trigger_id: String,
        /// Stop with drain: the maximum watermark first, firing every event-time window and
        /// timer (recorded with the trigger id).
        drain: bool,
    },
    /// Remove the `bluegreen.dev/action` annotation (the operation was handled or refused).
    ClearManualAction,
    /// Deletion with `onDelete: orphan`: drop the owner reference of the child of `color`, so
    /// its job outlives the resource.
    Orphan(Color),
    /// Delete the coordination ConfigMap.
    DeleteConfigMap,
    /// Keep the finalizer: the cleanup fails with `FinalSavepointPending` (and is retried) until
    /// the handover in progress and the final stop-with-savepoint have ended.
    AwaitFinalSavepoint,
}

/// A Kubernetes Event to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// `Warning` rather than `Normal`.
    pub warning: bool,
    /// Its reason.
    pub reason: EventReason,
    /// Message.
    pub message: String,
}

/// The outcome of one planning step.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The status to write before acting.
    pub status: FlinkBlueGreenDeploymentStatus,
    /// What to do, in order.
    pub actions: Vec<Action>,
    /// Events to publish.
    pub notes: Vec<Note>,
    /// When to look again at the latest.
    pub requeue_after: Duration,
    /// The handover this plan finishes: its record is the newest in `status.history`, counted
    /// in the metrics once that status is written.
    pub finished: Option<TransitionRecord>,
}
