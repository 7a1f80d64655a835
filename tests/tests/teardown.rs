//! Teardown: the outgoing job is stopped with a savepoint (which commits its transactional
//! sink) before its FlinkDeployment is deleted, so none of its records `t <= W` are lost.

use std::time::Duration;

use bluegreen_examples::{LocalStack, StackOptions, orders_job};
use bluegreen_protocol::Color;
use serde_json::json;

const WAIT: Duration = Duration::from_mins(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outgoing_job_commits_its_output_before_it_is_deleted() -> anyhow::Result<()> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    let mut spec = orders_job("v1", 2);
    // A checkpoint interval far longer than the handover, no deletion delay, no late records:
    // blue's output since it started is uncommitted when blue is torn down, and only its
    // teardown can commit it.
    spec.template
        .spec
        .flink_configuration
        .insert("execution.checkpointing.interval".into(), "3min".into());
    spec.template
        .spec
        .flink_configuration
        .insert("bluegreen.sim.late-fraction".into(), "0".into());
    spec.coordination.deployment_deletion_delay = "0s".into();
    spec.coordination.health.min_checkpoints = 0;
    stack.create("orders", spec).await?;
    stack.wait_steady("orders", Color::Blue, WAIT).await?;
    stack
        .patch_spec(
            "orders",
            json!({"template": {"spec": {"image": "example.com/orders:v2"}}}),
        )
        .await?;
    let done = stack.wait_steady("orders", Color::Green, WAIT).await?;
    let history = &done.status.as_ref().expect("status").history[0];
    assert_eq!(history.outcome, "Promoted");
    let report = stack.report("orders").await?;
    println!("{report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    stack.shutdown().await;
    Ok(())
}
