//! Merge, JSON and strategic merge patches, and server-side apply with its ownership and conflicts.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use kube::ResourceExt;

use super::common::*;

#[tokio::test]
async fn patch_types_and_server_side_apply() {
    let env = env("patch").await;
    let api: Api<ConfigMap> = env.api();
    create(&api, &cm("p", json!({"a": "1", "b": "2"})), "create").await;
    let merged = merge(&api, "p", json!({"data": {"a": null, "c": "3"}}))
        .await
        .expect("merge");
    assert_eq!(
        serde_json::to_value(&merged.data).expect("data"),
        json!({"b": "2", "c": "3"})
    );

    // What kube::runtime::finalizer sends: test null + add, then test value + remove.
    let add: Value = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/f"]}
    ]);
    let with_f = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(add.clone()).expect("patch")),
        )
        .await
        .expect("json patch");
    assert_eq!(with_f.finalizers(), ["example.com/f"]);
    let err = api_err(
        api.patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(add).expect("patch")),
        )
        .await
        .expect_err("test fails"),
    );
    assert_eq!(err.code, 422);
    let remove: Value = json!([
        {"op": "test", "path": "/metadata/finalizers/0", "value": "example.com/f"},
        {"op": "remove", "path": "/metadata/finalizers/0"}
    ]);
    let without = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(remove).expect("patch")),
        )
        .await
        .expect("remove");
    assert!(without.finalizers().is_empty());

    let smp = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"x": "y"}}, "data": {"b": null}})),
        )
        .await
        .expect("strategic");
    assert_eq!(smp.labels()["x"], "y");
    assert_eq!(
        serde_json::to_value(&smp.data).expect("data"),
        json!({"c": "3"})
    );

    // Server-side apply: create, ownership, conflict, force, removal of dropped fields.
    let apply = |manager: &'static str, force: bool, data: Value| {
        let api = api.clone();
        async move {
            let mut pp = PatchParams::apply(manager);
            pp.force = force;
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": data});
            api.patch("s", &pp, &Patch::Apply(body)).await
        }
    };
    let s = apply("alice", false, json!({"x": "1", "y": "2"}))
        .await
        .expect("apply creates");
    let mf = s.metadata.managed_fields.clone().expect("managedFields");
    assert_eq!(
        (mf[0].manager.as_deref(), mf[0].operation.as_deref()),
        (Some("alice"), Some("Apply"))
    );
    apply("bob", false, json!({"z": "3", "x": "1"}))
        .await
        .expect("same value: shared, no conflict");
    let err = api_err(
        apply("bob", false, json!({"x": "9"}))
            .await
            .expect_err("conflict"),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(err.message.contains("alice"), "{}", err.message);
    let forced = apply("bob", true, json!({"x": "9", "z": "3"}))
        .await
        .expect("force");
    assert_eq!(forced.data.as_ref().expect("data")["x"], "9");
    let dropped = apply("alice", false, json!({"y": "2"}))
        .await
        .expect("alice drops x");
    assert_eq!(
        serde_json::to_value(&dropped.data).expect("data"),
        json!({"x": "9", "y": "2", "z": "3"}),
        "x is bob's now"
    );
    let dropped = apply("bob", false, json!({"x": "9"}))
        .await
        .expect("bob drops z");
    assert_eq!(
        serde_json::to_value(&dropped.data).expect("data"),
        json!({"x": "9", "y": "2"})
    );
    // A plain update takes ownership of what it changed: a later apply of another value conflicts.
    let edit = |data: Value| {
        let api = api.clone();
        async move {
            let pp = PatchParams {
                field_manager: Some("editor".into()),
                ..PatchParams::default()
            };
            api.patch("s", &pp, &Patch::Merge(json!({ "data": data })))
                .await
                .expect("update");
        }
    };
    edit(json!({"y": "edited"})).await;
    let err = api_err(
        apply("alice", false, json!({"y": "2"}))
            .await
            .expect_err("conflict with editor"),
    );
    // Kubernetes' wording (kubectl prints it as is): one conflict on one line, several grouped
    // by manager.
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.y"
    );
    edit(json!({"x": "edited"})).await;
    let err = api_err(
        apply("alice", false, json!({"x": "9", "y": "2"}))
            .await
            .expect_err("two conflicts with editor"),
    );
    assert_eq!(
        err.message,
        "Apply failed with 2 conflicts: conflicts with \"editor\" using v1:\n- .data.x\n- .data.y"
    );
    env.cleanup().await;
}
