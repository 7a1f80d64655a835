//! The local stack the demo and the end-to-end tests run on: the in-process Kubernetes API server
//! with both CRDs, the local Flink runner on a scaled clock, and the controller — the same code
//! as `bluegreen-controller run`, pointed at them through an ordinary `kube::Client`.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bluegreen_controller::conditions::ConditionType;
use bluegreen_controller::context::Context;
use bluegreen_controller::resource::{
    FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentSpec, Phase,
};
use bluegreen_local_apiserver::{AuthMode, LocalApiServer, Options};
use bluegreen_local_flink::crd::install_flink_deployment_crd;
use bluegreen_local_flink::ledger::{Expectation, LedgerReport, SinkMode};
use bluegreen_local_flink::real::{RealFlink, RealFlinkOptions};
use bluegreen_local_flink::{
    DEFAULT_START_MS, DeploymentRef, LocalFlink, LocalFlinkOptions, SimClock,
};
use bluegreen_protocol::Color;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{CustomResourceExt, ResourceExt};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::real;

/// The namespace everything runs in.
pub const NAMESPACE: &str = "default";

/// How the stack runs.
#[derive(Debug, Clone)]
pub struct StackOptions {
    /// Simulated seconds per wall-clock second.
    pub speed: f64,
    /// How sinks commit into the ledger.
    pub sink: SinkMode,
    /// Keep the API server's objects in this directory.
    pub data_dir: Option<std::path::PathBuf>,
    /// Run FlinkDeployments as real Flink jobs (`bluegreen_local_flink::real`) instead of
    /// simulated ones; `kubeconfig_yaml` and `namespace` are set by the stack. The simulated
    /// runner then watches no namespace the stack uses (its ledger stays empty).
    pub real_flink: Option<RealFlinkOptions>,
    /// The API server's authentication and authorization (the stack's own clients are its
    /// administrator).
    pub auth: AuthMode,
}

impl Default for StackOptions {
    fn default() -> Self {
        Self {
            speed: 20.0,
            sink: SinkMode::Transactional,
            data_dir: None,
            real_flink: None,
            auth: AuthMode::Off,
        }
    }
}

/// The running stack.
pub struct LocalStack {
    /// The Kubernetes API server.
    pub server: LocalApiServer,
    /// A client of it.
    pub client: kube::Client,
    /// The local Flink runner.
    pub flink: LocalFlink,
    /// The real-mode runner, with [`StackOptions::real_flink`].
    pub real_flink: Option<RealFlink>,
    /// The controller's shared context.
    pub ctx: Arc<Context>,
    controller: Option<(watch::Sender<bool>, JoinHandle<()>)>,
}

