//! Deletion: finalizers, `deletionTimestamp`, owner-reference garbage collection, namespace
//! termination and CRD cleanup.
//!
//! Garbage collection runs synchronously when an owner is removed (the dependents get their
//! own events right after the owner's DELETED event). `propagationPolicy: Foreground` is
//! treated as `Background`; `Orphan` removes the owner reference from dependents.

use std::sync::Arc;

use serde_json::{Value, json};

use super::api_error::{ApiError, Subject};
use super::meta::{ObjExt, now_rfc3339, set_meta};
use super::resources::{GroupResource, ResourceType};
use super::store::{EventType, Inner, ObjKey};

/// What happens to dependents of a removed object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cascade {
    Background,
    Orphan,
}

/// Parsed `DeleteOptions`.
#[derive(Debug, Clone)]
pub(crate) struct DeleteOpts {
    pub cascade: Cascade,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub dry_run: bool,
}

impl Default for DeleteOpts {
    fn default() -> Self {
        Self {
            cascade: Cascade::Background,
            uid: None,
            resource_version: None,
            dry_run: false,
        }
    }
}

/// The outcome of a delete request.
pub(crate) struct Deleted {
    pub object: Arc<Value>,
    /// The object is gone (as opposed to waiting for finalizers).
    pub removed: bool,
}

fn namespaces() -> GroupResource {
    GroupResource::new("", "namespaces")
}

/// DELETE of one object.
pub(crate) fn delete(
    inner: &mut Inner,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    opts: &DeleteOpts,
) -> Result<Deleted, ApiError> {
    let gr = rt.gr();
    let subject = Subject {
        group: &rt.group,
        resource: &rt.plural,
        name,
    };
    let Some(old) = inner.get(&gr, ns, name) else {
        return Err(ApiError::not_found(subject));
    };
    if let Some(uid) = opts.uid.as_deref().filter(|u| *u != old.uid()) {
        return Err(ApiError::conflict(
            subject,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                old.uid()
            ),
        ));
    }
    let live_rv = old.meta_str("resourceVersion").unwrap_or_default();
    if let Some(rv) = opts.resource_version.as_deref().filter(|r| *r != live_rv) {
        return Err(ApiError::conflict(
            subject,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {live_rv}"
            ),
        ));
    }
    if opts.dry_run {
        return Ok(Deleted {
            object: old,
            removed: false,
        });
    }
    let key: ObjKey = (ns.to_string(), name.to_string());
    if gr == namespaces() {
        return Ok(terminate_namespace(inner, name, &old));
    }
    if !old.finalizers().is_empty() {
        let object = if old.deleting() {
            old
        } else {
            let mut marked = (*old).clone();
            set_meta(&mut marked, "deletionTimestamp", Some(json!(now_rfc3339())));
            set_meta(&mut marked, "deletionGracePeriodSeconds", Some(json!(0)));
            inner.commit(&gr, key, marked, EventType::Modified)
        };
        if opts.cascade == Cascade::Orphan {
            orphan_dependents(inner, object.uid());
        }
        return Ok(Deleted {
            object,
            removed: false,
        });
    }
    let object = remove(inner, &gr, &key, opts.cascade).unwrap_or(old);
    Ok(Deleted {
        object,
        removed: true,
    })
}

/// Removes an object for good (DELETED event), then handles dependents, CRD instances and a
/// terminating namespace that became empty. Returns the deleted object.
pub(crate) fn remove(
    inner: &mut Inner,
    gr: &GroupResource,
    key: &ObjKey,
    cascade: Cascade,
) -> Option<Arc<Value>> {
    let obj = inner.get(gr, &key.0, &key.1)?;
    Some(remove_as(inner, gr, key, (*obj).clone(), cascade))
}

