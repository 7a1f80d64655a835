//! HTTP routing: turns requests into store operations and store results into responses.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Extension, Request, State};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use serde_json::{Value, json};

use super::api_error::ApiError;
use super::auth::{self, AuthState, Requester, WriteGuard};
use super::delete;
use super::discovery;
use super::faults::{FaultState, RequestInfo, Verb};
use super::meta::parse_body;
use super::openapi;
use super::openapi_v2;
use super::params::{delete_opts, flag, list_query, params, write_ctx};
use super::patch::PatchType;
use super::protobuf;
use super::read::{self, ListQuery, Shape};
use super::resources::ResourceType;
use super::selectors::FieldSelector;
use super::self_review::{self, Review};
use super::store::Store;
use super::watch::{self, WatchRequest};
use super::write::{self, UpdateOp};

/// Server-wide settings used while serving.
#[derive(Debug, Clone)]
pub(crate) struct ServeOptions {
    pub bookmark_interval: Duration,
    pub max_watch_timeout: Duration,
    pub log_requests: bool,
}

/// Shared state of the HTTP handlers.
pub(crate) struct App {
    pub store: Arc<Store>,
    pub faults: Arc<FaultState>,
    pub opts: ServeOptions,
    pub addr: String,
    pub auth: Arc<AuthState>,
}

type AppState = State<Arc<App>>;

pub(crate) fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/api", get(api_root))
        .route("/apis", get(apis_root))
        .route(
            "/version",
            get(|| async { json_response(StatusCode::OK, &discovery::version_info()) }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }))
        .route("/openapi/v2", get(openapi_v2))
        .route("/openapi/v3", get(openapi_v3_index))
        .route("/openapi/v3/{*path}", get(openapi_v3_doc))
        .fallback(resource)
        .layer(from_fn_with_state(
            (Arc::clone(&app.store), Arc::clone(&app.auth)),
            auth::middleware,
        ))
        .layer(from_fn_with_state(Arc::clone(&app), gate))
        .layer(DefaultBodyLimit::max(3 * 1024 * 1024))
        .with_state(app)
}

/// Logs requests when asked to and holds them while the server is paused.
async fn gate(State(app): AppState, req: Request, next: Next) -> Response {
    if app.opts.log_requests {
        let accept = req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let ct = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        tracing::info!(method = %req.method(), uri = %req.uri(), accept, content_type = ct, "request");
    }
    app.faults.wait_unpaused().await;
    next.run(req).await
}

