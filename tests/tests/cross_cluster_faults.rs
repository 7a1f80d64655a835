//! Faults of a job moved to another cluster (issue 27), each with its stated outcome, on the
//! simulated two-cluster bed (`bluegreen_e2e::two_clusters`): two local API servers in one
//! process, A (home: the resource, the ConfigMap, the controller) and B, each with a simulated
//! Flink runner on one clock, one snapshot directory both reach and one ledger. The controller
//! reaches B (its Secret names B through the proxy `to_b`), and B's gates reach A (with the
//! credential the controller writes in B, for `spec.cluster.homeApiServer`, the proxy `to_a`),
//! through TCP proxies a test can cut. Every test ends with the ledger at 0 duplicates and 0
//! losses.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bluegreen_controller::resource::{Outcome, Phase};
use bluegreen_e2e::two_clusters::{
    HOME_NS, REMOTE_NS, SECRET, STEADY, Setup, TwoClusters, degraded, phase_of,
};
use bluegreen_gate::{ConfigMapSource, SharedState, SourceOptions, StateOptions};
use bluegreen_local_flink::DeploymentRef;
use bluegreen_protocol::Color;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use serde_json::json;

/// Starts both clusters and the controller, and creates the Secret of B (through `to_b`).
async fn start() -> anyhow::Result<TwoClusters> {
    TwoClusters::start(Setup {
        identity: "cross-cluster-faults",
        rbac: false,
        home_api: false,
        gate_tokens: None,
        secret_through_to_b: true,
    })
    .await
}

/// Starts the move of the job to B with a parallelism change.
async fn move_to_b(clusters: &TwoClusters) -> anyhow::Result<()> {
    clusters
        .patch(json!({"spec": {
            "cluster": clusters.cluster_b_through_to_a(),
            "template": {"spec": {"job": {"parallelism": 3}}},
        }}))
        .await
}

/// Both clusters with `orders` moved to B: blue in A, then green steady in B.
async fn moved_to_b() -> anyhow::Result<TwoClusters> {
    let clusters = start().await?;
    clusters.run_blue(|_| {}).await?;
    move_to_b(&clusters).await?;
    clusters.wait_steady(Color::Green).await?;
    Ok(clusters)
}

/// Asserts 0 duplicates and 0 losses, and that `color` emitted.
async fn assert_exactly_once(
    clusters: &TwoClusters,
    what: &str,
    color: Color,
) -> anyhow::Result<()> {
    let report = clusters.report().await?;
    println!("{what}: {report}");
    anyhow::ensure!(report.is_exactly_once_by_owner(), "{what}: {report}");
    anyhow::ensure!(
        report.color(Some(color)).emissions > 0,
        "{what}: {color} emitted nothing: {report}"
    );
    Ok(())
}

/// Outcome: B's API unreachable from the controller before W is set, for longer than
/// `abortGracePeriod`: the handover aborts, blue in A keeps every record (the same job), and
/// green is deleted in B once B answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_incoming_cluster_unreachable_before_w_aborts_and_blue_keeps_every_record()
-> anyhow::Result<()> {
    let clusters = start().await?;
    clusters
        .run_blue(|spec| {
            // Green waits 5 s for minReady before W is proposed: B is cut within that.
            spec.coordination.min_ready = "5s".into();
            spec.coordination.abort_grace_period = "6s".into();
        })
        .await?;
    let blue = DeploymentRef::new(HOME_NS, "orders-blue");
    let blue_job = clusters
        .flink_a
        .job(&blue)
        .context("blue runs")?
        .job_id
        .clone();
    move_to_b(&clusters).await?;
    clusters.wait_green_in_b().await?;
    clusters.to_b.cut();
    let waiting = clusters
        .wait_degraded("ClusterUnavailable", "abortGracePeriod")
        .await?;
    // Before W is set (the abort's condition). B is cut within minReady of green's start, so W
    // is usually not yet proposed (Deploying); a test held up for seconds may cut it after the
    // proposal (ConfirmingToggle), where the abort is the same. One run in about 13 failed an
    // assertion of Deploying alone; its phase was not kept.
    let before_w = phase_of(&waiting);
    assert!(
        matches!(before_w, Some(Phase::Deploying | Phase::ConfirmingToggle)),
        "the first ClusterUnavailable came in {before_w:?}, not before W"
    );
    let aborting = clusters.wait_phase(Phase::Aborting).await?;
    let (reason, message) = degraded(&aborting).context("degraded")?;
    assert_eq!(reason, "ClusterUnavailable", "{message}");
    assert!(message.contains("before W was set"), "{message}");
    // Still cut: the abort waits to delete green, recorded in the status.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let still = clusters.fbgds().get("orders").await?;
    assert_eq!(phase_of(&still), Some(Phase::Aborting));
    assert!(
        still
            .status
            .as_ref()
            .context("status")?
            .clusters
            .green
            .is_some(),
        "green's cluster was forgotten"
    );
    clusters.to_b.heal();
    clusters.nudge("healed").await?;
    let back = clusters
        .wait_for("the abort done", |f| {
            f.status
                .as_ref()
                .is_some_and(|s| s.transition.is_none() && s.active_color == Some(Color::Blue))
        })
        .await?;
    let (reason, _) = degraded(&back).context("degraded")?;
    assert_eq!(reason, "HandoverAborted");
    let status = back.status.context("status")?;
    assert_eq!(
        status.history.first().map(|h| h.outcome),
        Some(Outcome::Aborted)
    );
    assert!(status.clusters.is_empty(), "{status:?}");
    assert!(clusters.green_in_b().await?.is_none(), "green left in B");
    assert_eq!(
        clusters.flink_a.job(&blue).context("blue runs")?.job_id,
        blue_job
    );
    let events = clusters.event_reasons().await?;
    for reason in ["ClusterUnavailable", "HandoverAborting"] {
        assert!(
            events.iter().any(|e| e == reason),
            "no {reason}: {events:?}"
        );
    }
    assert_exactly_once(&clusters, "aborted move", Color::Blue).await?;
    clusters.shutdown().await;
    Ok(())
}

