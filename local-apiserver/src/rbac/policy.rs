//! The RBAC objects of a server at one moment ([`Policy`]), and the rules they grant a user in a
//! namespace.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use serde_json::Value;

use super::GROUP;
use crate::authn::UserInfo;
use crate::meta::ObjExt;
use crate::resources::GroupResource;
use crate::store::Inner;

/// The RBAC objects of a server at one moment, typed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    pub cluster_roles: BTreeMap<String, ClusterRole>,
    /// Keyed by `(namespace, name)`.
    pub roles: BTreeMap<(String, String), Role>,
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
    /// Keyed by namespace.
    pub role_bindings: BTreeMap<String, Vec<RoleBinding>>,
}

impl Policy {
    /// Reads every Role, ClusterRole, RoleBinding and ClusterRoleBinding in the store. An
    /// object that does not parse as its type grants nothing (and is logged).
    pub fn from_store(inner: &Inner) -> Self {
        fn typed<T: serde::de::DeserializeOwned>(obj: &Value) -> Option<T> {
            match serde_json::from_value(obj.clone()) {
                Ok(t) => Some(t),
                Err(e) => {
                    tracing::warn!(name = obj.name(), namespace = obj.namespace(), error = %e, "RBAC object ignored: it does not parse");
                    None
                }
            }
        }
        let mut policy = Self::default();
        for (_, obj) in inner.iter(&GroupResource::new(GROUP, "clusterroles"), None) {
            if let Some(role) = typed::<ClusterRole>(obj) {
                policy.cluster_roles.insert(obj.name().to_owned(), role);
            }
        }
        for ((ns, name), obj) in inner.iter(&GroupResource::new(GROUP, "roles"), None) {
            if let Some(role) = typed::<Role>(obj) {
                policy.roles.insert((ns.clone(), name.clone()), role);
            }
        }
        for (_, obj) in inner.iter(&GroupResource::new(GROUP, "clusterrolebindings"), None) {
            if let Some(b) = typed::<ClusterRoleBinding>(obj) {
                policy.cluster_role_bindings.push(b);
            }
        }
        for ((ns, _), obj) in inner.iter(&GroupResource::new(GROUP, "rolebindings"), None) {
            if let Some(b) = typed::<RoleBinding>(obj) {
                policy.role_bindings.entry(ns.clone()).or_default().push(b);
            }
        }
        policy
    }

    /// The rules a role reference grants in `namespace` (the namespace of the binding; empty
    /// for a ClusterRoleBinding), or the error Kubernetes reports when the role is missing.
    fn role_rules(&self, role_ref: &RoleRef, namespace: &str) -> Result<&[PolicyRule], String> {
        match role_ref.kind.as_str() {
            "ClusterRole" => self
                .cluster_roles
                .get(&role_ref.name)
                .map(|r| r.rules.as_deref().unwrap_or_default())
                .ok_or_else(|| format!("clusterrole.{GROUP} \"{}\" not found", role_ref.name)),
            "Role" if !namespace.is_empty() => self
                .roles
                .get(&(namespace.to_owned(), role_ref.name.clone()))
                .map(|r| r.rules.as_deref().unwrap_or_default())
                .ok_or_else(|| format!("role.{GROUP} \"{}\" not found", role_ref.name)),
            other => Err(format!("unsupported role reference kind: \"{other}\"")),
        }
    }

    /// Visits the rules granted to `user` in `namespace` (cluster-wide bindings first, then
    /// the namespace's RoleBindings) until `visit` returns `true`. Returns whether it did, and
    /// the role-resolution errors met on the way.
    pub(super) fn visit_rules(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut visit: impl FnMut(&PolicyRule) -> bool,
    ) -> (bool, Vec<String>) {
        let mut errors = Vec::new();
        for binding in &self.cluster_role_bindings {
            if !binding
                .subjects
                .iter()
                .flatten()
                .any(|s| applies_to(s, user, ""))
            {
                continue;
            }
            match self.role_rules(&binding.role_ref, "") {
                Ok(rules) => {
                    if rules.iter().any(&mut visit) {
                        return (true, errors);
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        if namespace.is_empty() {
            return (false, errors);
        }
        for binding in self.role_bindings.get(namespace).into_iter().flatten() {
            if !binding
                .subjects
                .iter()
                .flatten()
                .any(|s| applies_to(s, user, namespace))
            {
                continue;
            }
            match self.role_rules(&binding.role_ref, namespace) {
                Ok(rules) => {
                    if rules.iter().any(&mut visit) {
                        return (true, errors);
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        (false, errors)
    }

    /// Every rule granted to `user` in `namespace` (cluster-wide ones included), and the
    /// role-resolution errors.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let (_, errors) = self.visit_rules(user, namespace, |r| {
            rules.push(r.clone());
            false
        });
        (rules, errors)
    }
}

/// Whether a binding subject names `user`; a ServiceAccount subject without a namespace means
/// the binding's namespace (`namespace`, empty for ClusterRoleBindings: never matches).
fn applies_to(subject: &Subject, user: &UserInfo, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let sa_namespace = subject.namespace.as_deref().unwrap_or(namespace);
            !sa_namespace.is_empty()
                && user.name == UserInfo::service_account_name(sa_namespace, &subject.name)
        }
        _ => false,
    }
}
