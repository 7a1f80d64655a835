//! What every reconcile shares.

use bluegreen_protocol::wire::flink_deployment;
use kube::api::ApiResource;
use kube::core::GroupVersionKind;
use kube::runtime::events::{Recorder, Reporter};

use crate::clusters::ClusterClients;
use crate::metrics::Metrics;
use crate::names::FIELD_MANAGER;

/// Shared state of the reconciler.
#[derive(Clone)]
pub struct Context {
    /// The Kubernetes client.
    pub client: kube::Client,
    /// The HTTP client for Flink's REST API.
    pub http: reqwest::Client,
    /// Flink REST URL template with `{name}` and `{namespace}`.
    pub rest_url_template: String,
    /// Metrics.
    pub metrics: Metrics,
    /// Kubernetes Events.
    pub recorder: Recorder,
    /// The clients of the other clusters children run in (`spec.cluster`).
    pub clusters: ClusterClients,
    /// How the gates of a child in another cluster reach this cluster's API server.
    pub home_api: HomeApi,
    /// The lifetime and rotation of those gates' tokens.
    pub gate_tokens: GateTokens,
}

/// This (the home) cluster's API server as the gates of a child in another cluster reach it
/// (`--home-api-server`, `--home-api-ca-file`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HomeApi {
    /// Its URL; `spec.cluster.homeApiServer` overrides it per resource.
    pub server: Option<String>,
    /// The PEM of the CA its serving certificate is signed by (`certificate-authority-data`).
    pub ca_pem: Option<Vec<u8>>,
}

/// The tokens of the remote gates' ServiceAccounts (TokenRequest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateTokens {
    /// The lifetime asked for (`expirationSeconds`).
    pub ttl: std::time::Duration,
    /// A token with less than this left is replaced at the next reconcile.
    pub rotate_below: std::time::Duration,
}

impl Default for GateTokens {
    /// One hour, replaced with half of it left.
    fn default() -> Self {
        Self {
            ttl: std::time::Duration::from_hours(1),
            rotate_below: std::time::Duration::from_mins(30),
        }
    }
}

impl Context {
    /// A context for `client`, reaching Flink's REST API through `rest_url_template` with
    /// `rest_timeout` per call, publishing events as `identity`.
    pub fn new(
        client: kube::Client,
        rest_url_template: &str,
        rest_timeout: std::time::Duration,
        identity: &str,
    ) -> Self {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: FIELD_MANAGER.into(),
                instance: Some(identity.to_owned()),
            },
        );
        Self {
            client,
            http: crate::flink_rest::http_client(rest_timeout),
            rest_url_template: rest_url_template.to_owned(),
            metrics: Metrics::new(),
            recorder,
            clusters: ClusterClients::default(),
            home_api: HomeApi::default(),
            gate_tokens: GateTokens::default(),
        }
    }

    /// This context with `home_api` as the home API server for remote gates.
    #[must_use]
    pub fn with_home_api(mut self, home_api: HomeApi) -> Self {
        self.home_api = home_api;
        self
    }

    /// This context with `gate_tokens` as the remote gates' token lifetime and rotation.
    #[must_use]
    pub fn with_gate_tokens(mut self, gate_tokens: GateTokens) -> Self {
        self.gate_tokens = gate_tokens;
        self
    }
}

/// The Apache operator's `FlinkDeployment` as a dynamic resource.
pub fn flink_deployment_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            flink_deployment::GROUP,
            flink_deployment::VERSION,
            flink_deployment::KIND,
        ),
        flink_deployment::PLURAL,
    )
}
