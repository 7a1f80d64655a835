//! `kubectl` (1.32) against the local API server: get, apply (client- and server-side, built-in
//! kinds and custom resources), delete, `get -w`, `create` (protobuf bodies), `explain`, and
//! the install base (`kustomize`, `apply -k deploy/`, its RBAC against deploy/api-calls.yaml).
//!
//! These tests need `kubectl` on PATH and fail (they do not skip) when it is missing.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bluegreen_local_apiserver::{LocalApiServer, Options};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde::Deserialize;
use serde_json::{Value, json};

fn kubectl_path() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("kubectl not found on PATH: these tests need kubectl 1.32 (apt package kubectl or the upstream binary)"))
}

/// Runs kubectl with the server's kubeconfig; returns stdout, panicking with stderr on failure.
async fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<String>) -> String {
    let kubeconfig = kubeconfig.to_path_buf();
    let args: Vec<String> = args.iter().map(|s| (*s).to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let mut child = Command::new(kubectl_path())
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kubectl");
        if let Some(input) = stdin {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(input.as_bytes())
                .expect("write stdin");
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().expect("kubectl output");
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    })
    .await
    .expect("join")
}

async fn start() -> (LocalApiServer, tempfile::TempDir, PathBuf) {
    let server = LocalApiServer::start(Options::default())
        .await
        .expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig_yaml()).expect("kubeconfig");
    (server, dir, kubeconfig)
}

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one kubectl session, step by step")]
async fn kubectl_get_apply_delete() {
    let (server, _dir, kc) = start().await;
    let client = server.client();
    assert!(
        kubectl(&kc, &["get", "namespaces"], None)
            .await
            .contains("default")
    );
    kubectl(&kc, &["get", "configmaps"], None).await;
    // Plain `--server`, no kubeconfig at all.
    let bare = tokio::task::spawn_blocking({
        let url = server.url();
        move || {
            Command::new(kubectl_path())
                .env("KUBECONFIG", "/dev/null")
                .args(["--server", &url, "get", "configmaps", "--all-namespaces"])
                .output()
                .expect("kubectl --server")
        }
    })
    .await
    .expect("join");
    assert!(
        bare.status.success(),
        "kubectl --server: {}",
        String::from_utf8_lossy(&bare.stderr)
    );

    let cm = |v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  key: \"{v}\"\n")
    };
    assert!(
        kubectl(&kc, &["apply", "-f", "-"], Some(cm("1")))
            .await
            .contains("configmap/demo created")
    );
    assert!(
        kubectl(&kc, &["apply", "-f", "-"], Some(cm("2")))
            .await
            .contains("configmap/demo configured")
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        cms.get("demo").await.expect("demo").data.expect("data")["key"],
        "2"
    );
    let table = kubectl(&kc, &["get", "configmaps"], None).await;
    assert!(table.contains("NAME") && table.contains("demo"), "{table}");
    let json_out: Value = serde_json::from_str(
        &kubectl(&kc, &["get", "configmap", "demo", "-o", "json"], None).await,
    )
    .expect("json");
    assert_eq!(json_out["data"]["key"], "2");
    assert!(
        kubectl(&kc, &["apply", "--server-side", "-f", "-"], Some(cm("3")))
            .await
            .contains("serverside-applied")
    );
    assert_eq!(
        cms.get("demo").await.expect("demo").data.expect("data")["key"],
        "3"
    );

    assert!(
        kubectl(&kc, &["apply", "-f", "-"], Some(WIDGET_CRD.to_string()))
            .await
            .contains("created")
    );
    let widget = |size: u32| {
        format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: {size}\n"
        )
    };
    assert!(
        kubectl(&kc, &["apply", "-f", "-"], Some(widget(3)))
            .await
            .contains("widget.example.com/w1 created")
    );
    assert!(
        kubectl(&kc, &["apply", "-f", "-"], Some(widget(4)))
            .await
            .contains("widget.example.com/w1 configured")
    );
    let listed = kubectl(&kc, &["get", "wd"], None).await;
    assert!(listed.contains("SIZE") && listed.contains('4'), "{listed}");
    assert!(
        kubectl(&kc, &["apply", "--server-side", "-f", "-"], Some(widget(5)))
            .await
            .contains("serverside-applied")
    );
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    assert_eq!(widgets.get("w1").await.expect("w1").data["spec"]["size"], 5);
    // Printer columns as Kubernetes renders them: exactly the CRD's (one AGE, from the CRD),
    // a JSONPath filter picks the Ready condition's status.
    widgets
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [
                {"type": "Progressing", "status": "False"},
                {"type": "Ready", "status": "True"},
            ]}})),
        )
        .await
        .expect("status");
    let listed = kubectl(&kc, &["get", "wd"], None).await;
    let mut lines = listed.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "SIZE", "READY", "AGE"], "{listed}");
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row[..3], ["w1", "5", "True"], "{listed}");

    assert!(
        kubectl(&kc, &["delete", "configmap", "demo"], None)
            .await
            .contains("deleted")
    );
    assert!(cms.get_opt("demo").await.expect("get").is_none());
    assert!(
        kubectl(&kc, &["delete", "-f", "-"], Some(widget(5)))
            .await
            .contains("deleted")
    );
    assert!(widgets.get_opt("w1").await.expect("get").is_none());
    server.shutdown().await;
}

