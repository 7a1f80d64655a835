//! The middleware every request passes when auth is on: authentication (`401` without a valid
//! bearer token), then authorization (`403`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, header};

use super::attributes::request_attributes;
use super::{AuthState, Requester};
use crate::api_error::ApiError;
use crate::authn::Refusal;
use crate::store::Store;

fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
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
            auth.denials
                .record(401, "", &attrs, &format!("{}: {why}", err.message));
            err.into_response()
        }
        Ok(Err(forbidden)) => forbidden.into_response(),
        Ok(Ok(user)) => {
            req.extensions_mut().insert(Requester(Arc::new(user)));
            next.run(req).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
