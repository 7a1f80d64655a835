//! Watch fan-out of the local API server: one ConfigMap patch delivered to 100 concurrent
//! `kube` watchers (p50/p99 delivery latency), and the sustained patch rate with 100 watchers
//! compared to none, in the same run.
//!
//! `cargo bench -p bluegreen-local-apiserver --bench watch_fanout` (a plain binary, `harness = false`;
//! without `--bench`, e.g. under `cargo test --benches`, it runs a tiny smoke version).
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "benchmark arithmetic on small counts"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bluegreen_local_apiserver::{LocalApiServer, Options};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use tokio::sync::mpsc;

struct Sizes {
    watchers: usize,
    fanout_patches: usize,
    sustained: Duration,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[idx]
}

/// Starts `n` watchers from `rv`; each reports `(seq, receive time)` for every MODIFIED event.
async fn start_watchers(
    client: &Client,
    n: usize,
    rv: &str,
    epoch: Instant,
) -> mpsc::UnboundedReceiver<(u64, Duration)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let ready = Arc::new(AtomicU64::new(0));
    for _ in 0..n {
        // One client per watcher: separate connections, like separate processes.
        let api: Api<ConfigMap> = Api::namespaced(
            Client::try_from(client_config(client)).expect("client"),
            "default",
        );
        let tx = tx.clone();
        let rv = rv.to_string();
        let ready = Arc::clone(&ready);
        tokio::spawn(async move {
            let mut stream = api
                .watch(&WatchParams::default().fields("metadata.name=hot"), &rv)
                .await
                .expect("watch")
                .boxed();
            ready.fetch_add(1, Ordering::SeqCst);
            while let Some(ev) = stream.next().await {
                if let Ok(WatchEvent::Modified(cm)) = ev {
                    let seq = cm
                        .data
                        .as_ref()
                        .and_then(|d| d.get("seq"))
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    if tx.send((seq, epoch.elapsed())).is_err() {
                        return;
                    }
                }
            }
        });
    }
    while ready.load(Ordering::SeqCst) < n as u64 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    rx
}

static CONFIG_URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn client_config(_c: &Client) -> kube::Config {
    kube::Config::new(CONFIG_URL.get().expect("set in main").parse().expect("url"))
}

async fn patch(api: &Api<ConfigMap>, seq: u64) {
    api.patch(
        "hot",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"seq": seq.to_string()}})),
    )
    .await
    .expect("patch");
}

/// Patches as fast as one writer can for `d`; returns patches per second.
async fn sustained(api: &Api<ConfigMap>, first_seq: u64, d: Duration) -> (u64, f64) {
    let start = Instant::now();
    let mut seq = first_seq;
    while start.elapsed() < d {
        patch(api, seq).await;
        seq += 1;
    }
    let n = seq - first_seq;
    (seq, n as f64 / start.elapsed().as_secs_f64())
}

async fn run(sizes: Sizes) {
    let server = LocalApiServer::start(Options::default())
        .await
        .expect("server");
    CONFIG_URL.set(server.url()).expect("once");
    let client = server.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "hot"}, "data": {"seq": "0"}}))
            .expect("cm");
    let created = api
        .create(&PostParams::default(), &cm)
        .await
        .expect("create");
    let epoch = Instant::now();

    // Baseline: sustained patch rate with no watchers.
    let (mut seq, rate_alone) = sustained(&api, 1, sizes.sustained).await;

    let rv = api
        .get("hot")
        .await
        .expect("get")
        .resource_version()
        .unwrap_or_else(|| created.resource_version().expect("rv"));
    let mut rx = start_watchers(&client, sizes.watchers, &rv, epoch).await;

    // Fan-out latency: one patch at a time, wait until every watcher has it.
    let mut per_watcher = Vec::new();
    let mut last_watcher = Vec::new();
    for _ in 0..sizes.fanout_patches {
        let sent = epoch.elapsed();
        patch(&api, seq).await;
        let mut got = 0;
        let mut slowest = Duration::ZERO;
        while got < sizes.watchers {
            let (s, at) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await
                .expect("delivery in time")
                .expect("watchers alive");
            if s == seq {
                got += 1;
                let lat = at.saturating_sub(sent);
                slowest = slowest.max(lat);
                per_watcher.push(lat.as_secs_f64() * 1e6);
            }
        }
        last_watcher.push(slowest.as_secs_f64() * 1e6);
        seq += 1;
    }
    per_watcher.sort_by(f64::total_cmp);
    last_watcher.sort_by(f64::total_cmp);

    // Sustained patch rate with the watchers attached; count deliveries meanwhile.
    let drain = tokio::spawn(async move {
        let mut n = 0u64;
        while let Ok(Some(_)) = tokio::time::timeout(Duration::from_secs(2), rx.recv()).await {
            n += 1;
        }
        n
    });
    let first = seq;
    let (end, rate_watched) = sustained(&api, first, sizes.sustained).await;
    let delivered = drain.await.expect("drain");
    let expected = (end - first) * sizes.watchers as u64;

    println!(
        "watch fan-out, local API server, {} watchers (kube::Api::watch, one connection each)",
        sizes.watchers
    );
    println!(
        "  one patch -> all watchers, {} patches: per-watcher delivery latency p50 {:.0} us, p99 {:.0} us; \
         last watcher p50 {:.0} us, p99 {:.0} us",
        sizes.fanout_patches,
        percentile(&per_watcher, 0.5),
        percentile(&per_watcher, 0.99),
        percentile(&last_watcher, 0.5),
        percentile(&last_watcher, 0.99),
    );
    println!(
        "  sustained patches (one sequential writer, {:?}): {:.0}/s with no watchers, {:.0}/s with {} watchers (ratio {:.2}); \
         {} of {} events delivered ({:.0} events/s)",
        sizes.sustained,
        rate_alone,
        rate_watched,
        sizes.watchers,
        rate_watched / rate_alone,
        delivered,
        expected,
        delivered as f64 / sizes.sustained.as_secs_f64(),
    );
    assert_eq!(delivered, expected, "every watcher got every event");
    server.shutdown().await;
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes = if full {
        Sizes {
            watchers: 100,
            fanout_patches: 200,
            sustained: Duration::from_secs(5),
        }
    } else {
        Sizes {
            watchers: 5,
            fanout_patches: 5,
            sustained: Duration::from_millis(200),
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(sizes));
}