/// Waits for a line starting with `prefix`.
async fn expect(rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>, prefix: &str) -> String {
    let fut = async {
        loop {
            let line = rx.recv().await.expect("kubectl still running");
            if line.starts_with(prefix) {
                return line;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .unwrap_or_else(|_| panic!("no {prefix} line from kubectl get -w in time"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_watch_streams_events() {
    let (server, _dir, kc) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let seed: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "seed"}})).expect("cm");
    cms.create(&PostParams::default(), &seed)
        .await
        .expect("seed");
    let mut child = Command::new(kubectl_path())
        .arg("--kubeconfig")
        .arg(&kc)
        .args(["get", "configmaps", "--watch", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn kubectl get -w");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // kubectl lists first (the seed shows as ADDED), then watches from the list's resourceVersion.
    assert!(expect(&mut rx, "ADDED").await.contains("seed"));
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "watched"}, "data": {"a": "1"}}))
            .expect("cm");
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("create");
    assert!(expect(&mut rx, "ADDED").await.contains("watched"));
    cms.patch(
        "watched",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"b": "2"}})),
    )
    .await
    .expect("patch");
    assert!(expect(&mut rx, "MODIFIED").await.contains("watched"));
    cms.delete("watched", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(expect(&mut rx, "DELETED").await.contains("watched"));
    let _ = child.kill();
    let _ = child.wait();
    server.shutdown().await;
}

/// `kubectl create` sends protobuf bodies for built-in kinds; the server decodes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_sends_protobuf() {
    let (server, _dir, kc) = start().await;
    let client = server.client();
    assert!(
        kubectl(&kc, &["create", "namespace", "team-a"], None)
            .await
            .contains("namespace/team-a created")
    );
    let out = kubectl(
        &kc,
        &[
            "create",
            "configmap",
            "settings",
            "-n",
            "team-a",
            "--from-literal=mode=blue",
        ],
        None,
    )
    .await;
    assert!(out.contains("configmap/settings created"), "{out}");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    assert_eq!(
        cms.get("settings")
            .await
            .expect("settings")
            .data
            .expect("data")["mode"],
        "blue"
    );
    let out = kubectl(
        &kc,
        &[
            "create",
            "secret",
            "generic",
            "token",
            "-n",
            "team-a",
            "--from-literal=t=s3cret",
        ],
        None,
    )
    .await;
    assert!(out.contains("secret/token created"), "{out}");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "team-a");
    let secret = secrets.get("token").await.expect("token");
    assert_eq!(secret.data.expect("data")["t"].0, b"s3cret");
    assert_eq!(secret.type_.as_deref(), Some("Opaque"), "type defaulted");
    assert!(
        kubectl(
            &kc,
            &["create", "serviceaccount", "runner", "-n", "team-a"],
            None
        )
        .await
        .contains("serviceaccount/runner created")
    );
    server.shutdown().await;
}

