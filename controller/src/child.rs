//! The child `FlinkDeployment`s (flink.apache.org/v1beta1) built from the template (pure).

use bluegreen_protocol::Color;
use bluegreen_protocol::wire::{flink_config, flink_deployment};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::checks::ValidSpec;
use crate::error::Error;
use crate::injection::{self, GateTarget};
pub use crate::names::{
    ANNOTATION_TEMPLATE_HASH, LABEL_COLOR, LABEL_DEPLOYMENT, LABEL_UPSTREAM_TYPE, child_name,
};
use crate::resource::{FlinkBlueGreenDeploymentSpec, FlinkDeploymentTemplate, SidecarInjection};

/// A stable hash of the template, without `job.state` (suspend/resume is applied in place, not by
/// a handover).
pub fn template_hash(template: &FlinkDeploymentTemplate) -> String {
    let mut t = template.clone();
    t.spec.job.state = None;
    hash_of(&t)
}

/// The hash a handover is started by when it changes: [`template_hash`] while `spec.sidecar` has
/// its defaults and `spec.cluster` is unset (so resources that never set them keep the hash they
/// had before they existed), else the hash of the template, `spec.sidecar` and `spec.cluster`
/// together (a sidecar change is rolled out by a handover, like a template change, and a cluster
/// change moves the job by one).
pub fn spec_hash(spec: &FlinkBlueGreenDeploymentSpec) -> String {
    if spec.sidecar == SidecarInjection::default() && spec.cluster.is_none() {
        return template_hash(&spec.template);
    }
    let mut t = spec.template.clone();
    t.spec.job.state = None;
    match &spec.cluster {
        None => hash_of(&(&t, &spec.sidecar)),
        Some(cluster) => hash_of(&(&t, &spec.sidecar, cluster)),
    }
}

fn hash_of(value: &impl serde::Serialize) -> String {
    let canonical = serde_json::to_vec(value).expect("a spec always serialises");
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
    /// The owner's namespace: the coordination ConfigMap's, which the gates read.
    pub namespace: &'a str,
    /// The child's namespace: the owner's, or the target namespace in another cluster.
    pub child_namespace: &'a str,
    /// The child carries an owner reference to the resource: it runs in the resource's cluster
    /// (another cluster's garbage collector would delete a child whose owner it cannot find).
    pub owned: bool,
    /// The owner's uid (for the ownerReference).
    pub owner_uid: &'a str,
    /// The owner's apiVersion.
    pub owner_api_version: &'a str,
    /// The owner's kind.
    pub owner_kind: &'a str,
}

