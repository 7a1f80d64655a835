//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and a simplified
//! strategic merge patch for built-in kinds.

use serde_json::{Map, Value};

use super::api_error::ApiError;

/// The patch types the server accepts, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchType {
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let base = ct.split(';').next().unwrap_or("").trim();
        match base {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml"
            | "application/apply-patch+json"
            | "application/apply-patch+cbor" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// Applies an RFC 6902 patch. Like the real server (evanphx/json-patch), a `test` of `null`
/// against a missing path succeeds, which `kube::runtime::finalizer` relies on.
pub(crate) fn json_patch(doc: &Value, body: &Value) -> Result<Value, ApiError> {
    let ops: json_patch::Patch = serde_json::from_value(body.clone())
        .map_err(|e| ApiError::bad_request(format!("error decoding JSON patch: {e}")))?;
    let mut out = doc.clone();
    for (i, op) in ops.0.iter().enumerate() {
        if let json_patch::PatchOperation::Test(t) = op
            && t.value.is_null()
            && out.pointer(t.path.as_str()).is_none()
        {
            continue;
        }
        json_patch::patch_unsafe(&mut out, std::slice::from_ref(op)).map_err(|e| {
            ApiError::new(
                422,
                "Invalid",
                format!("the server rejected our request due to an error in our request: operation {i}: {e}"),
            )
        })?;
    }
    Ok(out)
}

/// Applies an RFC 7386 merge patch.
pub(crate) fn merge_patch(doc: &Value, body: &Value) -> Result<Value, ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "merge patch body must be a JSON object",
        ));
    }
    let mut out = doc.clone();
    json_patch::merge(&mut out, body);
    Ok(out)
}

/// How a list field merges under strategic merge patch.
enum ListStrategy {
    Replace,
    /// Primitive set union (e.g. `metadata.finalizers`).
    MergePrimitive,
    /// Merge elements by a key field (e.g. `metadata.ownerReferences` by `uid`).
    MergeByKey(&'static str),
}

fn list_strategy(path: &[&str]) -> ListStrategy {
    match path {
        ["metadata", "finalizers"] => ListStrategy::MergePrimitive,
        ["metadata", "ownerReferences"] => ListStrategy::MergeByKey("uid"),
        _ => ListStrategy::Replace,
    }
}

/// Applies a strategic merge patch, simplified: maps merge recursively (`null` deletes),
/// lists are replaced except `metadata.finalizers` (set union) and `metadata.ownerReferences`
/// (merged by `uid`). Directives: `$patch: replace|delete` on maps, `$deleteFromPrimitiveList/<field>`;
/// `$setElementOrder/<field>` and `$retainKeys` are accepted and ignored.
pub(crate) fn strategic_merge_patch(doc: &Value, body: &Value) -> Result<Value, ApiError> {
    let Some(patch) = body.as_object() else {
        return Err(ApiError::bad_request(
            "strategic merge patch body must be a JSON object",
        ));
    };
    let mut out = doc.clone();
    if !out.is_object() {
        out = Value::Object(Map::new());
    }
    let map = out.as_object_mut().expect("made an object above");
    smp_map(map, patch, &mut Vec::new())?;
    Ok(out)
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

fn smp_map<'a>(
    doc: &mut Map<String, Value>,
    patch: &'a Map<String, Value>,
    trail: &mut Vec<&'a str>,
) -> Result<(), ApiError> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *doc = strip_directives(&Value::Object(patch.clone()))
                .as_object()
                .cloned()
                .unwrap_or_default();
            return Ok(());
        }
        Some("delete") => {
            doc.clear();
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "unknown patch type: {other}"
            )));
        }
    }
    for (k, v) in patch {
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(remove)) = (doc.get_mut(field), v.as_array()) {
                list.retain(|x| !remove.contains(x));
            }
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        trail.push(k);
        match v {
            Value::Null => {
                doc.remove(k);
            }
            Value::Object(pm) => {
                if pm.get("$patch").and_then(Value::as_str) == Some("delete") {
                    doc.remove(k);
                } else {
                    match doc.get_mut(k) {
                        Some(Value::Object(dm)) => smp_map(dm, pm, trail)?,
                        _ => {
                            doc.insert(k.clone(), strip_directives(v));
                        }
                    }
                }
            }
            Value::Array(items) => {
                let merged = match (list_strategy(trail), doc.get(k)) {
                    (ListStrategy::MergePrimitive, Some(Value::Array(cur))) => {
                        let mut out = cur.clone();
                        for it in items {
                            if !out.contains(it) {
                                out.push(it.clone());
                            }
                        }
                        out
                    }
                    (ListStrategy::MergeByKey(key), Some(Value::Array(cur))) => {
                        merge_by_key(cur, items, key)
                    }
                    _ => items
                        .iter()
                        .filter(|i| i.get("$patch").is_none())
                        .map(strip_directives)
                        .collect(),
                };
                doc.insert(k.clone(), Value::Array(merged));
            }
            other => {
                doc.insert(k.clone(), other.clone());
            }
        }
        trail.pop();
    }
    Ok(())
}

fn merge_by_key(cur: &[Value], items: &[Value], key: &str) -> Vec<Value> {
    let mut out: Vec<Value> = cur.to_vec();
    for it in items {
        let id = it.get(key);
        let pos = out.iter().position(|o| id.is_some() && o.get(key) == id);
        let delete = it.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(p), true) => {
                out.remove(p);
            }
            (Some(p), false) => {
                if let (Some(o), Some(pm)) = (out[p].as_object_mut(), it.as_object()) {
                    for (k, v) in pm.iter().filter(|(k, _)| !k.starts_with('$')) {
                        o.insert(k.clone(), strip_directives(v));
                    }
                }
            }
            (None, false) => out.push(strip_directives(it)),
            (None, true) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_patch_test_null_on_missing_path_passes() {
        let doc = json!({"metadata": {"name": "a"}});
        let p = json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
                       {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}]);
        assert_eq!(
            json_patch(&doc, &p).expect("ok")["metadata"]["finalizers"],
            json!(["f"])
        );
        let bad = json!([{"op": "test", "path": "/metadata/name", "value": "b"}]);
        assert_eq!(json_patch(&doc, &bad).expect_err("test fails").code, 422);
    }

    #[test]
    fn strategic_merge_basics() {
        let doc = json!({"metadata": {"finalizers": ["a"], "labels": {"x": "1", "y": "2"}}, "data": {"k": "v"}, "list": [1, 2]});
        let p = json!({"metadata": {"finalizers": ["b"], "labels": {"x": null}, "$setElementOrder/finalizers": ["a", "b"]},
                       "data": {"$patch": "replace", "n": "m"}, "list": [3]});
        let out = strategic_merge_patch(&doc, &p).expect("ok");
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["a", "b"], "labels": {"y": "2"}}, "data": {"n": "m"}, "list": [3]})
        );
        let del = json!({"$deleteFromPrimitiveList/finalizers": ["a"]});
        let meta = strategic_merge_patch(&out["metadata"], &del).expect("ok");
        assert_eq!(meta["finalizers"], json!(["b"]));
    }
}
