//! Watches: changes, bookmarks, initial events, `410 Gone` after compaction, and
//! `kube::runtime::watcher` recovering from closed watches.

use std::time::Duration;
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use serde_json::json;

use kube::ResourceExt;

use super::common::*;

#[tokio::test]
async fn watch_streams_changes_bookmarks_and_initial_events() {
    let env = env("watch").await;
    let api: Api<ConfigMap> = env.api();
    let first = create(&api, &cm("w0", json!({})), "create").await;
    let from = first.resource_version().expect("rv");

    let mut stream = api
        .watch(&WatchParams::default(), &from)
        .await
        .expect("watch")
        .boxed();
    create(&api, &cm("w1", json!({"a": "1"})), "create w1").await;
    merge(&api, "w1", json!({"data": {"a": "2"}}))
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
    create(&api, &labelled, "create w2").await;
    assert!(
        matches!(next_change(&mut from_zero).await, WatchEvent::Added(c) if c.name_any() == "w2")
    );
    merge(&api, "w2", json!({"metadata": {"labels": {"sel": "no"}}}))
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
    let c = create(&api, &cm("g", json!({})), "create").await;
    merge(&api, "g", json!({"data": {"a": "1"}}))
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
    create(&api, &cm("h", json!({})), "create").await;
    let page = api
        .list(&ListParams::default().limit(1))
        .await
        .expect("page");
    create(&api, &cm("i", json!({})), "create").await;
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
    create(&api, &cm("seed", json!({})), "seed").await;
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
                merge(&api, "seed", json!({"data": {"v": v}}))
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
