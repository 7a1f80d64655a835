//! Two controller replicas with leader election on a Lease: only the leader acts; the other takes
//! over when the leader dies and its lease expires, and finishes the work.

use std::sync::Arc;
use std::time::Duration;

use bluegreen_controller::context::Context;
use bluegreen_controller::leader::{LeaseConfig, run_when_leader};
use bluegreen_examples::{LocalStack, NAMESPACE, StackOptions, orders_job};
use bluegreen_protocol::Color;
use serde_json::json;
use tokio::sync::watch;

const WAIT: Duration = Duration::from_mins(1);

struct Replica {
    ctx: Arc<Context>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

fn replica(stack: &LocalStack, identity: &str) -> Replica {
    let ctx = Arc::new(Context::new(
        stack.client.clone(),
        &stack.flink.rest_url_template(),
        Duration::from_secs(2),
        identity,
    ));
    let (stop, stopped) = watch::channel(false);
    let lease = LeaseConfig {
        namespace: NAMESPACE.into(),
        name: "bluegreen-controller".into(),
        identity: identity.into(),
        duration_seconds: 2,
        grace_seconds: 1,
    };
    let task = tokio::spawn({
        let ctx = Arc::clone(&ctx);
        async move {
            let _ = run_when_leader(ctx, Some(NAMESPACE.into()), lease, stopped).await;
        }
    });
    Replica { ctx, stop, task }
}

fn leads(r: &Replica, identity: &str) -> bool {
    r.ctx.metrics.leader.with_label_values(&[identity]).get() == 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_reconciles_and_the_standby_takes_over() -> anyhow::Result<()> {
    let stack = LocalStack::start(StackOptions::default()).await?;
    let a = replica(&stack, "replica-a");
    let b = replica(&stack, "replica-b");
    let deadline = tokio::time::Instant::now() + WAIT;
    while !(leads(&a, "replica-a") || leads(&b, "replica-b")) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "nobody became leader"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (leader, leader_id, standby, standby_id) = if leads(&a, "replica-a") {
        (a, "replica-a", b, "replica-b")
    } else {
        (b, "replica-b", a, "replica-a")
    };
    stack.create("orders", orders_job("v1", 2)).await?;
    stack.wait_steady("orders", Color::Blue, WAIT).await?;
    assert!(leader.ctx.metrics.reconciles.get() > 0);
    assert_eq!(
        standby.ctx.metrics.reconciles.get(),
        0,
        "the standby must not reconcile"
    );
    assert!(!leads(&standby, standby_id));

    // The leader dies without releasing its lease: the standby takes over once it expires.
    leader.task.abort();
    let _ = leader.task.await;
    drop(leader.stop);
    let _ = leader_id;
    stack
        .patch_spec(
            "orders",
            json!({"template": {"spec": {"image": "example.com/orders:v2"}}}),
        )
        .await?;
    stack.wait_steady("orders", Color::Green, WAIT).await?;
    assert!(leads(&standby, standby_id));
    assert!(standby.ctx.metrics.reconciles.get() > 0);
    let report = stack.report("orders").await?;
    assert!(report.is_exactly_once_by_owner(), "{report}");
    let _ = standby.stop.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(10), standby.task).await;
    stack.shutdown().await;
    Ok(())
}
