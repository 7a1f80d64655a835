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
        }
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
