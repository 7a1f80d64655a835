//! Conformance tests for the local Kubernetes API server, through `kube::Api`.
//!
//! By default every test starts its own local API server. With `BLUEGREEN_TEST_KUBECONFIG`
//! set to a kubeconfig path, the same tests run against that cluster instead (each in its own
//! namespace); tests that need fault injection or restarts only run locally and say so.
#![allow(
    clippy::too_many_lines,
    clippy::needless_pass_by_value,
    reason = "test scenarios read top to bottom; helpers take values for call-site brevity"
)]

use std::time::{Duration, Instant};

use bluegreen_local_apiserver::{
    LocalApiServer, Options, RequestMatch, Verb, validate_against_crd,
};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ConfigMap, Event as CoreEvent, Namespace, ObjectReference, Secret,
};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use kube::{Client, Discovery, ResourceExt};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(20);

/// Where a test runs: a fresh local API server or the cluster of `BLUEGREEN_TEST_KUBECONFIG`.
struct Env {
    client: Client,
    server: Option<LocalApiServer>,
    ns: String,
    test: &'static str,
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

fn local_options() -> Options {
    Options {
        bookmark_interval: Duration::from_millis(200),
        ..Options::default()
    }
}

async fn env(test: &'static str) -> Env {
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
    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// The local server, or `None` (after saying the test is skipped) on a real cluster.
    fn local_only(&self, what: &str) -> Option<&LocalApiServer> {
        if self.server.is_none() {
            println!(
                "conformance[{}]: SKIPPED on a real cluster: {what} needs the local server",
                self.test
            );
        }
        self.server.as_ref()
    }

    async fn cleanup(self) {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let _ = namespaces.delete(&self.ns, &DeleteParams::default()).await;
        if let Some(s) = self.server {
            s.shutdown().await;
        }
    }
}

fn cm(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}),
    )
    .expect("cm")
}

fn api_err(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn eventually<F, Fut>(what: &str, mut f: F)
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

async fn next_event<S, K>(stream: &mut S) -> WatchEvent<K>
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
async fn next_change<S, K>(stream: &mut S) -> WatchEvent<K>
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

fn rv(meta: &impl ResourceExt) -> u64 {
    meta.resource_version()
        .expect("rv")
        .parse()
        .expect("numeric rv")
}

async fn install_crd(client: &Client, crd: Value) -> CustomResourceDefinition {
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
fn bluegreen_crd() -> Value {
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

fn bluegreen_api(client: &Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("bluegreen.dev", "v1alpha1", "FlinkBlueGreenDeployment"),
        "flinkbluegreendeployments",
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

fn bluegreen(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "bluegreen.dev/v1alpha1", "kind": "FlinkBlueGreenDeployment", "metadata": {"name": name}, "spec": spec}))
        .expect("object")
}

#[tokio::test]
async fn configmap_crud_conflicts_and_status_errors() {
    let env = env("crud").await;
    let api: Api<ConfigMap> = env.api();
    let created = api
        .create(&PostParams::default(), &cm("a", json!({"k": "v"})))
        .await
        .expect("create");
    assert!(!created.uid().expect("uid").is_empty());
    assert!(created.creation_timestamp().is_some());
    let err = api_err(
        api.create(&PostParams::default(), &cm("a", json!({})))
            .await
            .expect_err("duplicate"),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(err.details.as_ref().map(|d| d.name.as_str()), Some("a"));

    let mut stale = created.clone();
    let mut fresh = created.clone();
    fresh.data = Some([("k".to_string(), "w".to_string())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &fresh)
        .await
        .expect("replace");
    assert!(rv(&replaced) > rv(&created), "resourceVersion increases");
    stale.data = Some([("k".to_string(), "x".to_string())].into());
    let err = api_err(
        api.replace("a", &PostParams::default(), &stale)
            .await
            .expect_err("stale"),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        api.get("a").await.expect("get").data.expect("data")["k"],
        "w"
    );

    let generated = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).expect("cm"),
        )
        .await
        .expect("generateName");
    assert!(
        generated.name_any().starts_with("gen-") && generated.name_any().len() == 9,
        "{}",
        generated.name_any()
    );

    api.delete("a", &DeleteParams::default())
        .await
        .expect("delete");
    let err = api_err(api.get("a").await.expect_err("gone"));
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(
        err.status,
        Some(kube::core::response::StatusSummary::Failure)
    );
    assert!(err.message.contains("\"a\" not found"), "{}", err.message);

    // A malformed body is a 400 Status, never a crash.
    let req = http::Request::post(format!("/api/v1/namespaces/{}/configmaps", env.ns))
        .header("content-type", "application/json")
        .body(b"{not json".to_vec())
        .expect("request");
    let err = api_err(
        env.client
            .request::<Value>(req)
            .await
            .expect_err("malformed"),
    );
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    let req = http::Request::post(format!("/api/v1/namespaces/{}/configmaps", env.ns))
        .header("content-type", "application/json")
        .body(
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"typed"},"data":{"n":5}}"#
                .to_vec(),
        )
        .expect("request");
    let err = api_err(
        env.client
            .request::<Value>(req)
            .await
            .expect_err("ill-typed"),
    );
    assert_eq!(err.code, 400);
    env.cleanup().await;
}

