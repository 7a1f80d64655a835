//! Every failure path of a handover, each ending in a stated condition, with the ledger's figures.

use std::time::{Duration, Instant};

use bluegreen_controller::resource::{FlinkBlueGreenDeployment, Phase};
use bluegreen_e2e::{WAIT, running_blue, set_image};
use bluegreen_examples::reliability::{Trial, record};
use bluegreen_examples::{LocalStack, NAMESPACE};
use bluegreen_local_flink::{DeploymentRef, JobFailure, JobState, RestFault};
use bluegreen_protocol::Color;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

fn d(name: &str) -> DeploymentRef {
    DeploymentRef::new(NAMESPACE, name)
}

fn condition(f: &FlinkBlueGreenDeployment, type_: &str) -> (String, String) {
    f.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .map(|c| (c.status.clone(), c.reason.clone()))
        .unwrap_or_default()
}

/// Records a row of the "Flink faults" table with the ledger's figures and the time since `started`.
async fn record_flink_fault(
    stack: &LocalStack,
    fault: &str,
    outcome: &str,
    test: &str,
    started: Instant,
) -> anyhow::Result<()> {
    let report = stack.report("orders").await?;
    record(&Trial {
        area: "Flink faults".into(),
        fault: fault.into(),
        runs: 1,
        outcome: outcome.into(),
        duplicates: Some(report.total.duplicates),
        losses: Some(report.total.losses),
        figures: format!(
            "converged in {:.1} s wall; {} records checked",
            started.elapsed().as_secs_f64(),
            report.expected
        ),
        test: format!("failures::{test}"),
    })?;
    Ok(())
}

