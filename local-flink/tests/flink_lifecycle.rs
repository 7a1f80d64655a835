//! The local operator moves FlinkDeployment status like the Apache operator, and faults do
//! what they say.

mod flink_support;

use bluegreen_local_apiserver::{RequestMatch, Verb};
use bluegreen_local_flink::ledger::{Expectation, SinkMode};
use bluegreen_local_flink::{JobFailure, JobState, SavepointOp};
use flink_support::{
    WAIT, create, delete, deployment, dref, env, job_state, lifecycle, patch_spec, start, status,
    wait_status,
};
use serde_json::json;

const CONF: &[(&str, &str)] = &[
    ("bluegreen.sim.startup-delay-ms", "2000"),
    ("execution.checkpointing.interval", "5s"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_moves_from_deployed_to_stable_through_the_startup_delay() {
    let env = env(SinkMode::Transactional).await;
    create(&env.client, &deployment("orders", 2, CONF)).await;
    let s = wait_status(&env.client, "orders", |s| job_state(s) == "RECONCILING").await;
    assert_eq!(lifecycle(&s), "DEPLOYED");
    assert_eq!(s["jobManagerDeploymentStatus"], "DEPLOYING");
    assert_eq!(s["reconciliationStatus"]["state"], "DEPLOYED");
    assert!(
        s["reconciliationStatus"]["lastReconciledSpec"]
            .as_str()
            .is_some_and(|j| j.contains("\"parallelism\":2"))
    );

    env.flink.clock().advance(1000);
    let s = wait_status(&env.client, "orders", |s| {
        s["jobManagerDeploymentStatus"] == "DEPLOYED_NOT_READY"
    })
    .await;
    assert_eq!(job_state(&s), "CREATED");
    let job_id = s["jobStatus"]["jobId"]
        .as_str()
        .expect("job id known once submitted")
        .to_owned();

    env.flink.clock().advance(1000);
    let s = wait_status(&env.client, "orders", |s| lifecycle(s) == "STABLE").await;
    assert_eq!(s["jobManagerDeploymentStatus"], "READY");
    assert_eq!(job_state(&s), "RUNNING");
    assert_eq!(s["jobStatus"]["jobId"], job_id.as_str());
    assert!(s["jobStatus"]["startTime"].as_str().is_some());
    assert_eq!(env.flink.job(&dref("orders")).expect("job").job_id, job_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspend_and_resume_go_through_a_savepoint_and_upgrades_follow_the_upgrade_mode() {
    let env = env(SinkMode::Transactional).await;
    let d = dref("orders");
    start(&env, &deployment("orders", 2, CONF)).await;
    env.flink
        .advance(30_000, 1000, WAIT)
        .await
        .expect("time passes");
    let first = env.flink.job(&d).expect("job");

    patch_spec(
        &env.client,
        "orders",
        json!({"job": {"state": "suspended"}}),
    )
    .await;
    let s = wait_status(&env.client, "orders", |s| lifecycle(s) == "SUSPENDED").await;
    assert_eq!(job_state(&s), "SUSPENDED");
    let path = s["jobStatus"]["upgradeSavepointPath"]
        .as_str()
        .expect("savepoint path")
        .to_owned();
    assert_eq!(
        s["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"],
        path.as_str()
    );
    assert_eq!(first.view().state, JobState::Finished);

    patch_spec(&env.client, "orders", json!({"job": {"state": "running"}})).await;
    wait_status(&env.client, "orders", |s| job_state(s) == "RECONCILING").await;
    env.flink.clock().advance(5000);
    wait_status(&env.client, "orders", |s| lifecycle(s) == "STABLE").await;
    let resumed = env.flink.job(&d).expect("job");
    assert_ne!(resumed.job_id, first.job_id);
    assert_eq!(
        resumed.view().restored.map(|r| r.0.path.clone()),
        Some(path)
    );

    // last-state: a spec change resumes from the latest checkpoint.
    env.flink
        .advance(12_000, 1000, WAIT)
        .await
        .expect("time passes");
    let checkpoint = resumed
        .view()
        .latest_checkpoint
        .expect("checkpointed")
        .path
        .clone();
    patch_spec(
        &env.client,
        "orders",
        json!({"job": {"upgradeMode": "last-state", "parallelism": 3}}),
    )
    .await;
    wait_status(&env.client, "orders", |s| job_state(s) == "RECONCILING").await;
    env.flink.clock().advance(5000);
    let upgraded = env
        .flink
        .wait_for_job(&d, WAIT, |v| {
            v.state == JobState::Running && v.restored.is_some()
        })
        .await
        .expect("upgraded job");
    assert_eq!(upgraded.settings.parallelism, 3);
    assert_eq!(
        upgraded.view().restored.map(|r| r.0.path.clone()),
        Some(checkpoint)
    );
    assert_eq!(resumed.view().state, JobState::Canceled);

    // Every record up to the last stop is still emitted exactly once.
    patch_spec(
        &env.client,
        "orders",
        json!({"job": {"state": "suspended", "upgradeMode": "savepoint"}}),
    )
    .await;
    wait_status(&env.client, "orders", |s| lifecycle(s) == "SUSPENDED").await;
    let horizon = upgraded.view().job_watermark;
    let report = env.flink.ledger().report(
        &Expectation::new(upgraded.settings.source.clone(), horizon)
            .arrived_by(env.flink.clock().now_ms()),
    );
    assert!(report.is_exactly_once(), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_write_the_api_server_refuses_is_written_again_five_seconds_later() {
    let env = env(SinkMode::Transactional).await;
    start(&env, &deployment("orders", 1, CONF)).await;
    let job = env.flink.job(&dref("orders")).expect("job");
    // Every status write refused (more than the write's own retries), while the job stops.
    let writes = RequestMatch::verb(Verb::Patch)
        .resource("flinkdeployments")
        .subresource("status");
    env.server.faults().fail_next(writes, 1000, 409);
    job.stop_with_savepoint(None).expect("stop requested");
    env.flink
        .advance(1000, 100, WAIT)
        .await
        .expect("time passes");
    assert_eq!(
        job.await_terminal(WAIT).await.expect("ends"),
        JobState::Finished
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(job_state(&status(&env.client, "orders").await), "RUNNING");
    // The API server accepts writes again: the operator retries 5 s (simulated) after the
    // failure, as the Apache operator retries a failed reconcile, even with nothing new to see.
    env.server.faults().clear();
    env.flink.clock().advance(5_000);
    wait_status(&env.client, "orders", |s| job_state(s) == "FINISHED").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_deployment_cancels_its_job_and_discards_uncommitted_output() {
    let env = env(SinkMode::Transactional).await;
    start(&env, &deployment("orders", 1, CONF)).await;
    env.flink
        .advance(7000, 1000, WAIT)
        .await
        .expect("time passes");
    let job = env.flink.job(&dref("orders")).expect("job");
    assert!(env.flink.ledger().pending() > 0);
    delete(&env.client, "orders").await;
    assert_eq!(
        job.await_terminal(WAIT).await.expect("ends"),
        JobState::Canceled
    );
    assert_eq!(env.flink.ledger().pending(), 0);
    assert!(env.flink.ledger().discarded() > 0);
    assert!(env.flink.job(&dref("orders")).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_failure_and_a_crash_loop_end_in_failed() {
    let env = env(SinkMode::Transactional).await;
    start(&env, &deployment("orders", 1, CONF)).await;
    env.flink
        .faults()
        .fail_job_now(&dref("orders"), JobFailure::Permanent);
    let s = wait_status(&env.client, "orders", |s| lifecycle(s) == "FAILED").await;
    assert_eq!(job_state(&s), "FAILED");
    assert!(
        s["error"]
            .as_str()
            .is_some_and(|e| e.contains("injected failure")),
        "{s}"
    );

    let mut conf = CONF.to_vec();
    conf.push(("restart-strategy.fixed-delay.attempts", "2"));
    conf.push(("restart-strategy.fixed-delay.delay", "1 s"));
    env.flink.faults().crash_loop(&dref("looping"), true);
    create(&env.client, &deployment("looping", 1, &conf)).await;
    wait_status(&env.client, "looping", |s| job_state(s) == "RECONCILING").await;
    for _ in 0..10 {
        env.flink.clock().advance(1000);
        env.flink.settle(WAIT).await.expect("settles");
    }
    let s = wait_status(&env.client, "looping", |s| lifecycle(s) == "FAILED").await;
    assert!(
        s["error"]
            .as_str()
            .is_some_and(|e| e.contains("crash loop")),
        "{s}"
    );
    assert_eq!(
        env.flink.job(&dref("looping")).expect("job").view().attempt,
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_start_delays_readiness() {
    let env = env(SinkMode::Transactional).await;
    env.flink.faults().slow_start(&dref("orders"), 10_000);
    create(&env.client, &deployment("orders", 1, CONF)).await;
    wait_status(&env.client, "orders", |s| job_state(s) == "RECONCILING").await;
    env.flink.clock().advance(3000);
    wait_status(&env.client, "orders", |s| {
        s["jobManagerDeploymentStatus"] == "DEPLOYED_NOT_READY"
    })
    .await;
    env.flink.clock().advance(8000);
    env.flink.settle(WAIT).await.expect("settles");
    assert!(
        env.flink.job(&dref("orders")).is_none(),
        "not ready 11 s after the deployment"
    );
    env.flink.clock().advance(1000);
    wait_status(&env.client, "orders", |s| lifecycle(s) == "STABLE").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_and_delayed_savepoints_and_a_retried_suspend() {
    let env = env(SinkMode::Transactional).await;
    let d = dref("orders");
    start(&env, &deployment("orders", 1, CONF)).await;
    let job = env.flink.job(&d).expect("job");

    env.flink.faults().delay_savepoints(&d, 4000);
    let request = job.trigger_savepoint(false).expect("triggered");
    env.flink.settle(WAIT).await.expect("settles");
    assert_eq!(
        job.view().savepoints.get(&request),
        Some(&SavepointOp::InProgress)
    );
    env.flink
        .advance(4000, 1000, WAIT)
        .await
        .expect("time passes");
    assert!(matches!(
        job.await_savepoint(&request, WAIT).await,
        Ok(SavepointOp::Completed { .. })
    ));
    env.flink.faults().delay_savepoints(&d, 0);

    // The suspend's stop-with-savepoint fails once: the job keeps running, the status says why,
    // and the operator retries.
    env.flink.faults().fail_next_savepoints(&d, 1);
    patch_spec(
        &env.client,
        "orders",
        json!({"job": {"state": "suspended"}}),
    )
    .await;
    // Until the retry (1 simulated second later) the status shows both.
    wait_status(&env.client, "orders", |s| {
        s["error"].as_str().is_some_and(|e| e.contains("savepoint"))
            && (lifecycle(s), job_state(s)) == ("STABLE", "RUNNING")
    })
    .await;
    env.flink.clock().advance(1000);
    wait_status(&env.client, "orders", |s| lifecycle(s) == "SUSPENDED").await;
    assert!(status(&env.client, "orders").await["error"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_split_delays_its_records_without_losing_them() {
    let env = env(SinkMode::AtLeastOnce).await;
    let d = dref("orders");
    start(&env, &deployment("orders", 2, CONF)).await;
    let job = env.flink.job(&d).expect("job");
    env.flink.faults().stop_split(2);
    env.flink
        .advance(20_000, 1000, WAIT)
        .await
        .expect("time passes");
    let stalled = job.view().positions[2];
    env.flink
        .advance(20_000, 1000, WAIT)
        .await
        .expect("time passes");
    assert_eq!(
        job.view().positions[2],
        stalled,
        "split 2 delivers nothing while stopped"
    );
    env.flink.faults().resume_split(2);
    env.flink
        .advance(20_000, 1000, WAIT)
        .await
        .expect("time passes");
    let report = env.flink.ledger().report(
        &Expectation::new(job.settings.source.clone(), job.view().job_watermark)
            .arrived_by(env.flink.clock().now_ms() - 5000)
            .without_count_check(),
    );
    assert!(report.is_exactly_once(), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_simulation_setting_is_reported_in_the_status() {
    let env = env(SinkMode::Transactional).await;
    create(
        &env.client,
        &deployment("orders", 1, &[("bluegreen.gate.color", "green")]),
    )
    .await;
    let s = wait_status(&env.client, "orders", |s| s["error"].is_string()).await;
    assert!(
        s["error"]
            .as_str()
            .is_some_and(|e| e.contains("bluegreen.gate.color")),
        "{s}"
    );
    assert!(env.flink.job(&dref("orders")).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_created_suspended_starts_from_its_initial_savepoint_when_resumed() {
    let env = env(SinkMode::Transactional).await;
    start(&env, &deployment("source", 1, CONF)).await;
    env.flink
        .advance(10_000, 1000, WAIT)
        .await
        .expect("time passes");
    let source = env.flink.job(&dref("source")).expect("job");
    let request = source.trigger_savepoint(false).expect("triggered");
    let Ok(SavepointOp::Completed { location }) = source.await_savepoint(&request, WAIT).await
    else {
        panic!("savepoint failed");
    };

    let mut spec = deployment("copy", 2, CONF);
    spec["spec"]["job"]["state"] = json!("suspended");
    spec["spec"]["job"]["initialSavepointPath"] = json!(location);
    create(&env.client, &spec).await;
    let s = wait_status(&env.client, "copy", |s| lifecycle(s) == "SUSPENDED").await;
    assert!(s["jobStatus"]["jobId"].is_null());
    patch_spec(&env.client, "copy", json!({"job": {"state": "running"}})).await;
    wait_status(&env.client, "copy", |s| job_state(s) == "RECONCILING").await;
    env.flink.clock().advance(5000);
    wait_status(&env.client, "copy", |s| lifecycle(s) == "STABLE").await;
    let copy = env.flink.job(&dref("copy")).expect("job");
    assert_eq!(
        copy.view().restored.map(|r| r.0.path.clone()),
        Some(location)
    );
}

/// Issue 14, the stall: a savepoint pending when its job fails over is declined at once, as
/// Flink aborts pending checkpoints on a failover, whether the job restarts or fails for good.
/// It used to stay IN_PROGRESS for ever (the attempt that held it was dropped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_savepoint_pending_at_a_failover_fails_at_once() {
    let env = env(SinkMode::Transactional).await;
    let d = dref("orders");
    start(&env, &deployment("orders", 1, CONF)).await;
    for how in [JobFailure::Restart, JobFailure::Permanent] {
        let job = env.flink.job(&d).expect("job");
        env.flink.faults().delay_savepoints(&d, 4000);
        let request = job.trigger_savepoint(false).expect("triggered");
        env.flink.settle(WAIT).await.expect("settles");
        assert_eq!(
            job.view().savepoints.get(&request),
            Some(&SavepointOp::InProgress),
            "{how:?}: the job has taken the savepoint in hand"
        );
        env.flink.faults().fail_job_now(&d, how);
        let op = job
            .await_savepoint(&request, std::time::Duration::from_secs(5))
            .await;
        assert!(
            matches!(&op, Ok(SavepointOp::Failed { cause }) if cause.contains("CheckpointException")),
            "{how:?}: {op:?}"
        );
        env.flink.faults().clear(&d);
        // Restarted (1 s delay) or failed: either way the savepoint never completes later.
        env.flink
            .advance(5000, 1000, WAIT)
            .await
            .expect("time passes");
        assert!(matches!(
            job.view().savepoints.get(&request),
            Some(SavepointOp::Failed { .. })
        ));
    }
}

/// Issue 14, the stall, as the operator saw it: a savepoint upgrade of a job that fails right
/// after the trigger ends in a failed stop-with-savepoint within moments, and the operator
/// keeps writing status (it used to wait `SAVEPOINT_WAIT`, 1 min of wall clock, writing
/// nothing for that deployment).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_savepoint_upgrade_of_a_job_failing_after_the_trigger_does_not_stall_the_operator() {
    let env = env(SinkMode::Transactional).await;
    let d = dref("orders");
    let mut conf = CONF.to_vec();
    conf.push(("restart-strategy.fixed-delay.attempts", "100"));
    conf.push(("restart-strategy.fixed-delay.delay", "1 s"));
    start(&env, &deployment("orders", 1, &conf)).await;
    let job = env.flink.job(&d).expect("job");
    env.flink.faults().delay_savepoints(&d, 4000);
    patch_spec(
        &env.client,
        "orders",
        json!({"job": {"state": "suspended"}}),
    )
    .await;
    wait_status(&env.client, "orders", |s| lifecycle(s) == "UPGRADING").await;
    env.flink
        .wait_for_job(&d, WAIT, |v| {
            v.savepoints
                .values()
                .any(|op| *op == SavepointOp::InProgress)
        })
        .await
        .expect("the stop-with-savepoint is pending");
    let failed_at = std::time::Instant::now();
    env.flink.faults().fail_job_now(&d, JobFailure::Restart);
    let s = wait_status(&env.client, "orders", |s| {
        s["error"]
            .as_str()
            .is_some_and(|e| e.contains("stop-with-savepoint failed"))
    })
    .await;
    assert!(
        failed_at.elapsed() < std::time::Duration::from_secs(5),
        "the operator wrote the failed upgrade after {:?}: {s:#}",
        failed_at.elapsed()
    );
    assert!(
        job.view()
            .savepoints
            .values()
            .all(|op| matches!(op, SavepointOp::Failed { .. })),
        "the pending savepoint was declined"
    );
    // The job restarts; the operator's retry suspends it with a savepoint.
    env.flink.faults().delay_savepoints(&d, 0);
    for _ in 0..5 {
        env.flink.clock().advance(1000);
        env.flink.settle(WAIT).await.expect("settles");
    }
    wait_status(&env.client, "orders", |s| lifecycle(s) == "SUSPENDED").await;
}
