//! A simulated job alone: exactly once end to end, and what a failure does with each sink mode.

mod flink_support;

use bluegreen_local_flink::ledger::{Expectation, SinkMode};
use bluegreen_local_flink::{DEFAULT_START_MS, JobFailure, JobState, SimClock};
use flink_support::{
    WAIT, deployment, dref, env, env_with, job_state, lifecycle, patch_spec, start, wait_status,
};
use serde_json::json;

const CONF: &[(&str, &str)] = &[
    ("bluegreen.sim.splits", "4"),
    ("bluegreen.sim.records-per-second", "20"),
    ("bluegreen.sim.out-of-orderness-ms", "500"),
    ("bluegreen.sim.late-fraction", "0.02"),
    ("bluegreen.sim.late-max-ms", "3000"),
    ("execution.checkpointing.interval", "10s"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_alone_emits_every_record_exactly_once() {
    let env = env(SinkMode::Transactional).await;
    start(&env, &deployment("orders", 2, CONF)).await;
    env.flink
        .advance(600_000, 1000, WAIT)
        .await
        .expect("ten minutes pass");

    // Stop with a savepoint: the transactional sink commits everything the job emitted.
    patch_spec(
        &env.client,
        "orders",
        json!({"job": {"state": "suspended"}}),
    )
    .await;
    let s = wait_status(&env.client, "orders", |s| lifecycle(s) == "SUSPENDED").await;
    assert!(
        s["jobStatus"]["upgradeSavepointPath"]
            .as_str()
            .is_some_and(|p| p.starts_with("file:///bluegreen-local/savepoints/"))
    );
    let job = env.flink.job(&dref("orders")).expect("job");
    assert_eq!(job.view().state, JobState::Finished);

    let horizon = job.view().job_watermark;
    let end = env.flink.clock().now_ms();
    let report = env
        .flink
        .ledger()
        .report(&Expectation::new(job.settings.source.clone(), horizon).arrived_by(end));
    assert!(report.is_exactly_once(), "{report}");
    assert!(report.expected > 40_000, "{report}");
    assert_eq!(report.pending, 0);
}

/// Runs a job, fails it between two checkpoints, lets it restart from the last one, and returns
/// the ledger report plus the number of records the failed attempt processed after that
/// checkpoint.
async fn fail_and_restart(sink: SinkMode) -> (bluegreen_local_flink::ledger::LedgerReport, u64) {
    let env = env(sink).await;
    start(&env, &deployment("orders", 3, CONF)).await;
    let d = dref("orders");
    env.flink
        .advance(95_000, 1000, WAIT)
        .await
        .expect("time passes");
    let job = env.flink.job(&d).expect("job");
    let before = job.view();
    let checkpoint = before
        .latest_checkpoint
        .clone()
        .expect("a checkpoint was taken");
    let since_checkpoint: u64 = before
        .positions
        .iter()
        .zip(&checkpoint.positions)
        .map(|(now, then)| now - then)
        .sum();
    assert!(since_checkpoint > 0);

    env.flink.faults().fail_job_now(&d, JobFailure::Restart);
    env.flink.settle(WAIT).await.expect("settles");
    wait_status(&env.client, "orders", |s| job_state(s) == "RESTARTING").await;
    env.flink
        .advance(200_000, 1000, WAIT)
        .await
        .expect("time passes");
    let view = job.view();
    assert_eq!(view.state, JobState::Running);
    assert_eq!(view.attempt, 1);
    assert_eq!(
        view.restored.as_ref().map(|r| r.0.path.clone()),
        Some(checkpoint.path.clone())
    );

    patch_spec(
        &env.client,
        "orders",
        json!({"job": {"state": "suspended"}}),
    )
    .await;
    wait_status(&env.client, "orders", |s| lifecycle(s) == "SUSPENDED").await;
    let horizon = job.view().job_watermark;
    let report = env.flink.ledger().report(
        &Expectation::new(job.settings.source.clone(), horizon)
            .arrived_by(env.flink.clock().now_ms()),
    );
    (report, since_checkpoint)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_from_a_checkpoint_is_exactly_once_with_the_transactional_sink() {
    let (report, _) = fail_and_restart(SinkMode::Transactional).await;
    assert!(report.is_exactly_once(), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_from_a_checkpoint_duplicates_with_the_at_least_once_sink() {
    let (report, since_checkpoint) = fail_and_restart(SinkMode::AtLeastOnce).await;
    // The oracle can fail: exactly the records replayed since the checkpoint are duplicates.
    assert!(!report.is_exactly_once(), "{report}");
    assert_eq!(report.total.duplicates, since_checkpoint, "{report}");
    assert_eq!(report.total.losses, 0, "{report}");
    assert_eq!(
        report.count_mismatches, 0,
        "replayed records carry the restored counts: {report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scaled_clock_runs_a_job_beside_real_time_exactly_once() {
    let clock = SimClock::scaled(DEFAULT_START_MS, 1000.0);
    let env = env_with(SinkMode::Transactional, clock).await;
    flink_support::create(&env.client, &deployment("orders", 2, CONF)).await;
    wait_status(&env.client, "orders", |s| lifecycle(s) == "STABLE").await;
    // About 0.2 s of wall time is over three minutes of simulated time.
    let job = env
        .flink
        .wait_for_job(&dref("orders"), WAIT, |v| {
            v.processed_to > DEFAULT_START_MS + 200_000
        })
        .await
        .expect("the job follows the scaled clock");
    patch_spec(
        &env.client,
        "orders",
        json!({"job": {"state": "suspended"}}),
    )
    .await;
    wait_status(&env.client, "orders", |s| lifecycle(s) == "SUSPENDED").await;
    let stopped_at = job.view().end_time_ms.expect("ended");
    let report = env.flink.ledger().report(
        &Expectation::new(job.settings.source.clone(), job.view().job_watermark)
            .arrived_by(stopped_at),
    );
    assert!(report.is_exactly_once(), "{report}");
    assert!(report.expected > 10_000, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intermediate_savepoint_commits_nothing_and_stop_with_savepoint_commits_everything() {
    let env = env(SinkMode::Transactional).await;
    // No periodic checkpoints: only savepoints could commit.
    start(&env, &deployment("orders", 2, &[])).await;
    env.flink
        .advance(20_000, 1000, WAIT)
        .await
        .expect("time passes");
    let job = env.flink.job(&dref("orders")).expect("job");
    let pending = env.flink.ledger().pending();
    assert!(pending > 0);
    let request = job.trigger_savepoint(false).expect("triggered");
    assert!(matches!(
        job.await_savepoint(&request, WAIT).await,
        Ok(bluegreen_local_flink::SavepointOp::Completed { .. })
    ));
    assert!(
        env.flink.ledger().emissions().is_empty(),
        "an intermediate savepoint commits nothing"
    );
    let request = job.trigger_savepoint(true).expect("triggered");
    job.await_savepoint(&request, WAIT)
        .await
        .expect("stop-with-savepoint ends");
    assert_eq!(
        job.await_terminal(WAIT).await.expect("stops"),
        JobState::Finished
    );
    assert_eq!(env.flink.ledger().pending(), 0);
    assert!(env.flink.ledger().emissions().len() as u64 >= pending);
}
