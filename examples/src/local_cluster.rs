//! `bluegreen-local up`: a local cluster to try your own manifests on.
//!
//! Starts, in this process, the local Kubernetes API server (with the FlinkDeployment and
//! FlinkBlueGreenDeployment CRDs), a local Flink runner — real Flink 1.20 jobs when a `java` runs
//! and the jars are built, else the simulated Flink — and the controller (the same reconciler as
//! `bluegreen-controller run`, watching every namespace). It writes a kubeconfig, prints how to
//! use it, and stays up until Ctrl-C or SIGTERM, then stops everything (job JVMs included).
//!
//! ```text
//! cargo run -p bluegreen-examples --bin bluegreen-local -- up
//! export KUBECONFIG=$PWD/.bluegreen-local/kubeconfig
//! kubectl apply -f examples/manifests/orders-simulated.yaml
//! ```
//!
//! `--manifest FILE` applies a user's own manifest once everything is up, with `@REPO@`,
//! `@WORK@`, `@T0@` and, with `--kafka` (a real Kafka broker on loopback), `@KAFKA@` filled in
//! (see [`Placeholders`]).

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bluegreen_controller::context::Context;
use bluegreen_controller::resource::FlinkBlueGreenDeployment;
use bluegreen_controller::server::{ServerState, serve};
use bluegreen_examples::kafka::{self, KafkaBroker};
use bluegreen_examples::real::{Artifacts, FLINK_VERSION, FLINK2_VERSION, java_available};
use bluegreen_local_apiserver::{LocalApiServer, Options};
use bluegreen_local_flink::crd::install_flink_deployment_crd;
use bluegreen_local_flink::ledger::SinkMode;
use bluegreen_local_flink::real::{FlinkMajor, RealFlink};
use bluegreen_local_flink::{DEFAULT_START_MS, LocalFlink, LocalFlinkOptions, SimClock};
use clap::{Parser, Subcommand};
use kube::CustomResourceExt;
use serde::Deserialize as _;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The example manifest for the simulated Flink, relative to the repository.
const SIMULATED_MANIFEST: &str = "examples/manifests/orders-simulated.yaml";
/// The example manifest for real Flink (with `@REPO@`, `@WORK@` and `@T0@` to fill in).
const REAL_MANIFEST: &str = "examples/manifests/example-job-real.yaml";
/// The example Kafka job for real Flink and `--kafka` (with `@KAFKA@` too).
const KAFKA_MANIFEST: &str = "examples/manifests/kafka-job-real.yaml";
/// The event-time jitter of the input `--kafka` writes (the example Kafka job's `--jitter-ms`).
const KAFKA_JITTER_MS: u64 = 1500;
/// How long the controller gets to finish its reconciles at shutdown.
const CONTROLLER_STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A local Kubernetes API server, Flink runner and bluegreen controller in one process.
#[derive(Debug, Parser)]
#[command(name = "bluegreen-local", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the API server (both CRDs installed), the Flink runner and the controller, write a
    /// kubeconfig, and stay up until Ctrl-C or SIGTERM.
    Up(UpArgs),
}

/// `bluegreen-local up`.
#[derive(Debug, clap::Args)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent command-line switches"
)]
struct UpArgs {
    /// Port of the Kubernetes API server on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 8001, env = "BLUEGREEN_LOCAL_PORT")]
    port: u16,
    /// Keep the API server's objects (and the simulated savepoints) in this directory across
    /// restarts; memory only when absent.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Directory for the kubeconfig (by default) and real Flink's job files.
    #[arg(long, default_value = ".bluegreen-local")]
    work_dir: PathBuf,
    /// Where to write the kubeconfig (default: <WORK_DIR>/kubeconfig).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Run the simulated Flink even when real Flink could run.
    #[arg(long, conflicts_with = "real")]
    simulated: bool,
    /// Run real Flink jobs; fail when no `java` runs or the jars are not built.
    #[arg(long)]
    real: bool,
    /// Simulated seconds per wall-clock second (simulated Flink only).
    #[arg(long, default_value_t = 20.0, value_parser = parse_speed)]
    speed: f64,
    /// Also serve the controller's /metrics, /healthz and /readyz on this address.
    #[arg(long)]
    metrics_addr: Option<SocketAddr>,
    /// Log every request to the API server.
    #[arg(long)]
    log_requests: bool,
    /// Apply this YAML file (one or more documents: your FlinkBlueGreenDeployment, a
    /// FlinkDeployment, ...) once everything is up, with `@REPO@` (this checkout), `@WORK@` (the
    /// absolute work directory) and `@T0@` (now, epoch ms) filled in; the rendered copy is kept as
    /// <WORK_DIR>/<file name> to edit and `kubectl apply -f` again. Repeatable.
    #[arg(long, value_name = "FILE")]
    manifest: Vec<PathBuf>,
    /// Also start a real Kafka broker on loopback (`scripts/kafka-jars.sh` installs it): topics
    /// `in` and `out` (4 partitions), the example input written into `in` at 4 x 50 records/s;
    /// `@KAFKA@` in a manifest is its bootstrap address. Stopped and removed with the rest. (Jobs
    /// that use it need real Flink: the simulated Flink does not run their code.)
    #[arg(long)]
    kafka: bool,
    /// With --kafka, one more topic (`NAME` or `NAME:PARTITIONS`, 4 by default). Repeatable.
    #[arg(long, value_name = "NAME[:PARTITIONS]", requires = "kafka", value_parser = parse_topic)]
    kafka_topic: Vec<(String, u32)>,
}

