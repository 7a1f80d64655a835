//! Built-in kinds with rules of their own: Events (both APIs, the recorder), Leases, Secrets,
//! Namespaces, size limits, self reviews.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ConfigMap, Event as CoreEvent, Namespace, ObjectReference, Secret,
};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

use super::common::*;

/// Records one event about ConfigMap `subject` twice through
/// `kube::runtime::events::Recorder` (a POST, then a merge PATCH of its series); returns the
/// reference it was recorded about.
async fn record_twice(
    env: &Env,
    type_: kube::runtime::events::EventType,
    uid: Option<&str>,
) -> ObjectReference {
    let recorder = kube::runtime::events::Recorder::new(
        env.client.clone(),
        kube::runtime::events::Reporter {
            controller: "conformance".into(),
            instance: Some("pod-1".into()),
        },
    );
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: Some("subject".into()),
        namespace: Some(env.ns.clone()),
        uid: uid.map(str::to_owned),
        ..ObjectReference::default()
    };
    let ev = kube::runtime::events::Event {
        type_,
        reason: "Tested".into(),
        note: Some("hello".into()),
        action: "Test".into(),
        secondary: None,
    };
    recorder
        .publish(&ev, &reference)
        .await
        .expect("first publish (POST)");
    recorder
        .publish(&ev, &reference)
        .await
        .expect("second publish (merge PATCH of the series)");
    reference
}

#[tokio::test]
async fn events_recorder_leases_secrets_namespaces() {
    let env = env("kinds").await;
    record_twice(&env, kube::runtime::events::EventType::Normal, None).await;
    let events: Api<K8sEvent> = env.api();
    let list = events.list(&ListParams::default()).await.expect("events");
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].series.as_ref().map(|s| s.count), Some(2));
    assert_eq!(list.items[0].note.as_deref(), Some("hello"));

    let leases: Api<Lease> = env.api();
    let lease: Lease = serde_json::from_value(json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})).expect("lease");
    let l = create(&leases, &lease, "lease").await;
    let mut next = l.clone();
    next.spec.as_mut().expect("spec").holder_identity = Some("b".into());
    let l2 = leases
        .replace("leader", &PostParams::default(), &next)
        .await
        .expect("take over");
    assert_eq!(l2.spec.expect("spec").holder_identity.as_deref(), Some("b"));
    assert_eq!(
        api_err(
            leases
                .replace("leader", &PostParams::default(), &l)
                .await
                .expect_err("stale")
        )
        .code,
        409
    );

    let secrets: Api<Secret> = env.api();
    let s: Secret = serde_json::from_value(
        json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}),
    )
    .expect("secret");
    let s = create(&secrets, &s, "secret").await;
    assert_eq!(s.data.expect("data")["password"].0, b"hunter2");
    assert_eq!(s.type_.as_deref(), Some("Opaque"));

    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    assert!(namespaces.get("default").await.is_ok(), "default exists");
    let ns_name = format!("{}-x", env.ns);
    create(
        &namespaces,
        &serde_json::from_value(json!({"metadata": {"name": ns_name}})).expect("ns"),
        "ns",
    )
    .await;
    let inner: Api<ConfigMap> = Api::namespaced(env.client.clone(), &ns_name);
    create(&inner, &cm("content", json!({})), "content").await;
    namespaces
        .delete(&ns_name, &DeleteParams::default())
        .await
        .expect("delete ns");
    eventually("namespace and content gone", || {
        let namespaces = namespaces.clone();
        let ns_name = ns_name.clone();
        async move {
            namespaces
                .get_opt(&ns_name)
                .await
                .expect("get ns")
                .is_none()
        }
    })
    .await;
    env.cleanup().await;
}

