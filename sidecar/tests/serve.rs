//! The sidecar against the local API server: the HTTP contract of docs/jvm.md end to end
//! (ConfigMap → watch → `SharedState` → `GET /v1/state`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bluegreen_gate::{ConfigMapSource, SharedState, StateOptions};
use bluegreen_local_apiserver::{LocalApiServer, Options};
use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle, configmap_name};
use bluegreen_sidecar::{Sidecar, SidecarOptions, StateBody};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::oneshot;

const NS: &str = "default";
/// Every wait on a condition is bounded by this.
const BOUND: Duration = Duration::from_secs(10);

fn running_blue() -> CoordinationState {
    CoordinationState::new(1, Stage::Running, Color::Blue, Toggle::NotSet)
}

/// A local API server, a ConfigMap source and a sidecar serving on a free loopback port.
struct Fixture {
    _server: LocalApiServer,
    api: Api<ConfigMap>,
    name: String,
    shared: Arc<SharedState>,
    base: String,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    serving: tokio::task::JoinHandle<Result<(), bluegreen_sidecar::Error>>,
}

impl Fixture {
    async fn start() -> Self {
        let server = LocalApiServer::start(Options::default())
            .await
            .expect("start the local API server");
        let client = server.client();
        let name = configmap_name("orders");
        let shared = SharedState::new(StateOptions::default());
        ConfigMapSource::new(client.clone(), NS, &name, shared.clone()).spawn();
        let sidecar = Sidecar::new(
            shared.clone(),
            SidecarOptions {
                color: Some(Color::Green),
                ..SidecarOptions::default()
            },
        )
        .expect("sidecar");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let (stop, stopped) = oneshot::channel();
        let serving = tokio::spawn(sidecar.serve(listener, async {
            let _ = stopped.await;
        }));
        Self {
            _server: server,
            api: Api::namespaced(client, NS),
            name,
            shared,
            base,
            http: reqwest::Client::new(),
            stop: Some(stop),
            serving,
        }
    }

    async fn create(&self, data: BTreeMap<String, String>) {
        let configmap = ConfigMap {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            data: Some(data),
            ..ConfigMap::default()
        };
        self.api
            .create(&PostParams::default(), &configmap)
            .await
            .expect("create the ConfigMap");
    }

