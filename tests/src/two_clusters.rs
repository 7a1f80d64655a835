//! The simulated two-cluster bed shared by `cross_cluster.rs` and `cross_cluster_faults.rs`: two
//! local API servers in one process, A (home: the resource, the coordination ConfigMap, the
//! controller) and B, each with its own simulated Flink runner on one clock. One snapshot
//! directory stands for the object storage both clusters reach; one ledger judges the job
//! wherever it runs. The controller reaches B through a kubeconfig Secret in A. Two TCP proxies a
//! test can cut stand between the controller and B (`to_b`) and between B's gates and A (`to_a`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bluegreen_controller::context::{Context, GateTokens, HomeApi, flink_deployment_resource};
use bluegreen_controller::resource::{
    FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentSpec, Outcome, Phase,
};
use bluegreen_examples::cross_cluster::flink_deployment_names;
use bluegreen_examples::orders_job;
use bluegreen_local_apiserver::{AuthMode, LocalApiServer, Options};
use bluegreen_local_flink::crd::install_flink_deployment_crd;
use bluegreen_local_flink::ledger::{Expectation, LedgerReport};
use bluegreen_local_flink::secret_volume::{SecretMount, materialize};
use bluegreen_local_flink::{
    DEFAULT_START_MS, DeploymentRef, LocalFlink, LocalFlinkOptions, SimClock,
};
use bluegreen_protocol::Color;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::RoleBinding;
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
pub const HOME_NS: &str = "default";
/// The children's namespace in B.
pub const REMOTE_NS: &str = "jobs";
/// The snapshot paths of the simulated runners (`file:///bluegreen-local/…`): the directory both
/// runners share, declared shared storage.
pub const SHARED: &str = "file:///bluegreen-local/";
/// The Secret in A with B's kubeconfig.
pub const SECRET: &str = "cluster-b";
/// How long a wait for the resource (or anything else) may take.
pub const STEADY: Duration = Duration::from_secs(40);

/// How the bed is set up.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// The controller's identity (the reporting instance of its events).
    pub identity: &'static str,
    /// Whether A checks tokens and RBAC ([`AuthMode::Rbac`]); otherwise it lets every request in.
    pub rbac: bool,
    /// Whether the controller is told A's URL as the home API server for B's gates
    /// (`--home-api-server`).
    pub home_api: bool,
    /// The remote gates' token lifetime and rotation, when not the controller's default.
    pub gate_tokens: Option<GateTokens>,
    /// Whether the Secret [`SECRET`] is created before the controller starts, its kubeconfig
    /// naming B through the proxy `to_b`.
    pub secret_through_to_b: bool,
}

