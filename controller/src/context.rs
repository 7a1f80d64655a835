//! What every reconcile shares.

use kube::api::ApiResource;
use kube::core::GroupVersionKind;
use kube::runtime::events::Recorder;

use crate::metrics::Metrics;

/// The field manager of everything the controller writes.
pub const FIELD_MANAGER: &str = "bluegreen-controller";
/// The annotation for manual operations (`promote`, `abort`, `teardown`).
pub const ACTION_ANNOTATION: &str = "bluegreen.dev/action";
/// The finalizer that runs the deletion policy.
pub const FINALIZER: &str = "bluegreen.dev/cleanup";

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
}

/// The Apache operator's `FlinkDeployment` as a dynamic resource.
pub fn flink_deployment_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("flink.apache.org", "v1beta1", crate::child::KIND),
        "flinkdeployments",
    )
}