fn parse_topic(s: &str) -> Result<(String, u32), String> {
    let (name, partitions) = s.split_once(':').unwrap_or((s, "4"));
    match partitions.parse::<u32>() {
        Ok(p) if p > 0 && !name.is_empty() => Ok((name.to_owned(), p)),
        _ => Err(format!(
            "{s:?} is not NAME or NAME:PARTITIONS (PARTITIONS at least 1)"
        )),
    }
}

/// What `--manifest` fills in, everywhere in the file: `@REPO@` the checkout `up` was built from
/// (its jars are under `@REPO@/target`), `@WORK@` the absolute work directory (real Flink's files
/// are under `@WORK@/flink`), `@T0@` the time `up` started, in epoch milliseconds (one schedule
/// start for both colors of the example job), `@KAFKA@` the bootstrap address of the broker of
/// `--kafka` (a manifest that uses it without `--kafka` is refused).
struct Placeholders {
    repo: String,
    work: String,
    t0: String,
    kafka: Option<String>,
}

impl Placeholders {
    fn new(repo: &Path, work_dir: &Path, kafka: Option<String>) -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Self {
            repo: repo.display().to_string(),
            work: work_dir.display().to_string(),
            t0: now.as_millis().to_string(),
            kafka,
        }
    }

    fn render(&self, text: &str) -> Result<String, PlaceholderError> {
        let text = text
            .replace("@REPO@", &self.repo)
            .replace("@WORK@", &self.work)
            .replace("@T0@", &self.t0);
        match &self.kafka {
            Some(bootstrap) => Ok(text.replace("@KAFKA@", bootstrap)),
            None if text.contains("@KAFKA@") => Err(PlaceholderError::NoKafka),
            None => Ok(text),
        }
    }
}

/// A placeholder that cannot be filled in.
#[derive(Debug, thiserror::Error)]
enum PlaceholderError {
    /// `@KAFKA@` without a broker.
    #[error("it uses @KAFKA@ (a Kafka bootstrap address): start `up` with --kafka")]
    NoKafka,
}

/// A manifest `--manifest` applied.
struct Applied {
    /// The rendered copy under the work directory.
    rendered: PathBuf,
    /// The names of its FlinkBlueGreenDeployments.
    fbgds: Vec<String>,
}

