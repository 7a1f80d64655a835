//! Structural validation and pruning of custom resources against a CRD's `openAPIV3Schema`.
//!
//! Supported keywords: `type`, `nullable`, `required`, `properties`, `items`, `enum`,
//! `additionalProperties` (boolean or schema), `x-kubernetes-preserve-unknown-fields`,
//! `x-kubernetes-int-or-string`, `x-kubernetes-embedded-resource`, `minimum`, `maximum`,
//! `minLength`, `maxLength`, `minItems`, `maxItems`, `allOf` (each sub-schema is checked),
//! `format: date-time` (an RFC 3339 timestamp, as `metav1.Time` and `MicroTime` read it) and
//! `default` (missing properties get their default before validation, on the value being
//! stored).
//! `pattern`, other formats, `anyOf`/`oneOf`/`not` and CEL `x-kubernetes-validations` are not
//! checked.

use serde_json::{Map, Value};

use super::api_error::Cause;

/// The outcome of validating an object against a schema.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SchemaReport {
    /// Violations, as the real server reports them in a 422 `Invalid` status.
    pub errors: Vec<Cause>,
    /// Paths of fields the schema does not know (the real server prunes these).
    pub unknown_fields: Vec<String>,
}

/// Validates `value` (a whole custom resource) against an `openAPIV3Schema`.
///
/// `apiVersion`, `kind` and `metadata` at the root are implicit, as on the real server. The
/// value is not modified; see [`prune_and_validate`] for the variant that drops unknown fields.
pub fn validate_against_schema(value: &Value, schema: &Value) -> SchemaReport {
    let mut copy = value.clone();
    prune_and_validate(&mut copy, schema)
}

/// Validates `value` against `schema`, fills in `default`s of missing properties and removes
/// unknown fields (structural pruning), as the real API server does when it stores a custom
/// resource.
pub fn prune_and_validate(value: &mut Value, schema: &Value) -> SchemaReport {
    let mut report = SchemaReport::default();
    walk(value, schema, "", true, &mut report);
    report
}

/// Validates `obj` against the schema of `version` in `crd` (a CustomResourceDefinition as JSON).
///
/// Returns `None` when the CRD has no such version or the version has no schema.
pub fn validate_against_crd(crd: &Value, version: &str, obj: &Value) -> Option<SchemaReport> {
    let versions = crd.pointer("/spec/versions")?.as_array()?;
    let v = versions
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))?;
    let schema = v.pointer("/schema/openAPIV3Schema")?;
    Some(validate_against_schema(obj, schema))
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 64 {
        format!("{}...", &s[..s.floor_char_boundary(60)])
    } else {
        s
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_ok(expected: &str, v: &Value) -> bool {
    match expected {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "number" => v.is_number(),
        "integer" => {
            v.as_i64().is_some()
                || v.as_u64().is_some()
                || v.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => true,
    }
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

fn err(report: &mut SchemaReport, reason: &str, path: &str, message: String) {
    report.errors.push(Cause {
        reason: reason.into(),
        message,
        field: path.into(),
    });
}

#[allow(
    clippy::too_many_lines,
    reason = "one keyword after another, reads top to bottom"
)]
fn walk(value: &mut Value, schema: &Value, path: &str, root: bool, report: &mut SchemaReport) {
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for s in all {
            let mut sub = SchemaReport::default();
            walk(&mut value.clone(), s, path, root, &mut sub);
            report.errors.extend(sub.errors);
        }
    }
    let int_or_string = flag(schema, "x-kubernetes-int-or-string");
    if int_or_string {
        if !(value.is_string() || type_ok("integer", value)) {
            err(
                report,
                "FieldValueInvalid",
                path,
                format!(
                    "Invalid value: \"{t}\": {path} in body must be of type integer,string: \"{t}\"",
                    t = type_name(value)
                ),
            );
        }
        return;
    }
    if value.is_null() && !root {
        if !flag(schema, "nullable") && schema.get("type").is_some() {
            err(
                report,
                "FieldValueInvalid",
                path,
                format!(
                    "Invalid value: \"null\": {path} in body must be of type {}: \"null\"",
                    schema["type"].as_str().unwrap_or("object")
                ),
            );
        }
        return;
    }
    if let Some(t) = schema.get("type").and_then(Value::as_str)
        && !type_ok(t, value)
    {
        err(
            report,
            "FieldValueInvalid",
            path,
            format!(
                "Invalid value: \"{got}\": {path} in body must be of type {t}: \"{got}\"",
                got = type_name(value)
            ),
        );
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        err(
            report,
            "FieldValueNotSupported",
            path,
            format!(
                "Unsupported value: {}: supported values: {}",
                short(value),
                list.join(", ")
            ),
        );
    }
    check_bounds(value, schema, path, report);
    check_format(value, schema, path, report);
    match value {
        Value::Object(map) => walk_object(map, schema, path, root, report),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item, item_schema, &format!("{path}[{i}]"), false, report);
                }
            }
        }
        _ => {}
    }
}

