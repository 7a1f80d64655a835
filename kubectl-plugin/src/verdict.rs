//! What `status` concludes from one read, and its exit codes.

use bluegreen_controller::resource::{FlinkBlueGreenDeploymentStatus, Phase};

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
}

impl Verdict {
    /// The exit code when `status` stops on this verdict.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Healthy => exit::OK,
            Self::Waiting(_) => exit::TIMEOUT,
            Self::Degraded(_) => exit::DEGRADED,
            Self::Aborted(_) => exit::ABORTED,
        }
    }

    /// Whether `status` stops waiting.
    pub fn is_final(&self) -> bool {
        !matches!(self, Self::Waiting(_))
    }
}

fn condition<'a>(
    status: &'a FlinkBlueGreenDeploymentStatus,
    type_: &str,
) -> Option<&'a bluegreen_controller::resource::Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// Judges one read of the resource.
pub fn judge(d: &Deployment) -> Verdict {
    let status = match &d.status {
        Ok(s) => s,
        Err(e) => return Verdict::Waiting(format!("status does not parse yet: {e}")),
    };
    if let Some(t) = &status.transition
        && t.phase == Phase::Aborting
    {
        return Verdict::Aborted(
            t.abort_reason
                .clone()
                .unwrap_or_else(|| "handover being aborted".into()),
        );
    }
    if status.transition.is_none()
        && status.failed_template_hash.is_some()
        && let Some(last) = status.history.first()
        && last.outcome == "Aborted"
    {
        return Verdict::Aborted(
            last.reason
                .clone()
                .unwrap_or_else(|| format!("handover of epoch {} aborted", last.epoch)),
        );
    }
    if let Some(c) = condition(status, "Degraded")
        && c.status == "True"
    {
        return Verdict::Degraded(format!("{}: {}", c.reason, c.message));
    }
    if let (Some(generation), observed) = (d.generation, status.observed_generation)
        && observed.is_none_or(|o| o < generation)
    {
        return Verdict::Waiting(format!(
            "the controller has not acted on generation {generation} yet"
        ));
    }
    if let Some(t) = &status.transition {
        return Verdict::Waiting(format!("handover to {} in phase {:?}", t.to, t.phase));
    }
    match condition(status, "Ready") {
        Some(c) if c.status == "True" => Verdict::Healthy,
        Some(c) => Verdict::Waiting(format!(
            "Ready is {}: {}: {}",
            c.status, c.reason, c.message
        )),
        None => Verdict::Waiting("no Ready condition yet".into()),
    }
}
