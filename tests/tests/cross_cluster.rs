//! A job moved between two Kubernetes clusters, exactly once (issue 27): two local API servers in
//! one process, A (home: the resource, the coordination ConfigMap, the controller) and B, each
//! with its own simulated Flink runner on one clock. One snapshot directory stands for the object
//! storage both clusters reach; one ledger judges the job wherever it runs. The controller reaches
//! B through a kubeconfig Secret in A. A checks tokens and RBAC: B's gates read the ConfigMap in A
//! with the credential the controller writes into B (the Secret `<child>-bluegreen-home`, a
//! token of a ServiceAccount in A that may only get/list/watch that ConfigMap), mounted as the
//! runner reads the TaskManager pod template.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bluegreen_controller::context::{Context, GateTokens, HomeApi, flink_deployment_resource};
use bluegreen_controller::remote_gate;
use bluegreen_controller::resource::{FlinkBlueGreenDeployment, Outcome};
use bluegreen_examples::orders_job;
use bluegreen_local_apiserver::{AuthMode, LocalApiServer, Options, RequestMatch, Verb};
use bluegreen_local_flink::crd::install_flink_deployment_crd;
use bluegreen_local_flink::ledger::{Expectation, LedgerReport};
use bluegreen_local_flink::secret_volume::{SecretMount, materialize};
use bluegreen_local_flink::{
    DEFAULT_START_MS, DeploymentRef, LocalFlink, LocalFlinkOptions, SimClock,
};
use bluegreen_protocol::Color;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::CustomResourceExt;
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The resource's namespace in A.
const HOME_NS: &str = "default";
/// The children's namespace in B.
const REMOTE_NS: &str = "jobs";
/// The snapshot paths of the simulated runners (`file:///bluegreen-local/…`): the directory both
/// runners share, declared shared storage.
const SHARED: &str = "file:///bluegreen-local/";
const STEADY: Duration = Duration::from_secs(40);
/// The remote gates' tokens are replaced once 5 s old (3595 s of 3600 s left).
const ROTATING: GateTokens = GateTokens {
    ttl: Duration::from_hours(1),
    rotate_below: Duration::from_secs(3595),
};

/// Two clusters, their runners and the controller against A.
struct TwoClusters {
    home: LocalApiServer,
    remote: LocalApiServer,
    a: kube::Client,
    b: kube::Client,
    flink_a: LocalFlink,
    flink_b: LocalFlink,
    controller: (watch::Sender<bool>, JoinHandle<()>),
    _storage: tempfile::TempDir,
}

impl TwoClusters {
    /// A and B, the controller told A's URL as the home API server for B's gates.
    async fn start() -> anyhow::Result<Self> {
        Self::start_with(true).await
    }

