//! Two simulated jobs gated by hand-written coordination ConfigMaps (no controller): the
//! handover sequence of docs/protocol.md, judged by the ledger.

mod flink_support;

use std::sync::Arc;

use bluegreen_local_flink::ledger::{Expectation, LedgerReport, SinkMode};
use bluegreen_local_flink::{JobState, SimJob};
use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle, WatermarkStage, configmap_name};
use flink_support::handover::{
    BOUND_MS, CM, LATE_MAX_MS, run_blue, set_w, start_green, wait_gates,
};
use flink_support::{WAIT, delete, dref, env, lifecycle, patch_spec, wait_status, write_configmap};
use serde_json::json;

struct Handover {
    report: LedgerReport,
    w: i64,
    green: Arc<SimJob>,
    blue: Arc<SimJob>,
}

/// Runs blue, hands over to green at W, and judges the run. `keep_outgoing_reading` is how
/// long (simulated ms) blue keeps reading after both watermarks passed W before it is stopped;
/// `gap_before_running` how long the ConfigMap stays CLEAR_TO_TEARDOWN after that.
async fn hand_over(keep_outgoing_reading: i64, gap_before_running: i64) -> Handover {
    let env = env(SinkMode::Transactional).await;
    assert_eq!(configmap_name("orders"), CM);
    let blue = run_blue(&env).await;
    let green = start_green(&env, &blue).await;
    let w = set_w(&env, &blue).await;

    // Both jobs past W; blue keeps reading for a while, then stops with a savepoint (which
    // commits its transactions) and is deleted.
    while blue.view().job_watermark <= w || green.view().job_watermark <= w {
        env.flink
            .advance(1000, 1000, WAIT)
            .await
            .expect("time passes");
    }
    env.flink
        .advance(keep_outgoing_reading, 500, WAIT)
        .await
        .expect("time passes");
    let teardown = CoordinationState::new(1, Stage::ClearToTeardown, Color::Green, Toggle::Set(w));
    write_configmap(&env.client, CM, &teardown).await;
    patch_spec(
        &env.client,
        "orders-blue",
        json!({"job": {"state": "suspended"}}),
    )
    .await;
    wait_status(&env.client, "orders-blue", |s| lifecycle(s) == "SUSPENDED").await;
    assert_eq!(blue.view().state, JobState::Finished);
    delete(&env.client, "orders-blue").await;
    env.flink
        .advance(gap_before_running, 500, WAIT)
        .await
        .expect("time passes");
    // Step 6: the W of the handover stays in force as the floor.
    let running = CoordinationState {
        floor: Some(w),
        ..CoordinationState::new(1, Stage::Running, Color::Green, Toggle::NotSet)
    };
    write_configmap(&env.client, CM, &running).await;
    wait_gates(&env, &dref("orders-green"), 1, WatermarkStage::NotSet, None).await;

    // Green alone for two minutes, then stopped with a savepoint.
    env.flink
        .advance(120_000, 1000, WAIT)
        .await
        .expect("green runs");
    patch_spec(
        &env.client,
        "orders-green",
        json!({"job": {"state": "suspended"}}),
    )
    .await;
    wait_status(&env.client, "orders-green", |s| lifecycle(s) == "SUSPENDED").await;
    assert_eq!(
        green.await_terminal(WAIT).await.expect("stops"),
        JobState::Finished
    );

    let expectation = Expectation::new(green.settings.source.clone(), green.view().job_watermark)
        .arrived_by(env.flink.clock().now_ms())
        .owned_by(Color::Blue)
        .handover(w, Color::Green);
    let report = env.flink.ledger().report(&expectation);
    Handover {
        report,
        w,
        green,
        blue,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blue_hands_over_to_green_at_w_exactly_once_across_an_idle_split_with_late_records() {
    // Blue keeps reading until every record with t <= W has arrived (W + bound + max lateness).
    let h = hand_over(BOUND_MS + LATE_MAX_MS + 1000, 0).await;
    let r = &h.report;
    assert!(r.is_exactly_once_by_owner(), "{r}");
    assert_eq!(r.pending, 0, "{r}");
    assert!(
        r.color(Some(Color::Blue)).emissions > 0 && r.color(Some(Color::Green)).emissions > 0,
        "{r}"
    );
    // Green restored blue's state at parallelism 4 (no count mismatch above) and dropped what
    // blue owned; blue dropped what green owns.
    let green_dropped: u64 = h
        .green
        .view()
        .gates
        .iter()
        .map(|g| g.snapshot().dropped)
        .sum();
    assert!(green_dropped > 0);
    assert_eq!(
        (h.blue.settings.parallelism, h.green.settings.parallelism),
        (1, 4)
    );
    // Split 1 was idle across W (380 s to 500 s after the source start).
    let start = h.green.settings.source.start_ms;
    assert!(
        (start + 390_000..start + 490_000).contains(&h.w),
        "W = start + {}",
        h.w - start
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_records_at_or_below_w_arriving_after_blue_stopped_are_lost_while_green_drops_them() {
    // Blue is stopped as soon as both watermarks passed W, and the ConfigMap stays
    // CLEAR_TO_TEARDOWN for 5 s: late records with t <= W arriving then reach only green, which
    // drops them. The ledger sees every one of them.
    let h = hand_over(0, 5000).await;
    let r = &h.report;
    assert_eq!(r.total.duplicates, 0, "{r}");
    assert_eq!(r.total.wrong_color, 0, "{r}");
    assert!(
        r.total.losses > 0,
        "the oracle must see the lost late records: {r}"
    );
    assert_eq!(
        r.color(Some(Color::Blue)).losses,
        r.total.losses,
        "only blue-owned (t <= W) records are lost: {r}"
    );
    assert!(!r.is_exactly_once());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_records_at_or_below_w_arriving_after_green_is_running_are_dropped_by_the_floor() {
    // Blue stopped as soon as both watermarks passed W, RUNNING(GREEN, floor = W) at once: a late
    // record with t <= W reaches only green, which drops it as late (the floor) and counts it.
    // Never emitted twice, never by the wrong color: a late drop, like data later than the
    // allowed lateness; the ledger counts it apart from losses.
    let h = hand_over(0, 0).await;
    let r = &h.report;
    assert_eq!(r.total.duplicates, 0, "{r}");
    assert_eq!(r.total.wrong_color, 0, "{r}");
    assert_eq!(
        r.total.losses, 0,
        "every missing record is a late drop: {r}"
    );
    assert!(
        r.total.late_drops > 0,
        "the oracle must see the late records: {r}"
    );
    assert_eq!(
        r.color(Some(Color::Green)).late_drops,
        r.total.late_drops,
        "green dropped them: {r}"
    );
    assert!(
        r.is_exactly_once_within_lateness() && !r.is_exactly_once(),
        "{r}"
    );
    let late: u64 = [&h.green, &h.blue]
        .iter()
        .flat_map(|j| j.view().gates)
        .map(|g| g.snapshot().dropped_late)
        .sum();
    assert_eq!(
        late, r.late_drop_events,
        "the ledger sees exactly the late drops the gates count: {r}"
    );
}
