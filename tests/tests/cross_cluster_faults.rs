//! Faults of a job moved to another cluster (issue 27), each with its stated outcome: two local
//! API servers in one process, A (home: the resource, the ConfigMap, the controller) and B, each
//! with a simulated Flink runner on one clock, one snapshot directory both reach and one ledger.
//! The controller reaches B, and B's gates reach A (with the credential the controller writes in
//! B, for `spec.cluster.homeApiServer`), through TCP proxies a test can cut. Every test ends with
//! the ledger at 0 duplicates and 0 losses.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bluegreen_controller::context::{Context, flink_deployment_resource};
use bluegreen_controller::resource::{
    FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentSpec, Outcome, Phase,
};
use bluegreen_examples::orders_job;
use bluegreen_gate::{ConfigMapSource, SharedState, SourceOptions, StateOptions};
use bluegreen_local_apiserver::{LocalApiServer, Options};
use bluegreen_local_flink::crd::install_flink_deployment_crd;
use bluegreen_local_flink::ledger::{Expectation, LedgerReport};
use bluegreen_local_flink::{
    DEFAULT_START_MS, DeploymentRef, LocalFlink, LocalFlinkOptions, SimClock,
};
use bluegreen_protocol::Color;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::CustomResourceExt;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The resource's namespace in A.
const HOME_NS: &str = "default";
/// The children's namespace in B.
const REMOTE_NS: &str = "jobs";
/// The runners' snapshot paths, on the directory both share.
const SHARED: &str = "file:///bluegreen-local/";
/// The Secret in A with B's kubeconfig.
const SECRET: &str = "cluster-b";
const STEADY: Duration = Duration::from_secs(40);

/// A TCP proxy that can be cut: while cut, open connections are closed and new ones closed at
/// once, as a network partition the peer sees at once.
struct Proxy {
    addr: SocketAddr,
    open: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// A proxy to the API server at `url` (`http://host:port`).
    async fn to(url: &str) -> anyhow::Result<Self> {
        let target: SocketAddr = url
            .trim_start_matches("http://")
            .parse()
            .with_context(|| format!("{url} is not http://host:port"))?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (open, is_open) = watch::channel(true);
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let mut is_open = is_open.clone();
                if !*is_open.borrow() {
                    continue;
                }
                tokio::spawn(async move {
                    let Ok(outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = pump(&inbound, &outbound) => {}
                        _ = pump(&outbound, &inbound) => {}
                        _ = is_open.wait_for(|open| !*open) => {}
                    }
                });
            }
        });
        Ok(Self { addr, open, task })
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn cut(&self) {
        self.open.send_replace(false);
    }

    fn heal(&self) {
        self.open.send_replace(true);
    }
}

