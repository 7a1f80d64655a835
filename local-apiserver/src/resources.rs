//! The kinds the server knows: built-in types and those defined by CRDs.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

/// `(group, plural resource)`: the storage identity of a kind (all versions share storage).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: &str, resource: &str) -> Self {
        Self {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }
}

/// One served version of a kind.
#[derive(Debug, Clone)]
pub(crate) struct VersionInfo {
    pub name: String,
    /// Whether `/status` is a subresource in this version.
    pub status: bool,
    /// The CRD version's `openAPIV3Schema`, if any.
    pub schema: Option<Arc<Value>>,
    /// The CRD version's `additionalPrinterColumns`.
    pub printer_columns: Vec<Value>,
}

/// A kind the server serves.
#[derive(Debug, Clone)]
pub(crate) struct ResourceType {
    pub group: String,
    pub versions: Vec<VersionInfo>,
    pub storage_version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    /// Built into the server (not defined by a CRD).
    pub builtin: bool,
}

impl ResourceType {
    pub fn gr(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    pub fn version(&self, v: &str) -> Option<&VersionInfo> {
        self.versions.iter().find(|x| x.name == v)
    }

    /// Whether `/status` is a subresource (in any served version; storage is shared).
    pub fn has_status(&self) -> bool {
        self.versions.iter().any(|v| v.status)
    }

    pub fn verbs(&self) -> Vec<&'static str> {
        let mut v = vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ];
        if self.plural == "namespaces" && self.group.is_empty() {
            v.retain(|x| *x != "deletecollection");
        }
        v
    }
}

/// Sort key implementing Kubernetes version priority: GA > beta > alpha, higher numbers first,
/// then other strings alphabetically.
pub(crate) fn version_priority(
    v: &str,
) -> (u8, std::cmp::Reverse<u64>, std::cmp::Reverse<u64>, String) {
    use std::cmp::Reverse;
    let parse = || -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((0, major, 0));
        }
        for (prefix, rank) in [("beta", 1u8), ("alpha", 2u8)] {
            if let Some(n) = tail.strip_prefix(prefix) {
                let minor: u64 = n.parse().ok()?;
                return Some((rank, major, minor));
            }
        }
        None
    };
    match parse() {
        Some((rank, major, minor)) => (rank, Reverse(major), Reverse(minor), String::new()),
        None => (3, Reverse(0), Reverse(0), v.to_string()),
    }
}

fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    kind: &str,
    short: &[&str],
    namespaced: bool,
    status: bool,
) -> ResourceType {
    ResourceType {
        group: group.into(),
        versions: vec![VersionInfo {
            name: version.into(),
            status,
            schema: None,
            printer_columns: Vec::new(),
        }],
        storage_version: version.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        short_names: short.iter().map(|s| (*s).to_string()).collect(),
        categories: Vec::new(),
        namespaced,
        builtin: true,
    }
}

/// The RBAC API group.
pub(crate) const RBAC: &str = "rbac.authorization.k8s.io";

/// All kinds currently served, keyed by group and plural.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    types: BTreeMap<GroupResource, Arc<ResourceType>>,
}

impl Registry {
    /// The built-in kinds.
    pub fn builtin() -> Self {
        let list = [
            builtin("", "v1", "configmaps", "ConfigMap", &["cm"], true, false),
            builtin("", "v1", "secrets", "Secret", &[], true, false),
            builtin("", "v1", "events", "Event", &["ev"], true, false),
            builtin("", "v1", "namespaces", "Namespace", &["ns"], false, true),
            builtin(
                "",
                "v1",
                "serviceaccounts",
                "ServiceAccount",
                &["sa"],
                true,
                false,
            ),
            builtin(
                "apps",
                "v1",
                "deployments",
                "Deployment",
                &["deploy"],
                true,
                true,
            ),
            builtin(RBAC, "v1", "roles", "Role", &[], true, false),
            builtin(RBAC, "v1", "rolebindings", "RoleBinding", &[], true, false),
            builtin(RBAC, "v1", "clusterroles", "ClusterRole", &[], false, false),
            builtin(
                RBAC,
                "v1",
                "clusterrolebindings",
                "ClusterRoleBinding",
                &[],
                false,
                false,
            ),
            builtin(
                "events.k8s.io",
                "v1",
                "events",
                "Event",
                &["ev"],
                true,
                false,
            ),
            builtin(
                "coordination.k8s.io",
                "v1",
                "leases",
                "Lease",
                &[],
                true,
                false,
            ),
            builtin(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "CustomResourceDefinition",
                &["crd", "crds"],
                false,
                true,
            ),
        ];
        Self {
            types: list.into_iter().map(|t| (t.gr(), Arc::new(t))).collect(),
        }
    }

    pub fn get(&self, gr: &GroupResource) -> Option<&Arc<ResourceType>> {
        self.types.get(gr)
    }

    /// The kind served at `group/version/plural`, if that version is served.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        let t = self.types.get(&GroupResource::new(group, plural))?;
        t.version(version).map(|_| Arc::clone(t))
    }

    /// The kind named `kind` served at `group/version`.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        self.types
            .values()
            .find(|t| t.group == group && t.kind == kind && t.version(version).is_some())
            .cloned()
    }

    pub fn insert(&mut self, t: ResourceType) {
        self.types.insert(t.gr(), Arc::new(t));
    }

    pub fn remove(&mut self, gr: &GroupResource) {
        self.types.remove(gr);
    }

    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.types.values()
    }

    /// Groups with their versions sorted by priority (core group `""` included).
    pub fn groups(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for t in self.types.values() {
            let e = out.entry(t.group.clone()).or_default();
            for v in &t.versions {
                if !e.contains(&v.name) {
                    e.push(v.name.clone());
                }
            }
        }
        for vs in out.values_mut() {
            vs.sort_by_key(|a| version_priority(a));
        }
        out
    }

    /// Kinds served in `group/version`.
    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<Arc<ResourceType>> {
        self.types
            .values()
            .filter(|t| t.group == group && t.version(version).is_some())
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_priority_orders_like_kubernetes() {
        let mut v = vec!["v1alpha1", "foo", "v1beta1", "v2", "v1", "v1beta2"];
        v.sort_by_key(|a| version_priority(a));
        assert_eq!(v, ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]);
    }
}