/// One store, two views: an events.k8s.io/v1 Event (what `kube::runtime::events::Recorder`
/// and the controller write) is a core/v1 Event too, so `kubectl describe` and `kubectl get
/// events --field-selector involvedObject.name=...` see it, and the reverse.
#[tokio::test]
async fn events_are_served_by_both_event_apis() {
    let env = env("event_views").await;
    let reference = record_twice(
        &env,
        kube::runtime::events::EventType::Warning,
        Some("0b5d1a8e-0000-4000-8000-000000000001"),
    )
    .await;
    let core: Api<CoreEvent> = env.api();
    let selected = core
        .list(&ListParams::default().fields("involvedObject.name=subject"))
        .await
        .expect("core/v1 events by involvedObject.name");
    assert_eq!(selected.items.len(), 1, "{selected:?}");
    let e = &selected.items[0];
    assert_eq!(e.involved_object, reference);
    assert_eq!(e.reason.as_deref(), Some("Tested"));
    assert_eq!(e.message.as_deref(), Some("hello"));
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(e.action.as_deref(), Some("Test"));
    assert_eq!(e.reporting_component.as_deref(), Some("conformance"));
    assert_eq!(e.reporting_instance.as_deref(), Some("pod-1"));
    assert_eq!(e.series.as_ref().and_then(|s| s.count), Some(2));
    assert!(e.event_time.is_some(), "eventTime carried over");
    let none = core
        .list(&ListParams::default().fields("involvedObject.name=other"))
        .await
        .expect("selected list");
    assert!(none.items.is_empty());

    // core/v1 → events.k8s.io/v1, and deleting through one view deletes the other.
    let written: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "legacy"},
        "involvedObject": {"kind": "ConfigMap", "name": "old-style", "namespace": env.ns},
        "reason": "Legacy", "message": "from core", "type": "Normal",
        "source": {"component": "old-recorder"}, "count": 3,
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:01:00Z",
    }))
    .expect("core event");
    create(&core, &written, "create core/v1 event").await;
    let events: Api<K8sEvent> = env.api();
    let seen = events
        .get("legacy")
        .await
        .expect("read through events.k8s.io/v1");
    assert_eq!(
        seen.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("old-style")
    );
    assert_eq!(seen.note.as_deref(), Some("from core"));
    assert_eq!(seen.reason.as_deref(), Some("Legacy"));
    assert_eq!(seen.deprecated_count, Some(3));
    assert_eq!(
        seen.deprecated_source.and_then(|s| s.component).as_deref(),
        Some("old-recorder")
    );
    events
        .delete("legacy", &DeleteParams::default())
        .await
        .expect("delete through events.k8s.io/v1");
    assert!(core.get_opt("legacy").await.expect("get").is_none());
    env.cleanup().await;
}

/// What kubectl met: a Secret with an empty `type` (kubectl's `create secret generic` body)
/// becomes Opaque; a ConfigMap or Secret holding more than 1 MiB is refused with 422.
#[tokio::test]
async fn secret_type_default_and_size_limits() {
    const LIMIT: usize = 1024 * 1024;
    let env = env("size_limits").await;
    let secrets: Api<Secret> = env.api();
    let s: Secret = serde_json::from_value(
        json!({"metadata": {"name": "empty-type"}, "type": "", "data": {"k": "dg=="}}),
    )
    .expect("secret");
    let s = create(&secrets, &s, "create").await;
    assert_eq!(s.type_.as_deref(), Some("Opaque"));

    let cms: Api<ConfigMap> = env.api();
    create(
        &cms,
        &cm("at-limit", json!({"a": "x".repeat(LIMIT - 1), "b": "y"})),
        "exactly 1 MiB of values is allowed",
    )
    .await;
    let err = refused(
        cms.create(
            &PostParams::default(),
            &cm("too-big", json!({"a": "x".repeat(LIMIT), "b": "y"})),
        )
        .await,
        "a ConfigMap over 1 MiB",
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");
    assert!(
        err.message
            .contains("Too long: must have at most 1048576 bytes"),
        "{}",
        err.message
    );
    let grown = merge(&cms, "at-limit", json!({"data": {"c": "z"}})).await;
    assert_eq!(refused(grown, "an update past 1 MiB").code, 422);

    let big: Secret = serde_json::from_value(
        json!({"metadata": {"name": "too-big"}, "stringData": {"k": "x".repeat(LIMIT + 1)}}),
    )
    .expect("secret");
    let err = refused(
        secrets.create(&PostParams::default(), &big).await,
        "a Secret over 1 MiB",
    );
    assert_eq!(err.code, 422, "{err:?}");
    assert!(
        err.message
            .contains("Too long: must have at most 1048576 bytes"),
        "{}",
        err.message
    );
    env.cleanup().await;
}

/// `kubectl auth can-i` and `kubectl auth whoami`: SelfSubjectAccessReview and
/// SelfSubjectReview are answered (201 with a status), not stored.
#[tokio::test]
async fn self_subject_reviews_are_answered() {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
    let env = env("self_reviews").await;
    let review: SelfSubjectAccessReview = serde_json::from_value(json!({
        "spec": {"resourceAttributes": {"verb": "create", "resource": "configmaps", "namespace": env.ns}}
    }))
    .expect("review");
    let answered = Api::<SelfSubjectAccessReview>::all(env.client.clone())
        .create(&PostParams::default(), &review)
        .await
        .expect("SelfSubjectAccessReview");
    assert!(answered.status.expect("status").allowed);
    assert_eq!(
        answered
            .spec
            .resource_attributes
            .and_then(|r| r.resource)
            .as_deref(),
        Some("configmaps"),
        "the request is answered back"
    );
    let neither: SelfSubjectAccessReview =
        serde_json::from_value(json!({"spec": {}})).expect("empty review");
    let err = refused(
        Api::<SelfSubjectAccessReview>::all(env.client.clone())
            .create(&PostParams::default(), &neither)
            .await,
        "a review of nothing",
    );
    assert_eq!(err.code, 422, "{err:?}");
    let whoami = Api::<SelfSubjectReview>::all(env.client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .expect("SelfSubjectReview");
    let user = whoami.status.and_then(|s| s.user_info).expect("userInfo");
    assert!(user.username.is_some_and(|u| !u.is_empty()), "a user name");
    env.cleanup().await;
}
