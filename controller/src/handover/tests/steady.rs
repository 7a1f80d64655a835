//! The steady state: the first deployment, suspend and resume, refused specs, the ConfigMap, the
//! active job's gates, and the conditions a resource reaches.

use super::*;

#[test]
fn first_deployment_writes_initializing_then_creates_blue() {
    let p = plan(&observed());
    assert_eq!(
        p.actions,
        vec![
            write_configmap(0, Stage::Initializing, Color::Blue, Toggle::NotSet),
            Action::ApplyChild {
                color: Color::Blue,
                template_hash: "h1".into(),
                restore_path: None
            },
        ]
    );
    assert_eq!(transition(&p).phase, Phase::Deploying);
    assert_eq!(condition(&p, ConditionType::Ready).0, "False");
}

#[test]
fn first_deployment_starts_from_the_initial_savepoint() {
    let mut obs = observed();
    obs.initial_savepoint = Some("s3://sp/old".into());
    let p = plan(&obs);
    assert!(p.actions.contains(&Action::ApplyChild {
        color: Color::Blue,
        template_hash: "h1".into(),
        restore_path: Some("s3://sp/old".into())
    }));
}

#[test]
fn first_deployment_completes_when_blue_runs() {
    let obs = first_deployment_started(observed()).blue(running("h1", 0, 0, None, i64::MIN));
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![write_configmap(
            0,
            Stage::Running,
            Color::Blue,
            Toggle::NotSet
        )]
    );
    assert_eq!(p.status.active_color, Some(Color::Blue));
    assert!(p.status.transition.is_none());
    assert_eq!(condition(&p, ConditionType::Ready), ("True", "Running"));
    assert_eq!(p.status.history[0].outcome, Outcome::Deployed);
}

#[test]
fn steady_state_without_changes_does_nothing() {
    let p = plan(&steady_blue("h1"));
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(condition(&p, ConditionType::Ready).0, "True");
    assert_eq!(condition(&p, ConditionType::Degraded).0, "False");
}

#[test]
fn suspend_is_applied_in_place_without_a_handover() {
    let mut obs = steady_blue("h1");
    obs.wanted_job_state = crate::observed::JobState::Suspended;
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![Action::ApplyChild {
            color: Color::Blue,
            template_hash: "h1".into(),
            restore_path: None
        }]
    );
    assert!(p.status.transition.is_none());
}

#[test]
fn an_invalid_spec_changes_nothing_that_runs() {
    let mut obs = steady_blue("h2");
    obs.valid = Err(SpecError::new(
        "spec.coordination.abortGracePeriod",
        "\"soon\" is not a duration",
    ));
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert!(p.status.transition.is_none());
    let (status, reason) = condition(&p, ConditionType::Degraded);
    assert_eq!((status, reason), ("True", "InvalidSpec"));
    let message = &cond(&p, ConditionType::Degraded).message;
    assert!(
        message.contains("spec.coordination.abortGracePeriod"),
        "{message}"
    );
}

#[test]
fn a_hand_edited_configmap_that_cannot_be_reconciled_stops_the_controller() {
    let mut obs = handover(Phase::Deploying, None);
    obs.configmap = configmap(1, Stage::Transitioning, Color::Green, Toggle::Set(5));
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert_eq!(
        condition(&p, ConditionType::Degraded).1,
        "ConfigMapDiverged"
    );
}

#[test]
fn a_configmap_that_does_not_parse_is_rewritten() {
    let mut obs = steady_blue("h1");
    obs.configmap = ConfigMapObs::Invalid("key `stage` has invalid value".into());
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![write_configmap(
            0,
            Stage::Running,
            Color::Blue,
            Toggle::NotSet
        )]
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.reason == EventReason::ConfigMapRepaired)
    );
}

