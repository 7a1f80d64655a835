//! After the handover: the outgoing job is stopped with a savepoint (which commits its
//! transactional sink) before its FlinkDeployment is deleted, so none of its records `t <= W` are
//! lost; and the floor keeps a restarted or lagging incoming job from emitting them again.

use std::time::Duration;

use bluegreen_controller::resource::FlinkBlueGreenDeployment;
use bluegreen_examples::{LocalStack, NAMESPACE, StackOptions, orders_job};
use bluegreen_local_flink::{DeploymentRef, JobFailure, JobState};
use bluegreen_protocol::{Color, Stage};
use serde_json::json;

const WAIT: Duration = Duration::from_mins(1);

/// Blue v1, then a handover to green v2, with checkpoints every 3 minutes (far longer than the
/// handover) and no deletion delay: blue's output since it started is uncommitted when blue is
/// torn down, and green has no checkpoint of its own after promotion. `late_records: false`
/// switches the simulated late records off. Returns the stack and the resource after promotion.
async fn hand_over_with_long_checkpoints(
    late_records: bool,
) -> anyhow::Result<(LocalStack, FlinkBlueGreenDeployment)> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    let mut spec = orders_job("v1", 2);
    let conf = &mut spec.template.spec.flink_configuration;
    conf.insert("execution.checkpointing.interval".into(), "3min".into());
    if !late_records {
        conf.insert("bluegreen.sim.late-fraction".into(), "0".into());
    }
    spec.coordination.deployment_deletion_delay = "0s".into();
    spec.coordination.health.min_checkpoints = 0;
    stack.create("orders", spec).await?;
    stack.wait_steady("orders", Color::Blue, WAIT).await?;
    stack
        .patch_spec(
            "orders",
            json!({"template": {"spec": {"image": "example.com/orders:v2"}}}),
        )
        .await?;
    let done = stack.wait_steady("orders", Color::Green, WAIT).await?;
    Ok((stack, done))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outgoing_job_commits_its_output_before_it_is_deleted() -> anyhow::Result<()> {
    // Only blue's teardown can commit its output.
    let (stack, done) = hand_over_with_long_checkpoints(false).await?;
    let history = &done.status.as_ref().expect("status").history[0];
    assert_eq!(
        history.outcome,
        bluegreen_controller::resource::Outcome::Promoted
    );
    let report = stack.report("orders").await?;
    println!("{report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    stack.shutdown().await;
    Ok(())
}

/// Hands over to green (3 min checkpoints), optionally clears the floor, then restarts green
/// before its first checkpoint; returns the ledger's report.
async fn green_restarting_after_promotion(
    clear_floor: bool,
) -> anyhow::Result<bluegreen_local_flink::ledger::LedgerReport> {
    // Green has no checkpoint when it restarts: it replays from blue's savepoint, far below W.
    // Without the floor, RUNNING(GREEN) would pass those replayed records t <= W again.
    let (stack, done) = hand_over_with_long_checkpoints(true).await?;
    let status = done.status.expect("status");
    assert_eq!(status.floor, status.history[0].toggle, "the floor is W");
    if clear_floor {
        stack
            .fbgds()
            .patch(
                "orders",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(
                    json!({"metadata": {"annotations": {"bluegreen.dev/action": "clear-floor"}}}),
                ),
            )
            .await?;
        stack
            .wait_for("orders", WAIT, "floor cleared", |f| {
                f.status.as_ref().is_some_and(|s| s.floor.is_none())
            })
            .await?;
    }
    let green = DeploymentRef::new(NAMESPACE, "orders-green");
    stack
        .flink
        .faults()
        .fail_job_now(&green, JobFailure::Restart);
    stack
        .flink
        .wait_for_job(&green, WAIT, |v| {
            v.attempt >= 1 && v.state == JobState::Running && v.completed_checkpoints == 0
        })
        .await?;
    let report = stack.report("orders").await?;
    println!("{report}");
    stack.shutdown().await;
    Ok(report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_job_restarting_from_before_w_after_promotion_emits_nothing_twice()
-> anyhow::Result<()> {
    let report = green_restarting_after_promotion(false).await?;
    assert!(report.is_exactly_once_by_owner(), "{report}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clearing_the_floor_lets_a_replay_emit_records_at_or_below_w_again() -> anyhow::Result<()> {
    // The deliberate reprocessing the clear-floor action is for; it also shows the floor is
    // what keeps the test above at 0 duplicates.
    let report = green_restarting_after_promotion(true).await?;
    assert!(report.total.duplicates > 0, "{report}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_incoming_job_drops_late_records_at_or_below_w_and_emits_nothing_twice()
-> anyhow::Result<()> {
    // 5 % of the records arrive up to 150 s late; green reads the topic 90 s behind blue. Blue is
    // stopped soon after promotion (no deletion delay), so green reads late records t <= W that
    // blue had already emitted (without the floor: duplicates) and late records t <= W that
    // arrived after blue stopped (nobody can emit them: the floor drops them as late, like data
    // later than the allowed lateness).
    const LATE_MAX_MS: i64 = 150_000;
    const LAG_MS: i64 = 90_000;
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    let mut spec = orders_job("v1", 2);
    let conf = &mut spec.template.spec.flink_configuration;
    conf.insert("bluegreen.sim.late-fraction".into(), "0.05".into());
    conf.insert("bluegreen.sim.late-max-ms".into(), LATE_MAX_MS.to_string());
    spec.coordination.deployment_deletion_delay = "0s".into();
    stack.create("orders", spec).await?;
    stack.wait_steady("orders", Color::Blue, WAIT).await?;
    let green = DeploymentRef::new(NAMESPACE, "orders-green");
    stack.flink.faults().lag(&green, LAG_MS);
    stack
        .patch_spec(
            "orders",
            json!({"template": {"spec": {"image": "example.com/orders:v2"}}}),
        )
        .await?;
    let done = stack.wait_steady("orders", Color::Green, WAIT).await?;
    let w = done
        .status
        .as_ref()
        .and_then(|s| s.floor)
        .expect("the floor is W");
    // Once its gates apply RUNNING with the floor (the status is written before the ConfigMap),
    // green catches up and reads the late records t <= W that arrived after blue stopped.
    stack
        .flink
        .wait_for_job(&green, WAIT, |v| {
            v.gates.iter().all(|g| {
                g.snapshot()
                    .applied
                    .is_some_and(|s| s.stage == Stage::Running && s.floor == Some(w))
            })
        })
        .await?;
    stack.flink.faults().lag(&green, 0);
    // Every record t <= W has arrived (W + out-of-orderness + maximum lateness) and been read.
    let job = stack
        .flink
        .wait_for_job(&green, WAIT, |v| v.job_watermark > w + LATE_MAX_MS + 500)
        .await?;
    let report = stack.report("orders").await?;
    println!("{report}");
    assert_eq!(report.total.duplicates, 0, "{report}");
    assert_eq!(report.total.wrong_color, 0, "{report}");
    assert_eq!(report.count_mismatches, 0, "{report}");
    assert_eq!(
        report.total.losses, 0,
        "every record missing from the output is a late drop: {report}"
    );
    assert!(report.total.late_drops > 0, "{report}");
    assert_eq!(
        report.color(Some(Color::Green)).late_drops,
        report.total.late_drops,
        "{report}"
    );
    assert!(
        report.late_drop_events > report.total.late_drops,
        "green also dropped late records blue had emitted: {report}"
    );
    // Hold green still, then compare the ledger's late drops with the gates' counters.
    stack.flink.faults().lag(&green, i64::MAX);
    let paused_at = stack.flink.clock().now_ms();
    stack
        .flink
        .wait_for_job(&green, WAIT, |v| v.processed_to > paused_at)
        .await?;
    let view = job.view();
    assert_eq!(
        view.attempt, 0,
        "green never restarted: its gates counted every drop"
    );
    let counted: u64 = view.gates.iter().map(|g| g.snapshot().dropped_late).sum();
    let recorded = stack.flink.ledger().late_drops();
    assert!(
        recorded
            .iter()
            .all(|d| d.color == Color::Green && d.event_time <= w),
        "only green drops, only records t <= W"
    );
    assert_eq!(recorded.len() as u64, counted);
    stack.shutdown().await;
    Ok(())
}
