//! One local reverse proxy for every job's Flink REST API: `/{namespace}/{name}/...` is
//! forwarded to that deployment's MiniCluster, method, query, body and status unchanged (the
//! local stand-in for the per-deployment `{name}-rest` Service).

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::json;

use super::Shared;
use crate::DeploymentRef;

/// The proxy's route: every request under `/{namespace}/{name}/` goes to that deployment's JVM.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/{namespace}/{name}/{*path}", any(forward))
        .with_state(shared)
}

fn unavailable(d: &DeploymentRef, why: &str) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(json!({"errors": [format!("{d}: {why}")]})),
    )
        .into_response()
}

async fn forward(
    State(shared): State<Arc<Shared>>,
    Path((namespace, name, path)): Path<(String, String, String)>,
    RawQuery(query): RawQuery,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let d = DeploymentRef::new(namespace, name);
    let Some(port) = shared.rest_port(&d) else {
        return unavailable(&d, "no running JobManager");
    };
    let mut url = format!("http://127.0.0.1:{port}/{path}");
    if let Some(q) = query {
        url.push('?');
        url.push_str(&q);
    }
    let mut request = shared.http.request(method, &url).body(body);
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        request = request.header(header::CONTENT_TYPE, ct);
    }
    let upstream = match request.send().await {
        Ok(r) => r,
        Err(e) => return unavailable(&d, &format!("the JobManager does not answer: {e}")),
    };
    let status = upstream.status();
    let content_type = upstream.headers().get(header::CONTENT_TYPE).cloned();
    let bytes = match upstream.bytes().await {
        Ok(b) => b,
        Err(e) => return unavailable(&d, &format!("the JobManager's answer broke off: {e}")),
    };
    let mut response = (status, bytes).into_response();
    if let Some(ct) = content_type {
        response.headers_mut().insert(header::CONTENT_TYPE, ct);
    } else {
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    response
}
