//! Custom resources: CRDs installed and served, the status subresource, generation, schema
//! validation and pruning, the upstream FlinkDeployment CRD, discovery.

use bluegreen_local_apiserver::validate_against_crd;
use kube::Discovery;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use kube::ResourceExt;

use super::common::*;

#[tokio::test]
async fn custom_resources_status_generation_and_validation() {
    let env = env("crs").await;
    let first = install_crd(&env.client, bluegreen_crd()).await;
    let again = install_crd(&env.client, bluegreen_crd()).await;
    if env.server.is_some() {
        // (A real cluster's CRD controllers may still touch the status in between.)
        assert_eq!(
            first.resource_version(),
            again.resource_version(),
            "re-applying an unchanged CRD is a no-op"
        );
    }
    let api = bluegreen_api(&env.client, &env.ns);
    let mut obj = bluegreen(
        "bg",
        json!({"template": {"any": {"thing": 1}}, "replicas": 2, "port": "http"}),
    );
    obj.data["status"] = json!({"stage": "ignored on create"});
    let created = create(&api, &obj, "create CR").await;
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.data["spec"]["mode"], "Automatic",
        "schema defaults are applied"
    );
    assert!(
        created.data.get("status").is_none(),
        "status is ignored on create"
    );

    let st = api
        .patch_status(
            "bg",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"stage": "RUNNING"}, "spec": {"replicas": 7}})),
        )
        .await
        .expect("status patch");
    assert_eq!(st.data["status"]["stage"], "RUNNING");
    assert_eq!(st.data["spec"]["replicas"], 2, "/status ignores spec");
    assert_eq!(
        st.metadata.generation,
        Some(1),
        "status changes do not bump generation"
    );

    let sp = merge(
        &api,
        "bg",
        json!({"spec": {"replicas": 3}, "status": {"stage": "X"}}),
    )
    .await
    .expect("spec patch");
    assert_eq!(sp.metadata.generation, Some(2));
    assert_eq!(
        sp.data["status"]["stage"], "RUNNING",
        "main resource ignores status"
    );
    let labelled = merge(&api, "bg", json!({"metadata": {"labels": {"l": "v"}}}))
        .await
        .expect("metadata patch");
    assert_eq!(
        labelled.metadata.generation,
        Some(2),
        "metadata changes do not bump generation"
    );

    // Server-side apply of the status subresource.
    let applied = api
        .patch_status(
            "bg",
            &PatchParams::apply("status-writer").force(),
            &Patch::Apply(json!({
                "apiVersion": "bluegreen.dev/v1alpha1", "kind": "FlinkBlueGreenDeployment",
                "metadata": {"name": "bg"}, "status": {"stage": "APPLIED"}
            })),
        )
        .await
        .expect("apply status");
    assert_eq!(applied.data["status"]["stage"], "APPLIED");
    assert_eq!(applied.data["spec"]["replicas"], 3);
    let status_entry = applied
        .metadata
        .managed_fields
        .as_ref()
        .and_then(|m| {
            m.iter()
                .find(|e| e.manager.as_deref() == Some("status-writer"))
                .cloned()
        })
        .expect("status-writer owns status");
    assert_eq!(status_entry.subresource.as_deref(), Some("status"));

    // dryRun=All validates and answers without storing.
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    api.create(&dry, &bluegreen("dry", json!({"template": {}})))
        .await
        .expect("dry run");
    assert!(api.get_opt("dry").await.expect("get").is_none());

    let mut whole = api.get_status("bg").await.expect("get status");
    whole.data["status"] = json!({"stage": "REPLACED"});
    let replaced = api
        .replace_status("bg", &PostParams::default(), &whole)
        .await
        .expect("replace status");
    assert_eq!(replaced.data["status"]["stage"], "REPLACED");

    // Schema: types, required, enum, minimum, int-or-string, additionalProperties, items.
    for (spec, field) in [
        (json!({"replicas": 1}), "spec.template"),
        (json!({"template": {}, "replicas": "two"}), "spec.replicas"),
        (json!({"template": {}, "replicas": 0}), "spec.replicas"),
        (json!({"template": {}, "mode": "Sometimes"}), "spec.mode"),
        (json!({"template": {}, "port": true}), "spec.port"),
        (json!({"template": {}, "labels": {"a": 1}}), "spec.labels.a"),
        (json!({"template": {}, "args": [1]}), "spec.args[0]"),
    ] {
        let err = api_err(
            api.create(&PostParams::default(), &bluegreen("bad", spec.clone()))
                .await
                .expect_err("invalid"),
        );
        assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{spec}");
        let causes = err
            .details
            .as_ref()
            .map(|d| d.causes.clone())
            .unwrap_or_default();
        assert!(
            causes.iter().any(|c| c.field == field),
            "{spec}: {causes:?}"
        );
    }
    // Unknown fields are pruned (and rejected with fieldValidation=Strict).
    let pruned = create(
        &api,
        &bluegreen("pruned", json!({"template": {"keep": 1}, "bogus": 1})),
        "pruned",
    )
    .await;
    assert!(pruned.data["spec"].get("bogus").is_none());
    assert_eq!(pruned.data["spec"]["template"]["keep"], 1);

    // A CRD of cluster scope.
    install_crd(
        &env.client,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "clusterthings.conformance.bluegreen.dev"},
            "spec": {"group": "conformance.bluegreen.dev", "scope": "Cluster",
                "names": {"plural": "clusterthings", "kind": "ClusterThing"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
    )
    .await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("conformance.bluegreen.dev", "v1", "ClusterThing"),
        "clusterthings",
    );
    let things: Api<DynamicObject> = Api::all_with(env.client.clone(), &ar);
    let name = format!("thing-{}", env.ns);
    let thing: DynamicObject = serde_json::from_value(json!({"apiVersion": "conformance.bluegreen.dev/v1", "kind": "ClusterThing", "metadata": {"name": name}, "spec": {"a": 1}})).expect("thing");
    let created = create(&things, &thing, "cluster-scoped create").await;
    assert!(created.metadata.namespace.is_none());
    things
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete thing");
    env.cleanup().await;
}