/// Renders every `--manifest` file into the work directory and applies its objects (namespaces
/// created as needed), each with the `kubectl.kubernetes.io/last-applied-configuration`
/// annotation `kubectl apply` writes, so that a later `kubectl apply -f` of the rendered copy is
/// an ordinary update.
fn apply_manifests(
    server: &LocalApiServer,
    files: &[PathBuf],
    placeholders: &Placeholders,
    work_dir: &Path,
) -> anyhow::Result<Vec<Applied>> {
    const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
    let mut applied = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("--manifest: reading {}", file.display()))?;
        let text = placeholders
            .render(&text)
            .with_context(|| format!("--manifest {}", file.display()))?;
        let name = file
            .file_name()
            .with_context(|| format!("--manifest: {} is not a file", file.display()))?;
        let rendered = work_dir.join(name);
        std::fs::write(&rendered, &text)
            .with_context(|| format!("writing {}", rendered.display()))?;
        let mut fbgds = Vec::new();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let mut obj = serde_json::Value::deserialize(doc)
                .with_context(|| format!("--manifest: parsing {}", file.display()))?;
            if obj.is_null() {
                continue;
            }
            let config = format!("{obj}\n");
            let metadata = obj
                .get_mut("metadata")
                .and_then(serde_json::Value::as_object_mut)
                .with_context(|| {
                    format!(
                        "--manifest: an object without metadata in {}",
                        file.display()
                    )
                })?;
            if let Some(ns) = metadata
                .get("namespace")
                .and_then(serde_json::Value::as_str)
            {
                server
                    .ensure_namespace(ns)
                    .with_context(|| format!("creating the namespace {ns}"))?;
            }
            let annotations = metadata
                .entry("annotations")
                .or_insert_with(|| serde_json::json!({}));
            if let Some(a) = annotations.as_object_mut() {
                a.insert(LAST_APPLIED.into(), config.into());
            }
            let stored = server
                .apply_object(&obj)
                .with_context(|| format!("--manifest: applying {}", file.display()))?;
            if stored["kind"] == "FlinkBlueGreenDeployment"
                && let Some(n) = stored["metadata"]["name"].as_str()
            {
                fbgds.push(n.to_owned());
            }
        }
        applied.push(Applied { rendered, fbgds });
    }
    Ok(applied)
}

fn parse_speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

/// Which Flink runs the FlinkDeployments.
enum Mode {
    /// The simulated Flink; `why` says why not real Flink when it was not asked for.
    Simulated { why: Option<String> },
    /// Real Flink jobs from these artifacts.
    Real(Artifacts),
}

/// The running Flink runner.
enum Runner {
    Simulated(LocalFlink),
    Real(RealFlink),
}

impl Runner {
    fn rest_url_template(&self) -> String {
        match self {
            Self::Simulated(flink) => flink.rest_url_template(),
            Self::Real(flink) => flink.rest_url_template(),
        }
    }

    /// Stops the runner; real mode kills every job JVM and sidecar.
    fn shutdown(self) {
        match self {
            Self::Simulated(flink) => flink.shutdown(),
            Self::Real(flink) => flink.shutdown(),
        }
    }
}

/// Everything `up` started.
struct Cluster {
    server: LocalApiServer,
    runner: Runner,
    stop: watch::Sender<bool>,
    controller: JoinHandle<()>,
    metrics: Option<JoinHandle<std::io::Result<()>>>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                "warn,bluegreen_controller=info,bluegreen_local_apiserver=info,\
                 bluegreen_local_flink=info"
                    .into()
            }),
        )
        .init();
    match Cli::parse().command {
        Command::Up(args) => up(args).await,
    }
}

/// The repository this binary was built from (the manifests and the built jars are there).
fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("examples/ is inside the repository")
}

async fn up(args: UpArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.work_dir)
        .with_context(|| format!("creating the work directory {}", args.work_dir.display()))?;
    let work_dir = std::path::absolute(&args.work_dir)
        .with_context(|| format!("resolving {}", args.work_dir.display()))?;
    let kubeconfig = std::path::absolute(
        args.kubeconfig
            .clone()
            .unwrap_or_else(|| work_dir.join("kubeconfig")),
    )
    .context("resolving the kubeconfig path")?;
    // Installed first, so that a SIGTERM during the start-up is a clean stop too.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let mode = choose_mode(&args)?;
    let kafka = if args.kafka {
        Some(start_kafka(&args.kafka_topic).await?)
    } else {
        None
    };
    let cluster = start(&args, &mode, &work_dir).await?;
    let placeholders = Placeholders::new(
        repo_root(),
        &work_dir,
        kafka.as_ref().map(|k| k.bootstrap.clone()),
    );
    let applied = apply_manifests(&cluster.server, &args.manifest, &placeholders, &work_dir)?;
    write_kubeconfig(&kubeconfig, &cluster.server.kubeconfig_yaml())?;
    print_banner(
        &args,
        &mode,
        &cluster,
        &work_dir,
        &kubeconfig,
        &applied,
        kafka.as_ref(),
    );
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("waiting for Ctrl-C")?,
        _ = term.recv() => {}
    }
    println!("bluegreen-local: shutting down");
    cluster.shutdown().await;
    // The broker and its producer after the jobs: killed, its directory removed.
    drop(kafka);
    println!("bluegreen-local: stopped");
    Ok(())
}

