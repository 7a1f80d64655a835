//! Authentication and authorization of HTTP requests (on with [`AuthMode::Rbac`]): who sent a
//! request (bearer token, [`authn`](super::authn)), what it asks to do (Kubernetes'
//! `RequestInfo`), whether RBAC allows it ([`rbac`](super::rbac)), the extra checks Kubernetes
//! makes on some writes (create through server-side apply, RBAC escalation), the TokenRequest
//! subresource, and the default ClusterRoles a cluster starts with.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, Uri, header};
use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};
use serde_json::{Value, json};

use super::api_error::ApiError;
use super::authn::{MASTERS, Refusal, Token, Tokens, UserInfo};
use super::rbac::{self, Attributes, Decision, GROUP, Policy, ResourceTarget, Target};
use super::resources::GroupResource;
use super::store::{Inner, Store};

/// Whether the server checks who sends a request and what they may do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AuthMode {
    /// Every request is served, whoever sends it (no credentials needed).
    #[default]
    Off,
    /// Every request needs a bearer token the server issued (else `401`), and RBAC must allow
    /// it (else `403`): Roles, ClusterRoles, RoleBindings and ClusterRoleBindings stored in the
    /// server, evaluated as Kubernetes does. The server's own client and kubeconfig
    /// ([`LocalApiServer::client`](super::LocalApiServer::client)) act as a member of
    /// `system:masters`.
    Rbac,
}

/// A request the server refused: `401` (no valid token) or `403` (not allowed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// `401` or `403`.
    pub code: u16,
    /// The user name; empty for `401`.
    pub user: String,
    /// The verb (`get`, `list`, `watch`, `create`, ... or the lower-case HTTP method of a
    /// non-resource request).
    pub verb: String,
    /// API group of a resource request (`""` for the core group).
    pub group: String,
    /// `resource` or `resource/subresource`; empty for a non-resource request.
    pub resource: String,
    /// Namespace of a namespaced request.
    pub namespace: String,
    /// Object name, if the request names one.
    pub name: String,
    /// The path of a non-resource request (empty for resource requests).
    pub path: String,
    /// The `Status` message sent back.
    pub message: String,
}

/// The authenticated user of a request, put into the request's extensions by
/// [`middleware`].
#[derive(Debug, Clone)]
pub(crate) struct Requester(pub Arc<UserInfo>);

/// How many denials [`AuthState`] keeps (oldest dropped first).
const DENIALS_KEPT: usize = 10_000;
/// TokenRequest defaults and bounds (Kubernetes: 1 h default, 10 min minimum).
const DEFAULT_TOKEN_TTL: Duration = Duration::from_hours(1);
const MIN_TOKEN_TTL: Duration = Duration::from_mins(10);
/// The server's own administrator.
pub(crate) const ADMIN_USER: &str = "bluegreen-local:admin";

/// Tokens, the administrator's token, the policy cache and the denial log.
pub(crate) struct AuthState {
    pub mode: AuthMode,
    pub tokens: Tokens,
    pub admin: Token,
    policy: Mutex<Option<(u64, Arc<Policy>)>>,
    denials: Mutex<VecDeque<Denial>>,
}

impl AuthState {
    pub fn new(mode: AuthMode) -> Self {
        let tokens = Tokens::default();
        let admin = tokens.issue_user(UserInfo::user(ADMIN_USER, &[MASTERS]));
        Self {
            mode,
            tokens,
            admin,
            policy: Mutex::new(None),
            denials: Mutex::new(VecDeque::new()),
        }
    }

    pub fn enabled(&self) -> bool {
        self.mode == AuthMode::Rbac
    }

    /// The RBAC objects of `inner`, rebuilt only after one of them changed.
    pub(crate) fn policy(&self, inner: &Inner) -> Arc<Policy> {
        let mut cached = self.policy.lock().unwrap_or_else(PoisonError::into_inner);
        match cached.as_ref() {
            Some((generation, p)) if *generation == inner.rbac_generation => Arc::clone(p),
            _ => {
                let p = Arc::new(Policy::from_store(inner));
                *cached = Some((inner.rbac_generation, Arc::clone(&p)));
                p
            }
        }
    }

