//! Builders of test objects, and scenario steps on an observation that read left to right:
//! `observed().blue(running(..)).green(running(..))`.

use bluegreen_protocol::flink::{JobStatus, LifecycleState};
use bluegreen_protocol::{AppliedState, Color, GateReport, Stage, Toggle};

use crate::checks::{ValidSpec, validate_spec};
use crate::error::SpecError;
use crate::observed::{ChildObs, ConfigMapObs, FlinkObs, GateObs, JobState, Observed};
use crate::resource::{
    FlinkBlueGreenDeploymentSpec, FlinkBlueGreenDeploymentStatus, FlinkDeploymentSpec,
    FlinkDeploymentTemplate, JobSpec,
};

/// A spec with defaults and the given jar.
pub fn spec(jar: &str) -> FlinkBlueGreenDeploymentSpec {
    FlinkBlueGreenDeploymentSpec {
        template: FlinkDeploymentTemplate {
            metadata: crate::resource::TemplateMetadata::default(),
            spec: FlinkDeploymentSpec {
                image: Some("flink:1.20".into()),
                flink_version: Some("v1_20".into()),
                job: JobSpec {
                    jar_uri: jar.into(),
                    parallelism: Some(2),
                    ..JobSpec::default()
                },
                ..FlinkDeploymentSpec::default()
            },
        },
        coordination: crate::resource::Coordination::default(),
        sidecar: crate::resource::SidecarInjection::default(),
        cluster: None,
    }
}

/// The default spec after `edit`, validated.
pub fn valid(edit: impl FnOnce(&mut FlinkBlueGreenDeploymentSpec)) -> Result<ValidSpec, SpecError> {
    let mut s = spec("local:///job.jar");
    edit(&mut s);
    validate_spec(&s)
}

/// An observation of a fresh resource at 2026-01-01T00:00:00Z with template hash `h1`.
pub fn observed() -> Observed {
    Observed {
        now: "2026-01-01T00:00:00Z".parse().expect("timestamp"),
        generation: 1,
        uid: "uid-1".into(),
        valid: valid(|_| {}),
        cluster_down: None,
        template_hash: "h1".into(),
        initial_savepoint: None,
        redeploy_nonce: None,
        wanted_job_state: JobState::Running,
        status: FlinkBlueGreenDeploymentStatus::default(),
        configmap: ConfigMapObs::Absent,
        blue: None,
        green: None,
        action: None,
        spec: spec("local:///job.jar"),
    }
}

/// The W the fixtures' gates applied at watermark stage 1 or 2.
pub const W: i64 = 70_000;

/// A gate report: the handover towards green at `epoch`, at watermark `stage` (0 none, 1 W
/// proposed, 2 W set; W is [`W`]), with `max_passed` and watermark `wm`.
pub fn report(epoch: u64, stage: u8, max_passed: Option<i64>, wm: i64) -> GateReport {
    let toggle = match stage {
        0 => Toggle::NotSet,
        1 => Toggle::Proposed(W),
        _ => Toggle::Set(W),
    };
    GateReport {
        applied: Some(AppliedState {
            epoch,
            stage: Stage::Transitioning,
            active: Color::Green,
            toggle,
            floor: None,
        }),
        max_passed,
        watermark: Some(wm).filter(|w| *w != i64::MIN),
        idle: false,
        // As a gate older than the `color` key: nothing said, nothing checked.
        color: None,
        problem: None,
    }
}

/// The job vertex id of a [`running`] child's one gate (two subtasks).
pub const GATE_VERTEX: &str = "gate-vertex";

/// When the tasks of a [`running`] child's job started (Flink's clock, epoch ms).
pub const TASKS_STARTED_AT: i64 = 1_000;

/// A running child with template hash `hash`, every task RUNNING since [`TASKS_STARTED_AT`],
/// and one gate per subtask (two) reporting [`report`]`(epoch, stage, max_passed, wm)`.
pub fn running(hash: &str, epoch: u64, stage: u8, max_passed: Option<i64>, wm: i64) -> ChildObs {
    ChildObs {
        template_hash: Some(hash.into()),
        deleting: false,
        lifecycle: Some(LifecycleState::Stable.into()),
        job_state: Some(JobStatus::Running.into()),
        job_id: Some("job".into()),
        error: None,
        spec_job_state: Some(JobState::Running),
        restart_nonce: None,
        upgrading: false,
        flink: Some(FlinkObs {
            checkpoints_completed: 3,
            latest_checkpoint: Some("file:///cp/3".into()),
            savepoint: None,
            gates: Some(GateObs {
                reports: vec![report(epoch, stage, max_passed, wm); 2],
                vertices: [(GATE_VERTEX.to_owned(), 1)].into(),
            }),
            tasks_started_at: Some(TASKS_STARTED_AT),
        }),
    }
}

/// Sets the child of `color`.
pub fn with_child(mut obs: Observed, color: Color, child: Option<ChildObs>) -> Observed {
    match color {
        Color::Blue => obs.blue = child,
        Color::Green => obs.green = child,
    }
    obs
}

/// Scenario steps on an observation.
pub trait Scenario {
    /// With `child` as the blue child.
    #[must_use]
    fn blue(self, child: ChildObs) -> Self;
    /// With `child` as the green child.
    #[must_use]
    fn green(self, child: ChildObs) -> Self;
    /// Without the child of `color`.
    #[cfg(test)]
    #[must_use]
    fn without(self, color: Color) -> Self;
}

impl Scenario for Observed {
    fn blue(self, child: ChildObs) -> Self {
        with_child(self, Color::Blue, Some(child))
    }

    fn green(self, child: ChildObs) -> Self {
        with_child(self, Color::Green, Some(child))
    }

    #[cfg(test)]
    fn without(self, color: Color) -> Self {
        with_child(self, color, None)
    }
}

/// What the REST API of the child of `color` reported (both must be there).
#[cfg(test)]
pub fn flink_of(obs: &mut Observed, color: Color) -> &mut FlinkObs {
    let child = match color {
        Color::Blue => obs.blue.as_mut(),
        Color::Green => obs.green.as_mut(),
    };
    child
        .and_then(|c| c.flink.as_mut())
        .expect("the child and its REST API's answer")
}

/// The gates `child`'s REST API reported (they must be there).
#[cfg(test)]
pub fn gates_of(child: &mut ChildObs) -> &mut GateObs {
    child
        .flink
        .as_mut()
        .and_then(|f| f.gates.as_mut())
        .expect("the child's gates")
}