#[test]
fn replanning_the_same_observation_is_idempotent() {
    let obs = handover(Phase::Deploying, None).green({
        let mut g = running("h2", 1, 0, None, 0);
        g.job_state = Some(JobStatus::Created.into());
        g
    });
    let p1 = plan(&obs);
    let mut again = obs;
    again.status = p1.status.clone();
    let p2 = plan(&again);
    assert_eq!(p1.actions, p2.actions);
    assert!(
        p1.actions.is_empty(),
        "green exists with the right hash and the ConfigMap is current"
    );
}

#[test]
fn a_template_crossing_flink_major_versions_is_refused_naming_the_field() {
    let mut obs = steady_blue("h2");
    let mut deployed = obs.spec.clone();
    deployed.template.spec.flink_version = Some("v1_20".into());
    obs.status.deployed_spec = Some(deployed);
    obs.spec.template.spec.flink_version = Some("v2_1".into());
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert!(p.status.transition.is_none());
    let degraded = cond(&p, ConditionType::Degraded);
    assert_eq!(degraded.reason, "InvalidSpec");
    assert!(
        degraded.message.contains("spec.template.spec.flinkVersion")
            && degraded.message.contains("v1_20")
            && degraded.message.contains("restoreFrom: stateless"),
        "{}",
        degraded.message
    );
    // Within a major line, and with an explicitly stateless start, the handover starts.
    obs.spec.template.spec.flink_version = Some("v1_19".into());
    assert!(plan(&obs).status.transition.is_some());
    obs.spec.template.spec.flink_version = Some("v2_1".into());
    obs.valid = valid(|s| s.coordination.restore_from = RestoreFrom::Stateless);
    assert!(plan(&obs).status.transition.is_some());
}

#[test]
fn a_suspended_job_is_reported_as_suspended_not_running() {
    let mut obs = steady_blue("h1");
    obs.status.deployed_template_hash = Some("h1".into());
    obs.wanted_job_state = crate::observed::JobState::Suspended;
    // The spec asks for it: the child is applied suspended, with a Normal event.
    let p = plan(&obs);
    assert!(
        matches!(p.actions.as_slice(), [Action::ApplyChild { .. }]),
        "{:?}",
        p.actions
    );
    assert!(
        p.notes
            .iter()
            .any(|n| !n.warning && n.reason == EventReason::Suspending),
        "{:?}",
        p.notes
    );
    // Once suspended: Ready False "Suspended", nothing degraded, no handover.
    let blue = obs.blue.as_mut().unwrap();
    blue.spec_job_state = Some(crate::observed::JobState::Suspended);
    blue.job_state = Some(JobStatus::Suspended.into());
    blue.lifecycle = Some(LifecycleState::Suspended.into());
    blue.flink = None;
    let p = plan(&obs);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!(condition(&p, ConditionType::Ready), ("False", "Suspended"));
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("False", "AsExpected")
    );
    assert_eq!(condition(&p, ConditionType::Progressing), ("False", "Idle"));
}

#[test]
fn a_blocked_handover_is_not_reported_as_idle() {
    // The first deployment's job failed (e.g. a sink refused at job start): the conditions say
    // the same thing, and none says "no handover in progress".
    let mut obs = observed();
    let p = plan(&obs);
    obs.status = p.status.clone();
    obs.configmap =
        ConfigMapObs::Valid(crate::handover::desired_configmap(&obs.status, &obs).expect("cm"));
    obs.blue = Some(crate::observed::ChildObs {
        template_hash: Some(obs.template_hash.clone()),
        job_state: Some(JobStatus::Failed.into()),
        lifecycle: Some(LifecycleState::Failed.into()),
        error: Some("the FileSink cannot survive a handover: use OnCheckpointRollingPolicy".into()),
        spec_job_state: Some(crate::observed::JobState::Running),
        ..crate::observed::ChildObs::default()
    });
    let p = plan(&obs);
    let (ready, degraded, progressing) = (
        cond(&p, ConditionType::Ready),
        cond(&p, ConditionType::Degraded),
        cond(&p, ConditionType::Progressing),
    );
    assert_eq!(degraded.status, "True");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.message, degraded.message, "Ready names the problem");
    assert_eq!(progressing.status, "False");
    assert_ne!(progressing.reason, "Idle", "{progressing:?}");
    assert!(progressing.message.contains("blocked"), "{progressing:?}");
}