    /// Authorizes `attrs` for `user`; the `403` to send back when denied.
    fn authorize(
        &self,
        inner: &Inner,
        user: &UserInfo,
        attrs: &Attributes,
    ) -> Result<(), ApiError> {
        match rbac::authorize(&self.policy(inner), user, attrs) {
            Decision::Allow => Ok(()),
            Decision::Deny { reason } => {
                let err = forbidden(rbac::forbidden_message(user, attrs, &reason), &attrs.target);
                self.record(403, &user.name, attrs, &err.message);
                Err(err)
            }
        }
    }

    fn record(&self, code: u16, user: &str, attrs: &Attributes, message: &str) {
        let (group, resource, namespace, name, path) = match &attrs.target {
            Target::Resource(r) => (
                r.group.clone(),
                r.combined(),
                r.namespace.clone(),
                r.name.clone(),
                String::new(),
            ),
            Target::NonResource { path } => (
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                path.clone(),
            ),
        };
        tracing::debug!(code, user, verb = %attrs.verb, group, resource, namespace, name, path, "request refused");
        let mut log = self.denials.lock().unwrap_or_else(PoisonError::into_inner);
        if log.len() >= DENIALS_KEPT {
            log.pop_front();
        }
        log.push_back(Denial {
            code,
            user: user.to_owned(),
            verb: attrs.verb.clone(),
            group,
            resource,
            namespace,
            name,
            path,
            message: message.to_owned(),
        });
    }

    pub fn denials(&self) -> Vec<Denial> {
        self.denials
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}

fn forbidden(message: String, target: &Target) -> ApiError {
    let err = ApiError::forbidden(message);
    match target {
        Target::Resource(r) => {
            let mut details = json!({"kind": r.resource});
            if !r.name.is_empty() {
                details["name"] = json!(r.name);
            }
            if !r.group.is_empty() {
                details["group"] = json!(r.group);
            }
            err.with_details(details)
        }
        Target::NonResource { .. } => err,
    }
}

fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// What a request asks to do, derived from its method and URL as Kubernetes'
/// `RequestInfoFactory` does: `/api/<v>/...` and `/apis/<g>/<v>/...` with at least a resource
/// are resource requests; everything else (`/api`, `/api/v1`, `/apis/<g>/<v>`, `/version`,
/// `/openapi/v3`, ...) is a non-resource request whose verb is the lower-case method.
pub(crate) fn request_attributes(method: &Method, uri: &Uri) -> Attributes {
    let path = uri.path();
    let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (group, mut rest) = match parts.as_slice() {
        ["api", _version, rest @ ..] if !rest.is_empty() => ("", rest),
        ["apis", group, _version, rest @ ..] if !rest.is_empty() => (*group, rest),
        _ => {
            return Attributes {
                verb: method.as_str().to_ascii_lowercase(),
                target: Target::NonResource {
                    path: path.to_owned(),
                },
            };
        }
    };
    let mut t = ResourceTarget {
        group: group.to_owned(),
        ..ResourceTarget::default()
    };
    if let ["namespaces", ns, tail @ ..] = rest {
        (*ns).clone_into(&mut t.namespace);
        if !tail.is_empty() && !matches!(tail[0], "status" | "finalize") {
            rest = tail;
        }
    }
    rest[0].clone_into(&mut t.resource);
    if let Some(name) = rest.get(1) {
        (*name).clone_into(&mut t.name);
    }
    if let Some(sub) = rest.get(2) {
        (*sub).clone_into(&mut t.subresource);
    }
    let query: HashMap<String, String> = uri
        .query()
        .map(|q| {
            url_pairs(q)
                .into_iter()
                .collect::<HashMap<String, String>>()
        })
        .unwrap_or_default();
    let watch = query.get("watch").is_some_and(|v| v == "true" || v == "1");
    let verb = match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD if watch => "watch",
        Method::GET | Method::HEAD if t.name.is_empty() => "list",
        Method::GET | Method::HEAD => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if t.name.is_empty() => "deletecollection",
        Method::DELETE => "delete",
        _ => "",
    };
    if matches!(verb, "list" | "watch")
        && t.name.is_empty()
        && let Some(name) = query.get("fieldSelector").and_then(|s| exact_name(s))
    {
        t.name = name;
    }
    Attributes {
        verb: if verb.is_empty() {
            method.as_str().to_ascii_lowercase()
        } else {
            verb.to_owned()
        },
        target: Target::Resource(t),
    }
}