/// An event recorded through events.k8s.io/v1 (as the controller does) is what `kubectl get
/// events --field-selector involvedObject.name=...` and `kubectl describe` show.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_sees_events_recorded_through_events_api() {
    let (server, _dir, kc) = start().await;
    let client = server.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let subject = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "subject"}})).expect("cm"),
        )
        .await
        .expect("subject");
    let recorder = kube::runtime::events::Recorder::new(
        client,
        kube::runtime::events::Reporter {
            controller: "bluegreen-controller".into(),
            instance: None,
        },
    );
    recorder
        .publish(
            &kube::runtime::events::Event {
                type_: kube::runtime::events::EventType::Normal,
                reason: "HandoverStarted".into(),
                note: Some("green starts from blue's savepoint".into()),
                action: "Handover".into(),
                secondary: None,
            },
            &kube::Resource::object_ref(&subject, &()),
        )
        .await
        .expect("publish");
    let out = kubectl(
        &kc,
        &[
            "get",
            "events",
            "-n",
            "default",
            "--field-selector",
            "involvedObject.name=subject",
        ],
        None,
    )
    .await;
    assert!(
        out.contains("HandoverStarted") && out.contains("green starts from blue's savepoint"),
        "{out}"
    );
    let described = kubectl(&kc, &["describe", "configmap", "subject"], None).await;
    assert!(
        described.contains("HandoverStarted") && !described.contains("Events:  <none>"),
        "{described}"
    );
    server.shutdown().await;
}

/// `kubectl auth can-i` and `kubectl auth whoami` (protobuf bodies) work; without
/// authentication every request is allowed and the user is `system:anonymous`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_can_i_and_whoami() {
    let (server, _dir, kc) = start().await;
    let can_i = kubectl(&kc, &["auth", "can-i", "create", "configmaps"], None).await;
    assert_eq!(can_i.trim(), "yes");
    let path = kubectl(&kc, &["auth", "can-i", "get", "/healthz"], None).await;
    assert_eq!(path.trim(), "yes");
    let whoami = kubectl(&kc, &["auth", "whoami", "-o", "json"], None).await;
    let review: Value = serde_json::from_str(&whoami).expect("json");
    assert_eq!(review["status"]["userInfo"]["username"], "system:anonymous");
    server.shutdown().await;
}

/// `kubectl apply -f` of a `kind: List` (built-in kinds and a custom resource): kubectl
/// validates each item against `/openapi/v2`, then applies them one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_of_a_list() {
    let (server, _dir, kc) = start().await;
    server.apply_crd(WIDGET_CRD).expect("crd");
    let list = |value: &str| {
        format!(
            "apiVersion: v1\nkind: List\nitems:\n\
             - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: a, namespace: default}}, data: {{k: {value}}}}}\n\
             - {{apiVersion: example.com/v1, kind: Widget, metadata: {{name: w, namespace: default}}, spec: {{size: 1}}}}\n"
        )
    };
    let out = kubectl(&kc, &["apply", "-f", "-"], Some(list("v"))).await;
    assert!(
        out.contains("configmap/a created") && out.contains("widget.example.com/w created"),
        "{out}"
    );
    let out = kubectl(&kc, &["apply", "-f", "-"], Some(list("w"))).await;
    assert!(out.contains("configmap/a configured"), "{out}");
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    assert_eq!(cms.get("a").await.expect("a").data.expect("data")["k"], "w");
    server.shutdown().await;
}

/// `kubectl explain` finds a custom resource's schema by its group-version-kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explain_custom_resource() {
    let (server, _dir, kc) = start().await;
    server
        .apply_crd(include_str!("../../deploy/crd.yaml"))
        .expect("crd");
    let out = kubectl(&kc, &["explain", "fbgd"], None).await;
    assert!(
        out.contains("KIND:") && out.contains("FlinkBlueGreenDeployment"),
        "{out}"
    );
    assert!(out.contains("bluegreen.dev"), "{out}");
    let spec = kubectl(&kc, &["explain", "fbgd.spec"], None).await;
    assert!(spec.contains("FIELDS:"), "{spec}");
    let widget = kubectl(&kc, &["apply", "-f", "-"], Some(WIDGET_CRD.to_string())).await;
    assert!(widget.contains("created"), "{widget}");
    let size = kubectl(&kc, &["explain", "widgets.spec.size"], None).await;
    assert!(size.contains("integer"), "{size}");
    server.shutdown().await;
}