/// `--kafka`: the broker with the topics `in` and `out`, the example input written into `in`, and
/// the topics of `--kafka-topic`.
async fn start_kafka(topics: &[(String, u32)]) -> anyhow::Result<KafkaBroker> {
    let broker = kafka::with_input("in", "out", KAFKA_JITTER_MS)
        .await
        .context("--kafka: starting the Kafka broker")?;
    let extra: Vec<(&str, u32)> = topics.iter().map(|(n, p)| (n.as_str(), *p)).collect();
    if !extra.is_empty() {
        broker
            .create_topics(&extra)
            .await
            .context("--kafka-topic: creating the topics")?;
    }
    Ok(broker)
}

/// Where the broker is and how to read its output (`--kafka`).
fn print_kafka(args: &UpArgs, broker: &KafkaBroker, applied: &[Applied]) {
    let extra = args
        .kafka_topic
        .iter()
        .map(|(n, p)| format!(", {n} ({p})"))
        .collect::<Vec<_>>()
        .concat();
    println!();
    println!(
        "Kafka {} broker on {} (@KAFKA@): topics in ({}), out ({}){extra}; the example input written into in at {} x {} records/s; broker log {}",
        kafka::KAFKA_VERSION,
        broker.bootstrap,
        kafka::PARTITIONS,
        kafka::PARTITIONS,
        kafka::PARTITIONS,
        kafka::RATE,
        broker.log.display()
    );
    if applied.is_empty() {
        println!(
            "  # the example Kafka job: restart with `--kafka --manifest {}`",
            repo_root().join(KAFKA_MANIFEST).display()
        );
    }
    println!(
        "  {}   # the output as a read_committed consumer reads it",
        broker.read_command("out")
    );
}

/// Real Flink when asked for, or when neither mode was asked for and it can run.
fn choose_mode(args: &UpArgs) -> anyhow::Result<Mode> {
    if args.simulated {
        return Ok(Mode::Simulated { why: None });
    }
    if !java_available() {
        anyhow::ensure!(
            !args.real,
            "--real: no `java` runs on this machine (install a JDK 17, e.g. openjdk-17-jdk-headless)"
        );
        return Ok(Mode::Simulated {
            why: Some("no `java` runs on this machine".into()),
        });
    }
    match find_artifacts() {
        Ok(artifacts) => Ok(Mode::Real(artifacts)),
        Err(e) if args.real => Err(e.context("--real: real Flink cannot run")),
        Err(e) => Ok(Mode::Simulated {
            why: Some(e.to_string()),
        }),
    }
}

/// The jars and a sidecar of this binary's cargo profile, else of the other one.
fn find_artifacts() -> anyhow::Result<Artifacts> {
    let (mine, other) = if cfg!(debug_assertions) {
        ("debug", "release")
    } else {
        ("release", "debug")
    };
    Artifacts::find(repo_root(), mine)
        .or_else(|e| Artifacts::find(repo_root(), other).map_err(|_| e))
}

async fn start(args: &UpArgs, mode: &Mode, work_dir: &Path) -> anyhow::Result<Cluster> {
    let server = LocalApiServer::start(Options {
        port: args.port,
        data_dir: args.data_dir.clone(),
        log_requests: args.log_requests,
        ..Options::default()
    })
    .await
    .with_context(|| {
        format!(
            "starting the local Kubernetes API server on 127.0.0.1:{} (in use? try --port)",
            args.port
        )
    })?;
    install_flink_deployment_crd(&server).context("installing the FlinkDeployment CRD")?;
    server
        .apply_object(&FlinkBlueGreenDeployment::crd())
        .context("installing the FlinkBlueGreenDeployment CRD")?;
    let client = server.client();
    let runner = match mode {
        Mode::Simulated { .. } => Runner::Simulated(
            LocalFlink::start(
                client.clone(),
                LocalFlinkOptions {
                    clock: SimClock::scaled(DEFAULT_START_MS, args.speed),
                    sink_mode: SinkMode::Transactional,
                    snapshot_dir: args
                        .data_dir
                        .as_ref()
                        .map(|d| d.join("simulated-snapshots")),
                    ..LocalFlinkOptions::default()
                },
            )
            .await
            .context("starting the simulated Flink")?,
        ),
        Mode::Real(artifacts) => {
            let mut options = artifacts.options(&work_dir.join("flink"));
            options.kubeconfig_yaml = server.kubeconfig_yaml();
            Runner::Real(
                RealFlink::start(client.clone(), options)
                    .await
                    .context("starting the real Flink runner")?,
            )
        }
    };
    let ctx = Arc::new(Context::new(
        client.clone(),
        &runner.rest_url_template(),
        Duration::from_secs(10),
        "bluegreen-local",
    ));
    let (stop, stopped) = watch::channel(false);
    let metrics = args.metrics_addr.map(|addr| {
        let mut stopped = stopped.clone();
        tokio::spawn(serve(
            addr,
            ServerState {
                metrics: ctx.metrics.clone(),
                client: client.clone(),
            },
            async move {
                let _ = stopped.wait_for(|s| *s).await;
            },
        ))
    });
    let mut stopped = stopped;
    let controller = tokio::spawn(bluegreen_controller::reconcile::run(
        ctx,
        None,
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        },
    ));
    Ok(Cluster {
        server,
        runner,
        stop,
        controller,
        metrics,
    })
}

