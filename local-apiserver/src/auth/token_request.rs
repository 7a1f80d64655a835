//! The TokenRequest subresource: tokens for ServiceAccounts.

use std::time::Duration;

use serde_json::{Value, json};

use super::AuthState;
use crate::api_error::ApiError;
use crate::authn::Token;
use crate::resources::GroupResource;
use crate::store::Store;

/// TokenRequest defaults and bounds (Kubernetes: 1 h default, 10 min minimum).
const DEFAULT_TOKEN_TTL: Duration = Duration::from_hours(1);
const MIN_TOKEN_TTL: Duration = Duration::from_mins(10);

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
