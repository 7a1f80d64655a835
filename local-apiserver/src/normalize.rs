//! Kind-specific rules applied to every write: typed decoding of built-in kinds, Secret
//! `stringData`, Namespace defaults, CRD validation and schema validation of custom resources.

use k8s_openapi::ByteString;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Namespace, Secret};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::api_error::{ApiError, Cause};
use super::crd::{establish, resource_type_from_crd};
use super::meta::{ObjExt, meta_mut};
use super::resources::GroupResource;
use super::schema::prune_and_validate;
use super::size_limits::{self, Limited};
use super::store::Inner;
use super::write_ctx::{FieldValidation, WriteCtx};

const CRD_GROUP: &str = "apiextensions.k8s.io";

fn roundtrip<T: DeserializeOwned + Serialize>(v: &mut Value) -> Result<(), String> {
    let typed: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    *v = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    Ok(())
}

/// Decodes a built-in kind into its k8s-openapi type and back, rejecting ill-typed bodies and
/// dropping unknown fields like the real server's typed decoding.
fn typed(gr: &GroupResource, obj: &mut Value) -> Result<(), String> {
    match (gr.group.as_str(), gr.resource.as_str()) {
        ("", "configmaps") => roundtrip::<ConfigMap>(obj),
        ("", "secrets") => roundtrip::<Secret>(obj),
        ("", "events") => roundtrip::<CoreEvent>(obj),
        ("", "namespaces") => roundtrip::<Namespace>(obj),
        ("events.k8s.io", "events") => roundtrip::<Event>(obj),
        ("coordination.k8s.io", "leases") => roundtrip::<Lease>(obj),
        (CRD_GROUP, "customresourcedefinitions") => roundtrip::<CustomResourceDefinition>(obj),
        _ => Ok(()),
    }
}

/// Applies the kind's rules to `obj` (the proposed new state; `old` is the current one).
pub(crate) fn normalize(
    inner: &Inner,
    ctx: &mut WriteCtx,
    old: Option<&Value>,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let gr = ctx.gr();
    let kind = ctx.rt.kind.clone();
    if ctx.rt.builtin {
        typed(&gr, obj).map_err(|e| {
            ApiError::bad_request(format!(
                "{kind} in version \"{}\" cannot be handled as a {kind}: {e}",
                ctx.version
            ))
        })?;
        match (gr.group.as_str(), gr.resource.as_str()) {
            ("", "configmaps") => size_limits::check(Limited::ConfigMap, obj)?,
            ("", "secrets") => {
                secret_string_data(obj);
                size_limits::check(Limited::Secret, obj)?;
            }
            ("", "namespaces") => namespace_defaults(obj),
            (CRD_GROUP, "customresourcedefinitions") => crd_rules(inner, old, obj, ctx.status)?,
            _ => {}
        }
        return Ok(());
    }
    if let Some(meta) = obj.get_mut("metadata") {
        roundtrip::<ObjectMeta>(meta)
            .map_err(|e| ApiError::bad_request(format!("invalid metadata: {e}")))?;
    }
    let schema = ctx.rt.version(&ctx.version).and_then(|v| v.schema.clone());
    if let Some(schema) = schema {
        let name = obj.name().to_string();
        let report = prune_and_validate(obj, &schema);
        if !report.errors.is_empty() {
            return Err(ApiError::invalid(
                &ctx.rt.group,
                &kind,
                &name,
                &report.errors,
            ));
        }
        match ctx.validation {
            FieldValidation::Strict if !report.unknown_fields.is_empty() => {
                let causes: Vec<Cause> = report
                    .unknown_fields
                    .iter()
                    .map(|f| Cause {
                        reason: "FieldValueInvalid".into(),
                        message: format!("Invalid value: field not declared in schema: .{f}"),
                        field: f.clone(),
                    })
                    .collect();
                return Err(ApiError::invalid(&ctx.rt.group, &kind, &name, &causes));
            }
            FieldValidation::Warn => ctx.warnings.extend(
                report
                    .unknown_fields
                    .iter()
                    .map(|f| format!("unknown field \"{f}\"")),
            ),
            _ => {}
        }
    }
    Ok(())
}

fn secret_string_data(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(sd)) = map.remove("stringData") {
        let data = map.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        for (k, v) in sd {
            let bytes = v.as_str().unwrap_or_default().as_bytes().to_vec();
            data[k.as_str()] = serde_json::to_value(ByteString(bytes)).unwrap_or(Value::Null);
        }
    }
    // As the real server's defaulting: a missing or empty type (kubectl's protobuf body of
    // `create secret generic` has "") is Opaque.
    if map
        .get("type")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        map.insert("type".into(), json!("Opaque"));
    }
}

fn namespace_defaults(obj: &mut Value) {
    let name = obj.name().to_string();
    let deleting = obj.deleting();
    {
        let meta = meta_mut(obj);
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        labels["kubernetes.io/metadata.name"] = json!(name);
    }
    if obj.pointer("/spec/finalizers").is_none() {
        obj["spec"] = json!({"finalizers": ["kubernetes"]});
    }
    obj["status"] = json!({"phase": if deleting { "Terminating" } else { "Active" }});
}

fn crd_rules(
    inner: &Inner,
    old: Option<&Value>,
    obj: &mut Value,
    status_write: bool,
) -> Result<(), ApiError> {
    let name = obj.name().to_string();
    let t = resource_type_from_crd(obj)?;
    let invalid = |field: &str, msg: &str| {
        ApiError::invalid_field(CRD_GROUP, "CustomResourceDefinition", &name, field, msg)
    };
    if !t.group.contains('.') {
        return Err(invalid(
            "spec.group",
            "Invalid value: should be a domain with at least one dot",
        ));
    }
    if old.is_none() && inner.registry.get(&t.gr()).is_some() {
        return Err(invalid(
            "spec.names.plural",
            "Invalid value: the resource is already served",
        ));
    }
    if let Some(old) = old {
        for (path, field) in [
            ("/spec/group", "spec.group"),
            ("/spec/names/plural", "spec.names.plural"),
            ("/spec/scope", "spec.scope"),
        ] {
            if old.pointer(path) != obj.pointer(path) {
                return Err(invalid(field, "Invalid value: field is immutable"));
            }
        }
    }
    if !status_write {
        establish(obj);
        // Keep the old status (and its transition times) when nothing it reports changed, so
        // re-applying an unchanged CRD is a no-op.
        if let Some(old) = old {
            let same = |p: &str| old.pointer(p) == obj.pointer(p);
            if same("/status/acceptedNames") && same("/status/storedVersions") {
                obj["status"] = old["status"].clone();
            }
        }
    }
    Ok(())
}

/// Keeps the registry in step with committed CRDs.
pub(crate) fn after_commit(
    inner: &mut Inner,
    gr: &GroupResource,
    _old: Option<&Value>,
    new: Option<&Value>,
) {
    if gr.group != CRD_GROUP || gr.resource != "customresourcedefinitions" {
        return;
    }
    if let Some(new) = new
        && let Ok(t) = resource_type_from_crd(new)
    {
        inner.registry.insert(t);
    }
}
