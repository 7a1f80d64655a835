//! Sidecar injection and gate RBAC on the local stack: the controller creates the gates' Role and
//! a RoleBinding per color before it applies a child, injects the `bluegreen-sidecar` into the
//! child's TaskManager pod template next to the user's containers, leaves it out when turned off,
//! deletes a color's RoleBinding with its child, and everything it created goes with the resource.

use std::sync::Arc;
use std::time::Duration;

use bluegreen_controller::context::flink_deployment_resource;
use bluegreen_controller::gate_rbac;
use bluegreen_controller::injection::{SIDECAR_CONTAINER, env};
use bluegreen_examples::{LocalStack, NAMESPACE, StackOptions, orders_job};
use bluegreen_gate::{ConfigMapSource, SharedState, StateOptions};
use bluegreen_local_apiserver::{AuthMode, LocalApiServer, Options};
use bluegreen_protocol::Color;
use k8s_openapi::api::core::v1::{ConfigMap, PodSpec, Secret};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;

const WAIT: Duration = Duration::from_mins(1);

/// The TaskManager pod spec of a child as stored in the API server.
async fn task_manager_pod(stack: &LocalStack, child: &str) -> anyhow::Result<PodSpec> {
    let children: Api<DynamicObject> = Api::namespaced_with(
        stack.client.clone(),
        NAMESPACE,
        &flink_deployment_resource(),
    );
    let child = children.get(child).await?;
    let spec = child
        .data
        .pointer("/spec/taskManager/podTemplate/spec")
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("the child has no TaskManager pod template"))?;
    Ok(serde_json::from_value(spec)?)
}

fn container_names(pod: &PodSpec) -> Vec<&str> {
    pod.containers.iter().map(|c| c.name.as_str()).collect()
}

fn bound_accounts(binding: &RoleBinding) -> Vec<&str> {
    binding
        .subjects
        .iter()
        .flatten()
        .map(|s: &Subject| s.name.as_str())
        .collect()
}

/// The Role of `deployment`: get, watch, list on its one ConfigMap, owned by the resource.
async fn assert_role(roles: &Api<Role>, deployment: &str, uid: &str) -> anyhow::Result<()> {
    let role = roles.get(&gate_rbac::role_name(deployment)).await?;
    assert_eq!(
        role.rules,
        Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".into()]),
            resource_names: Some(vec![format!("{deployment}-bluegreen")]),
            verbs: vec!["get".into(), "watch".into(), "list".into()],
            non_resource_urls: None,
        }])
    );
    assert_eq!(role.owner_references()[0].uid, uid);
    Ok(())
}

/// The sidecar's environment: the child's ConfigMap and color, loopback only.
fn assert_sidecar_env(pod: &PodSpec, color: &str) {
    let sidecar = pod
        .containers
        .iter()
        .find(|c| c.name == SIDECAR_CONTAINER)
        .expect("the sidecar");
    let vars: Vec<(&str, &str)> = sidecar
        .env
        .iter()
        .flatten()
        .map(|v| (v.name.as_str(), v.value.as_deref().unwrap_or_default()))
        .collect();
    assert!(
        vars.contains(&(env::CONFIGMAP, "orders-bluegreen")),
        "{vars:?}"
    );
    assert!(vars.contains(&(env::COLOR, color)), "{vars:?}");
    assert!(vars.contains(&(env::LISTEN, "127.0.0.1:8787")), "{vars:?}");
}

/// A request the API server refused as not allowed.
fn forbidden<T>(result: Result<T, kube::Error>) -> bool {
    matches!(result, Err(kube::Error::Api(status)) if status.code == 403)
}