#[tokio::test]
async fn list_selectors_and_pagination() {
    let env = env("list").await;
    let api: Api<ConfigMap> = env.api();
    for (i, tier) in ["web", "web", "db", "cache", ""].iter().enumerate() {
        let mut c = cm(&format!("c{i}"), json!({}));
        let mut labels =
            std::collections::BTreeMap::from([("app".to_string(), "demo".to_string())]);
        if !tier.is_empty() {
            labels.insert("tier".into(), (*tier).to_string());
        }
        c.metadata.labels = Some(labels);
        api.create(&PostParams::default(), &c)
            .await
            .expect("create");
    }
    let names = |sel: &'static str| {
        let api = api.clone();
        async move {
            let mut n: Vec<String> = api
                .list(&ListParams::default().labels(sel))
                .await
                .expect(sel)
                .items
                .iter()
                .map(ResourceExt::name_any)
                .collect();
            n.sort();
            n.join(",")
        }
    };
    assert_eq!(names("tier=web").await, "c0,c1");
    assert_eq!(names("tier==db").await, "c2");
    assert_eq!(names("tier!=web").await, "c2,c3,c4");
    assert_eq!(names("tier in (db,cache)").await, "c2,c3");
    assert_eq!(names("tier notin (web,db)").await, "c3,c4");
    assert_eq!(names("tier").await, "c0,c1,c2,c3");
    assert_eq!(names("!tier").await, "c4");
    assert_eq!(names("app=demo,tier in (web),tier!=db").await, "c0,c1");
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=c3"))
        .await
        .expect("field");
    assert_eq!(by_name.items.len(), 1);
    let all: Api<ConfigMap> = Api::all(env.client.clone());
    let in_ns = all
        .list(
            &ListParams::default()
                .fields(&format!("metadata.namespace={}", env.ns))
                .labels("app=demo"),
        )
        .await
        .expect("all namespaces");
    assert_eq!(in_ns.items.len(), 5);

    // Pagination: pages of 2, a continue token, one list resourceVersion.
    let mut seen = Vec::new();
    let mut lp = ListParams::default().labels("app=demo").limit(2);

    let first = api.list(&lp).await.expect("page 1");
    let first_rv = first.metadata.resource_version.clone().expect("list rv");
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.metadata.remaining_item_count, Some(3));
    seen.extend(first.items.iter().map(ResourceExt::name_any));
    let mut token = first.metadata.continue_.clone();
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        lp = lp.continue_token(&t);
        let page = api.list(&lp).await.expect("next page");
        assert_eq!(
            page.metadata.resource_version.as_deref(),
            Some(first_rv.as_str())
        );
        seen.extend(page.items.iter().map(ResourceExt::name_any));
        token = page.metadata.continue_.clone();
    }
    assert_eq!(seen, ["c0", "c1", "c2", "c3", "c4"]);
    env.cleanup().await;
}

#[tokio::test]
async fn patch_types_and_server_side_apply() {
    let env = env("patch").await;
    let api: Api<ConfigMap> = env.api();
    api.create(
        &PostParams::default(),
        &cm("p", json!({"a": "1", "b": "2"})),
    )
    .await
    .expect("create");
    let merged = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": null, "c": "3"}})),
        )
        .await
        .expect("merge");
    assert_eq!(
        serde_json::to_value(&merged.data).expect("data"),
        json!({"b": "2", "c": "3"})
    );

    // What kube::runtime::finalizer sends: test null + add, then test value + remove.
    let add: Value = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/f"]}
    ]);
    let with_f = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(add.clone()).expect("patch")),
        )
        .await
        .expect("json patch");
    assert_eq!(with_f.finalizers(), ["example.com/f"]);
    let err = api_err(
        api.patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(add).expect("patch")),
        )
        .await
        .expect_err("test fails"),
    );
    assert_eq!(err.code, 422);
    let remove: Value = json!([
        {"op": "test", "path": "/metadata/finalizers/0", "value": "example.com/f"},
        {"op": "remove", "path": "/metadata/finalizers/0"}
    ]);
    let without = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(remove).expect("patch")),
        )
        .await
        .expect("remove");
    assert!(without.finalizers().is_empty());

    let smp = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"x": "y"}}, "data": {"b": null}})),
        )
        .await
        .expect("strategic");
    assert_eq!(smp.labels()["x"], "y");
    assert_eq!(
        serde_json::to_value(&smp.data).expect("data"),
        json!({"c": "3"})
    );

    // Server-side apply: create, ownership, conflict, force, removal of dropped fields.
    let apply = |manager: &'static str, force: bool, data: Value| {
        let api = api.clone();
        async move {
            let mut pp = PatchParams::apply(manager);
            pp.force = force;
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": data});
            api.patch("s", &pp, &Patch::Apply(body)).await
        }
    };
    let s = apply("alice", false, json!({"x": "1", "y": "2"}))
        .await
        .expect("apply creates");
    let mf = s.metadata.managed_fields.clone().expect("managedFields");
    assert_eq!(
        (mf[0].manager.as_deref(), mf[0].operation.as_deref()),
        (Some("alice"), Some("Apply"))
    );
    apply("bob", false, json!({"z": "3", "x": "1"}))
        .await
        .expect("same value: shared, no conflict");
    let err = api_err(
        apply("bob", false, json!({"x": "9"}))
            .await
            .expect_err("conflict"),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(err.message.contains("alice"), "{}", err.message);
    let forced = apply("bob", true, json!({"x": "9", "z": "3"}))
        .await
        .expect("force");
    assert_eq!(forced.data.as_ref().expect("data")["x"], "9");
    let dropped = apply("alice", false, json!({"y": "2"}))
        .await
        .expect("alice drops x");
    assert_eq!(
        serde_json::to_value(&dropped.data).expect("data"),
        json!({"x": "9", "y": "2", "z": "3"}),
        "x is bob's now"
    );
    let dropped = apply("bob", false, json!({"x": "9"}))
        .await
        .expect("bob drops z");
    assert_eq!(
        serde_json::to_value(&dropped.data).expect("data"),
        json!({"x": "9", "y": "2"})
    );
    // A plain update takes ownership of what it changed: a later apply of another value conflicts.
    let edit = |data: Value| {
        let api = api.clone();
        async move {
            let pp = PatchParams {
                field_manager: Some("editor".into()),
                ..PatchParams::default()
            };
            api.patch("s", &pp, &Patch::Merge(json!({ "data": data })))
                .await
                .expect("update");
        }
    };
    edit(json!({"y": "edited"})).await;
    let err = api_err(
        apply("alice", false, json!({"y": "2"}))
            .await
            .expect_err("conflict with editor"),
    );
    // Kubernetes' wording (kubectl prints it as is): one conflict on one line, several grouped
    // by manager.
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.y"
    );
    edit(json!({"x": "edited"})).await;
    let err = api_err(
        apply("alice", false, json!({"x": "9", "y": "2"}))
            .await
            .expect_err("two conflicts with editor"),
    );
    assert_eq!(
        err.message,
        "Apply failed with 2 conflicts: conflicts with \"editor\" using v1:\n- .data.x\n- .data.y"
    );
    env.cleanup().await;
}

