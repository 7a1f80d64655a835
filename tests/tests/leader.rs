//! Two controller replicas with leader election on a Lease: only the leader acts; the other takes
//! over when the leader dies and its lease expires, and finishes the work.

use std::sync::Arc;
use std::time::Duration;

use bluegreen_controller::context::Context;
use bluegreen_e2e::{Replica, WAIT, set_image, wait_for_leader};
use bluegreen_examples::{LocalStack, StackOptions, orders_job};
use bluegreen_protocol::Color;

fn replica(stack: &LocalStack, identity: &str) -> Replica {
    let ctx = Arc::new(Context::new(
        stack.client.clone(),
        &stack.flink.rest_url_template(),
        Duration::from_secs(2),
        identity,
    ));
    Replica::start(ctx, identity)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_reconciles_and_the_standby_takes_over() -> anyhow::Result<()> {
    let stack = LocalStack::start(StackOptions::default()).await?;
    let a = replica(&stack, "replica-a");
    let b = replica(&stack, "replica-b");
    let (leader, standby) = if wait_for_leader(&[&a, &b]).await? == 0 {
        (a, b)
    } else {
        (b, a)
    };
    stack.create("orders", orders_job("v1", 2)).await?;
    stack.wait_steady("orders", Color::Blue, WAIT).await?;
    assert!(leader.ctx.metrics.reconciles.get() > 0);
    assert_eq!(
        standby.ctx.metrics.reconciles.get(),
        0,
        "the standby must not reconcile"
    );
    assert!(!standby.leads());

    // The leader dies without releasing its lease: the standby takes over once it expires.
    leader.task.abort();
    let _ = leader.task.await;
    drop(leader.stop);
    set_image(&stack, "v2").await?;
    stack.wait_steady("orders", Color::Green, WAIT).await?;
    assert!(standby.leads());
    assert!(standby.ctx.metrics.reconciles.get() > 0);
    let report = stack.report("orders").await?;
    assert!(report.is_exactly_once_by_owner(), "{report}");
    standby.shut_down().await;
    stack.shutdown().await;
    Ok(())
}
