//! Discovery documents: `/api`, `/apis`, `/api/v1`, `/apis/<group>/<version>` (legacy and
//! aggregated `apidiscovery.k8s.io/v2` forms) and `/version`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::resources::{Registry, ResourceType};

/// Content type of aggregated discovery responses.
pub(crate) const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether the `Accept` header asks for aggregated discovery (v2 or v2beta1) first.
pub(crate) fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').next().is_some_and(|first| {
        first.contains("as=APIGroupDiscoveryList") && first.contains("g=apidiscovery.k8s.io")
    })
}

/// `GET /api`.
pub(crate) fn api_versions(addr: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}],
    })
}

/// `GET /apis`.
pub(crate) fn api_group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| {
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                .collect();
            json!({"name": g, "versions": vs, "preferredVersion": vs[0]})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/<group>` (an APIGroup).
pub(crate) fn api_group(registry: &Registry, group: &str) -> Option<Value> {
    let versions = registry.groups().remove(group)?;
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    Some(
        json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": vs, "preferredVersion": vs[0]}),
    )
}

/// `GET /api/v1` or `GET /apis/<group>/<version>`.
pub(crate) fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types = registry.in_group_version(group, version);
    if types.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for t in &types {
        let mut r = json!({
            "name": t.plural, "singularName": t.singular, "namespaced": t.namespaced,
            "kind": t.kind, "verbs": t.verbs(),
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        resources.push(r);
        if t.version(version).is_some_and(|v| v.status) {
            resources.push(json!({
                "name": format!("{}/status", t.plural), "singularName": "", "namespaced": t.namespaced,
                "kind": t.kind, "verbs": ["get", "patch", "update"],
            }));
        }
        if is_service_accounts(t) {
            resources.push(json!({
                "name": "serviceaccounts/token", "singularName": "", "namespaced": true,
                "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

fn discovery_resource(t: &ResourceType, version: &str) -> Value {
    let kind = json!({"group": t.group, "version": version, "kind": t.kind});
    let mut r = json!({
        "resource": t.plural, "responseKind": kind, "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": t.singular, "verbs": t.verbs(),
    });
    if !t.short_names.is_empty() {
        r["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        r["categories"] = json!(t.categories);
    }
    if t.version(version).is_some_and(|v| v.status) {
        r["subresources"] = json!([{"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}]);
    }
    if is_service_accounts(t) {
        r["subresources"] = json!([{"subresource": "token", "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}, "verbs": ["create"]}]);
    }
    r
}

/// ServiceAccounts have the `token` subresource (TokenRequest).
fn is_service_accounts(t: &ResourceType) -> bool {
    t.builtin && t.group.is_empty() && t.plural == "serviceaccounts"
}

/// Aggregated discovery for `/api` (`core`) or `/apis`.
pub(crate) fn aggregated(registry: &Registry, core: bool) -> Value {
    let items: Vec<Value> = registry
        .groups()
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, versions)| {
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let types: Vec<Arc<ResourceType>> = registry.in_group_version(&g, v);
                    json!({"version": v, "resources": types.iter().map(|t| discovery_resource(t, v)).collect::<Vec<_>>(), "freshness": "Current"})
                })
                .collect();
            let mut meta = json!({"creationTimestamp": null});
            if !g.is_empty() {
                meta["name"] = json!(g);
            }
            json!({"metadata": meta, "versions": vs})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

/// `GET /version`.
pub(crate) fn version_info() -> Value {
    json!({
        "major": "1", "minor": "32", "gitVersion": "v1.32.0-bluegreen-local",
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc",
        "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
    })
}