#[tokio::test]
async fn custom_resources_status_generation_and_validation() {
    let env = env("crs").await;
    let first = install_crd(&env.client, bluegreen_crd()).await;
    let again = install_crd(&env.client, bluegreen_crd()).await;
    if env.server.is_some() {
        // (A real cluster's CRD controllers may still touch the status in between.)
        assert_eq!(
            first.resource_version(),
            again.resource_version(),
            "re-applying an unchanged CRD is a no-op"
        );
    }
    let api = bluegreen_api(&env.client, &env.ns);
    let mut obj = bluegreen(
        "bg",
        json!({"template": {"any": {"thing": 1}}, "replicas": 2, "port": "http"}),
    );
    obj.data["status"] = json!({"stage": "ignored on create"});
    let created = api
        .create(&PostParams::default(), &obj)
        .await
        .expect("create CR");
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.data["spec"]["mode"], "Automatic",
        "schema defaults are applied"
    );
    assert!(
        created.data.get("status").is_none(),
        "status is ignored on create"
    );

    let st = api
        .patch_status(
            "bg",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"stage": "RUNNING"}, "spec": {"replicas": 7}})),
        )
        .await
        .expect("status patch");
    assert_eq!(st.data["status"]["stage"], "RUNNING");
    assert_eq!(st.data["spec"]["replicas"], 2, "/status ignores spec");
    assert_eq!(
        st.metadata.generation,
        Some(1),
        "status changes do not bump generation"
    );

    let sp = api
        .patch(
            "bg",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}, "status": {"stage": "X"}})),
        )
        .await
        .expect("spec patch");
    assert_eq!(sp.metadata.generation, Some(2));
    assert_eq!(
        sp.data["status"]["stage"], "RUNNING",
        "main resource ignores status"
    );
    let labelled = api
        .patch(
            "bg",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"l": "v"}}})),
        )
        .await
        .expect("metadata patch");
    assert_eq!(
        labelled.metadata.generation,
        Some(2),
        "metadata changes do not bump generation"
    );

    // Server-side apply of the status subresource.
    let applied = api
        .patch_status(
            "bg",
            &PatchParams::apply("status-writer").force(),
            &Patch::Apply(json!({
                "apiVersion": "bluegreen.dev/v1alpha1", "kind": "FlinkBlueGreenDeployment",
                "metadata": {"name": "bg"}, "status": {"stage": "APPLIED"}
            })),
        )
        .await
        .expect("apply status");
    assert_eq!(applied.data["status"]["stage"], "APPLIED");
    assert_eq!(applied.data["spec"]["replicas"], 3);
    let status_entry = applied
        .metadata
        .managed_fields
        .as_ref()
        .and_then(|m| {
            m.iter()
                .find(|e| e.manager.as_deref() == Some("status-writer"))
                .cloned()
        })
        .expect("status-writer owns status");
    assert_eq!(status_entry.subresource.as_deref(), Some("status"));

    // dryRun=All validates and answers without storing.
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    api.create(&dry, &bluegreen("dry", json!({"template": {}})))
        .await
        .expect("dry run");
    assert!(api.get_opt("dry").await.expect("get").is_none());

    let mut whole = api.get_status("bg").await.expect("get status");
    whole.data["status"] = json!({"stage": "REPLACED"});
    let replaced = api
        .replace_status("bg", &PostParams::default(), &whole)
        .await
        .expect("replace status");
    assert_eq!(replaced.data["status"]["stage"], "REPLACED");

    // Schema: types, required, enum, minimum, int-or-string, additionalProperties, items.
    for (spec, field) in [
        (json!({"replicas": 1}), "spec.template"),
        (json!({"template": {}, "replicas": "two"}), "spec.replicas"),
        (json!({"template": {}, "replicas": 0}), "spec.replicas"),
        (json!({"template": {}, "mode": "Sometimes"}), "spec.mode"),
        (json!({"template": {}, "port": true}), "spec.port"),
        (json!({"template": {}, "labels": {"a": 1}}), "spec.labels.a"),
        (json!({"template": {}, "args": [1]}), "spec.args[0]"),
    ] {
        let err = api_err(
            api.create(&PostParams::default(), &bluegreen("bad", spec.clone()))
                .await
                .expect_err("invalid"),
        );
        assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{spec}");
        let causes = err
            .details
            .as_ref()
            .map(|d| d.causes.clone())
            .unwrap_or_default();
        assert!(
            causes.iter().any(|c| c.field == field),
            "{spec}: {causes:?}"
        );
    }
    // Unknown fields are pruned (and rejected with fieldValidation=Strict).
    let pruned = api
        .create(
            &PostParams::default(),
            &bluegreen("pruned", json!({"template": {"keep": 1}, "bogus": 1})),
        )
        .await
        .expect("pruned");
    assert!(pruned.data["spec"].get("bogus").is_none());
    assert_eq!(pruned.data["spec"]["template"]["keep"], 1);

    // A CRD of cluster scope.
    install_crd(
        &env.client,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "clusterthings.conformance.bluegreen.dev"},
            "spec": {"group": "conformance.bluegreen.dev", "scope": "Cluster",
                "names": {"plural": "clusterthings", "kind": "ClusterThing"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
    )
    .await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("conformance.bluegreen.dev", "v1", "ClusterThing"),
        "clusterthings",
    );
    let things: Api<DynamicObject> = Api::all_with(env.client.clone(), &ar);
    let name = format!("thing-{}", env.ns);
    let thing: DynamicObject = serde_json::from_value(json!({"apiVersion": "conformance.bluegreen.dev/v1", "kind": "ClusterThing", "metadata": {"name": name}, "spec": {"a": 1}})).expect("thing");
    let created = things
        .create(&PostParams::default(), &thing)
        .await
        .expect("cluster-scoped create");
    assert!(created.metadata.namespace.is_none());
    things
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete thing");
    env.cleanup().await;
}

