//! Leader election on a `coordination.k8s.io/v1` Lease (kube-lease-manager): only the leader
//! reconciles; a standby takes over when the lease expires.

use std::sync::Arc;

use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;

use crate::context::Context;
use crate::error::{Error, Result};

/// Where the lease lives and who we are.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This replica's identity (pod name).
    pub identity: String,
    /// Lease duration in seconds.
    pub duration_seconds: u64,
    /// Renewal grace in seconds.
    pub grace_seconds: u64,
}

/// Runs the controller whenever this replica leads, until `stop` turns true. Losing the lease
/// stops the controller gracefully; regaining it starts a fresh one (which resumes every
/// handover from its status).
pub async fn run_when_leader(
    ctx: Arc<Context>,
    namespace: Option<String>,
    lease: LeaseConfig,
    mut stop: watch::Receiver<bool>,
) -> Result<()> {
    let manager = LeaseManagerBuilder::new(ctx.client.clone(), &lease.name)
        .with_namespace(&lease.namespace)
        .with_identity(&lease.identity)
        .with_duration(lease.duration_seconds)
        .with_grace(lease.grace_seconds)
        .build()
        .await
        .map_err(|e| Error::Lease(e.to_string()))?;
    let (mut leading, lease_task) = manager.watch().await;
    let gauge = ctx
        .metrics
        .leader
        .with_label_values(&[lease.identity.as_str()]);
    loop {
        if *stop.borrow() {
            break;
        }
        if *leading.borrow_and_update() {
            gauge.set(1);
            tracing::info!(identity = %lease.identity, "leading: starting the controller");
            let (lost_tx, mut lost_rx) = watch::channel(false);
            let shutdown = async move {
                let _ = lost_rx.wait_for(|lost| *lost).await;
            };
            let controller = tokio::spawn(crate::reconcile::run(
                ctx.clone(),
                namespace.clone(),
                shutdown,
            ));
            tokio::select! {
                _ = leading.wait_for(|l| !*l) => tracing::warn!(identity = %lease.identity, "lost the lease: stopping the controller"),
                _ = stop.wait_for(|s| *s) => {}
            }
            let _ = lost_tx.send(true);
            let _ = controller.await;
            gauge.set(0);
        } else {
            tokio::select! {
                changed = leading.changed() => if changed.is_err() { break },
                _ = stop.wait_for(|s| *s) => {}
            }
        }
    }
    drop(leading);
    // Dropping the receiver makes the lease task release the lease.
    match lease_task.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Error::Lease(e.to_string())),
        Err(e) => Err(Error::Lease(e.to_string())),
    }
}
