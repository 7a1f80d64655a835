//! An in-process Kubernetes API server that `kube::Client` and `kubectl` talk to unchanged.
//!
//! ```no_run
//! # async fn demo() -> bluegreen_local_apiserver::Result<()> {
//! use bluegreen_local_apiserver::{LocalApiServer, Options};
//! let server = LocalApiServer::start(Options::default()).await?; // binds 127.0.0.1:0
//! let client: kube::Client = server.client();
//! server.apply_crd(r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "...": "..."}"#)?;
//! server.faults().close_watches();
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! See `docs/local-apiserver.md` for what is supported and what is simplified.
#![forbid(unsafe_code)]

mod api_error;
mod apply;
mod auth;
mod authn;
mod crd;
mod delete;
mod discovery;
mod error;
mod event_views;
mod faults;
mod fields;
mod http;
mod meta;
mod normalize;
mod openapi;
mod openapi_v2;
mod params;
mod patch;
mod persistence;
mod protobuf;
mod protobuf_reviews;
mod rbac;
mod read;
mod resources;
mod schema;
mod selectors;
mod self_review;
mod size_limits;
mod store;
mod watch;
mod write;
mod write_ctx;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

pub use auth::{AuthMode, Denial};
pub use authn::{Token, UserInfo};
pub use error::{Error, Result};
pub use faults::{FaultInjector, RequestMatch, Verb};
pub use schema::{SchemaReport, prune_and_validate, validate_against_crd, validate_against_schema};

use faults::FaultState;
use http::{App, ServeOptions};
use store::Store;
use write::UpdateOp;
use write_ctx::{FieldValidation, WriteCtx};

/// Settings of a [`LocalApiServer`].
#[derive(Debug, Clone)]
pub struct Options {
    /// TCP port on 127.0.0.1; `0` picks a free one.
    pub port: u16,
    /// Directory to snapshot objects to (and restore from at start). `None`: memory only.
    pub data_dir: Option<PathBuf>,
    /// How many events the watch history keeps; older resourceVersions get `410 Gone`.
    pub history_limit: usize,
    /// Events buffered per watcher before a slow watcher is dropped with `410 Gone`.
    pub watch_buffer: usize,
    /// Interval of BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Upper bound for a watch's `timeoutSeconds` (and the default when absent).
    pub max_watch_timeout: Duration,
    /// Log every request at INFO level (`tracing`).
    pub log_requests: bool,
    /// Bearer-token authentication and RBAC authorization (default: off). See
    /// [`AuthMode::Rbac`].
    pub auth: AuthMode,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            port: 0,
            data_dir: None,
            history_limit: 10_000,
            watch_buffer: 16_384,
            bookmark_interval: Duration::from_secs(10),
            max_watch_timeout: Duration::from_mins(30),
            log_requests: false,
            auth: AuthMode::Off,
        }
    }
}

/// A running local API server. Dropping it stops serving; [`LocalApiServer::shutdown`]
/// also writes a final snapshot when persistence is on.
pub struct LocalApiServer {
    app: Arc<App>,
    addr: SocketAddr,
    stop: tokio::sync::watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
    saver: Option<JoinHandle<()>>,
    data_dir: Option<PathBuf>,
}

const MANAGER: &str = "bluegreen-local";

