//! Flink faults during a handover that `failures.rs` does not cover, one table row each: a REST
//! endpoint that hangs, both jobs failing at once, a JobManager restart of either job (job id
//! kept, REST gone for a while). Each ends in a stated outcome with the ledger's figures and
//! records a `Trial` for `docs/reliability.md` (area "Flink faults").

use std::time::{Duration, Instant};

use bluegreen_controller::resource::Phase;
use bluegreen_e2e::{WAIT, running_blue, set_image};
use bluegreen_examples::reliability::{Trial, record};
use bluegreen_examples::{LocalStack, NAMESPACE};
use bluegreen_local_flink::{DeploymentRef, JobFailure, RestFault};
use bluegreen_protocol::Color;
use serde_json::json;

/// How long (wall clock) a REST endpoint stays broken: 3 s, a minute of simulated time.
const BROKEN: Duration = Duration::from_secs(3);

fn d(color: Color) -> DeploymentRef {
    DeploymentRef::new(NAMESPACE, format!("orders-{}", color.suffix()))
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Blue's REST endpoint accepts connections and never answers while the handover begins.
    RestHangs,
    /// Both jobs fail (and restart from their checkpoints) at the same moment after W is set.
    BothFail,
    /// The JobManager of `color` restarts after W is set: its REST endpoint is gone for a while
    /// and its job restarts from its latest checkpoint under the same job id.
    JobManagerRestart(Color),
}

impl Fault {
    fn describe(self) -> String {
        match self {
            Self::RestHangs => {
                "outgoing job's REST endpoint hangs (never answers) for 3 s as the handover starts"
                    .into()
            }
            Self::BothFail => {
                "outgoing and incoming jobs both fail (restart) at once after W".into()
            }
            Self::JobManagerRestart(c) => format!(
                "JobManager restart of the {} job after W: job id kept, REST gone for 3 s",
                if c == Color::Blue {
                    "outgoing"
                } else {
                    "incoming"
                }
            ),
        }
    }
}

/// Runs one handover under `fault`; asserts it completes on green with every record exactly
/// once by its owner, and records the trial.
async fn handover_under(fault: Fault, test: &str) -> anyhow::Result<()> {
    let stack = running_blue().await?;
    let (started, sim_started) = (Instant::now(), stack.flink.clock().now_ms());
    let mut figures = Vec::new();
    match fault {
        Fault::RestHangs => figures.push(hang_blue_rest(&stack).await?),
        Fault::BothFail | Fault::JobManagerRestart(_) => fail_after_w(&stack, fault).await?,
    }
    let done = stack.wait_steady("orders", Color::Green, WAIT).await?;
    let (wall, sim) = (
        started.elapsed(),
        stack.flink.clock().now_ms() - sim_started,
    );
    let history = done.status.clone().unwrap_or_default().history;
    assert_eq!(
        history.first().map(|h| h.outcome),
        Some(bluegreen_controller::resource::Outcome::Promoted)
    );
    let report = stack.report("orders").await?;
    println!("{report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    figures.push(format!(
        "converged in {:.1} s wall, {:.0} s simulated; {} records checked",
        wall.as_secs_f64(),
        Duration::from_millis(u64::try_from(sim).unwrap_or(0)).as_secs_f64(),
        report.expected
    ));
    record(&Trial {
        area: "Flink faults".into(),
        fault: fault.describe(),
        runs: 1,
        outcome: match fault {
            Fault::RestHangs => "waited in Snapshotting, then completed once REST answered",
            Fault::BothFail => "both restarted from their checkpoints; completed",
            Fault::JobManagerRestart(_) => "waited for REST, then completed",
        }
        .into(),
        duplicates: Some(report.total.duplicates),
        losses: Some(report.total.losses),
        figures: figures.join("; "),
        test: format!("flink_faults::{test}"),
    })?;
    stack.shutdown().await;
    Ok(())
}