fn walk_object(
    map: &mut Map<String, Value>,
    schema: &Value,
    path: &str,
    root: bool,
    report: &mut SchemaReport,
) {
    let embedded = flag(schema, "x-kubernetes-embedded-resource");
    let implicit = |k: &str| (root || embedded) && matches!(k, "apiVersion" | "kind" | "metadata");
    // Defaulting comes before validation, as on the real server.
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, s) in props {
            if let (false, Some(d)) = (map.contains_key(k), s.get("default")) {
                map.insert(k.clone(), d.clone());
            }
        }
    }
    if let Some(req) = schema.get("required").and_then(Value::as_array) {
        for r in req.iter().filter_map(Value::as_str) {
            if map.get(r).is_none_or(Value::is_null) {
                err(
                    report,
                    "FieldValueRequired",
                    &child(path, r),
                    "Required value".into(),
                );
            }
        }
    }
    let props = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    let mut remove = Vec::new();
    for (k, v) in map.iter_mut() {
        let p = child(path, k);
        if implicit(k) {
            continue;
        }
        if let Some(s) = props.and_then(|m| m.get(k)) {
            if v.is_null() && !flag(s, "nullable") {
                remove.push(k.clone());
                continue;
            }
            walk(v, s, &p, false, report);
        } else if let Some(a) = additional.filter(|a| a.is_object()) {
            walk(v, a, &p, false, report);
        } else if additional.and_then(Value::as_bool) == Some(true) || preserve {
        } else if props.is_some()
            || additional.is_some()
            || schema.get("type").and_then(Value::as_str) == Some("object")
        {
            report.unknown_fields.push(p);
            remove.push(k.clone());
        }
    }
    for k in remove {
        map.remove(&k);
    }
}

fn check_bounds(value: &Value, schema: &Value, path: &str, report: &mut SchemaReport) {
    let num = |k: &str| schema.get(k).and_then(Value::as_f64);
    if let Some(x) = value.as_f64() {
        if let Some(min) = num("minimum").filter(|m| x < *m) {
            err(
                report,
                "FieldValueInvalid",
                path,
                format!(
                    "Invalid value: {x}: {path} in body should be greater than or equal to {min}"
                ),
            );
        }
        if let Some(max) = num("maximum").filter(|m| x > *m) {
            err(
                report,
                "FieldValueInvalid",
                path,
                format!("Invalid value: {x}: {path} in body should be less than or equal to {max}"),
            );
        }
    }
    let count = |k: &str| schema.get(k).and_then(Value::as_u64);
    let len = match value {
        Value::String(s) => Some((
            s.chars().count() as u64,
            "minLength",
            "maxLength",
            "characters",
        )),
        Value::Array(a) => Some((a.len() as u64, "minItems", "maxItems", "items")),
        _ => None,
    };
    if let Some((n, lo, hi, unit)) = len {
        if let Some(min) = count(lo).filter(|m| n < *m) {
            err(
                report,
                "FieldValueInvalid",
                path,
                format!(
                    "Invalid value: {}: {path} in body should have at least {min} {unit}",
                    short(value)
                ),
            );
        }
        if let Some(max) = count(hi).filter(|m| n > *m) {
            err(
                report,
                "FieldValueTooLong",
                path,
                format!("Too long: {path} may not have more than {max} {unit}"),
            );
        }
    }
}

