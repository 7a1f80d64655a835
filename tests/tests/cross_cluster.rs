//! A job moved between two Kubernetes clusters, exactly once (issue 27), on the simulated
//! two-cluster bed (`bluegreen_e2e::two_clusters`): two local API servers in one process, A (home:
//! the resource, the coordination ConfigMap, the controller) and B, each with its own simulated
//! Flink runner on one clock. One snapshot directory stands for the object storage both clusters
//! reach; one ledger judges the job wherever it runs. The controller reaches B through a kubeconfig
//! Secret in A naming B's own URL (not the bed's proxies; one test points it at a closed port
//! instead). A checks tokens and RBAC: B's gates read the ConfigMap in A with the credential the
//! controller writes into B (the Secret `<child>-bluegreen-home`, a token of a ServiceAccount in A
//! that may only get/list/watch that ConfigMap, rotated here once 5 s old), mounted as the runner
//! reads the TaskManager pod template; one test starts the controller without a home API server.

use std::time::Duration;

use anyhow::Context as _;
use bluegreen_controller::context::GateTokens;
use bluegreen_controller::remote_gate;
use bluegreen_controller::resource::Outcome;
use bluegreen_e2e::two_clusters::{
    HOME_NS, REMOTE_NS, SECRET, STEADY, Setup, TwoClusters, degraded,
};
use bluegreen_local_apiserver::{LocalApiServer, Options, RequestMatch, Verb};
use bluegreen_local_flink::DeploymentRef;
use bluegreen_protocol::Color;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;

/// The remote gates' tokens are replaced once 5 s old (3595 s of 3600 s left).
const ROTATING: GateTokens = GateTokens {
    ttl: Duration::from_hours(1),
    rotate_below: Duration::from_secs(3595),
};

/// A and B, A checking tokens and RBAC, the remote gates' tokens [`ROTATING`]; the controller is
/// told A's URL as the home API server for B's gates (`--home-api-server`) if `home_api`.
async fn two_clusters(home_api: bool) -> anyhow::Result<TwoClusters> {
    TwoClusters::start(Setup {
        identity: "cross-cluster",
        rbac: true,
        home_api,
        gate_tokens: Some(ROTATING),
        secret_through_to_b: false,
    })
    .await
}

/// A and B with the Secret of B, and `orders` steady on blue in A.
async fn blue_in_a(home_api: bool) -> anyhow::Result<TwoClusters> {
    let clusters = two_clusters(home_api).await?;
    clusters.secret_of_b().await?;
    clusters.run_blue(|_| {}).await?;
    Ok(clusters)
}