#[tokio::test]
async fn upstream_flink_deployment_crd() {
    let env = env("flinkdeployment").await;
    let crd_yaml = include_str!("../../local-flink/crds/flinkdeployments.flink.apache.org-v1.yml");
    let crd: Value = serde_yaml::from_str(crd_yaml).expect("CRD YAML");
    install_crd(&env.client, crd.clone()).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("flink.apache.org", "v1beta1", "FlinkDeployment"),
        "flinkdeployments",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &env.ns, &ar);
    let fd = json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment", "metadata": {"name": "job"},
        "spec": {"image": "flink:1.20", "flinkVersion": "v1_20", "serviceAccount": "flink",
            "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2"},
            "jobManager": {"resource": {"memory": "2048m", "cpu": 1}},
            "taskManager": {"resource": {"memory": "2048m", "cpu": 1}},
            "job": {"jarURI": "local:///opt/flink/job.jar", "parallelism": 2, "upgradeMode": "savepoint", "state": "running"}}
    });
    let report = validate_against_crd(&crd, "v1beta1", &fd).expect("schema present");
    assert!(
        report.errors.is_empty() && report.unknown_fields.is_empty(),
        "{report:?}"
    );
    let created = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(fd.clone()).expect("fd"),
        )
        .await
        .expect("create");
    assert_eq!(created.data["spec"]["job"]["parallelism"], 2);
    let st = api
        .patch_status(
            "job",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"jobStatus": {"state": "RUNNING"}, "lifecycleState": "STABLE"}}),
            ),
        )
        .await
        .expect("status");
    assert_eq!(st.data["status"]["lifecycleState"], "STABLE");
    let mut bad = fd.clone();
    bad["metadata"]["name"] = json!("bad");
    bad["spec"]["job"]["upgradeMode"] = json!("sometimes");
    let err = api_err(
        api.create(
            &PostParams::default(),
            &serde_json::from_value(bad.clone()).expect("fd"),
        )
        .await
        .expect_err("enum"),
    );
    assert_eq!(err.code, 422);
    let report = validate_against_crd(&crd, "v1beta1", &bad).expect("schema");
    assert_eq!(report.errors[0].field, "spec.job.upgradeMode");
    env.cleanup().await;
}

