//! `bluegreen-sidecar`: watches the coordination ConfigMap and serves it to the JVM gates of the
//! pod on localhost (`docs/sidecar.md`).

use std::io::IsTerminal;
use std::net::SocketAddr;

use anyhow::Context;
use bluegreen_gate::{ConfigMapSource, SharedState, StateOptions};
use bluegreen_protocol::Color;
use bluegreen_protocol::wire::env;
use bluegreen_sidecar::{Sidecar, SidecarOptions};
use clap::Parser;

/// Serves the bluegreen coordination ConfigMap to the JVM gates of this pod.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// The coordination ConfigMap (`<deployment>-bluegreen`).
    #[arg(long, env = env::CONFIGMAP)]
    configmap: String,
    /// Its namespace (default: the client's, i.e. the pod's namespace in a cluster).
    #[arg(long, env = env::NAMESPACE)]
    namespace: Option<String>,
    /// The pod's color, the default of `/v1/decide` (BLUE or GREEN).
    #[arg(long, env = env::COLOR, value_parser = parse_color)]
    color: Option<Color>,
    /// Where to listen. Keep it on loopback: only the pod's own JVM should read it.
    #[arg(long, env = env::LISTEN, default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
}

fn parse_color(text: &str) -> Result<Color, String> {
    text.parse()
        .map_err(|()| format!("{text:?}: expected {}", Color::EXPECTED))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Colours only for a terminal: the log usually goes to a file or a container's log.
    tracing_subscriber::fmt()
        .with_ansi(std::io::stdout().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    let client = kube::Client::try_default()
        .await
        .context("no Kubernetes configuration (in-cluster or kubeconfig)")?;
    let namespace = args
        .namespace
        .unwrap_or_else(|| client.default_namespace().to_owned());
    let shared = SharedState::new(StateOptions::default());
    let source = ConfigMapSource::new(client, &namespace, &args.configmap, shared.clone()).spawn();
    let sidecar = Sidecar::new(
        shared,
        SidecarOptions {
            color: args.color,
            ..SidecarOptions::default()
        },
    )?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    tracing::info!(listen = %args.listen, %namespace, configmap = %args.configmap, "bluegreen sidecar serving");
    sidecar.serve(listener, shutdown_signal()).await?;
    source.abort();
    tracing::info!("bluegreen sidecar stopped");
    Ok(())
}

/// Completes on SIGTERM (Kubernetes stopping the pod) or ctrl-c.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