pub(crate) fn json_response(code: StatusCode, v: &Value) -> Response {
    let mut resp = (code, serde_json::to_vec(v).unwrap_or_default()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn accept(headers: &HeaderMap) -> &str {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn discovery_response(
    headers: &HeaderMap,
    aggregated: impl FnOnce() -> Value,
    legacy: impl FnOnce() -> Value,
) -> Response {
    if discovery::wants_aggregated(accept(headers)) {
        let mut resp = json_response(StatusCode::OK, &aggregated());
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(discovery::AGGREGATED_CONTENT_TYPE),
        );
        resp
    } else {
        json_response(StatusCode::OK, &legacy())
    }
}

async fn api_root(State(app): AppState, headers: HeaderMap) -> Response {
    let registry = app.store.lock().registry.clone();
    discovery_response(
        &headers,
        || discovery::aggregated(&registry, true),
        || discovery::api_versions(&app.addr),
    )
}

async fn apis_root(State(app): AppState, headers: HeaderMap) -> Response {
    let registry = app.store.lock().registry.clone();
    discovery_response(
        &headers,
        || discovery::aggregated(&registry, false),
        || discovery::api_group_list(&registry),
    )
}

async fn openapi_v2(State(app): AppState) -> Response {
    let registry = app.store.lock().registry.clone();
    let mut resp = (StatusCode::OK, openapi_v2::document(&registry)).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(openapi_v2::CONTENT_TYPE),
    );
    resp
}

async fn openapi_v3_index(State(app): AppState) -> Response {
    let registry = app.store.lock().registry.clone();
    json_response(StatusCode::OK, &openapi::index(&registry))
}

async fn openapi_v3_doc(State(app): AppState, uri: Uri) -> Response {
    let registry = app.store.lock().registry.clone();
    let path = uri.path().trim_start_matches("/openapi/v3/");
    match openapi::document(&registry, path) {
        Some(doc) => json_response(StatusCode::OK, &doc),
        None => ApiError::not_found_path().into_response(),
    }
}

/// A parsed resource path.
#[derive(Debug, Default)]
struct Target {
    group: String,
    version: String,
    namespace: Option<String>,
    resource: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

fn parse_path(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let mut t = Target {
        group: group.to_string(),
        version: version.to_string(),
        ..Target::default()
    };
    let tail = match rest {
        [] => return Some(t),
        ["namespaces", ns, res, tail @ ..] if *res != "status" && *res != "finalize" => {
            t.namespace = Some((*ns).to_string());
            t.resource = Some((*res).to_string());
            tail
        }
        [res, tail @ ..] => {
            t.resource = Some((*res).to_string());
            tail
        }
    };
    match tail {
        [] => {}
        [name] => t.name = Some((*name).to_string()),
        [name, sub] => {
            t.name = Some((*name).to_string());
            t.sub = Some((*sub).to_string());
        }
        _ => return None,
    }
    Some(t)
}

async fn resource(
    State(app): AppState,
    user: Option<Extension<Requester>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let user = user.map(|Extension(Requester(user))| user);
    match handle(&app, user, &method, &uri, &headers, body).await {
        Ok(resp) => resp,
        Err(err) => err.into_response(),
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "one dispatch table over verbs, clearer in one place"
)]
async fn handle(
    app: &Arc<App>,
    user: Option<Arc<super::authn::UserInfo>>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    if let ["apis", group] = uri
        .path()
        .trim_matches('/')
        .split('/')
        .collect::<Vec<_>>()
        .as_slice()
    {
        let registry = app.store.lock().registry.clone();
        return discovery::api_group(&registry, group)
            .map(|v| json_response(StatusCode::OK, &v))
            .ok_or_else(ApiError::not_found_path);
    }
    let target = parse_path(uri.path()).ok_or_else(ApiError::not_found_path)?;
    let Some(resource) = target.resource.clone() else {
        if target.group.is_empty() && target.version != "v1" {
            return Err(ApiError::not_found_path());
        }
        let registry = app.store.lock().registry.clone();
        return discovery::resource_list(&registry, &target.group, &target.version)
            .map(|v| json_response(StatusCode::OK, &v))
            .ok_or_else(ApiError::not_found_path);
    };
    if let (true, "serviceaccounts", Some("token"), Some(ns), Some(name)) = (
        target.group.is_empty(),
        resource.as_str(),
        target.sub.as_deref(),
        &target.namespace,
        &target.name,
    ) {
        if method != Method::POST {
            return Err(ApiError::method_not_allowed(
                "the token subresource supports create (POST) only",
            ));
        }
        let request = if body.iter().all(u8::is_ascii_whitespace) {
            json!({})
        } else {
            parse_body(&body, false).map_err(ApiError::bad_request)?
        };
        return auth::token_request(&app.store, &app.auth, ns, name, &request)
            .map(|v| json_response(StatusCode::CREATED, &v));
    }
    if let Some(review) = Review::at(&target.group, &target.version, &resource) {
        return self_review::handle(
            &app.store,
            &app.auth,
            user.as_deref(),
            review,
            method,
            headers,
            &body,
        )
        .map(|v| json_response(StatusCode::CREATED, &v));
    }
    let p = params(uri)?;
    let watching = method == Method::GET && flag(&p, "watch");
    let verb = match (method.clone(), target.name.is_some()) {
        (Method::GET, _) if watching => Verb::Watch,
        (Method::GET, true) => Verb::Get,
        (Method::GET, false) => Verb::List,
        (Method::POST, false) => Verb::Create,
        (Method::PUT, true) => Verb::Update,
        (Method::PATCH, true) => Verb::Patch,
        (Method::DELETE, true) => Verb::Delete,
        (Method::DELETE, false) => Verb::DeleteCollection,
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method})"
            )));
        }
    };
    let rt: Arc<ResourceType> = app
        .store
        .lock()
        .registry
        .lookup(&target.group, &target.version, &resource)
        .ok_or_else(ApiError::not_found_path)?;
    match (&target.namespace, rt.namespaced) {
        (Some(_), false) => return Err(ApiError::not_found_path()),
        (None, true) if !matches!(verb, Verb::List | Verb::Watch) => {
            return Err(ApiError::not_found_path());
        }
        _ => {}
    }
    let status = match target.sub.as_deref() {
        None => false,
        Some("status") if rt.version(&target.version).is_some_and(|v| v.status) => true,
        Some(_) => return Err(ApiError::not_found_path()),
    };
    if status && !matches!(verb, Verb::Get | Verb::Update | Verb::Patch) {
        return Err(ApiError::method_not_allowed(
            "the status subresource supports get, update and patch",
        ));
    }
    let info = RequestInfo {
        verb,
        resource: resource.clone(),
        namespace: target.namespace.clone().unwrap_or_default(),
        name: target.name.clone().unwrap_or_default(),
        subresource: target.sub.clone().unwrap_or_default(),
    };
    app.faults.before(&info).await?;
    let shape = Shape::from_accept(accept(headers));
    let ns = target.namespace.clone().unwrap_or_default();
    let name = target.name.clone().unwrap_or_default();
    let version = target.version.clone();
    match verb {
        Verb::Watch => {
            let mut query = list_query(&p)?;
            if target.name.is_some() {
                query.field = FieldSelector::parse(&format!("metadata.name={name}"))?;
            }
            let requested = p
                .get("timeoutSeconds")
                .and_then(|t| t.parse::<u64>().ok())
                .map_or(app.opts.max_watch_timeout, Duration::from_secs);
            let req = WatchRequest {
                rt,
                version,
                namespace: target.namespace.clone(),
                query,
                send_initial_events: flag(&p, "sendInitialEvents"),
                bookmarks: flag(&p, "allowWatchBookmarks"),
                timeout: requested.min(app.opts.max_watch_timeout),
                bookmark_interval: app.opts.bookmark_interval,
                shape,
            };
            watch::start(&app.store, req, app.faults.close_signal())
        }
        Verb::List => {
            let query = list_query(&p)?;
            let inner = app.store.lock();
            let page = read::list(&inner, &rt, target.namespace.as_deref(), &query)?;
            drop(inner);
            Ok(json_response(
                StatusCode::OK,
                &read::shape_list(&rt, &version, &page, shape),
            ))
        }
        Verb::Get => {
            let obj = app.store.lock().get(&rt.gr(), &ns, &name);
            let obj = obj.ok_or_else(|| ApiError::not_found(subject(&rt, &name)))?;
            Ok(json_response(
                StatusCode::OK,
                &read::shape_one(&obj, &rt, &version, shape),
            ))
        }
        Verb::Create | Verb::Update | Verb::Patch => {
            let mut ctx = write_ctx(&rt, &version, &ns, status, &p, headers);
            ctx.guard = user.map(|user| WriteGuard {
                auth: Arc::clone(&app.auth),
                user,
            });
            let content_type = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/json");
            let protobuf = content_type.starts_with(protobuf::CONTENT_TYPE);
            if content_type.contains("cbor") || (protobuf && verb == Verb::Patch) {
                return Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    format!(
                        "the body of the request was in an unknown format ({content_type}) - accepted media types include: application/json, application/yaml, {} (create and update)",
                        protobuf::CONTENT_TYPE
                    ),
                ));
            }
            let object = |body: &[u8]| {
                if protobuf {
                    protobuf::decode(body)
                } else {
                    parse_body(body, content_type.contains("yaml")).map_err(ApiError::bad_request)
                }
            };
            let result = match verb {
                Verb::Create => {
                    let body = object(&body)?;
                    let mut inner = app.store.lock();
                    write::create(&mut inner, &mut ctx, body).map(|o| (o, true))
                }
                Verb::Update => {
                    let body = object(&body)?;
                    let mut inner = app.store.lock();
                    write::update(&mut inner, &mut ctx, &name, UpdateOp::Replace(body))
                        .map(|w| (w.object, w.created))
                }
                _ => {
                    let pt = PatchType::from_content_type(content_type)
                        .ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
                    let body =
                        parse_body(&body, pt == PatchType::Apply).map_err(ApiError::bad_request)?;
                    let op = if pt == PatchType::Apply {
                        if !p.contains_key("fieldManager") {
                            return Err(ApiError::bad_request(
                                "PATCH, application/apply-patch+yaml requests must have a fieldManager query parameter",
                            ));
                        }
                        UpdateOp::Apply {
                            config: body,
                            force: flag(&p, "force"),
                        }
                    } else {
                        if p.contains_key("force") {
                            return Err(ApiError::bad_request(
                                "force may not be specified for non-apply patch",
                            ));
                        }
                        UpdateOp::Patch(pt, body)
                    };
                    let mut inner = app.store.lock();
                    write::update(&mut inner, &mut ctx, &name, op).map(|w| (w.object, w.created))
                }
            };
            let (obj, created) = result?;
            let code = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            let mut resp = json_response(code, &read::shape_one(&obj, &rt, &version, shape));
            for w in &ctx.warnings {
                if let Ok(v) = HeaderValue::from_str(&format!("299 - {}", json!(w))) {
                    resp.headers_mut().append(header::WARNING, v);
                }
            }
            Ok(resp)
        }
        Verb::Delete => {
            let opts = delete_opts(&p, &body)?;
            let deleted = {
                let mut inner = app.store.lock();
                delete::delete(&mut inner, &rt, &ns, &name, &opts)?
            };
            if deleted.removed && rt.builtin && rt.plural != "namespaces" {
                let mut details = json!({"name": name, "kind": rt.plural, "uid": super::meta::ObjExt::uid(&*deleted.object)});
                if !rt.group.is_empty() {
                    details["group"] = json!(rt.group);
                }
                return Ok(json_response(
                    StatusCode::OK,
                    &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
                ));
            }
            Ok(json_response(
                StatusCode::OK,
                &read::shape_one(&deleted.object, &rt, &version, shape),
            ))
        }
        Verb::DeleteCollection => {
            let opts = delete_opts(&p, &body)?;
            let query = list_query(&p)?;
            let mut inner = app.store.lock();
            let page = read::list(
                &inner,
                &rt,
                target.namespace.as_deref(),
                &ListQuery {
                    limit: None,
                    continue_token: None,
                    ..query
                },
            )?;
            let mut items = Vec::new();
            for obj in &page.items {
                let n = super::meta::ObjExt::name(&**obj).to_string();
                if let Ok(d) = delete::delete(&mut inner, &rt, &ns, &n, &opts) {
                    items.push(d.object);
                }
            }
            let page = read::ListPage {
                items,
                resource_version: inner.rv,
                continue_token: None,
                remaining: None,
            };
            drop(inner);
            Ok(json_response(
                StatusCode::OK,
                &read::shape_list(&rt, &version, &page, Shape::Full),
            ))
        }
    }
}

