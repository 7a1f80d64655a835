//! Whole upgrades driven by the controller on the local stack, judged by the ledger.

use std::time::Duration;

use bluegreen_examples::{LocalStack, StackOptions, orders_job};
use bluegreen_protocol::Color;
use serde_json::json;

const STEADY: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_deployment_then_an_upgrade_emits_every_record_exactly_once() -> anyhow::Result<()> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    stack.create("orders", orders_job("v1", 2)).await?;
    stack.wait_steady("orders", Color::Blue, STEADY).await?;
    stack
        .patch_spec(
            "orders",
            json!({"template": {"spec": {"image": "example.com/orders:v2"}}}),
        )
        .await?;
    let done = stack.wait_steady("orders", Color::Green, STEADY).await?;
    let status = done.status.expect("status");
    assert_eq!(status.history[0].outcome, "Promoted");
    let report = stack.report("orders").await?;
    println!("{report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    assert!(report.expected > 1000, "{report}");
    stack.shutdown().await;
    Ok(())
}