async fn assert_exactly_once(stack: &LocalStack) -> anyhow::Result<()> {
    let report = stack.report("orders").await?;
    println!("{report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_job_that_crash_loops_is_aborted_and_blue_keeps_emitting() -> anyhow::Result<()>
{
    let stack = running_blue().await?;
    let started = Instant::now();
    stack.flink.faults().crash_loop(&d("orders-green"), true);
    set_image(&stack, "v2-broken").await?;
    let aborted = stack
        .wait_for("orders", WAIT, "abort", |f| {
            f.status.as_ref().is_some_and(|s| {
                s.transition.is_none()
                    && s.history.first().is_some_and(|h| {
                        h.outcome == bluegreen_controller::resource::Outcome::Aborted
                    })
            })
        })
        .await?;
    let status = aborted.status.clone().expect("status");
    assert_eq!(status.active_color, Some(Color::Blue));
    assert_eq!(
        condition(&aborted, "Degraded"),
        ("True".into(), "HandoverAborted".into())
    );
    assert!(
        status.history[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("Incoming"),
        "{:?}",
        status.history[0]
    );
    assert!(
        stack.flink.job(&d("orders-green")).is_none_or(|j| matches!(
            j.view().state,
            JobState::Failed | JobState::Canceled | JobState::Finished
        )),
        "green is gone"
    );
    assert_exactly_once(&stack).await?;
    // Fixed image: the next handover goes through.
    stack.flink.faults().crash_loop(&d("orders-green"), false);
    set_image(&stack, "v3").await?;
    let done = stack.wait_steady("orders", Color::Green, WAIT).await?;
    assert_eq!(condition(&done, "Degraded").0, "False");
    assert_exactly_once(&stack).await?;
    record_flink_fault(
        &stack,
        "crash-looping incoming job",
        "aborted before W, blue kept emitting; the fixed image then completed",
        "an_incoming_job_that_crash_loops_is_aborted_and_blue_keeps_emitting",
        started,
    )
    .await?;
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_incoming_job_is_aborted_after_the_grace_period() -> anyhow::Result<()> {
    let stack = running_blue().await?;
    stack
        .flink
        .faults()
        .slow_start(&d("orders-green"), 3_600_000);
    set_image(&stack, "v2-slow").await?;
    let aborted = stack
        .wait_for("orders", WAIT, "abort", |f| {
            condition(f, "Degraded").1 == "HandoverAborted"
        })
        .await?;
    let reason = aborted
        .status
        .as_ref()
        .and_then(|s| s.history.first())
        .and_then(|h| h.reason.clone())
        .unwrap_or_default();
    assert!(reason.starts_with("IncomingNotRunning"), "{reason}");
    assert_exactly_once(&stack).await?;
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_savepoints_are_retried_then_given_up_without_touching_blue() -> anyhow::Result<()> {
    let stack = running_blue().await?;
    let started = Instant::now();
    // One failure: retried after the backoff, the handover completes.
    stack
        .flink
        .faults()
        .fail_next_savepoints(&d("orders-blue"), 1);
    set_image(&stack, "v2").await?;
    stack.wait_steady("orders", Color::Green, WAIT).await?;
    assert_exactly_once(&stack).await?;
    // Three failures: given up (maxAttempts 3), nothing deployed, green untouched.
    stack
        .flink
        .faults()
        .fail_next_savepoints(&d("orders-green"), 3);
    set_image(&stack, "v3").await?;
    let aborted = stack
        .wait_for("orders", WAIT, "savepoint give-up", |f| {
            condition(f, "Degraded").1 == "SavepointFailed"
                || condition(f, "Degraded").1 == "HandoverAborted"
        })
        .await?;
    let status = aborted.status.clone().expect("status");
    assert_eq!(status.active_color, Some(Color::Green));
    assert!(
        status.history[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("SavepointFailed")
    );
    assert!(
        stack.flink.job(&d("orders-blue")).is_none_or(|j| matches!(
            j.view().state,
            JobState::Failed | JobState::Canceled | JobState::Finished
        )),
        "no blue was created"
    );
    assert_exactly_once(&stack).await?;
    record_flink_fault(
        &stack,
        "savepoint failing 1 time, then 3 times (maxAttempts 3)",
        "1: retried, completed; 3: given up (SavepointFailed), nothing deployed, active job untouched",
        "failed_savepoints_are_retried_then_given_up_without_touching_blue",
        started,
    )
    .await?;
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_rest_api_pauses_the_handover_until_it_heals() -> anyhow::Result<()> {
    let stack = running_blue().await?;
    stack
        .flink
        .faults()
        .rest(&d("orders-blue"), RestFault::ServerError);
    set_image(&stack, "v2").await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let paused = stack.fbgds().get("orders").await?;
    assert_eq!(
        paused.status.as_ref().and_then(|s| s.active_color),
        Some(Color::Blue)
    );
    stack
        .flink
        .faults()
        .rest(&d("orders-blue"), RestFault::Healthy);
    stack.wait_steady("orders", Color::Green, WAIT).await?;
    assert_exactly_once(&stack).await?;
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_change_before_w_is_set_restarts_the_handover_with_the_newest_template()
-> anyhow::Result<()> {
    let stack = running_blue().await?;
    stack.flink.faults().slow_start(&d("orders-green"), 60_000);
    set_image(&stack, "v2").await?;
    stack.wait_phase("orders", Phase::Deploying, WAIT).await?;
    stack.flink.faults().slow_start(&d("orders-green"), 0);
    set_image(&stack, "v3").await?;
    let done = stack.wait_steady("orders", Color::Green, WAIT).await?;
    let status = done.status.expect("status");
    assert_eq!(
        status.history[0].outcome,
        bluegreen_controller::resource::Outcome::Promoted
    );
    assert!(
        status.history[1]
            .reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("SpecChanged")
    );
    let green = stack.fbgds().get("orders").await?;
    assert_eq!(
        green.spec.template.spec.image.as_deref(),
        Some("example.com/orders:v3")
    );
    assert_exactly_once(&stack).await?;
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_promotion_waits_for_the_annotation() -> anyhow::Result<()> {
    let stack = running_blue().await?;
    stack
        .patch_spec("orders", json!({"coordination": {"promotion": "manual"}}))
        .await?;
    set_image(&stack, "v2").await?;
    stack
        .wait_for("orders", WAIT, "awaiting promotion", |f| {
            condition(f, "Progressing").1 == "AwaitingPromotion"
        })
        .await?;
    let patch = json!({"metadata": {"annotations": {"bluegreen.dev/action": "promote"}}});
    stack
        .fbgds()
        .patch("orders", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let done = stack.wait_steady("orders", Color::Green, WAIT).await?;
    assert!(
        !done
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key("bluegreen.dev/action")
    );
    assert_exactly_once(&stack).await?;
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_spec_is_reported_and_leaves_the_running_job_untouched() -> anyhow::Result<()> {
    let stack = running_blue().await?;
    let before = stack
        .flink
        .job(&d("orders-blue"))
        .expect("blue job")
        .job_id
        .clone();
    stack
        .patch_spec("orders", json!({"coordination": {"abortGracePeriod": "soon"}, "template": {"spec": {"image": "example.com/orders:v2"}}}))
        .await?;
    let degraded = stack
        .wait_for("orders", WAIT, "InvalidSpec", |f| {
            condition(f, "Degraded").1 == "InvalidSpec"
        })
        .await?;
    let message = degraded
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Degraded"))
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        message.contains("spec.coordination.abortGracePeriod"),
        "{message}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = stack.fbgds().get("orders").await?.status.expect("status");
    assert!(status.transition.is_none());
    assert_eq!(
        stack.flink.job(&d("orders-blue")).expect("blue job").job_id,
        before
    );
    assert_exactly_once(&stack).await?;
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outgoing_job_failing_and_restarting_during_the_handover_loses_nothing()
-> anyhow::Result<()> {
    let stack = running_blue().await?;
    stack
        .flink
        .faults()
        .delay_savepoints(&d("orders-blue"), 2_000);
    set_image(&stack, "v2").await?;
    stack.wait_phase("orders", Phase::ToggleSet, WAIT).await?;
    let started = Instant::now();
    stack
        .flink
        .faults()
        .fail_job_now(&d("orders-blue"), JobFailure::Restart);
    stack.wait_steady("orders", Color::Green, WAIT).await?;
    assert_exactly_once(&stack).await?;
    record_flink_fault(
        &stack,
        "outgoing job fails (restarts) after W during the handover",
        "restarted from its checkpoint; completed",
        "the_outgoing_job_failing_and_restarting_during_the_handover_loses_nothing",
        started,
    )
    .await?;
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_job_failing_after_w_is_set_is_repaired_forward_without_loss()
-> anyhow::Result<()> {
    let stack = running_blue().await?;
    // Keep green from being promoted for a while: it needs 40 checkpoints. Automatic repair is
    // off: a person repairs.
    stack
        .patch_spec(
            "orders",
            json!({"coordination": {"health": {"minCheckpoints": 40}, "forwardRepair": {"enabled": false}}}),
        )
        .await?;
    set_image(&stack, "v2").await?;
    stack.wait_phase("orders", Phase::ToggleSet, WAIT).await?;
    let green = d("orders-green");
    stack
        .flink
        .wait_for_job(&green, WAIT, |v| {
            v.completed_checkpoints >= 2 && v.gates.iter().all(|g| g.snapshot().passed > 0)
        })
        .await?;
    let failed_job = stack.flink.job(&green).expect("green job").job_id.clone();
    stack
        .flink
        .faults()
        .fail_job_now(&green, JobFailure::Permanent);
    let degraded = stack
        .wait_for("orders", WAIT, "IncomingFailedAfterToggle", |f| {
            condition(f, "Degraded").1 == "IncomingFailedAfterToggle"
        })
        .await?;
    assert_eq!(
        degraded.status.as_ref().and_then(|s| s.active_color),
        Some(Color::Blue),
        "never aborted after W"
    );
    // The fix: a new template (here, back to the old image) is applied to green in place, from
    // green's own latest checkpoint; the handover then completes.
    stack.flink.faults().clear(&green);
    stack
        .patch_spec("orders", json!({"coordination": {"health": {"minCheckpoints": 1}}, "template": {"spec": {"image": "example.com/orders:v1"}}}))
        .await?;
    stack.wait_steady("orders", Color::Green, WAIT).await?;
    let (restored, _) = stack
        .flink
        .job(&green)
        .expect("green job")
        .view()
        .restored
        .expect("green restored its state");
    assert_eq!(
        restored.job_id, failed_job,
        "green resumed from the failed green job's own state"
    );
    assert_exactly_once(&stack).await?;
    stack.shutdown().await;
    Ok(())
}

/// Fails green for good once it has two checkpoints of its own and passed records above W;
/// returns its job id and its latest checkpoint.
async fn fail_green_after_checkpoints(stack: &LocalStack) -> anyhow::Result<(String, String)> {
    let green = d("orders-green");
    stack
        .flink
        .wait_for_job(&green, WAIT, |v| {
            v.completed_checkpoints >= 2 && v.gates.iter().all(|g| g.snapshot().passed > 0)
        })
        .await?;
    let failed = stack.flink.job(&green).expect("green job");
    stack
        .flink
        .faults()
        .fail_job_now(&green, JobFailure::Permanent);
    failed.await_terminal(WAIT).await?;
    let checkpoint = failed
        .view()
        .latest_checkpoint
        .expect("green's own checkpoint")
        .path
        .clone();
    Ok((failed.job_id.clone(), checkpoint))
}

/// The reasons of every Event recorded so far.
async fn event_reasons(stack: &LocalStack) -> anyhow::Result<Vec<String>> {
    let events: Api<Event> = Api::namespaced(stack.client.clone(), NAMESPACE);
    Ok(events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_job_failing_for_good_after_w_is_set_is_repaired_forward_automatically()
-> anyhow::Result<()> {
    let stack = running_blue().await?;
    // Green needs 40 checkpoints before promotion, so it is still in ToggleSet when it fails;
    // nobody touches the template: the controller repairs it after a 1 s grace.
    stack
        .patch_spec(
            "orders",
            json!({"coordination": {"health": {"minCheckpoints": 40}, "forwardRepair": {"grace": "1s"}}}),
        )
        .await?;
    set_image(&stack, "v2").await?;
    stack.wait_phase("orders", Phase::ToggleSet, WAIT).await?;
    let (failed_job, own_checkpoint) = fail_green_after_checkpoints(&stack).await?;
    let repairing = stack
        .wait_for("orders", WAIT, "forward repair", |f| {
            f.status
                .as_ref()
                .and_then(|s| s.transition.as_ref())
                .and_then(|t| t.forward_repair.as_ref())
                .is_some_and(|r| r.started_at.is_some())
        })
        .await?;
    let status = repairing.status.expect("status");
    let repair = status
        .transition
        .and_then(|t| t.forward_repair)
        .expect("repair");
    assert_eq!(status.active_color, Some(Color::Blue), "never aborted");
    assert_eq!(
        (
            repair.failed_job_id.as_deref(),
            repair.restore_path.as_deref()
        ),
        (Some(failed_job.as_str()), Some(own_checkpoint.as_str())),
        "the failed job's own latest checkpoint, not the handover's savepoint"
    );
    assert_eq!(
        repair.template_hash, status.deployed_template_hash,
        "blue's template, the one that last ran well"
    );
    // Let it be promoted now (a coordination change, not a template change).
    stack
        .patch_spec(
            "orders",
            json!({"coordination": {"health": {"minCheckpoints": 1}}}),
        )
        .await?;
    // Done, but not Ready: like an aborted handover, the template asked for is not deployed.
    let done = stack
        .wait_for("orders", WAIT, "the repaired handover to complete", |f| {
            f.status.as_ref().is_some_and(|s| {
                s.active_color == Some(Color::Green)
                    && s.transition.is_none()
                    && s.history.first().is_some_and(|h| {
                        h.outcome == bluegreen_controller::resource::Outcome::Promoted
                    })
            })
        })
        .await?;
    let job = stack.flink.job(&d("orders-green")).expect("green job");
    let (restored, _) = job.view().restored.expect("green restored its state");
    assert_eq!(
        (restored.job_id.as_str(), restored.path.as_str()),
        (failed_job.as_str(), own_checkpoint.as_str()),
        "green resumed from the failed green job's own latest checkpoint"
    );
    assert_eq!(job.settings.version, "v1", "green runs blue's template");
    let history = done.status.as_ref().expect("status").history[0].clone();
    assert!(
        history
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("ForwardRepaired")),
        "{history:?}"
    );
    assert_eq!(
        history.forward_repair.and_then(|r| r.restore_path),
        Some(own_checkpoint)
    );
    assert_eq!(
        condition(&done, "Degraded"),
        ("True".into(), "ForwardRepaired".into()),
        "the template v2 is not deployed, and the status says so"
    );
    let reasons = event_reasons(&stack).await?;
    for reason in [
        "IncomingFailedAfterToggle",
        "ForwardRepair",
        "ForwardRepaired",
    ] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "{reason} in {reasons:?}"
        );
    }
    assert_exactly_once(&stack).await?;
    stack.shutdown().await;
    Ok(())
}
