//! `/metrics`, `/healthz` and `/readyz` (axum).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use crate::metrics::Metrics;

/// The HTTP server's state.
#[derive(Clone)]
pub struct ServerState {
    /// Metrics to render.
    pub metrics: Metrics,
    /// The Kubernetes client, for readiness.
    pub client: kube::Client,
}

/// The router.
pub fn router(state: ServerState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .with_state(Arc::new(state))
}

async fn metrics(State(state): State<Arc<ServerState>>) -> String {
    state.metrics.render()
}

/// Ready when the API server answers.
async fn ready(State(state): State<Arc<ServerState>>) -> (StatusCode, String) {
    match state.client.apiserver_version().await {
        Ok(_) => (StatusCode::OK, "ok".into()),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("Kubernetes API not reachable: {e}"),
        ),
    }
}

/// Serves until `shutdown` resolves.
pub async fn serve(
    addr: SocketAddr,
    state: ServerState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}