impl LocalStack {
    /// Starts the API server, installs the FlinkDeployment and FlinkBlueGreenDeployment CRDs and
    /// starts the Flink runner. The controller is started with [`LocalStack::start_controller`].
    pub async fn start(options: StackOptions) -> anyhow::Result<Self> {
        // Logs go to the test's captured output (shown when a test fails); `RUST_LOG` filters.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| "warn".into()),
            )
            .with_test_writer()
            .try_init();
        let server = start_server(Options {
            data_dir: options.data_dir,
            auth: options.auth,
            ..Options::default()
        })
        .await?;
        let client = server.client();
        let real = options.real_flink.is_some();
        let flink = LocalFlink::start(
            client.clone(),
            LocalFlinkOptions {
                clock: SimClock::scaled(DEFAULT_START_MS, options.speed),
                sink_mode: options.sink,
                namespace: real.then(|| "bluegreen-simulator-idle".to_owned()),
                ..LocalFlinkOptions::default()
            },
        )
        .await
        .context("start the local Flink runner")?;
        let real_flink = match options.real_flink {
            Some(mut real) => {
                real.kubeconfig_yaml = server.kubeconfig_yaml();
                real.namespace = Some(NAMESPACE.to_owned());
                Some(
                    RealFlink::start(client.clone(), real)
                        .await
                        .context("start the real-mode Flink runner")?,
                )
            }
            None => None,
        };
        let rest_url_template = real_flink
            .as_ref()
            .map_or_else(|| flink.rest_url_template(), RealFlink::rest_url_template);
        let ctx = Arc::new(Context::new(
            client.clone(),
            &rest_url_template,
            Duration::from_secs(2),
            "local",
        ));
        Ok(Self {
            server,
            client,
            flink,
            real_flink,
            ctx,
            controller: None,
        })
    }

    /// Starts the controller (no leader election: it is the only replica).
    pub fn start_controller(&mut self) {
        let (stop, mut stopped) = watch::channel(false);
        let shutdown = async move {
            let _ = stopped.wait_for(|s| *s).await;
        };
        let task = tokio::spawn(bluegreen_controller::reconcile::run(
            Arc::clone(&self.ctx),
            Some(NAMESPACE.to_owned()),
            shutdown,
        ));
        self.controller = Some((stop, task));
    }

    /// Stops the controller abruptly (its task is dropped mid-reconcile), as a crash would.
    pub async fn crash_controller(&mut self) {
        if let Some((_, task)) = self.controller.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// The API of our resource.
    pub fn fbgds(&self) -> Api<FlinkBlueGreenDeployment> {
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    /// The promoted handovers of `name` (`(W, incoming color)`, in W order), from its status
    /// history: what a ledger expects after blue's first records.
    ///
    /// # Errors
    /// When the resource cannot be read or has no status.
    pub async fn promoted_handovers(&self, name: &str) -> anyhow::Result<Vec<(i64, Color)>> {
        let status = self
            .fbgds()
            .get(name)
            .await?
            .status
            .context("no status yet")?;
        let mut handovers: Vec<(i64, Color)> = status
            .history
            .iter()
            .filter(|h| h.outcome == bluegreen_controller::resource::Outcome::Promoted)
            .filter_map(|h| h.toggle.map(|w| (w, h.to)))
            .collect();
        handovers.sort_unstable();
        Ok(handovers)
    }

    /// The events (events.k8s.io/v1) recorded about the object `name`, as stored.
    pub async fn events(&self, name: &str) -> anyhow::Result<Vec<kube::api::DynamicObject>> {
        let events: Api<kube::api::DynamicObject> = Api::namespaced_with(
            self.client.clone(),
            NAMESPACE,
            &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
                "events.k8s.io",
                "v1",
                "Event",
            )),
        );
        Ok(events
            .list(&kube::api::ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|e| e.data["regarding"]["name"] == name)
            .collect())
    }

    /// Creates a FlinkBlueGreenDeployment.
    pub async fn create(
        &self,
        name: &str,
        spec: FlinkBlueGreenDeploymentSpec,
    ) -> anyhow::Result<()> {
        let fbgd = FlinkBlueGreenDeployment::new(name, spec);
        self.fbgds().create(&PostParams::default(), &fbgd).await?;
        Ok(())
    }

    /// Merge-patches the spec of `name`.
    pub async fn patch_spec(&self, name: &str, spec: serde_json::Value) -> anyhow::Result<()> {
        self.fbgds()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({ "spec": spec })),
            )
            .await?;
        Ok(())
    }

    /// Waits (wall clock, bounded) until `done` holds for the resource.
    pub async fn wait_for(
        &self,
        name: &str,
        timeout: Duration,
        what: &str,
        done: impl Fn(&FlinkBlueGreenDeployment) -> bool,
    ) -> anyhow::Result<FlinkBlueGreenDeployment> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let fbgd = self.fbgds().get(name).await?;
            if done(&fbgd) {
                return Ok(fbgd);
            }
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "{name}: {what} did not happen within {timeout:?}; status: {}\n{}",
                    serde_json::to_string_pretty(&fbgd.status)?,
                    self.diagnose(name).await
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// What a failed wait shows besides the resource's status: each child's status and, for
    /// real jobs, the end of their logs.
    pub async fn diagnose(&self, name: &str) -> String {
        let children: Api<kube::api::DynamicObject> = Api::namespaced_with(
            self.client.clone(),
            NAMESPACE,
            &bluegreen_controller::context::flink_deployment_resource(),
        );
        let mut out = String::new();
        for color in [Color::Blue, Color::Green] {
            let child = format!("{name}-{}", color.suffix());
            let status = match children.get_opt(&child).await {
                Ok(Some(c)) => serde_json::to_string(&c.data.get("status")).unwrap_or_default(),
                Ok(None) => "absent".to_owned(),
                Err(e) => format!("unreadable: {e}"),
            };
            let _ = writeln!(out, "child {child}: {status}");
            if let Some(real) = &self.real_flink {
                let dir = real.deployment_dir(&DeploymentRef::new(NAMESPACE, child));
                out.push_str(&real::log_tails(&dir));
            }
        }
        out
    }

    /// Waits until a handover of `name` is in `phase`.
    pub async fn wait_phase(
        &self,
        name: &str,
        phase: Phase,
        timeout: Duration,
    ) -> anyhow::Result<FlinkBlueGreenDeployment> {
        self.wait_for(name, timeout, &format!("phase {phase:?}"), |f| {
            f.status
                .as_ref()
                .and_then(|s| s.transition.as_ref())
                .is_some_and(|t| t.phase == phase)
        })
        .await
    }

    /// Waits until `name` runs `color` alone with no handover in progress.
    pub async fn wait_steady(
        &self,
        name: &str,
        color: Color,
        timeout: Duration,
    ) -> anyhow::Result<FlinkBlueGreenDeployment> {
        self.wait_for(name, timeout, &format!("steady on {color}"), |f| {
            f.status.as_ref().is_some_and(|s| {
                s.active_color == Some(color)
                    && s.transition.is_none()
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == ConditionType::Ready.as_str() && c.status == "True")
            })
        })
        .await
    }

    /// The ledger's verdict on everything `name` emitted so far, judged by the handovers in its
    /// status history: every record up to the active job's watermark (that had arrived by then)
    /// emitted exactly once, by the color that owned its event time. Waits until the active job
    /// completed two more checkpoints so that the transactional sink has committed them.
    pub async fn report(&self, name: &str) -> anyhow::Result<LedgerReport> {
        let status = self.fbgds().get(name).await?.status.unwrap_or_default();
        anyhow::ensure!(
            status
                .history
                .last()
                .is_some_and(|oldest| oldest.epoch <= 1),
            "the status keeps only the last {} handovers and the first W is gone: judge runs with fewer, or with report_handovers",
            bluegreen_controller::handover::HISTORY_LEN
        );
        let handovers: Vec<_> = status
            .history
            .iter()
            .filter(|h| h.outcome == bluegreen_controller::resource::Outcome::Promoted)
            .filter_map(|h| h.toggle.map(|w| (w, h.to)))
            .collect();
        self.report_handovers(name, &handovers).await
    }

    /// The ledger's verdict as [`LocalStack::report`] gives it, judged by `handovers` (W and the
    /// incoming color of every promoted handover, in any order) instead of the status history,
    /// which keeps only the last few: for runs with more handovers than that.
    pub async fn report_handovers(
        &self,
        name: &str,
        handovers: &[(i64, Color)],
    ) -> anyhow::Result<LedgerReport> {
        let fbgd = self.fbgds().get(name).await?;
        ledger_report(&self.flink, &fbgd, handovers).await
    }

    /// Stops the controller and the runner.
    pub async fn shutdown(mut self) {
        if let Some((stop, task)) = self.controller.take() {
            let _ = stop.send(true);
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
        self.flink.shutdown();
        if let Some(real) = self.real_flink {
            real.shutdown();
        }
        self.server.shutdown().await;
    }
}