#[tokio::test]
async fn discovery_lists_builtin_and_crd_kinds() {
    let env = env("discovery").await;
    install_crd(&env.client, bluegreen_crd()).await;
    for aggregated in [false, true] {
        let d = Discovery::new(env.client.clone());
        let d = if aggregated {
            d.run_aggregated().await
        } else {
            d.run().await
        }
        .expect("discovery");
        for (group, kind) in [
            ("", "ConfigMap"),
            ("", "Secret"),
            ("", "Namespace"),
            ("events.k8s.io", "Event"),
            ("coordination.k8s.io", "Lease"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("bluegreen.dev", "FlinkBlueGreenDeployment"),
        ] {
            let found = d
                .groups()
                .filter(|g| g.name() == group)
                .flat_map(kube::discovery::ApiGroup::recommended_resources)
                .find(|(ar, _)| ar.kind == kind);
            let (ar, caps) =
                found.unwrap_or_else(|| panic!("{kind} in {group:?} (aggregated: {aggregated})"));
            assert!(
                caps.supports_operation(kube::discovery::verbs::WATCH),
                "{kind}"
            );
            if kind == "FlinkBlueGreenDeployment" {
                assert_eq!(ar.plural, "flinkbluegreendeployments");
                assert!(
                    caps.subresources.iter().any(|(s, _)| s.plural == "status") || aggregated,
                    "status subresource listed"
                );
                assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
            }
        }
    }
    let resources = env
        .client
        .list_api_group_resources("bluegreen.dev/v1alpha1")
        .await
        .expect("group resources");
    let names: Vec<&str> = resources
        .resources
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert!(
        names.contains(&"flinkbluegreendeployments")
            && names.contains(&"flinkbluegreendeployments/status"),
        "{names:?}"
    );
    let core = env
        .client
        .list_core_api_resources("v1")
        .await
        .expect("core");
    let cm = core
        .resources
        .iter()
        .find(|r| r.name == "configmaps")
        .expect("configmaps");
    assert!(
        cm.namespaced
            && cm.kind == "ConfigMap"
            && cm
                .short_names
                .as_ref()
                .is_some_and(|s| s.contains(&"cm".to_string()))
    );
    env.client.apiserver_version().await.expect("/version");
    env.cleanup().await;
}

#[tokio::test]
async fn watch_streams_changes_bookmarks_and_initial_events() {
    let env = env("watch").await;
    let api: Api<ConfigMap> = env.api();
    let first = api
        .create(&PostParams::default(), &cm("w0", json!({})))
        .await
        .expect("create");
    let from = first.resource_version().expect("rv");

    let mut stream = api
        .watch(&WatchParams::default(), &from)
        .await
        .expect("watch")
        .boxed();
    api.create(&PostParams::default(), &cm("w1", json!({"a": "1"})))
        .await
        .expect("create w1");
    api.patch(
        "w1",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "2"}})),
    )
    .await
    .expect("patch");
    api.delete("w1", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(matches!(next_change(&mut stream).await, WatchEvent::Added(c) if c.name_any() == "w1"));
    assert!(
        matches!(next_change(&mut stream).await, WatchEvent::Modified(c) if c.data.as_ref().is_some_and(|d| d["a"] == "2"))
    );
    assert!(
        matches!(next_change(&mut stream).await, WatchEvent::Deleted(c) if c.name_any() == "w1")
    );
    if env.server.is_some() {
        // Locally bookmarks come every 200 ms; a real server sends them about once a minute.
        loop {
            if let WatchEvent::Bookmark(b) = next_event(&mut stream).await {
                assert!(b.metadata.resource_version.parse::<u64>().expect("rv") > 0);
                break;
            }
        }
    }

    // resourceVersion=0: the current state as ADDED first, then changes; label-selected
    // watches see objects enter (ADDED) and leave (DELETED) the selection.
    let mut from_zero = api
        .watch(&WatchParams::default().labels("sel=yes"), "0")
        .await
        .expect("watch 0")
        .boxed();
    let mut labelled = cm("w2", json!({}));
    labelled.metadata.labels = Some([("sel".to_string(), "yes".to_string())].into());
    api.create(&PostParams::default(), &labelled)
        .await
        .expect("create w2");
    assert!(
        matches!(next_change(&mut from_zero).await, WatchEvent::Added(c) if c.name_any() == "w2")
    );
    api.patch(
        "w2",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"sel": "no"}}})),
    )
    .await
    .expect("unlabel");
    assert!(
        matches!(next_change(&mut from_zero).await, WatchEvent::Deleted(c) if c.name_any() == "w2")
    );
    let mut again = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch 0")
        .boxed();
    let mut names = Vec::new();
    for _ in 0..2 {
        if let WatchEvent::Added(c) = next_change(&mut again).await {
            names.push(c.name_any());
        }
    }
    names.sort();
    assert_eq!(names, ["w0", "w2"]);

    // Streaming list: initial ADDED events, then a BOOKMARK annotated initial-events-end.
    let wp = WatchParams::default().initial_events();
    let mut streaming = api.watch(&wp, "0").await.expect("streaming list").boxed();
    let mut added = 0;
    loop {
        match next_event(&mut streaming).await {
            WatchEvent::Added(_) => added += 1,
            WatchEvent::Bookmark(b)
                if b.metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str)
                    == Some("true") =>
            {
                break;
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(added, 2);

    // timeoutSeconds ends the stream.
    let start = Instant::now();
    let mut short = api
        .watch(&WatchParams::default().timeout(1), &from)
        .await
        .expect("short watch")
        .boxed();
    while tokio::time::timeout(TIMEOUT, short.next())
        .await
        .expect("ends in time")
        .is_some()
    {}
    assert!(start.elapsed() >= Duration::from_millis(900));
    env.cleanup().await;
}

#[tokio::test]
async fn watch_from_compacted_history_is_gone() {
    let env = env("gone").await;
    let Some(server) = env.local_only("compacting history") else {
        return env.cleanup().await;
    };
    let api: Api<ConfigMap> = env.api();
    let c = api
        .create(&PostParams::default(), &cm("g", json!({})))
        .await
        .expect("create");
    api.patch(
        "g",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "1"}})),
    )
    .await
    .expect("patch");
    server.faults().compact_history();
    let mut stream = api
        .watch(&WatchParams::default(), &c.resource_version().expect("rv"))
        .await
        .expect("watch")
        .boxed();
    match next_event(&mut stream).await {
        WatchEvent::Error(s) => assert_eq!((s.code, s.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410, got {other:?}"),
    }
    // A paged list whose continue token predates the compaction is 410 too.
    api.create(&PostParams::default(), &cm("h", json!({})))
        .await
        .expect("create");
    let page = api
        .list(&ListParams::default().limit(1))
        .await
        .expect("page");
    api.create(&PostParams::default(), &cm("i", json!({})))
        .await
        .expect("create");
    server.faults().compact_history();
    let token = page.metadata.continue_.expect("continue");
    let err = api_err(
        api.list(&ListParams::default().limit(1).continue_token(&token))
            .await
            .expect_err("expired"),
    );
    assert_eq!(err.code, 410);
    env.cleanup().await;
}

/// Drives a `kube::runtime::watcher` stream in the background, reporting its events.
fn spawn_watcher(
    api: Api<ConfigMap>,
    config: watcher::Config,
) -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stream = watcher(api, config).boxed();
        while let Some(ev) = stream.next().await {
            let line = match ev {
                Ok(watcher::Event::Init) => "init".to_string(),
                Ok(watcher::Event::InitApply(c)) => format!("initapply {}", c.name_any()),
                Ok(watcher::Event::InitDone) => "initdone".to_string(),
                Ok(watcher::Event::Apply(c)) => format!(
                    "apply {} {}",
                    c.name_any(),
                    c.data
                        .as_ref()
                        .and_then(|d| d.get("v"))
                        .cloned()
                        .unwrap_or_default()
                ),
                Ok(watcher::Event::Delete(c)) => format!("delete {}", c.name_any()),
                Err(e) => format!("error {e}"),
            };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

async fn expect_line(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    want: &str,
) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let line = tokio::time::timeout(TIMEOUT, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {want:?}; saw {seen:?}"))
            .expect("watcher alive");
        let done = line == want;
        seen.push(line);
        if done {
            return seen;
        }
    }
}

#[tokio::test]
async fn runtime_watcher_recovers_from_closed_watches_and_410() {
    let env = env("watcher").await;
    let Some(server) = env.local_only("fault injection") else {
        return env.cleanup().await;
    };
    let api: Api<ConfigMap> = env.api();
    api.create(&PostParams::default(), &cm("seed", json!({})))
        .await
        .expect("seed");
    for (mode, config) in [
        ("list-watch", watcher::Config::default()),
        (
            "streaming-list",
            watcher::Config::default().streaming_lists(),
        ),
    ] {
        let mut rx = spawn_watcher(api.clone(), config);
        expect_line(&mut rx, "initdone").await;
        let bump = |v: &'static str| {
            let api = api.clone();
            async move {
                api.patch(
                    "seed",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {"v": v}})),
                )
                .await
                .expect("patch");
            }
        };
        bump("1").await;
        expect_line(&mut rx, "apply seed 1").await;

        // Forced close: the watcher re-watches from its last resourceVersion, no re-list.
        server.faults().close_watches();
        bump("2").await;
        let seen = expect_line(&mut rx, "apply seed 2").await;
        assert!(
            !seen.contains(&"init".to_string()),
            "{mode}: no re-list after a plain close: {seen:?}"
        );

        // Watch closed while the server is paused, a write (through the handle, which is not
        // paused) and a compaction: the re-watch gets 410 and the watcher re-lists.
        server.faults().pause();
        server.faults().close_watches();
        let doc = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "seed", "namespace": env.ns}, "data": {"v": "3"}});
        server
            .apply_yaml(&doc.to_string())
            .expect("write through the handle");
        server.faults().compact_history();
        server.faults().resume();
        let seen = expect_line(&mut rx, "initdone").await;
        assert!(
            seen.iter().any(|l| l.starts_with("error")),
            "{mode}: saw the 410: {seen:?}"
        );
        assert!(
            seen.contains(&"init".to_string()),
            "{mode}: re-listed: {seen:?}"
        );
        bump("4").await;
        expect_line(&mut rx, "apply seed 4").await;
    }
    env.cleanup().await;
}

