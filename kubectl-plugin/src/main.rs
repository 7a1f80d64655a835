//! `kubectl bluegreen`: inspect and operate FlinkBlueGreenDeployments (bluegreen.dev/v1alpha1).
//!
//! Installed as `kubectl-bluegreen` on `PATH`, kubectl runs it for `kubectl bluegreen ...`.
//! Exit codes are in [`verdict::exit`].

mod error;
mod model;
mod render;
mod verdict;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use bluegreen_controller::child::LABEL_DEPLOYMENT;
use bluegreen_controller::context::flink_deployment_resource;
use bluegreen_controller::names::{ACTION_ANNOTATION, ManualAction};
use bluegreen_controller::resource::TransitionRecord;
use bluegreen_protocol::configmap_name;
use clap::{Args, Parser, Subcommand, ValueEnum};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Config};
use serde_json::{Value, json};

use crate::error::Error;
use crate::model::{Deployment, resource, snapshot};
use crate::verdict::{Verdict, exit, judge};

/// Inspect and operate FlinkBlueGreenDeployments.
///
/// Exit codes: 0 success (status: healthy), 1 error, 2 bad usage, 3 degraded,
/// 4 handover aborted, 5 timeout, 6 suspended.
#[derive(Debug, Parser)]
#[command(name = "kubectl-bluegreen", bin_name = "kubectl bluegreen", version)]
struct Cli {
    #[command(flatten)]
    conn: Connection,
    #[command(subcommand)]
    command: Command,
}

/// Where to connect, as kubectl takes it.
#[derive(Debug, Args)]
struct Connection {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, global = true)]
    kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true)]
    context: Option<String>,
    /// Namespace (default: the context's namespace, else `default`).
    #[arg(short, long, global = true)]
    namespace: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Json,
    Yaml,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the resource as a tree: children, jobs, ConfigMap, conditions, last handovers.
    Get {
        /// The FlinkBlueGreenDeployment.
        name: String,
        /// Redraw on every change of the resource, its children or its ConfigMap.
        #[arg(short, long)]
        watch: bool,
        /// Print the resource, its children and its ConfigMap as a List instead.
        #[arg(short, long, conflicts_with = "watch")]
        output: Option<Format>,
    },
    /// Wait until healthy (exit 0); exit 3 when degraded, 4 when the handover is aborted,
    /// 5 on timeout, 6 when the job is suspended.
    Status {
        /// The FlinkBlueGreenDeployment.
        name: String,
        /// How long to wait, e.g. 90s, 10m (default: wait forever). Not a duration: exit 2.
        #[arg(long, value_parser = parse_timeout)]
        timeout: Option<Duration>,
    },
    /// Promote the incoming job now (manual promotion).
    Promote {
        /// The FlinkBlueGreenDeployment.
        name: String,
    },
    /// Abort the handover in progress (only before W is set).
    Abort {
        /// The FlinkBlueGreenDeployment.
        name: String,
    },
    /// Delete the outgoing job now instead of after the deletion delay.
    Teardown {
        /// The FlinkBlueGreenDeployment.
        name: String,
    },
    /// Clear the floor F (no handover in progress): records at or below the last W are
    /// emitted again, for a deliberate reprocessing.
    ClearFloor {
        /// The FlinkBlueGreenDeployment.
        name: String,
    },
    /// The finished handovers, newest first.
    History {
        /// The FlinkBlueGreenDeployment.
        name: String,
        /// Print the records as JSON or YAML.
        #[arg(short, long)]
        output: Option<Format>,
    },
    /// All FlinkBlueGreenDeployments of the namespace.
    List {
        /// In every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// Print the objects as a List instead.
        #[arg(short, long)]
        output: Option<Format>,
    },
}

async fn connect(conn: &Connection) -> Result<(Client, String), Error> {
    let options = KubeConfigOptions {
        context: conn.context.clone(),
        ..KubeConfigOptions::default()
    };
    let config = match &conn.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| Error::Config(e.to_string()))?
        }
        None if conn.context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| Error::Config(e.to_string()))?,
        None => Config::infer()
            .await
            .map_err(|e| Error::Config(e.to_string()))?,
    };
    let namespace = conn
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let client = Client::try_from(config).map_err(|e| Error::Config(e.to_string()))?;
    Ok((client, namespace))
}

