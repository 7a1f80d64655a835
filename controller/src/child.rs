//! The child `FlinkDeployment`s (flink.apache.org/v1beta1) built from the template (pure).

use bluegreen_protocol::Color;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::resource::{FlinkBlueGreenDeploymentSpec, FlinkDeploymentTemplate};

/// API version of the Apache Flink operator's resource.
pub const API_VERSION: &str = "flink.apache.org/v1beta1";
/// Kind of the Apache Flink operator's resource.
pub const KIND: &str = "FlinkDeployment";
/// Label: the owning `FlinkBlueGreenDeployment`'s name.
pub const LABEL_DEPLOYMENT: &str = "bluegreen.dev/deployment";
/// Label: the child's color (`blue`/`green`).
pub const LABEL_COLOR: &str = "bluegreen.dev/color";
/// Label used by the Apache operator's own blue/green (kept for tooling that knows it).
pub const LABEL_UPSTREAM_TYPE: &str = "flink/blue-green-deployment-type";
/// Annotation: hash of the template the child runs.
pub const ANNOTATION_TEMPLATE_HASH: &str = "bluegreen.dev/template-hash";
/// Flink configuration keys read by the gates in the job.
pub mod gate_config {
    /// The gate's color.
    pub const COLOR: &str = "bluegreen.gate.color";
    /// The coordination ConfigMap's name.
    pub const CONFIGMAP: &str = "bluegreen.gate.configmap";
    /// The coordination ConfigMap's namespace.
    pub const NAMESPACE: &str = "bluegreen.gate.namespace";
}

/// The name of the child of `color`.
pub fn child_name(deployment: &str, color: Color) -> String {
    format!("{deployment}-{}", color.suffix())
}

/// A stable hash of the template, without `job.state` (suspend/resume is applied in place, not by
/// a handover).
pub fn template_hash(template: &FlinkDeploymentTemplate) -> String {
    let mut t = template.clone();
    t.spec.job.state = None;
    let canonical = serde_json::to_vec(&t).expect("a template always serialises");
    let digest = Sha256::digest(&canonical);
    digest
        .iter()
        .take(8)
        .fold(String::with_capacity(16), |mut hex, b| {
            use std::fmt::Write as _;
            write!(hex, "{b:02x}").expect("writing to a String cannot fail");
            hex
        })
}

/// Everything the child depends on besides the template.
#[derive(Debug, Clone)]
pub struct ChildContext<'a> {
    /// The owner's name.
    pub deployment: &'a str,
    /// The owner's namespace.
    pub namespace: &'a str,
    /// The owner's uid (for the ownerReference).
    pub owner_uid: &'a str,
    /// The owner's apiVersion.
    pub owner_api_version: &'a str,
    /// The owner's kind.
    pub owner_kind: &'a str,
}

/// Builds the child of `color` as a server-side-apply body.
pub fn build(
    ctx: &ChildContext<'_>,
    spec: &FlinkBlueGreenDeploymentSpec,
    color: Color,
    template_hash: &str,
    restore_path: Option<&str>,
) -> Value {
    let template = &spec.template;
    let mut child_spec = template.spec.clone();
    child_spec.job.initial_savepoint_path = restore_path.map(str::to_owned);
    child_spec.job.state = Some(child_spec.job.state.unwrap_or_else(|| "running".into()));
    child_spec
        .job
        .upgrade_mode
        .get_or_insert_with(|| "savepoint".into());
    let configmap = bluegreen_protocol::configmap_name(ctx.deployment);
    for (k, v) in [
        (gate_config::COLOR, color.as_str()),
        (gate_config::CONFIGMAP, configmap.as_str()),
        (gate_config::NAMESPACE, ctx.namespace),
    ] {
        child_spec
            .flink_configuration
            .insert(k.to_owned(), v.to_owned());
    }
    let mut spec_value =
        serde_json::to_value(&child_spec).expect("a FlinkDeployment spec always serialises");
    inject_env(&mut spec_value, color, &configmap, ctx.namespace);

    let mut labels: Map<String, Value> = template
        .metadata
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    labels.insert("app.kubernetes.io/managed-by".into(), "bluegreen".into());
    labels.insert(LABEL_DEPLOYMENT.into(), ctx.deployment.into());
    labels.insert(LABEL_COLOR.into(), color.suffix().into());
    labels.insert(LABEL_UPSTREAM_TYPE.into(), color.as_str().into());
    let mut annotations: Map<String, Value> = template
        .metadata
        .annotations
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    annotations.insert(ANNOTATION_TEMPLATE_HASH.into(), template_hash.into());
    json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": child_name(ctx.deployment, color),
            "namespace": ctx.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [{
                "apiVersion": ctx.owner_api_version,
                "kind": ctx.owner_kind,
                "name": ctx.deployment,
                "uid": ctx.owner_uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": spec_value,
    })
}