#[tokio::test]
async fn finalizers_delay_deletion_until_removed() {
    let env = env("finalizers").await;
    let api: Api<ConfigMap> = env.api();
    let mut c = cm("f", json!({}));
    c.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let created = api
        .create(&PostParams::default(), &c)
        .await
        .expect("create");
    let mut stream = api
        .watch(
            &WatchParams::default(),
            &created.resource_version().expect("rv"),
        )
        .await
        .expect("watch")
        .boxed();
    api.delete("f", &DeleteParams::default())
        .await
        .expect("delete");
    match next_change(&mut stream).await {
        WatchEvent::Modified(c) => assert!(c.metadata.deletion_timestamp.is_some()),
        other => panic!("expected MODIFIED with deletionTimestamp, got {other:?}"),
    }
    let pending = api.get("f").await.expect("still there");
    assert!(pending.metadata.deletion_timestamp.is_some());
    let err = api_err(
        api.patch(
            "f",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}}),
            ),
        )
        .await
        .expect_err("no new finalizers while deleting"),
    );
    assert_eq!(err.code, 422);
    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release");
    assert!(
        matches!(next_change(&mut stream).await, WatchEvent::Deleted(c) if c.name_any() == "f")
    );
    assert_eq!(api_err(api.get("f").await.expect_err("gone")).code, 404);
    env.cleanup().await;
}

#[tokio::test]
async fn owner_references_cascade_and_orphan() {
    let env = env("gc").await;
    let api: Api<ConfigMap> = env.api();
    for (owner, policy) in [
        ("owner-bg", DeleteParams::background()),
        ("owner-orphan", DeleteParams::orphan()),
    ] {
        let o = api
            .create(&PostParams::default(), &cm(owner, json!({})))
            .await
            .expect("owner");
        let mut dep = cm(&format!("{owner}-dep"), json!({}));
        dep.metadata.owner_references =
            Some(vec![serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": o.uid().expect("uid")
        })).expect("ownerRef")]);
        api.create(&PostParams::default(), &dep)
            .await
            .expect("dependent");
        api.delete(owner, &policy).await.expect("delete owner");
        let dep_name = format!("{owner}-dep");
        let orphan = owner == "owner-orphan";
        eventually("garbage collection", || {
            let api = api.clone();
            let dep_name = dep_name.clone();
            async move {
                match api.get_opt(&dep_name).await.expect("get") {
                    None => !orphan,
                    Some(d) => {
                        orphan
                            && api.get_opt(owner).await.expect("get").is_none()
                            && d.owner_references().is_empty()
                    }
                }
            }
        })
        .await;
    }
    env.cleanup().await;
}

/// Records one event about ConfigMap `subject` twice through
/// `kube::runtime::events::Recorder` (a POST, then a merge PATCH of its series); returns the
/// reference it was recorded about.
async fn record_twice(
    env: &Env,
    type_: kube::runtime::events::EventType,
    uid: Option<&str>,
) -> ObjectReference {
    let recorder = kube::runtime::events::Recorder::new(
        env.client.clone(),
        kube::runtime::events::Reporter {
            controller: "conformance".into(),
            instance: Some("pod-1".into()),
        },
    );
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: Some("subject".into()),
        namespace: Some(env.ns.clone()),
        uid: uid.map(str::to_owned),
        ..ObjectReference::default()
    };
    let ev = kube::runtime::events::Event {
        type_,
        reason: "Tested".into(),
        note: Some("hello".into()),
        action: "Test".into(),
        secondary: None,
    };
    recorder
        .publish(&ev, &reference)
        .await
        .expect("first publish (POST)");
    recorder
        .publish(&ev, &reference)
        .await
        .expect("second publish (merge PATCH of the series)");
    reference
}

