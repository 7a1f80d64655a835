//! The controller crashes (its task is dropped) in the middle of each phase of a handover, right
//! after it wrote its intent to the status and while the following action is in flight; a fresh
//! controller resumes from the status and the ledger still counts 0 duplicates / 0 losses.

use std::time::Duration;

use bluegreen_controller::resource::Phase;
use bluegreen_examples::reliability::{Trial, record};
use bluegreen_examples::{LocalStack, NAMESPACE, StackOptions, orders_job};
use bluegreen_local_apiserver::{RequestMatch, Verb};
use bluegreen_local_flink::DeploymentRef;
use bluegreen_protocol::Color;
use serde_json::json;

const WAIT: Duration = Duration::from_mins(1);
const SLOW: Duration = Duration::from_millis(1500);

/// What makes the phase last long enough to crash in it.
enum Slow {
    /// The outgoing job's savepoints take this long (simulated ms).
    Savepoint(i64),
    /// API requests matching this are delayed by `SLOW`.
    Request(RequestMatch),
}

async fn crash_in(phase: Phase, slow: Slow, abort: bool) -> anyhow::Result<()> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    let mut spec = orders_job("v1", 2);
    // A grace that a loaded machine cannot exceed by accident (green runs `minReady` before W is
    // proposed, within the grace of one phase), but 2 s where the handover is to be aborted.
    spec.coordination.abort_grace_period = if abort { "2s" } else { "1m" }.into();
    stack.create("orders", spec).await?;
    stack.wait_steady("orders", Color::Blue, WAIT).await?;
    let green = DeploymentRef::new(NAMESPACE, "orders-green");
    if abort {
        // Green cannot be RUNNING within the 2 s grace (its start takes 30 s of wall clock):
        // the handover is aborted before W, whatever the machine's load.
        stack.flink.faults().slow_start(&green, 600_000);
    }
    match &slow {
        Slow::Savepoint(ms) => stack
            .flink
            .faults()
            .delay_savepoints(&DeploymentRef::new(NAMESPACE, "orders-blue"), *ms),
        Slow::Request(m) => stack.server.faults().delay(m.clone(), SLOW),
    }
    stack
        .patch_spec(
            "orders",
            json!({"template": {"spec": {"image": "example.com/orders:v2"}}}),
        )
        .await?;
    stack.wait_phase("orders", phase, WAIT).await?;
    stack.crash_controller().await;
    stack.server.faults().clear();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let restarted = std::time::Instant::now();
    stack.start_controller();
    let expected = if abort { Color::Blue } else { Color::Green };
    let done = stack
        .wait_for("orders", WAIT, "the handover to end", |f| {
            f.status.as_ref().is_some_and(|s| {
                s.transition.is_none() && s.active_color == Some(expected) && s.history.len() == 2
            })
        })
        .await?;
    let status = done.status.expect("status");
    assert_eq!(
        status.history[0].outcome,
        if abort {
            bluegreen_controller::resource::Outcome::Aborted
        } else {
            bluegreen_controller::resource::Outcome::Promoted
        }
    );
    assert_eq!(status.epoch, 1);
    let report = stack.report("orders").await?;
    println!("crash in {phase:?}: {report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    record(&Trial {
        area: "Controller crashes, one per phase".into(),
        fault: format!("killed in {phase:?}, the next action in flight"),
        runs: 1,
        outcome: format!(
            "a new controller resumed from the status: {}",
            if abort {
                "the abort went on"
            } else {
                "promoted"
            }
        ),
        duplicates: Some(report.total.duplicates),
        losses: Some(report.total.losses),
        figures: format!(
            "over {:.1} s after the restart; {} records checked",
            restarted.elapsed().as_secs_f64(),
            report.expected
        ),
        test: format!("restarts::crash_in({phase:?})"),
    })?;
    stack.shutdown().await;
    Ok(())
}

fn request(verb: Verb, resource: &str) -> Slow {
    Slow::Request(RequestMatch::verb(verb).resource(resource))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_snapshotting_resumes() -> anyhow::Result<()> {
    crash_in(Phase::Snapshotting, Slow::Savepoint(40_000), false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_deploying_the_incoming_job_resumes() -> anyhow::Result<()> {
    crash_in(
        Phase::Deploying,
        request(Verb::Patch, "flinkdeployments"),
        false,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_confirming_w_resumes() -> anyhow::Result<()> {
    crash_in(
        Phase::ConfirmingToggle,
        request(Verb::Update, "configmaps"),
        false,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_w_is_set_resumes() -> anyhow::Result<()> {
    crash_in(Phase::ToggleSet, request(Verb::Update, "configmaps"), false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_promotion_resumes() -> anyhow::Result<()> {
    crash_in(
        Phase::ClearToTeardown,
        request(Verb::Update, "configmaps"),
        false,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_tearing_down_resumes_forward() -> anyhow::Result<()> {
    crash_in(
        Phase::TearingDown,
        request(Verb::Delete, "flinkdeployments"),
        false,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_aborting_resumes_the_abort() -> anyhow::Result<()> {
    crash_in(
        Phase::Aborting,
        request(Verb::Delete, "flinkdeployments"),
        true,
    )
    .await
}
