//! What every conformance scenario starts from: its [`Env`] (a fresh local API server, or a
//! namespace of the cluster of `BLUEGREEN_TEST_KUBECONFIG`), objects and CRDs to create, and
//! waits for watch events and for conditions.

use std::fmt::Debug;
use std::time::{Duration, Instant};

use bluegreen_local_apiserver::{LocalApiServer, Options};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, WatchEvent};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Where a test runs: a fresh local API server or the cluster of `BLUEGREEN_TEST_KUBECONFIG`.
pub struct Env {
    pub client: Client,
    pub server: Option<LocalApiServer>,
    pub ns: String,
    pub test: &'static str,
}

fn unique() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:08x}", h.finish() & 0xffff_ffff)
}

pub fn local_options() -> Options {
    Options {
        bookmark_interval: Duration::from_millis(200),
        ..Options::default()
    }
}

pub async fn env(test: &'static str) -> Env {
    let (client, server) = if let Ok(path) = std::env::var("BLUEGREEN_TEST_KUBECONFIG") {
        let kc =
            kube::config::Kubeconfig::read_from(&path).expect("readable BLUEGREEN_TEST_KUBECONFIG");
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("usable kubeconfig");
        println!(
            "conformance[{test}]: target = real cluster {} (kubeconfig {path})",
            config.cluster_url
        );
        (Client::try_from(config).expect("client"), None)
    } else {
        let server = LocalApiServer::start(local_options())
            .await
            .expect("local API server starts");
        println!(
            "conformance[{test}]: target = local API server at {}",
            server.url()
        );
        (server.client(), Some(server))
    };
    let ns = format!(
        "bgc-{}-{}",
        test.replace('_', "-").chars().take(40).collect::<String>(),
        unique()
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).expect("ns"),
        )
        .await
        .expect("create test namespace");
    Env {
        client,
        server,
        ns,
        test,
    }
}

impl Env {
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// The local server, or `None` (after saying the test is skipped) on a real cluster.
    pub fn local_only(&self, what: &str) -> Option<&LocalApiServer> {
        if self.server.is_none() {
            println!(
                "conformance[{}]: SKIPPED on a real cluster: {what} needs the local server",
                self.test
            );
        }
        self.server.as_ref()
    }

    pub async fn cleanup(self) {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let _ = namespaces.delete(&self.ns, &DeleteParams::default()).await;
        if let Some(s) = self.server {
            s.shutdown().await;
        }
    }
}

pub fn cm(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}),
    )
    .expect("cm")
}

pub fn api_err(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

pub async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !f().await {
        assert!(start.elapsed() < TIMEOUT, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

pub async fn next_event<S, K>(stream: &mut S) -> WatchEvent<K>
where
    S: futures::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin,
{
    tokio::time::timeout(TIMEOUT, stream.next())
        .await
        .expect("watch event in time")
        .expect("stream not ended")
        .expect("event decodes")
}

/// Waits for the next non-BOOKMARK event.
pub async fn next_change<S, K>(stream: &mut S) -> WatchEvent<K>
where
    S: futures::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin,
{
    loop {
        match next_event(stream).await {
            WatchEvent::Bookmark(_) => {}
            other => return other,
        }
    }
}

pub fn rv(meta: &impl ResourceExt) -> u64 {
    meta.resource_version()
        .expect("rv")
        .parse()
        .expect("numeric rv")
}

pub async fn install_crd(client: &Client, crd: Value) -> CustomResourceDefinition {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd["metadata"]["name"]
        .as_str()
        .expect("crd name")
        .to_string();
    let crd: CustomResourceDefinition = serde_json::from_value(crd).expect("crd");
    api.patch(
        &name,
        &PatchParams::apply("conformance").force(),
        &Patch::Apply(&crd),
    )
    .await
    .expect("apply CRD");
    let start = Instant::now();
    let established = loop {
        let c = api.get(&name).await.expect("get CRD");
        let ok = c
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if ok {
            break c;
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "CRD {name} not established in time"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    // Discovery of a new kind may lag a little behind Established on a real cluster.
    tokio::time::sleep(Duration::from_millis(
        if std::env::var("BLUEGREEN_TEST_KUBECONFIG").is_ok() {
            2000
        } else {
            0
        },
    ))
    .await;
    established
}

/// Our own kind, FlinkBlueGreenDeployment (bluegreen.dev/v1alpha1), with a status subresource.
pub fn bluegreen_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "flinkbluegreendeployments.bluegreen.dev"},
        "spec": {
            "group": "bluegreen.dev", "scope": "Namespaced",
            "names": {"plural": "flinkbluegreendeployments", "singular": "flinkbluegreendeployment",
                      "kind": "FlinkBlueGreenDeployment", "shortNames": ["fbgd"]},
            "versions": [{
                "name": "v1alpha1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Stage", "type": "string", "jsonPath": ".status.stage"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["template"], "properties": {
                        "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "replicas": {"type": "integer", "minimum": 1},
                        "mode": {"type": "string", "enum": ["Automatic", "Manual"], "default": "Automatic"},
                        "port": {"x-kubernetes-int-or-string": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "args": {"type": "array", "items": {"type": "string"}}
                    }},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}}
            }]
        }
    })
}

pub fn bluegreen_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("bluegreen.dev", "v1alpha1", "FlinkBlueGreenDeployment"),
        "flinkbluegreendeployments",
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

pub fn bluegreen(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "bluegreen.dev/v1alpha1", "kind": "FlinkBlueGreenDeployment", "metadata": {"name": name}, "spec": spec}))
        .expect("object")
}

/// The Status of a refused request (without printing a large object that was accepted).
pub fn refused<T>(r: Result<T, kube::Error>, what: &str) -> Box<kube::core::Status> {
    match r {
        Ok(_) => panic!("{what}: accepted, expected a refusal"),
        Err(e) => api_err(e),
    }
}

/// Creates `obj`, which must succeed (`what` names it in the panic if not).
pub async fn create<K>(api: &Api<K>, obj: &K, what: &str) -> K
where
    K: Clone + DeserializeOwned + Serialize + Debug,
{
    api.create(&PostParams::default(), obj).await.expect(what)
}

/// A JSON merge patch of object `name`.
pub async fn merge<K>(api: &Api<K>, name: &str, patch: Value) -> kube::Result<K>
where
    K: Clone + DeserializeOwned + Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
}
