//! Deleting a FlinkBlueGreenDeployment runs its deletion policy through the finalizer.

use std::time::Duration;

use bluegreen_controller::context::flink_deployment_resource;
use bluegreen_controller::resource::DeletionPolicy;
use bluegreen_examples::{LocalStack, NAMESPACE, StackOptions, orders_job};
use bluegreen_protocol::Color;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};

const WAIT: Duration = Duration::from_mins(1);

async fn deployed(policy: DeletionPolicy) -> anyhow::Result<LocalStack> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    let mut spec = orders_job("v1", 2);
    spec.coordination.on_delete = policy;
    stack.create("orders", spec).await?;
    stack.wait_steady("orders", Color::Blue, WAIT).await?;
    Ok(stack)
}

async fn wait_gone(stack: &LocalStack) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + WAIT;
    while stack.fbgds().get_opt("orders").await?.is_some() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the resource was not deleted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

fn children(stack: &LocalStack) -> Api<DynamicObject> {
    Api::namespaced_with(
        stack.client.clone(),
        NAMESPACE,
        &flink_deployment_resource(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_removes_the_children_and_the_configmap() -> anyhow::Result<()> {
    let stack = deployed(DeletionPolicy::Delete).await?;
    stack
        .fbgds()
        .delete("orders", &DeleteParams::default())
        .await?;
    wait_gone(&stack).await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    while children(&stack).get_opt("orders-blue").await?.is_some() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the blue child survived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(stack.client.clone(), NAMESPACE);
    assert!(configmaps.get_opt("orders-bluegreen").await?.is_none());
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphan_leaves_the_job_running_without_an_owner() -> anyhow::Result<()> {
    let stack = deployed(DeletionPolicy::Orphan).await?;
    stack
        .fbgds()
        .delete("orders", &DeleteParams::default())
        .await?;
    wait_gone(&stack).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let blue = children(&stack).get("orders-blue").await?;
    assert!(
        blue.metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
    assert!(blue.metadata.deletion_timestamp.is_none());
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn savepoint_then_delete_records_the_final_savepoint() -> anyhow::Result<()> {
    let stack = deployed(DeletionPolicy::SavepointThenDelete).await?;
    stack
        .fbgds()
        .delete("orders", &DeleteParams::default())
        .await?;
    wait_gone(&stack).await?;
    let events: Api<Event> = Api::namespaced(stack.client.clone(), NAMESPACE);
    let final_savepoint = events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .find(|e| e.reason.as_deref() == Some("FinalSavepoint"))
        .expect("a FinalSavepoint event");
    let note = final_savepoint.note.unwrap_or_default();
    assert!(
        note.contains("final savepoint of the blue job at "),
        "{note}"
    );
    let path = note.rsplit(' ').next().unwrap_or_default();
    assert!(
        stack.flink.snapshot(path).is_ok(),
        "the savepoint {path} exists"
    );
    stack.shutdown().await;
    Ok(())
}