fn subject<'a>(rt: &'a ResourceType, name: &'a str) -> super::api_error::Subject<'a> {
    super::api_error::Subject {
        group: &rt.group,
        resource: &rt.plural,
        name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse() {
        let t = parse_path("/api/v1/namespaces/default/configmaps/a").expect("ok");
        assert_eq!(
            (
                t.namespace.as_deref(),
                t.resource.as_deref(),
                t.name.as_deref()
            ),
            (Some("default"), Some("configmaps"), Some("a"))
        );
        let t = parse_path("/api/v1/namespaces/default").expect("ok");
        assert_eq!(
            (t.resource.as_deref(), t.name.as_deref()),
            (Some("namespaces"), Some("default"))
        );
        let t = parse_path("/api/v1/namespaces/x/status").expect("ok");
        assert_eq!(
            (t.name.as_deref(), t.sub.as_deref()),
            (Some("x"), Some("status"))
        );
        let t = parse_path("/apis/flink.apache.org/v1beta1/namespaces/a/flinkdeployments/b/status")
            .expect("ok");
        assert_eq!(t.sub.as_deref(), Some("status"));
        let t = parse_path("/apis/g.io/v1").expect("ok");
        assert!(t.resource.is_none());
        assert!(parse_path("/apis/g.io/v1/a/b/c/d").is_none());
    }
}