/// Hangs blue's REST endpoint as the handover starts; asserts nothing moves and every
/// reconcile still ends within the controller's timeouts; heals it. Returns the figures.
async fn hang_blue_rest(stack: &LocalStack) -> anyhow::Result<String> {
    let faults = stack.flink.faults();
    faults.rest(&d(Color::Blue), RestFault::Hang);
    let metrics = &stack.ctx.metrics;
    let (count, sum) = (
        metrics.reconcile_duration.get_sample_count(),
        metrics.reconcile_duration.get_sample_sum(),
    );
    set_image(stack, "v2").await?;
    tokio::time::sleep(BROKEN).await;
    let now = stack.fbgds().get("orders").await?;
    let status = now.status.clone().unwrap_or_default();
    assert_eq!(status.active_color, Some(Color::Blue), "nothing moved");
    assert!(
        status
            .transition
            .as_ref()
            .is_none_or(|t| t.phase == Phase::Snapshotting),
        "no savepoint, no green: {status:?}"
    );
    // The controller's REST timeout (2 s) ends each call: reconciles keep finishing
    // instead of hanging until the 20 s reconcile bound (on a loaded machine one reconcile
    // with several timed-out calls can outlast the 3 s window: wait for one, up to 15 s).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while metrics.reconcile_duration.get_sample_count() == count
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let finished = metrics.reconcile_duration.get_sample_count() - count;
    let mean = (metrics.reconcile_duration.get_sample_sum() - sum)
        / f64::from(u32::try_from(finished.max(1)).unwrap_or(u32::MAX));
    assert!(
        finished >= 1 && mean < 10.0,
        "{finished} reconciles finished during the hang, {mean:.1} s each on average"
    );
    faults.rest(&d(Color::Blue), RestFault::Healthy);
    Ok(format!(
        "{finished} reconciles ended during the hang, mean {mean:.1} s (REST timeout 2 s)"
    ))
}

/// Lets the handover reach W, then fails both jobs or restarts one JobManager (REST broken for
/// [`BROKEN`], the job restarting under the same id), and heals.
async fn fail_after_w(stack: &LocalStack, fault: Fault) -> anyhow::Result<()> {
    let faults = stack.flink.faults();
    // Green needs a few checkpoints before promotion: the fault lands while W is set.
    stack
        .patch_spec(
            "orders",
            json!({"coordination": {"health": {"minCheckpoints": 4}}}),
        )
        .await?;
    set_image(stack, "v2").await?;
    stack.wait_phase("orders", Phase::ToggleSet, WAIT).await?;
    let hit: &[Color] = match fault {
        Fault::JobManagerRestart(c) => &[c][..],
        _ => &[Color::Blue, Color::Green],
    };
    let ids: Vec<String> = hit
        .iter()
        .map(|c| stack.flink.job(&d(*c)).expect("running job").job_id.clone())
        .collect();
    for c in hit {
        if matches!(fault, Fault::JobManagerRestart(_)) {
            faults.rest(&d(*c), RestFault::ServerError);
        }
        faults.fail_job_now(&d(*c), JobFailure::Restart);
    }
    if matches!(fault, Fault::JobManagerRestart(_)) {
        tokio::time::sleep(BROKEN).await;
        for (c, id) in hit.iter().zip(&ids) {
            let job = stack.flink.job(&d(*c)).expect("job");
            assert_eq!(&job.job_id, id, "a JobManager restart keeps the job id");
            assert!(job.view().attempt >= 1, "the job restarted");
            faults.rest(&d(*c), RestFault::Healthy);
        }
    }

    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_rest_endpoint_pauses_the_handover_within_the_timeouts() -> anyhow::Result<()> {
    handover_under(
        Fault::RestHangs,
        "a_hanging_rest_endpoint_pauses_the_handover_within_the_timeouts",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_jobs_failing_at_once_after_w_lose_nothing() -> anyhow::Result<()> {
    handover_under(
        Fault::BothFail,
        "both_jobs_failing_at_once_after_w_lose_nothing",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobmanager_restart_of_the_outgoing_job_after_w_is_waited_out() -> anyhow::Result<()> {
    handover_under(
        Fault::JobManagerRestart(Color::Blue),
        "a_jobmanager_restart_of_the_outgoing_job_after_w_is_waited_out",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobmanager_restart_of_the_incoming_job_after_w_is_waited_out() -> anyhow::Result<()> {
    handover_under(
        Fault::JobManagerRestart(Color::Green),
        "a_jobmanager_restart_of_the_incoming_job_after_w_is_waited_out",
    )
    .await
}