fn print(format: Format, value: &Value) -> Result<(), Error> {
    let text = match format {
        Format::Json => {
            serde_json::to_string_pretty(value).map_err(|e| Error::Output(e.to_string()))? + "\n"
        }
        Format::Yaml => serde_yaml::to_string(value).map_err(|e| Error::Output(e.to_string()))?,
    };
    std::io::stdout()
        .write_all(text.as_bytes())
        .map_err(|e| Error::Output(e.to_string()))
}

/// `--timeout`'s parser: clap reports its error as bad usage (exit 2).
fn parse_timeout(value: &str) -> Result<Duration, Error> {
    let bad = |reason: String| Error::Timeout {
        value: value.to_owned(),
        reason,
    };
    let d: jiff::SignedDuration = value.parse().map_err(|e: jiff::Error| bad(e.to_string()))?;
    Duration::try_from(d).map_err(|e| bad(e.to_string()))
}

async fn annotate(
    client: &Client,
    ns: &str,
    name: &str,
    action: ManualAction,
) -> Result<u8, Error> {
    let action = action.as_str();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource());
    // Fail with a clear message (not a 404 body) when the resource does not exist.
    snapshot(client, ns, name).await?;
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {ACTION_ANNOTATION: action}}})),
    )
    .await
    .map_err(|e| {
        Error::api(
            format!("setting {ACTION_ANNOTATION}={action} on {ns}/{name}"),
            e,
        )
    })?;
    println!(
        "flinkbluegreendeployment.bluegreen.dev/{name}: {action} requested ({ACTION_ANNOTATION}={action})"
    );
    Ok(exit::OK)
}

/// Redraws the tree on every change of the resource, its children or its ConfigMap.
async fn watch_tree(client: &Client, ns: &str, name: &str) -> Result<u8, Error> {
    let by_name = || watcher::Config::default().fields(&format!("metadata.name={name}"));
    let fbgd = watcher(
        Api::<DynamicObject>::namespaced_with(client.clone(), ns, &resource()),
        by_name(),
    )
    .default_backoff()
    .map(|_| ())
    .boxed();
    let cm = watcher(
        Api::<ConfigMap>::namespaced(client.clone(), ns),
        watcher::Config::default().fields(&format!("metadata.name={}", configmap_name(name))),
    )
    .default_backoff()
    .map(|_| ())
    .boxed();
    let children = watcher(
        Api::<DynamicObject>::namespaced_with(client.clone(), ns, &flink_deployment_resource()),
        watcher::Config::default().labels(&format!("{LABEL_DEPLOYMENT}={name}")),
    )
    .default_backoff()
    .map(|_| ())
    .boxed();
    let mut changes = futures::stream::select_all([fbgd, cm, children]);
    let terminal = std::io::stdout().is_terminal();
    let mut last = String::new();
    loop {
        let screen = match snapshot(client, ns, name).await {
            Ok(s) => render::tree(&s),
            Err(e) => format!("{e}\n"),
        };
        if screen != last {
            let mut out = std::io::stdout().lock();
            let frame = if terminal {
                format!("\x1b[H\x1b[2J{screen}\n(watching; Ctrl-C to stop)\n")
            } else {
                format!("{screen}\n")
            };
            out.write_all(frame.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| Error::Output(e.to_string()))?;
            last = screen;
        }
        if changes.next().await.is_none() {
            return Ok(exit::OK);
        }
    }
}

