//! The check Kubernetes makes on writes of RBAC objects (`pkg/registry/rbac` escalation checks):
//! a Role or ClusterRole may only grant what its writer holds (or the writer may `escalate`); a
//! RoleBinding or ClusterRoleBinding may only bind a role whose rights its writer holds (or the
//! writer may `bind` that role). Other kinds pass.

use std::fmt::Write as _;

use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};
use serde_json::{Value, json};

use super::coverage::{compact, uncovered};
use super::{Attributes, Decision, GROUP, Policy, ResourceTarget, Target, authorize};
use crate::authn::UserInfo;
use crate::resources::GroupResource;

/// Why a write of an RBAC object is refused; each variant's text is the `Status` message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EscalationRefusal {
    /// The object's `rules` or `roleRef` does not parse (`400`).
    #[error("{field}: {reason}")]
    Malformed {
        /// `rules` or `roleRef`.
        field: &'static str,
        /// What the parser said.
        reason: String,
    },
    /// The binding names a role that does not exist (`403`).
    #[error("{0}")]
    RoleNotFound(String),
    /// The writer does not hold every right the object grants (`403`, a denied `escalate`).
    #[error("{0}")]
    NotHeld(String),
}

/// Whether `user` may write `obj`, of kind `gr`, as `namespace/name`.
pub(crate) fn check_escalation(
    policy: &Policy,
    user: &UserInfo,
    gr: &GroupResource,
    namespace: &str,
    name: &str,
    obj: &Value,
) -> Result<(), EscalationRefusal> {
    if gr.group != GROUP || user.is_superuser() {
        return Ok(());
    }
    let allowed = |verb: &str, resource: &str, target_name: &str| {
        let attrs = Attributes {
            verb: verb.into(),
            target: Target::Resource(ResourceTarget {
                group: GROUP.into(),
                resource: resource.into(),
                subresource: String::new(),
                namespace: namespace.to_owned(),
                name: target_name.to_owned(),
            }),
        };
        authorize(policy, user, &attrs) == Decision::Allow
    };
    let granted: Vec<PolicyRule> = match gr.resource.as_str() {
        "roles" | "clusterroles" => {
            if allowed("escalate", &gr.resource, name) {
                return Ok(());
            }
            serde_json::from_value(obj.get("rules").cloned().unwrap_or(json!([]))).map_err(|e| {
                EscalationRefusal::Malformed {
                    field: "rules",
                    reason: e.to_string(),
                }
            })?
        }
        "rolebindings" | "clusterrolebindings" => {
            let role_ref: RoleRef =
                serde_json::from_value(obj.get("roleRef").cloned().unwrap_or(Value::Null))
                    .map_err(|e| EscalationRefusal::Malformed {
                        field: "roleRef",
                        reason: e.to_string(),
                    })?;
            let role_resource = if role_ref.kind == "Role" {
                "roles"
            } else {
                "clusterroles"
            };
            if allowed("bind", role_resource, &role_ref.name) {
                return Ok(());
            }
            let rules = match role_ref.kind.as_str() {
                "ClusterRole" => policy
                    .cluster_roles
                    .get(&role_ref.name)
                    .map(|r| r.rules.clone()),
                "Role" => policy
                    .roles
                    .get(&(namespace.to_owned(), role_ref.name.clone()))
                    .map(|r| r.rules.clone()),
                _ => None,
            };
            let Some(rules) = rules else {
                return Err(EscalationRefusal::RoleNotFound(format!(
                    "{}.{GROUP} \"{name}\" is forbidden: {}.{GROUP} \"{}\" not found",
                    gr.resource,
                    role_ref.kind.to_lowercase(),
                    role_ref.name
                )));
            };
            rules.unwrap_or_default()
        }
        _ => return Ok(()),
    };
    let (held, errors) = policy.rules_for(user, namespace);
    let missing = uncovered(&held, &granted);
    if missing.is_empty() {
        return Ok(());
    }
    let groups: Vec<String> = user.groups.iter().map(|g| format!("\"{g}\"")).collect();
    let mut message = format!(
        "{}.{GROUP} \"{name}\" is forbidden: user \"{}\" (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        gr.resource,
        user.name,
        groups.join(" "),
        missing.iter().map(compact).collect::<Vec<_>>().join("\n")
    );
    if !errors.is_empty() {
        let _ = write!(message, "; resolution errors: [{}]", errors.join(", "));
    }
    Err(EscalationRefusal::NotHeld(message))
}
