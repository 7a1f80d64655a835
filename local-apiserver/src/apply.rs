//! Server-side apply (`application/apply-patch+yaml`), with simplified field ownership.
//!
//! * The applied configuration's leaf paths (see [`super::fields`]) become the manager's
//!   `Apply` entry in `metadata.managedFields`.
//! * A path another manager owns conflicts when the applied value differs from the live one:
//!   without `force` that is a 409 `Conflict` listing the fields; with `force` ownership moves.
//! * Paths the manager applied before but omits now are removed from the object unless
//!   another manager also owns them.
//! * Maps merge key by key; lists and scalars are replaced whole.
//! * Upgrading from client-side apply: a conflicting field owned by an `Update` manager is taken
//!   over without a conflict when the object's `kubectl.kubernetes.io/last-applied-configuration`
//!   records it with the live value (like the real server's last-applied handling).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::api_error::ApiError;
use super::fields::{
    FieldSet, ManagedEntry, Scope, leaf_paths, overlaps, read_managed, remove_at, set_at, value_at,
    write_managed,
};
use super::meta::now_rfc3339;

/// Who is applying and how.
pub(crate) struct ApplyRequest<'a> {
    pub manager: &'a str,
    pub force: bool,
    pub api_version: &'a str,
    pub scope: Scope,
}

fn dotted(p: &[String]) -> String {
    p.iter().fold(String::new(), |mut out, k| {
        out.push('.');
        out.push_str(k);
        out
    })
}

/// Computes the object after applying `cfg` on top of `live` (or creating it from `cfg`).
pub(crate) fn apply(
    live: Option<&Value>,
    cfg: &Value,
    req: &ApplyRequest<'_>,
    conflict_subject: &str,
) -> Result<Value, ApiError> {
    let sub = req.scope.subresource();
    let applied = leaf_paths(cfg, req.scope);
    let Some(live) = live else {
        let mut out = cfg.clone();
        let entry = ManagedEntry {
            manager: req.manager.to_string(),
            operation: "Apply".into(),
            api_version: req.api_version.to_string(),
            time: now_rfc3339(),
            subresource: sub.map(str::to_string),
            fields: applied,
        };
        write_managed(&mut out, &[entry]);
        return Ok(out);
    };
    let mut entries = read_managed(live);
    let last_applied = last_applied(live);
    let mut conflicts: Vec<(String, FieldSet)> = Vec::new();
    let mut reported: Vec<(String, FieldSet)> = Vec::new();
    for e in &entries {
        if e.manager == req.manager || e.subresource.as_deref() != sub {
            continue;
        }
        let mut theirs = FieldSet::new();
        let mut report = FieldSet::new();
        for q in &e.fields {
            for p in applied.iter().filter(|p| overlaps(p, q)) {
                let shorter = if p.len() <= q.len() { p } else { q };
                if value_at(live, shorter) != value_at(cfg, shorter) {
                    theirs.insert(q.clone());
                    // Upgrading from client-side apply: fields that the last-applied
                    // annotation records with the live value are taken over silently.
                    let from_csa = e.operation == "Update"
                        && last_applied.as_ref().is_some_and(|la| {
                            value_at(la, q).is_some() && value_at(la, q) == value_at(live, q)
                        });
                    if !from_csa {
                        report.insert(q.clone());
                    }
                }
            }
        }
        if !report.is_empty() {
            reported.push((e.manager.clone(), report));
        }
        if !theirs.is_empty() {
            conflicts.push((e.manager.clone(), theirs));
        }
    }
    if !reported.is_empty() && !req.force {
        return Err(conflict_error(&reported, req.api_version, conflict_subject));
    }
    for (manager, lost) in &conflicts {
        for e in entries.iter_mut().filter(|e| &e.manager == manager) {
            e.fields.retain(|q| !lost.contains(q));
        }
    }
    let mine = entries.iter().position(|e| e.is(req.manager, "Apply", sub));
    let previous = mine.map(|i| entries[i].fields.clone()).unwrap_or_default();
    let mut out = live.clone();
    for r in previous.difference(&applied) {
        let shared = entries
            .iter()
            .filter(|e| !e.is(req.manager, "Apply", sub))
            .any(|e| e.fields.iter().any(|q| overlaps(q, r)));
        if !shared && !applied.iter().any(|p| overlaps(p, r)) {
            remove_at(&mut out, r);
        }
    }
    for p in &applied {
        if let Some(v) = value_at(cfg, p) {
            set_at(&mut out, p, v.clone());
        }
    }
    let fields_changed = previous != applied;
    match mine {
        Some(i) => {
            let e = &mut entries[i];
            if fields_changed {
                e.time = now_rfc3339();
            }
            e.fields = applied;
            e.api_version = req.api_version.to_string();
        }
        None => entries.push(ManagedEntry {
            manager: req.manager.to_string(),
            operation: "Apply".into(),
            api_version: req.api_version.to_string(),
            time: now_rfc3339(),
            subresource: sub.map(str::to_string),
            fields: applied,
        }),
    }
    write_managed(&mut out, &entries);
    Ok(out)
}