/// The install base: `kubectl kustomize deploy/` renders it and `kubectl apply -k deploy/`
/// creates every object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_kustomize_base() {
    let (server, _dir, kc) = start().await;
    let deploy = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy");
    let rendered = kubectl(&kc, &["kustomize", deploy], None).await;
    let kinds: Vec<String> = serde_yaml::Deserializer::from_str(&rendered)
        .map(|doc| {
            let v = Value::deserialize(doc).expect("yaml document");
            format!(
                "{}/{}",
                v["kind"].as_str().expect("kind"),
                v["metadata"]["name"].as_str().expect("name")
            )
        })
        .collect();
    for want in [
        "Namespace/bluegreen-system",
        "CustomResourceDefinition/flinkbluegreendeployments.bluegreen.dev",
        "ServiceAccount/bluegreen-controller",
        "ClusterRole/bluegreen-controller",
        "ClusterRoleBinding/bluegreen-controller",
        "Role/bluegreen-controller-lease",
        "RoleBinding/bluegreen-controller-lease",
        "Deployment/bluegreen-controller",
    ] {
        assert!(
            kinds.iter().any(|k| k == want),
            "{want} not rendered: {kinds:?}"
        );
    }
    let applied = kubectl(&kc, &["apply", "-k", deploy], None).await;
    assert!(
        applied.contains("deployment.apps/bluegreen-controller created"),
        "{applied}"
    );
    // Applying again changes nothing.
    let again = kubectl(&kc, &["apply", "-k", deploy], None).await;
    assert!(
        again.contains("deployment.apps/bluegreen-controller unchanged"),
        "{again}"
    );
    let deployment = kubectl(
        &kc,
        &[
            "get",
            "deployment",
            "bluegreen-controller",
            "-n",
            "bluegreen-system",
            "-o",
            "json",
        ],
        None,
    )
    .await;
    let deployment: Value = serde_json::from_str(&deployment).expect("json");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["serviceAccountName"],
        "bluegreen-controller"
    );
    assert_eq!(
        deployment["metadata"]["labels"]["app.kubernetes.io/part-of"],
        "bluegreen"
    );
    // The CRD is served: the short name resolves.
    kubectl(&kc, &["get", "fbgd", "-A"], None).await;
    server.shutdown().await;
}

/// One entry of `deploy/api-calls.yaml`.
#[derive(serde::Deserialize)]
struct ApiCall {
    group: String,
    resource: String,
    scope: String,
    verbs: std::collections::BTreeMap<String, String>,
}

#[derive(serde::Deserialize)]
struct ApiCalls {
    calls: Vec<ApiCall>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyRule {
    api_groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
}

/// `(scope, group, resource, verb)`.
type Grant = (String, String, String, String);

/// The controller's RBAC grants exactly what `deploy/api-calls.yaml` lists.
#[test]
fn rbac_matches_the_list_of_api_calls() {
    let calls: ApiCalls =
        serde_yaml::from_str(include_str!("../../deploy/api-calls.yaml")).expect("api-calls.yaml");
    let wanted: std::collections::BTreeSet<Grant> = calls
        .calls
        .iter()
        .flat_map(|c| {
            c.verbs.keys().map(|verb| {
                (
                    c.scope.clone(),
                    c.group.clone(),
                    c.resource.clone(),
                    verb.clone(),
                )
            })
        })
        .collect();
    let mut granted = std::collections::BTreeSet::<Grant>::new();
    for doc in serde_yaml::Deserializer::from_str(include_str!("../../deploy/rbac.yaml")) {
        let v = Value::deserialize(doc).expect("rbac.yaml document");
        let scope = match v["kind"].as_str() {
            Some("ClusterRole")
                if v["metadata"]["name"] == "bluegreen-controller-kubeconfig-secrets" =>
            {
                "bound-per-namespace"
            }
            Some("ClusterRole") => "cluster",
            Some("Role") => "lease-namespace",
            _ => continue,
        };
        let rules: Vec<PolicyRule> = serde_json::from_value(v["rules"].clone()).expect("rules");
        for r in rules {
            for g in &r.api_groups {
                for res in &r.resources {
                    for verb in &r.verbs {
                        granted.insert((scope.into(), g.clone(), res.clone(), verb.clone()));
                    }
                }
            }
        }
    }
    let extra: Vec<_> = granted.difference(&wanted).collect();
    let missing: Vec<_> = wanted.difference(&granted).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "deploy/rbac.yaml and deploy/api-calls.yaml disagree: granted but not called {extra:?}; called but not granted {missing:?}"
    );
}
