//! Runs the local Kubernetes API server so a human can point `kubectl` at it.
//!
//! ```text
//! bluegreen-local-apiserver --port 8001 --data-dir /tmp/bg --kubeconfig /tmp/bg/kubeconfig
//! kubectl --kubeconfig /tmp/bg/kubeconfig get configmaps
//! ```

use std::path::PathBuf;

use bluegreen_local_apiserver::{LocalApiServer, Options};
use clap::Parser;

/// In-process Kubernetes API server for running bluegreen without a cluster.
#[derive(Debug, Parser)]
#[command(name = "bluegreen-local-apiserver", version)]
struct Args {
    /// Port on 127.0.0.1 (0 picks a free port).
    #[arg(long, default_value_t = 8001, env = "BLUEGREEN_APISERVER_PORT")]
    port: u16,
    /// Directory to keep objects in across restarts (memory only when absent).
    #[arg(long, env = "BLUEGREEN_APISERVER_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Write a kubeconfig for this server to this file.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// CRD files (JSON or YAML) to install at start.
    #[arg(long = "crd")]
    crds: Vec<PathBuf>,
    /// Log every request.
    #[arg(long)]
    log_requests: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let server = LocalApiServer::start(Options {
        port: args.port,
        data_dir: args.data_dir.clone(),
        log_requests: args.log_requests,
        ..Options::default()
    })
    .await?;
    for path in &args.crds {
        let text = std::fs::read_to_string(path)?;
        for name in server.apply_crd(&text)? {
            println!("installed CRD {name}");
        }
    }
    if let Some(path) = &args.kubeconfig {
        std::fs::write(path, server.kubeconfig_yaml())?;
        println!("kubeconfig written to {}", path.display());
    }
    println!("local Kubernetes API server listening on {}", server.url());
    println!("try: kubectl --server {} get namespaces", server.url());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    println!("shutting down");
    server.shutdown().await;
    Ok(())
}