/// The object's `kubectl.kubernetes.io/last-applied-configuration`, parsed.
fn last_applied(live: &Value) -> Option<Value> {
    live.pointer("/metadata/annotations")
        .and_then(|a| a.get("kubectl.kubernetes.io/last-applied-configuration"))
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str(s).ok())
}

/// Kubernetes' `409 Conflict` of an apply, worded as its field manager words it: one conflict
/// on one line (`Apply failed with 1 conflict: conflict with "m" using v1: .data.k`), several
/// grouped by manager (`conflicts with "m" using v1:` then `- .data.k` lines).
fn conflict_error(conflicts: &[(String, FieldSet)], api_version: &str, subject: &str) -> ApiError {
    let mut by_manager: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (manager, fields) in conflicts {
        by_manager
            .entry(manager.as_str())
            .or_default()
            .extend(fields.iter().map(|f| dotted(f)));
    }
    let manager_of = |manager: &str| format!("\"{manager}\" using {api_version}");
    let causes: Vec<Value> = by_manager
        .iter()
        .flat_map(|(manager, fields)| {
            fields.iter().map(move |field| {
                json!({"reason": "FieldManagerConflict", "message": format!("conflict with {}", manager_of(manager)), "field": field})
            })
        })
        .collect();
    let message = match (causes.len(), by_manager.iter().next()) {
        (1, Some((manager, fields))) => format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            manager_of(manager),
            fields[0]
        ),
        (n, _) => {
            let lines: Vec<String> = by_manager
                .iter()
                .flat_map(|(manager, fields)| {
                    std::iter::once(format!("conflicts with {}:", manager_of(manager)))
                        .chain(fields.iter().map(|f| format!("- {f}")))
                })
                .collect();
            format!("Apply failed with {n} conflicts: {}", lines.join("\n"))
        }
    };
    ApiError::new(409, "Conflict", message).with_details(json!({"name": subject, "causes": causes}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(manager: &str, force: bool) -> ApplyRequest<'_> {
        ApplyRequest {
            manager,
            force,
            api_version: "v1",
            scope: Scope::All,
        }
    }

    #[test]
    fn apply_merges_removes_and_conflicts() {
        let first = apply(
            None,
            &json!({"data": {"a": "1", "b": "2"}}),
            &req("one", false),
            "x",
        )
        .expect("create");
        let second = apply(
            Some(&first),
            &json!({"data": {"c": "3"}}),
            &req("two", false),
            "x",
        )
        .expect("no overlap");
        assert_eq!(second["data"], json!({"a": "1", "b": "2", "c": "3"}));
        let err = apply(
            Some(&second),
            &json!({"data": {"a": "9"}}),
            &req("two", false),
            "x",
        )
        .expect_err("conflict");
        assert_eq!(err.code, 409);
        assert!(
            err.message.contains("conflict with \"one\""),
            "{}",
            err.message
        );
        let forced = apply(
            Some(&second),
            &json!({"data": {"a": "9", "c": "3"}}),
            &req("two", true),
            "x",
        )
        .expect("forced");
        assert_eq!(forced["data"]["a"], "9");
        let dropped = apply(
            Some(&forced),
            &json!({"data": {"b": "2"}}),
            &req("one", false),
            "x",
        )
        .expect("one drops a");
        assert_eq!(
            dropped["data"],
            json!({"a": "9", "b": "2", "c": "3"}),
            "a is owned by two now"
        );
        let gone = apply(
            Some(&dropped),
            &json!({"data": {"a": "9"}}),
            &req("two", false),
            "x",
        )
        .expect("two drops c");
        assert_eq!(gone["data"], json!({"a": "9", "b": "2"}));
    }
}
