//! Field paths and `metadata.managedFields` bookkeeping.
//!
//! Ownership is simplified to a set of leaf field paths per manager entry: maps are walked
//! key by key, while lists and scalars are atomic leaves (CRD lists are atomic by default on
//! the real server too; built-in lists with merge keys are treated as atomic here). The sets
//! are stored in the real `FieldsV1` format (`{"f:data": {"f:key": {}}}`).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::meta::{meta_mut, now_rfc3339};

/// A path of object keys from the root, e.g. `["data", "key"]`.
pub(crate) type FieldPath = Vec<String>;
/// A set of leaf paths.
pub(crate) type FieldSet = BTreeSet<FieldPath>;

/// Which part of an object a write may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Everything (kinds without a status subresource).
    All,
    /// Everything but `status` (main resource of a kind with a status subresource).
    Main,
    /// Only `status` (the `/status` subresource).
    Status,
}

impl Scope {
    pub fn subresource(self) -> Option<&'static str> {
        (self == Self::Status).then_some("status")
    }
}

const OWNED_META: [&str; 4] = ["labels", "annotations", "finalizers", "ownerReferences"];

/// Leaf paths of the fields a client sets in `obj`, within `scope`.
pub(crate) fn leaf_paths(obj: &Value, scope: Scope) -> FieldSet {
    let mut out = FieldSet::new();
    let Some(map) = obj.as_object() else {
        return out;
    };
    for (k, v) in map {
        if k == "metadata" && scope != Scope::Status {
            if let Some(m) = v.as_object() {
                for key in OWNED_META {
                    if let Some(x) = m.get(key) {
                        walk(x, &mut vec!["metadata".into(), key.into()], &mut out);
                    }
                }
            }
            continue;
        }
        let include = match (k.as_str(), scope) {
            ("apiVersion" | "kind" | "metadata", _) | ("status", Scope::Main) => false,
            ("status", _) => true,
            (_, Scope::Status) => false,
            _ => true,
        };
        if include {
            walk(v, &mut vec![k.clone()], &mut out);
        }
    }
    out
}

fn walk(v: &Value, path: &mut FieldPath, out: &mut FieldSet) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                path.push(k.clone());
                walk(x, path, out);
                path.pop();
            }
        }
        _ => {
            out.insert(path.clone());
        }
    }
}

/// Whether one path is a prefix of the other.
pub(crate) fn overlaps(a: &[String], b: &[String]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

pub(crate) fn value_at<'a>(v: &'a Value, p: &[String]) -> Option<&'a Value> {
    p.iter().try_fold(v, |cur, k| cur.get(k.as_str()))
}

/// Sets the value at `p`, creating intermediate maps.
pub(crate) fn set_at(v: &mut Value, p: &[String], val: Value) {
    let mut cur = v;
    for k in p {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        cur = cur
            .as_object_mut()
            .expect("made an object above")
            .entry(k.clone())
            .or_insert(Value::Null);
    }
    *cur = val;
}

/// Removes the value at `p` and then any maps left empty by that (below the top level).
pub(crate) fn remove_at(v: &mut Value, p: &[String]) {
    let Some((last, parent)) = p.split_last() else {
        return;
    };
    let Some(Value::Object(m)) = value_at_mut(v, parent) else {
        return;
    };
    m.remove(last);
    if m.is_empty() && parent.len() > 1 {
        remove_at(v, parent);
    }
}

fn value_at_mut<'a>(v: &'a mut Value, p: &[String]) -> Option<&'a mut Value> {
    p.iter().try_fold(v, |cur, k| cur.get_mut(k.as_str()))
}

/// Encodes a set as `FieldsV1`.
pub(crate) fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for p in set {
        let mut cur = &mut root;
        for k in p {
            let e = cur
                .entry(format!("f:{k}"))
                .or_insert_with(|| Value::Object(Map::new()));
            if !e.is_object() {
                *e = Value::Object(Map::new());
            }
            cur = e.as_object_mut().expect("made an object above");
        }
    }
    Value::Object(root)
}