/// Like [`remove`], with the final state of the object given (an update that removed the
/// last finalizer of an object being deleted becomes this delete, like on the real server).
pub(crate) fn remove_as(
    inner: &mut Inner,
    gr: &GroupResource,
    key: &ObjKey,
    last: Value,
    cascade: Cascade,
) -> Arc<Value> {
    let deleted = inner.commit(gr, key.clone(), last, EventType::Deleted);
    let uid = deleted.uid().to_string();
    match cascade {
        Cascade::Orphan => orphan_dependents(inner, &uid),
        Cascade::Background => {
            for (dgr, dkey) in dependents(inner, &uid) {
                if let Some(rt) = inner.registry.get(&dgr).cloned() {
                    let _ = delete(inner, &rt, &dkey.0, &dkey.1, &DeleteOpts::default());
                }
            }
        }
    }
    if gr.group == "apiextensions.k8s.io" && gr.resource == "customresourcedefinitions" {
        remove_crd_instances(inner, &deleted);
    }
    if !key.0.is_empty() {
        maybe_finish_namespace(inner, &key.0);
    }
    deleted
}

fn dependents(inner: &Inner, uid: &str) -> Vec<(GroupResource, ObjKey)> {
    if uid.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (gr, objs) in &inner.objects {
        for (key, obj) in objs {
            let owned = obj
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
                });
            if owned {
                out.push((gr.clone(), key.clone()));
            }
        }
    }
    out
}

fn orphan_dependents(inner: &mut Inner, uid: &str) {
    for (gr, key) in dependents(inner, uid) {
        let Some(obj) = inner.get(&gr, &key.0, &key.1) else {
            continue;
        };
        let mut updated = (*obj).clone();
        if let Some(refs) = updated
            .pointer_mut("/metadata/ownerReferences")
            .and_then(Value::as_array_mut)
        {
            refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
            if refs.is_empty() {
                set_meta(&mut updated, "ownerReferences", None);
            }
        }
        inner.commit(&gr, key, updated, EventType::Modified);
    }
}

fn terminate_namespace(inner: &mut Inner, name: &str, old: &Arc<Value>) -> Deleted {
    let key: ObjKey = (String::new(), name.to_string());
    let mut latest = Arc::clone(old);
    if !old.deleting() {
        let mut marked = (**old).clone();
        set_meta(&mut marked, "deletionTimestamp", Some(json!(now_rfc3339())));
        set_meta(&mut marked, "deletionGracePeriodSeconds", Some(json!(0)));
        marked["status"] = json!({"phase": "Terminating"});
        latest = inner.commit(&namespaces(), key, marked, EventType::Modified);
    }
    let types: Vec<Arc<ResourceType>> = inner
        .registry
        .all()
        .filter(|t| t.namespaced)
        .cloned()
        .collect();
    for rt in types {
        let names: Vec<String> = inner
            .iter(&rt.gr(), Some(name))
            .map(|(k, _)| k.1.clone())
            .collect();
        for n in names {
            let _ = delete(inner, &rt, name, &n, &DeleteOpts::default());
        }
    }
    maybe_finish_namespace(inner, name);
    match inner.get(&namespaces(), "", name) {
        Some(ns) => Deleted {
            object: ns,
            removed: false,
        },
        None => Deleted {
            object: latest,
            removed: true,
        },
    }
}

/// Removes a terminating namespace once nothing is left in it.
fn maybe_finish_namespace(inner: &mut Inner, ns: &str) {
    let Some(obj) = inner.get(&namespaces(), "", ns) else {
        return;
    };
    if !obj.deleting() || !obj.finalizers().is_empty() {
        return;
    }
    let empty = inner.objects.values().all(|m| !m.keys().any(|k| k.0 == ns));
    if empty {
        inner.commit(
            &namespaces(),
            (String::new(), ns.to_string()),
            (*obj).clone(),
            EventType::Deleted,
        );
    }
}

fn remove_crd_instances(inner: &mut Inner, crd: &Value) {
    let (Some(group), Some(plural)) = (
        crd.pointer("/spec/group").and_then(Value::as_str),
        crd.pointer("/spec/names/plural").and_then(Value::as_str),
    ) else {
        return;
    };
    let gr = GroupResource::new(group, plural);
    let keys: Vec<ObjKey> = inner.iter(&gr, None).map(|(k, _)| k.clone()).collect();
    for key in keys {
        if let Some(obj) = inner.get(&gr, &key.0, &key.1) {
            inner.commit(&gr, key, (*obj).clone(), EventType::Deleted);
        }
    }
    inner.objects.remove(&gr);
    inner.registry.remove(&gr);
}
