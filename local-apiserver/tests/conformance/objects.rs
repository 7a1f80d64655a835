//! Objects through `kube::Api`: create, replace, get and delete with their errors, lists with
//! selectors and pages, metadata-only requests, finalizers and owner references.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use super::common::*;

/// POSTs `body` as JSON to the test namespace's ConfigMaps, past kube's typed API.
async fn post_configmap(env: &Env, body: Vec<u8>) -> kube::Result<Value> {
    let req = http::Request::post(format!("/api/v1/namespaces/{}/configmaps", env.ns))
        .header("content-type", "application/json")
        .body(body)
        .expect("request");
    env.client.request::<Value>(req).await
}

#[tokio::test]
async fn configmap_crud_conflicts_and_status_errors() {
    let env = env("crud").await;
    let api: Api<ConfigMap> = env.api();
    let created = create(&api, &cm("a", json!({"k": "v"})), "create").await;
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

    let generated = create(
        &api,
        &serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).expect("cm"),
        "generateName",
    )
    .await;
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
    let err = api_err(
        post_configmap(&env, b"{not json".to_vec())
            .await
            .expect_err("malformed"),
    );
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    let ill_typed =
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"typed"},"data":{"n":5}}"#;
    let err = api_err(
        post_configmap(&env, ill_typed.to_vec())
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
        create(&api, &c, "create").await;
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
async fn metadata_only_requests() {
    let env = env("metadata").await;
    let api: Api<ConfigMap> = env.api();
    create(&api, &cm("m", json!({"big": "x"})), "create").await;
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
async fn finalizers_delay_deletion_until_removed() {
    let env = env("finalizers").await;
    let api: Api<ConfigMap> = env.api();
    let mut c = cm("f", json!({}));
    c.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let created = create(&api, &c, "create").await;
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
        merge(
            &api,
            "f",
            json!({"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}}),
        )
        .await
        .expect_err("no new finalizers while deleting"),
    );
    assert_eq!(err.code, 422);
    merge(&api, "f", json!({"metadata": {"finalizers": null}}))
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
        let o = create(&api, &cm(owner, json!({})), "owner").await;
        let mut dep = cm(&format!("{owner}-dep"), json!({}));
        dep.metadata.owner_references =
            Some(vec![serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": o.uid().expect("uid")
        })).expect("ownerRef")]);
        create(&api, &dep, "dependent").await;
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
