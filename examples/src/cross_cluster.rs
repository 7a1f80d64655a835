//! Two clusters on real Flink (issue 27): cluster A, the home (the local stack on real Flink: the
//! resource, its coordination ConfigMap, the controller, a real runner), and cluster B (a second
//! local API server with its own real runner), in one process. A Secret in A holds B's
//! kubeconfig for `spec.cluster`; one directory stands for the object storage both clusters
//! reach (checkpoints and savepoints, declared in `coordination.sharedStorage`) and holds the
//! example job's output, so that one file ledger judges the job wherever it runs. Used by
//! `tests/tests/real_cross_cluster.rs` and `scripts/demo --cross-cluster`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use bluegreen_controller::context::flink_deployment_resource;
use bluegreen_controller::resource::{FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentSpec};
use bluegreen_local_apiserver::{AuthMode, LocalApiServer, Options};
use bluegreen_local_flink::DeploymentRef;
use bluegreen_local_flink::real::RealFlink;
use bluegreen_protocol::Color;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::{Value, json};

use crate::real::{self, Artifacts, ExampleJob};
use crate::stack::start_server;
use crate::{LocalStack, NAMESPACE};

/// The children's namespace in cluster B.
pub const REMOTE_NAMESPACE: &str = "jobs";
/// The Secret in A's namespace that holds B's kubeconfig.
pub const REMOTE_SECRET: &str = "cluster-b";

/// One of the two clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cluster {
    /// A: where the resource, its ConfigMap and the controller are.
    Home,
    /// B: reached through the kubeconfig Secret [`REMOTE_SECRET`].
    Remote,
}

impl std::fmt::Display for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Home => "cluster A (home)",
            Self::Remote => "cluster B",
        })
    }
}

/// The FlinkDeployments of each cluster, by name: A's in [`NAMESPACE`], B's in
/// [`REMOTE_NAMESPACE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// In A.
    pub home: Vec<String>,
    /// In B.
    pub remote: Vec<String>,
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |names: &[String]| {
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        };
        write!(
            f,
            "FlinkDeployments in A: {}; in B: {}",
            list(&self.home),
            list(&self.remote)
        )
    }
}

/// The two clusters, their runners and the controller against A.
pub struct CrossClusterStack {
    /// Cluster A: the local stack on real Flink, with the controller running.
    pub home: LocalStack,
    /// Cluster B's API server.
    pub remote: LocalApiServer,
    /// Cluster B's real runner, watching [`REMOTE_NAMESPACE`].
    pub remote_flink: RealFlink,
    /// The directory both clusters reach: `state/` (checkpoints, savepoints) and the job's
    /// output.
    pub shared: PathBuf,
}

