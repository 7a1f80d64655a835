//! The HTTP side: `GET /v1/state` (long-poll), `/v1/decide`, `/metrics`, `/healthz`, `/readyz`.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bluegreen_gate::SharedState;
use bluegreen_protocol::{Color, Decision, Rule};
use prometheus::{Encoder, Registry, TextEncoder};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::error::Error;
use crate::request::{DecideRequest, StateRequest};

/// How a [`Sidecar`] serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SidecarOptions {
    /// The color `/v1/decide` uses when the request names none (`BLUEGREEN_COLOR`).
    pub color: Option<Color>,
    /// The longest long-poll the sidecar holds open, whatever `wait` asks for.
    pub max_wait: Duration,
    /// The long-poll wait when a request has no `wait` parameter.
    pub default_wait: Duration,
}

impl Default for SidecarOptions {
    /// No default color, `wait` capped at 5 min, 30 s when absent.
    fn default() -> Self {
        Self {
            color: None,
            max_wait: Duration::from_mins(5),
            default_wait: Duration::from_secs(30),
        }
    }
}

/// The body of a `200` from `GET /v1/state` (docs/jvm.md, "The sidecar contract").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateBody {
    /// Opaque, changes whenever `configmap` changes; unique to this sidecar process, so a
    /// revision from before a restart never matches.
    pub revision: String,
    /// `configmap.epoch`, for humans and logs.
    pub epoch: String,
    /// The ConfigMap data of the last accepted version, verbatim.
    pub configmap: BTreeMap<String, String>,
    /// Informational: whether the sidecar's view is unconfirmed for longer than the gate crate's
    /// `max_staleness` (the Java client ignores it today).
    pub stale: bool,
}

/// The sidecar's HTTP service over one [`SharedState`] (fed by a `ConfigMapSource`).
#[derive(Debug, Clone)]
pub struct Sidecar {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    shared: Arc<SharedState>,
    registry: Registry,
    options: SidecarOptions,
    /// Prefix of every revision: this process's start, so revisions never repeat across restarts.
    instance: String,
    /// Set on shutdown: pending long-polls answer at once.
    shutdown: watch::Sender<bool>,
}

impl Sidecar {
    /// A sidecar serving `shared`; registers the gate crate's metrics in its own registry.
    pub fn new(shared: Arc<SharedState>, options: SidecarOptions) -> Result<Self, Error> {
        let registry = Registry::new();
        shared.register_metrics(&registry)?;
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        Ok(Self {
            inner: Arc::new(Inner {
                shared,
                registry,
                options,
                instance: format!("{started:x}-{:x}", std::process::id()),
                shutdown: watch::Sender::new(false),
            }),
        })
    }

    /// The routes, for serving or for tests.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/v1/state", get(get_state))
            .route("/v1/decide", get(get_decide))
            .route("/metrics", get(get_metrics))
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(get_ready))
            .with_state(Arc::clone(&self.inner))
    }

    /// Serves on `listener` until `shutdown` completes, then answers pending long-polls at once
    /// (304) and finishes in-flight requests.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let inner = Arc::clone(&self.inner);
        axum::serve(listener, self.router())
            .with_graceful_shutdown(async move {
                shutdown.await;
                inner.shutdown.send_replace(true);
            })
            .await?;
        Ok(())
    }
}

