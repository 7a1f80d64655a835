//! The upstream `FlinkDeployment` CRD (apache/flink-kubernetes-operator, see
//! `local-flink/crds/SOURCE.md`): install it into the local API server and validate specs against
//! it; the resource the runners watch.

use bluegreen_protocol::wire::flink_deployment;
use kube::api::ApiResource;
use serde_json::Value;

use crate::Error;
use bluegreen_local_apiserver::{LocalApiServer, SchemaReport, validate_against_crd};

/// The CRD as shipped by the Apache Flink Kubernetes Operator (YAML, unmodified).
pub const FLINK_DEPLOYMENT_CRD_YAML: &str =
    include_str!("../crds/flinkdeployments.flink.apache.org-v1.yml");

/// The served version of `FlinkDeployment`.
pub const FLINK_DEPLOYMENT_VERSION: &str = "v1beta1";

/// The `FlinkDeployment` kind (flink.apache.org/v1beta1), as a dynamic resource: what the runners
/// watch and write the status of.
pub fn flink_deployment_resource() -> ApiResource {
    ApiResource {
        group: flink_deployment::GROUP.into(),
        version: flink_deployment::VERSION.into(),
        api_version: flink_deployment::API_VERSION.into(),
        kind: flink_deployment::KIND.into(),
        plural: flink_deployment::PLURAL.into(),
    }
}

/// The CRD as JSON.
pub fn flink_deployment_crd() -> Result<Value, Error> {
    serde_yaml::from_str(FLINK_DEPLOYMENT_CRD_YAML).map_err(|e| Error::Crd(e.to_string()))
}

/// Installs the `FlinkDeployment` CRD into a local API server (the kind is servable when this
/// returns).
pub fn install_flink_deployment_crd(server: &LocalApiServer) -> Result<(), Error> {
    server
        .apply_crd(FLINK_DEPLOYMENT_CRD_YAML)
        .map(|_| ())
        .map_err(|e| Error::Crd(e.to_string()))
}

/// Validates a whole `FlinkDeployment` object (apiVersion, kind, metadata, spec) against the
/// upstream schema, as the API server does on create and update.
pub fn validate_flink_deployment(obj: &Value) -> Result<SchemaReport, Error> {
    let crd = flink_deployment_crd()?;
    validate_against_crd(&crd, FLINK_DEPLOYMENT_VERSION, obj).ok_or_else(|| {
        Error::Crd(format!(
            "the CRD has no schema for version {FLINK_DEPLOYMENT_VERSION}"
        ))
    })
}
