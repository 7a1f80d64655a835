//! Shared scaffolding of the simulated-Flink scenario tests: a local API server with the
//! upstream FlinkDeployment CRD, a local Flink runner on a manual clock, and small builders.
#![allow(dead_code, missing_docs)]

pub mod handover;

use std::collections::BTreeMap;
use std::time::Duration;

use bluegreen_local_apiserver::{LocalApiServer, Options};
use bluegreen_local_flink::crd::{flink_deployment_resource, install_flink_deployment_crd};
use bluegreen_local_flink::ledger::SinkMode;
use bluegreen_local_flink::{DeploymentRef, LocalFlink, LocalFlinkOptions, SimClock};
use bluegreen_protocol::CoordinationState;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

pub const NS: &str = "default";
/// Every wait in these tests is bounded by this (wall clock).
pub const WAIT: Duration = Duration::from_secs(20);

pub struct Env {
    pub server: LocalApiServer,
    pub client: kube::Client,
    pub flink: LocalFlink,
}

pub async fn env(sink: SinkMode) -> Env {
    env_with(sink, SimClock::default()).await
}

/// Like [`env`], with a given clock (e.g. a scaled one).
pub async fn env_with(sink: SinkMode, clock: SimClock) -> Env {
    // reqwest (dev-dependency) and kube enable different rustls providers: pick one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = LocalApiServer::start(Options::default())
        .await
        .expect("local API server starts");
    install_flink_deployment_crd(&server).expect("FlinkDeployment CRD installs");
    let client = server.client();
    let flink = LocalFlink::start(
        client.clone(),
        LocalFlinkOptions {
            clock,
            sink_mode: sink,
            ..LocalFlinkOptions::default()
        },
    )
    .await
    .expect("local Flink starts");
    Env {
        server,
        client,
        flink,
    }
}

pub fn dref(name: &str) -> DeploymentRef {
    DeploymentRef::new(NS, name)
}

pub fn api(client: &kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), NS, &flink_deployment_resource())
}

/// A FlinkDeployment like the ones our controller writes.
pub fn deployment(name: &str, parallelism: u32, conf: &[(&str, &str)]) -> Value {
    let conf: BTreeMap<&str, &str> = conf.iter().copied().collect();
    json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "image": "registry.local/orders:1.0",
            "flinkVersion": "v1_20",
            "serviceAccount": "flink",
            "flinkConfiguration": conf,
            "jobManager": {"resource": {"memory": "1024m", "cpu": 0.5}},
            "taskManager": {"resource": {"memory": "1024m", "cpu": 0.5}},
            "job": {
                "jarURI": "local:///opt/flink/usrlib/orders.jar",
                "parallelism": parallelism,
                "upgradeMode": "savepoint",
                "state": "running",
            },
        },
    })
}

pub async fn create(client: &kube::Client, obj: &Value) {
    let obj: DynamicObject = serde_json::from_value(obj.clone()).expect("a FlinkDeployment");
    api(client)
        .create(&PostParams::default(), &obj)
        .await
        .expect("FlinkDeployment created");
}

pub async fn patch_spec(client: &kube::Client, name: &str, patch: Value) {
    api(client)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({ "spec": patch })),
        )
        .await
        .expect("FlinkDeployment patched");
}

pub async fn delete(client: &kube::Client, name: &str) {
    api(client)
        .delete(name, &kube::api::DeleteParams::default())
        .await
        .expect("FlinkDeployment deleted");
}

pub async fn status(client: &kube::Client, name: &str) -> Value {
    let obj = api(client).get(name).await.expect("FlinkDeployment exists");
    obj.data.get("status").cloned().unwrap_or(Value::Null)
}

/// Waits until the deployment's status satisfies `pred`; returns it.
pub async fn wait_status(
    client: &kube::Client,
    name: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let s = status(client, name).await;
        if pred(&s) {
            return s;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "status of {name} never matched; last: {s:#}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

pub fn lifecycle(s: &Value) -> &str {
    s["lifecycleState"].as_str().unwrap_or("")
}

pub fn job_state(s: &Value) -> &str {
    s["jobStatus"]["state"].as_str().unwrap_or("")
}

/// Creates the deployment and brings its job to RUNNING (advancing the manual clock through the
/// start-up delay).
pub async fn start(env: &Env, obj: &Value) {
    let name = obj["metadata"]["name"].as_str().expect("name").to_owned();
    create(&env.client, obj).await;
    wait_status(&env.client, &name, |s| job_state(s) == "RECONCILING").await;
    env.flink.clock().advance(60_000);
    wait_status(&env.client, &name, |s| lifecycle(s) == "STABLE").await;
    env.flink
        .wait_for_job(&dref(&name), WAIT, |v| v.state.as_str() == "RUNNING")
        .await
        .expect("job running");
}

/// Writes the coordination ConfigMap through the API server (create or replace).
pub async fn write_configmap(client: &kube::Client, name: &str, state: &CoordinationState) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": state.to_data(),
    });
    api.patch(
        name,
        &PatchParams::apply("bluegreen-test").force(),
        &Patch::Apply(&cm),
    )
    .await
    .expect("ConfigMap written");
}
