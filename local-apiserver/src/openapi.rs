//! A minimal `/openapi/v3`: the index and, per group-version, the paths of each kind with
//! their PATCH operations tagged by `x-kubernetes-group-version-kind` and the `fieldValidation`
//! parameter. That is what `kubectl apply` (1.32) checks to use server-side field validation
//! instead of downloading `/openapi/v2` for client-side validation. Each kind's schema is in
//! `components.schemas` for `kubectl explain` (see [`schema`]); without a strategic-merge content type listed, kubectl
//! computes strategic merge patches for built-in kinds from its compiled-in types.

use serde_json::{Map, Value, json};

use super::resources::{Registry, ResourceType};

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `GET /openapi/v3`.
pub(crate) fn index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for (group, versions) in registry.groups() {
        for v in versions {
            let p = gv_path(&group, &v);
            let hash = registry
                .in_group_version(&group, &v)
                .iter()
                .map(|t| format!("{}{}", t.plural, t.versions.len()))
                .collect::<Vec<_>>()
                .join("-");
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")}),
            );
        }
    }
    json!({"paths": paths})
}

fn param(name: &str, location: &str) -> Value {
    json!({"name": name, "in": location, "schema": {"type": "string", "uniqueItems": true}})
}

fn operations(t: &ResourceType, version: &str) -> (String, Value) {
    let base = format!("/{}", gv_path(&t.group, version));
    let path = if t.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
    } else {
        format!("{base}/{}/{{name}}", t.plural)
    };
    let gvk = json!({"group": t.group, "version": version, "kind": t.kind});
    let body = |types: &[&str]| {
        let content: Map<String, Value> = types
            .iter()
            .map(|c| ((*c).to_string(), json!({"schema": {"type": "object"}})))
            .collect();
        json!({"content": content, "required": true})
    };
    let op = |id: &str, content: &[&str]| {
        let mut o = json!({
            "operationId": format!("{id}{}", t.kind),
            "parameters": [param("dryRun", "query"), param("fieldManager", "query"), param("fieldValidation", "query")],
            "responses": {"200": {"description": "OK"}},
            "x-kubernetes-action": id,
            "x-kubernetes-group-version-kind": gvk,
        });
        if !content.is_empty() {
            o["requestBody"] = body(content);
        }
        o
    };
    let mut params = vec![param("name", "path")];
    if t.namespaced {
        params.push(param("namespace", "path"));
    }
    (
        path,
        json!({
            "parameters": params,
            "get": op("get", &[]),
            "put": op("put", &["application/json"]),
            "patch": op("patch", &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]),
        }),
    )
}

/// `GET /openapi/v3/<api/v1 | apis/group/version>`.
pub(crate) fn document(registry: &Registry, path: &str) -> Option<Value> {
    let (group, version) = match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => (String::new(), (*v).to_string()),
        ["apis", g, v] => ((*g).to_string(), (*v).to_string()),
        _ => return None,
    };
    let types = registry.in_group_version(&group, &version);
    if types.is_empty() {
        return None;
    }
    let paths: Map<String, Value> = types.iter().map(|t| operations(t, &version)).collect();
    let schemas: Map<String, Value> = types.iter().map(|t| schema(t, &version)).collect();
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0-bluegreen-local"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// The component schema of a kind, named as the real server names them (reversed group, then
/// version and kind, e.g. `dev.bluegreen.v1alpha1.FlinkBlueGreenDeployment`) and tagged with
/// `x-kubernetes-group-version-kind`, which `kubectl explain` looks the kind up by. A CRD
/// version's `openAPIV3Schema` is served as it is; built-in kinds get an untyped object.
fn schema(t: &ResourceType, version: &str) -> (String, Value) {
    let mut reversed: Vec<&str> = t.group.split('.').filter(|s| !s.is_empty()).collect();
    reversed.reverse();
    let prefix = if reversed.is_empty() {
        "io.k8s.api.core".to_string()
    } else {
        reversed.join(".")
    };
    let mut schema = t
        .version(version)
        .and_then(|v| v.schema.as_deref().cloned())
        .unwrap_or_else(|| {
            json!({"type": "object", "description": format!("{} (the local API server serves no schema for built-in kinds).", t.kind)})
        });
    schema["x-kubernetes-group-version-kind"] =
        json!([{"group": t.group, "version": version, "kind": t.kind}]);
    (format!("{prefix}.{version}.{}", t.kind), schema)
}
