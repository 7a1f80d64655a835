//! `kubectl-bluegreen` against the local API server: one test per subcommand. No controller
//! runs; the tests write the resource's status through the status subresource, and its
//! children and ConfigMap as plain objects.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use bluegreen_controller::resource::FlinkBlueGreenDeployment;
use bluegreen_local_apiserver::{LocalApiServer, Options};
use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle, configmap_name};
use kube::CustomResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use serde_json::{Value, json};

const FLINK_CRD: &str =
    include_str!("../../local-flink/crds/flinkdeployments.flink.apache.org-v1.yml");

struct Fixture {
    server: LocalApiServer,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

fn fbgd_resource() -> ApiResource {
    ApiResource::erase::<FlinkBlueGreenDeployment>(&())
}

impl Fixture {
    /// A server with both CRDs and `demo` in `default`: blue active and running at epoch 1,
    /// one promoted handover in its history, Ready.
    async fn start() -> Self {
        let server = LocalApiServer::start(Options::default())
            .await
            .expect("server");
        // The CRD of a newer controller: a status field and handover phases this plugin's
        // types do not know.
        let mut crd = serde_json::to_value(FlinkBlueGreenDeployment::crd()).expect("crd");
        let status = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
            ["properties"];
        status["newerField"] = json!({"type": "string"});
        status["transition"]["properties"]["phase"] = json!({"type": "string"});
        server.apply_object(&crd).expect("fbgd crd");
        server.apply_crd(FLINK_CRD).expect("flink crd");
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, server.kubeconfig_yaml()).expect("kubeconfig");
        let f = Self {
            server,
            _dir: dir,
            kubeconfig,
        };
        f.create("default", "demo").await;
        f
    }

    fn api(&self, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.server.client(), ns, &fbgd_resource())
    }

    async fn create(&self, ns: &str, name: &str) {
        self.server.ensure_namespace(ns).expect("namespace");
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "bluegreen.dev/v1alpha1", "kind": "FlinkBlueGreenDeployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"template": {"spec": {"image": "flink:1.20", "flinkVersion": "v1_20",
                "job": {"jarURI": "local:///job.jar", "parallelism": 2}}}},
        }))
        .expect("object");
        self.api(ns)
            .create(&PostParams::default(), &obj)
            .await
            .expect("create fbgd");
        self.set_status(ns, name, &healthy_status()).await;
        for (color, state) in [("blue", "RUNNING"), ("green", "FINISHED")] {
            self.server
                .apply_yaml(&format!(
                    "apiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\nmetadata:\n  name: {name}-{color}\n  namespace: {ns}\n  labels: {{bluegreen.dev/deployment: {name}}}\nspec:\n  image: flink:1.20\n  flinkVersion: v1_20\n  job: {{jarURI: 'local:///job.jar', parallelism: 2}}\n"
                ))
                .expect("child");
            let children: Api<DynamicObject> = Api::namespaced_with(
                self.server.client(),
                ns,
                &bluegreen_controller::context::flink_deployment_resource(),
            );
            children
                .patch_status(
                    &format!("{name}-{color}"),
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"lifecycleState": "STABLE",
                        "jobStatus": {"state": state, "jobId": format!("j-{color}")}}})),
                )
                .await
                .expect("child status");
        }
        self.set_configmap(ns, name, Stage::Running, Toggle::NotSet, 1);
    }

    fn set_configmap(&self, ns: &str, name: &str, stage: Stage, toggle: Toggle, epoch: u64) {
        let coordination = CoordinationState {
            active: Color::Blue,
            deletion_delay_ms: 0,
            stage,
            toggle,
            epoch,
            floor: None,
        };
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": configmap_name(name), "namespace": ns},
            "data": coordination.to_data()});
        self.server.apply_object(&cm).expect("configmap");
    }

    async fn set_status(&self, ns: &str, name: &str, status: &Value) {
        // Replace the whole status (a merge patch would keep old list entries and keys).
        let mut obj = self.api(ns).get_status(name).await.expect("get");
        obj.data["status"] = status.clone();
        self.api(ns)
            .replace_status(name, &PostParams::default(), &obj)
            .await
            .expect("status");
    }

    /// Runs the plugin off the async runtime and returns (exit code, stdout, stderr).
    async fn run(&self, args: &[&str]) -> (i32, String, String) {
        let kubeconfig = self.kubeconfig.clone();
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        let out = tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_kubectl-bluegreen"))
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .args(&args)
                .output()
                .expect("run kubectl-bluegreen")
        })
        .await
        .expect("join");
        (
            out.status.code().expect("exit code"),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1})
}

