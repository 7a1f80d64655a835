//! Handovers with faults, by hand-written ConfigMaps: an aborted transition, the incoming job
//! failing after W is set (repaired forward), and a gate hold that times out.

mod flink_support;

use bluegreen_local_flink::ledger::{Expectation, SinkMode};
use bluegreen_local_flink::{JobFailure, JobState};
use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle, WatermarkStage};
use flink_support::handover::{CM, conf, run_blue, set_w, start_green, wait_gates};
use flink_support::{
    WAIT, delete, deployment, dref, env, lifecycle, patch_spec, start, wait_status, write_configmap,
};
use serde_json::json;

/// Stops a deployment with a savepoint (committing its output).
async fn stop(env: &flink_support::Env, name: &str) {
    patch_spec(&env.client, name, json!({"job": {"state": "suspended"}})).await;
    wait_status(&env.client, name, |s| lifecycle(s) == "SUSPENDED").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_transition_leaves_every_record_to_blue() {
    let env = env(SinkMode::Transactional).await;
    let blue = run_blue(&env).await;
    let green = start_green(&env, &blue).await;
    let w = blue.view().job_watermark + 5_000;
    write_configmap(
        &env.client,
        CM,
        &CoordinationState::new(1, Stage::Transitioning, Color::Green, Toggle::Proposed(w)),
    )
    .await;
    wait_gates(
        &env,
        &dref("orders-blue"),
        1,
        WatermarkStage::WaitingForWatermark,
        Some(w),
    )
    .await;
    env.flink
        .advance(20_000, 1000, WAIT)
        .await
        .expect("time passes");
    assert!(
        blue.view().held_since.is_some(),
        "blue holds above the proposed W"
    );

    // Abort before W is set: FAILING, delete green, RUNNING(BLUE).
    write_configmap(
        &env.client,
        CM,
        &CoordinationState::new(1, Stage::Failing, Color::Green, Toggle::Proposed(w)),
    )
    .await;
    wait_gates(
        &env,
        &dref("orders-green"),
        1,
        WatermarkStage::WaitingForWatermark,
        Some(w),
    )
    .await;
    env.flink
        .advance(5_000, 1000, WAIT)
        .await
        .expect("time passes");
    delete(&env.client, "orders-green").await;
    write_configmap(
        &env.client,
        CM,
        &CoordinationState::new(1, Stage::Running, Color::Blue, Toggle::NotSet),
    )
    .await;
    env.flink
        .advance(60_000, 1000, WAIT)
        .await
        .expect("blue runs on");
    stop(&env, "orders-blue").await;

    let report = env.flink.ledger().report(
        &Expectation::new(blue.settings.source.clone(), blue.view().job_watermark)
            .arrived_by(env.flink.clock().now_ms())
            .owned_by(Color::Blue),
    );
    assert!(report.is_exactly_once_by_owner(), "{report}");
    assert_eq!(
        report.color(Some(Color::Green)).emissions,
        0,
        "green emitted nothing: {report}"
    );
    assert!(green.view().gates.iter().all(|g| g.snapshot().passed == 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn green_failing_after_w_is_set_restarts_from_its_own_checkpoint_exactly_once() {
    let env = env(SinkMode::Transactional).await;
    let blue = run_blue(&env).await;
    let green = start_green(&env, &blue).await;
    let w = set_w(&env, &blue).await;
    env.flink
        .advance(25_000, 1000, WAIT)
        .await
        .expect("time passes");
    let checkpoint = green
        .view()
        .latest_checkpoint
        .expect("green checkpointed after W");
    assert!(
        checkpoint.gate_max_passed.is_some_and(|m| m > w),
        "the gates' max passed is checkpointed"
    );

    env.flink
        .faults()
        .fail_job_now(&dref("orders-green"), JobFailure::Restart);
    env.flink
        .advance(30_000, 1000, WAIT)
        .await
        .expect("green restarts");
    let view = green.view();
    assert_eq!((view.state, view.attempt), (JobState::Running, 1));
    assert_eq!(
        view.restored.map(|r| r.0.path.clone()),
        Some(checkpoint.path.clone())
    );
    let restored_max = view
        .gates
        .iter()
        .filter_map(|g| g.snapshot().max_passed_event_time_ms)
        .min();
    assert!(restored_max.is_some_and(|m| m >= checkpoint.gate_max_passed.unwrap_or(i64::MAX)));

    // Finish the handover forward: blue reads until every t <= W arrived, then teardown.
    env.flink
        .advance(10_000, 1000, WAIT)
        .await
        .expect("time passes");
    write_configmap(
        &env.client,
        CM,
        &CoordinationState::new(1, Stage::ClearToTeardown, Color::Green, Toggle::Set(w)),
    )
    .await;
    stop(&env, "orders-blue").await;
    delete(&env.client, "orders-blue").await;
    write_configmap(
        &env.client,
        CM,
        &CoordinationState::new(1, Stage::Running, Color::Green, Toggle::NotSet),
    )
    .await;
    env.flink
        .advance(30_000, 1000, WAIT)
        .await
        .expect("green runs");
    stop(&env, "orders-green").await;

    let report = env.flink.ledger().report(
        &Expectation::new(green.settings.source.clone(), green.view().job_watermark)
            .arrived_by(env.flink.clock().now_ms())
            .owned_by(Color::Blue)
            .handover(w, Color::Green),
    );
    assert!(report.is_exactly_once_by_owner(), "{report}");
    assert!(
        env.flink.ledger().discarded() > 0,
        "the failed attempt's open transaction was aborted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_that_outlasts_the_hold_timeout_fails_the_job_which_restarts_and_holds_again() {
    let env = env(SinkMode::Transactional).await;
    write_configmap(
        &env.client,
        CM,
        &CoordinationState::new(1, Stage::Transitioning, Color::Blue, Toggle::NotSet),
    )
    .await;
    let mut c = conf(Color::Blue);
    c.retain(|(k, _)| *k != "bluegreen.sim.idle");
    c.push(("bluegreen.sim.gate.hold-timeout-ms", "20000"));
    c.push(("restart-strategy.fixed-delay.delay", "1 s"));
    // BLUE is the incoming color here: it holds everything.
    start(&env, &deployment("orders-blue", 2, &c)).await;
    let d = dref("orders-blue");
    env.flink
        .advance(15_000, 1000, WAIT)
        .await
        .expect("time passes");
    let job = env.flink.job(&d).expect("job");
    assert_eq!(job.view().attempt, 0);
    assert!(job.view().held_since.is_some());
    env.flink
        .advance(10_000, 1000, WAIT)
        .await
        .expect("time passes");
    let view = job.view();
    assert!(
        view.attempt >= 1,
        "the hold timed out and the job restarted"
    );
    assert!(
        view.failure.as_deref().is_some_and(|f| f.contains("HOLD")),
        "{:?}",
        view.failure
    );
    assert!(
        env.flink.ledger().emissions().is_empty(),
        "a holding job emits nothing"
    );
}
