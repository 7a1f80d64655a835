//! Drives the planner with a spec the checks accepted: a handover from a running blue job,
//! replanned with its own status while the clock jumps ahead and the savepoints fail, so that
//! every duration, backoff and deadline the spec gives meets the planner's clock arithmetic.
//! Test-only code that the `spec` fuzz target (`fuzz/fuzz_targets/spec.rs`) needs, hence public:
//! compiled for tests and with the `fuzzing` feature (which the fuzz crate enables) only.

use bluegreen_protocol::{AppliedState, Color, CoordinationState, Stage, Toggle};

use crate::checks::ValidSpec;
use crate::fixtures::{Scenario, observed, running};
use crate::handover::{Plan, plan};
use crate::observed::{ConfigMapObs, Observed, SavepointObs};
use crate::resource::FlinkBlueGreenDeploymentSpec;

/// The floor blue's gates and the status carry.
const FLOOR: i64 = 900_000;

/// How far the clock jumps between two plans.
const STEPS_HOURS: [i64; 6] = [0, 1, 24, 24 * 7, 24 * 365, 24 * 365 * 100];

/// Blue runs template `h1` at epoch 1 with the floor at 900 000 and its gates past 1 000 000; the
/// spec now asks for `h2`, validated as `valid`. Green already runs `h2` (its gates apply the same
/// state); every savepoint fails.
pub fn handover_observation(spec: &FlinkBlueGreenDeploymentSpec, valid: ValidSpec) -> Observed {
    let job = &spec.template.spec.job;
    let mut obs = observed();
    obs.valid = Ok(valid);
    obs.generation = 2;
    obs.template_hash = "h2".into();
    obs.initial_savepoint
        .clone_from(&job.initial_savepoint_path);
    obs.redeploy_nonce = job.savepoint_redeploy_nonce;
    obs.wanted_job_state = job
        .state
        .as_deref()
        .and_then(crate::observed::JobState::parse)
        .unwrap_or_default();
    obs.status.active_color = Some(Color::Blue);
    obs.status.stage = Some(Stage::Running);
    obs.status.epoch = 1;
    obs.status.floor = Some(FLOOR);
    obs.status.deployed_template_hash = Some("h1".into());
    let state = CoordinationState {
        active: Color::Blue,
        deletion_delay_ms: 0,
        stage: Stage::Running,
        toggle: Toggle::NotSet,
        epoch: 1,
        floor: Some(FLOOR),
    };
    obs.configmap = ConfigMapObs::Valid(state);
    let child = |hash: &str| {
        let mut child = running(hash, 1, 0, Some(1_000_000), 999_000);
        if let Some(flink) = child.flink.as_mut() {
            flink.savepoint = Some(SavepointObs::Failed("disk full".into()));
            if let Some(gates) = flink.gates.as_mut() {
                let applied = Some(AppliedState::from(&state));
                for report in &mut gates.reports {
                    report.applied = applied;
                }
            }
        }
        child
    };
    let (blue, green) = (child("h1"), child("h2"));
    obs.blue(blue).green(green)
}

/// Plans [`handover_observation`] once per clock step (0 h, 1 h, 1 d, 1 week, 1 year, 100
/// years later), each time with the status the previous plan wrote (with the savepoint trigger
/// id it planned).
pub fn drive(spec: &FlinkBlueGreenDeploymentSpec, valid: ValidSpec) -> Vec<Plan> {
    let mut obs = handover_observation(spec, valid);
    let start = obs.now;
    STEPS_HOURS
        .iter()
        .map(|hours| {
            obs.now = start
                .checked_add(jiff::SignedDuration::from_hours(*hours))
                .expect("within jiff's range");
            let p = plan(&obs);
            obs.status = p.status.clone();
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::validate_spec as validate;
    use crate::fixtures::spec;

    #[test]
    fn a_valid_spec_starts_the_handover_and_gives_up_on_failing_savepoints() {
        let s = spec("local:///job.jar");
        let plans = drive(&s, validate(&s).expect("valid"));
        assert_eq!(plans.len(), STEPS_HOURS.len());
        let first = &plans[0].status.transition;
        assert!(first.is_some(), "a handover starts");
        let last = &plans.last().expect("plans").status;
        assert!(
            last.transition.is_none()
                && last
                    .history
                    .first()
                    .is_some_and(|h| h.outcome == crate::resource::Outcome::Aborted),
            "every savepoint fails: the handover is given up: {last:?}"
        );
    }

    /// Durations are at most 7 days: 2562047788015215h (the largest jiff reads) is refused, and
    /// the longest durations accepted, with as many savepoint attempts as a u32 holds, plan.
    #[test]
    fn the_longest_durations_accepted_plan_a_handover() {
        let mut s = spec("local:///job.jar");
        s.coordination.savepoint.backoff = "2562047788015215h".into();
        assert!(validate(&s).is_err(), "refused");
        let longest = "168h";
        s.coordination.savepoint.backoff = longest.into();
        s.coordination.savepoint.timeout = longest.into();
        s.coordination.savepoint.max_attempts = u32::MAX;
        s.coordination.abort_grace_period = longest.into();
        s.coordination.min_ready = longest.into();
        s.coordination.deployment_deletion_delay = longest.into();
        s.coordination.toggle.offset = Some(longest.into());
        s.coordination.health.max_lag = Some(longest.into());
        let plans = drive(&s, validate(&s).expect("valid"));
        assert!(plans[0].status.transition.is_some(), "a handover starts");
    }
}
