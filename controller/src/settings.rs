//! Validation of a `FlinkBlueGreenDeployment` spec into the settings the handover uses
//! (pure: no client required). Every error names the field and the fix.

use std::time::Duration;

use crate::error::SpecError;
use crate::resource::{DeletionPolicy, FlinkBlueGreenDeploymentSpec, Promotion, RestoreFrom};

/// The validated coordination settings of one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// How W is chosen.
    pub toggle: ToggleRule,
    /// `coordination.deploymentDeletionDelay`.
    pub deletion_delay: Duration,
    /// `coordination.abortGracePeriod`.
    pub abort_grace: Duration,
    /// `coordination.minReady`.
    pub min_ready: Duration,
    /// `coordination.restoreFrom`.
    pub restore_from: RestoreFrom,
    /// `coordination.promotion`.
    pub promotion: Promotion,
    /// `coordination.health.minCheckpoints`.
    pub min_checkpoints: u32,
    /// `coordination.health.maxLag`.
    pub max_lag: Option<Duration>,
    /// `coordination.savepoint.maxAttempts`.
    pub savepoint_attempts: u32,
    /// `coordination.savepoint.backoff`.
    pub savepoint_backoff: Duration,
    /// `coordination.savepoint.timeout`.
    pub savepoint_timeout: Duration,
    /// `coordination.onDelete`.
    pub on_delete: DeletionPolicy,
    /// `coordination.forwardRepair.grace` when `forwardRepair.enabled` (`None`: off).
    pub forward_repair: Option<Duration>,
}

/// How W is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToggleRule {
    /// The outgoing job's progress plus this many milliseconds.
    Offset(i64),
    /// This exact value.
    Value(i64),
}

/// Validates the job fields and the coordination settings of the spec (the pod templates, the
/// sidecar and the rest of the template are [`crate::checks`]'). The running jobs are not touched
/// when this fails.
pub fn validate(spec: &FlinkBlueGreenDeploymentSpec) -> Result<Settings, SpecError> {
    let c = &spec.coordination;
    let job = &spec.template.spec.job;
    if job.jar_uri.trim().is_empty() {
        return Err(invalid(
            "spec.template.spec.job.jarURI",
            "must name the job jar, e.g. local:///opt/flink/usrlib/job.jar",
        ));
    }
    if let Some(p) = job.parallelism
        && p < 1
    {
        return Err(invalid(
            "spec.template.spec.job.parallelism",
            "must be at least 1",
        ));
    }
    if let Some(state) = &job.state
        && state != "running"
        && state != "suspended"
    {
        return Err(invalid(
            "spec.template.spec.job.state",
            "must be `running` or `suspended`",
        ));
    }
    match job.upgrade_mode.as_deref() {
        None | Some("savepoint" | "last-state") => {}
        Some("stateless") if c.restore_from == RestoreFrom::Stateless => {}
        Some("stateless") => {
            return Err(invalid(
                "spec.template.spec.job.upgradeMode",
                "`stateless` would drop the job's state; use `savepoint` or `last-state`, or set coordination.restoreFrom: stateless to ask for it explicitly",
            ));
        }
        Some(_) => {
            return Err(invalid(
                "spec.template.spec.job.upgradeMode",
                "must be `savepoint` or `last-state`",
            ));
        }
    }
    let toggle = toggle_rule(&c.toggle)?;
    let max_lag = c
        .health
        .max_lag
        .as_deref()
        .map(|s| duration("spec.coordination.health.maxLag", s))
        .transpose()?;
    if c.restore_from == RestoreFrom::LastCheckpoint {
        check_retained_checkpoints(spec)?;
    }
    if c.savepoint.max_attempts == 0 {
        return Err(invalid(
            "spec.coordination.savepoint.maxAttempts",
            "must be at least 1",
        ));
    }
    Ok(Settings {
        toggle,
        deletion_delay: duration(
            "spec.coordination.deploymentDeletionDelay",
            &c.deployment_deletion_delay,
        )?,
        abort_grace: duration("spec.coordination.abortGracePeriod", &c.abort_grace_period)?,
        min_ready: duration("spec.coordination.minReady", &c.min_ready)?,
        restore_from: c.restore_from,
        promotion: c.promotion,
        min_checkpoints: c.health.min_checkpoints,
        max_lag,
        savepoint_attempts: c.savepoint.max_attempts,
        savepoint_backoff: duration("spec.coordination.savepoint.backoff", &c.savepoint.backoff)?,
        savepoint_timeout: duration("spec.coordination.savepoint.timeout", &c.savepoint.timeout)?,
        on_delete: c.on_delete,
        forward_repair: Some(duration(
            "spec.coordination.forwardRepair.grace",
            &c.forward_repair.grace,
        )?)
        .filter(|_| c.forward_repair.enabled),
    })
}