/// What the controller's Role and RoleBinding let their service account do, on an API server
/// that enforces RBAC (the local one with `AuthMode::Rbac`, holding copies of them): the sidecar's
/// watch (`ConfigMapSource`) gets the ConfigMap; anything else is refused.
async fn assert_enforced(
    role: &Role,
    binding: &RoleBinding,
    account: &str,
    configmap: &ConfigMap,
) -> anyhow::Result<()> {
    let server = LocalApiServer::start(Options {
        auth: AuthMode::Rbac,
        ..Options::default()
    })
    .await?;
    let copy = |meta: &ObjectMeta| ObjectMeta {
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        ..ObjectMeta::default()
    };
    for object in [
        serde_json::to_value(Role {
            metadata: copy(&role.metadata),
            ..role.clone()
        })?,
        serde_json::to_value(RoleBinding {
            metadata: copy(&binding.metadata),
            ..binding.clone()
        })?,
        serde_json::to_value(ConfigMap {
            metadata: copy(&configmap.metadata),
            ..configmap.clone()
        })?,
        serde_json::to_value(ConfigMap {
            metadata: ObjectMeta {
                name: Some("payments-bluegreen".into()),
                namespace: Some(NAMESPACE.into()),
                ..ObjectMeta::default()
            },
            ..configmap.clone()
        })?,
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": NAMESPACE}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "someone-else", "namespace": NAMESPACE}}),
    ] {
        server.apply_object(&object)?;
    }
    let name = configmap.name_any();
    let job = server.service_account_client(NAMESPACE, account)?;
    let shared = SharedState::new(StateOptions::default());
    let source = ConfigMapSource::new(job.clone(), NAMESPACE, &name, Arc::clone(&shared)).spawn();
    let deadline = tokio::time::Instant::now() + WAIT;
    while shared.current().is_none() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the job's account could not watch its ConfigMap: {:?}",
            server.denials()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    source.abort();
    let configmaps: Api<ConfigMap> = Api::namespaced(job.clone(), NAMESPACE);
    assert!(forbidden(configmaps.get("payments-bluegreen").await));
    assert!(forbidden(configmaps.list(&ListParams::default()).await));
    assert!(forbidden(
        configmaps
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"x": "y"}}))
            )
            .await
    ));
    assert!(forbidden(
        configmaps.delete(&name, &DeleteParams::default()).await
    ));
    let secrets: Api<Secret> = Api::namespaced(job, NAMESPACE);
    assert!(forbidden(secrets.list(&ListParams::default()).await));
    let other: Api<ConfigMap> = Api::namespaced(
        server.service_account_client(NAMESPACE, "someone-else")?,
        NAMESPACE,
    );
    assert!(forbidden(other.get(&name).await), "only the bound account");
    server.shutdown().await;
    Ok(())
}

