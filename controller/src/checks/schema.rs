//! The template against the upstream `FlinkDeployment` schema: the `spec` of the Apache Flink
//! Kubernetes Operator's CRD (flink.apache.org/v1beta1), vendored in
//! `controller/schemas/flinkdeployment-v1beta1-spec.json` (see `controller/schemas/SOURCE.md`),
//! and the part of Kubernetes' structural validation that schema uses.
//!
//! Our own CRD keeps `spec.template.spec` open (`x-kubernetes-preserve-unknown-fields`), so the
//! API server accepts any template; the Apache operator's CRD would refuse a bad one only when
//! the controller applies the incoming child, in the middle of a handover. Checking it here
//! refuses it before anything runs.
//!
//! Keywords checked: `type`, `enum`, `properties`, `items`, `additionalProperties` (a schema),
//! `x-kubernetes-int-or-string`; `x-kubernetes-preserve-unknown-fields` stops the descent. The
//! schema has no `required`, `nullable`, bounds or formats. Unknown fields are not errors: the API
//! server prunes them, as it does for every client.

use std::sync::OnceLock;

use serde_json::Value;

use crate::error::SpecError;
use crate::resource::FlinkDeploymentSpec;

/// The vendored schema of `FlinkDeployment.spec` (compact JSON, sorted keys).
pub const SCHEMA_JSON: &str = include_str!("../../schemas/flinkdeployment-v1beta1-spec.json");

/// Where the template's spec is in a `FlinkBlueGreenDeployment`.
pub const TEMPLATE_SPEC_PATH: &str = "spec.template.spec";

/// One field the schema refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The field's path, e.g. `spec.template.spec.job.upgradeMode` or
    /// `spec.template.spec.podTemplate.spec.containers[0].ports[0].containerPort`.
    pub field: String,
    /// What it must be instead.
    pub message: String,
}

/// The vendored schema, parsed once.
pub fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::from_str(SCHEMA_JSON).expect("the vendored FlinkDeployment schema is JSON")
    })
}

/// Checks `spec` (a template's FlinkDeployment spec) against the upstream schema: the first
/// violation, naming the field, what it must be, and how many more
/// there are.
pub fn check_template(spec: &FlinkDeploymentSpec) -> Result<(), SpecError> {
    let value = serde_json::to_value(spec).expect("a spec always serialises");
    let found = violations(&value, schema(), TEMPLATE_SPEC_PATH);
    let Some(first) = found.first() else {
        return Ok(());
    };
    let more = match found.len() - 1 {
        0 => String::new(),
        1 => " (and 1 more field)".to_owned(),
        n => format!(" (and {n} more fields)"),
    };
    Err(SpecError::new(
        first.field.clone(),
        format!(
            "{}{more}: the Apache Flink operator's FlinkDeployment schema refuses it, so the \
             child could not be created",
            first.message
        ),
    ))
}

/// Every place where `value` breaks `schema`, with paths under `path`, in document order.
pub fn violations(value: &Value, schema: &Value, path: &str) -> Vec<Violation> {
    let mut found = Vec::new();
    walk(value, schema, path, &mut found);
    found
}

fn walk(value: &Value, schema: &Value, path: &str, found: &mut Vec<Violation>) {
    // A null is pruned by the API server for a field that is not nullable: no violation.
    if value.is_null() {
        return;
    }
    let mut refuse = |message: String| {
        found.push(Violation {
            field: path.to_owned(),
            message,
        });
    };
    if flag(schema, "x-kubernetes-int-or-string") {
        if !(value.is_string() || is_integer(value)) {
            refuse(format!(
                "must be an integer or a string, not {}",
                describe(value)
            ));
        }
        return;
    }
    if let Some(expected) = schema.get("type").and_then(Value::as_str)
        && !has_type(expected, value)
    {
        refuse(format!(
            "must be {}, not {}",
            article(expected),
            describe(value)
        ));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        refuse(format!(
            "is {}; must be one of {}",
            describe(value),
            list.join(", ")
        ));
        return;
    }
    if flag(schema, "x-kubernetes-preserve-unknown-fields") {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, item) in map {
                let item_path = format!("{path}.{key}");
                if let Some(item_schema) = properties.and_then(|p| p.get(key)).or(additional) {
                    walk(item, item_schema, &item_path, found);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    walk(item, item_schema, &format!("{path}[{i}]"), found);
                }
            }
        }
        _ => {}
    }
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

