//! The default ClusterRoles and ClusterRoleBindings a cluster starts with.

use serde_json::{Value, json};

use super::GROUP;
use crate::authn::MASTERS;

/// The ClusterRoles and ClusterRoleBindings every Kubernetes cluster starts with that matter
/// here: `cluster-admin` (bound to `system:masters`), `system:discovery` and
/// `system:public-info-viewer` (discovery, version, health and OpenAPI for every authenticated
/// user), `system:basic-user` (self reviews).
pub(crate) fn bootstrap_policy() -> Vec<Value> {
    let meta = |name: &str| {
        json!({
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        })
    };
    let role = |name: &str, rules: Value| json!({"apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRole", "metadata": meta(name), "rules": rules});
    let binding = |name: &str, groups: &[&str]| {
        json!({
            "apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRoleBinding", "metadata": meta(name),
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
            "subjects": groups.iter().map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g})).collect::<Vec<_>>(),
        })
    };
    vec![
        role(
            "cluster-admin",
            json!([
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ]),
        ),
        binding("cluster-admin", &[MASTERS]),
        role(
            "system:discovery",
            json!([{"nonResourceURLs": [
                "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                "/openapi/*", "/readyz", "/version", "/version/",
            ], "verbs": ["get"]}]),
        ),
        binding("system:discovery", &["system:authenticated"]),
        role(
            "system:public-info-viewer",
            json!([{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
        role(
            "system:basic-user",
            json!([
                {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
                {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
            ]),
        ),
        binding("system:basic-user", &["system:authenticated"]),
    ]
}