/// B becomes unusable while green runs there (its Secret now names a closed port): the
/// resource is `Degraded/ClusterUnavailable` and nothing changes; once the Secret names B
/// again the resource is Ready, the same green job (`job_id`) still running in B.
async fn lose_and_regain_b(clusters: &TwoClusters, job_id: &str) -> anyhow::Result<()> {
    let secrets: Api<Secret> = Api::namespaced(clusters.a.clone(), HOME_NS);
    let kubeconfig = clusters.remote.kubeconfig_yaml();
    for (yaml, nudge) in [
        (
            kubeconfig.replace(&clusters.remote.url(), "http://127.0.0.1:1"),
            "1",
        ),
        (kubeconfig.clone(), "2"),
    ] {
        let data = json!({"data": {"kubeconfig": ByteString(yaml.into_bytes())}});
        secrets
            .patch(SECRET, &PatchParams::default(), &Patch::Merge(&data))
            .await?;
        // Secrets are not watched: an annotation makes the controller look now.
        clusters.nudge(nudge).await?;
        if nudge == "1" {
            let down = clusters
                .wait_for("ClusterUnavailable", |f| {
                    degraded(f).is_some_and(|(r, _)| r == "ClusterUnavailable")
                })
                .await?;
            let (_, message) = degraded(&down).expect("degraded");
            assert!(message.contains("status.clusters.green"), "{message}");
            assert!(down.status.expect("status").clusters.green.is_some());
        }
    }
    clusters.wait_ready("B usable again").await?;
    let green = clusters
        .flink_b
        .job(&DeploymentRef::new(REMOTE_NS, "orders-green"))
        .context("green runs in B")?;
    assert_eq!(green.job_id, job_id);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_moves_to_another_cluster_and_back_exactly_once() -> anyhow::Result<()> {
    let clusters = blue_in_a(true).await?;
    assert_eq!(
        clusters.children().await?,
        (vec!["orders-blue".into()], vec![])
    );

    // To B, with a parallelism change.
    clusters
        .patch_spec(json!({
            "cluster": clusters.cluster_b("cluster-b"),
            "template": {"spec": {"job": {"parallelism": 3}}},
        }))
        .await?;
    let moved = clusters.wait_steady(Color::Green).await?;
    let status = moved.status.expect("status");
    assert_eq!(status.history[0].outcome, Outcome::Promoted);
    assert!(status.clusters.of(Color::Green).is_some(), "{status:?}");
    assert_eq!(
        clusters.children().await?,
        (vec![], vec!["orders-green".into()])
    );
    let green = clusters
        .flink_b
        .job(&DeploymentRef::new(REMOTE_NS, "orders-green"))
        .expect("green runs in B");
    assert_eq!(green.settings.parallelism, 3);
    let report = clusters.report().await?;
    println!("blue in A → green in B: {report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    assert!(report.color(Some(Color::Green)).emissions > 0, "{report}");
    let first_token = the_remote_gates_credential_is_that_configmaps_only(&clusters).await?;
    the_token_is_rotated_and_the_new_one_works(&clusters, &first_token).await?;
    lose_and_regain_b(&clusters, &green.job_id).await?;

    // Back to A, with another parallelism change.
    clusters
        .patch_spec(json!({
            "cluster": null,
            "template": {"spec": {"job": {"parallelism": 4}}},
        }))
        .await?;
    let back = clusters.wait_steady(Color::Blue).await?;
    let status = back.status.expect("status");
    assert_eq!(status.epoch, 2);
    assert!(status.clusters.is_empty(), "{status:?}");
    assert_eq!(
        clusters.children().await?,
        (vec!["orders-blue".into()], vec![])
    );
    let report = clusters.report().await?;
    println!("green in B → blue in A: {report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    assert!(report.color(Some(Color::Blue)).emissions > 0, "{report}");
    // Green is gone from B, and its gates' credential with it, in both clusters.
    assert!(clusters.home_secret("orders-green").await?.is_none());
    assert_eq!(clusters.home_account("orders-green").await?, (false, false));
    clusters.shutdown().await;
    Ok(())
}

/// While green runs in B: the Secret of its gates is there (Opaque, labelled, no owner, the
/// token's expiry annotated); its token, as the gates use it, gets and watches the ConfigMap in
/// A and is refused (403) any other ConfigMap, listing ConfigMaps and reading Secrets. Returns
/// the token.
async fn the_remote_gates_credential_is_that_configmaps_only(
    clusters: &TwoClusters,
) -> anyhow::Result<String> {
    let secret = clusters
        .home_secret("orders-green")
        .await?
        .context("no Secret orders-green-bluegreen-home in B while green runs there")?;
    assert_eq!(secret.type_.as_deref(), Some("Opaque"));
    assert!(secret.metadata.owner_references.is_none(), "{secret:?}");
    let labels = secret.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("bluegreen.dev/deployment").map(String::as_str),
        Some("orders")
    );
    assert_eq!(
        labels.get("bluegreen.dev/color").map(String::as_str),
        Some("green")
    );
    let expires = secret
        .metadata
        .annotations
        .clone()
        .unwrap_or_default()
        .get(remote_gate::TOKEN_EXPIRES_ANNOTATION)
        .cloned()
        .context("no token-expires annotation")?;
    expires.parse::<k8s_openapi::jiff::Timestamp>()?;
    assert_eq!(clusters.home_account("orders-green").await?, (true, true));
    let data = secret.data.unwrap_or_default();
    let token = String::from_utf8(data.get("token").context("no token")?.0.clone())?;
    let kubeconfig = String::from_utf8(data.get("kubeconfig").context("no kubeconfig")?.0.clone())?;
    assert!(kubeconfig.contains(&clusters.home.url()), "{kubeconfig}");

    let dir = tempfile::tempdir()?;
    let gate = clusters
        .gate_client_from_secret("orders-green", dir.path())
        .await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(gate.clone(), HOME_NS);
    configmaps.get("orders-bluegreen").await?;
    let watch = kube::api::WatchParams::default()
        .fields("metadata.name=orders-bluegreen")
        .timeout(1);
    drop(configmaps.watch(&watch, "0").await?);
    Api::<ConfigMap>::namespaced(clusters.a.clone(), HOME_NS)
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("other".into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await?;
    let forbidden = |r: Result<(), kube::Error>, what: &str| match r {
        Err(kube::Error::Api(s)) if s.code == 403 => Ok(()),
        other => Err(anyhow::anyhow!("{what}: expected 403, got {other:?}")),
    };
    forbidden(
        configmaps.get("other").await.map(drop),
        "get another ConfigMap",
    )?;
    forbidden(
        configmaps
            .list(&kube::api::ListParams::default())
            .await
            .map(drop),
        "list ConfigMaps",
    )?;
    forbidden(
        Api::<Secret>::namespaced(gate, HOME_NS)
            .get("cluster-b")
            .await
            .map(drop),
        "get a Secret",
    )?;
    Ok(token)
}

/// The controller replaces the token once less than `ROTATING.rotate_below` of it is left (here:
/// 5 s after it was issued): the Secret gets another token, which works like the first.
async fn the_token_is_rotated_and_the_new_one_works(
    clusters: &TwoClusters,
    first: &str,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + STEADY;
    let mut nudges = 0;
    loop {
        let secret = clusters
            .home_secret("orders-green")
            .await?
            .context("the Secret is gone")?;
        let token = secret
            .data
            .unwrap_or_default()
            .remove("token")
            .context("no token")?;
        if token.0 != first.as_bytes() {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the token was not rotated within {STEADY:?}"
        );
        nudges += 1;
        clusters.nudge(&format!("rotate-{nudges}")).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let dir = tempfile::tempdir()?;
    let gate = clusters
        .gate_client_from_secret("orders-green", dir.path())
        .await?;
    Api::<ConfigMap>::namespaced(gate, HOME_NS)
        .get("orders-bluegreen")
        .await?;
    Ok(())
}

/// Secrets in A whose clusters cannot be used: `wrong-key` (the kubeconfig under another key),
/// `garbage`, `exec` (a kubeconfig that would run a program), `unreachable` (a closed port) and
/// `no-crd` (`no_crd`, a cluster without the FlinkDeployment CRD).
async fn bad_secrets(clusters: &TwoClusters, no_crd: &LocalApiServer) -> anyhow::Result<()> {
    let unreachable = clusters
        .remote
        .kubeconfig_yaml()
        .replace(&clusters.remote.url(), "http://127.0.0.1:1");
    let exec = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://east:6443}\nusers:\n- name: u\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'touch /tmp/bluegreen-kubeconfig-exec-ran']}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";
    clusters
        .secret(
            "wrong-key",
            &[("config", clusters.remote.kubeconfig_yaml())],
        )
        .await?;
    clusters
        .secret("garbage", &[("kubeconfig", "clusters: [{".into())])
        .await?;
    clusters
        .secret("exec", &[("kubeconfig", exec.into())])
        .await?;
    clusters
        .secret("unreachable", &[("kubeconfig", unreachable)])
        .await?;
    clusters
        .secret("no-crd", &[("kubeconfig", no_crd.kubeconfig_yaml())])
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_cluster_that_cannot_be_used_is_refused_before_anything_is_touched()
-> anyhow::Result<()> {
    let clusters = two_clusters(true).await?;
    let no_crd = LocalApiServer::start(Options::default()).await?;
    bad_secrets(&clusters, &no_crd).await?;
    clusters.secret_of_b().await?;
    clusters.run_blue(|_| {}).await?;
    let blue = DeploymentRef::new(HOME_NS, "orders-blue");
    let job_id = clusters
        .flink_a
        .job(&blue)
        .expect("blue runs")
        .job_id
        .clone();

    let cases = [
        ("absent", "does not exist in this namespace"),
        ("wrong-key", "has no key \"kubeconfig\""),
        ("garbage", "cannot be used"),
        ("exec", "only inline credentials are accepted"),
        ("unreachable", "is not reachable"),
        ("no-crd", "does not serve FlinkDeployment"),
    ];
    for (secret, refusal) in cases {
        clusters
            .patch_spec(json!({"cluster": clusters.cluster_b(secret)}))
            .await?;
        let refused = clusters
            .wait_for(&format!("the refusal of Secret {secret}"), |f| {
                degraded(f).is_some_and(|(_, m)| m.contains(refusal))
            })
            .await?;
        let (reason, message) = degraded(&refused).expect("degraded");
        assert_eq!(reason, "InvalidSpec", "{message}");
        assert!(message.contains("`spec.cluster`"), "{message}");
        let status = refused.status.expect("status");
        assert!(status.transition.is_none(), "{secret}: {status:?}");
        assert_eq!(status.active_color, Some(Color::Blue));
    }
    assert!(
        !std::path::Path::new("/tmp/bluegreen-kubeconfig-exec-ran").exists(),
        "the exec plugin ran"
    );

    // A usable cluster, but the running job's savepoints go to a directory only A reaches.
    clusters
        .patch_spec(json!({
            "cluster": clusters.cluster_b("cluster-b"),
            "coordination": {"sharedStorage": null},
        }))
        .await?;
    let refused = clusters
        .wait_for("the refusal of local storage", |f| {
            degraded(f).is_some_and(|(_, m)| m.contains("a path only one cluster reaches"))
        })
        .await?;
    let (_, message) = degraded(&refused).expect("degraded");
    assert!(
        message.contains("flinkConfiguration[\"state.savepoints.dir\"]"),
        "{message}"
    );
    assert!(refused.status.expect("status").transition.is_none());

    // Nothing was touched: blue runs the same job in A, nothing was created in B.
    assert_eq!(
        clusters.flink_a.job(&blue).expect("blue runs").job_id,
        job_id
    );
    assert_eq!(
        clusters.children().await?,
        (vec!["orders-blue".into()], vec![])
    );
    no_crd.shutdown().await;
    clusters.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_deployed_straight_to_another_cluster_is_deleted_there_with_its_resource()
-> anyhow::Result<()> {
    let clusters = two_clusters(true).await?;
    clusters.secret_of_b().await?;
    let cluster = serde_json::from_value(clusters.cluster_b(SECRET))?;
    clusters
        .run_blue(|spec| spec.cluster = Some(cluster))
        .await?;
    assert_eq!(
        clusters.children().await?,
        (vec![], vec!["orders-blue".into()])
    );
    // The remote child has no owner there: only the finalizer deletes it.
    let blue = clusters.children_in_b().get("orders-blue").await?;
    assert!(blue.metadata.owner_references.is_none(), "{blue:?}");
    assert!(clusters.home_secret("orders-blue").await?.is_some());
    clusters
        .fbgds()
        .delete("orders", &kube::api::DeleteParams::default())
        .await?;
    let deadline = tokio::time::Instant::now() + STEADY;
    while clusters.fbgds().get_opt("orders").await?.is_some() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the resource was not deleted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(clusters.children().await?, (vec![], vec![]));
    assert!(clusters.home_secret("orders-blue").await?.is_none());
    assert_eq!(clusters.home_account("orders-blue").await?, (false, false));
    clusters.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_without_a_home_api_server_is_refused_and_once_named_the_credential_precedes_the_child()
-> anyhow::Result<()> {
    let clusters = blue_in_a(false).await?;
    clusters
        .patch_spec(json!({"cluster": clusters.cluster_b("cluster-b")}))
        .await?;
    let refused = clusters
        .wait_for("the refusal of a move without a home API server", |f| {
            degraded(f).is_some_and(|(_, m)| m.contains("homeApiServer"))
        })
        .await?;
    let (reason, message) = degraded(&refused).expect("degraded");
    assert_eq!(reason, "InvalidSpec", "{message}");
    assert!(
        message.contains("`spec.cluster.homeApiServer`"),
        "{message}"
    );
    assert!(message.contains("--home-api-server"), "{message}");
    assert!(refused.status.expect("status").transition.is_none());
    assert_eq!(
        clusters.children().await?,
        (vec!["orders-blue".into()], vec![])
    );
    // Named per resource, the move goes ahead: the status records where green goes, then its
    // gates' Secret is written there, then green is created (here B refuses it at first).
    let green_apply = RequestMatch::verb(Verb::Patch)
        .resource("flinkdeployments")
        .name("orders-green");
    clusters.remote.faults().fail_next(green_apply, 1_000, 500);
    let mut cluster = clusters.cluster_b("cluster-b");
    cluster["homeApiServer"] = json!(clusters.home.url());
    clusters.patch_spec(json!({"cluster": cluster})).await?;
    clusters
        .wait_for("green's cluster recorded", |f| {
            f.status
                .as_ref()
                .is_some_and(|s| s.clusters.green.is_some())
        })
        .await?;
    let deadline = tokio::time::Instant::now() + STEADY;
    while clusters.home_secret("orders-green").await?.is_none() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no Secret for green's gates in B"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        clusters.children().await?,
        (vec!["orders-blue".into()], vec![]),
        "the Secret is written before the child"
    );
    clusters.remote.faults().clear();
    clusters.wait_steady(Color::Green).await?;
    assert!(clusters.home_secret("orders-green").await?.is_some());
    clusters.shutdown().await;
    Ok(())
}