/// Waits until the child of `color` and its gates' RoleBinding are both gone; fails when the
/// binding outlives the child by `WAIT`.
async fn binding_goes_with_child(stack: &LocalStack, color: Color) -> anyhow::Result<()> {
    let children: Api<DynamicObject> = Api::namespaced_with(
        stack.client.clone(),
        NAMESPACE,
        &flink_deployment_resource(),
    );
    let bindings: Api<RoleBinding> = Api::namespaced(stack.client.clone(), NAMESPACE);
    let child = format!("orders-{}", color.suffix());
    let binding = gate_rbac::role_binding_name("orders", color);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let child_left = children.get_opt(&child).await?.is_some();
        let binding_left = bindings.get_opt(&binding).await?.is_some();
        if !child_left && !binding_left {
            return Ok(());
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "after {WAIT:?}: child {child} left: {child_left}, its RoleBinding {binding} left: {binding_left}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_injects_the_sidecar_and_grants_exactly_the_configmap() -> anyhow::Result<()>
{
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    let mut spec = orders_job("v1", 2);
    spec.template.spec.other.insert(
        "taskManager".into(),
        json!({
            "resource": {"memory": "2048m", "cpu": 1},
            "podTemplate": {"spec": {"containers": [
                {"name": "flink-main-container"},
                {"name": "log-shipper", "image": "fluent-bit:3"},
            ]}},
        }),
    );
    stack.create("orders", spec).await?;
    let fbgd = stack.wait_steady("orders", Color::Blue, WAIT).await?;
    let uid = fbgd.uid().expect("uid");
    let roles: Api<Role> = Api::namespaced(stack.client.clone(), NAMESPACE);
    assert_role(&roles, "orders", &uid).await?;
    // The blue child's binding: the template's service account (`flink`).
    let bindings: Api<RoleBinding> = Api::namespaced(stack.client.clone(), NAMESPACE);
    let blue = bindings
        .get(&gate_rbac::role_binding_name("orders", Color::Blue))
        .await?;
    assert_eq!(blue.role_ref.name, gate_rbac::role_name("orders"));
    assert_eq!(bound_accounts(&blue), ["flink"]);
    assert_eq!(blue.owner_references()[0].uid, uid);
    let configmaps: Api<ConfigMap> = Api::namespaced(stack.client.clone(), NAMESPACE);
    let configmap = configmaps.get("orders-bluegreen").await?;
    let role = roles.get(&gate_rbac::role_name("orders")).await?;
    assert_enforced(&role, &blue, "flink", &configmap).await?;
    // The sidecar, once, after the user's TaskManager containers.
    let pod = task_manager_pod(&stack, "orders-blue").await?;
    assert_eq!(
        container_names(&pod),
        ["flink-main-container", "log-shipper", SIDECAR_CONTAINER]
    );
    assert_sidecar_env(&pod, "BLUE");

    // An upgrade that changes the job's service account: green gets its own binding before its
    // child is applied; blue kept its binding while it ran.
    stack
        .patch_spec(
            "orders",
            json!({"template": {"spec": {"image": "example.com/orders:v2", "serviceAccount": "orders-v2"}}}),
        )
        .await?;
    stack.wait_steady("orders", Color::Green, WAIT).await?;
    let green = bindings
        .get(&gate_rbac::role_binding_name("orders", Color::Green))
        .await?;
    assert_eq!(bound_accounts(&green), ["orders-v2"]);
    let pod = task_manager_pod(&stack, "orders-green").await?;
    assert_eq!(
        container_names(&pod),
        ["flink-main-container", "log-shipper", SIDECAR_CONTAINER]
    );
    assert_sidecar_env(&pod, "GREEN");
    // Once blue's child is deleted, its account no longer reads the ConfigMap.
    binding_goes_with_child(&stack, Color::Blue).await?;
    assert_eq!(
        bound_accounts(
            &bindings
                .get(&gate_rbac::role_binding_name("orders", Color::Green))
                .await?
        ),
        ["orders-v2"]
    );

    // Deleting the resource deletes what it owns.
    stack
        .fbgds()
        .delete("orders", &DeleteParams::default())
        .await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    while roles
        .get_opt(&gate_rbac::role_name("orders"))
        .await?
        .is_some()
        || bindings
            .get_opt(&gate_rbac::role_binding_name("orders", Color::Green))
            .await?
            .is_some()
    {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the gate RBAC outlived its resource"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turned_off_the_child_has_no_sidecar_but_the_gates_keep_their_role() -> anyhow::Result<()> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    let mut jni = orders_job("v1", 2);
    jni.sidecar.inject = false;
    stack.create("orders", jni).await?;
    let fbgd = stack.wait_steady("orders", Color::Blue, WAIT).await?;
    let children: Api<DynamicObject> = Api::namespaced_with(
        stack.client.clone(),
        NAMESPACE,
        &flink_deployment_resource(),
    );
    let child = serde_json::to_string(&children.get("orders-blue").await?.data)?;
    assert!(!child.contains(SIDECAR_CONTAINER), "{child}");
    assert!(!child.contains(env::SIDECAR_URL), "{child}");
    assert!(
        child.contains(env::CONFIGMAP),
        "the gate's environment: {child}"
    );
    // The JNI shim in the TaskManager reads the same ConfigMap with the same account.
    let roles: Api<Role> = Api::namespaced(stack.client.clone(), NAMESPACE);
    assert_role(&roles, "orders", &fbgd.uid().expect("uid")).await?;
    stack.shutdown().await;
    Ok(())
}