impl LocalApiServer {
    /// Starts serving on `127.0.0.1:<options.port>`, with namespaces `default`, `kube-system`
    /// and `kube-public` present.
    pub async fn start(options: Options) -> Result<Self> {
        let store = Arc::new(Store::new(options.history_limit, options.watch_buffer));
        if let Some(dir) = &options.data_dir {
            persistence::load(&store, dir)?;
        }
        let bind = format!("127.0.0.1:{}", options.port);
        let listener = tokio::net::TcpListener::bind(&bind)
            .await
            .map_err(|source| Error::Bind {
                addr: bind.clone(),
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| Error::Bind { addr: bind, source })?;
        let app = Arc::new(App {
            store: Arc::clone(&store),
            faults: Arc::new(FaultState::new()),
            opts: ServeOptions {
                bookmark_interval: options.bookmark_interval,
                max_watch_timeout: options.max_watch_timeout,
                log_requests: options.log_requests,
            },
            addr: addr.to_string(),
            auth: Arc::new(auth::AuthState::new(options.auth)),
        });
        let (stop, mut stop_rx) = tokio::sync::watch::channel(false);
        let router = http::router(Arc::clone(&app));
        let server = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stop_rx.wait_for(|s| *s).await;
            };
            if let Err(e) = axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::warn!(error = %e, "local API server stopped with an error");
            }
        });
        let saver = options.data_dir.clone().map(|dir| {
            let rx = stop.subscribe();
            tokio::spawn(persistence::run_saver(
                store,
                dir,
                Duration::from_millis(200),
                rx,
            ))
        });
        let this = Self {
            app,
            addr,
            stop,
            server: Some(server),
            saver,
            data_dir: options.data_dir,
        };
        for ns in ["default", "kube-system", "kube-public"] {
            this.ensure_namespace(ns)?;
        }
        if this.app.auth.enabled() {
            for obj in rbac::bootstrap_policy() {
                this.apply_value(obj)?;
            }
        }
        Ok(this)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// A `kube::Config` for this server (default namespace `default`). With
    /// [`AuthMode::Rbac`] it carries the server's administrator token (a member of
    /// `system:masters`).
    pub fn config(&self) -> kube::Config {
        if self.app.auth.enabled() {
            self.config_with_token(&self.app.auth.admin)
        } else {
            self.anonymous_config()
        }
    }

    fn anonymous_config(&self) -> kube::Config {
        let uri = self
            .url()
            .parse()
            .expect("http://127.0.0.1:<port> is a valid URI");
        kube::Config::new(uri)
    }

    /// A `kube::Client` for this server: `kube::Client::try_from(self.config())`.
    pub fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config())
            .expect("a plain-HTTP kube::Config always yields a client")
    }

    /// A kubeconfig (YAML) pointing at this server, for `kubectl --kubeconfig` (with the
    /// administrator token when auth is on).
    pub fn kubeconfig_yaml(&self) -> String {
        let user = if self.app.auth.enabled() {
            Some(&self.app.auth.admin)
        } else {
            None
        };
        self.kubeconfig(user)
    }

    fn kubeconfig(&self, token: Option<&Token>) -> String {
        let user = token.map_or_else(|| "{}".to_owned(), |t| format!("{{token: {}}}", t.expose()));
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: bluegreen-local\n  cluster:\n    server: {url}\n\
             contexts:\n- name: bluegreen-local\n  context:\n    cluster: bluegreen-local\n    user: bluegreen-local\n    namespace: default\n\
             current-context: bluegreen-local\nusers:\n- name: bluegreen-local\n  user: {user}\n",
            url = self.url()
        )
    }

    /// Whether requests need a token and RBAC ([`AuthMode::Rbac`]).
    pub fn auth_enabled(&self) -> bool {
        self.app.auth.enabled()
    }

    /// Issues a token for ServiceAccount `namespace/name`, as the TokenRequest API does
    /// (`kubectl create token NAME -n NAMESPACE` works too): the ServiceAccount must exist, and
    /// the token is bound to it (it stops working when the ServiceAccount is deleted) and valid
    /// for 24 hours.
    pub fn service_account_token(&self, namespace: &str, name: &str) -> Result<Token> {
        auth::issue_service_account_token(
            &self.app.store,
            &self.app.auth,
            namespace,
            name,
            Duration::from_hours(24),
        )
        .map_err(|e| Error::Rejected {
            code: e.code,
            reason: e.reason,
            message: e.message,
        })
    }

    /// Issues a token for user `name` in `groups` (and `system:authenticated`), like an entry
    /// of Kubernetes' static token file; it never expires.
    pub fn user_token(&self, name: &str, groups: &[&str]) -> Token {
        self.app
            .auth
            .tokens
            .issue_user(UserInfo::user(name, groups))
    }

    /// A `kube::Config` for this server that authenticates with `token`.
    pub fn config_with_token(&self, token: &Token) -> kube::Config {
        let mut config = self.anonymous_config();
        config.auth_info = serde_json::from_value(json!({"token": token.expose()}))
            .expect("an AuthInfo with a token deserializes");
        config
    }

    /// A `kube::Client` that authenticates with `token`.
    pub fn client_with_token(&self, token: &Token) -> kube::Client {
        kube::Client::try_from(self.config_with_token(token))
            .expect("a plain-HTTP kube::Config always yields a client")
    }

    /// A kubeconfig (YAML) that authenticates with `token`.
    pub fn kubeconfig_yaml_with_token(&self, token: &Token) -> String {
        self.kubeconfig(Some(token))
    }

    /// A `kube::Client` acting as ServiceAccount `namespace/name` (a fresh
    /// [`service_account_token`](Self::service_account_token)).
    pub fn service_account_client(&self, namespace: &str, name: &str) -> Result<kube::Client> {
        Ok(self.client_with_token(&self.service_account_token(namespace, name)?))
    }

    /// The requests refused with `401` or `403` so far, oldest first (the last 10 000).
    pub fn denials(&self) -> Vec<Denial> {
        self.app.auth.denials()
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> FaultInjector {
        FaultInjector {
            state: Arc::clone(&self.app.faults),
            store: Arc::clone(&self.app.store),
        }
    }

    /// Installs (creates or updates) CustomResourceDefinitions from a JSON or YAML document
    /// (several YAML documents separated by `---` are fine). The kinds are servable when this
    /// returns. Returns the CRD names.
    pub fn apply_crd(&self, doc: &str) -> Result<Vec<String>> {
        let docs = parse_documents(doc)?;
        if let Some(bad) = docs
            .iter()
            .find(|d| d.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition"))
        {
            return Err(Error::Parse(format!(
                "not a CustomResourceDefinition: kind {}",
                bad.get("kind").unwrap_or(&Value::Null)
            )));
        }
        docs.into_iter()
            .map(|d| {
                self.apply_value(d)
                    .map(|o| meta::ObjExt::name(&o).to_string())
            })
            .collect()
    }

    /// Server-side applies (with force, field manager `bluegreen-local`) every object in a
    /// JSON or YAML document of any kind the server serves. Returns the stored objects.
    pub fn apply_yaml(&self, doc: &str) -> Result<Vec<Value>> {
        parse_documents(doc)?
            .into_iter()
            .map(|d| self.apply_value(d))
            .collect()
    }

    /// Server-side applies one object given as any serializable value (for example
    /// `MyResource::crd()` from `kube::CustomResource`). Returns the stored object.
    pub fn apply_object<T: Serialize>(&self, obj: &T) -> Result<Value> {
        let v = serde_json::to_value(obj).map_err(|e| Error::Parse(e.to_string()))?;
        self.apply_value(v)
    }

    /// Creates a namespace unless it exists.
    pub fn ensure_namespace(&self, name: &str) -> Result<()> {
        let exists = self
            .app
            .store
            .lock()
            .get(&resources::GroupResource::new("", "namespaces"), "", name)
            .is_some();
        if !exists {
            self.apply_value(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
            )?;
        }
        Ok(())
    }

    fn apply_value(&self, obj: Value) -> Result<Value> {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let mut inner = self.app.store.lock();
        let rt = inner
            .registry
            .by_kind(group, version, kind)
            .ok_or_else(|| Error::Rejected {
                code: 404,
                reason: "NotFound".into(),
                message: format!("the server does not serve {kind} in {api_version}"),
            })?;
        let name = meta::ObjExt::name(&obj).to_string();
        let namespace = if rt.namespaced {
            Some(meta::ObjExt::namespace(&obj))
                .filter(|n| !n.is_empty())
                .unwrap_or("default")
                .to_string()
        } else {
            String::new()
        };
        let mut ctx = WriteCtx {
            rt,
            version: version.to_string(),
            namespace,
            status: false,
            manager: MANAGER.into(),
            dry_run: false,
            validation: FieldValidation::Warn,
            warnings: Vec::new(),
            guard: None,
        };
        let written = write::update(
            &mut inner,
            &mut ctx,
            &name,
            UpdateOp::Apply {
                config: obj,
                force: true,
            },
        )
        .map_err(|e| Error::Rejected {
            code: e.code,
            reason: e.reason,
            message: e.message,
        })?;
        Ok((*written.object).clone())
    }

    /// Stops serving: ends open watches, finishes in-flight requests (bounded wait) and writes
    /// a final snapshot when persistence is on.
    pub async fn shutdown(mut self) {
        self.stop_serving();
        if let Some(server) = self.server.take() {
            let abort = server.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), server)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
        if let Some(saver) = self.saver.take() {
            let _ = saver.await;
        }
        if let Some(dir) = &self.data_dir
            && let Err(e) = persistence::save(&self.app.store, dir)
        {
            tracing::warn!(error = %e, "cannot write the final snapshot");
        }
    }

    fn stop_serving(&self) {
        self.app.faults.close_all_watches();
        self.faults().resume();
        self.stop.send_replace(true);
    }
}

impl Drop for LocalApiServer {
    /// Ends open watches and starts a graceful stop in the background (without the final
    /// snapshot; use [`LocalApiServer::shutdown`] for that).
    fn drop(&mut self) {
        self.stop_serving();
    }
}

fn parse_documents(doc: &str) -> Result<Vec<Value>> {
    if let Ok(v) = serde_json::from_str::<Value>(doc) {
        return Ok(vec![v]);
    }
    let mut out = Vec::new();
    for d in serde_yaml::Deserializer::from_str(doc) {
        let v = Value::deserialize_from_yaml(d)?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

trait FromYaml: Sized {
    fn deserialize_from_yaml(d: serde_yaml::Deserializer<'_>) -> Result<Self>;
}

impl FromYaml for Value {
    fn deserialize_from_yaml(d: serde_yaml::Deserializer<'_>) -> Result<Self> {
        serde::Deserialize::deserialize(d).map_err(|e| Error::Parse(e.to_string()))
    }
}
