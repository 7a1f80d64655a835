//! RBAC as Kubernetes evaluates it (`k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac` and
//! `pkg/registry/rbac/validation`), as pure functions over a [`Policy`] (a snapshot of the RBAC
//! objects); the HTTP side is in [`auth`](super::auth).
//!
//! * [`policy`]: the RBAC objects, and the rules they grant a user in a namespace.
//! * [`authorize`]: whether a request is allowed, and the message of a `403` when not.
//! * [`coverage`]: whether one set of rules holds every right of another.
//! * [`escalation`]: the check on writes of RBAC objects (no granting or binding of rights the
//!   writer does not hold).
//! * [`bootstrap`]: the default ClusterRoles and ClusterRoleBindings a cluster starts with.

mod authorize;
mod bootstrap;
mod coverage;
mod escalation;
mod policy;
#[cfg(test)]
mod tests;

pub(crate) use authorize::{Decision, authorize, forbidden_message};
pub(crate) use bootstrap::bootstrap_policy;
pub(crate) use escalation::{EscalationRefusal, check_escalation};
pub(crate) use policy::Policy;

/// The RBAC API group.
pub(crate) const GROUP: &str = super::resources::RBAC;

/// What a request asks to do (Kubernetes' `authorizer.Attributes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection` (or
    /// `escalate`, `bind`) for resource requests; the lower-case HTTP method otherwise.
    pub verb: String,
    /// What the verb applies to.
    pub target: Target,
}

/// A resource (`/api/...`, `/apis/...`) or any other path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// An API object or collection.
    Resource(ResourceTarget),
    /// A path that is not an API resource (`/api`, `/apis/<group>/<version>`, `/version`, ...).
    NonResource {
        /// The request path.
        path: String,
    },
}

/// The object or collection a resource request addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResourceTarget {
    pub group: String,
    pub resource: String,
    pub subresource: String,
    /// Empty for cluster-scoped objects and for lists across all namespaces.
    pub namespace: String,
    /// Empty for collections, unless a list or watch selects one name with a
    /// `metadata.name` field selector.
    pub name: String,
}

impl ResourceTarget {
    /// `resource` or `resource/subresource`, the form rules name.
    pub fn combined(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    /// `resource.group` (or `resource` in the core group), as in error messages.
    pub fn qualified(&self) -> String {
        qualified(&self.resource, &self.group)
    }
}

fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

fn has(list: &[String], item: &str) -> bool {
    list.iter().any(|x| x == item)
}

fn list(v: Option<&Vec<String>>) -> &[String] {
    v.map_or(&[], Vec::as_slice)
}
