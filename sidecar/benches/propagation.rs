//! State change → JVM-side client has it, through the sidecar's long-poll (docs/performance.md,
//! "JNI shim and sidecar"). The client is a Rust loop doing exactly what `SidecarStateSource`
//! does (GET /v1/state?since=…&wait=30000ms, again on every answer).
//!
//! `cargo bench -p bluegreen-sidecar --bench propagation [-- UPDATES]`
//!
//! Two paths, sequential updates (the next one after the client saw the previous):
//! 1. `offer_data` into the sidecar's `SharedState` → client: the sidecar alone (wake + HTTP).
//! 2. ConfigMap patch on the local API server → watch → sidecar → client: the whole chain.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bluegreen_gate::{ConfigMapSource, SharedState, StateOptions};
use bluegreen_local_apiserver::{LocalApiServer, Options};
use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle, configmap_name};
use bluegreen_sidecar::{Sidecar, SidecarOptions, StateBody};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::mpsc;

fn proposed(w: i64) -> CoordinationState {
    CoordinationState {
        floor: None,
        active: Color::Green,
        deletion_delay_ms: 0,
        stage: Stage::Transitioning,
        toggle: Toggle::Proposed(w),
        epoch: 1,
    }
}

/// Serves `shared` on a free port; returns its base URL.
async fn serve(shared: Arc<SharedState>) -> String {
    let sidecar = Sidecar::new(shared, SidecarOptions::default()).expect("sidecar");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(sidecar.serve(listener, std::future::pending()));
    base
}

/// The JVM client's loop: every 200 is sent on with the instant it arrived.
fn poll(base: String) -> mpsc::UnboundedReceiver<(Instant, i64)> {
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let http = reqwest::Client::new();
        let mut since = String::new();
        loop {
            let response = http
                .get(format!("{base}/v1/state?since={since}&wait=30000ms"))
                .send()
                .await
                .expect("request");
            if response.status().as_u16() != 200 {
                continue;
            }
            let body: StateBody = response.json().await.expect("body");
            let now = Instant::now();
            since = body.revision;
            let w = body.configmap["watermark-toggle-value"].parse().expect("W");
            if sender.send((now, w)).is_err() {
                return;
            }
        }
    });
    receiver
}

/// Applies W = 1..=updates one after the other with `apply`, returning the latencies.
async fn measure<F, Fut>(
    updates: i64,
    seen: &mut mpsc::UnboundedReceiver<(Instant, i64)>,
    apply: F,
) -> Vec<Duration>
where
    F: Fn(i64) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut latencies = Vec::new();
    for w in 1..=updates {
        let started = Instant::now();
        apply(w).await;
        loop {
            let (at, got) = tokio::time::timeout(Duration::from_secs(10), seen.recv())
                .await
                .expect("the client sees the update within 10 s")
                .expect("client running");
            if got == w {
                latencies.push(at - started);
                break;
            }
        }
    }
    latencies
}

fn report(what: &str, mut latencies: Vec<Duration>) {
    latencies.sort();
    let last = latencies.len() - 1;
    let micros = |q: usize| latencies[last * q / 100].as_secs_f64() * 1e6;
    println!(
        "{what}: p50 {:.0} us, p99 {:.0} us, max {:.0} us ({} updates)",
        micros(50),
        micros(99),
        micros(100),
        latencies.len()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let updates: i64 = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(1000);

    // 1. The sidecar alone.
    let shared = SharedState::new(StateOptions::default());
    shared
        .offer_data(&proposed(0).to_data())
        .expect("first state");
    let mut seen = poll(serve(shared.clone()).await);
    seen.recv().await.expect("first state");
    let latencies = measure(updates, &mut seen, |w| {
        let shared = shared.clone();
        async move {
            shared.offer_data(&proposed(w).to_data()).expect("offer");
        }
    })
    .await;
    report("offer -> sidecar long-poll client", latencies);

    // 2. The whole chain from the API server.
    let server = LocalApiServer::start(Options::default())
        .await
        .expect("API server");
    let client = server.client();
    let name = configmap_name("orders");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let configmap = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..ObjectMeta::default()
        },
        data: Some(proposed(0).to_data()),
        ..ConfigMap::default()
    };
    api.create(&PostParams::default(), &configmap)
        .await
        .expect("create");
    let shared = SharedState::new(StateOptions::default());
    ConfigMapSource::new(client, "default", &name, shared.clone()).spawn();
    let mut seen = poll(serve(shared).await);
    seen.recv().await.expect("first state");
    let latencies = measure(updates, &mut seen, |w| {
        let api = api.clone();
        let name = name.clone();
        async move {
            let patch = serde_json::json!({ "data": { "watermark-toggle-value": w.to_string() } });
            api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .expect("patch");
        }
    })
    .await;
    report(
        "ConfigMap patch -> watch -> sidecar long-poll client",
        latencies,
    );
}
