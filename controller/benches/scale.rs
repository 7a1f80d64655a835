//! 1,000 FlinkBlueGreenDeployments in one controller process: its memory (RSS, peak RSS) and the
//! time to reconcile all of them, first from scratch and then after a restart. The controller is
//! the real binary, run as a child process against the local API server; the bench plays the
//! Apache Flink operator by marking every child FlinkDeployment's job RUNNING. Prints figures.
//!
//! `cargo bench -p bluegreen-controller --bench scale` (`BLUEGREEN_SCALE_N` changes the count)

use std::io::Read as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bluegreen_controller::resource::FlinkBlueGreenDeployment;
use bluegreen_local_apiserver::{LocalApiServer, Options};
use bluegreen_local_flink::crd::install_flink_deployment_crd;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::{CustomResourceExt, ResourceExt};
use serde_json::json;

fn spec() -> serde_json::Value {
    json!({
        "template": {"spec": {"image": "example.com/job:v1", "job": {"jarURI": "local:///job.jar", "parallelism": 1}}},
    })
}

fn rss_kib(pid: u32) -> (u64, u64) {
    let mut text = String::new();
    std::fs::File::open(format!("/proc/{pid}/status"))
        .and_then(|mut f| f.read_to_string(&mut text))
        .expect("read /proc/<pid>/status");
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The controller process; killed and reaped when dropped.
struct Controller(Child);

impl Controller {
    fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_controller(kubeconfig: &std::path::Path, metrics: &str) -> Controller {
    Controller(
        Command::new(env!("CARGO_BIN_EXE_bluegreen-controller"))
            .args([
                "run",
                "--metrics-addr",
                metrics,
                "--lease-namespace",
                "default",
                "--lease-seconds",
                "2",
            ])
            .args([
                "--flink-rest-url",
                "http://127.0.0.1:9/{namespace}/{name}",
                "--flink-rest-timeout",
                "200ms",
            ])
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .spawn()
            .expect("start bluegreen-controller"),
    )
}

async fn reconciles(metrics: &str) -> u64 {
    let Ok(response) = reqwest::get(format!("http://{metrics}/metrics")).await else {
        return 0;
    };
    let text = response.text().await.unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("bluegreen_controller_reconciles_total "))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

async fn wait_all(
    api: &Api<FlinkBlueGreenDeployment>,
    n: usize,
    what: &str,
    pred: impl Fn(&FlinkBlueGreenDeployment) -> bool,
) -> Duration {
    let t0 = Instant::now();
    loop {
        let list = api.list(&ListParams::default()).await.expect("list");
        let done = list.items.iter().filter(|f| pred(f)).count();
        if done >= n {
            return t0.elapsed();
        }
        assert!(
            t0.elapsed() < Duration::from_mins(10),
            "{what}: only {done} of {n}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::var("BLUEGREEN_SCALE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let server = LocalApiServer::start(Options::default()).await?;
    install_flink_deployment_crd(&server)?;
    server.apply_object(&FlinkBlueGreenDeployment::crd())?;
    let kubeconfig =
        std::env::temp_dir().join(format!("bluegreen-scale-{}.kubeconfig", std::process::id()));
    std::fs::write(&kubeconfig, server.kubeconfig_yaml())?;
    for i in 0..n {
        server.apply_object(&json!({
            "apiVersion": "bluegreen.dev/v1alpha1", "kind": "FlinkBlueGreenDeployment",
            "metadata": {"name": format!("job-{i:04}"), "namespace": "default"},
            "spec": spec(),
        }))?;
    }
    let client = server.client();
    let fbgds: Api<FlinkBlueGreenDeployment> = Api::namespaced(client.clone(), "default");
    let children: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &bluegreen_controller::context::flink_deployment_resource(),
    );

    let metrics = "127.0.0.1:18431";
    let controller = spawn_controller(&kubeconfig, metrics);
    let t_start = Instant::now();
    let first = wait_all(&fbgds, n, "first deployments started", |f| {
        f.status.as_ref().is_some_and(|s| s.transition.is_some())
    })
    .await;
    // Play the Flink operator: every child's job is RUNNING. The status records the intent
    // before the child is created, so wait for every child first.
    while children.list(&ListParams::default()).await?.items.len() < n {
        anyhow::ensure!(
            t_start.elapsed() < Duration::from_mins(10),
            "children were not all created"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for child in children.list(&ListParams::default()).await?.items {
        let status = json!({"status": {"lifecycleState": "STABLE", "jobStatus": {"state": "RUNNING", "jobId": format!("{:032x}", 7)}}});
        children
            .patch_status(
                &child.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&status),
            )
            .await?;
    }
    let steady = wait_all(&fbgds, n, "ready", |f| {
        f.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss, peak) = rss_kib(controller.id());

    drop(controller);
    let t0 = Instant::now();
    let restarted = spawn_controller(&kubeconfig, metrics);
    while reconciles(metrics).await < n as u64 {
        anyhow::ensure!(
            t0.elapsed() < Duration::from_mins(10),
            "restart did not reconcile all"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after_restart = t0.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss2, peak2) = rss_kib(restarted.id());
    drop(restarted);
    let _ = std::fs::remove_file(&kubeconfig);

    let mib = |kib: u64| f64::from(u32::try_from(kib).unwrap_or(u32::MAX)) / 1024.0;
    println!("{n} FlinkBlueGreenDeployments in one controller process");
    println!(
        "  first reconcile of all (ConfigMap + blue child each): {:.1} s",
        first.as_secs_f64()
    );
    println!(
        "  all Ready after their jobs run: {:.1} s",
        steady.as_secs_f64()
    );
    println!("  RSS {:.1} MiB (peak {:.1} MiB)", mib(rss), mib(peak));
    println!(
        "  after a restart: all {n} reconciled in {:.1} s; RSS {:.1} MiB (peak {:.1} MiB)",
        after_restart.as_secs_f64(),
        mib(rss2),
        mib(peak2)
    );
    server.shutdown().await;
    Ok(())
}
