//! What `status` concludes from one read, and its exit codes.

use bluegreen_controller::conditions::{ConditionType, Reason};
use bluegreen_controller::resource::{Condition, FlinkBlueGreenDeploymentStatus, Phase};

use crate::model::Deployment;

/// Exit codes of the plugin. `status` uses all of them; other commands use 0, 1 and 2.
pub mod exit {
    /// Healthy, or the command succeeded.
    pub const OK: u8 = 0;
    /// An error: no kubeconfig, the API server refused, the resource does not exist.
    pub const ERROR: u8 = 1;
    /// Bad command line (clap's own code).
    pub const USAGE: u8 = 2;
    /// The `Degraded` condition is `True` (e.g. the active job failed).
    pub const DEGRADED: u8 = 3;
    /// The handover of the current template was aborted (or is being aborted).
    pub const ABORTED: u8 = 4;
    /// `--timeout` passed before the resource became healthy.
    pub const TIMEOUT: u8 = 5;
    /// The job is suspended on purpose (`job.state: suspended`): nothing runs.
    pub const SUSPENDED: u8 = 6;
}

/// The conclusion of one read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Ready, no handover in progress, and the controller has seen the latest spec.
    Healthy,
    /// Not there yet; the message says what is awaited.
    Waiting(String),
    /// `Degraded` is `True`: reason and message.
    Degraded(String),
    /// The handover was aborted: its reason.
    Aborted(String),
    /// The job is suspended (`Ready` is `False` with reason `Suspended`): its message.
    Suspended(String),
}

impl Verdict {
    /// Its name in the `get` and `list` views.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Healthy => "Healthy",
            Self::Waiting(_) => "Progressing",
            Self::Degraded(_) => "Degraded",
            Self::Aborted(_) => "Aborted",
            Self::Suspended(_) => "Suspended",
        }
    }

    /// The exit code when `status` stops on this verdict.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Healthy => exit::OK,
            Self::Waiting(_) => exit::TIMEOUT,
            Self::Degraded(_) => exit::DEGRADED,
            Self::Aborted(_) => exit::ABORTED,
            Self::Suspended(_) => exit::SUSPENDED,
        }
    }

    /// Whether `status` stops waiting.
    pub fn is_final(&self) -> bool {
        !matches!(self, Self::Waiting(_))
    }
}

fn condition(d: &Deployment, type_: ConditionType) -> Option<&Condition> {
    d.core.conditions.iter().find(|c| c.type_ == type_.as_str())
}

/// The handover of the current template was aborted, or is being aborted.
fn aborted(status: &FlinkBlueGreenDeploymentStatus) -> Option<String> {
    if let Some(t) = &status.transition
        && t.phase == Phase::Aborting
    {
        return Some(
            t.abort_reason
                .clone()
                .unwrap_or_else(|| "handover being aborted".into()),
        );
    }
    let last = status.history.first()?;
    (status.transition.is_none()
        && status.failed_template_hash.is_some()
        && last.outcome == bluegreen_controller::resource::Outcome::Aborted)
        .then(|| {
            last.reason
                .clone()
                .unwrap_or_else(|| format!("handover of epoch {} aborted", last.epoch))
        })
}

/// Judges one read of the resource. A status this build cannot fully parse is judged by its
/// conditions, `observedGeneration` and whether a handover is in progress.
pub fn judge(d: &Deployment) -> Verdict {
    if let Ok(status) = &d.status
        && let Some(reason) = aborted(status)
    {
        return Verdict::Aborted(reason);
    }
    if let Some(c) = condition(d, ConditionType::Degraded)
        && c.status == "True"
    {
        return Verdict::Degraded(format!("{}: {}", c.reason, c.message));
    }
    if let Some(generation) = d.generation
        && d.core.observed_generation.is_none_or(|o| o < generation)
    {
        return Verdict::Waiting(format!(
            "the controller has not acted on generation {generation} yet"
        ));
    }
    match &d.status {
        Ok(status) => {
            if let Some(t) = &status.transition {
                return Verdict::Waiting(format!("handover to {} in phase {:?}", t.to, t.phase));
            }
        }
        Err(_) if d.core.transition.is_some() => {
            return Verdict::Waiting("a handover is in progress".into());
        }
        Err(_) => {}
    }
    match condition(d, ConditionType::Ready) {
        Some(c) if c.status == "True" => Verdict::Healthy,
        Some(c) if c.reason == Reason::Suspended.as_str() => Verdict::Suspended(c.message.clone()),
        Some(c) => Verdict::Waiting(format!(
            "Ready is {}: {}: {}",
            c.status, c.reason, c.message
        )),
        None => Verdict::Waiting("no Ready condition yet".into()),
    }
}