/// Copies what `from` reads to `to` until `from` ends or fails.
async fn pump(from: &TcpStream, to: &TcpStream) -> std::io::Result<()> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        from.readable().await?;
        let n = match from.try_read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        let mut sent = 0;
        while sent < n {
            to.writable().await?;
            match to.try_write(&buf[sent..n]) {
                Ok(k) => sent += k,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Two clusters, their runners, the controller against A, and the proxies: `to_b` (the
/// controller's way to B's API server, in the Secret) and `to_a` (B's gates' way to A's).
struct TwoClusters {
    home: LocalApiServer,
    remote: LocalApiServer,
    a: kube::Client,
    b: kube::Client,
    flink_a: LocalFlink,
    flink_b: LocalFlink,
    to_a: Proxy,
    to_b: Proxy,
    controller: (watch::Sender<bool>, JoinHandle<()>),
    _storage: tempfile::TempDir,
}

impl TwoClusters {
    /// Starts both clusters and the controller, and creates the Secret of B (through `to_b`).
    async fn start() -> anyhow::Result<Self> {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| "warn".into()),
            )
            .with_test_writer()
            .try_init();
        let home = LocalApiServer::start(Options::default()).await?;
        install_flink_deployment_crd(&home)?;
        home.apply_object(&FlinkBlueGreenDeployment::crd())?;
        let remote = LocalApiServer::start(Options::default()).await?;
        install_flink_deployment_crd(&remote)?;
        let (a, b) = (home.client(), remote.client());
        let (to_a, to_b) = (
            Proxy::to(&home.url()).await?,
            Proxy::to(&remote.url()).await?,
        );
        let storage = tempfile::tempdir()?;
        let clock = SimClock::scaled(DEFAULT_START_MS, 20.0);
        let flink_a = LocalFlink::start(
            a.clone(),
            LocalFlinkOptions {
                clock: clock.clone(),
                namespace: Some(HOME_NS.into()),
                snapshot_dir: Some(storage.path().to_owned()),
                ..LocalFlinkOptions::default()
            },
        )
        .await?;
        let flink_b = LocalFlink::start(
            b.clone(),
            LocalFlinkOptions {
                clock,
                namespace: Some(REMOTE_NS.into()),
                snapshot_dir: Some(storage.path().to_owned()),
                ledger: Some(Arc::clone(flink_a.ledger())),
                ..LocalFlinkOptions::default()
            },
        )
        .await?;
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(SECRET.into()),
                ..ObjectMeta::default()
            },
            data: Some(
                [(
                    "kubeconfig".to_owned(),
                    ByteString(
                        remote
                            .kubeconfig_yaml()
                            .replace(&remote.url(), &to_b.url())
                            .into_bytes(),
                    ),
                )]
                .into(),
            ),
            ..Secret::default()
        };
        Api::<Secret>::namespaced(a.clone(), HOME_NS)
            .create(&PostParams::default(), &secret)
            .await?;
        let ctx = Arc::new(Context::new(
            a.clone(),
            &flink_a.rest_url_template(),
            Duration::from_secs(2),
            "cross-cluster-faults",
        ));
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(bluegreen_controller::reconcile::run(
            ctx,
            Some(HOME_NS.into()),
            async move {
                let _ = stopped.wait_for(|s| *s).await;
            },
        ));
        Ok(Self {
            home,
            remote,
            a,
            b,
            flink_a,
            flink_b,
            to_a,
            to_b,
            controller: (stop, task),
            _storage: storage,
        })
    }

    fn fbgds(&self) -> Api<FlinkBlueGreenDeployment> {
        Api::namespaced(self.a.clone(), HOME_NS)
    }

    /// `spec.cluster` naming B.
    fn cluster_b(&self) -> serde_json::Value {
        json!({
            "kubeconfigSecret": {"name": SECRET},
            "namespace": REMOTE_NS,
            "flinkRestUrl": self.flink_b.rest_url_template(),
            // How B's gates reach A: through the proxy a test cuts.
            "homeApiServer": self.to_a.url(),
        })
    }

    /// Creates `orders` blue in A with `edit` applied to its spec, and waits for it to run.
    async fn blue_in_a(
        &self,
        edit: impl FnOnce(&mut FlinkBlueGreenDeploymentSpec),
    ) -> anyhow::Result<()> {
        let mut spec = orders_job("v1", 2);
        let conf = &mut spec.template.spec.flink_configuration;
        conf.insert("state.savepoints.dir".into(), format!("{SHARED}savepoints"));
        conf.insert(
            "state.checkpoints.dir".into(),
            format!("{SHARED}checkpoints"),
        );
        spec.coordination.shared_storage = vec![SHARED.into()];
        edit(&mut spec);
        self.fbgds()
            .create(
                &PostParams::default(),
                &FlinkBlueGreenDeployment::new("orders", spec),
            )
            .await?;
        self.wait_steady(Color::Blue).await?;
        Ok(())
    }

    async fn patch(&self, patch: serde_json::Value) -> anyhow::Result<()> {
        self.fbgds()
            .patch("orders", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    /// Starts the move of the job to B with a parallelism change.
    async fn move_to_b(&self) -> anyhow::Result<()> {
        self.patch(json!({"spec": {
            "cluster": self.cluster_b(),
            "template": {"spec": {"job": {"parallelism": 3}}},
        }}))
        .await
    }

    /// Makes the controller look now (Secrets and B are not watched).
    async fn nudge(&self, value: &str) -> anyhow::Result<()> {
        self.patch(json!({"metadata": {"annotations": {"test.bluegreen.dev/nudge": value}}}))
            .await
    }

    async fn wait_for(
        &self,
        what: &str,
        done: impl Fn(&FlinkBlueGreenDeployment) -> bool,
    ) -> anyhow::Result<FlinkBlueGreenDeployment> {
        let deadline = tokio::time::Instant::now() + STEADY;
        loop {
            let fbgd = self.fbgds().get("orders").await?;
            if done(&fbgd) {
                return Ok(fbgd);
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "{what} did not happen within {STEADY:?}; status: {}",
                serde_json::to_string_pretty(&fbgd.status)?
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn wait_steady(&self, color: Color) -> anyhow::Result<FlinkBlueGreenDeployment> {
        self.wait_for(&format!("steady on {color}"), |f| {
            f.status.as_ref().is_some_and(|s| {
                s.active_color == Some(color)
                    && s.transition.is_none()
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
            })
        })
        .await
    }

    async fn wait_phase(&self, phase: Phase) -> anyhow::Result<FlinkBlueGreenDeployment> {
        self.wait_for(&format!("phase {phase:?}"), |f| phase_of(f) == Some(phase))
            .await
    }

    async fn wait_degraded(
        &self,
        reason: &str,
        says: &str,
    ) -> anyhow::Result<FlinkBlueGreenDeployment> {
        self.wait_for(&format!("Degraded/{reason} saying {says:?}"), |f| {
            degraded(f).is_some_and(|(r, m)| r == reason && m.contains(says))
        })
        .await
    }

    /// The green child in B, if it exists there.
    async fn green_in_b(&self) -> anyhow::Result<Option<DynamicObject>> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.b.clone(), REMOTE_NS, &flink_deployment_resource());
        Ok(api.get_opt("orders-green").await?)
    }

    /// Deletes the green child in B by hand and waits until it is gone.
    async fn delete_green_in_b(&self) -> anyhow::Result<()> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.b.clone(), REMOTE_NS, &flink_deployment_resource());
        api.delete("orders-green", &DeleteParams::default()).await?;
        let deadline = tokio::time::Instant::now() + STEADY;
        while api.get_opt("orders-green").await?.is_some() {
            anyhow::ensure!(tokio::time::Instant::now() < deadline, "green not deleted");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// The reasons of every Event recorded in A.
    async fn event_reasons(&self) -> anyhow::Result<Vec<String>> {
        let events: Api<Event> = Api::namespaced(self.a.clone(), HOME_NS);
        Ok(events
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter_map(|e| e.reason)
            .collect())
    }

    /// The ledger's verdict on everything emitted so far in either cluster, judged by the
    /// promoted handovers in the status history, with the active job where it runs.
    async fn report(&self) -> anyhow::Result<LedgerReport> {
        let status = self
            .fbgds()
            .get("orders")
            .await?
            .status
            .context("no status")?;
        let active = status.active_color.context("no active color")?;
        let (flink, namespace) = match status.clusters.of(active) {
            Some(_) => (&self.flink_b, REMOTE_NS),
            None => (&self.flink_a, HOME_NS),
        };
        let d = DeploymentRef::new(namespace, format!("orders-{}", active.suffix()));
        let job = flink.job(&d).context("the active job is not running")?;
        let view = job.view();
        let (horizon, arrived_by) = (view.job_watermark, flink.clock().now_ms());
        flink
            .wait_for_job(&d, Duration::from_secs(20), |v| {
                v.completed_checkpoints >= view.completed_checkpoints + 2
            })
            .await?;
        let mut expectation = Expectation::new(job.settings.source.clone(), horizon)
            .arrived_by(arrived_by)
            .owned_by(Color::Blue);
        let mut handovers: Vec<_> = status
            .history
            .iter()
            .filter(|h| h.outcome == Outcome::Promoted)
            .filter_map(|h| h.toggle.map(|w| (w, h.to)))
            .collect();
        handovers.sort_unstable();
        for (w, to) in handovers {
            expectation = expectation.handover(w, to);
        }
        Ok(flink.ledger().report(&expectation))
    }

    /// Asserts 0 duplicates and 0 losses, and that `color` emitted.
    async fn assert_exactly_once(&self, what: &str, color: Color) -> anyhow::Result<()> {
        let report = self.report().await?;
        println!("{what}: {report}");
        anyhow::ensure!(report.is_exactly_once_by_owner(), "{what}: {report}");
        anyhow::ensure!(
            report.color(Some(color)).emissions > 0,
            "{what}: {color} emitted nothing: {report}"
        );
        Ok(())
    }

    async fn shutdown(self) {
        let (stop, task) = self.controller;
        let _ = stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        self.flink_a.shutdown();
        self.flink_b.shutdown();
        self.home.shutdown().await;
        self.remote.shutdown().await;
    }
}

/// A client of the API server at `url` (with kubeconfig `kubeconfig`) through `proxy`.
async fn client_of(kubeconfig: &str, url: &str, proxy: &Proxy) -> anyhow::Result<kube::Client> {
    let kubeconfig = Kubeconfig::from_yaml(&kubeconfig.replace(url, &proxy.url()))?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

fn phase_of(fbgd: &FlinkBlueGreenDeployment) -> Option<Phase> {
    fbgd.status.as_ref()?.transition.as_ref().map(|t| t.phase)
}

/// The `Degraded` condition's reason and message.
fn degraded(fbgd: &FlinkBlueGreenDeployment) -> Option<(String, String)> {
    fbgd.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Degraded" && c.status == "True")
        .map(|c| (c.reason.clone(), c.message.clone()))
}

/// Outcome: B's API unreachable from the controller before W is set, for longer than
/// `abortGracePeriod`: the handover aborts, blue in A keeps every record (the same job), and
/// green is deleted in B once B answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_incoming_cluster_unreachable_before_w_aborts_and_blue_keeps_every_record()
-> anyhow::Result<()> {
    let clusters = TwoClusters::start().await?;
    clusters
        .blue_in_a(|spec| {
            // Green waits 5 s for minReady before W is proposed: B is cut within that.
            spec.coordination.min_ready = "5s".into();
            spec.coordination.abort_grace_period = "6s".into();
        })
        .await?;
    let blue = DeploymentRef::new(HOME_NS, "orders-blue");
    let blue_job = clusters
        .flink_a
        .job(&blue)
        .context("blue runs")?
        .job_id
        .clone();
    clusters.move_to_b().await?;
    let deadline = tokio::time::Instant::now() + STEADY;
    while clusters.green_in_b().await?.is_none() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "green not created in B"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    clusters.to_b.cut();
    let waiting = clusters
        .wait_degraded("ClusterUnavailable", "abortGracePeriod")
        .await?;
    assert_eq!(phase_of(&waiting), Some(Phase::Deploying), "W was proposed");
    let aborting = clusters.wait_phase(Phase::Aborting).await?;
    let (reason, message) = degraded(&aborting).context("degraded")?;
    assert_eq!(reason, "ClusterUnavailable", "{message}");
    assert!(message.contains("before W was set"), "{message}");
    // Still cut: the abort waits to delete green, recorded in the status.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let still = clusters.fbgds().get("orders").await?;
    assert_eq!(phase_of(&still), Some(Phase::Aborting));
    assert!(
        still
            .status
            .as_ref()
            .context("status")?
            .clusters
            .green
            .is_some(),
        "green's cluster was forgotten"
    );
    clusters.to_b.heal();
    clusters.nudge("healed").await?;
    let back = clusters
        .wait_for("the abort done", |f| {
            f.status
                .as_ref()
                .is_some_and(|s| s.transition.is_none() && s.active_color == Some(Color::Blue))
        })
        .await?;
    let (reason, _) = degraded(&back).context("degraded")?;
    assert_eq!(reason, "HandoverAborted");
    let status = back.status.context("status")?;
    assert_eq!(
        status.history.first().map(|h| h.outcome),
        Some(Outcome::Aborted)
    );
    assert!(status.clusters.is_empty(), "{status:?}");
    assert!(clusters.green_in_b().await?.is_none(), "green left in B");
    assert_eq!(
        clusters.flink_a.job(&blue).context("blue runs")?.job_id,
        blue_job
    );
    let events = clusters.event_reasons().await?;
    for reason in ["ClusterUnavailable", "HandoverAborting"] {
        assert!(
            events.iter().any(|e| e == reason),
            "no {reason}: {events:?}"
        );
    }
    clusters
        .assert_exactly_once("aborted move", Color::Blue)
        .await?;
    clusters.shutdown().await;
    Ok(())
}

/// Outcome: B's API unreachable after W is set: nothing is decided, nothing lost
/// (`Degraded/ClusterUnavailable`, its event); once B answers the handover goes on forward.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_incoming_cluster_unreachable_after_w_is_waited_for_and_the_move_completes()
-> anyhow::Result<()> {
    let clusters = TwoClusters::start().await?;
    clusters
        .blue_in_a(|spec| {
            // Held in ToggleSet (W set) until promoted by hand.
            spec.coordination.promotion = bluegreen_controller::resource::Promotion::Manual;
            spec.coordination.abort_grace_period = "3s".into();
        })
        .await?;
    clusters.move_to_b().await?;
    clusters.wait_phase(Phase::ToggleSet).await?;
    clusters.to_b.cut();
    clusters
        .wait_degraded("ClusterUnavailable", "status.clusters.green")
        .await?;
    // Longer than abortGracePeriod: never aborted after W.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let waiting = clusters.fbgds().get("orders").await?;
    assert_eq!(phase_of(&waiting), Some(Phase::ToggleSet));
    clusters.to_b.heal();
    clusters
        .patch(json!({"metadata": {"annotations": {"bluegreen.dev/action": "promote"}}}))
        .await?;
    clusters.wait_steady(Color::Green).await?;
    assert!(
        clusters
            .event_reasons()
            .await?
            .iter()
            .any(|e| e == "ClusterUnavailable")
    );
    clusters
        .assert_exactly_once("move with B cut after W", Color::Green)
        .await?;
    clusters.shutdown().await;
    Ok(())
}

/// Outcome: the kubeconfig Secret deleted while green runs in B: the same wait,
/// `Degraded/ClusterUnavailable` naming the Secret; the same job Ready again once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_kubeconfig_secret_is_waited_for_naming_it() -> anyhow::Result<()> {
    let clusters = TwoClusters::start().await?;
    clusters.blue_in_a(|_| {}).await?;
    clusters.move_to_b().await?;
    clusters.wait_steady(Color::Green).await?;
    let green = DeploymentRef::new(REMOTE_NS, "orders-green");
    let job_id = clusters
        .flink_b
        .job(&green)
        .context("green runs")?
        .job_id
        .clone();
    let secrets: Api<Secret> = Api::namespaced(clusters.a.clone(), HOME_NS);
    let kept = secrets.get(SECRET).await?;
    secrets.delete(SECRET, &DeleteParams::default()).await?;
    clusters.nudge("deleted").await?;
    let down = clusters
        .wait_degraded("ClusterUnavailable", "Secret \"cluster-b\" does not exist")
        .await?;
    assert!(down.status.context("status")?.clusters.green.is_some());
    secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some(SECRET.into()),
                    ..ObjectMeta::default()
                },
                data: kept.data,
                ..Secret::default()
            },
        )
        .await?;
    clusters.nudge("recreated").await?;
    clusters
        .wait_for("Ready again", |f| {
            degraded(f).is_none()
                && f.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
                })
        })
        .await?;
    assert_eq!(
        clusters.flink_b.job(&green).context("green runs")?.job_id,
        job_id
    );
    clusters
        .assert_exactly_once("Secret deleted and back", Color::Green)
        .await?;
    clusters.shutdown().await;
    Ok(())
}