/// `coordination.toggle`: exactly one of `offset` and `value`.
fn toggle_rule(toggle: &crate::resource::ToggleChoice) -> Result<ToggleRule, SpecError> {
    match (&toggle.offset, toggle.value) {
        (Some(_), Some(_)) => Err(invalid(
            "spec.coordination.toggle",
            "set either `offset` or `value`, not both",
        )),
        (None, None) => Err(invalid(
            "spec.coordination.toggle",
            "set `offset` (e.g. 1m) or `value` (epoch milliseconds)",
        )),
        (Some(offset), None) => {
            let ms = duration("spec.coordination.toggle.offset", offset)?.as_millis();
            Ok(ToggleRule::Offset(i64::try_from(ms).map_err(|_| {
                invalid("spec.coordination.toggle.offset", "is too large")
            })?))
        }
        (None, Some(v)) => Ok(ToggleRule::Value(v)),
    }
}

/// Flink's keys for how many completed checkpoints a job keeps (2.x, then 1.20).
const RETAINED_CHECKPOINTS: [&str; 2] = [
    "execution.checkpointing.num-retained",
    "state.checkpoints.num-retained",
];

/// `restoreFrom: lastCheckpoint` restores the outgoing job's latest checkpoint while that job
/// keeps running; with Flink's default of one retained checkpoint, the next checkpoint deletes it
/// and the incoming job cannot start (seen on real Flink: "Cannot find checkpoint").
fn check_retained_checkpoints(spec: &FlinkBlueGreenDeploymentSpec) -> Result<(), SpecError> {
    let conf = &spec.template.spec.flink_configuration;
    let retained = RETAINED_CHECKPOINTS
        .iter()
        .find_map(|k| conf.get(*k))
        .map(|v| v.trim().parse::<u32>());
    match retained {
        Some(Ok(n)) if n >= 2 => Ok(()),
        _ => Err(invalid(
            "spec.template.spec.flinkConfiguration[state.checkpoints.num-retained]",
            "must be 2 or more with spec.coordination.restoreFrom: lastCheckpoint (on Flink 2.x: \
             execution.checkpointing.num-retained): the incoming job restores the outgoing job's \
             latest checkpoint while that job keeps running, and with one retained checkpoint Flink \
             deletes it as soon as the next completes; keep at least two, or use restoreFrom: savepoint",
        )),
    }
}

fn invalid(field: &'static str, fix: &'static str) -> SpecError {
    SpecError::new(field, fix)
}

/// The longest duration a spec may give: 7 days. Anything longer is a slip (`10000h` for
/// `10000ms`) that would keep a handover waiting, or a job running twice, for longer than anyone
/// watches it, and backoffs that double per attempt stay far from overflowing.
pub const MAX_DURATION: Duration = Duration::from_hours(7 * 24);

