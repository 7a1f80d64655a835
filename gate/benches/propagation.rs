//! Propagation and memory: a patch of the coordination ConfigMap on the local API server until
//! it is applied in 100 gates, with one shared watch per process vs one watch per gate, and the
//! heap bytes per gate in both layouts.
//!
//! `cargo bench -p bluegreen-gate --bench propagation` (a plain `main`, not criterion: it reports
//! latency percentiles and bytes). The API server runs in the same process on its own runtime,
//! whose threads are excluded from the allocation count.
#![allow(
    unsafe_code,
    reason = "a counting global allocator (GlobalAlloc is an unsafe trait) measures heap bytes per gate"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use bluegreen_gate::{ConfigMapSource, Gate, SharedState, StateOptions};
use bluegreen_local_apiserver::{LocalApiServer, Options};
use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle, configmap_name};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::mpsc;

struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

thread_local! {
    static EXCLUDED: Cell<bool> = const { Cell::new(false) };
}

fn counted() -> bool {
    !EXCLUDED.try_with(Cell::get).unwrap_or(true)
}

fn size(layout: Layout) -> i64 {
    i64::try_from(layout.size()).unwrap_or(i64::MAX)
}

// SAFETY: every call is forwarded unchanged to the system allocator; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() && counted() {
            LIVE.fetch_add(size(layout), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) };
        if counted() {
            LIVE.fetch_sub(size(layout), Ordering::Relaxed);
        }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const GATES: usize = 100;
const GATES_I64: i64 = 100;
const ROUNDS: usize = 60;
const NS: &str = "default";

fn running_with_delay(delay: u64) -> CoordinationState {
    CoordinationState::new(0, Stage::Running, Color::Blue, Toggle::NotSet)
        .with_deletion_delay_ms(delay)
}

async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// Waits until every state has applied `expected`.
async fn until_applied(states: &[Arc<SharedState>], expected: CoordinationState) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !states.iter().all(|s| s.current() == Some(expected)) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("every source applies the first state");
}

/// One task per gate: waits for its state to change, applies it (`refresh`), reports the time.
fn spawn_gate_tasks(gates: Vec<(Gate, Arc<SharedState>)>) -> mpsc::UnboundedReceiver<Instant> {
    let (tx, rx) = mpsc::unbounded_channel();
    for (mut gate, shared) in gates {
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut seen = shared.generation();
            loop {
                shared.changed(seen).await;
                seen = shared.generation();
                gate.refresh();
                if tx.send(Instant::now()).is_err() {
                    return;
                }
            }
        });
    }
    rx
}

/// Patches `ROUNDS` times and returns every (patch start → gate applied) latency.
async fn rounds(
    api: &Api<ConfigMap>,
    name: &str,
    rx: &mut mpsc::UnboundedReceiver<Instant>,
    delay: &mut u64,
) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(ROUNDS * GATES);
    for _ in 0..ROUNDS {
        *delay += 1;
        let data = serde_json::to_value(running_with_delay(*delay).to_data()).expect("json");
        let start = Instant::now();
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "data": data })),
        )
        .await
        .expect("patch");
        for _ in 0..GATES {
            let applied = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await
                .expect("every gate applies the patch")
                .expect("gate tasks run");
            latencies.push(applied.saturating_duration_since(start));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    latencies.sort();
    latencies
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an index into a short vector"
    )]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn report(name: &str, latencies: &[Duration], fixed: i64, per_gate: i64) {
    println!(
        "{name}: patch -> applied in {GATES} gates ({} observations): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; heap: {fixed} B per process + {per_gate} B per gate",
        latencies.len(),
        percentile(latencies, 0.50).as_secs_f64() * 1e3,
        percentile(latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` probes every bench target.
    }
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .on_thread_start(|| EXCLUDED.with(|e| e.set(true)))
        .build()
        .expect("server runtime");
    EXCLUDED.with(|e| e.set(true));
    let server = server_rt
        .block_on(LocalApiServer::start(Options::default()))
        .expect("start the local API server");
    EXCLUDED.with(|e| e.set(false));
    let config = server.config();
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("client runtime");
    client_rt.block_on(async move {
        let controller = kube::Client::try_from(config.clone()).expect("client");
        let api: Api<ConfigMap> = Api::namespaced(controller, NS);
        let name = configmap_name("bench");
        let mut delay = 0;
        api.create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..ObjectMeta::default()
                },
                data: Some(running_with_delay(delay).to_data()),
                ..ConfigMap::default()
            },
        )
        .await
        .expect("create");
        settle().await;

        // One shared watch per process.
        let before = LIVE.load(Ordering::Relaxed);
        let shared = SharedState::new(StateOptions::default());
        let client = kube::Client::try_from(config.clone()).expect("client");
        let source = ConfigMapSource::new(client, NS, &name, shared.clone()).spawn();
        until_applied(std::slice::from_ref(&shared), running_with_delay(delay)).await;
        settle().await;
        let with_source = LIVE.load(Ordering::Relaxed);
        let gates: Vec<(Gate, Arc<SharedState>)> = (0..GATES)
            .map(|_| (Gate::new(Color::Blue, shared.clone()), shared.clone()))
            .collect();
        let with_gates = LIVE.load(Ordering::Relaxed);
        let mut rx = spawn_gate_tasks(gates);
        let latencies = rounds(&api, &name, &mut rx, &mut delay).await;
        report(
            "one shared watch",
            &latencies,
            with_source - before,
            (with_gates - with_source) / GATES_I64,
        );
        source.abort();
        drop(rx);

        // One watch per gate (each subtask its own client, state and watch).
        let before = LIVE.load(Ordering::Relaxed);
        let mut sources = Vec::new();
        let mut gates = Vec::new();
        for _ in 0..GATES {
            let shared = SharedState::new(StateOptions::default());
            let client = kube::Client::try_from(config.clone()).expect("client");
            sources.push(ConfigMapSource::new(client, NS, &name, shared.clone()).spawn());
            gates.push((Gate::new(Color::Blue, shared.clone()), shared));
        }
        let states: Vec<Arc<SharedState>> = gates.iter().map(|(_, s)| s.clone()).collect();
        until_applied(&states, running_with_delay(delay)).await;
        settle().await;
        let after = LIVE.load(Ordering::Relaxed);
        drop(states);
        let mut rx = spawn_gate_tasks(gates);
        let latencies = rounds(&api, &name, &mut rx, &mut delay).await;
        report(
            "one watch per gate",
            &latencies,
            0,
            (after - before) / GATES_I64,
        );
        for source in sources {
            source.abort();
        }
    });
    drop(server);
}
