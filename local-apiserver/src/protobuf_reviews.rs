//! Protobuf bodies of the self reviews kubectl sends (`kubectl auth can-i`: authorization.k8s.io/v1
//! `SelfSubjectAccessReview`; `kubectl auth whoami`: authentication.k8s.io/v1
//! `SelfSubjectReview`), turned into their `k8s-openapi` JSON form like `protobuf.rs` does for
//! the stored kinds. Only the spec matters: the server answers the review, it stores nothing.

use k8s_openapi::api::authentication::v1 as json_authn;
use k8s_openapi::api::authorization::v1 as json_authz;
use k8s_pb::api::authentication::v1 as pb_authn;
use k8s_pb::api::authorization::v1 as pb_authz;
use prost::Message;

/// A `SelfSubjectAccessReview` from its protobuf encoding.
pub(crate) fn access_review(
    raw: &[u8],
) -> Result<json_authz::SelfSubjectAccessReview, prost::DecodeError> {
    let pb = pb_authz::SelfSubjectAccessReview::decode(raw)?;
    let spec = pb.spec.unwrap_or_default();
    Ok(json_authz::SelfSubjectAccessReview {
        spec: json_authz::SelfSubjectAccessReviewSpec {
            resource_attributes: spec
                .resource_attributes
                .map(|r| json_authz::ResourceAttributes {
                    namespace: r.namespace,
                    verb: r.verb,
                    group: r.group,
                    version: r.version,
                    resource: r.resource,
                    subresource: r.subresource,
                    name: r.name,
                    ..json_authz::ResourceAttributes::default()
                }),
            non_resource_attributes: spec.non_resource_attributes.map(|n| {
                json_authz::NonResourceAttributes {
                    path: n.path,
                    verb: n.verb,
                }
            }),
        },
        ..json_authz::SelfSubjectAccessReview::default()
    })
}

/// A `SelfSubjectReview` from its protobuf encoding (it has no spec).
pub(crate) fn identity_review(
    raw: &[u8],
) -> Result<json_authn::SelfSubjectReview, prost::DecodeError> {
    pb_authn::SelfSubjectReview::decode(raw)?;
    Ok(json_authn::SelfSubjectReview::default())
}