/// Parses a non-negative duration, at most [`MAX_DURATION`], such as `90s`, `10m`, `1h30m` or
/// `PT10M`.
fn duration(field: &'static str, text: &str) -> Result<Duration, SpecError> {
    let parsed: jiff::SignedDuration = text.parse().map_err(|e| {
        SpecError::new(
            field,
            format!("{text:?} is not a duration ({e}); write e.g. 30s, 10m or 1h30m"),
        )
    })?;
    let duration = Duration::try_from(parsed).map_err(|_| {
        SpecError::new(
            field,
            format!("{text:?} is negative; durations must be >= 0"),
        )
    })?;
    if duration > MAX_DURATION {
        return Err(SpecError::new(
            field,
            format!(
                "{text:?} is longer than {}h; durations must be at most 7 days (e.g. 30s, 10m, 24h)",
                MAX_DURATION.as_secs() / 3600
            ),
        ));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::spec;

    #[test]
    fn restoring_from_the_last_checkpoint_needs_two_retained_checkpoints() {
        let mut s = spec("local:///job.jar");
        s.coordination.restore_from = RestoreFrom::LastCheckpoint;
        assert_eq!(
            field_of(validate(&s)),
            "spec.template.spec.flinkConfiguration[state.checkpoints.num-retained]"
        );
        for (key, value) in [
            ("state.checkpoints.num-retained", "1"),
            ("execution.checkpointing.num-retained", "two"),
        ] {
            let mut s = s.clone();
            s.template
                .spec
                .flink_configuration
                .insert(key.into(), value.into());
            assert!(validate(&s).is_err(), "{key}={value}");
        }
        for key in RETAINED_CHECKPOINTS {
            let mut s = s.clone();
            s.template
                .spec
                .flink_configuration
                .insert(key.into(), "2".into());
            assert!(validate(&s).is_ok(), "{key}=2");
        }
    }

    fn field_of(result: Result<Settings, SpecError>) -> String {
        match result {
            Err(SpecError { field, .. }) => field,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_valid() {
        let s = validate(&spec("local:///job.jar")).expect("valid");
        assert_eq!(s.abort_grace, Duration::from_mins(10));
        assert_eq!(s.min_ready, Duration::from_secs(10));
        assert_eq!(s.toggle, ToggleRule::Offset(60_000));
        assert_eq!(s.restore_from, RestoreFrom::Savepoint);
    }

    #[test]
    fn every_invalid_field_is_named() {
        let mut s = spec("");
        assert_eq!(field_of(validate(&s)), "spec.template.spec.job.jarURI");
        s = spec("local:///job.jar");
        s.template.spec.job.parallelism = Some(0);
        assert_eq!(field_of(validate(&s)), "spec.template.spec.job.parallelism");
        s = spec("local:///job.jar");
        s.template.spec.job.upgrade_mode = Some("stateless".into());
        assert_eq!(field_of(validate(&s)), "spec.template.spec.job.upgradeMode");
        s = spec("local:///job.jar");
        s.coordination.abort_grace_period = "ten minutes".into();
        assert_eq!(field_of(validate(&s)), "spec.coordination.abortGracePeriod");
        s = spec("local:///job.jar");
        s.coordination.min_ready = "ten seconds".into();
        assert_eq!(field_of(validate(&s)), "spec.coordination.minReady");
        s = spec("local:///job.jar");
        s.coordination.deployment_deletion_delay = "-5s".into();
        assert_eq!(
            field_of(validate(&s)),
            "spec.coordination.deploymentDeletionDelay"
        );
        s = spec("local:///job.jar");
        s.coordination.toggle.value = Some(5);
        assert_eq!(field_of(validate(&s)), "spec.coordination.toggle");
        s = spec("local:///job.jar");
        s.coordination.savepoint.max_attempts = 0;
        assert_eq!(
            field_of(validate(&s)),
            "spec.coordination.savepoint.maxAttempts"
        );
        s = spec("local:///job.jar");
        s.template.spec.job.state = Some("paused".into());
        assert_eq!(field_of(validate(&s)), "spec.template.spec.job.state");
    }

    #[test]
    fn forward_repair_is_on_after_two_minutes_by_default_and_its_grace_is_checked_even_when_off() {
        let s = spec("local:///job.jar");
        assert_eq!(
            validate(&s).expect("valid").forward_repair,
            Some(Duration::from_mins(2))
        );
        let mut off = s.clone();
        off.coordination.forward_repair.enabled = false;
        assert_eq!(validate(&off).expect("valid").forward_repair, None);
        for grace in ["soon", "-1m"] {
            let mut bad = off.clone();
            bad.coordination.forward_repair.grace = grace.into();
            assert_eq!(
                field_of(validate(&bad)),
                "spec.coordination.forwardRepair.grace",
                "{grace}"
            );
        }
    }

    #[test]
    fn stateless_is_allowed_only_when_asked_for() {
        let mut s = spec("local:///job.jar");
        s.template.spec.job.upgrade_mode = Some("stateless".into());
        s.coordination.restore_from = RestoreFrom::Stateless;
        assert!(validate(&s).is_ok());
    }
}