/// Steady blue whose gates report `problem`, one of them with no coordination state.
fn steady_blue_gates_in_trouble(problem: Option<&str>, now: &str) -> Observed {
    let mut obs = at(steady_blue("h1"), now);
    let gates = flink_of(&mut obs, Color::Blue);
    for r in &mut gates.gates.as_mut().unwrap().reports {
        r.problem = problem.map(str::to_owned);
    }
    gates.gates.as_mut().unwrap().reports[0].applied = None;
    obs
}

fn holding_notes(p: &crate::handover::Plan) -> Vec<(bool, EventReason)> {
    p.notes
        .iter()
        .filter(|n| n.reason.as_str().starts_with("Gates"))
        .map(|n| (n.warning, n.reason))
        .collect()
}

#[test]
fn gates_that_hold_or_cannot_reach_their_source_degrade_a_steady_job_after_the_grace() {
    let problem = "state source: sidecar http://127.0.0.1:8787/v1/state?wait=30000ms: java.net.ConnectException";
    // First seen: recorded, not reported yet; looked at again when the grace ends.
    let p = plan(&steady_blue_gates_in_trouble(
        Some(problem),
        "2026-01-01T00:00:00Z",
    ));
    assert_eq!(
        p.status.gates_trouble_since,
        Some(time("2026-01-01T00:00:00Z"))
    );
    assert_eq!(condition(&p, ConditionType::Ready), ("True", "Running"));
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("False", "AsExpected")
    );
    assert!(p.requeue_after <= crate::handover::gates::GATES_GRACE);
    assert!(holding_notes(&p).is_empty());
    // Still within the grace.
    let mut obs = steady_blue_gates_in_trouble(Some(problem), "2026-01-01T00:00:20Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(condition(&p, ConditionType::Degraded).0, "False");
    assert_eq!(p.requeue_after, std::time::Duration::from_secs(10));
    // Past the grace: Degraded and not Ready, naming the gates' own words; one Warning event.
    let mut obs = steady_blue_gates_in_trouble(Some(problem), "2026-01-01T00:00:31Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "GatesHolding")
    );
    assert_eq!(condition(&p, ConditionType::Ready), ("False", "NotReady"));
    let degraded = cond(&p, ConditionType::Degraded);
    assert!(degraded.message.contains(problem), "{}", degraded.message);
    assert!(
        degraded
            .message
            .contains("1 of 2 gate subtasks have no coordination state"),
        "{}",
        degraded.message
    );
    assert_eq!(holding_notes(&p), [(true, EventReason::GatesHolding)]);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    // Still so a minute later: the same condition, no second event.
    let mut obs = steady_blue_gates_in_trouble(Some(problem), "2026-01-01T00:01:31Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "GatesHolding")
    );
    assert!(holding_notes(&p).is_empty(), "{:?}", p.notes);
    // Recovered: healthy at once, said with a Normal event.
    let mut obs = at(steady_blue("h1"), "2026-01-01T00:01:40Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("False", "AsExpected")
    );
    assert_eq!(condition(&p, ConditionType::Ready), ("True", "Running"));
    assert_eq!(p.status.gates_trouble_since, None);
    assert_eq!(holding_notes(&p), [(false, EventReason::GatesRecovered)]);
}

