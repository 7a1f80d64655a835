//! A local stack with authentication and RBAC on, where the controller runs as its own service
//! account with only the RBAC that `deploy/` installs (the `kubectl kustomize deploy/` output,
//! optionally with one right removed), under leader election as `bluegreen-controller run`
//! does, and the simulated Flink runner acts as the Flink operator (an administrator).
//!
//! Shared by `least_privilege.rs` and `secrets_in_logs.rs`; every tracing line of the process
//! is captured ([`captured_logs`]).

#![allow(dead_code, reason = "each test binary uses a part")]

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, bail};
use bluegreen_controller::context::Context;
use bluegreen_controller::leader::{LeaseConfig, run_when_leader};
use bluegreen_controller::resource::FlinkBlueGreenDeployment;
use bluegreen_examples::orders_job;
use bluegreen_local_apiserver::{AuthMode, Denial, LocalApiServer, Options, Token};
use bluegreen_local_flink::crd::install_flink_deployment_crd;
use bluegreen_local_flink::ledger::LedgerReport;
use bluegreen_local_flink::{DEFAULT_START_MS, LocalFlink, LocalFlinkOptions, SimClock};
use bluegreen_protocol::Color;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Where the jobs run.
pub const NAMESPACE: &str = "default";
/// The install's namespace in `deploy/`.
pub const INSTALL_NAMESPACE: &str = "bluegreen-system";
/// The controller's ServiceAccount in `deploy/rbac.yaml`.
pub const CONTROLLER_SA: &str = "bluegreen-controller";
/// The ServiceAccount of the example job's pods (`serviceAccount: flink` in its spec).
pub const JOB_SA: &str = "flink";
/// Whether the sidecars (the simulated jobs' gates) read the coordination ConfigMap as the
/// job's service account, holding only the Role the controller renders for them (get, list,
/// watch on that one ConfigMap). Off while the controller does not render that Role yet: the
/// gates then read with the administrator's client. Turn it on when controller/src/child.rs
/// renders it.
pub const SIDECAR_RBAC_FROM_CONTROLLER: bool = true;

/// The example job's name.
pub const JOB: &str = "orders";

static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();

