//! `/metrics`, `/healthz` and `/readyz` of the controller.

use bluegreen_controller::metrics::Metrics;
use bluegreen_controller::server::{ServerState, serve};
use bluegreen_local_apiserver::{LocalApiServer, Options};

#[tokio::test]
async fn health_readiness_and_metrics_are_served() -> anyhow::Result<()> {
    let api = LocalApiServer::start(Options::default()).await?;
    let metrics = Metrics::new();
    metrics.reconciles.inc();
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(serve(
        addr,
        ServerState {
            metrics,
            client: api.client(),
        },
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        },
    ));
    let get = |path: &'static str| async move {
        for _ in 0..100 {
            if let Ok(r) = reqwest::get(format!("http://{addr}{path}")).await {
                return Ok((r.status().as_u16(), r.text().await?));
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        anyhow::bail!("{path} never answered")
    };
    assert_eq!(get("/healthz").await?, (200, "ok".to_owned()));
    assert_eq!(get("/readyz").await?.0, 200);
    let (code, text) = get("/metrics").await?;
    assert_eq!(code, 200);
    assert!(
        text.contains("bluegreen_controller_reconciles_total 1"),
        "{text}"
    );
    // Without the API server, not ready.
    api.shutdown().await;
    let (code, text) = get("/readyz").await?;
    assert_eq!(code, 503, "{text}");
    let _ = stop.send(true);
    server.await??;
    Ok(())
}