/// The real server checks a set of formats; of those, CRDs here use `date-time`.
fn check_format(value: &Value, schema: &Value, path: &str, report: &mut SchemaReport) {
    let (Some("date-time"), Some(text)) =
        (schema.get("format").and_then(Value::as_str), value.as_str())
    else {
        return;
    };
    if text.parse::<jiff::Timestamp>().is_err() {
        err(
            report,
            "FieldValueInvalid",
            path,
            format!(
                "Invalid value: \"{text}\": {path} in body must be of type date-time: \"{text}\""
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["image"], "properties": {
                "image": {"type": "string"},
                "replicas": {"type": "integer", "minimum": 0},
                "mode": {"type": "string", "enum": ["native", "standalone"]},
                "port": {"x-kubernetes-int-or-string": true},
                "conf": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "args": {"type": "array", "items": {"type": "string"}}
            }},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }})
    }

    #[test]
    fn valid_object_passes_and_unknown_fields_are_pruned() {
        let mut obj = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"},
            "spec": {"image": "i", "replicas": 2, "port": "http", "conf": {"a": "b"}, "free": {"x": 1}, "bogus": 1}});
        let r = prune_and_validate(&mut obj, &schema());
        assert!(r.errors.is_empty(), "{r:?}");
        assert_eq!(r.unknown_fields, ["spec.bogus"]);
        assert!(obj["spec"].get("bogus").is_none());
        assert_eq!(obj["spec"]["free"]["x"], 1);
    }

    #[test]
    fn defaults_fill_missing_properties() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "default": {},
            "required": ["mode"], "properties": {"mode": {"type": "string", "default": "auto"}, "n": {"type": "integer"}}}}});
        let mut obj = json!({"metadata": {"name": "a"}});
        let r = prune_and_validate(&mut obj, &schema);
        assert!(r.errors.is_empty(), "{r:?}");
        assert_eq!(obj["spec"], json!({"mode": "auto"}));
    }

    #[test]
    fn violations_are_reported() {
        let obj = json!({"spec": {"replicas": "two", "mode": "x", "conf": {"a": 1}, "args": [1], "port": 1.5}});
        let r = validate_against_schema(&obj, &schema());
        let fields: Vec<&str> = r.errors.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.image",
                "spec.args[0]",
                "spec.conf.a",
                "spec.mode",
                "spec.port",
                "spec.replicas"
            ]
        );
        assert_eq!(r.errors[0].reason, "FieldValueRequired");
    }

    #[test]
    fn date_times_are_checked_as_the_real_server_does() {
        let schema = json!({"type": "object", "properties": {"status": {"type": "object", "properties": {
            "at": {"type": "string", "format": "date-time", "nullable": true},
            "note": {"type": "string", "format": "no-such-format"}}}}});
        for good in [
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00.123456Z",
            "2026-01-01T01:00:00+01:00",
        ] {
            let r = validate_against_schema(&json!({"status": {"at": good, "note": "x"}}), &schema);
            assert!(r.errors.is_empty(), "{good}: {r:?}");
        }
        let r = validate_against_schema(&json!({"status": {"at": "yesterday"}}), &schema);
        assert_eq!(r.errors.len(), 1, "{r:?}");
        assert_eq!(r.errors[0].field, "status.at");
        assert_eq!(
            r.errors[0].message,
            "Invalid value: \"yesterday\": status.at in body must be of type date-time: \"yesterday\""
        );
    }
}
