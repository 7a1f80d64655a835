//! Create, update, patch and apply: the rules every write goes through.

use std::sync::Arc;

use serde_json::{Value, json};

use super::api_error::{ApiError, Cause};
use super::apply::{ApplyRequest, apply};
use super::delete;
use super::fields::record_update;
use super::meta::{
    ObjExt, meta_mut, new_uid, now_rfc3339, random_suffix, set_meta, validate_label,
    validate_path_segment, validate_subdomain,
};
use super::normalize;
use super::patch::{PatchType, json_patch, merge_patch, strategic_merge_patch};
use super::resources::GroupResource;
use super::store::{EventType, Inner};
use super::write_ctx::WriteCtx;

/// How an existing object is changed.
pub(crate) enum UpdateOp {
    Replace(Value),
    Patch(PatchType, Value),
    Apply { config: Value, force: bool },
}

/// The result of a write.
pub(crate) struct Written {
    pub object: Arc<Value>,
    pub created: bool,
}

/// Checks `apiVersion`/`kind` of a body (filling them in when absent) and sets the storage version.
fn type_meta(ctx: &WriteCtx, obj: &mut Value, required: bool) -> Result<(), ApiError> {
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    let want_av = ctx.api_version();
    match map.get("kind").and_then(Value::as_str) {
        Some(k) if k != ctx.rt.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind of the provided object ({k}) does not match the kind of the request ({})",
                ctx.rt.kind
            )));
        }
        None if required => return Err(ApiError::bad_request("kind must be set")),
        _ => {}
    }
    match map.get("apiVersion").and_then(Value::as_str) {
        Some(av) if av != want_av => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({want_av})"
            )));
        }
        None if required => return Err(ApiError::bad_request("apiVersion must be set")),
        _ => {}
    }
    map.insert("kind".into(), json!(ctx.rt.kind));
    map.insert(
        "apiVersion".into(),
        json!(ctx.rt.api_version(&ctx.rt.storage_version)),
    );
    Ok(())
}

/// Checks `metadata.namespace` against the request path and sets it.
fn namespace_meta(ctx: &WriteCtx, obj: &mut Value) -> Result<(), ApiError> {
    let body_ns = obj.namespace().to_string();
    if ctx.rt.namespaced {
        if !body_ns.is_empty() && body_ns != ctx.namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        set_meta(obj, "namespace", Some(json!(ctx.namespace)));
    } else {
        set_meta(obj, "namespace", None);
    }
    Ok(())
}

const SERVER_META: [&str; 7] = [
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "selfLink",
];

/// POST: creates an object.
pub(crate) fn create(
    inner: &mut Inner,
    ctx: &mut WriteCtx,
    body: Value,
) -> Result<Arc<Value>, ApiError> {
    create_with(inner, ctx, body, None)
}

