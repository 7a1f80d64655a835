//! `bluegreen-controller`: run the operator, or print its CRD.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bluegreen_controller::context::{Context, HomeApi};
use bluegreen_controller::flink_rest::DEFAULT_URL_TEMPLATE;
use bluegreen_controller::leader::{LeaseConfig, run_when_leader};
use bluegreen_controller::resource::FlinkBlueGreenDeployment;
use bluegreen_controller::server::{ServerState, serve};
use clap::{Parser, Subcommand};
use kube::CustomResourceExt;

#[derive(Parser)]
#[command(
    version,
    about = "Exactly-once blue/green upgrades of Flink jobs on Kubernetes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the FlinkBlueGreenDeployment CRD as YAML.
    Crd,
    /// Run the operator.
    Run(Box<RunArgs>),
}

#[derive(clap::Args)]
struct RunArgs {
    /// Watch one namespace only (default: all).
    #[arg(long, env = "BLUEGREEN_WATCH_NAMESPACE")]
    namespace: Option<String>,
    /// Flink REST URL template; `{name}` and `{namespace}` are the FlinkDeployment's.
    #[arg(long, env = "BLUEGREEN_FLINK_REST_URL", default_value = DEFAULT_URL_TEMPLATE)]
    flink_rest_url: String,
    /// This cluster's API server as pods in other clusters reach it: the gates of a child moved
    /// to another cluster read the ConfigMap here (`spec.cluster.homeApiServer` overrides it).
    #[arg(long, env = "BLUEGREEN_HOME_API_SERVER")]
    home_api_server: Option<String>,
    /// The CA (PEM) of the home API server's certificate, written into the remote gates'
    /// kubeconfig.
    #[arg(long, env = "BLUEGREEN_HOME_API_CA_FILE")]
    home_api_ca_file: Option<std::path::PathBuf>,
    /// Timeout of one Flink REST call.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    flink_rest_timeout: Duration,
    /// Address of /metrics, /healthz and /readyz.
    #[arg(long, env = "BLUEGREEN_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    metrics_addr: SocketAddr,
    /// Namespace of the leader-election Lease.
    #[arg(long, env = "BLUEGREEN_LEASE_NAMESPACE", default_value = "default")]
    lease_namespace: String,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "bluegreen-controller")]
    lease_name: String,
    /// This replica's identity (default: the pod name in POD_NAME, else the hostname).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Lease duration in seconds.
    #[arg(long, default_value_t = 15)]
    lease_seconds: u64,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let d: jiff::SignedDuration = s
        .parse()
        .map_err(|e| format!("{s:?} is not a duration: {e}"))?;
    Duration::try_from(d).map_err(|_| format!("{s:?} is negative"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    match Cli::parse().command {
        Command::Crd => {
            print!(
                "{}",
                serde_yaml::to_string(&FlinkBlueGreenDeployment::crd())?
            );
            Ok(())
        }
        Command::Run(args) => run(*args).await,
    }
}

async fn run(args: RunArgs) -> anyhow::Result<()> {
    let client = kube::Client::try_default()
        .await
        .context("no Kubernetes configuration (in-cluster or kubeconfig)")?;
    let identity = args
        .identity
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| format!("bluegreen-{}", std::process::id()));
    let ca_pem = match &args.home_api_ca_file {
        Some(path) => Some(std::fs::read(path).with_context(|| {
            format!(
                "--home-api-ca-file {}: cannot read it; give the PEM file of the CA of the home API server's certificate",
                path.display()
            )
        })?),
        None => None,
    };
    let ctx = Arc::new(
        Context::new(
            client.clone(),
            &args.flink_rest_url,
            args.flink_rest_timeout,
            &identity,
        )
        .with_home_api(HomeApi {
            server: args.home_api_server,
            ca_pem,
        }),
    );
    let metrics = ctx.metrics.clone();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut server_stop = stop_rx.clone();
    let server = tokio::spawn(serve(
        args.metrics_addr,
        ServerState { metrics, client },
        async move {
            let _ = server_stop.wait_for(|s| *s).await;
        },
    ));
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        let _ = stop_tx.send(true);
    });
    let lease = LeaseConfig {
        namespace: args.lease_namespace,
        name: args.lease_name,
        identity,
        duration_seconds: args.lease_seconds,
        grace_seconds: (args.lease_seconds / 3).max(1),
    };
    run_when_leader(ctx, args.namespace, lease, stop_rx).await?;
    server.await??;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