/// Outcome, as for a child in one cluster: green deleted by hand in B before W is created again
/// there from the handover's savepoint (its gates held everything: it emitted nothing); deleted
/// after W it is not (that would emit records twice): `Degraded/IncomingMissingAfterToggle`
/// while blue keeps emitting `t <= W`, the controller keeps looking for it in B, and once a
/// person recreates it there from its latest checkpoint the move completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_child_deleted_by_hand_before_or_after_w_loses_nothing() -> anyhow::Result<()> {
    let clusters = TwoClusters::start().await?;
    clusters
        .blue_in_a(|spec| {
            spec.coordination.min_ready = "5s".into();
            spec.coordination.promotion = bluegreen_controller::resource::Promotion::Manual;
        })
        .await?;
    clusters.move_to_b().await?;
    let deadline = tokio::time::Instant::now() + STEADY;
    while clusters.green_in_b().await?.is_none() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "green not created in B"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    clusters.delete_green_in_b().await?;
    assert_eq!(
        phase_of(&clusters.fbgds().get("orders").await?),
        Some(Phase::Deploying),
        "W was proposed"
    );
    clusters.wait_phase(Phase::ToggleSet).await?;
    let green = DeploymentRef::new(REMOTE_NS, "orders-green");
    let job = clusters.flink_b.job(&green).context("green runs in B")?;
    clusters
        .flink_b
        .wait_for_job(&green, Duration::from_secs(20), |v| {
            v.completed_checkpoints >= 1
        })
        .await?;

    let mut child = clusters.green_in_b().await?.context("green in B")?;
    clusters.delete_green_in_b().await?;
    let checkpoint = job
        .view()
        .latest_checkpoint
        .context("green's checkpoint")?
        .path
        .clone();
    let missing = clusters
        .wait_degraded("IncomingMissingAfterToggle", "latest checkpoint")
        .await?;
    assert!(
        missing.status.context("status")?.clusters.green.is_some(),
        "green's cluster was forgotten"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(clusters.green_in_b().await?.is_none(), "recreated after W");

    // A person recreates it in B from its latest checkpoint.
    child.metadata = ObjectMeta {
        name: child.metadata.name.take(),
        annotations: child.metadata.annotations.take(),
        labels: child.metadata.labels.take(),
        ..ObjectMeta::default()
    };
    child.data["spec"]["job"]["initialSavepointPath"] = json!(checkpoint);
    child
        .data
        .as_object_mut()
        .context("object")?
        .remove("status");
    Api::<DynamicObject>::namespaced_with(
        clusters.b.clone(),
        REMOTE_NS,
        &flink_deployment_resource(),
    )
    .create(&PostParams::default(), &child)
    .await?;
    clusters
        .patch(json!({"metadata": {"annotations": {"bluegreen.dev/action": "promote"}}}))
        .await?;
    clusters.wait_steady(Color::Green).await?;
    clusters
        .assert_exactly_once("green deleted before and after W", Color::Green)
        .await?;
    clusters.shutdown().await;
    Ok(())
}

