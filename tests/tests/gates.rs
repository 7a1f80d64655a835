//! Gates are found by their `bluegreenGateAppliedState` metric wherever they are chained, and the
//! handover reads their own watermarks.

use std::time::Duration;

use bluegreen_examples::{LocalStack, NAMESPACE, StackOptions, orders_job};
use bluegreen_local_flink::DeploymentRef;
use bluegreen_protocol::Color;
use serde_json::json;

const WAIT: Duration = Duration::from_mins(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_chained_into_the_source_vertex_hands_over_exactly_once() -> anyhow::Result<()> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    // The source vertex has no input watermark: a controller that read the head of the gate's
    // chain waited in ToggleSet forever.
    for color in ["blue", "green"] {
        stack.flink.faults().chain_gate_into_source(
            &DeploymentRef::new(NAMESPACE, format!("orders-{color}")),
            true,
        );
    }
    stack.start_controller();
    stack.create("orders", orders_job("v1", 2)).await?;
    stack.wait_steady("orders", Color::Blue, WAIT).await?;
    stack
        .patch_spec(
            "orders",
            json!({"template": {"spec": {"image": "example.com/orders:v2"}}}),
        )
        .await?;
    stack.wait_steady("orders", Color::Green, WAIT).await?;
    let report = stack.report("orders").await?;
    println!("{report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    stack.shutdown().await;
    Ok(())
}
