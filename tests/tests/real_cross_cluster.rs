//! A **real Flink 1.20** job moved to another Kubernetes cluster and back, exactly once (issue 27):
//! two local API servers in one process, A (home: the resource, the coordination ConfigMap, the
//! controller) and B, each with its own real-mode runner (`examples/src/cross_cluster.rs`). One
//! directory stands for the object storage both reach (checkpoints and savepoints, declared in
//! `coordination.sharedStorage`) and holds the FileSink's output, which one file ledger judges.
//! The controller reaches B through a kubeconfig Secret in A. A authenticates and authorizes
//! every request (RBAC); B's runner has B's kubeconfig only, and mounts for each remote child's
//! sidecar the Secret the controller wrote in B (`<child>-bluegreen-home`): its kubeconfig for A
//! and a token that may read the coordination ConfigMap, which the gates follow through it.
//!
//! Needs the jars built by `scripts/test` and `cargo build -p bluegreen-sidecar`; without a `java`
//! on the PATH the test says so and passes without running.

use std::time::Instant;

use anyhow::{Context as _, ensure};
use bluegreen_controller::context::flink_deployment_resource;
use bluegreen_e2e::real::{UPGRADE, artifacts};
use bluegreen_examples::NAMESPACE;
use bluegreen_examples::cross_cluster::{Cluster, CrossClusterStack, Placement, REMOTE_NAMESPACE};
use bluegreen_examples::real::ExampleJob;
use bluegreen_protocol::Color;
use kube::api::{Api, DynamicObject};

const NAME: &str = "orders";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_job_moves_to_another_cluster_and_back_exactly_once() -> anyhow::Result<()> {
    let Some(artifacts) = artifacts()? else {
        return Ok(());
    };
    let started = Instant::now();
    let work = tempfile::tempdir()?;
    let stack = CrossClusterStack::start(&artifacts, work.path()).await?;
    let output = stack.shared.join("output");
    let mut job = ExampleJob::new(&output);
    stack
        .home
        .create(NAME, stack.spec(&job, &artifacts.job_jar))
        .await?;
    stack.wait_steady(NAME, Color::Blue, UPGRADE).await?;
    assert_eq!(
        stack.placement().await?,
        Placement {
            home: vec!["orders-blue".into()],
            remote: vec![],
        }
    );
    eprintln!("[{:>5.1}s] blue runs in A", started.elapsed().as_secs_f64());

    // Blue in A → green in B (parallelism 2 → 3) → blue in A (→ 1).
    for (cluster, version, parallelism, to) in [
        (Cluster::Remote, "v2", 3, Color::Green),
        (Cluster::Home, "v1", 1, Color::Blue),
    ] {
        job.version = version.into();
        job.parallelism = parallelism;
        stack
            .home
            .patch_spec(NAME, stack.move_patch(&job, cluster))
            .await?;
        let fbgd = stack.wait_steady(NAME, to, UPGRADE).await?;
        assert_eq!(CrossClusterStack::cluster_of(&fbgd, to), cluster);
        let child = format!("{NAME}-{}", to.suffix());
        let expected = match cluster {
            Cluster::Home => Placement {
                home: vec![child.clone()],
                remote: vec![],
            },
            Cluster::Remote => Placement {
                home: vec![],
                remote: vec![child.clone()],
            },
        };
        assert_eq!(stack.placement().await?, expected);
        assert_eq!(
            child_parallelism(&stack, cluster, &child).await?,
            parallelism
        );
        if cluster == Cluster::Remote {
            the_remote_sidecar_reads_a_with_its_own_credential(&stack).await?;
        }
        stack.commit_active(NAME).await?;
        let report = stack.home.file_report(NAME, &output, true).await?;
        eprintln!(
            "[{:>5.1}s] {to} runs in {cluster} at parallelism {parallelism}\n{report}",
            started.elapsed().as_secs_f64()
        );
        ensure!(report.is_exactly_once_by_owner(), "{report}");
        ensure!(
            report.lines.get(&to).copied().unwrap_or(0) > 0,
            "{to} emitted nothing: {report}"
        );
    }
    let status = stack
        .home
        .fbgds()
        .get(NAME)
        .await?
        .status
        .context("status")?;
    assert_eq!(status.epoch, 2);
    assert!(status.clusters.is_empty(), "{status:?}");
    stack.shutdown().await;
    eprintln!("moved and back in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Green's sidecar in B read A's ConfigMap with the credential the controller mounted: the Secret
/// volume of its run holds a kubeconfig naming A with `tokenFile: token`, and that token may read
/// the coordination ConfigMap in A but not list its Secrets.
async fn the_remote_sidecar_reads_a_with_its_own_credential(
    stack: &CrossClusterStack,
) -> anyhow::Result<()> {
    let volume = stack
        .remote_volume(NAME, Color::Green)
        .context("green's run in B mounted no Secret volume")?;
    let text = std::fs::read_to_string(volume.join("kubeconfig"))?;
    let kubeconfig: serde_yaml::Value = serde_yaml::from_str(&text)?;
    let home = stack.home.server.url();
    ensure!(
        kubeconfig["clusters"][0]["cluster"]["server"].as_str() == Some(home.as_str())
            && kubeconfig["users"][0]["user"]["tokenFile"].as_str() == Some("token"),
        "{}: {text}",
        volume.display()
    );
    let token = std::fs::read_to_string(volume.join("token"))?;
    let http = reqwest::Client::new();
    let status = |path: String| {
        let request = http
            .get(format!("{home}{path}"))
            .bearer_auth(token.trim())
            .send();
        async move { anyhow::Ok(request.await?.status().as_u16()) }
    };
    let configmap = status(format!(
        "/api/v1/namespaces/{NAMESPACE}/configmaps/{}",
        bluegreen_protocol::configmap_name(NAME)
    ))
    .await?;
    let secrets = status(format!("/api/v1/namespaces/{NAMESPACE}/secrets")).await?;
    ensure!(
        (configmap, secrets) == (200, 403),
        "the mounted token reads the ConfigMap: {configmap}, lists A's Secrets: {secrets}"
    );
    Ok(())
}

/// `spec.job.parallelism` of the FlinkDeployment `child` in `cluster`.
async fn child_parallelism(
    stack: &CrossClusterStack,
    cluster: Cluster,
    child: &str,
) -> anyhow::Result<i32> {
    let (client, namespace) = match cluster {
        Cluster::Home => (stack.home.client.clone(), NAMESPACE),
        Cluster::Remote => (stack.remote.client(), REMOTE_NAMESPACE),
    };
    let api: Api<DynamicObject> =
        Api::namespaced_with(client, namespace, &flink_deployment_resource());
    let obj = api.get(child).await?;
    let p = obj.data["spec"]["job"]["parallelism"]
        .as_i64()
        .context("no spec.job.parallelism")?;
    Ok(i32::try_from(p)?)
}