/// Starts a local API server with the FlinkDeployment and FlinkBlueGreenDeployment CRDs.
pub async fn start_server(options: Options) -> anyhow::Result<LocalApiServer> {
    let server = LocalApiServer::start(options)
        .await
        .context("start the local Kubernetes API server")?;
    install_flink_deployment_crd(&server).context("install the FlinkDeployment CRD")?;
    server
        .apply_object(&FlinkBlueGreenDeployment::crd())
        .context("install the FlinkBlueGreenDeployment CRD")?;
    Ok(server)
}

/// The ledger's verdict on what the active job of `fbgd` and its predecessors emitted, judged by
/// `handovers` (W and the incoming color of every promoted handover, in any order): every record
/// exactly once, by the color that owned its event time. Waits until the active job completed
/// two more checkpoints, so that the transactional sink has committed what it read.
pub async fn ledger_report(
    flink: &LocalFlink,
    fbgd: &FlinkBlueGreenDeployment,
    handovers: &[(i64, Color)],
) -> anyhow::Result<LedgerReport> {
    let status = fbgd.status.clone().unwrap_or_default();
    let active = status.active_color.context("no active color")?;
    let d = DeploymentRef::new(
        NAMESPACE,
        format!("{}-{}", fbgd.name_any(), active.suffix()),
    );
    let job = flink.job(&d).context("the active job is not running")?;
    let view = job.view();
    let (horizon, arrived_by, checkpoints) = (
        view.job_watermark,
        flink.clock().now_ms(),
        view.completed_checkpoints,
    );
    flink
        .wait_for_job(&d, Duration::from_secs(20), |v| {
            v.completed_checkpoints >= checkpoints + 2
        })
        .await?;
    let mut expectation = Expectation::new(job.settings.source.clone(), horizon)
        .arrived_by(arrived_by)
        .owned_by(Color::Blue);
    let mut handovers = handovers.to_vec();
    handovers.sort_unstable();
    for (w, to) in handovers {
        expectation = expectation.handover(w, to);
    }
    Ok(flink.ledger().report(&expectation))
}
