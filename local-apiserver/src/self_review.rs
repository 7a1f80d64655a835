//! The reviews a client asks about itself: `SelfSubjectAccessReview` (authorization.k8s.io/v1,
//! `kubectl auth can-i`) answered from the server's RBAC, and `SelfSubjectReview`
//! (authentication.k8s.io/v1, `kubectl auth whoami`). Neither is stored: a create answers
//! `201` with the request and its `status`, as on a real server.

use http::{HeaderMap, Method, header};
use k8s_openapi::api::authentication::v1::{
    SelfSubjectReview, SelfSubjectReviewStatus, UserInfo as ReviewUserInfo,
};
use k8s_openapi::api::authorization::v1::{
    SelfSubjectAccessReview, SelfSubjectAccessReviewSpec, SubjectAccessReviewStatus,
};
use serde_json::Value;

use super::api_error::ApiError;
use super::auth::AuthState;
use super::authn::UserInfo;
use super::meta::parse_body;
use super::protobuf;
use super::rbac::{self, Attributes, Decision, ResourceTarget, Target};
use super::store::Store;

/// The user a server without authentication (`AuthMode::Off`) serves, as a real server with
/// anonymous requests allowed names it.
const ANONYMOUS: &str = "system:anonymous";
const UNAUTHENTICATED: &str = "system:unauthenticated";

/// Which review a request path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Review {
    /// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`.
    Access,
    /// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews`.
    Identity,
}

impl Review {
    /// The review served at `group/version/resource`, if any.
    pub fn at(group: &str, version: &str, resource: &str) -> Option<Self> {
        match (group, version, resource) {
            ("authorization.k8s.io", "v1", "selfsubjectaccessreviews") => Some(Self::Access),
            ("authentication.k8s.io", "v1", "selfsubjectreviews") => Some(Self::Identity),
            _ => None,
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Self::Access => "SelfSubjectAccessReview",
            Self::Identity => "SelfSubjectReview",
        }
    }
}

/// `POST` of a self review (`kubectl auth can-i`, `kubectl auth whoami`): answered (the body of
/// a `201`), not stored.
pub(crate) fn handle(
    store: &Store,
    auth: &AuthState,
    user: Option<&UserInfo>,
    review: Review,
    method: &Method,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Value, ApiError> {
    if method != Method::POST {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource (reviews support create only)",
        ));
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let request = if content_type.starts_with(protobuf::CONTENT_TYPE) {
        protobuf::decode(body)?
    } else {
        parse_body(body, content_type.contains("yaml")).map_err(ApiError::bad_request)?
    };
    answer(review, store, auth, user, request)
}

/// Answers a review for `user` (`None`: authentication is off).
pub(crate) fn answer(
    review: Review,
    store: &Store,
    auth: &AuthState,
    user: Option<&UserInfo>,
    body: Value,
) -> Result<Value, ApiError> {
    let decode_error = |e: serde_json::Error| {
        ApiError::bad_request(format!(
            "{kind} cannot be handled as a {kind}: {e}",
            kind = review.kind()
        ))
    };
    let encode_error = |e: serde_json::Error| ApiError::new(500, "InternalError", e.to_string());
    match review {
        Review::Identity => {
            let mut r: SelfSubjectReview = serde_json::from_value(body).map_err(decode_error)?;
            let (username, groups) = match user {
                Some(u) => (u.name.clone(), u.groups.clone()),
                None => (ANONYMOUS.to_owned(), vec![UNAUTHENTICATED.to_owned()]),
            };
            r.status = Some(SelfSubjectReviewStatus {
                user_info: Some(ReviewUserInfo {
                    username: Some(username),
                    groups: Some(groups),
                    ..ReviewUserInfo::default()
                }),
            });
            serde_json::to_value(r).map_err(encode_error)
        }
        Review::Access => {
            let mut r: SelfSubjectAccessReview =
                serde_json::from_value(body).map_err(decode_error)?;
            let attrs = attributes(&r.spec)?;
            let decision = match user {
                Some(user) if auth.enabled() => {
                    rbac::authorize(&auth.policy(&store.lock()), user, &attrs)
                }
                // Without authentication every request is served (an AlwaysAllow authorizer).
                _ => Decision::Allow,
            };
            r.status = Some(match decision {
                Decision::Allow => SubjectAccessReviewStatus {
                    allowed: true,
                    ..SubjectAccessReviewStatus::default()
                },
                Decision::Deny { reason } => SubjectAccessReviewStatus {
                    allowed: false,
                    reason: (!reason.is_empty()).then_some(reason),
                    ..SubjectAccessReviewStatus::default()
                },
            });
            serde_json::to_value(r).map_err(encode_error)
        }
    }
}

/// The request attributes a review's spec asks about (exactly one of resource and
/// non-resource attributes, as Kubernetes validates).
fn attributes(spec: &SelfSubjectAccessReviewSpec) -> Result<Attributes, ApiError> {
    let invalid = |message: &str| {
        ApiError::invalid_field(
            "authorization.k8s.io",
            "SelfSubjectAccessReview",
            "",
            "spec.resourceAttributes",
            message,
        )
    };
    match (&spec.resource_attributes, &spec.non_resource_attributes) {
        (Some(r), None) => Ok(Attributes {
            verb: r.verb.clone().unwrap_or_default(),
            target: Target::Resource(ResourceTarget {
                group: r.group.clone().unwrap_or_default(),
                resource: r.resource.clone().unwrap_or_default(),
                subresource: r.subresource.clone().unwrap_or_default(),
                namespace: r.namespace.clone().unwrap_or_default(),
                name: r.name.clone().unwrap_or_default(),
            }),
        }),
        (None, Some(n)) => Ok(Attributes {
            verb: n.verb.clone().unwrap_or_default(),
            target: Target::NonResource {
                path: n.path.clone().unwrap_or_default(),
            },
        }),
        (Some(_), Some(_)) => Err(invalid(
            "Invalid value: cannot be specified in combination with nonResourceAttributes",
        )),
        (None, None) => Err(invalid(
            "Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
    }
}
