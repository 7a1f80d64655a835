//! The JNI shim's core without a JVM: the process-wide watch registry against the local API
//! server, manual watches, waits, and the native gate.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bluegreen_gate_jni::{Error, NativeGate, WatchKey, Watches, state_json};
use bluegreen_local_apiserver::{AuthMode, LocalApiServer, Options};
use bluegreen_protocol::{Color, CoordinationState, Decision, Stage, Toggle, configmap_name};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};

const NS: &str = "default";
const BOUND: Duration = Duration::from_secs(10);

fn json(state: &CoordinationState) -> String {
    serde_json::to_string(&state.to_data()).expect("json")
}

/// Waits (bounded) until `done` holds.
fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn subtasks_share_one_watch_per_configmap_and_the_last_release_stops_it() {
    // The API server runs on a runtime of its own; the test plays the JVM's threads.
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let server = runtime
        .block_on(LocalApiServer::start(Options::default()))
        .expect("start the local API server");
    let client = {
        let _context = runtime.enter();
        server.client()
    };
    let name = configmap_name("orders");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let first = CoordinationState::new(1, Stage::Running, Color::Blue, Toggle::NotSet);
    let configmap = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..ObjectMeta::default()
        },
        data: Some(first.to_data()),
        ..ConfigMap::default()
    };
    runtime
        .block_on(api.create(&PostParams::default(), &configmap))
        .expect("create");

    let watches = Watches::new();
    let a = watches
        .open_with_client(client.clone(), NS, &name)
        .expect("open");
    let b = watches
        .open_with_client(client.clone(), NS, &name)
        .expect("open");
    let key = WatchKey::ConfigMap {
        namespace: NS.into(),
        name: name.clone(),
    };
    assert!(
        Arc::ptr_eq(a.shared(), b.shared()),
        "one state per ConfigMap and process"
    );
    assert_ne!(a.id(), b.id());
    assert_eq!(watches.users(&key), 2);

    let seen = watches
        .await_data(a.id(), 0, BOUND)
        .expect("await")
        .expect("the first state");
    assert_eq!(*seen.data, first.to_data());

    // One subtask leaves: the watch keeps running for the other.
    watches.release(a.id()).expect("release");
    assert!(matches!(
        watches.release(a.id()),
        Err(Error::UnknownHandle(_))
    ));
    assert_eq!(watches.users(&key), 1);
    runtime
        .block_on(api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "data": {
                "epoch": "2", "stage": "TRANSITIONING", "active-deployment-type": "GREEN",
            }})),
        ))
        .expect("patch");
    let next = watches
        .await_data(b.id(), seen.revision, BOUND)
        .expect("await")
        .expect("the patch");
    assert_eq!(next.data["stage"], "TRANSITIONING");

    // The last one leaves: the watch task ends and drops its reference to the state.
    let shared = Arc::clone(b.shared());
    watches.release(b.id()).expect("release");
    drop((a, b));
    assert_eq!(watches.users(&key), 0);
    until("the watch task to stop", || Arc::strong_count(&shared) == 1);

    // A new subscriber starts a fresh watch.
    let c = watches.open_with_client(client, NS, &name).expect("reopen");
    assert!(!Arc::ptr_eq(c.shared(), &shared));
    let again = watches
        .await_data(c.id(), 0, BOUND)
        .expect("await")
        .expect("state");
    assert_eq!(again.data["stage"], "TRANSITIONING");
    watches.release(c.id()).expect("release");
}

#[test]
fn a_wait_times_out_without_a_change_and_ends_at_once_on_release() {
    let watches = Arc::new(Watches::new());
    let handle = watches.open_manual("waits");
    assert!(
        watches
            .await_data(handle.id(), 0, Duration::from_millis(20))
            .expect("await")
            .is_none(),
        "nothing offered yet"
    );
    let running = CoordinationState::new(1, Stage::Running, Color::Blue, Toggle::NotSet);
    assert!(watches.offer(handle.id(), &json(&running)).expect("offer"));
    let current = watches
        .await_data(handle.id(), 0, BOUND)
        .expect("await")
        .expect("data");
    let started = Instant::now();
    assert!(
        watches
            .await_data(handle.id(), current.revision, Duration::from_millis(50))
            .expect("await")
            .is_none()
    );
    assert!(started.elapsed() >= Duration::from_millis(50));

    let blocked = {
        let watches = Arc::clone(&watches);
        let id = handle.id();
        std::thread::spawn(move || {
            let started = Instant::now();
            let result = watches.await_data(id, current.revision, Duration::from_mins(1));
            (result.map(|data| data.is_none()), started.elapsed())
        })
    };
    // Released while the waiter blocks (or before it starts: then the handle is unknown).
    std::thread::sleep(Duration::from_millis(20));
    watches.release(handle.id()).expect("release");
    let (result, waited) = blocked.join().expect("join");
    assert!(
        matches!(result, Ok(true) | Err(Error::UnknownHandle(_))),
        "{result:?}"
    );
    assert!(
        waited < BOUND,
        "released waits end at once, took {waited:?}"
    );
}