impl Inner {
    fn revision(&self, number: u64) -> String {
        format!("{}.{number}", self.instance)
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = match self {
            Error::InvalidWait { .. } | Error::InvalidQuery { .. } | Error::InvalidColor { .. } => {
                StatusCode::BAD_REQUEST
            }
            Error::Gate(_) | Error::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        error_response(status, &self.to_string())
    }
}

fn error_response(status: StatusCode, message: &str) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

/// `GET /v1/state?since=REVISION&wait=30000ms`: the last accepted data at once if its revision
/// differs from `since` (or `since` is absent); otherwise as soon as it changes, or `304` after
/// `wait`. Without any accepted data yet it waits up to `wait` for the first, then answers `503`.
async fn get_state(State(sidecar): State<Arc<Inner>>, uri: Uri) -> Result<Response, Error> {
    let query = StateRequest::from_uri(&uri)?;
    let wait = query
        .wait
        .unwrap_or(sidecar.options.default_wait)
        .min(sidecar.options.max_wait);
    let deadline = tokio::time::Instant::now() + wait;
    let mut data = sidecar.shared.accepted_data();
    let mut shutdown = sidecar.shutdown.subscribe();
    loop {
        let current = data.borrow_and_update().clone();
        if let Some((number, configmap)) = current {
            let revision = sidecar.revision(number);
            if query.since.as_deref() != Some(revision.as_str()) {
                let body = StateBody {
                    revision,
                    epoch: configmap.get("epoch").cloned().unwrap_or_default(),
                    configmap: (*configmap).clone(),
                    stale: sidecar.shared.is_stale(),
                };
                return Ok(Json(body).into_response());
            }
        }
        let woke = tokio::select! {
            changed = data.changed() => changed.is_ok(),
            () = tokio::time::sleep_until(deadline) => false,
            () = stopping(&mut shutdown) => false,
        };
        if !woke {
            break;
        }
    }
    if data.borrow().is_some() {
        Ok(StatusCode::NOT_MODIFIED.into_response())
    } else {
        Ok(error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "no state yet",
        ))
    }
}

/// Completes once the sidecar shuts down (or at once if it already has).
async fn stopping(shutdown: &mut watch::Receiver<bool>) {
    // The sender lives in `Inner`, which outlives every request.
    let _ = shutdown.wait_for(|stopping| *stopping).await;
}

/// What `GET /v1/decide` answers.
#[derive(Debug, Serialize)]
struct DecideBody {
    color: Color,
    ts: i64,
    decision: Decision,
    /// The state decided under, in short form; `null` without one.
    state: Option<String>,
    stale: bool,
}

/// `GET /v1/decide?color=BLUE&ts=123`: the decision a gate of that color would take now, for
/// debugging (counted nowhere: the sidecar has no gates of its own).
async fn get_decide(State(sidecar): State<Arc<Inner>>, uri: Uri) -> Response {
    let query = match DecideRequest::from_uri(&uri) {
        Ok(query) => query,
        Err(error) => return error.into_response(),
    };
    let color = match query.color {
        Some(color) => color,
        None => match sidecar.options.color {
            Some(color) => color,
            None => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    "no color: pass color=BLUE|GREEN or start the sidecar with BLUEGREEN_COLOR",
                );
            }
        },
    };
    let current = sidecar.shared.current();
    let is_stale = sidecar.shared.is_stale();
    // The gate crate's rule: hold without a state, and during a transition while stale.
    let rule = match current {
        None => Rule::HOLD,
        Some(state) if is_stale && state.incoming().is_some() => Rule::HOLD,
        Some(state) => Rule::for_state(&state, color),
    };
    Json(DecideBody {
        color,
        ts: query.ts,
        decision: rule.decide(query.ts),
        state: current.map(|s| s.to_string()),
        stale: is_stale,
    })
    .into_response()
}

/// `GET /metrics`: the gate crate's `bluegreen_gate_*` metrics (source counters, staleness).
async fn get_metrics(State(sidecar): State<Arc<Inner>>) -> Response {
    let mut buffer = Vec::new();
    match TextEncoder::new().encode(&sidecar.registry.gather(), &mut buffer) {
        Ok(()) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], buffer).into_response(),
        Err(error) => error_response(StatusCode::INTERNAL_SERVER_ERROR, &error.to_string()),
    }
}

/// `GET /readyz`: ready once the sidecar holds a valid state it can serve.
async fn get_ready(State(sidecar): State<Arc<Inner>>) -> Response {
    if sidecar.shared.accepted_data().borrow().is_some() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        error_response(StatusCode::SERVICE_UNAVAILABLE, "no state yet")
    }
}