impl CrossClusterStack {
    /// Starts A (its runner's files under `work/a`) and B (under `work/b`), creates B's
    /// kubeconfig Secret in A and starts the controller. B's runner has B's kubeconfig only: its
    /// sidecars read A with the credential the controller mounts into each remote child.
    pub async fn start(artifacts: &Artifacts, work: &Path) -> anyhow::Result<Self> {
        let shared = work.join("shared");
        std::fs::create_dir_all(&shared)?;
        // A authenticates and authorizes every request, as a real cluster does: B's gates need
        // the controller's credential to read the ConfigMap.
        let mut home = LocalStack::start(crate::StackOptions {
            real_flink: Some(artifacts.options(&work.join("a"))),
            auth: AuthMode::Rbac,
            ..crate::StackOptions::default()
        })
        .await?;
        let remote = start_server(Options::default()).await?;
        remote.ensure_namespace(REMOTE_NAMESPACE)?;
        let mut options = artifacts.options(&work.join("b"));
        // B's own: its sidecars reach A only through the credential the controller mounts.
        options.kubeconfig_yaml = remote.kubeconfig_yaml();
        options.namespace = Some(REMOTE_NAMESPACE.to_owned());
        let remote_flink = RealFlink::start(remote.client(), options)
            .await
            .context("start cluster B's real-mode Flink runner")?;
        home.server.apply_object(&json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": REMOTE_SECRET, "namespace": NAMESPACE},
            "stringData": {"kubeconfig": remote.kubeconfig_yaml()},
        }))?;
        home.start_controller();
        Ok(Self {
            home,
            remote,
            remote_flink,
            shared,
        })
    }

    /// `file://` of the shared state directory, with the trailing `/` `sharedStorage` needs.
    fn shared_storage(&self) -> String {
        format!("file://{}/", self.shared.join("state").display())
    }

    /// The example job's spec with its checkpoints and savepoints on the shared storage.
    pub fn spec(&self, job: &ExampleJob, job_jar: &Path) -> FlinkBlueGreenDeploymentSpec {
        let mut spec = job.spec(job_jar);
        let storage = self.shared_storage();
        let conf = &mut spec.template.spec.flink_configuration;
        conf.insert(
            "state.savepoints.dir".into(),
            format!("{storage}savepoints"),
        );
        conf.insert(
            "state.checkpoints.dir".into(),
            format!("{storage}checkpoints"),
        );
        spec.coordination.shared_storage = vec![storage];
        spec
    }

    /// The merge patch of `spec` that moves the job to `job` in `cluster`: `spec.cluster` naming
    /// B through [`REMOTE_SECRET`] with B's runner's REST URL template and A's URL for B's gates,
    /// or removed for A.
    pub fn move_patch(&self, job: &ExampleJob, cluster: Cluster) -> Value {
        let mut patch = job.template_patch();
        patch["cluster"] = match cluster {
            Cluster::Home => Value::Null,
            Cluster::Remote => json!({
                "kubeconfigSecret": {"name": REMOTE_SECRET},
                "namespace": REMOTE_NAMESPACE,
                "flinkRestUrl": self.remote_flink.rest_url_template(),
                "homeApiServer": self.home.server.url(),
            }),
        };
        patch
    }

    /// The FlinkDeployments in each cluster.
    pub async fn placement(&self) -> anyhow::Result<Placement> {
        Ok(Placement {
            home: flink_deployment_names(&self.home.client, NAMESPACE).await?,
            remote: flink_deployment_names(&self.remote.client(), REMOTE_NAMESPACE).await?,
        })
    }

    /// The cluster `color` of `fbgd` runs in, as its status records it.
    pub fn cluster_of(fbgd: &FlinkBlueGreenDeployment, color: Color) -> Cluster {
        match fbgd.status.as_ref().and_then(|s| s.clusters.of(color)) {
            Some(_) => Cluster::Remote,
            None => Cluster::Home,
        }
    }

    /// The runner and the deployment of `name`'s `color` child in `cluster`.
    fn runner(&self, cluster: Cluster, name: &str, color: Color) -> (&RealFlink, DeploymentRef) {
        let child = format!("{name}-{}", color.suffix());
        match cluster {
            Cluster::Home => (
                self.home
                    .real_flink
                    .as_ref()
                    .expect("the home stack runs real Flink"),
                DeploymentRef::new(NAMESPACE, child),
            ),
            Cluster::Remote => (
                &self.remote_flink,
                DeploymentRef::new(REMOTE_NAMESPACE, child),
            ),
        }
    }

    /// Triggers a checkpoint of `name`'s active job, in whichever cluster it runs, and waits
    /// until it completed, so that everything the job read is committed.
    pub async fn commit_active(&self, name: &str) -> anyhow::Result<()> {
        let fbgd = self.home.fbgds().get(name).await?;
        let color = fbgd
            .status
            .as_ref()
            .and_then(|s| s.active_color)
            .context("no active color")?;
        let (runner, d) = self.runner(Self::cluster_of(&fbgd, color), name, color);
        let base = runner.rest_url(&d);
        let id = real::running_job_id(&base).await?;
        real::commit_checkpoint(&base, &id).await
    }

    /// Waits until `name` runs `color` alone with no handover in progress; on a timeout the
    /// error has the end of both clusters' job logs.
    pub async fn wait_steady(
        &self,
        name: &str,
        color: Color,
        timeout: Duration,
    ) -> anyhow::Result<FlinkBlueGreenDeployment> {
        match self.home.wait_steady(name, color, timeout).await {
            Ok(fbgd) => Ok(fbgd),
            Err(e) => {
                let mut logs = String::new();
                for &c in Color::ALL {
                    let (runner, d) = self.runner(Cluster::Remote, name, c);
                    logs.push_str(&real::log_tails(&runner.deployment_dir(&d)));
                }
                Err(e.context(format!("cluster B's job logs:\n{logs}")))
            }
        }
    }

    /// The Secret volume directory (`volumes/<secret>`) of the latest run of `name`'s `color`
    /// child in B, when that run mounted one: the files its sidecar's `KUBECONFIG` reads.
    pub fn remote_volume(&self, name: &str, color: Color) -> Option<PathBuf> {
        let (runner, d) = self.runner(Cluster::Remote, name, color);
        let run = real::runs(&runner.deployment_dir(&d)).pop()?;
        let mut volumes = std::fs::read_dir(run.join("volumes")).ok()?.flatten();
        volumes.next().map(|v| v.path())
    }

    /// Stops the controller, both runners and both API servers.
    pub async fn shutdown(self) {
        self.home.shutdown().await;
        self.remote_flink.shutdown();
        self.remote.shutdown().await;
    }
}

/// The names of the FlinkDeployments in `namespace` of the cluster `client` reaches.
///
/// # Errors
/// When that cluster does not answer.
pub async fn flink_deployment_names(
    client: &kube::Client,
    namespace: &str,
) -> anyhow::Result<Vec<String>> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &flink_deployment_resource());
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect())
}