fn promoted() -> Value {
    json!({"epoch": 1, "from": "GREEN", "to": "BLUE", "toggle": 1_767_225_600_000_i64,
        "outcome": "Promoted", "startedAt": "2026-01-01T00:00:00Z",
        "finishedAt": "2026-01-01T00:02:00Z", "durationSeconds": 120.0})
}

/// Blue active at epoch 1, Ready, one promoted handover; `newerField` stands for a field a
/// newer controller writes and this plugin does not know.
fn healthy_status() -> Value {
    json!({
        "activeColor": "BLUE", "stage": "RUNNING", "epoch": 1, "observedGeneration": 1,
        "deployedTemplateHash": "h1", "floor": 1_767_225_600_000_i64,
        "conditions": [
            condition("Ready", "True", "Running", "the active job is running"),
            condition("Progressing", "False", "Idle", "nothing to do"),
            condition("Degraded", "False", "Healthy", "no problem"),
        ],
        "history": [promoted()],
        "newerField": "written by a newer controller",
    })
}

/// A handover BLUE → GREEN in `phase` with W proposed.
fn handover_status(phase: &str) -> Value {
    let mut s = healthy_status();
    s["stage"] = json!("TRANSITIONING");
    s["epoch"] = json!(2);
    s["transition"] = json!({"from": "BLUE", "to": "GREEN", "epoch": 2, "templateHash": "h2",
        "generation": 1, "phase": phase, "toggle": 1_767_225_660_000_i64,
        "startedAt": "2026-01-01T01:00:00Z", "phaseStartedAt": "2026-01-01T01:00:10Z"});
    s["conditions"][0] = condition(
        "Ready",
        "False",
        "HandoverInProgress",
        "handover in phase ToggleSet",
    );
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_draws_the_tree_and_prints_objects() {
    let f = Fixture::start().await;
    let (code, tree, err) = f.run(&["get", "demo"]).await;
    assert_eq!(code, 0, "{err}");
    for needle in [
        "Active:     BLUE",
        "Floor:      1767225600000",
        "├── FlinkDeployment demo-blue (active)  job RUNNING  lifecycle STABLE  parallelism 2",
        "├── FlinkDeployment demo-green  job FINISHED",
        "└── ConfigMap demo-bluegreen  stage RUNNING  epoch 1  W not set",
        "Ready",
        "Verdict:    Healthy",
        // A status field this plugin does not know is shown, not dropped.
        "newerField: written by a newer controller",
        "Promoted",
    ] {
        assert!(tree.contains(needle), "missing {needle:?} in\n{tree}");
    }
    f.set_status("default", "demo", &handover_status("ToggleSet"))
        .await;
    f.set_configmap(
        "default",
        "demo",
        Stage::Transitioning,
        Toggle::Set(1_767_225_660_000),
        2,
    );
    let (_, tree, _) = f.run(&["get", "demo"]).await;
    for needle in [
        "Handover:   BLUE -> GREEN  phase ToggleSet  W 1767225660000",
        "demo-blue (outgoing)",
        "demo-green (incoming)",
        "stage TRANSITIONING  epoch 2  W 1767225660000 (set)",
    ] {
        assert!(tree.contains(needle), "missing {needle:?} in\n{tree}");
    }
    let (code, json_out, _) = f.run(&["get", "demo", "-o", "json"]).await;
    assert_eq!(code, 0);
    let list: Value = serde_json::from_str(&json_out).expect("json");
    let kinds: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(
        kinds,
        [
            "FlinkBlueGreenDeployment",
            "FlinkDeployment",
            "FlinkDeployment",
            "ConfigMap"
        ]
    );
    assert_eq!(
        list["items"][0]["status"]["newerField"],
        "written by a newer controller"
    );
    let (code, _, err) = f.run(&["get", "missing"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("default/missing not found"), "{err}");
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_exit_codes() {
    let f = Fixture::start().await;
    let (code, out, err) = f.run(&["status", "demo"]).await;
    assert_eq!((code, out.trim()), (0, "default/demo: healthy"), "{err}");

    f.set_status("default", "demo", &handover_status("ToggleSet"))
        .await;
    let started = Instant::now();
    let (code, out, _) = f.run(&["status", "demo", "--timeout", "1s"]).await;
    assert_eq!(code, 5, "{out}");
    assert!(
        out.contains("timed out") && out.contains("ToggleSet"),
        "{out}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // Waiting, then healthy once the handover finishes.
    let waiting = tokio::spawn({
        let kubeconfig = f.kubeconfig.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                Command::new(env!("CARGO_BIN_EXE_kubectl-bluegreen"))
                    .arg("--kubeconfig")
                    .arg(&kubeconfig)
                    .args(["status", "demo", "--timeout", "30s"])
                    .output()
                    .expect("run")
            })
            .await
            .expect("join")
        }
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    let mut done = healthy_status();
    done["activeColor"] = json!("GREEN");
    f.set_status("default", "demo", &done).await;
    let out = waiting.await.expect("status");
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    let mut degraded = healthy_status();
    degraded["conditions"][0] = condition("Ready", "False", "NotReady", "the active job failed");
    degraded["conditions"][2] =
        condition("Degraded", "True", "ActiveJobFailed", "restarts exhausted");
    f.set_status("default", "demo", &degraded).await;
    let (code, out, _) = f.run(&["status", "demo"]).await;
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("ActiveJobFailed: restarts exhausted"), "{out}");

    f.set_status("default", "demo", &handover_status("Aborting"))
        .await;
    assert_eq!(f.run(&["status", "demo"]).await.0, 4);
    let mut aborted = healthy_status();
    aborted["failedTemplateHash"] = json!("h2");
    aborted["history"] = json!([{"epoch": 2, "from": "BLUE", "to": "GREEN", "outcome": "Aborted",
        "reason": "DeployTimeout: green not RUNNING after 10m", "startedAt": "2026-01-01T01:00:00Z",
        "finishedAt": "2026-01-01T01:10:00Z", "durationSeconds": 600.0}, promoted()]);
    f.set_status("default", "demo", &aborted).await;
    let (code, out, _) = f.run(&["status", "demo"]).await;
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("DeployTimeout"), "{out}");

    // The controller has not seen the latest spec yet: not healthy, whatever the status says.
    f.set_status("default", "demo", &healthy_status()).await;
    f.api("default")
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"job": {"parallelism": 3}}}}})),
        )
        .await
        .expect("spec");
    let (code, out, _) = f.run(&["status", "demo", "--timeout", "1s"]).await;
    assert_eq!(code, 5, "{out}");
    assert!(out.contains("generation 2"), "{out}");

    // A phase a newer controller added: judged by the conditions and the handover's presence.
    let mut newer = handover_status("Stopping");
    newer["observedGeneration"] = json!(2);
    f.set_status("default", "demo", &newer).await;
    let (code, out, _) = f.run(&["status", "demo", "--timeout", "1s"]).await;
    assert_eq!(code, 5, "{out}");
    assert!(out.contains("a handover is in progress"), "{out}");
    newer["conditions"][2] = condition(
        "Degraded",
        "True",
        "StopFailed",
        "stop-with-savepoint failed",
    );
    f.set_status("default", "demo", &newer).await;
    let (code, out, _) = f.run(&["status", "demo"]).await;
    assert_eq!(code, 3, "{out}");
    let (code, tree, _) = f.run(&["get", "demo"]).await;
    assert_eq!(code, 0);
    assert!(
        tree.contains("Status:     unreadable by this plugin version"),
        "{tree}"
    );
    assert!(
        tree.contains("├── FlinkDeployment demo-blue  job RUNNING"),
        "{tree}"
    );

    assert_eq!(f.run(&["status", "missing"]).await.0, 1);
    let (code, _, err) = f.run(&["status", "demo", "--timeout", "soon"]).await;
    assert_eq!(code, 2, "bad usage: {err}");
    assert!(err.contains("--timeout \"soon\""), "{err}");
    assert_eq!(f.run(&["status"]).await.0, 2);
    f.server.shutdown().await;
}