/// Adds the gate's environment (for the sidecar and the JNI shim) to the main container of the
/// pod template, keeping everything else the template says.
fn inject_env(spec: &mut Value, color: Color, configmap: &str, namespace: &str) {
    let env = [
        ("BLUEGREEN_COLOR", color.as_str()),
        ("BLUEGREEN_CONFIGMAP", configmap),
        ("BLUEGREEN_NAMESPACE", namespace),
    ];
    let pod_spec = spec
        .as_object_mut()
        .expect("spec is an object")
        .entry("podTemplate")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .map(|pt| pt.entry("spec").or_insert_with(|| json!({})));
    let Some(Value::Object(pod_spec)) = pod_spec else {
        return;
    };
    let containers = pod_spec.entry("containers").or_insert_with(|| json!([]));
    let Value::Array(containers) = containers else {
        return;
    };
    let index = containers
        .iter()
        .position(|c| c.get("name").and_then(Value::as_str) == Some("flink-main-container"))
        .unwrap_or_else(|| {
            containers.push(json!({"name": "flink-main-container"}));
            containers.len() - 1
        });
    let main = &mut containers[index];
    let Value::Object(main) = main else {
        return;
    };
    let vars = main.entry("env").or_insert_with(|| json!([]));
    let Value::Array(vars) = vars else {
        return;
    };
    vars.retain(|v| {
        !env.iter()
            .any(|(name, _)| v.get("name").and_then(Value::as_str) == Some(name))
    });
    vars.extend(
        env.iter()
            .map(|(name, value)| json!({"name": name, "value": value})),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::spec;

    fn ctx() -> ChildContext<'static> {
        ChildContext {
            deployment: "orders",
            namespace: "prod",
            owner_uid: "uid-1",
            owner_api_version: "bluegreen.dev/v1alpha1",
            owner_kind: "FlinkBlueGreenDeployment",
        }
    }

    #[test]
    fn child_carries_gate_config_owner_and_restore_path() {
        let s = spec("local:///job.jar");
        let child = build(&ctx(), &s, Color::Green, "abc", Some("file:///sp/1"));
        assert_eq!(child["metadata"]["name"], "orders-green");
        assert_eq!(child["metadata"]["labels"][LABEL_COLOR], "green");
        assert_eq!(
            child["metadata"]["annotations"][ANNOTATION_TEMPLATE_HASH],
            "abc"
        );
        assert_eq!(child["metadata"]["ownerReferences"][0]["uid"], "uid-1");
        assert_eq!(child["spec"]["job"]["initialSavepointPath"], "file:///sp/1");
        assert_eq!(child["spec"]["job"]["jarURI"], "local:///job.jar");
        assert_eq!(
            child["spec"]["flinkConfiguration"][gate_config::COLOR],
            "GREEN"
        );
        assert_eq!(
            child["spec"]["flinkConfiguration"][gate_config::CONFIGMAP],
            "orders-bluegreen"
        );
        let env = &child["spec"]["podTemplate"]["spec"]["containers"][0]["env"];
        assert!(
            env.as_array()
                .unwrap()
                .iter()
                .any(|e| e["name"] == "BLUEGREEN_COLOR" && e["value"] == "GREEN")
        );
    }

    #[test]
    fn pass_through_fields_survive_and_existing_containers_are_kept() {
        let mut s = spec("local:///job.jar");
        s.template.spec.other.insert(
            "jobManager".into(),
            json!({"resource": {"memory": "2048m", "cpu": 1}}),
        );
        s.template.spec.other.insert(
            "podTemplate".into(),
            json!({"spec": {"containers": [{"name": "flink-main-container", "env": [{"name": "A", "value": "1"}]}, {"name": "side"}]}}),
        );
        let child = build(&ctx(), &s, Color::Blue, "h", None);
        assert_eq!(child["spec"]["jobManager"]["resource"]["memory"], "2048m");
        let containers = child["spec"]["podTemplate"]["spec"]["containers"]
            .as_array()
            .unwrap();
        assert_eq!(containers.len(), 2);
        let env = containers[0]["env"].as_array().unwrap();
        assert_eq!(env.len(), 4);
        assert!(child["spec"]["job"].get("initialSavepointPath").is_none());
    }

    #[test]
    fn template_hash_ignores_job_state_only() {
        let a = spec("local:///job.jar");
        let mut b = a.clone();
        b.template.spec.job.state = Some("suspended".into());
        assert_eq!(template_hash(&a.template), template_hash(&b.template));
        b.template.spec.job.parallelism = Some(4);
        assert_ne!(template_hash(&a.template), template_hash(&b.template));
    }
}
