//! What only the local server has: fault injection and persistence across restarts.

use std::time::Duration;
use std::time::Instant;

use bluegreen_local_apiserver::{LocalApiServer, Options, RequestMatch, Verb};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

use kube::ResourceExt;

use super::common::*;

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
    create(&api, &cm("a", json!({})), "only once").await;
    faults.fail_next(RequestMatch::verb(Verb::Get).name("a"), 1, 500);
    assert_eq!(api_err(api.get("a").await.expect_err("500")).code, 500);
    // kube::Client retries 503 by itself: three injected 503s are invisible to the caller.
    faults.fail_next(RequestMatch::verb(Verb::Get).name("a"), 3, 503);
    api.get("a").await.expect("retried through 503s");

    faults.delay(RequestMatch::verb(Verb::Patch), Duration::from_millis(300));
    let start = Instant::now();
    merge(&api, "a", json!({"data": {"k": "v"}}))
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
    let c = create(&api, &cm("kept", json!({"k": "v"})), "create").await;
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
    let next = create(&api, &cm("after", json!({})), "create after restart").await;
    assert!(rv(&next) > rv(&again), "resourceVersion keeps increasing");
    server.shutdown().await;
    env.cleanup().await;
}
