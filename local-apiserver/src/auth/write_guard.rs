//! The checks Kubernetes makes inside some writes, for the user who sent them: `create` for a
//! server-side apply that creates its object, and the RBAC escalation check
//! ([`rbac::check_escalation`]).

use std::sync::Arc;

use serde_json::Value;

use super::{AuthState, forbidden};
use crate::api_error::ApiError;
use crate::authn::UserInfo;
use crate::rbac::{self, Attributes, EscalationRefusal, ResourceTarget, Target};
use crate::resources::GroupResource;
use crate::store::Inner;

/// The checks Kubernetes makes inside some writes, for the user who sent them.
pub(crate) struct WriteGuard {
    pub auth: Arc<AuthState>,
    pub user: Arc<UserInfo>,
}

impl WriteGuard {
    /// A server-side apply that creates its object also needs `create` (Kubernetes'
    /// `createAuthorizerAttributes` in the patch handler).
    pub fn authorize_create(
        &self,
        inner: &Inner,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        let attrs = Attributes {
            verb: "create".into(),
            target: target(gr, namespace, name),
        };
        self.auth.authorize(inner, &self.user, &attrs)
    }

    /// A Role or ClusterRole may only grant what its writer holds (or the writer may
    /// `escalate`); a RoleBinding or ClusterRoleBinding may only bind a role whose rights its
    /// writer holds (or the writer may `bind` that role). Other kinds pass. A refusal for
    /// rights not held is logged as a denied `escalate`.
    pub fn check_escalation(
        &self,
        inner: &Inner,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
        obj: &Value,
    ) -> Result<(), ApiError> {
        let policy = self.auth.policy(inner);
        match rbac::check_escalation(&policy, &self.user, gr, namespace, name, obj) {
            Ok(()) => Ok(()),
            Err(e @ EscalationRefusal::Malformed { .. }) => {
                Err(ApiError::bad_request(e.to_string()))
            }
            Err(EscalationRefusal::RoleNotFound(message)) => {
                Err(forbidden(message, &target(gr, namespace, name)))
            }
            Err(EscalationRefusal::NotHeld(message)) => {
                let attrs = Attributes {
                    verb: "escalate".into(),
                    target: target(gr, namespace, name),
                };
                self.auth
                    .denials
                    .record(403, &self.user.name, &attrs, &message);
                Err(forbidden(message, &attrs.target))
            }
        }
    }
}

/// The object `namespace/name` of kind `gr`.
fn target(gr: &GroupResource, namespace: &str, name: &str) -> Target {
    Target::Resource(ResourceTarget {
        group: gr.group.clone(),
        resource: gr.resource.clone(),
        subresource: String::new(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    })
}