    /// A and B; the controller knows the home API server (`--home-api-server`) if `home_api`.
    async fn start_with(home_api: bool) -> anyhow::Result<Self> {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| "warn".into()),
            )
            .with_test_writer()
            .try_init();
        let home = LocalApiServer::start(Options {
            auth: AuthMode::Rbac,
            ..Options::default()
        })
        .await?;
        install_flink_deployment_crd(&home)?;
        home.apply_object(&FlinkBlueGreenDeployment::crd())?;
        let remote = LocalApiServer::start(Options::default()).await?;
        install_flink_deployment_crd(&remote)?;
        let (a, b) = (home.client(), remote.client());
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
        let ctx = Context::new(
            a.clone(),
            &flink_a.rest_url_template(),
            Duration::from_secs(2),
            "cross-cluster",
        )
        .with_gate_tokens(ROTATING);
        let ctx = Arc::new(if home_api {
            ctx.with_home_api(HomeApi {
                server: Some(home.url()),
                ca_pem: None,
            })
        } else {
            ctx
        });
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
            controller: (stop, task),
            _storage: storage,
        })
    }

    fn fbgds(&self) -> Api<FlinkBlueGreenDeployment> {
        Api::namespaced(self.a.clone(), HOME_NS)
    }

    /// Creates the Secret `name` in A with `data`.
    async fn secret(&self, name: &str, data: &[(&str, String)]) -> anyhow::Result<()> {
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
        Api::<Secret>::namespaced(self.a.clone(), HOME_NS)
            .create(&PostParams::default(), &secret)
            .await?;
        Ok(())
    }

    /// `spec.cluster` naming B through the Secret `secret`.
    fn cluster_b(&self, secret: &str) -> serde_json::Value {
        json!({
            "kubeconfigSecret": {"name": secret},
            "namespace": REMOTE_NS,
            "flinkRestUrl": self.flink_b.rest_url_template(),
        })
    }

    async fn patch_spec(&self, spec: serde_json::Value) -> anyhow::Result<()> {
        self.fbgds()
            .patch(
                "orders",
                &PatchParams::default(),
                &Patch::Merge(&json!({ "spec": spec })),
            )
            .await?;
        Ok(())
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

    /// The names of the FlinkDeployments in A and in B.
    async fn children(&self) -> anyhow::Result<(Vec<String>, Vec<String>)> {
        let names = |client: &kube::Client, ns: &str| {
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), ns, &flink_deployment_resource());
            async move {
                let list = api.list(&kube::api::ListParams::default()).await?;
                anyhow::Ok(
                    list.items
                        .into_iter()
                        .filter_map(|o| o.metadata.name)
                        .collect::<Vec<_>>(),
                )
            }
        };
        Ok((
            names(&self.a, HOME_NS).await?,
            names(&self.b, REMOTE_NS).await?,
        ))
    }

    /// The ledger's verdict on everything emitted so far, in either cluster, judged by the
    /// handovers in the status history (as `LocalStack::report`, with the active job in the
    /// cluster it runs in).
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

    /// B becomes unusable while green runs there (its Secret now names a closed port): the
    /// resource is `Degraded/ClusterUnavailable` and nothing changes; once the Secret names B
    /// again the resource is Ready, the same green job (`job_id`) still running in B.
    async fn lose_and_regain_b(&self, job_id: &str) -> anyhow::Result<()> {
        let secrets: Api<Secret> = Api::namespaced(self.a.clone(), HOME_NS);
        let kubeconfig = self.remote.kubeconfig_yaml();
        for (yaml, nudge) in [
            (
                kubeconfig.replace(&self.remote.url(), "http://127.0.0.1:1"),
                "1",
            ),
            (kubeconfig.clone(), "2"),
        ] {
            let data = json!({"data": {"kubeconfig": ByteString(yaml.into_bytes())}});
            secrets
                .patch("cluster-b", &PatchParams::default(), &Patch::Merge(&data))
                .await?;
            // Secrets are not watched: an annotation makes the controller look now.
            let nudge = json!({"metadata": {"annotations": {"test.bluegreen.dev/nudge": nudge}}});
            self.fbgds()
                .patch("orders", &PatchParams::default(), &Patch::Merge(&nudge))
                .await?;
            if nudge == "1" {
                let down = self
                    .wait_for("ClusterUnavailable", |f| {
                        degraded(f).is_some_and(|(r, _)| r == "ClusterUnavailable")
                    })
                    .await?;
                let (_, message) = degraded(&down).expect("degraded");
                assert!(message.contains("status.clusters.green"), "{message}");
                assert!(down.status.expect("status").clusters.green.is_some());
            }
        }
        self.wait_for("B usable again", |f| {
            degraded(f).is_none()
                && f.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
                })
        })
        .await?;
        let green = self
            .flink_b
            .job(&DeploymentRef::new(REMOTE_NS, "orders-green"))
            .context("green runs in B")?;
        assert_eq!(green.job_id, job_id);
        Ok(())
    }

    /// Makes the controller look now (Secrets and children in B are not watched).
    async fn nudge(&self, value: &str) -> anyhow::Result<()> {
        let nudge = json!({"metadata": {"annotations": {"test.bluegreen.dev/nudge": value}}});
        self.fbgds()
            .patch("orders", &PatchParams::default(), &Patch::Merge(&nudge))
            .await?;
        Ok(())
    }

    /// The remote gates' Secret of `child` in B, if any.
    async fn home_secret(&self, child: &str) -> anyhow::Result<Option<Secret>> {
        Ok(Api::<Secret>::namespaced(self.b.clone(), REMOTE_NS)
            .get_opt(&format!("{child}-bluegreen-home"))
            .await?)
    }

    /// Whether the remote gates' ServiceAccount and RoleBinding of `child` are in A.
    async fn home_account(&self, child: &str) -> anyhow::Result<(bool, bool)> {
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
    async fn gate_client_from_secret(
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
        let kubeconfig = kube::config::Kubeconfig::read_from(dir.join("kubeconfig"))?;
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        Ok(kube::Client::try_from(config)?)
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

/// The orders job with its checkpoint and savepoint directories on the shared storage.
fn shared_orders_job() -> bluegreen_controller::resource::FlinkBlueGreenDeploymentSpec {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_moves_to_another_cluster_and_back_exactly_once() -> anyhow::Result<()> {
    let clusters = TwoClusters::start().await?;
    clusters
        .secret(
            "cluster-b",
            &[("kubeconfig", clusters.remote.kubeconfig_yaml())],
        )
        .await?;
    clusters
        .fbgds()
        .create(
            &PostParams::default(),
            &FlinkBlueGreenDeployment::new("orders", shared_orders_job()),
        )
        .await?;
    clusters.wait_steady(Color::Blue).await?;
    assert_eq!(
        clusters.children().await?,
        (vec!["orders-blue".into()], vec![])
    );

    // To B, with a parallelism change.
    clusters
        .patch_spec(json!({
            "cluster": clusters.cluster_b("cluster-b"),
            "template": {"spec": {"job": {"parallelism": 3}}},
        }))
        .await?;
    let moved = clusters.wait_steady(Color::Green).await?;
    let status = moved.status.expect("status");
    assert_eq!(status.history[0].outcome, Outcome::Promoted);
    assert!(status.clusters.of(Color::Green).is_some(), "{status:?}");
    assert_eq!(
        clusters.children().await?,
        (vec![], vec!["orders-green".into()])
    );
    let green = clusters
        .flink_b
        .job(&DeploymentRef::new(REMOTE_NS, "orders-green"))
        .expect("green runs in B");
    assert_eq!(green.settings.parallelism, 3);
    let report = clusters.report().await?;
    println!("blue in A → green in B: {report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    assert!(report.color(Some(Color::Green)).emissions > 0, "{report}");
    let first_token = the_remote_gates_credential_is_that_configmaps_only(&clusters).await?;
    the_token_is_rotated_and_the_new_one_works(&clusters, &first_token).await?;
    clusters.lose_and_regain_b(&green.job_id).await?;

    // Back to A, with another parallelism change.
    clusters
        .patch_spec(json!({
            "cluster": null,
            "template": {"spec": {"job": {"parallelism": 4}}},
        }))
        .await?;
    let back = clusters.wait_steady(Color::Blue).await?;
    let status = back.status.expect("status");
    assert_eq!(status.epoch, 2);
    assert!(status.clusters.is_empty(), "{status:?}");
    assert_eq!(
        clusters.children().await?,
        (vec!["orders-blue".into()], vec![])
    );
    let report = clusters.report().await?;
    println!("green in B → blue in A: {report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    assert!(report.color(Some(Color::Blue)).emissions > 0, "{report}");
    // Green is gone from B, and its gates' credential with it, in both clusters.
    assert!(clusters.home_secret("orders-green").await?.is_none());
    assert_eq!(clusters.home_account("orders-green").await?, (false, false));
    clusters.shutdown().await;
    Ok(())
}

/// While green runs in B: the Secret of its gates is there (Opaque, labelled, no owner, the
/// token's expiry annotated); its token, as the gates use it, gets and watches the ConfigMap in
/// A and is refused (403) any other ConfigMap, listing ConfigMaps and reading Secrets. Returns
/// the token.
async fn the_remote_gates_credential_is_that_configmaps_only(
    clusters: &TwoClusters,
) -> anyhow::Result<String> {
    let secret = clusters
        .home_secret("orders-green")
        .await?
        .context("no Secret orders-green-bluegreen-home in B while green runs there")?;
    assert_eq!(secret.type_.as_deref(), Some("Opaque"));
    assert!(secret.metadata.owner_references.is_none(), "{secret:?}");
    let labels = secret.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("bluegreen.dev/deployment").map(String::as_str),
        Some("orders")
    );
    assert_eq!(
        labels.get("bluegreen.dev/color").map(String::as_str),
        Some("green")
    );
    let expires = secret
        .metadata
        .annotations
        .clone()
        .unwrap_or_default()
        .get(remote_gate::TOKEN_EXPIRES_ANNOTATION)
        .cloned()
        .context("no token-expires annotation")?;
    expires.parse::<k8s_openapi::jiff::Timestamp>()?;
    assert_eq!(clusters.home_account("orders-green").await?, (true, true));
    let data = secret.data.unwrap_or_default();
    let token = String::from_utf8(data.get("token").context("no token")?.0.clone())?;
    let kubeconfig = String::from_utf8(data.get("kubeconfig").context("no kubeconfig")?.0.clone())?;
    assert!(kubeconfig.contains(&clusters.home.url()), "{kubeconfig}");

    let dir = tempfile::tempdir()?;
    let gate = clusters
        .gate_client_from_secret("orders-green", dir.path())
        .await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(gate.clone(), HOME_NS);
    configmaps.get("orders-bluegreen").await?;
    let watch = kube::api::WatchParams::default()
        .fields("metadata.name=orders-bluegreen")
        .timeout(1);
    drop(configmaps.watch(&watch, "0").await?);
    Api::<ConfigMap>::namespaced(clusters.a.clone(), HOME_NS)
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("other".into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await?;
    let forbidden = |r: Result<(), kube::Error>, what: &str| match r {
        Err(kube::Error::Api(s)) if s.code == 403 => Ok(()),
        other => Err(anyhow::anyhow!("{what}: expected 403, got {other:?}")),
    };
    forbidden(
        configmaps.get("other").await.map(drop),
        "get another ConfigMap",
    )?;
    forbidden(
        configmaps
            .list(&kube::api::ListParams::default())
            .await
            .map(drop),
        "list ConfigMaps",
    )?;
    forbidden(
        Api::<Secret>::namespaced(gate, HOME_NS)
            .get("cluster-b")
            .await
            .map(drop),
        "get a Secret",
    )?;
    Ok(token)
}

/// The controller replaces the token once less than `ROTATING.rotate_below` of it is left (here:
/// 5 s after it was issued): the Secret gets another token, which works like the first.
async fn the_token_is_rotated_and_the_new_one_works(
    clusters: &TwoClusters,
    first: &str,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + STEADY;
    let mut nudges = 0;
    loop {
        let secret = clusters
            .home_secret("orders-green")
            .await?
            .context("the Secret is gone")?;
        let token = secret
            .data
            .unwrap_or_default()
            .remove("token")
            .context("no token")?;
        if token.0 != first.as_bytes() {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the token was not rotated within {STEADY:?}"
        );
        nudges += 1;
        clusters.nudge(&format!("rotate-{nudges}")).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let dir = tempfile::tempdir()?;
    let gate = clusters
        .gate_client_from_secret("orders-green", dir.path())
        .await?;
    Api::<ConfigMap>::namespaced(gate, HOME_NS)
        .get("orders-bluegreen")
        .await?;
    Ok(())
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

/// Secrets in A whose clusters cannot be used: `wrong-key` (the kubeconfig under another key),
/// `garbage`, `exec` (a kubeconfig that would run a program), `unreachable` (a closed port) and
/// `no-crd` (`no_crd`, a cluster without the FlinkDeployment CRD).
async fn bad_secrets(clusters: &TwoClusters, no_crd: &LocalApiServer) -> anyhow::Result<()> {
    let unreachable = clusters
        .remote
        .kubeconfig_yaml()
        .replace(&clusters.remote.url(), "http://127.0.0.1:1");
    let exec = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://east:6443}\nusers:\n- name: u\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'touch /tmp/bluegreen-kubeconfig-exec-ran']}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";
    clusters
        .secret(
            "wrong-key",
            &[("config", clusters.remote.kubeconfig_yaml())],
        )
        .await?;
    clusters
        .secret("garbage", &[("kubeconfig", "clusters: [{".into())])
        .await?;
    clusters
        .secret("exec", &[("kubeconfig", exec.into())])
        .await?;
    clusters
        .secret("unreachable", &[("kubeconfig", unreachable)])
        .await?;
    clusters
        .secret("no-crd", &[("kubeconfig", no_crd.kubeconfig_yaml())])
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_cluster_that_cannot_be_used_is_refused_before_anything_is_touched()
-> anyhow::Result<()> {
    let clusters = TwoClusters::start().await?;
    let no_crd = LocalApiServer::start(Options::default()).await?;
    bad_secrets(&clusters, &no_crd).await?;
    clusters
        .secret(
            "cluster-b",
            &[("kubeconfig", clusters.remote.kubeconfig_yaml())],
        )
        .await?;
    clusters
        .fbgds()
        .create(
            &PostParams::default(),
            &FlinkBlueGreenDeployment::new("orders", shared_orders_job()),
        )
        .await?;
    clusters.wait_steady(Color::Blue).await?;
    let blue = DeploymentRef::new(HOME_NS, "orders-blue");
    let job_id = clusters
        .flink_a
        .job(&blue)
        .expect("blue runs")
        .job_id
        .clone();

    let cases = [
        ("absent", "does not exist in this namespace"),
        ("wrong-key", "has no key \"kubeconfig\""),
        ("garbage", "cannot be used"),
        ("exec", "only inline credentials are accepted"),
        ("unreachable", "is not reachable"),
        ("no-crd", "does not serve FlinkDeployment"),
    ];
    for (secret, refusal) in cases {
        clusters
            .patch_spec(json!({"cluster": clusters.cluster_b(secret)}))
            .await?;
        let refused = clusters
            .wait_for(&format!("the refusal of Secret {secret}"), |f| {
                degraded(f).is_some_and(|(_, m)| m.contains(refusal))
            })
            .await?;
        let (reason, message) = degraded(&refused).expect("degraded");
        assert_eq!(reason, "InvalidSpec", "{message}");
        assert!(message.contains("`spec.cluster`"), "{message}");
        let status = refused.status.expect("status");
        assert!(status.transition.is_none(), "{secret}: {status:?}");
        assert_eq!(status.active_color, Some(Color::Blue));
    }
    assert!(
        !std::path::Path::new("/tmp/bluegreen-kubeconfig-exec-ran").exists(),
        "the exec plugin ran"
    );

    // A usable cluster, but the running job's savepoints go to a directory only A reaches.
    clusters
        .patch_spec(json!({
            "cluster": clusters.cluster_b("cluster-b"),
            "coordination": {"sharedStorage": null},
        }))
        .await?;
    let refused = clusters
        .wait_for("the refusal of local storage", |f| {
            degraded(f).is_some_and(|(_, m)| m.contains("a path only one cluster reaches"))
        })
        .await?;
    let (_, message) = degraded(&refused).expect("degraded");
    assert!(
        message.contains("flinkConfiguration[\"state.savepoints.dir\"]"),
        "{message}"
    );
    assert!(refused.status.expect("status").transition.is_none());

    // Nothing was touched: blue runs the same job in A, nothing was created in B.
    assert_eq!(
        clusters.flink_a.job(&blue).expect("blue runs").job_id,
        job_id
    );
    assert_eq!(
        clusters.children().await?,
        (vec!["orders-blue".into()], vec![])
    );
    no_crd.shutdown().await;
    clusters.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_deployed_straight_to_another_cluster_is_deleted_there_with_its_resource()
-> anyhow::Result<()> {
    let clusters = TwoClusters::start().await?;
    clusters
        .secret(
            "cluster-b",
            &[("kubeconfig", clusters.remote.kubeconfig_yaml())],
        )
        .await?;
    let mut spec = shared_orders_job();
    spec.cluster = Some(serde_json::from_value(clusters.cluster_b("cluster-b"))?);
    clusters
        .fbgds()
        .create(
            &PostParams::default(),
            &FlinkBlueGreenDeployment::new("orders", spec),
        )
        .await?;
    clusters.wait_steady(Color::Blue).await?;
    assert_eq!(
        clusters.children().await?,
        (vec![], vec!["orders-blue".into()])
    );
    // The remote child has no owner there: only the finalizer deletes it.
    let blue: DynamicObject =
        Api::namespaced_with(clusters.b.clone(), REMOTE_NS, &flink_deployment_resource())
            .get("orders-blue")
            .await?;
    assert!(blue.metadata.owner_references.is_none(), "{blue:?}");
    assert!(clusters.home_secret("orders-blue").await?.is_some());
    clusters
        .fbgds()
        .delete("orders", &kube::api::DeleteParams::default())
        .await?;
    let deadline = tokio::time::Instant::now() + STEADY;
    while clusters.fbgds().get_opt("orders").await?.is_some() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the resource was not deleted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(clusters.children().await?, (vec![], vec![]));
    assert!(clusters.home_secret("orders-blue").await?.is_none());
    assert_eq!(clusters.home_account("orders-blue").await?, (false, false));
    clusters.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_without_a_home_api_server_is_refused_and_once_named_the_credential_precedes_the_child()
-> anyhow::Result<()> {
    let clusters = TwoClusters::start_with(false).await?;
    clusters
        .secret(
            "cluster-b",
            &[("kubeconfig", clusters.remote.kubeconfig_yaml())],
        )
        .await?;
    clusters
        .fbgds()
        .create(
            &PostParams::default(),
            &FlinkBlueGreenDeployment::new("orders", shared_orders_job()),
        )
        .await?;
    clusters.wait_steady(Color::Blue).await?;
    clusters
        .patch_spec(json!({"cluster": clusters.cluster_b("cluster-b")}))
        .await?;
    let refused = clusters
        .wait_for("the refusal of a move without a home API server", |f| {
            degraded(f).is_some_and(|(_, m)| m.contains("homeApiServer"))
        })
        .await?;
    let (reason, message) = degraded(&refused).expect("degraded");
    assert_eq!(reason, "InvalidSpec", "{message}");
    assert!(
        message.contains("`spec.cluster.homeApiServer`"),
        "{message}"
    );
    assert!(message.contains("--home-api-server"), "{message}");
    assert!(refused.status.expect("status").transition.is_none());
    assert_eq!(
        clusters.children().await?,
        (vec!["orders-blue".into()], vec![])
    );
    // Named per resource, the move goes ahead: the status records where green goes, then its
    // gates' Secret is written there, then green is created (here B refuses it at first).
    let green_apply = RequestMatch::verb(Verb::Patch)
        .resource("flinkdeployments")
        .name("orders-green");
    clusters.remote.faults().fail_next(green_apply, 1_000, 500);
    let mut cluster = clusters.cluster_b("cluster-b");
    cluster["homeApiServer"] = json!(clusters.home.url());
    clusters.patch_spec(json!({"cluster": cluster})).await?;
    clusters
        .wait_for("green's cluster recorded", |f| {
            f.status
                .as_ref()
                .is_some_and(|s| s.clusters.green.is_some())
        })
        .await?;
    let deadline = tokio::time::Instant::now() + STEADY;
    while clusters.home_secret("orders-green").await?.is_none() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no Secret for green's gates in B"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        clusters.children().await?,
        (vec!["orders-blue".into()], vec![]),
        "the Secret is written before the child"
    );
    clusters.remote.faults().clear();
    clusters.wait_steady(Color::Green).await?;
    assert!(clusters.home_secret("orders-green").await?.is_some());
    clusters.shutdown().await;
    Ok(())
}