/// Decoded `key=value` pairs of a query string.
fn url_pairs(query: &str) -> Vec<(String, String)> {
    let uri: Uri = format!("/?{query}").parse().unwrap_or_default();
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri)
        .map(|q| q.0)
        .unwrap_or_default()
}

/// The name a field selector requires exactly (`metadata.name=x` or `==x` among its terms),
/// if it is a valid path segment.
fn exact_name(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let term = term.trim();
        let value = term
            .strip_prefix("metadata.name==")
            .or_else(|| term.strip_prefix("metadata.name="))?;
        let valid =
            !value.is_empty() && value != "." && value != ".." && !value.contains(['/', '%']);
        valid.then(|| value.to_owned())
    })
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Authenticates (`401` without a valid token) and authorizes (`403`) every request when auth
/// is on, and hands the user to the handlers.
pub(crate) async fn middleware(
    State((store, auth)): State<(Arc<Store>, Arc<AuthState>)>,
    mut req: Request,
    next: Next,
) -> Response {
    let auth = &auth;
    if !auth.enabled() {
        return next.run(req).await;
    }
    let attrs = request_attributes(req.method(), req.uri());
    let token = bearer(req.headers());
    let outcome = {
        let inner = store.lock();
        match token.map(|t| auth.tokens.authenticate(&inner, t)) {
            None => Err(None),
            Some(Err(why)) => Err(Some(why)),
            Some(Ok(user)) => Ok(auth.authorize(&inner, &user, &attrs).map(|()| user)),
        }
    };
    match outcome {
        Err(why) => {
            let why = why.map_or("no bearer token", Refusal::as_str);
            tracing::debug!(reason = why, "unauthenticated request");
            let err = unauthorized();
            auth.record(401, "", &attrs, &format!("{}: {why}", err.message));
            err.into_response()
        }
        Ok(Err(forbidden)) => forbidden.into_response(),
        Ok(Ok(user)) => {
            req.extensions_mut().insert(Requester(Arc::new(user)));
            next.run(req).await
        }
    }
}

/// The checks Kubernetes makes inside some writes, for the user who sent them.
pub(crate) struct WriteGuard {
    pub auth: Arc<AuthState>,
    pub user: Arc<UserInfo>,
}

