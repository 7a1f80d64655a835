//! Real mode on real Flink 1.20: FlinkDeployments run as MiniCluster JVMs (the launcher of
//! `local-flink/launcher`, built by Maven into `target/launcher/`), with their REST APIs behind the
//! runner's proxy and a real `bluegreen-sidecar` each. The test job is
//! `local-flink/launcher/src/test/java/.../CountingJob.java`: it exports `firstSequence` (0 on a fresh
//! start, the resume position after a restore) and `stateMismatches` (keyed counts that do not
//! match the source position), which tell restored state from a fresh start.
//!
//! Skipped, with a message, when `java`/`javac` are missing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bluegreen_local_apiserver::{LocalApiServer, Options};
use bluegreen_local_flink::DeploymentRef;
use bluegreen_local_flink::crd::{flink_deployment_resource, install_flink_deployment_crd};
use bluegreen_local_flink::real::{FlinkLine, RealFlink, RealFlinkOptions};
use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde::Deserialize;
use serde_json::{Value, json};

const NS: &str = "default";
/// Bound on a JVM coming up (2 shared cores, several JVMs at once).
const START: Duration = Duration::from_secs(150);
/// Bound on everything else.
const BOUND: Duration = Duration::from_mins(1);

/// Paths the runner needs, built once per test binary; `None` when there is no JDK.
struct Built {
    flink_lib: PathBuf,
    launcher_jar: PathBuf,
    test_job_jar: PathBuf,
    sidecar: PathBuf,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run a build step");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .trim()
        .to_owned()
}

fn built() -> Option<&'static Built> {
    static BUILT: OnceLock<Option<Built>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            for tool in ["java", "javac"] {
                if Command::new(tool).arg("-version").output().is_err() {
                    eprintln!("SKIPPED: `{tool}` not found; real mode needs a JDK 17");
                    return None;
                }
            }
            let root = root();
            run(Command::new("mvn")
                .args([
                    "-B",
                    "-q",
                    "package",
                    "-DskipTests",
                    "-pl",
                    "local-flink/launcher",
                ])
                .current_dir(&root));
            let launcher_jar = root.join("target/launcher/bluegreen-launcher.jar");
            let flink_lib =
                PathBuf::from(run(&mut Command::new(root.join("scripts/flink-jars.sh"))));
            run(Command::new(env!("CARGO"))
                .args([
                    "build",
                    "-p",
                    "bluegreen-sidecar",
                    "--bin",
                    "bluegreen-sidecar",
                ])
                .current_dir(&root));
            Some(Built {
                test_job_jar: launcher_jar.with_file_name("bluegreen-launcher-test-job.jar"),
                flink_lib,
                launcher_jar,
                sidecar: root.join("target/debug/bluegreen-sidecar"),
            })
        })
        .as_ref()
}

struct Fixture {
    server: LocalApiServer,
    flink: RealFlink,
    api: Api<DynamicObject>,
    http: reqwest::Client,
    /// Kept when `BLUEGREEN_KEEP_WORK_DIR` is set (logs of every run).
    _dir: Option<tempfile::TempDir>,
}

async fn fixture() -> Option<Fixture> {
    let built = built()?;
    let server = LocalApiServer::start(Options::default())
        .await
        .expect("API server");
    install_flink_deployment_crd(&server).expect("CRD");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = RealFlinkOptions::new(
        FlinkLine::new(&built.flink_lib, &built.launcher_jar),
        dir.path(),
        server.kubeconfig_yaml(),
    );
    options.sidecar_binary = Some(built.sidecar.clone());
    options.jvm_heap = "256m".into();
    let flink = RealFlink::start(server.client(), options)
        .await
        .expect("real runner");
    let api = Api::namespaced_with(server.client(), NS, &flink_deployment_resource());
    Some(Fixture {
        server,
        flink,
        api,
        http: reqwest::Client::new(),
        _dir: if std::env::var_os("BLUEGREEN_KEEP_WORK_DIR").is_some() {
            eprintln!("work dir kept: {}", dir.keep().display());
            None
        } else {
            Some(dir)
        },
    })
}