#[test]
fn gates_trouble_that_clears_within_the_grace_is_never_reported() {
    let p = plan(&steady_blue_gates_in_trouble(None, "2026-01-01T00:00:00Z"));
    let mut obs = at(steady_blue("h1"), "2026-01-01T00:00:10Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(p.status.gates_trouble_since, None);
    // Trouble again: the grace starts over.
    let mut obs = steady_blue_gates_in_trouble(None, "2026-01-01T00:00:20Z");
    obs.status = p.status;
    let p = plan(&obs);
    let mut obs = steady_blue_gates_in_trouble(None, "2026-01-01T00:00:45Z");
    obs.status = p.status;
    let p = plan(&obs);
    assert_eq!(condition(&p, ConditionType::Degraded).0, "False");
    assert!(p.notes.is_empty(), "{:?}", p.notes);
    // A worse problem is reported instead: the active job failed.
    let mut obs = steady_blue_gates_in_trouble(None, "2026-01-01T00:01:00Z");
    obs.status = p.status;
    obs.blue.as_mut().unwrap().job_state = Some(JobStatus::Failed.into());
    assert_eq!(
        condition(&plan(&obs), ConditionType::Degraded).1,
        "ActiveJobFailed"
    );
}

#[test]
fn a_refused_first_deployment_reaches_every_condition_whole_with_one_warning_event() {
    // The launcher's refusal of an unsafe FileSink: the cause chain, well over 1000 characters.
    let refusal = format!(
        "the job could not be submitted: {}<- java.lang.IllegalArgumentException: FileSink rolling policy DefaultRollingPolicy does not roll on every checkpoint. Use .withRollingPolicy(OnCheckpointRollingPolicy.build()), or BlueGreenSinks.rollOnCheckpoint(policy) to keep size/time rolls as well",
        "org.apache.flink.client.program.ProgramInvocationException: The main method caused an error. ".repeat(12)
    );
    let obs = first_deployment_started(observed());
    let mut blue = running("h1", 0, 0, None, i64::MIN);
    blue.job_state = Some(JobStatus::Failed.into());
    blue.lifecycle = Some(LifecycleState::Failed.into());
    blue.error = Some(refusal.clone());
    blue.flink = None;
    let obs = obs.blue(blue);
    let p = plan(&obs);
    let get = |type_: ConditionType| cond(&p, type_);
    let degraded = get(ConditionType::Degraded);
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_str()),
        ("True", "FirstDeploymentFailed")
    );
    assert_eq!(degraded.message, refusal);
    assert_eq!(get(ConditionType::Ready).message, refusal);
    assert!(get(ConditionType::Progressing).message.ends_with(&refusal));
    assert_eq!(get(ConditionType::Progressing).status, "False");
    let warnings: Vec<_> = p.notes.iter().filter(|n| n.warning).collect();
    assert_eq!(warnings.len(), 1, "{:?}", p.notes);
    assert_eq!(warnings[0].reason, EventReason::FirstDeploymentFailed);
    assert!(
        warnings[0]
            .message
            .contains("BlueGreenSinks.rollOnCheckpoint(policy)")
    );
    // Not again on the next look.
    let mut again = obs.clone();
    again.status = p.status.clone();
    assert!(
        plan(&again).notes.iter().all(|n| !n.warning),
        "{:?}",
        plan(&again).notes
    );
}

#[test]
fn an_active_job_whose_gates_say_the_other_color_is_degraded_at_once() {
    let mut obs = steady_blue("h1");
    for r in &mut flink_of(&mut obs, Color::Blue)
        .gates
        .as_mut()
        .unwrap()
        .reports
    {
        r.color = Some(Color::Green);
    }
    let p = plan(&obs);
    let (status, reason, message) = condition_message(&p, ConditionType::Degraded);
    assert_eq!((status, reason), ("True", "GateColorMismatch"));
    assert!(
        message.contains("of the blue job report color=GREEN"),
        "{message}"
    );
    assert_eq!(condition(&p, ConditionType::Ready).0, "False");
    assert_eq!(
        holding_notes(&p),
        Vec::<(bool, EventReason)>::new(),
        "not the holding warning"
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.warning && n.reason == EventReason::GateColorMismatch)
    );
    // Said once: the next resync with the condition in place writes no new event.
    obs.status = p.status;
    assert!(
        !plan(&obs)
            .notes
            .iter()
            .any(|n| n.reason == EventReason::GateColorMismatch)
    );
}
