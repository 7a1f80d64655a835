//! Real mode: every `FlinkDeployment` whose `spec.job.jarURI` is a local jar runs as a real
//! Flink job of the line its `spec.flinkVersion` names (Flink 1.20 or 2.x, [`FlinkMajor`]), one
//! JVM per deployment (a MiniCluster started by the Java launcher,
//! `local-flink/launcher`, built by Maven), with the real `bluegreen-sidecar`
//! next to it, and its status moved the way the Apache Flink Kubernetes Operator moves it.
//!
//! * [`RealFlink::start`] runs the runner shell's watch of `FlinkDeployment`s (as JSON), one
//!   actor per resource, with a real job (`deployment.rs`) behind each.
//! * [`RealFlink::rest_url_template`]: one local reverse proxy for every job's REST API,
//!   `http://127.0.0.1:PORT/{namespace}/{name}` (on a cluster:
//!   `http://{name}-rest.{namespace}.svc:8081`).
//! * Every child process is killed on [`RealFlink::shutdown`] and on drop.
//!
//! See `docs/local-flink.md`, "Real mode".

mod deployment;
mod flink_rest;
mod line;
mod ports;
mod process;
mod proxy;
mod spec;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

pub use line::{FlinkLine, FlinkMajor};
pub use spec::MAIN_CONTAINER;

use self::deployment::RealDeployment;
use self::process::JobProcess;
use crate::shell::Shell;
use crate::{DeploymentRef, Error};

/// Settings of a [`RealFlink`].
#[derive(Debug, Clone)]
pub struct RealFlinkOptions {
    /// The Flink 1.20 line (`spec.flinkVersion: v1_20`): `scripts/flink-jars.sh` and
    /// `target/launcher/bluegreen-launcher.jar` (`mvn -B package -DskipTests`).
    pub flink_1_20: Option<FlinkLine>,
    /// The Flink 2.x line (`v2_0`, `v2_1`, …): `FLINK_VERSION=2.3.0 scripts/flink-jars.sh` and
    /// `target/launcher-flink2/bluegreen-launcher.jar` (`mvn -B package -DskipTests -Pflink2`).
    pub flink_2: Option<FlinkLine>,
    /// The `bluegreen-sidecar` binary; `None`: no sidecar (and no `BLUEGREEN_SIDECAR_URL`).
    pub sidecar_binary: Option<PathBuf>,
    /// Checkpoints, savepoints, logs and per-run files, under `<namespace>/<name>/`.
    pub work_dir: PathBuf,
    /// The kubeconfig the sidecars use (`LocalApiServer::kubeconfig_yaml()`), unless the
    /// TaskManager pod template mounts one from a Secret for the sidecar's `KUBECONFIG`
    /// ([`secret_volume`](crate::secret_volume)): that Secret, read from the runner's API server,
    /// is written under the run's directory as a kubelet would, and rewritten every few seconds.
    pub kubeconfig_yaml: String,
    /// The `java` executable (default `java`, from `PATH`).
    pub java: PathBuf,
    /// The maximum heap of each job JVM (`-Xmx`, default `512m`).
    pub jvm_heap: String,
    /// More JVM options (default: `-XX:+UseSerialGC -XX:TieredStopAtLevel=1`, for a quick
    /// start-up on few cores).
    pub jvm_options: Vec<String>,
    /// Watch only this namespace (`None`: all namespaces).
    pub namespace: Option<String>,
    /// Port of the REST proxy on 127.0.0.1 (`0`: any free port).
    pub rest_port: u16,
    /// How long a new JVM may take until its REST API answers (default 3 min).
    pub startup_timeout: Duration,
    /// How long a stop-with-savepoint or a cancel may take (default 1 min).
    pub operation_timeout: Duration,
    /// How often a running job is polled through its REST API (default 500 ms).
    pub poll_interval: Duration,
}

impl RealFlinkOptions {
    /// Options with the defaults above and the Flink 1.20 line only (set
    /// [`flink_2`](Self::flink_2) for Flink 2.x).
    pub fn new(
        flink_1_20: FlinkLine,
        work_dir: impl Into<PathBuf>,
        kubeconfig_yaml: impl Into<String>,
    ) -> Self {
        Self {
            flink_1_20: Some(flink_1_20),
            flink_2: None,
            sidecar_binary: None,
            work_dir: work_dir.into(),
            kubeconfig_yaml: kubeconfig_yaml.into(),
            java: PathBuf::from("java"),
            jvm_heap: "512m".into(),
            jvm_options: vec!["-XX:+UseSerialGC".into(), "-XX:TieredStopAtLevel=1".into()],
            namespace: None,
            rest_port: 0,
            startup_timeout: Duration::from_mins(3),
            operation_timeout: Duration::from_mins(1),
            poll_interval: Duration::from_millis(500),
        }
    }