/// A FlinkDeployment of the counting job, with the gate's env in the main container.
fn deployment(name: &str, job: &Value) -> DynamicObject {
    deployment_with(name, job, &json!({}))
}

/// [`deployment`] with more `flinkConfiguration`.
fn deployment_with(name: &str, job: &Value, conf: &Value) -> DynamicObject {
    let jar = built().expect("built").test_job_jar.display().to_string();
    let mut job_spec = json!({
        "jarURI": format!("local://{jar}"),
        "parallelism": 1,
        "upgradeMode": "savepoint",
        "state": "running",
        "args": ["--rate", "200"],
    });
    for (k, v) in job.as_object().expect("job fields") {
        job_spec[k] = v.clone();
    }
    let mut flink_conf = json!({"metrics.fetcher.update-interval": "300"});
    for (k, v) in conf.as_object().expect("configuration") {
        flink_conf[k] = v.clone();
    }
    serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "image": "flink:1.20",
            "flinkVersion": "v1_20",
            "flinkConfiguration": flink_conf,
            "serviceAccount": "flink",
            "jobManager": {"resource": {"memory": "1024m", "cpu": 1}},
            "taskManager": {"resource": {"memory": "1024m", "cpu": 1}},
            "podTemplate": {"spec": {"containers": [{"name": "flink-main-container", "env": [
                {"name": "BLUEGREEN_COLOR", "value": "BLUE"},
                {"name": "BLUEGREEN_CONFIGMAP", "value": format!("{name}-bluegreen")},
                {"name": "BLUEGREEN_NAMESPACE", "value": NS},
            ]}]}},
            "job": job_spec,
        },
    }))
    .expect("a FlinkDeployment")
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Observed {
    lifecycle_state: Option<String>,
    error: Option<String>,
    #[serde(default)]
    job_status: JobStatus,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JobStatus {
    state: Option<String>,
    job_id: Option<String>,
    upgrade_savepoint_path: Option<String>,
    savepoint_info: Option<Value>,
}

impl Fixture {
    fn d(name: &str) -> DeploymentRef {
        DeploymentRef::new(NS, name)
    }

    async fn create(&self, obj: &DynamicObject) {
        self.api
            .create(&PostParams::default(), obj)
            .await
            .expect("create the FlinkDeployment");
    }

    async fn patch_job(&self, name: &str, job: Value) {
        self.api
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"job": job}})),
            )
            .await
            .expect("patch the FlinkDeployment");
    }

    async fn status(&self, name: &str) -> Observed {
        let obj = self.api.get(name).await.expect("get");
        serde_json::from_value(obj.data.get("status").cloned().unwrap_or(json!({})))
            .expect("a status")
    }

    /// Waits until the status satisfies `pred`.
    async fn wait_status(
        &self,
        name: &str,
        bound: Duration,
        pred: impl Fn(&Observed) -> bool,
    ) -> Observed {
        let deadline = Instant::now() + bound;
        loop {
            let status = self.status(name).await;
            if pred(&status) {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{name}: condition not met within {bound:?}; status {status:?}; logs in {}",
                self.flink.deployment_dir(&Self::d(name)).display()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn wait_running(&self, name: &str, previous_job: Option<&str>) -> String {
        let status = self
            .wait_status(name, START, |s| {
                s.lifecycle_state.as_deref() == Some("STABLE")
                    && s.job_status.state.as_deref() == Some("RUNNING")
                    && s.job_status.job_id.as_deref() != previous_job
            })
            .await;
        status.job_status.job_id.expect("a job id")
    }

    async fn get(&self, url: &str) -> (u16, Value) {
        let r = self
            .http
            .get(url)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .expect("GET");
        let code = r.status().as_u16();
        (code, r.json().await.unwrap_or(Value::Null))
    }

    /// `GET` through the proxy, 200 expected; a 5xx is retried within [`BOUND`] (a JobMaster
    /// that has just started can answer 500 "initializing" for a moment, as on a cluster).
    async fn rest(&self, name: &str, path: &str) -> Value {
        let url = format!("{}{path}", self.flink.rest_url(&Self::d(name)));
        let deadline = Instant::now() + BOUND;
        loop {
            let (code, body) = self.get(&url).await;
            if code < 500 || Instant::now() > deadline {
                assert_eq!(code, 200, "GET {url}: {body}");
                return body;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The counting job's gauges on its `count` vertex, once every subtask has seen a record:
    /// (min firstSequence, max lastSequence, sum of stateMismatches).
    async fn sequence(&self, name: &str, job_id: &str) -> (i64, i64, i64) {
        let job = self.rest(name, &format!("/jobs/{job_id}")).await;
        let vertex = job["vertices"]
            .as_array()
            .expect("vertices")
            .iter()
            .find(|v| v["name"].as_str().is_some_and(|n| n.starts_with("count")))
            .expect("the count vertex")["id"]
            .as_str()
            .expect("a vertex id")
            .to_owned();
        let path = format!(
            "/jobs/{job_id}/vertices/{vertex}/subtasks/metrics?get=count.firstSequence,count.lastSequence,count.stateMismatches&agg=min,max,sum"
        );
        let deadline = Instant::now() + BOUND;
        loop {
            let metrics = self.rest(name, &path).await;
            let value = |id: &str, agg: &str| {
                metrics
                    .as_array()
                    .and_then(|m| m.iter().find(|e| e["id"] == id))
                    .and_then(|e| e[agg].as_f64())
            };
            if let (Some(first), Some(last), Some(bad)) = (
                value("count.firstSequence", "min"),
                value("count.lastSequence", "max"),
                value("count.stateMismatches", "sum"),
            ) && first >= 0.0
                && last > first
            {
                #[allow(clippy::cast_possible_truncation, reason = "small whole numbers")]
                return (first as i64, last as i64, bad as i64);
            }
            assert!(Instant::now() < deadline, "no metrics of {name}: {metrics}");
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// `latest.restored.external_path` of the job's checkpoints.
    async fn restored_from(&self, name: &str, job_id: &str) -> Option<String> {
        let c = self
            .rest(name, &format!("/jobs/{job_id}/checkpoints"))
            .await;
        c["latest"]["restored"]["external_path"]
            .as_str()
            .map(str::to_owned)
    }

    /// Waits until the job has completed a checkpoint.
    async fn wait_checkpoint(&self, name: &str, job_id: &str) {
        let deadline = Instant::now() + BOUND;
        loop {
            let c = self
                .rest(name, &format!("/jobs/{job_id}/checkpoints"))
                .await;
            if c["counts"]["completed"].as_u64().unwrap_or(0) >= 1 {
                return;
            }
            assert!(Instant::now() < deadline, "no checkpoint of {name}: {c}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

fn alive(pid: u32) -> bool {
    // A zombie is dead too: the runner reaps its children.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one deployment's life, step by step")]
async fn a_job_runs_behind_the_proxy_upgrades_with_its_state_and_is_cancelled_on_deletion() {
    let Some(f) = fixture().await else { return };
    let name = "orders";
    let d = Fixture::d(name);
    let t0 = Instant::now();
    f.create(&deployment(name, &json!({}))).await;
    let job1 = f.wait_running(name, None).await;
    eprintln!("measured: create → STABLE/RUNNING in {:?}", t0.elapsed());

    // Flink's temporary files (its RPC jar, 24 MB, I/O and shuffle directories) stay in the run's
    // directory: a JVM that is killed never deletes them, and in the shared /tmp they added up to
    // tens of gigabytes over the test suites.
    let run_tmp = f.flink.deployment_dir(&d).join("run-1").join("tmp");
    let rpc_jar = std::fs::read_dir(&run_tmp).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let path = e.path();
            path.extension().is_some_and(|x| x == "jar")
                && e.file_name().to_string_lossy().starts_with("flink-rpc")
        })
    });
    assert!(rpc_jar, "no flink-rpc-*.jar in {}", run_tmp.display());

    // The REST API through the proxy template, as the controller reaches it.
    let template = f.flink.rest_url_template();
    assert_eq!(
        template.replace("{namespace}", NS).replace("{name}", name),
        f.flink.rest_url(&d)
    );
    let job = f.rest(name, &format!("/jobs/{job1}")).await;
    assert_eq!(job["state"], "RUNNING");
    let job_name = job["name"].as_str().expect("a job name");
    assert!(
        job_name.contains("color=BLUE"),
        "the pod env reaches the JVM: {job_name}"
    );
    let sidecar = f.flink.sidecar_url(&d).expect("a sidecar");
    assert!(
        job_name.contains(&format!("sidecar={sidecar}")),
        "{job_name} vs {sidecar}"
    );
    let (missing, _) = f
        .get(&format!(
            "{}/jobs/{job1}",
            f.flink.rest_url(&Fixture::d("nope"))
        ))
        .await;
    assert_eq!(missing, 503, "a deployment without a JVM answers 503");

    // The sidecar serves the coordination ConfigMap once it exists.
    let state = CoordinationState {
        floor: None,
        active: Color::Blue,
        deletion_delay_ms: 0,
        stage: Stage::Running,
        toggle: Toggle::NotSet,
        epoch: 1,
    };
    let configmaps: Api<ConfigMap> = Api::namespaced(f.server.client(), NS);
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{name}-bluegreen")),
            ..ObjectMeta::default()
        },
        data: Some(state.to_data()),
        ..ConfigMap::default()
    };
    configmaps
        .create(&PostParams::default(), &cm)
        .await
        .expect("ConfigMap");
    let (code, body) = f.get(&format!("{sidecar}/v1/state?wait=20s")).await;
    assert_eq!(code, 200, "{body}");
    let served: BTreeMap<String, String> =
        serde_json::from_value(body["configmap"].clone()).expect("the ConfigMap's data");
    assert_eq!(served, state.to_data());

    // Upgrade with upgradeMode savepoint and a new parallelism: stop-with-savepoint, restore.
    f.wait_checkpoint(name, &job1).await;
    let (first, before, bad) = f.sequence(name, &job1).await;
    assert_eq!((first, bad), (0, 0), "a fresh start counts from 0");
    let t1 = Instant::now();
    f.patch_job(name, json!({"parallelism": 2})).await;
    let job2 = f.wait_running(name, Some(&job1)).await;
    eprintln!(
        "measured: savepoint upgrade → RUNNING in {:?}",
        t1.elapsed()
    );
    let status = f.status(name).await;
    let savepoint = status
        .job_status
        .upgrade_savepoint_path
        .expect("upgradeSavepointPath");
    assert!(savepoint.contains("savepoint-"), "{savepoint}");
    assert_eq!(
        status.job_status.savepoint_info.expect("savepointInfo")["lastSavepoint"]["location"],
        savepoint.as_str()
    );
    assert_eq!(
        f.restored_from(name, &job2).await.as_deref(),
        Some(savepoint.as_str())
    );
    let job = f.rest(name, &format!("/jobs/{job2}")).await;
    let count = job["vertices"]
        .as_array()
        .expect("vertices")
        .iter()
        .find(|v| v["name"].as_str().is_some_and(|n| n.starts_with("count")))
        .expect("count");
    assert_eq!(count["parallelism"], 2, "job.parallelism is applied");
    let (first, _, bad) = f.sequence(name, &job2).await;
    assert!(
        first > before,
        "the source resumed where the savepoint was ({first} > {before})"
    );
    assert_eq!(bad, 0, "every key's count carried over");

    // Upgrade with upgradeMode last-state: cancel, restore the latest checkpoint.
    f.wait_checkpoint(name, &job2).await;
    f.patch_job(
        name,
        json!({"upgradeMode": "last-state", "args": ["--rate", "150"]}),
    )
    .await;
    let job3 = f.wait_running(name, Some(&job2)).await;
    let restored = f
        .restored_from(name, &job3)
        .await
        .expect("restored from a checkpoint");
    assert!(
        restored.contains("/chk-") && restored.contains(&job2),
        "{restored}"
    );
    let (first, _, bad) = f.sequence(name, &job3).await;
    assert!(
        first > 0 && bad == 0,
        "state carried over: first {first}, mismatches {bad}"
    );

    // Deletion cancels the job and leaves no process behind.
    let pid = f.flink.jvm_pid(&d).expect("a JVM");
    assert!(alive(pid));
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS"))
                .map(str::to_owned)
        });
    eprintln!("measured: job JVM (parallelism 2, running) {rss:?}");
    f.api
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete");
    let deadline = Instant::now() + BOUND;
    while f.flink.jvm_pid(&d).is_some() || alive(pid) {
        assert!(
            Instant::now() < deadline,
            "the JVM {pid} outlived its deployment"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(f.flink.sidecar_url(&d).is_none());
    let (code, _) = f
        .get(&format!("{}/jobs/{job3}", f.flink.rest_url(&d)))
        .await;
    assert_eq!(code, 503);

    // Deployed again under the same name, the job gets a run directory of its own: it neither
    // appends to an earlier run's flink.log nor overwrites its other files.
    let dir = f.flink.deployment_dir(&d);
    let earlier = std::fs::read(dir.join("run-1/flink.log")).expect("run-1/flink.log");
    f.create(&deployment(name, &json!({}))).await;
    let job4 = f.wait_running(name, None).await;
    let log4 = std::fs::read_to_string(dir.join("run-4/flink.log")).expect("run-4/flink.log");
    assert!(log4.contains(&job4), "run-4 is the redeployed job's");
    assert_eq!(
        std::fs::read(dir.join("run-1/flink.log")).expect("run-1/flink.log"),
        earlier,
        "run-1's log is left as it was"
    );
    assert!(!dir.join("run-5").exists());

    // The REST handlers' known-harmless ERRORs (the runner polls checkpoints while the JobManager
    // initializes) are one INFO line each, without the stack trace; none is left at ERROR.
    let flink_logs: Vec<String> = (1..=4)
        .map(|n| std::fs::read_to_string(dir.join(format!("run-{n}/flink.log"))).expect("log"))
        .collect();
    let downgraded = flink_logs
        .iter()
        .flat_map(|l| l.lines())
        .filter(|l| l.contains("harmless, downgraded from ERROR"))
        .inspect(|l| assert_eq!(l.split_whitespace().nth(2), Some("INFO"), "{l}"))
        .count();
    let errors: Vec<&str> = flink_logs
        .iter()
        .flat_map(|l| l.lines())
        .filter(|l| {
            l.split_whitespace().nth(2) == Some("ERROR")
                && (l.contains("CheckpointingStatisticsHandler")
                    || l.contains("SavepointStatusHandler"))
        })
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // Whether a poll met the initializing JobManager depends on timing; say whether one did.
    eprintln!("measured: {downgraded} harmless REST ERROR(s) downgraded to INFO");
    assert!(
        !flink_logs
            .iter()
            .any(|l| l.contains("JobManager is initializing.\n\tat")),
        "no stack trace"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspend_takes_a_savepoint_resume_restores_it_and_a_new_nonce_redeploys_it() {
    let Some(f) = fixture().await else { return };
    let name = "suspender";
    let d = Fixture::d(name);
    f.create(&deployment(name, &json!({}))).await;
    let job1 = f.wait_running(name, None).await;
    f.wait_checkpoint(name, &job1).await;
    let (_, before, _) = f.sequence(name, &job1).await;
    let pid = f.flink.jvm_pid(&d).expect("a JVM");

    let t0 = Instant::now();
    f.patch_job(name, json!({"state": "suspended"})).await;
    let status = f
        .wait_status(name, BOUND, |s| {
            s.lifecycle_state.as_deref() == Some("SUSPENDED")
        })
        .await;
    eprintln!(
        "measured: suspend (stop-with-savepoint, JVM killed) in {:?}",
        t0.elapsed()
    );
    assert_eq!(status.job_status.state.as_deref(), Some("SUSPENDED"));
    let savepoint = status
        .job_status
        .upgrade_savepoint_path
        .expect("a savepoint");
    assert!(
        savepoint.starts_with("file:") && savepoint.contains("savepoint-"),
        "{savepoint}"
    );
    assert!(
        f.flink.jvm_pid(&d).is_none() && !alive(pid),
        "no JVM while suspended"
    );

    f.patch_job(name, json!({"state": "running"})).await;
    let job2 = f.wait_running(name, Some(&job1)).await;
    assert_eq!(
        f.restored_from(name, &job2).await.as_deref(),
        Some(savepoint.as_str())
    );
    let (first, last, bad) = f.sequence(name, &job2).await;
    assert!(
        first > before && bad == 0,
        "resumed from the savepoint: first {first} > {before}, mismatches {bad}"
    );

    // A new savepointRedeployNonce redeploys from initialSavepointPath: the same savepoint again,
    // so the job resumes at the same number although job 2 had gone past it.
    f.patch_job(
        name,
        json!({"savepointRedeployNonce": 1, "initialSavepointPath": savepoint}),
    )
    .await;
    let job3 = f.wait_running(name, Some(&job2)).await;
    assert_eq!(
        f.restored_from(name, &job3).await.as_deref(),
        Some(savepoint.as_str())
    );
    let (again, _, bad) = f.sequence(name, &job3).await;
    assert!(
        again == first && last > first && bad == 0,
        "redeployed from the savepoint: first {again} == {first} (job 2 reached {last})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_jar_or_entry_class_fails_with_a_clear_error() {
    let Some(f) = fixture().await else { return };
    f.create(&deployment(
        "nojar",
        &json!({"jarURI": "local:///nonexistent/job.jar"}),
    ))
    .await;
    let status = f
        .wait_status("nojar", BOUND, |s| {
            s.lifecycle_state.as_deref() == Some("FAILED")
        })
        .await;
    let error = status.error.expect("an error");
    assert!(
        error.contains("spec.job.jarURI") && error.contains("/nonexistent/job.jar does not exist"),
        "{error}"
    );
    assert_eq!(status.job_status.state.as_deref(), Some("FAILED"));

    f.create(&deployment(
        "noclass",
        &json!({"entryClass": "com.example.NoSuchJob"}),
    ))
    .await;
    let status = f
        .wait_status("noclass", START, |s| {
            s.lifecycle_state.as_deref() == Some("FAILED")
        })
        .await;
    let error = status.error.expect("an error");
    assert!(error.contains("com.example.NoSuchJob"), "{error}");
    assert_eq!(status.job_status.state.as_deref(), Some("FAILED"));
    assert!(
        f.flink.jvm_pid(&Fixture::d("noclass")).is_none(),
        "the failed JVM is gone"
    );

    // A JobManager that cannot start (here: its REST port is taken) is reported at once with
    // its cause, not after the start-up timeout (the JVM used to live on without a REST API).
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port to take");
    let port = taken.local_addr().expect("address").port();
    f.create(&deployment_with(
        "noport",
        &json!({}),
        &json!({"rest.bind-port": port.to_string()}),
    ))
    .await;
    let status = f
        .wait_status("noport", BOUND, |s| {
            s.lifecycle_state.as_deref() == Some("FAILED")
        })
        .await;
    let error = status.error.expect("an error");
    assert!(
        error.contains("could not be submitted") && error.contains(&port.to_string()),
        "{error}"
    );
    assert!(f.flink.jvm_pid(&Fixture::d("noport")).is_none());
    drop(taken);

    // A Flink line the runner was not given (this one has Flink 1.20 only), or none it runs: the
    // field and the fix, never another line.
    for (name, version, fix) in [
        ("flink2", "v2_3", "-Pflink2"),
        ("flink119", "v1_19", "v1_20"),
    ] {
        let mut obj = deployment(name, &json!({}));
        obj.data["spec"]["flinkVersion"] = json!(version);
        f.create(&obj).await;
        let status = f
            .wait_status(name, BOUND, |s| {
                s.lifecycle_state.as_deref() == Some("FAILED")
            })
            .await;
        let error = status.error.expect("an error");
        assert!(
            error.contains("spec.flinkVersion") && error.contains(version) && error.contains(fix),
            "{error}"
        );
        assert!(f.flink.jvm_pid(&Fixture::d(name)).is_none(), "no JVM runs");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_job_a_failed_savepoint_and_a_dead_jvm_are_reported() {
    let Some(f) = fixture().await else { return };
    // The job throws at number 300 and has no restarts left: FAILED with Flink's root cause.
    f.create(&deployment_with(
        "crasher",
        &json!({"args": ["--rate", "200", "--fail-at", "300"]}),
        &json!({"restart-strategy.type": "none"}),
    ))
    .await;
    // The savepoint directory cannot be created: every stop-with-savepoint fails.
    f.create(&deployment_with(
        "stuck",
        &json!({}),
        &json!({"state.savepoints.dir": "file:///proc/bluegreen-no-such-dir"}),
    ))
    .await;

    let status = f
        .wait_status("crasher", START, |s| {
            s.lifecycle_state.as_deref() == Some("FAILED")
        })
        .await;
    assert_eq!(status.job_status.state.as_deref(), Some("FAILED"));
    let error = status.error.expect("an error");
    assert!(error.contains("CountingJob fails at 300"), "{error}");

    let job1 = f.wait_running("stuck", None).await;
    f.patch_job("stuck", json!({"parallelism": 2})).await;
    let status = f.wait_status("stuck", BOUND, |s| s.error.is_some()).await;
    let error = status.error.expect("an error");
    assert!(error.contains("savepoint"), "{error}");
    assert_eq!(
        status.job_status.job_id.as_deref(),
        Some(job1.as_str()),
        "not redeployed"
    );
    let job = f.rest("stuck", &format!("/jobs/{job1}")).await;
    assert_eq!(
        job["state"], "RUNNING",
        "a failed stop-with-savepoint leaves the job running"
    );

    // Back to the running spec (no upgrade pending), then the JVM dies.
    f.patch_job("stuck", json!({"parallelism": 1})).await;
    let pid = f.flink.jvm_pid(&Fixture::d("stuck")).expect("a JVM");
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = f
        .wait_status("stuck", BOUND, |s| {
            s.lifecycle_state.as_deref() == Some("FAILED")
        })
        .await;
    let error = status.error.expect("an error");
    assert!(error.contains("JobManager process exited"), "{error}");
    assert!(
        f.flink.sidecar_url(&Fixture::d("stuck")).is_none(),
        "the sidecar went with it"
    );
}

/// One look at `GET /jobs/:jid`: the job's state, and the vertices' latest `start-time` when
/// every vertex and every subtask is RUNNING.
fn tasks_started(job: &Value) -> (String, Option<i64>) {
    let state = job["state"].as_str().unwrap_or_default().to_owned();
    let vertices = job["vertices"].as_array().cloned().unwrap_or_default();
    let all_running = !vertices.is_empty()
        && vertices.iter().all(|v| {
            v["status"] == "RUNNING" && v["tasks"]["RUNNING"].as_u64() == v["parallelism"].as_u64()
        });
    let started = vertices
        .iter()
        .filter_map(|v| v["start-time"].as_i64())
        .max()
        .filter(|_| all_running);
    (state, started)
}

/// What the controller reads: the latest `start-time` of any subtask's current attempt
/// (`GET /jobs/:jid/vertices/:vid`), when every subtask of every vertex is RUNNING. A region
/// failover restarts some subtasks only, and moves this on where the vertex's (earliest) does not.
async fn subtasks_started(f: &Fixture, url: &str, job: &Value) -> Option<i64> {
    let mut latest = None;
    for vertex in job["vertices"].as_array()? {
        let (code, details) = f
            .get(&format!("{url}/vertices/{}", vertex["id"].as_str()?))
            .await;
        let subtasks = details["subtasks"].as_array().filter(|_| code == 200)?;
        if subtasks.is_empty() || !subtasks.iter().all(|t| t["status"] == "RUNNING") {
            return None;
        }
        let max = subtasks
            .iter()
            .filter_map(|t| t["start-time"].as_i64())
            .max()?;
        latest = latest.max(Some(max));
    }
    latest
}

/// The Flink fact `coordination.minReady` rests on, on real Flink 1.20: a job that fails and
/// restarts (a crash loop: without a checkpoint it starts from 0 and throws at number 300, about
/// 3 s in, on every attempt) redeploys its tasks, and each vertex's `start-time` in
/// `GET /jobs/:jid` (the earliest DEPLOYING timestamp of its subtasks' current attempts) moves on
/// with every attempt. The job's own state is no witness: it is RUNNING in every attempt (and,
/// with region failover, stays RUNNING when only part of the job restarts); between attempts this
/// one-region job shows RESTARTING for about the restart delay, which a look every 500 ms can
/// miss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_restart_moves_the_vertices_start_time_on_while_the_job_may_stay_running() {
    let Some(f) = fixture().await else { return };
    f.create(&deployment_with(
        "flapper",
        &json!({"args": ["--rate", "100", "--fail-at", "300", "--checkpoint-ms", "600000"]}),
        &json!({
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "2",
            "restart-strategy.fixed-delay.delay": "1s",
        }),
    ))
    .await;
    let status = f
        .wait_status("flapper", START, |s| s.job_status.job_id.is_some())
        .await;
    let jid = status.job_status.job_id.expect("a job id");
    let url = format!("{}/jobs/{jid}", f.flink.rest_url(&Fixture::d("flapper")));
    // Every look at the job until it has failed for good: (job state, tasks' start time).
    let mut looks: Vec<(String, Option<i64>)> = Vec::new();
    // The same by subtask (what the controller reads).
    let mut subtask_starts: Vec<i64> = Vec::new();
    let deadline = Instant::now() + START;
    while Instant::now() < deadline {
        let (code, job) = f.get(&url).await;
        if code == 200 {
            let look = tasks_started(&job);
            if let Some(t) = subtasks_started(&f, &url, &job).await
                && subtask_starts.last() != Some(&t)
            {
                subtask_starts.push(t);
            }
            if looks.last() != Some(&look) {
                eprintln!("job {} tasks started at {:?}", look.0, look.1);
                looks.push(look);
            }
            if job["state"] == "FAILED" {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        looks.last().map(|l| l.0.as_str()),
        Some("FAILED"),
        "the job fails for good after its restarts: {looks:?}"
    );
    let starts: Vec<i64> = looks.iter().filter_map(|l| l.1).collect();
    let mut distinct = starts.clone();
    distinct.dedup();
    assert!(
        distinct.len() >= 2,
        "every task RUNNING in at least two attempts: {looks:?}"
    );
    assert!(
        distinct.windows(2).all(|w| w[0] < w[1]),
        "the start time moves on with every restart: {looks:?}"
    );
    assert!(
        looks
            .iter()
            .filter(|l| l.1.is_some())
            .all(|l| l.0 == "RUNNING"),
        "the job is RUNNING in every attempt: only the start time tells them apart: {looks:?}"
    );
    assert!(
        subtask_starts.len() >= 2 && subtask_starts.windows(2).all(|w| w[0] < w[1]),
        "the subtasks' latest start-time moves on with every restart too: {subtask_starts:?}"
    );
    let job_states: Vec<&str> = looks.iter().map(|l| l.0.as_str()).collect();
    eprintln!(
        "job states seen across {} attempts: {job_states:?}",
        distinct.len()
    );
    assert!(
        job_states.iter().all(|s| matches!(
            *s,
            "CREATED" | "INITIALIZING" | "RUNNING" | "RESTARTING" | "FAILING" | "FAILED"
        )),
        "{job_states:?}"
    );
}