#[derive(Clone)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures every tracing line of this process (controller, API server, runner, gates) at
/// `filter` (`RUST_LOG` syntax) from now on. The first call wins.
pub fn capture_logs(filter: &str) {
    let buffer = Arc::clone(LOGS.get_or_init(Arc::default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_ansi(false)
        .with_writer(move || Capture(Arc::clone(&buffer)))
        .try_init();
}

/// Everything captured so far.
pub fn captured_logs() -> String {
    LOGS.get().map_or_else(String::new, |b| {
        String::from_utf8_lossy(&b.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    })
}

/// `kubectl kustomize deploy/`, once per process.
pub fn install_yaml() -> &'static str {
    static YAML: OnceLock<String> = OnceLock::new();
    YAML.get_or_init(|| {
        let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
        let out = std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(&deploy)
            .output()
            .expect("kubectl kustomize deploy/ (kubectl 1.32 must be on PATH)");
        assert!(
            out.status.success(),
            "kubectl kustomize deploy/: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    })
}

/// The install's objects with its namespace renamed to `namespace` (as an overlay would), so
/// that every bed's controller has a user name of its own.
pub fn install_objects(namespace: &str) -> Vec<Value> {
    let yaml = install_yaml().replace(INSTALL_NAMESPACE, namespace);
    serde_yaml::Deserializer::from_str(&yaml)
        .map(|d| serde::Deserialize::deserialize(d).expect("a YAML document"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// One right of the controller's RBAC: a verb of one rule of one Role or ClusterRole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Right {
    /// `ClusterRole` or `Role`.
    pub kind: String,
    /// The role's name.
    pub role: String,
    /// Index of the rule in the role.
    pub rule: usize,
    /// The rule's API groups.
    pub groups: Vec<String>,
    /// The rule's resources (`resource` or `resource/subresource`).
    pub resources: Vec<String>,
    /// The verb.
    pub verb: String,
}

impl std::fmt::Display for Right {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {} {}",
            self.kind,
            self.role,
            self.verb,
            self.resources
                .iter()
                .map(|r| {
                    let g = self.groups.first().map_or("", String::as_str);
                    if g.is_empty() {
                        r.clone()
                    } else {
                        format!("{r}.{g}")
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        )
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Every right the install's Roles and ClusterRoles grant, in document order: those of the roles
/// it binds. A ClusterRole it leaves for users to bind per namespace
/// (`bluegreen-controller-kubeconfig-secrets`, for `spec.cluster`) grants nothing by itself.
pub fn rights(objects: &[Value]) -> Vec<Right> {
    let bound: Vec<(&str, &str)> = objects
        .iter()
        .filter(|o| {
            matches!(
                o["kind"].as_str(),
                Some("RoleBinding" | "ClusterRoleBinding")
            )
        })
        .filter_map(|o| {
            Some((
                o["roleRef"]["kind"].as_str()?,
                o["roleRef"]["name"].as_str()?,
            ))
        })
        .collect();
    let mut out = Vec::new();
    for obj in objects {
        let kind = obj["kind"].as_str().unwrap_or_default();
        if !matches!(kind, "Role" | "ClusterRole") {
            continue;
        }
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        if !bound.contains(&(kind, name)) {
            continue;
        }
        for (i, rule) in obj["rules"].as_array().into_iter().flatten().enumerate() {
            for verb in strings(&rule["verbs"]) {
                out.push(Right {
                    kind: kind.to_owned(),
                    role: obj["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    rule: i,
                    groups: strings(&rule["apiGroups"]),
                    resources: strings(&rule["resources"]),
                    verb,
                });
            }
        }
    }
    out
}

/// The objects with `right` removed (its verb dropped from its rule; a rule left without verbs
/// is dropped).
pub fn without(objects: &[Value], right: &Right) -> Vec<Value> {
    let mut out = objects.to_vec();
    for obj in &mut out {
        if obj["kind"] != right.kind.as_str() || obj["metadata"]["name"] != right.role.as_str() {
            continue;
        }
        let rules = obj["rules"].as_array_mut().expect("rules");
        let verbs = rules[right.rule]["verbs"].as_array_mut().expect("verbs");
        verbs.retain(|v| v != right.verb.as_str());
        if verbs.is_empty() {
            rules.remove(right.rule);
        }
    }
    out
}

/// A running bed.
pub struct Bed {
    /// The API server (auth and RBAC on).
    pub server: LocalApiServer,
    /// An administrator's client (the test, and the Flink runner as the Flink operator).
    pub admin: kube::Client,
    /// The simulated Flink runner.
    pub flink: LocalFlink,
    /// The controller's context (its client acts as the controller's ServiceAccount).
    pub ctx: Arc<Context>,
    /// The install's namespace in this bed.
    pub install_namespace: String,
    /// The tokens the bed handed out: the controller's, and the job's service account's when
    /// [`SIDECAR_RBAC_FROM_CONTROLLER`].
    pub tokens: Vec<Token>,
    stop: watch::Sender<bool>,
    controller: JoinHandle<()>,
}

impl Bed {
    /// Starts a bed whose install (`deploy/` in namespace `install_namespace`) is `objects`.
    pub async fn start(
        install_namespace: &str,
        objects: &[Value],
        log_requests: bool,
    ) -> anyhow::Result<Self> {
        let server = LocalApiServer::start(Options {
            auth: AuthMode::Rbac,
            log_requests,
            ..Options::default()
        })
        .await?;
        install_flink_deployment_crd(&server)?;
        for obj in objects {
            server
                .apply_object(obj)
                .with_context(|| format!("install {} {}", obj["kind"], obj["metadata"]["name"]))?;
        }
        let mut tokens = Vec::new();
        let gate_client = if SIDECAR_RBAC_FROM_CONTROLLER {
            server.apply_object(&json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": JOB_SA, "namespace": NAMESPACE}}))?;
            let token = server.service_account_token(NAMESPACE, JOB_SA)?;
            let client = server.client_with_token(&token);
            tokens.push(token);
            Some(client)
        } else {
            None
        };
        let admin = server.client();
        let flink = LocalFlink::start(
            admin.clone(),
            LocalFlinkOptions {
                clock: SimClock::scaled(DEFAULT_START_MS, 20.0),
                gate_client,
                ..LocalFlinkOptions::default()
            },
        )
        .await?;
        let controller_token = server.service_account_token(install_namespace, CONTROLLER_SA)?;
        let controller_client = server.client_with_token(&controller_token);
        tokens.push(controller_token);
        let ctx = Arc::new(Context::new(
            controller_client,
            &flink.rest_url_template(),
            Duration::from_secs(2),
            "bluegreen-controller-0",
        ));
        let (stop, stopped) = watch::channel(false);
        let lease = LeaseConfig {
            namespace: install_namespace.to_owned(),
            name: "bluegreen-controller".into(),
            identity: "bluegreen-controller-0".into(),
            duration_seconds: 15,
            grace_seconds: 5,
        };
        // As `bluegreen-controller run` (deploy/controller.yaml): every namespace, leader election
        // in its own namespace; an error ends the process (here: is logged).
        let controller = tokio::spawn({
            let ctx = Arc::clone(&ctx);
            async move {
                if let Err(e) = run_when_leader(ctx, None, lease, stopped).await {
                    tracing::error!(error = %e, "bluegreen-controller exited");
                }
            }
        });
        Ok(Self {
            server,
            admin,
            flink,
            ctx,
            install_namespace: install_namespace.to_owned(),
            tokens,
            stop,
            controller,
        })
    }

    /// The controller's Kubernetes user name.
    pub fn controller_user(&self) -> String {
        format!(
            "system:serviceaccount:{}:{CONTROLLER_SA}",
            self.install_namespace
        )
    }

    /// The resource API, as the administrator.
    pub fn fbgds(&self) -> Api<FlinkBlueGreenDeployment> {
        Api::namespaced(self.admin.clone(), NAMESPACE)
    }

    /// The controller's refused requests so far.
    pub fn controller_denials(&self) -> Vec<Denial> {
        let user = self.controller_user();
        self.server
            .denials()
            .into_iter()
            .filter(|d| d.user == user)
            .collect()
    }

    /// Stops the controller, the runner and the server.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.controller).await;
        self.flink.shutdown();
        self.server.shutdown().await;
    }
}

/// The steps of the scenario every bed can run: deploy, hand over, delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// Create the example job; wait until blue runs alone, Ready.
    Deploy,
    /// Change its image; wait until green runs alone, Ready (a full handover).
    HandOver,
    /// Change it again; wait until blue runs alone, Ready (a second handover: the controller's
    /// events repeat, so its event recorder patches their series).
    HandBack,
    /// Delete the resource; wait until it, its children and its ConfigMap are gone.
    Delete,
}

/// Whether `name` runs `color` alone, Ready, with no handover in progress.
pub fn steady(f: &FlinkBlueGreenDeployment, color: Color) -> bool {
    f.status.as_ref().is_some_and(|s| {
        s.active_color == Some(color)
            && s.transition.is_none()
            && s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

impl Bed {
    /// Starts `step`.
    pub async fn begin(&self, step: Step) -> anyhow::Result<()> {
        match step {
            Step::Deploy => {
                let fbgd = FlinkBlueGreenDeployment::new(JOB, orders_job("v1", 2));
                self.fbgds().create(&PostParams::default(), &fbgd).await?;
            }
            Step::HandOver | Step::HandBack => {
                let version = if step == Step::HandOver { "v2" } else { "v3" };
                let image = format!("example.com/orders:{version}");
                let patch = json!({"spec": {"template": {"spec": {"image": image}}}});
                self.fbgds()
                    .patch(JOB, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
            Step::Delete => {
                self.fbgds().delete(JOB, &DeleteParams::default()).await?;
            }
        }
        Ok(())
    }

    /// Whether `step` is done.
    pub async fn done(&self, step: Step) -> anyhow::Result<bool> {
        Ok(match step {
            Step::Deploy => self
                .fbgds()
                .get_opt(JOB)
                .await?
                .is_some_and(|f| steady(&f, Color::Blue)),
            Step::HandOver => self
                .fbgds()
                .get_opt(JOB)
                .await?
                .is_some_and(|f| steady(&f, Color::Green)),
            Step::HandBack => self.fbgds().get_opt(JOB).await?.is_some_and(|f| {
                steady(&f, Color::Blue) && f.status.as_ref().is_some_and(|s| s.epoch >= 2)
            }),
            Step::Delete => {
                let children: Api<kube::api::DynamicObject> = Api::namespaced_with(
                    self.admin.clone(),
                    NAMESPACE,
                    &bluegreen_controller::context::flink_deployment_resource(),
                );
                let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
                    Api::namespaced(self.admin.clone(), NAMESPACE);
                self.fbgds().get_opt(JOB).await?.is_none()
                    && children
                        .list(&ListParams::default())
                        .await?
                        .items
                        .is_empty()
                    && cms
                        .get_opt(&bluegreen_protocol::configmap_name(JOB))
                        .await?
                        .is_none()
            }
        })
    }

    /// Runs `step` to its end, or fails after `timeout` with the resource's status.
    pub async fn run(&self, step: Step, timeout: Duration) -> anyhow::Result<()> {
        self.begin(step).await?;
        let deadline = tokio::time::Instant::now() + timeout;
        while !self.done(step).await? {
            if tokio::time::Instant::now() > deadline {
                let status = self.fbgds().get_opt(JOB).await?.map(|f| f.status);
                bail!(
                    "{step:?} did not finish within {timeout:?}; status: {}; the controller's refused requests: {:?}",
                    serde_json::to_string_pretty(&status)?,
                    self.controller_denials()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// The ledger's verdict on everything the job emitted (as `LocalStack::report`).
    pub async fn report(&self) -> anyhow::Result<LedgerReport> {
        let fbgd = self.fbgds().get(JOB).await?;
        let handovers: Vec<_> = fbgd
            .status
            .iter()
            .flat_map(|s| &s.history)
            .filter(|h| h.outcome == bluegreen_controller::resource::Outcome::Promoted)
            .filter_map(|h| h.toggle.map(|w| (w, h.to)))
            .collect();
        bluegreen_examples::ledger_report(&self.flink, &fbgd, &handovers).await
    }
}
