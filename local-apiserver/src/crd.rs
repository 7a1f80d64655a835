//! CustomResourceDefinitions: turning a CRD object into a served kind.

use serde_json::{Value, json};

use super::api_error::{ApiError, Cause};
use super::meta::{ObjExt, now_rfc3339};
use super::resources::{ResourceType, VersionInfo};

const CRD_GROUP: &str = "apiextensions.k8s.io";
const CRD_KIND: &str = "CustomResourceDefinition";

fn required(causes: &mut Vec<Cause>, field: &str) {
    causes.push(Cause {
        reason: "FieldValueRequired".into(),
        message: "Required value".into(),
        field: field.into(),
    });
}

fn invalid(causes: &mut Vec<Cause>, field: &str, message: String) {
    causes.push(Cause {
        reason: "FieldValueInvalid".into(),
        message,
        field: field.into(),
    });
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.as_str().filter(|s| !s.is_empty())
}

/// Validates a CRD object and derives the kind it defines.
#[allow(
    clippy::too_many_lines,
    reason = "field-by-field validation reads best in one place"
)]
pub(crate) fn resource_type_from_crd(crd: &Value) -> Result<ResourceType, ApiError> {
    let name = crd.name().to_string();
    let mut causes = Vec::new();
    let group = str_at(crd, &["spec", "group"])
        .unwrap_or_default()
        .to_string();
    let plural = str_at(crd, &["spec", "names", "plural"])
        .unwrap_or_default()
        .to_string();
    let kind = str_at(crd, &["spec", "names", "kind"])
        .unwrap_or_default()
        .to_string();
    if group.is_empty() {
        required(&mut causes, "spec.group");
    }
    if plural.is_empty() {
        required(&mut causes, "spec.names.plural");
    }
    if kind.is_empty() {
        required(&mut causes, "spec.names.kind");
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        invalid(
            &mut causes,
            "metadata.name",
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        );
    }
    let scope = str_at(crd, &["spec", "scope"]).unwrap_or_default();
    let namespaced = match scope {
        "Namespaced" => true,
        "Cluster" => false,
        "" => {
            required(&mut causes, "spec.scope");
            true
        }
        other => {
            invalid(
                &mut causes,
                "spec.scope",
                format!(
                    "Unsupported value: \"{other}\": supported values: \"Cluster\", \"Namespaced\""
                ),
            );
            true
        }
    };
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        required(&mut causes, "spec.versions");
    }
    let mut served = Vec::new();
    let mut storage = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let Some(vname) = v.get("name").and_then(Value::as_str) else {
            required(&mut causes, &format!("spec.versions[{i}].name"));
            continue;
        };
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage.push(vname.to_string());
        }
        if v.get("served").and_then(Value::as_bool) == Some(true) {
            served.push(VersionInfo {
                name: vname.to_string(),
                status: v.pointer("/subresources/status").is_some(),
                schema: v
                    .pointer("/schema/openAPIV3Schema")
                    .cloned()
                    .map(std::sync::Arc::new),
                printer_columns: v
                    .get("additionalPrinterColumns")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            });
        }
    }
    if !versions.is_empty() && storage.len() != 1 {
        invalid(
            &mut causes,
            "spec.versions",
            format!(
                "Invalid value: {}: must have exactly one version marked as storage version",
                storage.len()
            ),
        );
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(CRD_GROUP, CRD_KIND, &name, &causes));
    }
    let strings = |p: &str| -> Vec<String> {
        crd.pointer(p)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(ResourceType {
        singular: str_at(crd, &["spec", "names", "singular"])
            .map_or_else(|| kind.to_lowercase(), str::to_string),
        list_kind: str_at(crd, &["spec", "names", "listKind"])
            .map_or_else(|| format!("{kind}List"), str::to_string),
        short_names: strings("/spec/names/shortNames"),
        categories: strings("/spec/names/categories"),
        group,
        versions: served,
        storage_version: storage.swap_remove(0),
        plural,
        kind,
        namespaced,
        builtin: false,
    })
}

/// Fills in the status the real API server reports once a CRD is established.
pub(crate) fn establish(crd: &mut Value) {
    let now = now_rfc3339();
    let names = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut accepted = names.clone();
    if let Some(kind) = names.get("kind").and_then(Value::as_str) {
        if accepted.get("singular").is_none() {
            accepted["singular"] = json!(kind.to_lowercase());
        }
        if accepted.get("listKind").is_none() {
            accepted["listKind"] = json!(format!("{kind}List"));
        }
    }
    let stored: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let condition = |t: &str, reason: &str, message: &str| json!({"type": t, "status": "True", "lastTransitionTime": now, "reason": reason, "message": message});
    crd["status"] = json!({
        "acceptedNames": accepted,
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "storedVersions": stored,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_becomes_a_kind() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}}]}
        });
        let t = resource_type_from_crd(&crd).expect("valid");
        assert_eq!(t.singular, "widget");
        assert!(t.has_status());
        assert_eq!(t.short_names, ["wd"]);
        let mut bad = crd.clone();
        bad["metadata"]["name"] = json!("nope");
        assert_eq!(
            resource_type_from_crd(&bad).expect_err("bad name").code,
            422
        );
    }
}