#[test]
fn offers_keep_the_last_good_data_and_only_manual_watches_take_them() {
    let watches = Watches::new();
    let handle = watches.open_manual("offers");
    let mut running =
        CoordinationState::new(3, Stage::Running, Color::Green, Toggle::NotSet).to_data();
    running.insert("is-first-deployment".into(), "false".into());
    let running_json = serde_json::to_string(&running).expect("json");
    assert!(watches.offer(handle.id(), &running_json).expect("offer"));
    // An older epoch and a malformed value are refused; the data stays.
    let stale = CoordinationState::new(2, Stage::Running, Color::Blue, Toggle::NotSet);
    assert!(!watches.offer(handle.id(), &json(&stale)).expect("offer"));
    assert!(
        !watches
            .offer(handle.id(), r#"{"epoch": "x"}"#)
            .expect("offer")
    );
    assert!(matches!(
        watches.offer(handle.id(), "[1]"),
        Err(Error::Json(_))
    ));
    let kept = watches
        .await_data(handle.id(), 0, BOUND)
        .expect("await")
        .expect("data");
    assert_eq!((kept.revision, &*kept.data), (1, &running));
    // The same body as the sidecar's GET /v1/state.
    let body: serde_json::Value = serde_json::from_str(&state_json(&kept)).expect("json");
    assert_eq!(body["revision"], "1");
    assert_eq!(body["epoch"], "3");
    assert_eq!(body["configmap"]["is-first-deployment"], "false");
    // A replay is not a new revision.
    assert!(watches.offer(handle.id(), &running_json).expect("offer"));
    assert!(
        watches
            .await_data(handle.id(), 1, Duration::from_millis(10))
            .expect("await")
            .is_none()
    );
    assert!(matches!(
        watches.offer(99, "{}"),
        Err(Error::UnknownHandle(99))
    ));
    watches.release(handle.id()).expect("release");
}

#[test]
fn a_native_gate_decides_records_and_batches_by_the_rule() {
    let watches = Watches::new();
    let handle = watches.open_manual("gate");
    let mut blue = NativeGate::new(&handle, Color::Blue);
    assert_eq!(blue.decide(0), Decision::Hold, "no state yet");
    let set = CoordinationState::new(4, Stage::Transitioning, Color::Green, Toggle::Set(100));
    assert!(watches.offer(handle.id(), &json(&set)).expect("offer"));
    assert_eq!(
        (blue.decide(100), blue.decide(101)),
        (Decision::Pass, Decision::Drop)
    );
    let times = [i64::MIN, 99, 100, 101, i64::MAX];
    let decided = blue
        .decide_batch_with(times.len(), |buffer| {
            buffer.copy_from_slice(&times);
            Ok(())
        })
        .expect("batch")
        .to_vec();
    assert_eq!(
        decided,
        vec![0, 0, 0, 1, 1],
        "PASS at and below W, DROP above"
    );
    let snapshot = blue.gate().snapshot();
    assert_eq!(
        (snapshot.passed, snapshot.dropped, snapshot.held),
        (4, 3, 1)
    );
    assert_eq!(snapshot.max_passed_event_time_ms, Some(100));
    watches.release(handle.id()).expect("release");
}

#[test]
fn the_home_kubeconfig_reads_its_token_file_next_to_it() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let server = runtime
        .block_on(LocalApiServer::start(Options {
            auth: AuthMode::Rbac,
            ..Options::default()
        }))
        .expect("start the local API server");
    let token = server.user_token("gates", &["system:masters"]);
    let dir = tempfile::tempdir().expect("a directory");
    // The Secret's two keys, as the controller writes them: `tokenFile: token` is relative.
    let kubeconfig = server.kubeconfig_yaml_with_token(&token).replace(
        &format!("{{token: {}}}", token.expose()),
        "{tokenFile: token}",
    );
    assert!(kubeconfig.contains("tokenFile: token"), "{kubeconfig}");
    std::fs::write(dir.path().join("kubeconfig"), kubeconfig).expect("write");
    std::fs::write(dir.path().join("token"), token.expose()).expect("write");
    let client = runtime
        .block_on(bluegreen_gate_jni::client(Some(
            &dir.path().join("kubeconfig"),
        )))
        .expect("a client from the home kubeconfig");
    let api: Api<ConfigMap> = Api::namespaced(client, NS);
    runtime
        .block_on(api.list(&kube::api::ListParams::default()))
        .expect("the token from the file is used");
    let missing = runtime.block_on(bluegreen_gate_jni::client(Some(&dir.path().join("absent"))));
    assert!(
        matches!(&missing, Err(Error::HomeKubeconfig { path, .. }) if path.ends_with("absent")),
        "{:?}",
        missing.err()
    );
}