#[tokio::test]
async fn events_recorder_leases_secrets_namespaces() {
    let env = env("kinds").await;
    record_twice(&env, kube::runtime::events::EventType::Normal, None).await;
    let events: Api<K8sEvent> = env.api();
    let list = events.list(&ListParams::default()).await.expect("events");
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].series.as_ref().map(|s| s.count), Some(2));
    assert_eq!(list.items[0].note.as_deref(), Some("hello"));

    let leases: Api<Lease> = env.api();
    let lease: Lease = serde_json::from_value(json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})).expect("lease");
    let l = leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("lease");
    let mut next = l.clone();
    next.spec.as_mut().expect("spec").holder_identity = Some("b".into());
    let l2 = leases
        .replace("leader", &PostParams::default(), &next)
        .await
        .expect("take over");
    assert_eq!(l2.spec.expect("spec").holder_identity.as_deref(), Some("b"));
    assert_eq!(
        api_err(
            leases
                .replace("leader", &PostParams::default(), &l)
                .await
                .expect_err("stale")
        )
        .code,
        409
    );

    let secrets: Api<Secret> = env.api();
    let s: Secret = serde_json::from_value(
        json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}),
    )
    .expect("secret");
    let s = secrets
        .create(&PostParams::default(), &s)
        .await
        .expect("secret");
    assert_eq!(s.data.expect("data")["password"].0, b"hunter2");
    assert_eq!(s.type_.as_deref(), Some("Opaque"));

    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    assert!(namespaces.get("default").await.is_ok(), "default exists");
    let ns_name = format!("{}-x", env.ns);
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns_name}})).expect("ns"),
        )
        .await
        .expect("ns");
    let inner: Api<ConfigMap> = Api::namespaced(env.client.clone(), &ns_name);
    inner
        .create(&PostParams::default(), &cm("content", json!({})))
        .await
        .expect("content");
    namespaces
        .delete(&ns_name, &DeleteParams::default())
        .await
        .expect("delete ns");
    eventually("namespace and content gone", || {
        let namespaces = namespaces.clone();
        let ns_name = ns_name.clone();
        async move {
            namespaces
                .get_opt(&ns_name)
                .await
                .expect("get ns")
                .is_none()
        }
    })
    .await;
    env.cleanup().await;
}

/// One store, two views: an events.k8s.io/v1 Event (what `kube::runtime::events::Recorder`
/// and the controller write) is a core/v1 Event too, so `kubectl describe` and `kubectl get
/// events --field-selector involvedObject.name=...` see it, and the reverse.
#[tokio::test]
async fn events_are_served_by_both_event_apis() {
    let env = env("event_views").await;
    let reference = record_twice(
        &env,
        kube::runtime::events::EventType::Warning,
        Some("0b5d1a8e-0000-4000-8000-000000000001"),
    )
    .await;
    let core: Api<CoreEvent> = env.api();
    let selected = core
        .list(&ListParams::default().fields("involvedObject.name=subject"))
        .await
        .expect("core/v1 events by involvedObject.name");
    assert_eq!(selected.items.len(), 1, "{selected:?}");
    let e = &selected.items[0];
    assert_eq!(e.involved_object, reference);
    assert_eq!(e.reason.as_deref(), Some("Tested"));
    assert_eq!(e.message.as_deref(), Some("hello"));
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(e.action.as_deref(), Some("Test"));
    assert_eq!(e.reporting_component.as_deref(), Some("conformance"));
    assert_eq!(e.reporting_instance.as_deref(), Some("pod-1"));
    assert_eq!(e.series.as_ref().and_then(|s| s.count), Some(2));
    assert!(e.event_time.is_some(), "eventTime carried over");
    let none = core
        .list(&ListParams::default().fields("involvedObject.name=other"))
        .await
        .expect("selected list");
    assert!(none.items.is_empty());

    // core/v1 → events.k8s.io/v1, and deleting through one view deletes the other.
    let written: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "legacy"},
        "involvedObject": {"kind": "ConfigMap", "name": "old-style", "namespace": env.ns},
        "reason": "Legacy", "message": "from core", "type": "Normal",
        "source": {"component": "old-recorder"}, "count": 3,
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:01:00Z",
    }))
    .expect("core event");
    core.create(&PostParams::default(), &written)
        .await
        .expect("create core/v1 event");
    let events: Api<K8sEvent> = env.api();
    let seen = events
        .get("legacy")
        .await
        .expect("read through events.k8s.io/v1");
    assert_eq!(
        seen.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("old-style")
    );
    assert_eq!(seen.note.as_deref(), Some("from core"));
    assert_eq!(seen.reason.as_deref(), Some("Legacy"));
    assert_eq!(seen.deprecated_count, Some(3));
    assert_eq!(
        seen.deprecated_source.and_then(|s| s.component).as_deref(),
        Some("old-recorder")
    );
    events
        .delete("legacy", &DeleteParams::default())
        .await
        .expect("delete through events.k8s.io/v1");
    assert!(core.get_opt("legacy").await.expect("get").is_none());
    env.cleanup().await;
}

/// The Status of a refused request (without printing a large object that was accepted).
fn refused<T>(r: Result<T, kube::Error>, what: &str) -> Box<kube::core::Status> {
    match r {
        Ok(_) => panic!("{what}: accepted, expected a refusal"),
        Err(e) => api_err(e),
    }
}

/// What kubectl met: a Secret with an empty `type` (kubectl's `create secret generic` body)
/// becomes Opaque; a ConfigMap or Secret holding more than 1 MiB is refused with 422.
#[tokio::test]
async fn secret_type_default_and_size_limits() {
    const LIMIT: usize = 1024 * 1024;
    let env = env("size_limits").await;
    let secrets: Api<Secret> = env.api();
    let s: Secret = serde_json::from_value(
        json!({"metadata": {"name": "empty-type"}, "type": "", "data": {"k": "dg=="}}),
    )
    .expect("secret");
    let s = secrets
        .create(&PostParams::default(), &s)
        .await
        .expect("create");
    assert_eq!(s.type_.as_deref(), Some("Opaque"));

    let cms: Api<ConfigMap> = env.api();
    cms.create(
        &PostParams::default(),
        &cm("at-limit", json!({"a": "x".repeat(LIMIT - 1), "b": "y"})),
    )
    .await
    .expect("exactly 1 MiB of values is allowed");
    let err = refused(
        cms.create(
            &PostParams::default(),
            &cm("too-big", json!({"a": "x".repeat(LIMIT), "b": "y"})),
        )
        .await,
        "a ConfigMap over 1 MiB",
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");
    assert!(
        err.message
            .contains("Too long: must have at most 1048576 bytes"),
        "{}",
        err.message
    );
    let grown = cms
        .patch(
            "at-limit",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"c": "z"}})),
        )
        .await;
    assert_eq!(refused(grown, "an update past 1 MiB").code, 422);

    let big: Secret = serde_json::from_value(
        json!({"metadata": {"name": "too-big"}, "stringData": {"k": "x".repeat(LIMIT + 1)}}),
    )
    .expect("secret");
    let err = refused(
        secrets.create(&PostParams::default(), &big).await,
        "a Secret over 1 MiB",
    );
    assert_eq!(err.code, 422, "{err:?}");
    assert!(
        err.message
            .contains("Too long: must have at most 1048576 bytes"),
        "{}",
        err.message
    );
    env.cleanup().await;
}

