//! Authentication and authorization of HTTP requests (on with [`AuthMode::Rbac`]).
//!
//! * [`middleware`]: who sent a request (bearer token, [`authn`](super::authn)) and whether
//!   RBAC ([`rbac`](super::rbac)) allows what it asks, for every request.
//! * [`attributes`]: what a request asks to do (Kubernetes' `RequestInfo`).
//! * [`write_guard`]: the checks Kubernetes makes inside some writes (create through
//!   server-side apply, RBAC escalation).
//! * [`token_request`]: the TokenRequest subresource.
//! * [`denials`]: the log of refused requests.
//!
//! This module holds what they share: the tokens, the policy cache and the denial log.

mod attributes;
mod denials;
mod middleware;
mod token_request;
mod write_guard;

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::json;

use super::api_error::ApiError;
use super::authn::{MASTERS, Token, Tokens, UserInfo};
use super::rbac::{self, Attributes, Decision, Policy, Target};
use super::store::Inner;

pub use denials::Denial;
pub(crate) use middleware::middleware;
pub(crate) use token_request::{issue_service_account_token, token_request};
pub(crate) use write_guard::WriteGuard;

use denials::DenialLog;

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

/// The authenticated user of a request, put into the request's extensions by
/// [`middleware`].
#[derive(Debug, Clone)]
pub(crate) struct Requester(pub Arc<UserInfo>);

/// The server's own administrator.
pub(crate) const ADMIN_USER: &str = "bluegreen-local:admin";

/// Tokens, the administrator's token, the policy cache and the denial log.
pub(crate) struct AuthState {
    pub mode: AuthMode,
    pub tokens: Tokens,
    pub admin: Token,
    policy: Mutex<Option<(u64, Arc<Policy>)>>,
    denials: DenialLog,
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
            denials: DenialLog::default(),
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
                self.denials.record(403, &user.name, attrs, &err.message);
                Err(err)
            }
        }
    }

    pub fn denials(&self) -> Vec<Denial> {
        self.denials.list()
    }
}

/// A `403` with Kubernetes' details (`kind`, `name`, `group`) of the target.
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
