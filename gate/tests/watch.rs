//! The ConfigMap source against the local API server (`bluegreen_local_apiserver`): updates,
//! refused values, a forced watch drop, a `410 Gone` re-list, deletion, and staleness with a
//! paused server.

use std::sync::Arc;
use std::time::Duration;

use bluegreen_gate::{ConfigMapSource, Gate, SharedState, SourceOptions, StateOptions};
use bluegreen_local_apiserver::{LocalApiServer, Options};
use bluegreen_protocol::{Color, CoordinationState, Decision, Stage, Toggle, configmap_name, keys};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

const NS: &str = "default";

fn configmap(name: &str, state: &CoordinationState) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(state.to_data()),
        ..ConfigMap::default()
    }
}

async fn patch(api: &Api<ConfigMap>, name: &str, data: serde_json::Value) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "data": data })),
    )
    .await
    .expect("patch the ConfigMap");
}

async fn patch_state(api: &Api<ConfigMap>, name: &str, state: &CoordinationState) {
    patch(
        api,
        name,
        serde_json::to_value(state.to_data()).expect("json"),
    )
    .await;
}

/// Waits (at most 20 s) until `done` holds.
async fn until(what: &str, shared: &SharedState, done: impl Fn(&SharedState) -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let generation = shared.generation();
            if done(shared) {
                return;
            }
            tokio::select! {
                () = shared.changed(generation) => {}
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "timed out waiting for {what}; state {:?}, stats {:?}",
        shared.current(),
        shared.stats()
    );
}

async fn server() -> LocalApiServer {
    LocalApiServer::start(Options {
        // No bookmarks: the watcher's resourceVersion then stays behind writes to other objects,
        // which is what makes the forced 410 below deterministic.
        bookmark_interval: Duration::from_hours(1),
        ..Options::default()
    })
    .await
    .expect("start the local API server")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_follows_the_configmap_through_drops_410_and_deletion() {
    let server = server().await;
    let client = server.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let name = configmap_name("orders");
    let first = CoordinationState::new(1, Stage::Running, Color::Blue, Toggle::NotSet);
    api.create(&PostParams::default(), &configmap(&name, &first))
        .await
        .expect("create");

    let shared = SharedState::new(StateOptions::default());
    let source = ConfigMapSource::new(client.clone(), NS, &name, shared.clone()).spawn();
    let mut blue = Gate::new(Color::Blue, shared.clone());
    let mut green = Gate::new(Color::Green, shared.clone());
    until("the first state", &shared, |s| s.current() == Some(first)).await;
    assert_eq!(
        (blue.decide(5), green.decide(5)),
        (Decision::Pass, Decision::Drop)
    );

    // An update.
    let proposed =
        CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::Proposed(100));
    patch_state(&api, &name, &proposed).await;
    until("the proposal", &shared, |s| s.current() == Some(proposed)).await;
    assert_eq!(
        (blue.decide(100), blue.decide(101)),
        (Decision::Pass, Decision::Hold)
    );

    // An invalid value is refused, then a valid one applied.
    patch(
        &api,
        &name,
        serde_json::json!({ keys::WATERMARK_TOGGLE_VALUE: "1e3" }),
    )
    .await;
    until("the refusal", &shared, |s| s.stats().rejected_total() == 1).await;
    assert_eq!(
        shared.stats().updates_rejected.get("InvalidValue"),
        Some(&1)
    );
    assert_eq!(shared.current(), Some(proposed));
    let raised =
        CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::Proposed(150));
    patch_state(&api, &name, &raised).await;
    until("the raise", &shared, |s| s.current() == Some(raised)).await;

    // A stale value written by someone else is refused (W may not fall).
    patch_state(&api, &name, &proposed).await;
    until("the second refusal", &shared, |s| {
        s.stats().rejected_total() == 2
    })
    .await;
    assert_eq!(shared.current(), Some(raised));

    // Forced watch drop: the watcher resumes and sees the next update.
    server.faults().close_watches();
    let set = CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::Set(150));
    patch_state(&api, &name, &set).await;
    until("W set after a watch drop", &shared, |s| {
        s.current() == Some(set)
    })
    .await;
    assert_eq!(
        (blue.decide(151), green.decide(151)),
        (Decision::Drop, Decision::Pass)
    );

    // 410: a write the watch does not see (another object) moves the resourceVersion on, the
    // history is compacted and the watch closed, so the watcher's resume gets 410 Gone and it
    // re-lists.
    let restarts = shared.stats().watch_restarts;
    api.create(&PostParams::default(), &configmap("unrelated", &first))
        .await
        .expect("create another ConfigMap");
    server.faults().compact_history();
    server.faults().close_watches();
    until("a re-list after 410", &shared, |s| {
        s.stats().watch_restarts > restarts
    })
    .await;
    let teardown =
        CoordinationState::new(2, Stage::ClearToTeardown, Color::Green, Toggle::Set(150));
    patch_state(&api, &name, &teardown).await;
    until("the update after the re-list", &shared, |s| {
        s.current() == Some(teardown)
    })
    .await;
    assert!(
        shared.stats().watch_errors >= 1,
        "the 410 is reported as a watch error"
    );

    // Deletion keeps the last good state; a re-created ConfigMap is followed again.
    api.delete(&name, &DeleteParams::default())
        .await
        .expect("delete");
    until("the deletion", &shared, |s| s.stats().deletions >= 1).await;
    assert_eq!(shared.current(), Some(teardown));
    assert_eq!(green.decide(151), Decision::Pass);
    // Completing the handover makes W the floor.
    let running = CoordinationState::new(2, Stage::Running, Color::Green, Toggle::NotSet)
        .with_floor(Some(150));
    api.create(&PostParams::default(), &configmap(&name, &running))
        .await
        .expect("re-create");
    until("the re-created ConfigMap", &shared, |s| {
        s.current() == Some(running)
    })
    .await;
    assert_eq!(
        (green.decide(151), green.decide(150)),
        (Decision::Pass, Decision::Drop)
    );

    source.abort();
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_watch_is_confirmed_by_probes_and_an_unreachable_server_makes_it_stale() {
    let server = server().await;
    let client = server.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let name = configmap_name("payments");
    let transitioning =
        CoordinationState::new(3, Stage::Transitioning, Color::Blue, Toggle::NotSet);
    api.create(&PostParams::default(), &configmap(&name, &transitioning))
        .await
        .expect("create");
    let shared = SharedState::new(StateOptions {
        max_staleness: Some(Duration::from_millis(600)),
    });
    let source = ConfigMapSource::new(client, NS, &name, Arc::clone(&shared))
        .with_options(SourceOptions {
            probe_interval: Duration::from_millis(100),
        })
        .spawn();
    let mut green = Gate::new(Color::Green, shared.clone());
    until("the first state", &shared, |s| {
        s.current() == Some(transitioning)
    })
    .await;

    // Nothing changes for several bounds: probes keep the view fresh.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(shared.stats().probes >= 3, "probes: {:?}", shared.stats());
    assert!(!shared.is_stale());
    assert_eq!(
        green.decide(1),
        Decision::Pass,
        "outgoing color passes while NOT_SET"
    );

    // The API server stops answering: the view goes stale and the gate holds.
    server.faults().pause();
    until("staleness", &shared, SharedState::is_stale).await;
    assert_eq!(green.decide(1), Decision::Hold);
    server.faults().resume();
    until("a confirmation", &shared, |s| !s.is_stale()).await;
    assert_eq!(green.decide(1), Decision::Pass);
    source.abort();
}