    async fn patch(&self, data: serde_json::Value) {
        self.api
            .patch(
                &self.name,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({ "data": data })),
            )
            .await
            .expect("patch the ConfigMap");
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("request")
    }

    /// `GET /v1/state`, returning the status and, for a 200, the body.
    async fn state(&self, query: &str) -> (u16, Option<StateBody>) {
        let response = self.get(&format!("/v1/state?{query}")).await;
        let status = response.status().as_u16();
        let body = if status == 200 {
            Some(response.json().await.expect("a StateBody"))
        } else {
            None
        };
        (status, body)
    }

    /// Waits (bounded) for the first state through a long-poll, as a JVM does.
    async fn first_state(&self) -> StateBody {
        let (status, body) = self.state("wait=10000ms").await;
        assert_eq!(status, 200, "the first state within the wait");
        body.expect("a body")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_any_state_it_answers_503_and_is_live_but_not_ready() {
    let fixture = Fixture::start().await;
    let started = Instant::now();
    let response = fixture.get("/v1/state?wait=100ms").await;
    assert_eq!(response.status().as_u16(), 503);
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "waited for a first state"
    );
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["error"], "no state yet");
    assert_eq!(fixture.get("/healthz").await.status().as_u16(), 200);
    assert_eq!(fixture.get("/readyz").await.status().as_u16(), 503);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_the_raw_configmap_once_created_and_becomes_ready() {
    let fixture = Fixture::start().await;
    let mut data = running_blue().to_data();
    data.insert("is-first-deployment".into(), "true".into());
    // A JVM that asks before the ConfigMap exists is answered as soon as it appears.
    let (first, ()) = tokio::join!(fixture.first_state(), fixture.create(data.clone()));
    assert_eq!(first.configmap, data, "verbatim, unknown keys included");
    assert_eq!(first.epoch, "1");
    assert!(!first.revision.is_empty());
    assert!(!first.stale);
    assert_eq!(fixture.get("/readyz").await.status().as_u16(), 200);
    // A revision this sidecar never issued (e.g. from before a restart) is answered at once.
    let (status, body) = fixture.state("since=12345&wait=30000ms").await;
    assert_eq!((status, body), (200, Some(first)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_wakes_up_on_a_patch_within_the_epoch() {
    let fixture = Fixture::start().await;
    fixture.create(running_blue().to_data()).await;
    let first = fixture.first_state().await;
    fixture
        .patch(serde_json::json!({
            "epoch": "2", "stage": "TRANSITIONING", "active-deployment-type": "GREEN",
        }))
        .await;
    let transitioning = {
        let (status, body) = fixture
            .state(&format!("since={}&wait=10000ms", first.revision))
            .await;
        assert_eq!(status, 200);
        body.expect("body")
    };
    assert_eq!(transitioning.configmap["stage"], "TRANSITIONING");

    // W proposed: same epoch, so only the revision tells the JVM something changed.
    let query = format!("since={}&wait=20000ms", transitioning.revision);
    let poll = fixture.state(&query);
    let patch = async {
        // Let the poll reach the sidecar first (it is correct either way: a patch that lands
        // earlier is answered at once because the revision already differs).
        tokio::time::sleep(Duration::from_millis(50)).await;
        fixture
            .patch(serde_json::json!({
                "watermark-stage": "WAITING_FOR_WATERMARK", "watermark-toggle-value": "1000",
            }))
            .await;
        Instant::now()
    };
    let ((status, body), patched_at) = tokio::join!(poll, patch);
    let woke_after = patched_at.elapsed();
    assert_eq!(status, 200);
    let body = body.expect("body");
    assert_eq!(body.epoch, "2");
    assert_eq!(body.configmap["watermark-toggle-value"], "1000");
    assert_ne!(body.revision, transitioning.revision);
    assert!(
        woke_after < Duration::from_secs(5),
        "woke {woke_after:?} after the patch, not after the 20 s wait"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_without_a_change_answers_304_after_the_wait() {
    let fixture = Fixture::start().await;
    fixture.create(running_blue().to_data()).await;
    let first = fixture.first_state().await;
    let started = Instant::now();
    let (status, body) = fixture
        .state(&format!("since={}&wait=200ms", first.revision))
        .await;
    assert_eq!((status, body), (304, None));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(200) && took < BOUND,
        "took {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_edit_keeps_serving_the_last_good_state() {
    let fixture = Fixture::start().await;
    fixture.create(running_blue().to_data()).await;
    let good = fixture.first_state().await;
    fixture.patch(serde_json::json!({ "epoch": "two" })).await;
    let deadline = Instant::now() + BOUND;
    while fixture.shared.stats().rejected_total() == 0 {
        assert!(Instant::now() < deadline, "the invalid edit was never seen");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, body) = fixture.state("wait=0ms").await;
    assert_eq!((status, body.as_ref()), (200, Some(&good)));
    let (status, _) = fixture
        .state(&format!("since={}&wait=100ms", good.revision))
        .await;
    assert_eq!(status, 304, "a refused edit is not a change");
    let metrics = fixture.get("/metrics").await.text().await.expect("text");
    assert!(
        metrics.contains("bluegreen_gate_source_updates_rejected_total{kind=\"InvalidValue\"} 1"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_decide_show_the_applied_state() {
    let fixture = Fixture::start().await;
    fixture.create(running_blue().to_data()).await;
    fixture.first_state().await;
    let response = fixture.get("/metrics").await;
    assert_eq!(response.status().as_u16(), 200);
    let metrics = response.text().await.expect("text");
    assert!(
        metrics.contains("bluegreen_gate_source_updates_applied_total 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("bluegreen_gate_source_stale 0"),
        "{metrics}"
    );

    let fixture = &fixture;
    let decide = |query: &'static str| async move {
        let response = fixture.get(&format!("/v1/decide?{query}")).await;
        let status = response.status().as_u16();
        (
            status,
            response.json::<serde_json::Value>().await.expect("json"),
        )
    };
    let (status, blue) = decide("color=BLUE&ts=123").await;
    assert_eq!(status, 200);
    assert_eq!(blue["decision"], "PASS");
    assert_eq!(blue["ts"], 123);
    let (_, green) = decide("ts=123").await;
    assert_eq!(
        (&green["color"], &green["decision"]),
        (&"GREEN".into(), &"DROP".into()),
        "the sidecar's own color by default"
    );
    let (status, bad) = decide("color=RED&ts=1").await;
    assert_eq!(status, 400);
    assert!(bad["error"].as_str().is_some_and(|e| e.contains("BLUE")));
    // A query that does not decode is a JSON 400 too, naming the parameter.
    let (status, bad) = decide("color=BLUE&ts=soon").await;
    assert_eq!(status, 400);
    assert!(
        bad["error"].as_str().is_some_and(|e| e.contains("ts")),
        "{bad}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_wait_is_a_400_and_shutdown_answers_pending_polls() {
    let mut fixture = Fixture::start().await;
    fixture.create(running_blue().to_data()).await;
    let first = fixture.first_state().await;
    assert_eq!(
        fixture.get("/v1/state?wait=1.5s").await.status().as_u16(),
        400
    );

    let query = format!("since={}&wait=60000ms", first.revision);
    let stop = fixture.stop.take().expect("stop");
    let poll = fixture.state(&query);
    let shutdown = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let _ = stop.send(());
        Instant::now()
    };
    let ((status, _), asked_at) = tokio::join!(poll, shutdown);
    assert_eq!(status, 304, "a pending poll is answered at shutdown");
    assert!(asked_at.elapsed() < Duration::from_secs(5));
    tokio::time::timeout(BOUND, &mut fixture.serving)
        .await
        .expect("serve returns after shutdown")
        .expect("join")
        .expect("serve");
}