    /// The line a deployment's `spec.flinkVersion` asks for; an error naming the field and the
    /// commands that install the line when the runner was not given it (never another line).
    pub fn line(&self, flink_version: Option<&str>) -> Result<&FlinkLine, Error> {
        let major = FlinkMajor::of(flink_version)?;
        let (line, field) = match major {
            FlinkMajor::V1_20 => (&self.flink_1_20, "flink_1_20"),
            FlinkMajor::V2 => (&self.flink_2, "flink_2"),
        };
        line.as_ref().ok_or_else(|| Error::FlinkLineMissing {
            version: flink_version.unwrap_or_default().to_owned(),
            line: major,
            field,
            hint: major.install_hint(),
        })
    }
}

/// State shared by the watch, the actors and the proxy.
pub(crate) struct Shared {
    options: RealFlinkOptions,
    http: reqwest::Client,
    /// A client of the runner's own API server (the Secrets a pod template mounts).
    client: kube::Client,
    /// The processes of every deployment that has some.
    processes: Mutex<BTreeMap<DeploymentRef, JobProcess>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("options", &self.options)
            .field("processes", &self.processes)
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn processes(&self) -> MutexGuard<'_, BTreeMap<DeploymentRef, JobProcess>> {
        self.processes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn rest_port(&self, d: &DeploymentRef) -> Option<u16> {
        self.processes().get(d).map(|p| p.rest_port)
    }

    fn deployment_dir(&self, d: &DeploymentRef) -> PathBuf {
        self.options.work_dir.join(&d.namespace).join(&d.name)
    }
}

/// The real-mode FlinkDeployment runner and its REST proxy.
#[derive(Debug)]
pub struct RealFlink {
    shared: Arc<Shared>,
    shell: Shell,
}

impl RealFlink {
    /// Starts watching `FlinkDeployment`s through `client` and serving the REST proxy. The
    /// FlinkDeployment CRD must be installed (see [`crd`](super::crd)).
    pub async fn start(client: kube::Client, options: RealFlinkOptions) -> Result<Self, Error> {
        std::fs::create_dir_all(&options.work_dir).map_err(|source| Error::Io {
            what: "creating",
            path: options.work_dir.display().to_string(),
            source,
        })?;
        let kubeconfig = options.work_dir.join("kubeconfig.yaml");
        std::fs::write(&kubeconfig, &options.kubeconfig_yaml).map_err(|source| Error::Io {
            what: "writing",
            path: kubeconfig.display().to_string(),
            source,
        })?;
        let shared = Arc::new(Shared {
            http: reqwest::Client::new(),
            client: client.clone(),
            processes: Mutex::default(),
            options,
        });
        let shell = Shell::start(
            "Flink REST proxy",
            proxy::router(Arc::clone(&shared)),
            shared.options.rest_port,
            client,
            shared.options.namespace.clone(),
            {
                let shared = Arc::clone(&shared);
                move |_| RealDeployment::new(Arc::clone(&shared))
            },
        )
        .await?;
        Ok(Self { shared, shell })
    }

    /// The REST URL template to configure the controller with:
    /// `http://127.0.0.1:<port>/{namespace}/{name}`.
    pub fn rest_url_template(&self) -> String {
        self.shell.rest_url_template()
    }

    /// The REST base URL of one deployment (through the proxy).
    pub fn rest_url(&self, d: &DeploymentRef) -> String {
        self.shell.rest_url(d)
    }

    /// `http://127.0.0.1:<port>` of the deployment's sidecar, while one runs.
    pub fn sidecar_url(&self, d: &DeploymentRef) -> Option<String> {
        let port = self.shared.processes().get(d)?.sidecar_port?;
        Some(format!("http://127.0.0.1:{port}"))
    }

    /// The process id of the deployment's job JVM, while one runs.
    pub fn jvm_pid(&self, d: &DeploymentRef) -> Option<u32> {
        self.shared.processes().get(d).map(JobProcess::pid)
    }

    /// The deployment's directory: `checkpoints/`, `savepoints/` and `run-N/` (each with
    /// `flink.log`, `launcher.log`, `sidecar.log`, `flink-conf.properties` and the JVM's `tmp/`).
    pub fn deployment_dir(&self, d: &DeploymentRef) -> PathBuf {
        self.shared.deployment_dir(d)
    }

    /// Stops the watch and the proxy and kills every job JVM and sidecar (running jobs are not
    /// cancelled first, as when a cluster goes away). Dropping the runner does the same.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for RealFlink {
    fn drop(&mut self) {
        self.shell.stop();
        let processes = std::mem::take(&mut *self.shared.processes());
        drop(processes);
    }
}