async fn action_of(f: &Fixture) -> Option<String> {
    f.api("default")
        .get("demo")
        .await
        .expect("get")
        .metadata
        .annotations
        .and_then(|a| a.get("bluegreen.dev/action").cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_actions_set_the_annotation() {
    let f = Fixture::start().await;
    for action in ["promote", "abort", "teardown", "clear-floor"] {
        let (code, out, err) = f.run(&[action, "demo"]).await;
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(&format!("{action} requested")), "{out}");
        assert_eq!(action_of(&f).await.as_deref(), Some(action));
    }
    let (code, _, err) = f.run(&["promote", "missing"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("not found"), "{err}");
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_lists_finished_handovers() {
    let f = Fixture::start().await;
    let (code, table, _) = f.run(&["history", "demo"]).await;
    assert_eq!(code, 0);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("EPOCH  FROM   TO    OUTCOME"),
        "{table}"
    );
    assert!(
        lines[1].contains("GREEN  BLUE  Promoted  1767225600000  120s"),
        "{table}"
    );
    let (_, yaml, _) = f.run(&["history", "demo", "-o", "yaml"]).await;
    let records: Vec<Value> = serde_yaml::from_str(&yaml).expect("yaml");
    assert_eq!(records, vec![promoted()]);
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_in_namespace_and_all() {
    let f = Fixture::start().await;
    f.create("team-a", "orders").await;
    let (_, table, _) = f.run(&["list"]).await;
    assert!(table.starts_with("NAME  ACTIVE"), "{table}");
    assert!(
        table.contains("demo") && !table.contains("orders"),
        "{table}"
    );
    let (_, table, _) = f.run(&["list", "-n", "team-a"]).await;
    assert!(
        table.contains("orders") && !table.contains("demo"),
        "{table}"
    );
    let (_, table, _) = f.run(&["list", "-A"]).await;
    assert!(table.starts_with("NAMESPACE"), "{table}");
    assert!(table.contains("team-a") && table.contains("orders") && table.contains("demo"));
    assert!(table.contains("Healthy"), "{table}");
    let (_, json_out, _) = f.run(&["list", "-A", "-o", "json"]).await;
    let list: Value = serde_json::from_str(&json_out).expect("json");
    assert_eq!(list["items"].as_array().expect("items").len(), 2);
    f.server.shutdown().await;
}

fn tmux(args: &[&str]) -> Output {
    Command::new("tmux").args(args).output().expect("tmux")
}

fn screen(session: &str) -> String {
    String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", session]).stdout).into_owned()
}

async fn wait_screen(session: &str, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = screen(session);
        if s.contains(needle) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{needle:?} never appeared; screen:\n{s}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `get -w` in a real terminal: the screen is redrawn after a status patch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_watch_redraws_in_a_terminal() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!(
            "SKIPPED get_watch_redraws_in_a_terminal: tmux is not installed (apt-get install -y tmux)"
        );
        return;
    }
    let f = Fixture::start().await;
    let session = format!("bluegreen-plugin-{}", std::process::id());
    let command = format!(
        "{} --kubeconfig {} get demo -w",
        env!("CARGO_BIN_EXE_kubectl-bluegreen"),
        f.kubeconfig.display()
    );
    let started = tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "200",
        "-y",
        "50",
        &command,
    ]);
    assert!(started.status.success(), "tmux: {started:?}");
    let first = wait_screen(&session, "Verdict:    Healthy").await;
    assert!(first.contains("Handover:   none"), "{first}");
    f.set_status("default", "demo", &handover_status("ConfirmingToggle"))
        .await;
    let second = wait_screen(&session, "phase ConfirmingToggle").await;
    assert!(second.contains("demo-green (incoming)"), "{second}");
    assert!(
        !second.contains("Handover:   none"),
        "old frame left on screen:\n{second}"
    );
    f.set_configmap(
        "default",
        "demo",
        Stage::Transitioning,
        Toggle::Proposed(1_767_225_660_000),
        2,
    );
    wait_screen(&session, "W 1767225660000 (proposed)").await;
    tmux(&["send-keys", "-t", &session, "C-c"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _ = tmux(&["kill-session", "-t", &session]);
    f.server.shutdown().await;
}

/// A suspended job is reported as suspended (exit 6), not healthy nor progressing; a long
/// condition message reaches the user whole, in `status` and in `get`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspended_jobs_and_long_messages_are_reported_whole() {
    let f = Fixture::start().await;
    let mut suspended = healthy_status();
    suspended["conditions"][0] = condition(
        "Ready",
        "False",
        "Suspended",
        "the job is suspended (spec.template.spec.job.state: suspended)",
    );
    f.set_status("default", "demo", &suspended).await;
    let (code, out, err) = f.run(&["status", "demo"]).await;
    assert_eq!(code, 6, "{out}{err}");
    assert!(
        out.contains("default/demo: suspended: the job is suspended"),
        "{out}"
    );
    let (code, tree, _) = f.run(&["get", "demo"]).await;
    assert_eq!(code, 0);
    assert!(
        tree.contains("Verdict:    Suspended (the job is suspended"),
        "{tree}"
    );
    let (_, list, _) = f.run(&["list"]).await;
    assert!(list.contains("Suspended"), "{list}");

    // The refusal of an unsafe sink, as the launcher words it: over 1000 characters.
    let refusal = format!(
        "the job could not be submitted: {} <- java.lang.IllegalArgumentException: FileSink rolling policy ... Use .withRollingPolicy(OnCheckpointRollingPolicy.build()), or BlueGreenSinks.rollOnCheckpoint(policy) to keep size/time rolls as well",
        "org.apache.flink.client.program.ProgramInvocationException: The main method caused an error. ".repeat(12)
    );
    assert!(refusal.len() > 1200);
    let mut failed = healthy_status();
    failed["conditions"][0] = condition("Ready", "False", "NotReady", &refusal);
    failed["conditions"][2] = condition("Degraded", "True", "FirstDeploymentFailed", &refusal);
    f.set_status("default", "demo", &failed).await;
    let (code, out, _) = f.run(&["status", "demo"]).await;
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains(&format!("FirstDeploymentFailed: {refusal}")),
        "{out}"
    );
    let (_, tree, _) = f.run(&["get", "demo"]).await;
    assert!(
        tree.contains(&format!("Degraded (FirstDeploymentFailed: {refusal})")),
        "{tree}"
    );
    f.server.shutdown().await;
}

#[test]
fn help_documents_exit_codes() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-bluegreen"))
        .arg("--help")
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("3 degraded") && help.contains("5 timeout") && help.contains("6 suspended"),
        "{help}"
    );
}

/// A `--timeout` that is not a duration is bad usage (exit 2, as `--help` says), refused before
/// any connection is made.
#[test]
fn bad_timeout_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-bluegreen"))
        .args([
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "status",
            "orders",
            "--timeout",
            "abc",
        ])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not a duration"), "{stderr}");
}