#[tokio::test]
async fn upstream_flink_deployment_crd() {
    let env = env("flinkdeployment").await;
    let crd_yaml =
        include_str!("../../../local-flink/crds/flinkdeployments.flink.apache.org-v1.yml");
    let crd: Value = serde_yaml::from_str(crd_yaml).expect("CRD YAML");
    install_crd(&env.client, crd.clone()).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("flink.apache.org", "v1beta1", "FlinkDeployment"),
        "flinkdeployments",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &env.ns, &ar);
    let fd = json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment", "metadata": {"name": "job"},
        "spec": {"image": "flink:1.20", "flinkVersion": "v1_20", "serviceAccount": "flink",
            "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2"},
            "jobManager": {"resource": {"memory": "2048m", "cpu": 1}},
            "taskManager": {"resource": {"memory": "2048m", "cpu": 1}},
            "job": {"jarURI": "local:///opt/flink/job.jar", "parallelism": 2, "upgradeMode": "savepoint", "state": "running"}}
    });
    let report = validate_against_crd(&crd, "v1beta1", &fd).expect("schema present");
    assert!(
        report.errors.is_empty() && report.unknown_fields.is_empty(),
        "{report:?}"
    );
    let created = create(
        &api,
        &serde_json::from_value(fd.clone()).expect("fd"),
        "create",
    )
    .await;
    assert_eq!(created.data["spec"]["job"]["parallelism"], 2);
    let st = api
        .patch_status(
            "job",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"jobStatus": {"state": "RUNNING"}, "lifecycleState": "STABLE"}}),
            ),
        )
        .await
        .expect("status");
    assert_eq!(st.data["status"]["lifecycleState"], "STABLE");
    let mut bad = fd.clone();
    bad["metadata"]["name"] = json!("bad");
    bad["spec"]["job"]["upgradeMode"] = json!("sometimes");
    let err = api_err(
        api.create(
            &PostParams::default(),
            &serde_json::from_value(bad.clone()).expect("fd"),
        )
        .await
        .expect_err("enum"),
    );
    assert_eq!(err.code, 422);
    let report = validate_against_crd(&crd, "v1beta1", &bad).expect("schema");
    assert_eq!(report.errors[0].field, "spec.job.upgradeMode");
    env.cleanup().await;
}

#[tokio::test]
async fn discovery_lists_builtin_and_crd_kinds() {
    let env = env("discovery").await;
    install_crd(&env.client, bluegreen_crd()).await;
    for aggregated in [false, true] {
        let d = Discovery::new(env.client.clone());
        let d = if aggregated {
            d.run_aggregated().await
        } else {
            d.run().await
        }
        .expect("discovery");
        for (group, kind) in [
            ("", "ConfigMap"),
            ("", "Secret"),
            ("", "Namespace"),
            ("events.k8s.io", "Event"),
            ("coordination.k8s.io", "Lease"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("bluegreen.dev", "FlinkBlueGreenDeployment"),
        ] {
            let found = d
                .groups()
                .filter(|g| g.name() == group)
                .flat_map(kube::discovery::ApiGroup::recommended_resources)
                .find(|(ar, _)| ar.kind == kind);
            let (ar, caps) =
                found.unwrap_or_else(|| panic!("{kind} in {group:?} (aggregated: {aggregated})"));
            assert!(
                caps.supports_operation(kube::discovery::verbs::WATCH),
                "{kind}"
            );
            if kind == "FlinkBlueGreenDeployment" {
                assert_eq!(ar.plural, "flinkbluegreendeployments");
                assert!(
                    caps.subresources.iter().any(|(s, _)| s.plural == "status") || aggregated,
                    "status subresource listed"
                );
                assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
            }
        }
    }
    let resources = env
        .client
        .list_api_group_resources("bluegreen.dev/v1alpha1")
        .await
        .expect("group resources");
    let names: Vec<&str> = resources
        .resources
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert!(
        names.contains(&"flinkbluegreendeployments")
            && names.contains(&"flinkbluegreendeployments/status"),
        "{names:?}"
    );
    let core = env
        .client
        .list_core_api_resources("v1")
        .await
        .expect("core");
    let cm = core
        .resources
        .iter()
        .find(|r| r.name == "configmaps")
        .expect("configmaps");
    assert!(
        cm.namespaced
            && cm.kind == "ConfigMap"
            && cm
                .short_names
                .as_ref()
                .is_some_and(|s| s.contains(&"cm".to_string()))
    );
    env.client.apiserver_version().await.expect("/version");
    env.cleanup().await;
}