/// `kubectl auth can-i` and `kubectl auth whoami`: SelfSubjectAccessReview and
/// SelfSubjectReview are answered (201 with a status), not stored.
#[tokio::test]
async fn self_subject_reviews_are_answered() {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
    let env = env("self_reviews").await;
    let review: SelfSubjectAccessReview = serde_json::from_value(json!({
        "spec": {"resourceAttributes": {"verb": "create", "resource": "configmaps", "namespace": env.ns}}
    }))
    .expect("review");
    let answered = Api::<SelfSubjectAccessReview>::all(env.client.clone())
        .create(&PostParams::default(), &review)
        .await
        .expect("SelfSubjectAccessReview");
    assert!(answered.status.expect("status").allowed);
    assert_eq!(
        answered
            .spec
            .resource_attributes
            .and_then(|r| r.resource)
            .as_deref(),
        Some("configmaps"),
        "the request is answered back"
    );
    let neither: SelfSubjectAccessReview =
        serde_json::from_value(json!({"spec": {}})).expect("empty review");
    let err = refused(
        Api::<SelfSubjectAccessReview>::all(env.client.clone())
            .create(&PostParams::default(), &neither)
            .await,
        "a review of nothing",
    );
    assert_eq!(err.code, 422, "{err:?}");
    let whoami = Api::<SelfSubjectReview>::all(env.client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .expect("SelfSubjectReview");
    let user = whoami.status.and_then(|s| s.user_info).expect("userInfo");
    assert!(user.username.is_some_and(|u| !u.is_empty()), "a user name");
    env.cleanup().await;
}

#[tokio::test]
async fn metadata_only_requests() {
    let env = env("metadata").await;
    let api: Api<ConfigMap> = env.api();
    api.create(&PostParams::default(), &cm("m", json!({"big": "x"})))
        .await
        .expect("create");
    let list = api
        .list_metadata(&ListParams::default())
        .await
        .expect("list metadata");
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("m"));
    let one = api.get_metadata("m").await.expect("get metadata");
    assert!(one.metadata.uid.is_some());
    let mut stream = api
        .watch_metadata(&WatchParams::default(), "0")
        .await
        .expect("watch metadata")
        .boxed();
    assert!(
        matches!(next_change(&mut stream).await, WatchEvent::Added(m) if m.metadata.name.as_deref() == Some("m"))
    );
    env.cleanup().await;
}

#[tokio::test]
async fn fault_injection_fails_delays_and_pauses() {
    let env = env("faults").await;
    let Some(server) = env.local_only("fault injection") else {
        return env.cleanup().await;
    };
    let api: Api<ConfigMap> = env.api();
    let faults = server.faults();
    faults.fail_next(
        RequestMatch::verb(Verb::Create).resource("configmaps"),
        1,
        409,
    );
    let err = api_err(
        api.create(&PostParams::default(), &cm("a", json!({})))
            .await
            .expect_err("injected 409"),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    api.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .expect("only once");
    faults.fail_next(RequestMatch::verb(Verb::Get).name("a"), 1, 500);
    assert_eq!(api_err(api.get("a").await.expect_err("500")).code, 500);
    // kube::Client retries 503 by itself: three injected 503s are invisible to the caller.
    faults.fail_next(RequestMatch::verb(Verb::Get).name("a"), 3, 503);
    api.get("a").await.expect("retried through 503s");

    faults.delay(RequestMatch::verb(Verb::Patch), Duration::from_millis(300));
    let start = Instant::now();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .expect("delayed patch");
    assert!(start.elapsed() >= Duration::from_millis(300));
    faults.clear();

    faults.pause();
    let pending = tokio::spawn({
        let api = api.clone();
        async move { api.get("a").await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!pending.is_finished(), "requests hang while paused");
    faults.resume();
    tokio::time::timeout(TIMEOUT, pending)
        .await
        .expect("resumes")
        .expect("join")
        .expect("get after resume");
    env.cleanup().await;
}

#[tokio::test]
async fn persistence_survives_restart() {
    let env = env("persistence").await;
    if env.local_only("restarting the server").is_none() {
        return env.cleanup().await;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        data_dir: Some(dir.path().to_path_buf()),
        ..local_options()
    };
    let server = LocalApiServer::start(opts.clone()).await.expect("start");
    server.apply_crd(&bluegreen_crd().to_string()).expect("crd");
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let c = api
        .create(&PostParams::default(), &cm("kept", json!({"k": "v"})))
        .await
        .expect("create");
    bluegreen_api(&server.client(), "default")
        .create(
            &PostParams::default(),
            &bluegreen("kept", json!({"template": {}})),
        )
        .await
        .expect("CR");
    server.shutdown().await;
    let server = LocalApiServer::start(opts).await.expect("restart");
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let again = api.get("kept").await.expect("kept across restart");
    assert_eq!(again.uid(), c.uid());
    bluegreen_api(&server.client(), "default")
        .get("kept")
        .await
        .expect("CR kept");
    let next = api
        .create(&PostParams::default(), &cm("after", json!({})))
        .await
        .expect("create after restart");
    assert!(rv(&next) > rv(&again), "resourceVersion keeps increasing");
    server.shutdown().await;
    env.cleanup().await;
}
