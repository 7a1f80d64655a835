//! The ConfigMap projection: the coordination state a status stands for, and whether the observed
//! ConfigMap can be moved there.

use bluegreen_protocol::{CoordinationState, Stage, Toggle, check_transition};

use crate::observed::{ConfigMapObs, Observed};
use crate::resource::{FlinkBlueGreenDeploymentStatus, Phase};

/// The ConfigMap state a status stands for (`None` before the first deployment).
pub fn desired_configmap(
    status: &FlinkBlueGreenDeploymentStatus,
    obs: &Observed,
) -> Option<CoordinationState> {
    let delay = obs.valid.as_ref().ok().map_or_else(
        || current_delay(obs),
        |v| u64::try_from(v.settings.deletion_delay.as_millis()).unwrap_or(u64::MAX),
    );
    let state = |active, stage, toggle, epoch| CoordinationState {
        floor: if stage == Stage::Initializing {
            None
        } else {
            status.floor
        },
        active,
        deletion_delay_ms: delay,
        stage,
        toggle,
        epoch,
    };
    let Some(t) = &status.transition else {
        return status
            .active_color
            .map(|active| state(active, Stage::Running, Toggle::NotSet, status.epoch));
    };
    let proposed = t.toggle.map_or(Toggle::NotSet, Toggle::Proposed);
    let set = Toggle::Set(t.toggle.unwrap_or(i64::MAX));
    Some(match (t.from, t.phase) {
        (None, _) => state(t.to, Stage::Initializing, Toggle::NotSet, t.epoch),
        (Some(from), Phase::Snapshotting) => {
            state(from, Stage::Running, Toggle::NotSet, status.epoch)
        }
        (Some(_), Phase::Deploying) => state(t.to, Stage::Transitioning, Toggle::NotSet, t.epoch),
        (Some(_), Phase::ConfirmingToggle) => state(t.to, Stage::Transitioning, proposed, t.epoch),
        (Some(_), Phase::ToggleSet) => state(t.to, Stage::Transitioning, set, t.epoch),
        (Some(_), Phase::ClearToTeardown | Phase::TearingDown) => {
            state(t.to, Stage::ClearToTeardown, set, t.epoch)
        }
        (Some(_), Phase::Aborting) => state(t.to, Stage::Failing, proposed, t.epoch),
    })
}

fn current_delay(obs: &Observed) -> u64 {
    match &obs.configmap {
        ConfigMapObs::Valid(s) => s.deletion_delay_ms,
        _ => 0,
    }
}

/// Why the observed ConfigMap cannot be brought to `desired` (a hand edit or another writer).
pub(super) fn diverged(
    observed: &ConfigMapObs,
    desired: Option<&CoordinationState>,
) -> Option<String> {
    let (ConfigMapObs::Valid(seen), Some(desired)) = (observed, desired) else {
        return None;
    };
    let mut comparable = *seen;
    comparable.deletion_delay_ms = desired.deletion_delay_ms;
    if comparable == *desired {
        return None;
    }
    check_transition(seen, desired).err().map(|e| {
        format!(
            "the coordination ConfigMap holds `{seen}`, which the controller did not write and cannot move on from ({e}); \
             restore it to `{desired}` or delete it so the controller rewrites it"
        )
    })
}