fn create_with(
    inner: &mut Inner,
    ctx: &mut WriteCtx,
    mut obj: Value,
    applied: Option<Value>,
) -> Result<Arc<Value>, ApiError> {
    type_meta(ctx, &mut obj, false)?;
    namespace_meta(ctx, &mut obj)?;
    let rv = obj.meta_str("resourceVersion").unwrap_or_default();
    if !rv.is_empty() {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let mut name = obj.name().to_string();
    if name.is_empty() {
        let generate = obj.meta_str("generateName").unwrap_or_default().to_string();
        if generate.is_empty() {
            return Err(ApiError::invalid(
                &ctx.rt.group,
                &ctx.rt.kind,
                "",
                &[Cause {
                    reason: "FieldValueRequired".into(),
                    message: "Required value: name or generateName is required".into(),
                    field: "metadata.name".into(),
                }],
            ));
        }
        for _ in 0..16 {
            name = format!("{generate}{}", random_suffix());
            if inner.get(&ctx.gr(), &ctx.namespace, &name).is_none() {
                break;
            }
        }
        set_meta(&mut obj, "name", Some(json!(name)));
    }
    let check = if ctx.rt.builtin && ctx.rt.plural == "namespaces" {
        validate_label(&name)
    } else if ctx.rt.builtin && ctx.rt.group == super::rbac::GROUP {
        // RBAC names only need to be path segments (`system:discovery`).
        validate_path_segment(&name)
    } else {
        validate_subdomain(&name)
    };
    if let Err(msg) = check {
        return Err(ApiError::invalid_field(
            &ctx.rt.group,
            &ctx.rt.kind,
            &name,
            "metadata.name",
            &msg,
        ));
    }
    if ctx.rt.namespaced
        && let Some(ns) = inner.get(&GroupResource::new("", "namespaces"), "", &ctx.namespace)
        && ns.deleting()
    {
        return Err(ApiError::forbidden(format!(
            "{} \"{name}\" is forbidden: unable to create new content in namespace {} because it is being terminated",
            ctx.rt.plural, ctx.namespace
        )));
    }
    if inner.get(&ctx.gr(), &ctx.namespace, &name).is_some() {
        return Err(ApiError::already_exists(ctx.subject(&name)));
    }
    {
        let meta = meta_mut(&mut obj);
        for k in SERVER_META {
            meta.remove(k);
        }
        meta.insert("uid".into(), json!(new_uid()));
        meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        meta.insert("generation".into(), json!(1));
    }
    if ctx.rt.has_status()
        && !ctx.rt.builtin
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
    normalize::normalize(inner, ctx, None, &mut obj)?;
    if let Some(guard) = &ctx.guard {
        guard.check_escalation(inner, &ctx.gr(), &ctx.namespace, &name, &obj)?;
    }
    match applied {
        Some(managed) => set_meta(&mut obj, "managedFields", Some(managed)),
        None => record_update(
            None,
            &mut obj,
            &ctx.manager,
            &ctx.api_version(),
            ctx.scope(),
        ),
    }
    if ctx.dry_run {
        return Ok(Arc::new(obj));
    }
    let stored = inner.commit(&ctx.gr(), ctx.key(&name), obj, EventType::Added);
    normalize::after_commit(inner, &ctx.gr(), None, Some(&stored));
    Ok(stored)
}

/// PUT, PATCH or apply on an existing object (apply creates it when missing).
pub(crate) fn update(
    inner: &mut Inner,
    ctx: &mut WriteCtx,
    name: &str,
    op: UpdateOp,
) -> Result<Written, ApiError> {
    let Some(old) = inner.get(&ctx.gr(), &ctx.namespace, name) else {
        return match op {
            UpdateOp::Apply { config, .. } if !ctx.status => {
                if let Some(guard) = &ctx.guard {
                    guard.authorize_create(inner, &ctx.gr(), &ctx.namespace, name)?;
                }
                let managed = apply_config(ctx, name, None, &config, false)?;
                let managed_fields = managed
                    .pointer("/metadata/managedFields")
                    .cloned()
                    .unwrap_or(Value::Null);
                let mut body = managed;
                set_meta(&mut body, "managedFields", None);
                let object = create_with(inner, ctx, body, Some(managed_fields))?;
                Ok(Written {
                    object,
                    created: true,
                })
            }
            _ => Err(ApiError::not_found(ctx.subject(name))),
        };
    };
    let mut current = (*old).clone();
    current["apiVersion"] = json!(ctx.api_version());
    let (new, track) = match op {
        UpdateOp::Replace(body) => {
            let rv = body.meta_str("resourceVersion").unwrap_or_default();
            if rv.is_empty() && !ctx.rt.builtin {
                return Err(ApiError::invalid_field(
                    &ctx.rt.group,
                    &ctx.rt.kind,
                    name,
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                ));
            }
            (body, true)
        }
        UpdateOp::Patch(PatchType::Json, body) => (json_patch(&current, &body)?, true),
        UpdateOp::Patch(PatchType::Merge, body) => (merge_patch(&current, &body)?, true),
        UpdateOp::Patch(PatchType::Strategic, body) => {
            if !ctx.rt.builtin {
                return Err(ApiError::unsupported_media_type(
                    "application/strategic-merge-patch+json",
                ));
            }
            (strategic_merge_patch(&current, &body)?, true)
        }
        UpdateOp::Patch(PatchType::Apply, config) => (
            apply_config(ctx, name, Some(&current), &config, false)?,
            false,
        ),
        UpdateOp::Apply { config, force } => (
            apply_config(ctx, name, Some(&current), &config, force)?,
            false,
        ),
    };
    if let Some(guard) = &ctx.guard {
        guard.check_escalation(inner, &ctx.gr(), &ctx.namespace, name, &new)?;
    }
    let Some(new) = prepare_update(inner, ctx, &old, new, track)? else {
        return Ok(Written {
            object: old,
            created: false,
        });
    };
    if ctx.dry_run {
        return Ok(Written {
            object: Arc::new(new),
            created: false,
        });
    }
    let key = ctx.key(name);
    let gr = ctx.gr();
    if new.deleting() && new.finalizers().is_empty() {
        let object = delete::remove_as(inner, &gr, &key, new, delete::Cascade::Background);
        return Ok(Written {
            object,
            created: false,
        });
    }
    let stored = inner.commit(&gr, key, new, EventType::Modified);
    normalize::after_commit(inner, &gr, Some(&old), Some(&stored));
    Ok(Written {
        object: stored,
        created: false,
    })
}

fn apply_config(
    ctx: &WriteCtx,
    name: &str,
    live: Option<&Value>,
    config: &Value,
    force: bool,
) -> Result<Value, ApiError> {
    let mut cfg = config.clone();
    type_meta(ctx, &mut cfg, true)?;
    namespace_meta(ctx, &mut cfg)?;
    let body_name = cfg.name().to_string();
    if body_name.is_empty() {
        set_meta(&mut cfg, "name", Some(json!(name)));
    } else if body_name != name {
        return Err(ApiError::bad_request(
            "the name of the object does not match the name on the URL",
        ));
    }
    let api_version = ctx.api_version();
    let req = ApplyRequest {
        manager: &ctx.manager,
        force,
        api_version: &api_version,
        scope: ctx.scope(),
    };
    let mut out = apply(live, &cfg, &req, name)?;
    if let Some(rv) = cfg.meta_str("resourceVersion") {
        set_meta(&mut out, "resourceVersion", Some(json!(rv)));
    } else if let Some(live) = live {
        set_meta(
            &mut out,
            "resourceVersion",
            live.pointer("/metadata/resourceVersion").cloned(),
        );
    }
    Ok(out)
}

/// Applies the server's rules to the proposed new state of an existing object.
#[allow(
    clippy::too_many_lines,
    reason = "the update rules in the order the real server applies them"
)]
/// Returns `None` when nothing but bookkeeping would change (no new resourceVersion then).
fn prepare_update(
    inner: &Inner,
    ctx: &mut WriteCtx,
    old: &Value,
    mut new: Value,
    track: bool,
) -> Result<Option<Value>, ApiError> {
    let name = old.name().to_string();
    type_meta(ctx, &mut new, false)?;
    namespace_meta(ctx, &mut new)?;
    match new.meta_str("name") {
        Some(n) if !n.is_empty() && n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => set_meta(&mut new, "name", Some(json!(name))),
    }
    let old_rv = old
        .meta_str("resourceVersion")
        .unwrap_or_default()
        .to_string();
    if let Some(rv) = new.meta_str("resourceVersion").filter(|r| !r.is_empty())
        && rv != old_rv
    {
        return Err(ApiError::stale(ctx.subject(&name)));
    }
    // Like the real server, managedFields sent by the client replace the stored ones (kubectl
    // uses this to migrate client-side apply ownership to server-side apply).
    let client_managed = new
        .pointer("/metadata/managedFields")
        .filter(|m| track && Some(*m) != old.pointer("/metadata/managedFields"))
        .cloned();
    if ctx.status {
        let status = new.get("status").cloned();
        let managed = new.pointer("/metadata/managedFields").cloned();
        new = old.clone();
        let map = new.as_object_mut().expect("stored objects are objects");
        match status {
            Some(s) => map.insert("status".into(), s),
            None => map.remove("status"),
        };
        if !track {
            set_meta(&mut new, "managedFields", managed);
        }
    } else if ctx.rt.has_status() {
        let map = new
            .as_object_mut()
            .expect("type_meta checked it is an object");
        match old.get("status") {
            Some(s) => map.insert("status".into(), s.clone()),
            None => map.remove("status"),
        };
    }
    {
        let old_meta = old
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let meta = meta_mut(&mut new);
        for k in SERVER_META {
            if k == "managedFields" && !track {
                continue;
            }
            match old_meta.get(k) {
                Some(v) => meta.insert(k.to_string(), v.clone()),
                None => meta.remove(k),
            };
        }
        meta.insert("resourceVersion".into(), json!(old_rv));
    }
    normalize::normalize(inner, ctx, Some(old), &mut new)?;
    if old.deleting() {
        let before = old.finalizers();
        if new.finalizers().iter().any(|f| !before.contains(f)) {
            return Err(ApiError::invalid_field(
                &ctx.rt.group,
                &ctx.rt.kind,
                &name,
                "metadata.finalizers",
                "Forbidden: no new finalizers can be added if the object is being deleted",
            ));
        }
    }
    if spec_changed(old, &new, ctx.rt.has_status()) {
        let g = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        set_meta(&mut new, "generation", Some(json!(g + 1)));
    }
    if track {
        match client_managed {
            Some(managed) => {
                let mut base = old.clone();
                set_meta(&mut base, "managedFields", Some(managed));
                record_update(
                    Some(&base),
                    &mut new,
                    &ctx.manager,
                    &ctx.api_version(),
                    ctx.scope(),
                );
            }
            None => record_update(
                Some(old),
                &mut new,
                &ctx.manager,
                &ctx.api_version(),
                ctx.scope(),
            ),
        }
    }
    if new == *old {
        return Ok(None);
    }
    Ok(Some(new))
}

/// Whether anything outside `metadata` (and `status`, for kinds with a status subresource) changed.
fn spec_changed(old: &Value, new: &Value, has_status: bool) -> bool {
    let skip = |k: &str| {
        k == "metadata" || k == "apiVersion" || k == "kind" || (has_status && k == "status")
    };
    let keys = |v: &Value| -> Vec<String> {
        v.as_object()
            .map(|m| m.keys().filter(|k| !skip(k)).cloned().collect())
            .unwrap_or_default()
    };
    let (a, b) = (keys(old), keys(new));
    a != b || a.iter().any(|k| old.get(k) != new.get(k))
}