/// Outcome: B's API unreachable after W is set: nothing is decided, nothing lost
/// (`Degraded/ClusterUnavailable`, its event); once B answers the handover goes on forward.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_incoming_cluster_unreachable_after_w_is_waited_for_and_the_move_completes()
-> anyhow::Result<()> {
    let clusters = start().await?;
    clusters
        .run_blue(|spec| {
            // Held in ToggleSet (W set) until promoted by hand.
            spec.coordination.promotion = bluegreen_controller::resource::Promotion::Manual;
            spec.coordination.abort_grace_period = "3s".into();
        })
        .await?;
    move_to_b(&clusters).await?;
    clusters.wait_phase(Phase::ToggleSet).await?;
    clusters.to_b.cut();
    clusters
        .wait_degraded("ClusterUnavailable", "status.clusters.green")
        .await?;
    // Longer than abortGracePeriod: never aborted after W.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let waiting = clusters.fbgds().get("orders").await?;
    assert_eq!(phase_of(&waiting), Some(Phase::ToggleSet));
    clusters.to_b.heal();
    clusters.promote().await?;
    clusters.wait_steady(Color::Green).await?;
    assert!(
        clusters
            .event_reasons()
            .await?
            .iter()
            .any(|e| e == "ClusterUnavailable")
    );
    assert_exactly_once(&clusters, "move with B cut after W", Color::Green).await?;
    clusters.shutdown().await;
    Ok(())
}

/// Outcome: the kubeconfig Secret deleted while green runs in B: the same wait,
/// `Degraded/ClusterUnavailable` naming the Secret; the same job Ready again once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_kubeconfig_secret_is_waited_for_naming_it() -> anyhow::Result<()> {
    let clusters = moved_to_b().await?;
    let green = DeploymentRef::new(REMOTE_NS, "orders-green");
    let job_id = clusters
        .flink_b
        .job(&green)
        .context("green runs")?
        .job_id
        .clone();
    let secrets: Api<Secret> = Api::namespaced(clusters.a.clone(), HOME_NS);
    let kept = secrets.get(SECRET).await?;
    secrets.delete(SECRET, &DeleteParams::default()).await?;
    clusters.nudge("deleted").await?;
    let down = clusters
        .wait_degraded("ClusterUnavailable", "Secret \"cluster-b\" does not exist")
        .await?;
    assert!(down.status.context("status")?.clusters.green.is_some());
    secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some(SECRET.into()),
                    ..ObjectMeta::default()
                },
                data: kept.data,
                ..Secret::default()
            },
        )
        .await?;
    clusters.nudge("recreated").await?;
    clusters.wait_ready("Ready again").await?;
    assert_eq!(
        clusters.flink_b.job(&green).context("green runs")?.job_id,
        job_id
    );
    assert_exactly_once(&clusters, "Secret deleted and back", Color::Green).await?;
    clusters.shutdown().await;
    Ok(())
}

