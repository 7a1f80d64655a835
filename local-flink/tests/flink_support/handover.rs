//! The handover phases of docs/protocol.md, written by hand (no controller): shared by the
//! handover scenario tests.

use std::sync::Arc;

use bluegreen_local_flink::{DeploymentRef, SavepointOp, SimJob};
use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle, WatermarkStage};
use serde_json::json;

use super::{Env, WAIT, deployment, dref, start, write_configmap};

pub const CM: &str = "orders-bluegreen";
/// Split 1 is idle from 380 s to 500 s after the source start: across W (about 425 s).
pub const IDLE: &str = "1:600000:120000:380000";
pub const LATE_MAX_MS: i64 = 3000;
pub const BOUND_MS: i64 = 500;

pub fn conf(color: Color) -> Vec<(&'static str, &'static str)> {
    vec![
        ("bluegreen.gate.color", color.as_str()),
        ("bluegreen.gate.configmap", CM),
        ("bluegreen.sim.splits", "4"),
        ("bluegreen.sim.records-per-second", "20"),
        ("bluegreen.sim.out-of-orderness-ms", "500"),
        ("bluegreen.sim.late-fraction", "0.05"),
        ("bluegreen.sim.late-max-ms", "3000"),
        ("bluegreen.sim.idle", IDLE),
        ("bluegreen.sim.idleness-timeout-ms", "10000"),
        ("execution.checkpointing.interval", "10s"),
    ]
}

/// Waits until every gate of `job` reports `epoch`, `stage` and `w`.
pub async fn wait_gates(
    env: &Env,
    d: &DeploymentRef,
    epoch: u64,
    stage: WatermarkStage,
    w: Option<i64>,
) -> Arc<SimJob> {
    env.flink
        .wait_for_job(d, WAIT, |v| {
            !v.gates.is_empty()
                && v.gates.iter().all(|g| {
                    let s = g.snapshot();
                    s.epoch() == Some(epoch)
                        && s.watermark_stage() == Some(stage)
                        && s.watermark_ms() == w
                })
        })
        .await
        .expect("gates apply the state")
}

/// Epoch 0: blue alone for five minutes.
pub async fn run_blue(env: &Env) -> Arc<SimJob> {
    let cm = |s: Stage| CoordinationState::new(0, s, Color::Blue, Toggle::NotSet);
    write_configmap(&env.client, CM, &CoordinationState::initial(Color::Blue, 0)).await;
    start(env, &deployment("orders-blue", 1, &conf(Color::Blue))).await;
    write_configmap(&env.client, CM, &cm(Stage::Running)).await;
    wait_gates(env, &dref("orders-blue"), 0, WatermarkStage::NotSet, None).await;
    env.flink
        .advance(300_000, 1000, WAIT)
        .await
        .expect("blue runs");
    env.flink.job(&dref("orders-blue")).expect("blue job")
}

/// Savepoints blue, starts epoch 1 (TRANSITIONING to GREEN, W not set) and creates green from
/// the savepoint at parallelism 4: blue passes everything, green holds everything.
pub async fn start_green(env: &Env, blue: &SimJob) -> Arc<SimJob> {
    let request = blue.trigger_savepoint(false).expect("savepoint triggered");
    let savepoint = match blue
        .await_savepoint(&request, WAIT)
        .await
        .expect("savepoint ends")
    {
        SavepointOp::Completed { location } => location,
        other => panic!("savepoint failed: {other:?}"),
    };
    let transitioning =
        CoordinationState::new(1, Stage::Transitioning, Color::Green, Toggle::NotSet);
    write_configmap(&env.client, CM, &transitioning).await;
    wait_gates(env, &dref("orders-blue"), 1, WatermarkStage::NotSet, None).await;
    let mut green_spec = deployment("orders-green", 4, &conf(Color::Green));
    green_spec["spec"]["job"]["initialSavepointPath"] = json!(savepoint);
    start(env, &green_spec).await;
    env.flink.settle(WAIT).await.expect("settled");
    let green = env.flink.job(&dref("orders-green")).expect("green job");
    assert!(
        green.view().held_since.is_some(),
        "green holds everything before W is set"
    );
    green
}

/// Proposes W above blue's progress, confirms it with blue's gate metrics, lets blue run up to
/// it (blue holds the first record above W) and sets it.
pub async fn set_w(env: &Env, blue: &SimJob) -> i64 {
    let (blue_d, green_d) = (dref("orders-blue"), dref("orders-green"));
    let w = blue.view().job_watermark + 5_000;
    let proposed =
        CoordinationState::new(1, Stage::Transitioning, Color::Green, Toggle::Proposed(w));
    write_configmap(&env.client, CM, &proposed).await;
    let confirmed = wait_gates(
        env,
        &blue_d,
        1,
        WatermarkStage::WaitingForWatermark,
        Some(w),
    )
    .await;
    let gates = confirmed.view().gates;
    let max_passed = gates
        .iter()
        .filter_map(|g| g.snapshot().max_passed_event_time_ms)
        .max();
    assert!(
        max_passed.is_some_and(|m| m <= w),
        "no blue gate passed above W: {max_passed:?}"
    );
    while blue.view().held_since.is_none() {
        env.flink
            .advance(500, 500, WAIT)
            .await
            .expect("time passes");
    }
    assert!(blue.view().job_watermark <= w);
    let set = CoordinationState::new(1, Stage::Transitioning, Color::Green, Toggle::Set(w));
    write_configmap(&env.client, CM, &set).await;
    wait_gates(env, &blue_d, 1, WatermarkStage::Set, Some(w)).await;
    wait_gates(env, &green_d, 1, WatermarkStage::Set, Some(w)).await;
    env.flink.settle(WAIT).await.expect("settled");
    w
}