impl WriteGuard {
    /// A server-side apply that creates its object also needs `create` (Kubernetes'
    /// `createAuthorizerAttributes` in the patch handler).
    pub fn authorize_create(
        &self,
        inner: &Inner,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        let attrs = Attributes {
            verb: "create".into(),
            target: Target::Resource(ResourceTarget {
                group: gr.group.clone(),
                resource: gr.resource.clone(),
                subresource: String::new(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            }),
        };
        self.auth.authorize(inner, &self.user, &attrs)
    }

    /// A Role or ClusterRole may only grant what its writer holds (or the writer may
    /// `escalate`); a RoleBinding or ClusterRoleBinding may only bind a role whose rights its
    /// writer holds (or the writer may `bind` that role). Other kinds pass.
    pub fn check_escalation(
        &self,
        inner: &Inner,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
        obj: &Value,
    ) -> Result<(), ApiError> {
        if gr.group != GROUP || self.user.is_superuser() {
            return Ok(());
        }
        let policy = self.auth.policy(inner);
        let allowed = |verb: &str, resource: &str, target_name: &str| {
            let attrs = Attributes {
                verb: verb.into(),
                target: Target::Resource(ResourceTarget {
                    group: GROUP.into(),
                    resource: resource.into(),
                    subresource: String::new(),
                    namespace: namespace.to_owned(),
                    name: target_name.to_owned(),
                }),
            };
            rbac::authorize(&policy, &self.user, &attrs) == Decision::Allow
        };
        let granted: Vec<PolicyRule> = match gr.resource.as_str() {
            "roles" | "clusterroles" => {
                if allowed("escalate", &gr.resource, name) {
                    return Ok(());
                }
                serde_json::from_value(obj.get("rules").cloned().unwrap_or(json!([])))
                    .map_err(|e| ApiError::bad_request(format!("rules: {e}")))?
            }
            "rolebindings" | "clusterrolebindings" => {
                let role_ref: RoleRef =
                    serde_json::from_value(obj.get("roleRef").cloned().unwrap_or(Value::Null))
                        .map_err(|e| ApiError::bad_request(format!("roleRef: {e}")))?;
                let role_resource = if role_ref.kind == "Role" {
                    "roles"
                } else {
                    "clusterroles"
                };
                if allowed("bind", role_resource, &role_ref.name) {
                    return Ok(());
                }
                let rules = match role_ref.kind.as_str() {
                    "ClusterRole" => policy
                        .cluster_roles
                        .get(&role_ref.name)
                        .map(|r| r.rules.clone()),
                    "Role" => policy
                        .roles
                        .get(&(namespace.to_owned(), role_ref.name.clone()))
                        .map(|r| r.rules.clone()),
                    _ => None,
                };
                let Some(rules) = rules else {
                    return Err(forbidden(
                        format!(
                            "{}.{GROUP} \"{name}\" is forbidden: {}.{GROUP} \"{}\" not found",
                            gr.resource,
                            role_ref.kind.to_lowercase(),
                            role_ref.name
                        ),
                        &Self::target(gr, namespace, name),
                    ));
                };
                rules.unwrap_or_default()
            }
            _ => return Ok(()),
        };
        let (held, errors) = policy.rules_for(&self.user, namespace);
        let missing = rbac::uncovered(&held, &granted);
        if missing.is_empty() {
            return Ok(());
        }
        let groups: Vec<String> = self
            .user
            .groups
            .iter()
            .map(|g| format!("\"{g}\""))
            .collect();
        let mut message = format!(
            "{}.{GROUP} \"{name}\" is forbidden: user \"{}\" (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            gr.resource,
            self.user.name,
            groups.join(" "),
            missing
                .iter()
                .map(rbac::compact)
                .collect::<Vec<_>>()
                .join("\n")
        );
        if !errors.is_empty() {
            let _ = write!(message, "; resolution errors: [{}]", errors.join(", "));
        }
        let attrs = Attributes {
            verb: "escalate".into(),
            target: Self::target(gr, namespace, name),
        };
        self.auth.record(403, &self.user.name, &attrs, &message);
        Err(forbidden(message, &attrs.target))
    }

    fn target(gr: &GroupResource, namespace: &str, name: &str) -> Target {
        Target::Resource(ResourceTarget {
            group: gr.group.clone(),
            resource: gr.resource.clone(),
            subresource: String::new(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })
    }
}

/// `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token` (TokenRequest): a token for an
/// existing ServiceAccount, bound to it, valid for `spec.expirationSeconds` (default 1 h, at
/// least 10 min).
pub(crate) fn token_request(
    store: &Store,
    auth: &AuthState,
    namespace: &str,
    name: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    let seconds = body
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_u64);
    let ttl = seconds.map_or(DEFAULT_TOKEN_TTL, Duration::from_secs);
    if ttl < MIN_TOKEN_TTL {
        return Err(ApiError::invalid_field(
            "authentication.k8s.io",
            "TokenRequest",
            name,
            "spec.expirationSeconds",
            "Invalid value: may not specify a duration less than 10 minutes",
        ));
    }
    let token = issue_service_account_token(store, auth, namespace, name, ttl)?;
    let expires = k8s_openapi::jiff::Timestamp::now()
        .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(
            i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX),
        ))
        .unwrap_or(k8s_openapi::jiff::Timestamp::MAX);
    Ok(json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": null},
        "spec": {
            "audiences": body.pointer("/spec/audiences").cloned().unwrap_or(json!([])),
            "expirationSeconds": ttl.as_secs(),
            "boundObjectRef": null,
        },
        "status": {
            "token": token.expose(),
            "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        },
    }))
}