fn is_integer(value: &Value) -> bool {
    value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
}

fn has_type(expected: &str, value: &Value) -> bool {
    match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => is_integer(value),
        _ => true,
    }
}

fn article(type_name: &str) -> String {
    match type_name {
        "object" | "array" | "integer" => format!("an {type_name}"),
        _ => format!("a {type_name}"),
    }
}

/// A value for a message: its JSON when short, else its type.
fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) if is_integer(value) => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let text = value.to_string();
    if matches!(value, Value::Array(_) | Value::Object(_)) || text.len() > 64 {
        kind.to_owned()
    } else {
        format!("{text} ({kind})")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(value: &Value) -> Vec<String> {
        violations(value, schema(), "spec")
            .into_iter()
            .map(|v| v.field)
            .collect()
    }

    #[test]
    fn a_typical_spec_passes_and_unknown_fields_are_not_errors() {
        let spec = json!({
            "image": "flink:1.20", "flinkVersion": "v1_20", "mode": "native",
            "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2", "nested": {"yaml": 1}},
            "serviceAccount": "flink",
            "jobManager": {"resource": {"memory": "2048m", "cpu": 1}, "replicas": 1},
            "taskManager": {"resource": {"memory": "2g", "cpu": 0.5},
                "podTemplate": {"spec": {"containers": [{"name": "flink-main-container",
                    "ports": [{"containerPort": 9249, "name": "metrics"}],
                    "resources": {"limits": {"cpu": "2", "memory": 4096}}}]}}},
            "job": {"jarURI": "local:///job.jar", "parallelism": 2, "upgradeMode": "savepoint",
                "state": "running", "args": ["--a"]},
            "somethingNewer": {"x": 1}
        });
        assert_eq!(fields(&spec), Vec::<String>::new());
    }

    #[test]
    fn types_and_enums_are_checked_at_every_depth() {
        let spec = json!({
            "mode": "cluster",
            "flinkVersion": "v1_9",
            "job": {"parallelism": "two", "args": [1], "upgradeMode": "savepoint"},
            "taskManager": {"replicas": 1.5, "resource": {"cpu": "1"},
                "podTemplate": {"spec": {"containers": [{"name": "c",
                    "ports": [{"containerPort": "http"}],
                    "resources": {"limits": {"cpu": [1]}}}]}}},
            "restartNonce": true
        });
        assert_eq!(
            fields(&spec),
            [
                "spec.flinkVersion",
                "spec.job.args[0]",
                "spec.job.parallelism",
                "spec.mode",
                "spec.restartNonce",
                "spec.taskManager.podTemplate.spec.containers[0].ports[0].containerPort",
                "spec.taskManager.podTemplate.spec.containers[0].resources.limits.cpu",
                "spec.taskManager.replicas",
                "spec.taskManager.resource.cpu",
            ]
        );
    }

    #[test]
    fn the_error_names_the_first_field_what_it_must_be_and_how_many_more() {
        let mut spec = crate::fixtures::spec("local:///job.jar").template.spec;
        spec.other.insert("mode".into(), json!("cluster"));
        spec.other.insert("restartNonce".into(), json!("x"));
        let Err(SpecError { field, message }) = check_template(&spec) else {
            panic!("refused");
        };
        assert_eq!(field, "spec.template.spec.mode");
        assert!(message.contains(r#""native", "standalone""#), "{message}");
        assert!(message.contains("1 more field"), "{message}");
    }
}
