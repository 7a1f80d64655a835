//! The kube-runtime wiring: apply (observe → `plan` → execute, with the remote gates'
//! credentials removed before and rotated after), cleanup (observe → `plan_cleanup` → execute →
//! the remote gates' credentials removed), the error policy and the `Controller` itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Action as Requeue, Controller};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::watcher;

use crate::context::{Context, flink_deployment_resource};
use crate::error::{Error, Result};
use crate::execute::execute;
use crate::handover::{plan, plan_cleanup};
use crate::names::FINALIZER;
use crate::observe::{observe, observe_deletion};
use crate::remote_gate;
use crate::resource::FlinkBlueGreenDeployment;

/// The longest one reconcile may take.
const RECONCILE_TIMEOUT: Duration = Duration::from_secs(20);

/// Reconciles one resource, wrapped in the cleanup finalizer.
pub async fn reconcile(fbgd: Arc<FlinkBlueGreenDeployment>, ctx: Arc<Context>) -> Result<Requeue> {
    let namespace = fbgd
        .namespace()
        .ok_or(Error::MissingMetadata("namespace"))?;
    let api: Api<FlinkBlueGreenDeployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let started = Instant::now();
    ctx.metrics.reconciles.inc();
    let finalized = finalizer(&api, FINALIZER, fbgd, |event| async {
        match event {
            Finalizer::Apply(fbgd) => Box::pin(apply(&fbgd, &ctx)).await,
            Finalizer::Cleanup(fbgd) => Box::pin(cleanup(&fbgd, &ctx)).await,
        }
    });
    // A hung API or REST call must not stall this resource forever: kube-runtime runs one
    // reconcile per object at a time.
    let result = match Box::pin(tokio::time::timeout(RECONCILE_TIMEOUT, finalized)).await {
        Err(_) => Err(Error::ReconcileTimeout(RECONCILE_TIMEOUT)),
        Ok(result) => result.map_err(|e| match e {
            kube::runtime::finalizer::Error::ApplyFailed(e)
            | kube::runtime::finalizer::Error::CleanupFailed(e) => e,
            kube::runtime::finalizer::Error::AddFinalizer(e)
            | kube::runtime::finalizer::Error::RemoveFinalizer(e) => Error::Kube(e),
            other => Error::Finalizer(other.to_string()),
        }),
    };
    ctx.metrics
        .reconcile_duration
        .observe(started.elapsed().as_secs_f64());
    result
}

#[tracing::instrument(skip_all, fields(deployment = %fbgd.name_any(), namespace = fbgd.namespace().unwrap_or_default()))]
async fn apply(fbgd: &FlinkBlueGreenDeployment, ctx: &Context) -> Result<Requeue> {
    let (observed, reaches) = observe(ctx, fbgd).await?;
    let plan = plan(&observed);
    remote_gate::forget_gone(ctx, fbgd, &reaches, &plan.status.clusters).await?;
    execute(ctx, fbgd, &observed.valid, &reaches, &plan).await?;
    remote_gate::refresh(ctx, fbgd, &reaches, &observed, &plan.status.clusters).await?;
    Ok(Requeue::requeue(plan.requeue_after))
}

/// Runs the deletion policy (observe → `plan_cleanup` → execute). Idempotent, and correct when
/// `apply` never ran. Under `savepointThenDelete` it fails with `FinalSavepointPending` until the
/// final savepoint has ended: kube's finalizer helper keeps the finalizer only when cleanup
/// returns an error.
#[tracing::instrument(skip_all, fields(deployment = %fbgd.name_any(), namespace = fbgd.namespace().unwrap_or_default()))]
async fn cleanup(fbgd: &FlinkBlueGreenDeployment, ctx: &Context) -> Result<Requeue> {
    let (observed, reaches) = observe_deletion(ctx, fbgd).await?;
    let plan = plan_cleanup(&observed);
    execute(ctx, fbgd, &observed.valid, &reaches, &plan).await?;
    remote_gate::remove_all(ctx, fbgd, &reaches).await?;
    ctx.metrics
        .forget(&fbgd.namespace().unwrap_or_default(), &fbgd.name_any());
    Ok(Requeue::await_change())
}

/// Requeues failed reconciles with a short backoff and counts them by kind.
#[allow(
    clippy::needless_pass_by_value,
    reason = "the signature kube-runtime's Controller::run expects"
)]
pub fn error_policy(
    fbgd: Arc<FlinkBlueGreenDeployment>,
    error: &Error,
    ctx: Arc<Context>,
) -> Requeue {
    ctx.metrics
        .errors
        .with_label_values(&[error.metric_label()])
        .inc();
    match error {
        // Optimistic concurrency: the resource changed since it was observed (a spec edit racing
        // a status write). Observe again at once.
        Error::Kube(kube::Error::Api(status)) if status.is_conflict() => {
            tracing::debug!(deployment = %fbgd.name_any(), "conflict; observing again");
            Requeue::requeue(Duration::from_millis(100))
        }
        Error::FinalSavepointPending(_) => {
            tracing::info!(deployment = %fbgd.name_any(), %error);
            Requeue::requeue(Duration::from_millis(500))
        }
        _ => {
            tracing::warn!(deployment = %fbgd.name_any(), %error, "reconcile failed");
            Requeue::requeue(Duration::from_secs(2))
        }
    }
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<Context>,
    namespace: Option<String>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let client = ctx.client.clone();
    let (fbgds, configmaps, children) = match namespace.as_deref() {
        Some(ns) => (
            Api::<FlinkBlueGreenDeployment>::namespaced(client.clone(), ns),
            Api::<ConfigMap>::namespaced(client.clone(), ns),
            Api::<DynamicObject>::namespaced_with(client.clone(), ns, &flink_deployment_resource()),
        ),
        None => (
            Api::all(client.clone()),
            Api::all(client.clone()),
            Api::all_with(client.clone(), &flink_deployment_resource()),
        ),
    };
    Controller::new(fbgds, watcher::Config::default())
        .owns(
            configmaps,
            watcher::Config::default().labels(crate::child::LABEL_DEPLOYMENT),
        )
        .owns_with(
            children,
            flink_deployment_resource(),
            watcher::Config::default().labels(crate::child::LABEL_DEPLOYMENT),
        )
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => tracing::debug!(deployment = %object.name, "reconciled"),
                Err(e) => tracing::debug!(error = %e, "reconcile error"),
            }
        })
        .await;
}