/// Waits for a final verdict; prints progress lines to stderr and the outcome to stdout.
async fn wait_status(
    client: &Client,
    ns: &str,
    name: &str,
    timeout: Option<Duration>,
) -> Result<u8, Error> {
    snapshot(client, ns, name).await?;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &resource());
    let mut stream = watcher(
        api,
        watcher::Config::default().fields(&format!("metadata.name={name}")),
    )
    .default_backoff()
    .applied_objects()
    .boxed();
    let wait = async {
        let mut last = None;
        loop {
            let Some(obj) = stream.try_next().await.map_err(|source| Error::Watch {
                what: format!("flinkbluegreendeployment {ns}/{name}"),
                source,
            })?
            else {
                return Ok::<_, Error>(
                    last.unwrap_or_else(|| Verdict::Waiting("watch ended".into())),
                );
            };
            let verdict = judge(&Deployment::from_object(&obj));
            if verdict.is_final() {
                return Ok(verdict);
            }
            if last.as_ref() != Some(&verdict)
                && let Verdict::Waiting(m) = &verdict
            {
                eprintln!("waiting: {m}");
            }
            last = Some(verdict);
        }
    };
    let verdict = if let Some(t) = timeout {
        if let Ok(v) = tokio::time::timeout(t, wait).await {
            v?
        } else {
            let now = snapshot(client, ns, name).await?;
            match judge(&now.deployment) {
                Verdict::Waiting(m) => {
                    println!("{ns}/{name}: timed out after {t:?}: {m}");
                    return Ok(exit::TIMEOUT);
                }
                other => other,
            }
        }
    } else {
        wait.await?
    };
    match &verdict {
        Verdict::Healthy => println!("{ns}/{name}: healthy"),
        Verdict::Degraded(m) => println!("{ns}/{name}: degraded: {m}"),
        Verdict::Aborted(m) => println!("{ns}/{name}: handover aborted: {m}"),
        Verdict::Waiting(m) => println!("{ns}/{name}: not healthy: {m}"),
        Verdict::Suspended(m) => println!("{ns}/{name}: suspended: {m}"),
    }
    Ok(verdict.exit_code())
}

async fn run(cli: Cli) -> Result<u8, Error> {
    let (client, ns) = connect(&cli.conn).await?;
    match cli.command {
        Command::Get {
            name, watch: true, ..
        } => watch_tree(&client, &ns, &name).await,
        Command::Get { name, output, .. } => {
            let s = snapshot(&client, &ns, &name).await?;
            match output {
                Some(f) => print(f, &s.to_list())?,
                None => print!("{}", render::tree(&s)),
            }
            Ok(exit::OK)
        }
        Command::Status { name, timeout } => wait_status(&client, &ns, &name, timeout).await,
        Command::Promote { name } => annotate(&client, &ns, &name, ManualAction::Promote).await,
        Command::Abort { name } => annotate(&client, &ns, &name, ManualAction::Abort).await,
        Command::Teardown { name } => annotate(&client, &ns, &name, ManualAction::Teardown).await,
        Command::ClearFloor { name } => {
            annotate(&client, &ns, &name, ManualAction::ClearFloor).await
        }
        Command::History { name, output } => {
            let s = snapshot(&client, &ns, &name).await?;
            if let Some(f) = output {
                // The records as stored, including fields this version does not know.
                let raw = s.deployment.raw.pointer("/status/history").cloned();
                print(f, &raw.unwrap_or_else(|| json!([])))?;
            } else {
                let records: Vec<TransitionRecord> =
                    s.deployment.status.map(|st| st.history).unwrap_or_default();
                if records.is_empty() {
                    println!("no finished handovers");
                } else {
                    print!("{}", render::history(&records));
                }
            }
            Ok(exit::OK)
        }
        Command::List {
            all_namespaces,
            output,
        } => {
            let api: Api<DynamicObject> = if all_namespaces {
                Api::all_with(client.clone(), &resource())
            } else {
                Api::namespaced_with(client.clone(), &ns, &resource())
            };
            let list = api
                .list(&ListParams::default())
                .await
                .map_err(|e| Error::api("listing flinkbluegreendeployments", e))?;
            let items: Vec<Deployment> = list.items.iter().map(Deployment::from_object).collect();
            match output {
                Some(f) => print(
                    f,
                    &json!({"apiVersion": "v1", "kind": "List",
                        "items": items.iter().map(|d| d.raw.clone()).collect::<Vec<_>>()}),
                )?,
                None if items.is_empty() => println!("no flinkbluegreendeployments found"),
                None => print!("{}", render::list(&items, all_namespaces)),
            }
            Ok(exit::OK)
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    match run(cli).await {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(exit::ERROR)
        }
    }
}