/// A TCP proxy that can be cut: while cut, open connections are closed and new ones closed at
/// once, as a network partition the peer sees at once.
pub struct Proxy {
    addr: SocketAddr,
    open: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// A proxy to the API server at `url` (`http://host:port`).
    ///
    /// # Errors
    /// When `url` is not `http://host:port` or no local port can be bound.
    pub async fn to(url: &str) -> anyhow::Result<Self> {
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

    /// Its URL (`http://127.0.0.1:port`).
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Closes its connections and every new one until [`Proxy::heal`].
    pub fn cut(&self) {
        self.open.send_replace(false);
    }

    /// Lets connections through again.
    pub fn heal(&self) {
        self.open.send_replace(true);
    }

    /// A client of the API server at `url` (with kubeconfig `kubeconfig`) through this proxy.
    ///
    /// # Errors
    /// When the kubeconfig cannot be read or used.
    pub async fn client_of(&self, kubeconfig: &str, url: &str) -> anyhow::Result<kube::Client> {
        let kubeconfig = Kubeconfig::from_yaml(&kubeconfig.replace(url, &self.url()))?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
        Ok(kube::Client::try_from(config)?)
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

/// Two clusters, their runners, the controller against A, and the proxies: `to_b` (a way to B's
/// API server, for the Secret) and `to_a` (a way to A's, for B's gates).
pub struct TwoClusters {
    /// A: the resource, the ConfigMap, the controller.
    pub home: LocalApiServer,
    /// B: where children may run.
    pub remote: LocalApiServer,
    /// A client of A.
    pub a: kube::Client,
    /// A client of B.
    pub b: kube::Client,
    /// The runner in A.
    pub flink_a: LocalFlink,
    /// The runner in B (the same clock and ledger).
    pub flink_b: LocalFlink,
    /// A proxy to A that a test can cut.
    pub to_a: Proxy,
    /// A proxy to B that a test can cut.
    pub to_b: Proxy,
    controller: (watch::Sender<bool>, JoinHandle<()>),
    _storage: tempfile::TempDir,
}

impl TwoClusters {
    /// Starts both clusters, their runners and proxies, and the controller as `setup` says.
    ///
    /// # Errors
    /// When a server, a runner, a proxy or the Secret cannot be started or created.
    pub async fn start(setup: Setup) -> anyhow::Result<Self> {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| "warn".into()),
            )
            .with_test_writer()
            .try_init();
        let home = LocalApiServer::start(Options {
            auth: if setup.rbac {
                AuthMode::Rbac
            } else {
                Options::default().auth
            },
            ..Options::default()
        })
        .await?;
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
        if setup.secret_through_to_b {
            let kubeconfig = remote.kubeconfig_yaml().replace(&remote.url(), &to_b.url());
            create_secret(&a, SECRET, &[("kubeconfig", kubeconfig)]).await?;
        }
        let mut ctx = Context::new(
            a.clone(),
            &flink_a.rest_url_template(),
            Duration::from_secs(2),
            setup.identity,
        );
        if let Some(tokens) = setup.gate_tokens {
            ctx = ctx.with_gate_tokens(tokens);
        }
        if setup.home_api {
            ctx = ctx.with_home_api(HomeApi {
                server: Some(home.url()),
                ca_pem: None,
            });
        }
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(bluegreen_controller::reconcile::run(
            Arc::new(ctx),
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

    /// The resources in A's namespace.
    #[must_use]
    pub fn fbgds(&self) -> Api<FlinkBlueGreenDeployment> {
        Api::namespaced(self.a.clone(), HOME_NS)
    }

    /// Creates the Secret `name` in A with `data`.
    ///
    /// # Errors
    /// When A refuses it.
    pub async fn secret(&self, name: &str, data: &[(&str, String)]) -> anyhow::Result<()> {
        create_secret(&self.a, name, data).await
    }

    /// Creates the Secret [`SECRET`] in A with B's kubeconfig (B's own URL, no proxy).
    ///
    /// # Errors
    /// When A refuses it.
    pub async fn secret_of_b(&self) -> anyhow::Result<()> {
        self.secret(SECRET, &[("kubeconfig", self.remote.kubeconfig_yaml())])
            .await
    }

    /// `spec.cluster` naming B through the Secret `secret`.
    #[must_use]
    pub fn cluster_b(&self, secret: &str) -> serde_json::Value {
        json!({
            "kubeconfigSecret": {"name": secret},
            "namespace": REMOTE_NS,
            "flinkRestUrl": self.flink_b.rest_url_template(),
        })
    }

    /// `spec.cluster` naming B through [`SECRET`], B's gates reaching A through `to_a`.
    #[must_use]
    pub fn cluster_b_through_to_a(&self) -> serde_json::Value {
        let mut cluster = self.cluster_b(SECRET);
        // How B's gates reach A: through the proxy a test cuts.
        cluster["homeApiServer"] = json!(self.to_a.url());
        cluster
    }

    /// Creates `orders` (the orders job on the shared storage, [`shared_orders_job`]) with
    /// `edit` applied to its spec, and waits for it to be steady on blue.
    ///
    /// # Errors
    /// When A refuses it or it is not steady within [`STEADY`].
    pub async fn run_blue(
        &self,
        edit: impl FnOnce(&mut FlinkBlueGreenDeploymentSpec),
    ) -> anyhow::Result<()> {
        let mut spec = shared_orders_job();
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

    /// Merge-patches `orders` with `patch`.
    ///
    /// # Errors
    /// When A refuses the patch.
    pub async fn patch(&self, patch: serde_json::Value) -> anyhow::Result<()> {
        self.fbgds()
            .patch("orders", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    /// Merge-patches `orders`' spec with `spec`.
    ///
    /// # Errors
    /// When A refuses the patch.
    pub async fn patch_spec(&self, spec: serde_json::Value) -> anyhow::Result<()> {
        self.patch(json!({ "spec": spec })).await
    }

    /// Makes the controller look now (Secrets and children in B are not watched).
    ///
    /// # Errors
    /// When A refuses the patch.
    pub async fn nudge(&self, value: &str) -> anyhow::Result<()> {
        self.patch(json!({"metadata": {"annotations": {"test.bluegreen.dev/nudge": value}}}))
            .await
    }

    /// Asks for the promotion of a handover held by `promotion: Manual`.
    ///
    /// # Errors
    /// When A refuses the patch.
    pub async fn promote(&self) -> anyhow::Result<()> {
        self.patch(json!({"metadata": {"annotations": {"bluegreen.dev/action": "promote"}}}))
            .await
    }

    /// Waits (polling every 20 ms, up to [`STEADY`]) until `done` holds for `orders`.
    ///
    /// # Errors
    /// When it does not within [`STEADY`], with the status; when A does not answer.
    pub async fn wait_for(
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

    /// Waits until `orders` is Ready on `color` with no handover.
    ///
    /// # Errors
    /// As [`TwoClusters::wait_for`].
    pub async fn wait_steady(&self, color: Color) -> anyhow::Result<FlinkBlueGreenDeployment> {
        self.wait_for(&format!("steady on {color}"), |f| {
            f.status
                .as_ref()
                .is_some_and(|s| s.active_color == Some(color) && s.transition.is_none())
                && is_ready(f)
        })
        .await
    }

    /// Waits until `orders` is Ready and not Degraded (`what` names it in the error).
    ///
    /// # Errors
    /// As [`TwoClusters::wait_for`].
    pub async fn wait_ready(&self, what: &str) -> anyhow::Result<FlinkBlueGreenDeployment> {
        self.wait_for(what, |f| degraded(f).is_none() && is_ready(f))
            .await
    }

    /// Waits until `orders`' handover is in `phase`.
    ///
    /// # Errors
    /// As [`TwoClusters::wait_for`].
    pub async fn wait_phase(&self, phase: Phase) -> anyhow::Result<FlinkBlueGreenDeployment> {
        self.wait_for(&format!("phase {phase:?}"), |f| phase_of(f) == Some(phase))
            .await
    }

    /// Waits until `orders` is `Degraded/{reason}` with a message containing `says`.
    ///
    /// # Errors
    /// As [`TwoClusters::wait_for`].
    pub async fn wait_degraded(
        &self,
        reason: &str,
        says: &str,
    ) -> anyhow::Result<FlinkBlueGreenDeployment> {
        self.wait_for(&format!("Degraded/{reason} saying {says:?}"), |f| {
            degraded(f).is_some_and(|(r, m)| r == reason && m.contains(says))
        })
        .await
    }

    /// The FlinkDeployments in B's namespace.
    #[must_use]
    pub fn children_in_b(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.b.clone(), REMOTE_NS, &flink_deployment_resource())
    }

    /// The names of the FlinkDeployments in A and in B.
    ///
    /// # Errors
    /// When either does not answer.
    pub async fn children(&self) -> anyhow::Result<(Vec<String>, Vec<String>)> {
        Ok((
            flink_deployment_names(&self.a, HOME_NS).await?,
            flink_deployment_names(&self.b, REMOTE_NS).await?,
        ))
    }

    /// The green child in B, if it exists there.
    ///
    /// # Errors
    /// When B does not answer.
    pub async fn green_in_b(&self) -> anyhow::Result<Option<DynamicObject>> {
        Ok(self.children_in_b().get_opt("orders-green").await?)
    }

    /// Waits (polling every 10 ms, up to [`STEADY`]) until the green child exists in B.
    ///
    /// # Errors
    /// When it does not within [`STEADY`] or B does not answer.
    pub async fn wait_green_in_b(&self) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + STEADY;
        while self.green_in_b().await?.is_none() {
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "green not created in B"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    /// Deletes the green child in B by hand and waits until it is gone.
    ///
    /// # Errors
    /// When it is not gone within [`STEADY`] or B does not answer.
    pub async fn delete_green_in_b(&self) -> anyhow::Result<()> {
        let api = self.children_in_b();
        api.delete("orders-green", &DeleteParams::default()).await?;
        let deadline = tokio::time::Instant::now() + STEADY;
        while api.get_opt("orders-green").await?.is_some() {
            anyhow::ensure!(tokio::time::Instant::now() < deadline, "green not deleted");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// The remote gates' Secret of `child` in B, if any.
    ///
    /// # Errors
    /// When B does not answer.
    pub async fn home_secret(&self, child: &str) -> anyhow::Result<Option<Secret>> {
        Ok(Api::<Secret>::namespaced(self.b.clone(), REMOTE_NS)
            .get_opt(&format!("{child}-bluegreen-home"))
            .await?)
    }

    /// Whether the remote gates' ServiceAccount and RoleBinding of `child` are in A.
    ///
    /// # Errors
    /// When A does not answer.
    pub async fn home_account(&self, child: &str) -> anyhow::Result<(bool, bool)> {
        let name = format!("{child}-bluegreen-remote-gate");
        let sa = Api::<ServiceAccount>::namespaced(self.a.clone(), HOME_NS)
            .get_opt(&name)
            .await?;
        let rb = Api::<RoleBinding>::namespaced(self.a.clone(), HOME_NS)
            .get_opt(&name)
            .await?;
        Ok((sa.is_some(), rb.is_some()))
    }

    /// A client of A from the Secret of `child` in B, as its gates build it: the Secret's keys
    /// written into `dir`, its kubeconfig read from there (`tokenFile: token` next to it).
    ///
    /// # Errors
    /// When the Secret is not there or its kubeconfig cannot be used.
    pub async fn gate_client_from_secret(
        &self,
        child: &str,
        dir: &std::path::Path,
    ) -> anyhow::Result<kube::Client> {
        let mount = SecretMount {
            secret: format!("{child}-bluegreen-home"),
            dir: "/etc/bluegreen/home".into(),
            file: "kubeconfig".into(),
        };
        materialize(&self.b, REMOTE_NS, &mount, dir).await?;
        let kubeconfig = Kubeconfig::read_from(dir.join("kubeconfig"))?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
        Ok(kube::Client::try_from(config)?)
    }

    /// The reasons of every Event recorded in A.
    ///
    /// # Errors
    /// When A does not answer.
    pub async fn event_reasons(&self) -> anyhow::Result<Vec<String>> {
        let events: Api<Event> = Api::namespaced(self.a.clone(), HOME_NS);
        Ok(events
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter_map(|e| e.reason)
            .collect())
    }

    /// The ledger's verdict on everything emitted so far, in either cluster, judged by the
    /// promoted handovers in the status history (as `LocalStack::report`, with the active job in
    /// the cluster it runs in).
    ///
    /// # Errors
    /// When there is no status, no active job, or it completes no 2 checkpoints within 20 s.
    pub async fn report(&self) -> anyhow::Result<LedgerReport> {
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

    /// Stops the controller (up to 5 s), the runners and both API servers.
    pub async fn shutdown(self) {
        let (stop, task) = self.controller;
        let _ = stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        self.flink_a.shutdown();
        self.flink_b.shutdown();
        self.home.shutdown().await;
        self.remote.shutdown().await;
    }
}

/// Creates the Secret `name` in A's namespace with `data`.
async fn create_secret(
    a: &kube::Client,
    name: &str,
    data: &[(&str, String)],
) -> anyhow::Result<()> {
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), ByteString(v.clone().into_bytes())))
                .collect(),
        ),
        ..Secret::default()
    };
    Api::<Secret>::namespaced(a.clone(), HOME_NS)
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

/// The orders job (v1, parallelism 2) with its checkpoint and savepoint directories on the
/// shared storage, declared in `sharedStorage`.
#[must_use]
pub fn shared_orders_job() -> FlinkBlueGreenDeploymentSpec {
    let mut spec = orders_job("v1", 2);
    let conf = &mut spec.template.spec.flink_configuration;
    conf.insert("state.savepoints.dir".into(), format!("{SHARED}savepoints"));
    conf.insert(
        "state.checkpoints.dir".into(),
        format!("{SHARED}checkpoints"),
    );
    spec.coordination.shared_storage = vec![SHARED.into()];
    spec
}

/// The phase of the resource's handover, if one is under way.
#[must_use]
pub fn phase_of(fbgd: &FlinkBlueGreenDeployment) -> Option<Phase> {
    fbgd.status.as_ref()?.transition.as_ref().map(|t| t.phase)
}

/// The `Degraded` condition's reason and message.
#[must_use]
pub fn degraded(fbgd: &FlinkBlueGreenDeployment) -> Option<(String, String)> {
    fbgd.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Degraded" && c.status == "True")
        .map(|c| (c.reason.clone(), c.message.clone()))
}

/// Whether the resource's `Ready` condition is `True`.
#[must_use]
pub fn is_ready(fbgd: &FlinkBlueGreenDeployment) -> bool {
    fbgd.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}