/// A token for ServiceAccount `namespace/name`, which must exist (`404` otherwise).
pub(crate) fn issue_service_account_token(
    store: &Store,
    auth: &AuthState,
    namespace: &str,
    name: &str,
    ttl: Duration,
) -> Result<Token, ApiError> {
    let sa = store
        .lock()
        .get(&GroupResource::new("", "serviceaccounts"), namespace, name)
        .ok_or_else(|| {
            ApiError::new(
                404,
                "NotFound",
                format!("serviceaccounts \"{name}\" not found"),
            )
            .with_details(json!({"name": name, "kind": "serviceaccounts"}))
        })?;
    Ok(auth.tokens.issue_service_account(&sa, ttl))
}

/// The ClusterRoles and ClusterRoleBindings every Kubernetes cluster starts with that matter
/// here: `cluster-admin` (bound to `system:masters`), `system:discovery` and
/// `system:public-info-viewer` (discovery, version, health and OpenAPI for every authenticated
/// user), `system:basic-user` (self reviews).
pub(crate) fn bootstrap_policy() -> Vec<Value> {
    let meta = |name: &str| {
        json!({
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        })
    };
    let role = |name: &str, rules: Value| json!({"apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRole", "metadata": meta(name), "rules": rules});
    let binding = |name: &str, groups: &[&str]| {
        json!({
            "apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRoleBinding", "metadata": meta(name),
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
            "subjects": groups.iter().map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g})).collect::<Vec<_>>(),
        })
    };
    vec![
        role(
            "cluster-admin",
            json!([
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ]),
        ),
        binding("cluster-admin", &[MASTERS]),
        role(
            "system:discovery",
            json!([{"nonResourceURLs": [
                "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                "/openapi/*", "/readyz", "/version", "/version/",
            ], "verbs": ["get"]}]),
        ),
        binding("system:discovery", &["system:authenticated"]),
        role(
            "system:public-info-viewer",
            json!([{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
        role(
            "system:basic-user",
            json!([
                {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
                {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
            ]),
        ),
        binding("system:basic-user", &["system:authenticated"]),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::meta::ObjExt;
    use super::*;

    fn attrs(method: &Method, uri: &str) -> Attributes {
        request_attributes(method, &uri.parse().expect("uri"))
    }

    fn resource(
        verb: &str,
        group: &str,
        resource: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> Attributes {
        Attributes {
            verb: verb.into(),
            target: Target::Resource(ResourceTarget {
                group: group.into(),
                resource: resource.into(),
                subresource: sub.into(),
                namespace: ns.into(),
                name: name.into(),
            }),
        }
    }

    #[test]
    fn requests_map_to_attributes_like_kubernetes() {
        assert_eq!(
            attrs(&Method::GET, "/api/v1/namespaces/a/configmaps/x"),
            resource("get", "", "configmaps", "", "a", "x")
        );
        assert_eq!(
            attrs(&Method::GET, "/api/v1/namespaces/a/configmaps"),
            resource("list", "", "configmaps", "", "a", "")
        );
        assert_eq!(
            attrs(
                &Method::GET,
                "/api/v1/namespaces/a/configmaps?watch=true&fieldSelector=metadata.name%3Dx"
            ),
            resource("watch", "", "configmaps", "", "a", "x")
        );
        assert_eq!(
            attrs(
                &Method::GET,
                "/api/v1/namespaces/a/configmaps?fieldSelector=metadata.name%3D%3Dx,metadata.namespace%3Da"
            ),
            resource("list", "", "configmaps", "", "a", "x")
        );
        assert_eq!(
            attrs(
                &Method::GET,
                "/api/v1/namespaces/a/configmaps?fieldSelector=metadata.name!%3Dx"
            ),
            resource("list", "", "configmaps", "", "a", "")
        );
        assert_eq!(
            attrs(
                &Method::GET,
                "/apis/bluegreen.dev/v1alpha1/flinkbluegreendeployments?watch=1"
            ),
            resource(
                "watch",
                "bluegreen.dev",
                "flinkbluegreendeployments",
                "",
                "",
                ""
            )
        );
        assert_eq!(
            attrs(
                &Method::PUT,
                "/apis/bluegreen.dev/v1alpha1/namespaces/a/flinkbluegreendeployments/o/status"
            ),
            resource(
                "update",
                "bluegreen.dev",
                "flinkbluegreendeployments",
                "status",
                "a",
                "o"
            )
        );
        assert_eq!(
            attrs(
                &Method::POST,
                "/api/v1/namespaces/a/serviceaccounts/sa/token"
            ),
            resource("create", "", "serviceaccounts", "token", "a", "sa")
        );
        assert_eq!(
            attrs(&Method::POST, "/apis/events.k8s.io/v1/namespaces/a/events"),
            resource("create", "events.k8s.io", "events", "", "a", "")
        );
        assert_eq!(
            attrs(
                &Method::PATCH,
                "/apis/coordination.k8s.io/v1/namespaces/a/leases/l"
            ),
            resource("patch", "coordination.k8s.io", "leases", "", "a", "l")
        );
        assert_eq!(
            attrs(&Method::DELETE, "/api/v1/namespaces/a/configmaps"),
            resource("deletecollection", "", "configmaps", "", "a", "")
        );
        assert_eq!(
            attrs(&Method::DELETE, "/api/v1/namespaces/a/configmaps/x"),
            resource("delete", "", "configmaps", "", "a", "x")
        );
        // A namespace is its own namespace; its status is a subresource.
        assert_eq!(
            attrs(&Method::GET, "/api/v1/namespaces/a"),
            resource("get", "", "namespaces", "", "a", "a")
        );
        assert_eq!(
            attrs(&Method::PUT, "/api/v1/namespaces/a/status"),
            resource("update", "", "namespaces", "status", "a", "a")
        );
        assert_eq!(
            attrs(&Method::GET, "/api/v1/namespaces"),
            resource("list", "", "namespaces", "", "", "")
        );
    }

    #[test]
    fn discovery_and_other_paths_are_non_resource_requests() {
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps",
            "/apis/apps/v1",
            "/version",
            "/openapi/v3",
            "/openapi/v3/apis/apps/v1",
            "/healthz",
        ] {
            assert_eq!(
                attrs(&Method::GET, path),
                Attributes {
                    verb: "get".into(),
                    target: Target::NonResource { path: path.into() }
                },
                "{path}"
            );
        }
        assert_eq!(attrs(&Method::POST, "/version").verb, "post");
    }

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, "Bearer abc".parse().expect("header"));
        assert_eq!(bearer(&h), Some("abc"));
        h.insert(
            header::AUTHORIZATION,
            "bearer  abc ".parse().expect("header"),
        );
        assert_eq!(bearer(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, "Basic YTpi".parse().expect("header"));
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, "Bearer ".parse().expect("header"));
        assert_eq!(bearer(&h), None);
    }

    #[test]
    fn the_bootstrap_policy_grants_discovery_to_every_authenticated_user() {
        let policy = Policy {
            cluster_roles: bootstrap_policy()
                .into_iter()
                .filter(|o| o["kind"] == "ClusterRole")
                .map(|o| {
                    (
                        o.name().to_owned(),
                        serde_json::from_value(o).expect("ClusterRole"),
                    )
                })
                .collect(),
            cluster_role_bindings: bootstrap_policy()
                .into_iter()
                .filter(|o| o["kind"] == "ClusterRoleBinding")
                .map(|o| serde_json::from_value(o).expect("ClusterRoleBinding"))
                .collect(),
            ..Policy::default()
        };
        let sa = UserInfo::service_account("x", "y");
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps/v1",
            "/version",
            "/openapi/v3",
            "/openapi/v3/api/v1",
            "/healthz",
        ] {
            assert_eq!(
                rbac::authorize(&policy, &sa, &attrs(&Method::GET, path)),
                Decision::Allow,
                "{path}"
            );
        }
        assert_ne!(
            rbac::authorize(&policy, &sa, &attrs(&Method::POST, "/api")),
            Decision::Allow
        );
        assert_ne!(
            rbac::authorize(
                &policy,
                &sa,
                &attrs(&Method::GET, "/api/v1/namespaces/x/configmaps")
            ),
            Decision::Allow
        );
        let admin = UserInfo::user("someone", &[MASTERS]);
        assert_eq!(
            rbac::authorize(
                &policy,
                &admin,
                &attrs(&Method::DELETE, "/api/v1/namespaces/x")
            ),
            Decision::Allow
        );
    }
}