impl Cluster {
    /// Stops the controller (bounded), the metrics server, the runner (killing every job JVM
    /// and sidecar) and the API server (writing its final snapshot with `--data-dir`).
    async fn shutdown(self) {
        let _ = self.stop.send(true);
        let abort = self.controller.abort_handle();
        if tokio::time::timeout(CONTROLLER_STOP_TIMEOUT, self.controller)
            .await
            .is_err()
        {
            tracing::warn!(
                "the controller did not stop within {CONTROLLER_STOP_TIMEOUT:?}; aborted"
            );
            abort.abort();
        }
        if let Some(metrics) = self.metrics {
            match tokio::time::timeout(Duration::from_secs(2), metrics).await {
                Ok(Ok(Err(e))) => tracing::warn!(error = %e, "the metrics server failed"),
                Ok(_) => {}
                Err(_) => tracing::warn!("the metrics server did not stop"),
            }
        }
        self.runner.shutdown();
        self.server.shutdown().await;
    }
}

/// Writes the kubeconfig, readable by its owner only (it carries the server's token when the
/// server checks them), through a temp file and a rename: whoever waits for it never reads half.
fn write_kubeconfig(path: &Path, yaml: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the directory of {}", path.display()))?;
    }
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(yaml.as_bytes()))
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Where everything is and what to try.
fn print_banner(
    args: &UpArgs,
    mode: &Mode,
    cluster: &Cluster,
    work_dir: &Path,
    kubeconfig: &Path,
    applied: &[Applied],
    kafka: Option<&KafkaBroker>,
) {
    let repo = repo_root();
    let flink = match mode {
        Mode::Simulated { why } => format!(
            "SIMULATED Flink, {} simulated seconds per second{}",
            args.speed,
            why.as_ref()
                .map_or_else(String::new, |w| format!(" (not real Flink: {w})"))
        ),
        Mode::Real(artifacts) => format!(
            "REAL Flink {FLINK_VERSION} (spec.flinkVersion v1_20){}: one JVM per FlinkDeployment, with the bluegreen-sidecar",
            if artifacts.flink2.is_some() {
                format!(" and {FLINK2_VERSION} (v2_x)")
            } else {
                format!("; Flink 2.x not built ({})", FlinkMajor::V2.install_hint())
            }
        ),
    };
    let storage = args.data_dir.as_ref().map_or_else(
        || "objects in memory only; --data-dir keeps them".to_owned(),
        |d| format!("objects kept in {}", d.display()),
    );
    println!("bluegreen-local is up on {flink}");
    println!("  Kubernetes API  {}  ({storage})", cluster.server.url());
    println!("  kubeconfig      {}", kubeconfig.display());
    println!("  controller      every namespace (the reconciler of `bluegreen-controller run`)");
    if let Some(addr) = args.metrics_addr {
        println!("  metrics         http://{addr}/metrics");
    }
    println!("  Flink REST      {}", cluster.runner.rest_url_template());
    println!();
    println!("Try it:");
    println!("  export KUBECONFIG={}", kubeconfig.display());
    for a in applied {
        println!(
            "  kubectl apply -f {}   # applied at start (--manifest); edit it and apply it again to upgrade",
            a.rendered.display()
        );
        for name in &a.fbgds {
            plugin_hint(name);
        }
    }
    let note = match mode {
        Mode::Simulated { .. } if !applied.is_empty() => {
            "Simulated jobs write no files; their REST API is under the Flink REST URL above."
                .to_owned()
        }
        Mode::Simulated { .. } => {
            println!(
                "  kubectl apply -f {}",
                repo.join(SIMULATED_MANIFEST).display()
            );
            println!("  kubectl get fbgd -w");
            plugin_hint("orders");
            println!(
                "  kubectl patch fbgd orders --type merge -p '{{\"spec\":{{\"template\":{{\"spec\":{{\"image\":\"example.com/orders:v2\"}}}}}}}}'   # an upgrade"
            );
            "Simulated jobs write no files; their REST API is under the Flink REST URL above \
             (e.g. .../default/orders-blue/jobs/overview)."
                .to_owned()
        }
        Mode::Real(_) if !applied.is_empty() => format!(
            "Job logs: {flink}/<namespace>/<name>/run-N/{{flink.log,launcher.log,sidecar.log}}, \
             one run-N per start of a job (checkpoints/ and savepoints/ beside them).",
            flink = work_dir.join("flink").display(),
        ),
        Mode::Real(_) => {
            // The example job needs absolute paths (jar, output) and one schedule start for
            // both colors: render the manifest once, then edit and re-apply that file.
            println!(
                "  # restart with `--manifest {}` (or your own manifest) to have it rendered and applied, or:",
                repo.join(REAL_MANIFEST).display()
            );
            let rendered = work_dir.join("example-job.yaml");
            println!(
                "  sed -e \"s|@REPO@|{}|g\" -e \"s|@WORK@|{}|g\" -e \"s|@T0@|$(date +%s)000|\" {} > {}",
                repo.display(),
                work_dir.display(),
                repo.join(REAL_MANIFEST).display(),
                rendered.display()
            );
            println!("  kubectl apply -f {}", rendered.display());
            println!("  kubectl get fbgd -w");
            plugin_hint("example-job");
            println!(
                "  # an upgrade: change the image tag (or --version v1 to v2) in that file and apply it again"
            );
            format!(
                "Job logs: {flink}/<namespace>/<name>/run-N/{{flink.log,launcher.log,sidecar.log}}, \
                 one run-N per start of a job (checkpoints/ and savepoints/ beside them).\n\
                 The example job's output: {work}/output/example-job \
                 (part-blue-*, part-green-*; committed on checkpoints).",
                flink = work_dir.join("flink").display(),
                work = work_dir.display()
            )
        }
    };
    println!("{note}");
    if let Some(k) = kafka {
        print_kafka(args, k, applied);
    }
    println!("Ctrl-C or SIGTERM stops everything.");
}

