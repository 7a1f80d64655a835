//! Whole upgrades driven by the controller on the local stack, judged by the ledger.

use std::time::Duration;

use bluegreen_examples::{LocalStack, StackOptions, orders_job};
use bluegreen_protocol::Color;
use serde_json::json;

const STEADY: Duration = Duration::from_mins(1);

async fn upgrade(stack: &LocalStack, version: &str, to: Color) -> anyhow::Result<()> {
    stack
        .patch_spec(
            "orders",
            json!({"template": {"spec": {"image": format!("example.com/orders:{version}")}}}),
        )
        .await?;
    stack.wait_steady("orders", to, STEADY).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_deployment_then_an_upgrade_emits_every_record_exactly_once() -> anyhow::Result<()> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    stack.create("orders", orders_job("v1", 2)).await?;
    stack.wait_steady("orders", Color::Blue, STEADY).await?;
    upgrade(&stack, "v2", Color::Green).await?;
    let status = stack.fbgds().get("orders").await?.status.expect("status");
    assert_eq!(
        status.history[0].outcome,
        bluegreen_controller::resource::Outcome::Promoted
    );
    assert_eq!(status.epoch, 1);
    let report = stack.report("orders").await?;
    assert!(report.is_exactly_once_by_owner(), "{report}");
    assert!(report.color(Some(Color::Blue)).emissions > 500, "{report}");
    assert!(report.color(Some(Color::Green)).emissions > 500, "{report}");
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_consecutive_upgrades_emit_every_record_exactly_once() -> anyhow::Result<()> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    stack.create("orders", orders_job("v0", 2)).await?;
    stack.wait_steady("orders", Color::Blue, STEADY).await?;
    let mut color = Color::Blue;
    for i in 1..=10 {
        color = color.other();
        let parallelism = if i % 3 == 0 { 4 } else { 2 };
        stack
            .patch_spec(
                "orders",
                json!({"template": {"spec": {"image": format!("example.com/orders:v{i}"), "job": {"parallelism": parallelism}}}}),
            )
            .await?;
        stack.wait_steady("orders", color, STEADY).await?;
    }
    let status = stack.fbgds().get("orders").await?.status.expect("status");
    assert_eq!(status.epoch, 10);
    assert!(
        status
            .history
            .iter()
            .take(10)
            .all(|h| h.outcome == bluegreen_controller::resource::Outcome::Promoted)
    );
    let report = stack.report("orders").await?;
    println!("ten upgrades: {report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    for c in Color::ALL {
        assert!(report.color(Some(*c)).emissions > 1000, "{c}: {report}");
    }
    stack.shutdown().await;
    Ok(())
}