/// Outcome, as for a child in one cluster: green deleted by hand in B before W is created again
/// there from the handover's savepoint (its gates held everything: it emitted nothing); deleted
/// after W it is not (that would emit records twice): `Degraded/IncomingMissingAfterToggle`
/// while blue keeps emitting `t <= W`, the controller keeps looking for it in B, and once a
/// person recreates it there from its latest checkpoint the move completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_child_deleted_by_hand_before_or_after_w_loses_nothing() -> anyhow::Result<()> {
    let clusters = start().await?;
    clusters
        .run_blue(|spec| {
            spec.coordination.min_ready = "5s".into();
            spec.coordination.promotion = bluegreen_controller::resource::Promotion::Manual;
        })
        .await?;
    move_to_b(&clusters).await?;
    clusters.wait_green_in_b().await?;
    clusters.delete_green_in_b().await?;
    assert_eq!(
        phase_of(&clusters.fbgds().get("orders").await?),
        Some(Phase::Deploying),
        "W was proposed"
    );
    clusters.wait_phase(Phase::ToggleSet).await?;
    let green = DeploymentRef::new(REMOTE_NS, "orders-green");
    let job = clusters.flink_b.job(&green).context("green runs in B")?;
    clusters
        .flink_b
        .wait_for_job(&green, Duration::from_secs(20), |v| {
            v.completed_checkpoints >= 1
        })
        .await?;

    let mut child = clusters.green_in_b().await?.context("green in B")?;
    clusters.delete_green_in_b().await?;
    let checkpoint = job
        .view()
        .latest_checkpoint
        .context("green's checkpoint")?
        .path
        .clone();
    let missing = clusters
        .wait_degraded("IncomingMissingAfterToggle", "latest checkpoint")
        .await?;
    assert!(
        missing.status.context("status")?.clusters.green.is_some(),
        "green's cluster was forgotten"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(clusters.green_in_b().await?.is_none(), "recreated after W");

    // A person recreates it in B from its latest checkpoint.
    child.metadata = ObjectMeta {
        name: child.metadata.name.take(),
        annotations: child.metadata.annotations.take(),
        labels: child.metadata.labels.take(),
        ..ObjectMeta::default()
    };
    child.data["spec"]["job"]["initialSavepointPath"] = json!(checkpoint);
    child
        .data
        .as_object_mut()
        .context("object")?
        .remove("status");
    clusters
        .children_in_b()
        .create(&PostParams::default(), &child)
        .await?;
    clusters.promote().await?;
    clusters.wait_steady(Color::Green).await?;
    assert_exactly_once(&clusters, "green deleted before and after W", Color::Green).await?;
    clusters.shutdown().await;
    Ok(())
}

/// Outcome: A's API unreachable from B's gates. They keep their last good state: with green
/// active in B and no handover, green keeps emitting (a steady state is never wrong to keep). A
/// handover started meanwhile cannot get W acknowledged by them, so it waits in
/// `ConfirmingToggle` (blue in A holds everything, green passes as before: nothing twice, nothing
/// lost; aborted after `abortGracePeriod` if it lasts); once A answers it completes. The same
/// feeder as the gates' (a `ConfigMapSource` through the cut proxy) shows what the metrics
/// `bluegreen_gate_source_stale` and `bluegreen_gate_source_staleness_seconds` export.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_home_api_unreachable_from_remote_gates_keeps_their_last_state() -> anyhow::Result<()> {
    let clusters = moved_to_b().await?;
    let feeder = SharedState::new(StateOptions {
        max_staleness: Some(Duration::from_secs(2)),
    });
    let _source = ConfigMapSource::new(
        clusters
            .to_a
            .client_of(&clusters.home.kubeconfig_yaml(), &clusters.home.url())
            .await?,
        HOME_NS,
        "orders-bluegreen",
        Arc::clone(&feeder),
    )
    .with_options(SourceOptions {
        probe_interval: Duration::from_millis(500),
    })
    .spawn();
    let deadline = tokio::time::Instant::now() + STEADY;
    while feeder.current().is_none() {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "no state read");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let last_good = feeder.current();

    clusters.to_a.cut();
    let deadline = tokio::time::Instant::now() + STEADY;
    while !feeder.is_stale() {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "never stale");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(feeder.current(), last_good, "the last good state is kept");
    let green = DeploymentRef::new(REMOTE_NS, "orders-green");
    let before = clusters
        .flink_b
        .job(&green)
        .context("green")?
        .view()
        .completed_checkpoints;
    clusters
        .flink_b
        .wait_for_job(&green, Duration::from_secs(20), |v| {
            v.completed_checkpoints >= before + 2
        })
        .await?;
    assert_exactly_once(&clusters, "gates cut from A, steady", Color::Green).await?;

    // Back to A while B's gates cannot see the ConfigMap: W is never acknowledged.
    clusters
        .patch(json!({"spec": {
            "cluster": null,
            "template": {"spec": {"job": {"parallelism": 2}}},
        }}))
        .await?;
    clusters.wait_phase(Phase::ConfirmingToggle).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let waiting = clusters.fbgds().get("orders").await?;
    assert_eq!(phase_of(&waiting), Some(Phase::ConfirmingToggle));
    let progressing = waiting
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Progressing"))
        .context("Progressing")?;
    assert_eq!(
        progressing.reason, "GatesNotAcknowledged",
        "{progressing:?}"
    );
    assert!(feeder.staleness() > Duration::from_secs(3));
    assert_eq!(feeder.current(), last_good);

    clusters.to_a.heal();
    clusters.wait_steady(Color::Blue).await?;
    assert!(!feeder.is_stale(), "confirmed again");
    assert_exactly_once(&clusters, "back to A after the gates' cut", Color::Blue).await?;
    clusters.shutdown().await;
    Ok(())
}