/// The kubectl plugin's live tree of `name` (the resource, its FlinkDeployments and its
/// ConfigMap): installed, or straight from the checkout.
fn plugin_hint(name: &str) {
    println!(
        "  kubectl bluegreen get {name} -w   # the plugin's live tree, once `cargo install --path kubectl-plugin`"
    );
    println!(
        "  cargo run -p kubectl-bluegreen -- get {name} -w   # the same without installing it"
    );
}

#[cfg(test)]
mod tests {
    use super::{PlaceholderError, Placeholders, parse_topic};
    use std::path::Path;

    #[test]
    fn kafka_is_filled_in_with_a_broker_and_refused_without_one() {
        let text = "--kafka @KAFKA@ --jar @REPO@/target/job.jar";
        let with = Placeholders::new(
            Path::new("/repo"),
            Path::new("/w"),
            Some("127.0.0.1:9".into()),
        );
        assert_eq!(
            with.render(text).unwrap(),
            "--kafka 127.0.0.1:9 --jar /repo/target/job.jar"
        );
        let without = Placeholders::new(Path::new("/repo"), Path::new("/w"), None);
        assert!(matches!(
            without.render(text),
            Err(PlaceholderError::NoKafka)
        ));
        assert_eq!(without.render("@WORK@/out").unwrap(), "/w/out");
    }

    #[test]
    fn kafka_topics_have_four_partitions_unless_told() {
        assert_eq!(parse_topic("orders"), Ok(("orders".into(), 4)));
        assert_eq!(parse_topic("orders:2"), Ok(("orders".into(), 2)));
        assert!(parse_topic("orders:0").is_err());
        assert!(parse_topic(":3").is_err());
    }
}
