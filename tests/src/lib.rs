//! End-to-end tests live in `tests/tests/`; this library holds what several of them share: the
//! `orders` deployment running blue on the simulated stack, an image change that starts a
//! handover, controller replicas electing a leader on a Lease, the real-Flink bed (`real`), the
//! simulated two-cluster bed (`two_clusters`) and, from the examples crate, a real Kafka broker
//! with its producer and `read_committed` oracle (`kafka`).
#![forbid(unsafe_code)]

pub mod real;
pub mod two_clusters;

pub use bluegreen_examples::kafka;

use std::sync::Arc;
use std::time::Duration;

use bluegreen_controller::context::Context;
use bluegreen_controller::leader::{LeaseConfig, run_when_leader};
use bluegreen_examples::{LocalStack, NAMESPACE, StackOptions, orders_job};
use bluegreen_protocol::Color;
use serde_json::json;
use tokio::sync::watch;

/// How long the helpers wait for a deployment to settle.
pub const WAIT: Duration = Duration::from_mins(1);

/// A simulated stack with its controller, running the deployment `orders` (v1, parallelism 2)
/// steady on blue; a handover gives up after 4 s of an incoming job not running its `minReady`
/// (1 s) and retries a savepoint after 100 ms.
///
/// # Errors
/// When the stack does not start or `orders` is not steady on blue within [`WAIT`].
pub async fn running_blue() -> anyhow::Result<LocalStack> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    let mut spec = orders_job("v1", 2);
    spec.coordination.abort_grace_period = "4s".into();
    spec.coordination.savepoint.backoff = "100ms".into();
    stack.create("orders", spec).await?;
    stack.wait_steady("orders", Color::Blue, WAIT).await?;
    Ok(stack)
}

/// Sets the image of `orders`' template to `example.com/orders:{version}`: a handover.
///
/// # Errors
/// When the API server refuses the patch.
pub async fn set_image(stack: &LocalStack, version: &str) -> anyhow::Result<()> {
    stack
        .patch_spec(
            "orders",
            json!({"template": {"spec": {"image": format!("example.com/orders:{version}")}}}),
        )
        .await
}

/// A controller replica running only while it holds the Lease `bluegreen-controller` (2 s
/// lease, 1 s grace) in [`NAMESPACE`].
pub struct Replica {
    /// What its reconciles share (its metrics among them).
    pub ctx: Arc<Context>,
    /// Its identity in the Lease.
    pub identity: String,
    /// Asks it to stop (and release the Lease).
    pub stop: watch::Sender<bool>,
    /// Its leader election and controller.
    pub task: tokio::task::JoinHandle<()>,
}

impl Replica {
    /// Starts a replica on `ctx` under `identity`.
    #[must_use]
    pub fn start(ctx: Arc<Context>, identity: &str) -> Self {
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
        Self {
            ctx,
            identity: identity.to_owned(),
            stop,
            task,
        }
    }

    /// Whether it says (in its leader metric) that it leads.
    #[must_use]
    pub fn leads(&self) -> bool {
        self.ctx
            .metrics
            .leader
            .with_label_values(&[self.identity.as_str()])
            .get()
            == 1
    }

    /// Asks it to stop and waits for that, up to 10 s.
    pub async fn shut_down(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

/// Waits (polling, up to [`WAIT`]) until one of `replicas` leads; its index.
///
/// # Errors
/// When none leads within [`WAIT`].
pub async fn wait_for_leader(replicas: &[&Replica]) -> anyhow::Result<usize> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(i) = replicas.iter().position(|r| r.leads()) {
            return Ok(i);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "nobody became leader"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
