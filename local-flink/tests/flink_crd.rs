//! Child specs like the ones our controller writes validate against the upstream FlinkDeployment
//! CRD schema (local-flink/crds/, from apache/flink-kubernetes-operator); invalid ones do not, and the
//! local API server rejects them.

mod flink_support;

use bluegreen_local_flink::crd::{flink_deployment_crd, validate_flink_deployment};
use bluegreen_local_flink::ledger::SinkMode;
use flink_support::{api, deployment, env};
use kube::api::{DynamicObject, PostParams};
use serde_json::{Value, json};

/// A child FlinkDeployment as the controller writes it.
fn controller_child() -> Value {
    let mut d = deployment(
        "orders-green",
        4,
        &[
            ("bluegreen.gate.color", "GREEN"),
            ("bluegreen.gate.configmap", "orders-bluegreen"),
            ("bluegreen.gate.namespace", "default"),
            ("execution.checkpointing.interval", "10s"),
            ("state.savepoints.dir", "s3://bucket/savepoints"),
        ],
    );
    d["metadata"]["labels"] = json!({"flink/blue-green-deployment-type": "GREEN"});
    d["spec"]["job"]["initialSavepointPath"] = json!("s3://bucket/savepoints/savepoint-abc");
    d["spec"]["job"]["args"] = json!(["--input", "orders"]);
    d["spec"]["job"]["savepointRedeployNonce"] = json!(3);
    d["spec"]["jobManager"]["replicas"] = json!(1);
    d["spec"]["taskManager"]["replicas"] = json!(2);
    d
}

#[test]
fn the_crd_is_the_upstream_one() {
    let crd = flink_deployment_crd().expect("parses");
    assert_eq!(crd["metadata"]["name"], "flinkdeployments.flink.apache.org");
    assert_eq!(crd["spec"]["versions"][0]["name"], "v1beta1");
    assert!(crd["spec"]["versions"][0]["subresources"]["status"].is_object());
}

#[test]
fn a_controller_child_spec_validates() {
    let report = validate_flink_deployment(&controller_child()).expect("schema");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(
        report.unknown_fields.is_empty(),
        "{:?}",
        report.unknown_fields
    );
}

#[test]
fn invalid_specs_fail_with_the_offending_field() {
    for (pointer, value, field) in [
        (
            "/spec/job/upgradeMode",
            json!("sometimes"),
            "spec.job.upgradeMode",
        ),
        ("/spec/job/state", json!("paused"), "spec.job.state"),
        (
            "/spec/job/parallelism",
            json!("four"),
            "spec.job.parallelism",
        ),
        ("/spec/flinkVersion", json!("v9_99"), "spec.flinkVersion"),
        ("/spec/image", json!(5), "spec.image"),
    ] {
        let mut d = controller_child();
        *d.pointer_mut(pointer).expect("field exists") = value;
        let report = validate_flink_deployment(&d).expect("schema");
        assert!(
            report.errors.iter().any(|c| c.field.contains(field)),
            "{pointer}: {:?}",
            report.errors
        );
    }
    let mut d = controller_child();
    d["spec"]["job"]["jarUri"] = json!("misspelled");
    let report = validate_flink_deployment(&d).expect("schema");
    assert!(
        report.unknown_fields.iter().any(|f| f.contains("jarUri")),
        "{report:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_api_server_enforces_the_schema() {
    let env = env(SinkMode::Transactional).await;
    let ok: DynamicObject = serde_json::from_value(controller_child()).expect("object");
    api(&env.client)
        .create(&PostParams::default(), &ok)
        .await
        .expect("valid child accepted");
    let mut bad = controller_child();
    bad["metadata"]["name"] = json!("orders-blue");
    bad["spec"]["job"]["upgradeMode"] = json!("sometimes");
    let bad: DynamicObject = serde_json::from_value(bad).expect("object");
    match api(&env.client).create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 422, "{e:?}"),
        other => panic!("an invalid FlinkDeployment must be rejected, got {other:?}"),
    }
}