/// Outcome: A's API unreachable from B's gates. They keep their last good state: with green
/// active in B and no handover, green keeps emitting (a steady state is never wrong to keep). A
/// handover started meanwhile cannot get W acknowledged by them, so it waits in
/// `ConfirmingToggle` (blue in A holds everything, green passes as before: nothing twice, nothing
/// lost; aborted after `abortGracePeriod` if it lasts); once A answers it completes. The same
/// feeder as the gates' (a `ConfigMapSource` through the cut proxy) shows what the metrics
/// `bluegreen_gate_source_stale` and `bluegreen_gate_source_staleness_seconds` export.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_home_api_unreachable_from_remote_gates_keeps_their_last_state() -> anyhow::Result<()> {
    let clusters = TwoClusters::start().await?;
    clusters.blue_in_a(|_| {}).await?;
    clusters.move_to_b().await?;
    clusters.wait_steady(Color::Green).await?;
    let feeder = SharedState::new(StateOptions {
        max_staleness: Some(Duration::from_secs(2)),
    });
    let _source = ConfigMapSource::new(
        client_of(
            &clusters.home.kubeconfig_yaml(),
            &clusters.home.url(),
            &clusters.to_a,
        )
        .await?,
        HOME_NS,
        "orders-bluegreen",
        Arc::clone(&feeder),
    )
    .with_options(SourceOptions {
        probe_interval: Duration::from_millis(500),
    })
    .spawn();
    let deadline = tokio::time::Instant::now() + STEADY;
    while feeder.current().is_none() {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "no state read");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let last_good = feeder.current();

    clusters.to_a.cut();
    let deadline = tokio::time::Instant::now() + STEADY;
    while !feeder.is_stale() {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "never stale");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(feeder.current(), last_good, "the last good state is kept");
    let green = DeploymentRef::new(REMOTE_NS, "orders-green");
    let before = clusters
        .flink_b
        .job(&green)
        .context("green")?
        .view()
        .completed_checkpoints;
    clusters
        .flink_b
        .wait_for_job(&green, Duration::from_secs(20), |v| {
            v.completed_checkpoints >= before + 2
        })
        .await?;
    clusters
        .assert_exactly_once("gates cut from A, steady", Color::Green)
        .await?;

    // Back to A while B's gates cannot see the ConfigMap: W is never acknowledged.
    clusters
        .patch(json!({"spec": {
            "cluster": null,
            "template": {"spec": {"job": {"parallelism": 2}}},
        }}))
        .await?;
    clusters.wait_phase(Phase::ConfirmingToggle).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let waiting = clusters.fbgds().get("orders").await?;
    assert_eq!(phase_of(&waiting), Some(Phase::ConfirmingToggle));
    let progressing = waiting
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Progressing"))
        .context("Progressing")?;
    assert_eq!(
        progressing.reason, "GatesNotAcknowledged",
        "{progressing:?}"
    );
    assert!(feeder.staleness() > Duration::from_secs(3));
    assert_eq!(feeder.current(), last_good);

    clusters.to_a.heal();
    clusters.wait_steady(Color::Blue).await?;
    assert!(!feeder.is_stale(), "confirmed again");
    clusters
        .assert_exactly_once("back to A after the gates' cut", Color::Blue)
        .await?;
    clusters.shutdown().await;
    Ok(())
}