/// Builds the child of `color` as a server-side-apply body: the template with the gates'
/// Flink configuration and environment and, unless turned off, the `bluegreen-sidecar` in the
/// TaskManager pod template ([`injection`]), from `spec` and what its validation found (`valid`).
pub fn build(
    ctx: &ChildContext<'_>,
    spec: &FlinkBlueGreenDeploymentSpec,
    valid: &ValidSpec,
    color: Color,
    template_hash: &str,
    restore_path: Option<&str>,
) -> Result<Value, Error> {
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
        (flink_config::COLOR, color.as_str()),
        (flink_config::CONFIGMAP, configmap.as_str()),
        (flink_config::NAMESPACE, ctx.namespace),
    ] {
        child_spec
            .flink_configuration
            .insert(k.to_owned(), v.to_owned());
    }
    let home_secret = crate::remote_gate::secret_name(ctx.deployment, color);
    injection::inject(
        &mut child_spec.other,
        &valid.pod_templates,
        &spec.sidecar,
        GateTarget {
            color,
            configmap: &configmap,
            namespace: ctx.namespace,
            home_secret: (!ctx.owned).then_some(home_secret.as_str()),
        },
    );
    let spec_value = serde_json::to_value(&child_spec)?;

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
    let mut metadata = json!({
        "name": child_name(ctx.deployment, color),
        "namespace": ctx.child_namespace,
        "labels": labels,
        "annotations": annotations,
    });
    if ctx.owned {
        metadata["ownerReferences"] = json!([{
            "apiVersion": ctx.owner_api_version,
            "kind": ctx.owner_kind,
            "name": ctx.deployment,
            "uid": ctx.owner_uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }]);
    }
    Ok(json!({
        "apiVersion": flink_deployment::API_VERSION,
        "kind": flink_deployment::KIND,
        "metadata": metadata,
        "spec": spec_value,
    }))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodSpec;

    use super::*;
    use crate::fixtures::spec;

    fn valid(s: &FlinkBlueGreenDeploymentSpec) -> ValidSpec {
        crate::checks::validate_spec(s).expect("valid")
    }

    fn ctx() -> ChildContext<'static> {
        ChildContext {
            deployment: "orders",
            namespace: "prod",
            child_namespace: "prod",
            owned: true,
            owner_uid: "uid-1",
            owner_api_version: "bluegreen.dev/v1alpha1",
            owner_kind: "FlinkBlueGreenDeployment",
        }
    }

    #[test]
    fn child_carries_gate_config_owner_and_restore_path() {
        let s = spec("local:///job.jar");
        let child = build(
            &ctx(),
            &s,
            &valid(&s),
            Color::Green,
            "abc",
            Some("file:///sp/1"),
        )
        .expect("valid");
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
            child["spec"]["flinkConfiguration"][flink_config::COLOR],
            "GREEN"
        );
        assert_eq!(
            child["spec"]["flinkConfiguration"][flink_config::CONFIGMAP],
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
    fn a_child_in_another_cluster_has_no_owner_and_its_gates_read_the_home_configmap() {
        let s = spec("local:///job.jar");
        let remote = ChildContext {
            child_namespace: "jobs",
            owned: false,
            ..ctx()
        };
        let child = build(&remote, &s, &valid(&s), Color::Green, "abc", None).expect("valid");
        assert_eq!(child["metadata"]["namespace"], "jobs");
        assert!(child["metadata"].get("ownerReferences").is_none());
        assert_eq!(
            child["spec"]["flinkConfiguration"][flink_config::NAMESPACE],
            "prod"
        );
    }

    /// The container `name` of a pod template's spec.
    fn container<'v>(pod: &'v Value, name: &str) -> &'v Value {
        pod["containers"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == name))
            .unwrap_or_else(|| panic!("no container {name} in {pod}"))
    }

    fn env_of<'v>(container: &'v Value, name: &str) -> Option<&'v Value> {
        container["env"]
            .as_array()?
            .iter()
            .find(|e| e["name"] == name)
            .map(|e| &e["value"])
    }

    #[test]
    fn a_remote_childs_sidecar_reads_the_home_kubeconfig_from_its_secret_and_flink_does_not() {
        let s = spec("local:///job.jar");
        let remote = ChildContext {
            child_namespace: "jobs",
            owned: false,
            ..ctx()
        };
        let child = build(&remote, &s, &valid(&s), Color::Green, "abc", None).expect("valid");
        let tm = &child["spec"]["taskManager"]["podTemplate"]["spec"];
        let volumes = tm["volumes"].as_array().expect("volumes");
        assert_eq!(
            volumes.last(),
            Some(
                &json!({"name": "bluegreen-home", "secret": {"secretName": "orders-green-bluegreen-home"}})
            )
        );
        let sidecar = container(tm, injection::SIDECAR_CONTAINER);
        assert_eq!(
            sidecar["volumeMounts"],
            json!([{"name": "bluegreen-home", "mountPath": "/etc/bluegreen/home", "readOnly": true}])
        );
        assert_eq!(
            env_of(sidecar, "KUBECONFIG"),
            Some(&json!("/etc/bluegreen/home/kubeconfig"))
        );
        let main = container(
            &child["spec"]["podTemplate"]["spec"],
            injection::MAIN_CONTAINER,
        );
        assert_eq!(
            env_of(main, "KUBECONFIG"),
            None,
            "Flink's own client reads it"
        );
        assert_eq!(env_of(main, injection::env::HOME_KUBECONFIG), None);
        assert!(main.get("volumeMounts").is_none(), "{main}");
        // What the runners read from the template (local-flink's secret_volume) is this.
        let text = child.to_string();
        assert!(text.contains("orders-green-bluegreen-home"));
    }

    #[test]
    fn without_the_sidecar_the_main_container_gets_the_home_kubeconfig_but_not_kubeconfig() {
        let mut s = spec("local:///job.jar");
        s.sidecar.inject = false;
        let remote = ChildContext {
            child_namespace: "jobs",
            owned: false,
            ..ctx()
        };
        let child = build(&remote, &s, &valid(&s), Color::Blue, "abc", None).expect("valid");
        // The environment on the common template's main container; the volume and its mount in
        // the TaskManager pod template (the JobManager does not read the ConfigMap).
        let common = &child["spec"]["podTemplate"]["spec"];
        assert!(common.get("volumes").is_none(), "{common}");
        let main = container(common, injection::MAIN_CONTAINER);
        assert_eq!(
            env_of(main, injection::env::HOME_KUBECONFIG),
            Some(&json!("/etc/bluegreen/home/kubeconfig"))
        );
        assert_eq!(env_of(main, "KUBECONFIG"), None);
        assert!(main.get("volumeMounts").is_none(), "{main}");
        let tm = &child["spec"]["taskManager"]["podTemplate"]["spec"];
        assert_eq!(
            tm["volumes"],
            json!([{"name": "bluegreen-home", "secret": {"secretName": "orders-blue-bluegreen-home"}}])
        );
        let tm_main = container(tm, injection::MAIN_CONTAINER);
        assert_eq!(
            tm_main["volumeMounts"],
            json!([{"name": "bluegreen-home", "mountPath": "/etc/bluegreen/home", "readOnly": true}])
        );
        assert!(
            !tm.to_string().contains(injection::SIDECAR_CONTAINER),
            "{tm}"
        );
    }

    #[test]
    fn a_child_in_this_cluster_gets_no_home_credential_and_its_volumes_are_kept() {
        let mut s = spec("local:///job.jar");
        let user = json!({"spec": {
            "containers": [{"name": "flink-main-container", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            "volumes": [{"name": "data", "emptyDir": {}}],
        }});
        s.template
            .spec
            .other
            .insert("podTemplate".into(), user.clone());
        for inject in [true, false] {
            s.sidecar.inject = inject;
            let child = build(&ctx(), &s, &valid(&s), Color::Blue, "h", None).expect("valid");
            assert!(!child.to_string().contains("bluegreen-home"), "{child}");
            assert!(!child.to_string().contains("KUBECONFIG"), "{child}");
            let pod = &child["spec"]["podTemplate"]["spec"];
            assert_eq!(pod["volumes"], user["spec"]["volumes"]);
            assert_eq!(
                container(pod, injection::MAIN_CONTAINER)["volumeMounts"],
                user["spec"]["containers"][0]["volumeMounts"]
            );
        }
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
        let child = build(&ctx(), &s, &valid(&s), Color::Blue, "h", None).expect("valid");
        assert_eq!(child["spec"]["jobManager"]["resource"]["memory"], "2048m");
        let containers = child["spec"]["podTemplate"]["spec"]["containers"]
            .as_array()
            .unwrap();
        assert_eq!(containers.len(), 2);
        let env = containers[0]["env"].as_array().unwrap();
        // A, then the gate's color, ConfigMap, namespace and the sidecar's URL.
        assert_eq!(env.len(), 5);
        assert!(child["spec"]["job"].get("initialSavepointPath").is_none());
    }

    fn task_manager_pod(child: &Value) -> PodSpec {
        serde_json::from_value(child["spec"]["taskManager"]["podTemplate"]["spec"].clone())
            .expect("a TaskManager pod spec")
    }

    fn sidecars(child: &Value) -> usize {
        let text = child.to_string();
        text.matches(&format!("\"name\":\"{}\"", injection::SIDECAR_CONTAINER))
            .count()
    }

    /// A user's pod templates (common and TaskManager) with containers, volumes and other fields.
    fn spec_with_pod_templates() -> FlinkBlueGreenDeploymentSpec {
        let mut s = spec("local:///job.jar");
        s.template.spec.other.insert(
            "podTemplate".into(),
            json!({"spec": {
                "containers": [{"name": "flink-main-container", "volumeMounts": [{"name": "conf", "mountPath": "/conf"}]}],
                "volumes": [{"name": "conf", "configMap": {"name": "job-conf"}}],
            }}),
        );
        s.template.spec.other.insert(
            "taskManager".into(),
            json!({
                "replicas": 2,
                "resource": {"memory": "2048m", "cpu": 1},
                "podTemplate": {
                    "metadata": {"labels": {"pool": "tm"}},
                    "spec": {
                        "containers": [
                            {"name": "flink-main-container", "volumeMounts": [{"name": "logs", "mountPath": "/opt/flink/log"}]},
                            {"name": "log-shipper", "image": "fluent-bit:3", "volumeMounts": [{"name": "logs", "mountPath": "/logs"}]},
                        ],
                        "volumes": [{"name": "logs", "emptyDir": {}}],
                        "nodeSelector": {"pool": "flink"},
                    },
                },
            }),
        );
        s
    }

    #[test]
    fn the_child_carries_the_sidecar_once_merged_with_the_users_task_manager_template() {
        let s = spec_with_pod_templates();
        let child = build(&ctx(), &s, &valid(&s), Color::Green, "h", None).expect("valid");
        assert_eq!(sidecars(&child), 1, "{child}");
        let pod = task_manager_pod(&child);
        let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
        // The user's containers as written, then ours: last, so that the operator's merge of
        // this template into the common one (by position or by name) adds it without merging it
        // into a container of the common template.
        assert_eq!(
            names,
            ["flink-main-container", "log-shipper", "bluegreen-sidecar"]
        );
        assert_eq!(pod.containers[0].image, None);
        assert_eq!(
            pod.containers[0].env, None,
            "the gate's env is in the common template"
        );
        assert_eq!(
            pod.containers[0].volume_mounts.as_ref().map(Vec::len),
            Some(1)
        );
        assert_eq!(pod.containers[1].image.as_deref(), Some("fluent-bit:3"));
        assert_eq!(pod.volumes.as_ref().map(Vec::len), Some(1));
        assert_eq!(
            pod.node_selector,
            Some([("pool".to_owned(), "flink".to_owned())].into())
        );
        let sidecar = &pod.containers[2];
        assert_eq!(
            sidecar.image.as_deref(),
            Some(injection::DEFAULT_SIDECAR_IMAGE)
        );
        let listen = sidecar
            .env
            .iter()
            .flatten()
            .find(|v| v.name == injection::env::LISTEN)
            .and_then(|v| v.value.as_deref());
        assert_eq!(listen, Some("127.0.0.1:8787"));
        let tm = &child["spec"]["taskManager"];
        assert_eq!(tm["replicas"], 2);
        assert_eq!(tm["resource"]["memory"], "2048m");
        assert_eq!(tm["podTemplate"]["metadata"]["labels"]["pool"], "tm");
        // The common template keeps its volume and mount; its main container gets the URL.
        let common = &child["spec"]["podTemplate"]["spec"];
        assert_eq!(common["volumes"][0]["name"], "conf");
        let main = &common["containers"][0];
        assert_eq!(main["volumeMounts"][0]["mountPath"], "/conf");
        assert!(
            main["env"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["name"] == injection::env::SIDECAR_URL
                    && e["value"] == "http://127.0.0.1:8787"),
            "{main}"
        );
        // Rendering again (every reconcile that applies the child) does not add it twice.
        let again = build(&ctx(), &s, &valid(&s), Color::Green, "h", None).expect("valid");
        assert_eq!(again, child);
    }

    #[test]
    fn the_children_validate_against_the_upstream_flink_deployment_schema() {
        for s in [spec("local:///job.jar"), spec_with_pod_templates()] {
            let child = build(&ctx(), &s, &valid(&s), Color::Blue, "h", None).expect("valid");
            let report =
                bluegreen_local_flink::crd::validate_flink_deployment(&child).expect("schema");
            assert!(report.errors.is_empty(), "{:?}", report.errors);
            assert!(
                report.unknown_fields.is_empty(),
                "{:?}",
                report.unknown_fields
            );
        }
    }

    #[test]
    fn turned_off_the_child_has_no_sidecar() {
        let mut s = spec_with_pod_templates();
        s.sidecar.inject = false;
        let child = build(&ctx(), &s, &valid(&s), Color::Blue, "h", None).expect("valid");
        assert_eq!(sidecars(&child), 0, "{child}");
        assert!(!child.to_string().contains(injection::env::SIDECAR_URL));
        let names: Vec<String> = task_manager_pod(&child)
            .containers
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(
            names,
            ["flink-main-container", "log-shipper"],
            "the user's template as written"
        );
        assert!(child.to_string().contains(injection::env::CONFIGMAP));
    }

    #[test]
    fn a_sidecar_change_changes_the_hash_its_defaults_do_not() {
        let a = spec("local:///job.jar");
        assert_eq!(spec_hash(&a), template_hash(&a.template));
        let mut b = a.clone();
        b.sidecar.image = Some("registry.example.com/bluegreen/sidecar:2".into());
        assert_ne!(spec_hash(&a), spec_hash(&b));
        let mut c = b.clone();
        c.template.spec.job.state = Some("suspended".into());
        assert_eq!(spec_hash(&b), spec_hash(&c));
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
