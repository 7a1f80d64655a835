//! The ConfigMap source (what the sidecar and the JNI shim run) needs nothing but a Role naming
//! its one ConfigMap (`resourceNames`, the Role the controller creates): every request it sends is
//! for that name. Kubernetes takes a request's name from its path (`get`) or, for a `list` or
//! `watch` of the collection, from a field selector that requires `metadata.name=<name>`
//! (k8s.io/apiserver `RequestInfoFactory`); a list or watch without one is authorised for every
//! ConfigMap of the namespace and a `resourceNames` rule refuses it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bluegreen_gate::{ConfigMapSource, SharedState, SourceOptions, StateOptions};
use bluegreen_local_apiserver::{LocalApiServer, Options};
use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle, configmap_name};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::client::{Body, ClientBuilder};
use tower::util::MapRequestLayer;

const NS: &str = "default";

/// Every request a client sent: method, path and query.
type Log = Arc<Mutex<Vec<(http::Method, String, Option<String>)>>>;

/// A client of `server` that records every request.
fn recording_client(server: &LocalApiServer) -> (kube::Client, Log) {
    let log: Log = Arc::default();
    let sink = Arc::clone(&log);
    let record = MapRequestLayer::new(move |request: http::Request<Body>| {
        let uri = request.uri();
        sink.lock().expect("log").push((
            request.method().clone(),
            uri.path().to_owned(),
            uri.query().map(str::to_owned),
        ));
        request
    });
    let client = ClientBuilder::try_from(server.config())
        .expect("a client of the local API server")
        .with_layer(&record)
        .build();
    (client, log)
}

/// The verb and name the API server authorises a ConfigMap request in `NS` as (`None`: not a
/// ConfigMap request there).
fn authorised_as(
    method: &http::Method,
    path: &str,
    query: Option<&str>,
) -> Option<(String, String)> {
    let collection = format!("/api/v1/namespaces/{NS}/configmaps");
    let rest = path.strip_prefix(&collection)?;
    if let Some(name) = rest.strip_prefix('/') {
        let verb = if *method == http::Method::GET {
            "get"
        } else {
            "write"
        };
        return Some((verb.to_owned(), name.to_owned()));
    }
    let params: Vec<(String, String)> =
        form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let watch = params
        .iter()
        .any(|(k, v)| k == "watch" && (v == "true" || v == "1"));
    let name = params
        .iter()
        .filter(|(k, _)| k == "fieldSelector")
        .flat_map(|(_, selector)| selector.split(','))
        .find_map(|term| {
            term.strip_prefix("metadata.name==")
                .or_else(|| term.strip_prefix("metadata.name="))
                .map(str::to_owned)
        })
        .unwrap_or_default();
    Some((if watch { "watch" } else { "list" }.to_owned(), name))
}

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

/// Waits (at most 20 s) until `done` holds.
async fn until(what: &str, shared: &SharedState, done: impl Fn(&SharedState) -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(20), async {
        while !done(shared) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "timed out waiting for {what}: {:?}",
        shared.stats()
    );
}

#[test]
fn a_list_or_watch_is_authorised_for_the_name_its_field_selector_requires() {
    let get = http::Method::GET;
    let path = format!("/api/v1/namespaces/{NS}/configmaps");
    for (query, expected) in [
        (
            "fieldSelector=metadata.name%3Dorders-bluegreen",
            ("list", "orders-bluegreen"),
        ),
        (
            "fieldSelector=metadata.name%3D%3Dorders-bluegreen&watch=true",
            ("watch", "orders-bluegreen"),
        ),
        ("labelSelector=app%3Dx", ("list", "")),
        ("watch=1", ("watch", "")),
    ] {
        assert_eq!(
            authorised_as(&get, &path, Some(query)),
            Some((expected.0.to_owned(), expected.1.to_owned())),
            "{query}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_the_configmap_source_names_its_configmap() {
    let server = LocalApiServer::start(Options {
        // No bookmarks, so that the forced 410 below is deterministic (as in watch.rs).
        bookmark_interval: Duration::from_hours(1),
        ..Options::default()
    })
    .await
    .expect("start the local API server");
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    let name = configmap_name("orders");
    let running = CoordinationState {
        floor: None,
        active: Color::Blue,
        deletion_delay_ms: 0,
        stage: Stage::Running,
        toggle: Toggle::NotSet,
        epoch: 1,
    };
    api.create(&PostParams::default(), &configmap(&name, &running))
        .await
        .expect("create");
    api.create(
        &PostParams::default(),
        &configmap("payments-bluegreen", &running),
    )
    .await
    .expect("create another");

    let (client, log) = recording_client(&server);
    let shared = SharedState::new(StateOptions::default());
    let source = ConfigMapSource::new(client, NS, &name, Arc::clone(&shared))
        .with_options(SourceOptions {
            probe_interval: Duration::from_millis(100),
        })
        .spawn();
    until("the first state", &shared, |s| s.current() == Some(running)).await;
    // Quiet: probes (`get`) confirm it.
    until("probes", &shared, |s| s.stats().probes >= 2).await;
    // A change through the watch.
    let transitioning = CoordinationState {
        stage: Stage::Transitioning,
        active: Color::Green,
        epoch: 2,
        ..running
    };
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": transitioning.to_data()})),
    )
    .await
    .expect("patch");
    until("the update", &shared, |s| {
        s.current() == Some(transitioning)
    })
    .await;
    // A 410 Gone: the watcher lists again.
    let restarts = shared.stats().watch_restarts;
    api.create(&PostParams::default(), &configmap("unrelated", &running))
        .await
        .expect("create another");
    server.faults().compact_history();
    server.faults().close_watches();
    until("a re-list", &shared, |s| {
        s.stats().watch_restarts > restarts
    })
    .await;
    source.abort();

    let requests = log.lock().expect("log").clone();
    let mut verbs = std::collections::BTreeSet::new();
    for (method, path, query) in &requests {
        let (verb, authorised) = authorised_as(method, path, query.as_deref())
            .unwrap_or_else(|| panic!("not a ConfigMap request in {NS}: {method} {path}"));
        assert_eq!(
            authorised,
            name,
            "{method} {path}?{} is not for {name}: a Role with resourceNames: [{name}] refuses it",
            query.as_deref().unwrap_or_default()
        );
        assert!(["get", "list", "watch"].contains(&verb.as_str()), "{verb}");
        verbs.insert(verb);
    }
    assert_eq!(
        verbs.into_iter().collect::<Vec<_>>(),
        ["get", "list", "watch"],
        "{requests:?}"
    );
    server.shutdown().await;
}