/// Decodes `FieldsV1`; list element keys (`k:`, `v:`, `i:`) end a path at the list.
pub(crate) fn from_fields_v1(v: &Value) -> FieldSet {
    fn go(v: &Value, path: &mut FieldPath, out: &mut FieldSet) {
        let Some(m) = v.as_object() else { return };
        let fields: Vec<(&String, &Value)> =
            m.iter().filter(|(k, _)| k.starts_with("f:")).collect();
        let elements = m
            .keys()
            .any(|k| k.starts_with("k:") || k.starts_with("v:") || k.starts_with("i:"));
        if fields.is_empty() || elements {
            if !path.is_empty() {
                out.insert(path.clone());
            }
            return;
        }
        for (k, x) in fields {
            path.push(k[2..].to_string());
            go(x, path, out);
            path.pop();
        }
    }
    let mut out = FieldSet::new();
    go(v, &mut Vec::new(), &mut out);
    out
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManagedEntry {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub time: String,
    pub subresource: Option<String>,
    pub fields: FieldSet,
}

impl ManagedEntry {
    pub fn is(&self, manager: &str, operation: &str, sub: Option<&str>) -> bool {
        self.manager == manager && self.operation == operation && self.subresource.as_deref() == sub
    }
}

pub(crate) fn read_managed(obj: &Value) -> Vec<ManagedEntry> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| {
                    let s = |k: &str| {
                        e.get(k)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    ManagedEntry {
                        manager: s("manager"),
                        operation: s("operation"),
                        api_version: s("apiVersion"),
                        time: s("time"),
                        subresource: e
                            .get("subresource")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        fields: e.get("fieldsV1").map(from_fields_v1).unwrap_or_default(),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn write_managed(obj: &mut Value, entries: &[ManagedEntry]) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager, "operation": e.operation, "apiVersion": e.api_version,
                "time": e.time, "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(&e.fields),
            });
            if let Some(s) = &e.subresource {
                v["subresource"] = json!(s);
            }
            v
        })
        .collect();
    let meta = meta_mut(obj);
    if list.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(list));
    }
}

/// Records a non-apply write (create, update, patch) by `manager`: fields whose values it
/// changed move to its `Update` entry; fields it removed are dropped from every entry.
pub(crate) fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    api_version: &str,
    scope: Scope,
) {
    let mut entries = old.map(read_managed).unwrap_or_default();
    let new_paths = leaf_paths(new, scope);
    let old_paths = old.map(|o| leaf_paths(o, scope)).unwrap_or_default();
    let changed: Vec<&FieldPath> = new_paths
        .iter()
        .filter(|p| old.and_then(|o| value_at(o, p)) != value_at(new, p))
        .collect();
    let removed: Vec<&FieldPath> = old_paths.difference(&new_paths).collect();
    let sub = scope.subresource();
    for e in &mut entries {
        if e.subresource.as_deref() != sub {
            continue;
        }
        e.fields.retain(|q| {
            !removed.iter().any(|r| overlaps(r, q)) && !changed.iter().any(|p| overlaps(p, q))
        });
    }
    if !changed.is_empty() {
        let idx = entries
            .iter()
            .position(|e| e.is(manager, "Update", sub))
            .unwrap_or_else(|| {
                entries.push(ManagedEntry {
                    manager: manager.to_string(),
                    operation: "Update".into(),
                    api_version: api_version.to_string(),
                    time: String::new(),
                    subresource: sub.map(str::to_string),
                    fields: FieldSet::new(),
                });
                entries.len() - 1
            });
        let e = &mut entries[idx];
        e.fields.extend(changed.into_iter().cloned());
        e.time = now_rfc3339();
        e.api_version = api_version.to_string();
    }
    write_managed(new, &entries);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_fields_v1_round_trip() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"a": "1"}, "finalizers": ["f"]},
            "data": {"k": "v", "e": {}}, "status": {"s": 1}});
        let set = leaf_paths(&obj, Scope::Main);
        let want: FieldSet = [
            vec!["data", "e"],
            vec!["data", "k"],
            vec!["metadata", "finalizers"],
            vec!["metadata", "labels", "a"],
        ]
        .into_iter()
        .map(|p| p.into_iter().map(str::to_string).collect())
        .collect();
        assert_eq!(set, want);
        assert_eq!(from_fields_v1(&to_fields_v1(&set)), set);
        assert_eq!(leaf_paths(&obj, Scope::Status).len(), 1);
    }

    #[test]
    fn update_moves_ownership() {
        let mut a = json!({"data": {"k": "v"}});
        record_update(None, &mut a, "first", "v1", Scope::All);
        let mut b = a.clone();
        b["data"]["k"] = json!("w");
        b["data"]["n"] = json!("m");
        record_update(Some(&a), &mut b, "second", "v1", Scope::All);
        let entries = read_managed(&b);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].manager, "second");
        assert_eq!(entries[0].fields.len(), 2);
    }
}
