//! End-to-end handovers of **real Flink 1.20 jobs**: the unchanged controller drives the example
//! job (`examples/jobs`, a FileSink committed on checkpoints) through the local API server, with
//! every FlinkDeployment run as a real MiniCluster JVM by the real-mode runner and each job's gates
//! fed by the real `bluegreen-sidecar`. Real time, deletion delay 0 s and a checkpoint interval
//! (60 s) longer than every wait of a handover: the outgoing job's last records are committed only
//! by the stop-with-savepoint of the teardown. The file ledger reads only committed part files.
//! Flink faults on real jobs: an incoming job that cannot start or whose gates say the other
//! color, an incoming job restarting right
//! after promotion, the outgoing job failing and then both failing while W is set.
//!
//! Needs the jars built by `scripts/test` (Flink from PyPI, the launcher, the gate and the example
//! job) and `cargo build -p bluegreen-sidecar`; without a `java` on the PATH every test says so and
//! passes without running.

use std::time::Duration;

use anyhow::ensure;
use bluegreen_controller::resource::RestoreFrom;
use bluegreen_e2e::real::{
    Bed, UPGRADE, assert_exactly_once, progressing, set_action, upgrade_step, upgrade_to,
    wait_taken,
};
use bluegreen_examples::real::ExampleJob;
use bluegreen_local_flink::file_ledger::{self, Expectation};
use bluegreen_protocol::Color;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_real_upgrades_emit_every_record_exactly_once() -> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let output = bed.output("out");
    let stack = &bed.stack;
    let mut job = ExampleJob::new(&output);
    bed.deploy("orders", &job).await?;
    let mut color = Color::Blue;
    let steps: [(&str, i32, Option<RestoreFrom>); 5] = [
        ("v2", 2, None),
        ("v1", 3, None),
        ("v2", 3, Some(RestoreFrom::LastCheckpoint)),
        ("v1", 2, Some(RestoreFrom::Savepoint)),
        ("v2", 2, None),
    ];
    for step in steps {
        color = upgrade_step(stack, "orders", &mut job, color, step).await?;
        let report = assert_exactly_once(stack, "orders", &output, true).await?;
        eprintln!("{report}");
    }
    let status = stack.fbgds().get("orders").await?.status.expect("status");
    assert_eq!(status.epoch, 5);
    let report = stack.file_report("orders", &output, true).await?;
    assert!(report.lines[&Color::Blue] > 1000, "{report}");
    assert!(report.lines[&Color::Green] > 1000, "{report}");
    bed.stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_sink_that_cannot_survive_a_handover_is_refused_before_any_record()
-> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let output = bed.output("out");
    let stack = &bed.stack;
    let mut job = ExampleJob::new(&output);
    // FileSink with its default rolling policy, as a user would write it: its in-progress part
    // file is not committed by a stop-with-savepoint without drain.
    job.extra_args = vec!["--rolling".into(), "default".into()];
    stack
        .create("orders", job.spec(&bed.artifacts.job_jar))
        .await?;
    // The whole refusal, to its last words, reaches a condition (a user once saw it cut short).
    let fbgd = stack
        .wait_for("orders", UPGRADE, "the whole refusal in the status", |f| {
            f.status.as_ref().is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.message.contains("OnCheckpointRollingPolicy")
                        && c.message.contains("to keep size/time rolls as well")
                })
            })
        })
        .await?;
    let status = fbgd.status.expect("status");
    assert_eq!(status.active_color, None, "{status:?}");
    let report = file_ledger::read_dir(&output, &Expectation::new(Color::Blue));
    assert!(
        report.as_ref().map_or(true, |r| r.total_lines() == 0),
        "no record may be written: {report:?}"
    );
    bed.stack.shutdown().await;
    Ok(())
}

/// Two incoming jobs that must never get W, one after the other on one blue job: one that cannot
/// start, and one whose gates were built with the other color (a fixed `--color BLUE` in the
/// template: before gates said their color, such a job was promoted and both jobs wrote what blue
/// owns). Each handover is aborted before W; blue keeps every record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incoming_jobs_that_cannot_start_or_say_the_other_color_are_aborted_and_blue_keeps_every_record()
-> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let output = bed.output("out");
    let stack = &bed.stack;
    let job = ExampleJob::new(&output);
    bed.deploy("orders", &job).await?;
    let aborted = |n: usize| {
        move |f: &bluegreen_controller::resource::FlinkBlueGreenDeployment| {
            f.status.as_ref().is_some_and(|s| {
                s.transition.is_none()
                    && s.history
                        .iter()
                        .filter(|h| h.outcome == bluegreen_controller::resource::Outcome::Aborted)
                        .count()
                        == n
            })
        }
    };
    stack
        .patch_spec(
            "orders",
            json!({"template": {"spec": {
                "image": "example.com/bluegreen-example:v3",
                "job": {"entryClass": "io.bluegreen.examples.NoSuchJob"},
            }}}),
        )
        .await?;
    stack
        .wait_for("orders", UPGRADE, "the aborted handover", aborted(1))
        .await?;
    let status = stack.fbgds().get("orders").await?.status.expect("status");
    assert_eq!(status.active_color, Some(Color::Blue));
    let reason = status.history[0].reason.clone().unwrap_or_default();
    assert!(
        reason.contains("NoSuchJob"),
        "the reason names the cause: {reason}"
    );
    // Green told it is blue: it runs, its gates say color=BLUE, and it never gets W.
    let wrong = ExampleJob {
        version: "v2".into(),
        extra_args: vec!["--color".into(), "BLUE".into()],
        ..job.clone()
    };
    let mut patch = wrong.template_patch();
    patch["template"]["spec"]["job"]["entryClass"] = json!(bluegreen_examples::real::ENTRY_CLASS);
    stack.patch_spec("orders", patch).await?;
    stack
        .wait_for("orders", UPGRADE, "the second aborted handover", aborted(2))
        .await?;
    let status = stack.fbgds().get("orders").await?.status.expect("status");
    assert_eq!(status.active_color, Some(Color::Blue));
    let reason = status.history[0].reason.clone().unwrap_or_default();
    assert!(
        reason.contains("GateColorMismatch") && reason.contains("report color=BLUE"),
        "the reason names the cause: {reason}"
    );
    // Blue kept running and emitting alone.
    let report = assert_exactly_once(stack, "orders", &output, true).await?;
    assert_eq!(
        report.lines.get(&Color::Green).copied().unwrap_or(0),
        0,
        "{report}"
    );
    bed.stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_chained_into_the_source_vertex_and_two_gated_sinks_hand_over() -> anyhow::Result<()>
{
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let stack = &bed.stack;
    for (name, topology) in [("chained", "chained"), ("twosinks", "two-sinks")] {
        let output = bed.output(name);
        let mut job = ExampleJob::new(&output);
        job.topology = topology.into();
        bed.deploy(name, &job).await?;
        if topology == "two-sinks" {
            // Both gates are chained into one vertex under one operator name; each has its own
            // metric id, and the controller reads both (every subtask of each).
            let gates = blue_gate_reports(stack, name).await?;
            assert_eq!(gates, 2 * 2, "two gates at parallelism 2");
        }
        job.version = "v2".into();
        upgrade_to(stack, name, &job, Color::Green).await?;
        stack.commit_active(name).await?;
        // The chained topology has no keyed state: its lines carry count 0.
        let counts = topology != "chained";
        let dirs = if topology == "two-sinks" {
            vec![output.join("a"), output.join("b")]
        } else {
            vec![output.clone()]
        };
        for dir in dirs {
            let report = stack.file_report(name, &dir, counts).await?;
            assert!(
                report.is_exactly_once_by_owner(),
                "{name} {}: {report}",
                dir.display()
            );
            assert!(
                report.lines.get(&Color::Green).copied().unwrap_or(0) > 0,
                "{report}"
            );
        }
        stack
            .fbgds()
            .delete(name, &kube::api::DeleteParams::default())
            .await?;
    }
    bed.stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_job_restarting_right_after_promotion_emits_nothing_twice() -> anyhow::Result<()>
{
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let output = bed.output("out");
    let trigger = bed.output("fail-now");
    let stack = &bed.stack;
    let mut job = ExampleJob::new(&output);
    job.extra_args = vec!["--fail-trigger".into(), trigger.display().to_string()];
    bed.deploy("orders", &job).await?;
    job.version = "v2".into();
    upgrade_to(stack, "orders", &job, Color::Green).await?;
    // Green has taken no checkpoint (60 s interval): it restarts from blue's savepoint and reads
    // again every record since, including those t <= W that blue emitted.
    std::fs::write(&trigger, b"")?;
    let deadline = tokio::time::Instant::now() + Duration::from_mins(1);
    while trigger.exists() {
        ensure!(
            tokio::time::Instant::now() < deadline,
            "the job never took the fail trigger"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Wait until the restarted job is RUNNING again, then commit what it read.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        match stack.commit_active("orders").await {
            Ok(()) => break,
            Err(e) if tokio::time::Instant::now() < deadline => {
                eprintln!("waiting for the restarted job: {e:#}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
    }
    let report = stack.file_report("orders", &output, true).await?;
    assert!(report.is_exactly_once_by_owner(), "{report}");
    bed.stack.shutdown().await;
    Ok(())
}

/// How many gate reports the controller's REST reader finds in the blue job of `name`.
async fn blue_gate_reports(
    stack: &bluegreen_examples::LocalStack,
    name: &str,
) -> anyhow::Result<usize> {
    let child = format!("{name}-blue");
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        stack.client.clone(),
        bluegreen_examples::NAMESPACE,
        &bluegreen_controller::context::flink_deployment_resource(),
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let obj = api.get(&child).await?;
        let job_id = obj.data["status"]["jobStatus"]["jobId"]
            .as_str()
            .map(str::to_owned);
        let rest = bluegreen_controller::flink_rest::FlinkRest::new(
            stack.ctx.http.clone(),
            &stack.ctx.rest_url_template,
            bluegreen_examples::NAMESPACE,
            &child,
        );
        if let Some(job_id) = job_id
            && let Ok(obs) = rest.observe(&job_id, None, false).await
            && let Some(gates) = obs.gates.filter(|g| g.reports.len() >= 4)
        {
            return Ok(gates.reports.len());
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "fewer than 4 gate reports in {child} within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Flink faults on real jobs while W is set (promotion waits for a person): the outgoing job
/// fails and restarts from its own state, then both jobs fail at once and restart. Each job's
/// FileSink discards what it had not committed; the handover then completes and the committed
/// files hold every record once, by its owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outgoing_job_failing_then_both_failing_while_w_is_set_lose_nothing()
-> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let output = bed.output("out");
    let fail_blue = bed.output("fail-blue");
    let fail_green = bed.output("fail-green");
    let stack = &bed.stack;
    let mut job = ExampleJob::new(&output);
    job.extra_args = vec!["--fail-trigger".into(), fail_blue.display().to_string()];
    bed.deploy("orders", &job).await?;
    stack
        .patch_spec("orders", json!({"coordination": {"promotion": "manual"}}))
        .await?;
    job.version = "v2".into();
    job.extra_args = vec!["--fail-trigger".into(), fail_green.display().to_string()];
    stack.patch_spec("orders", job.template_patch()).await?;
    stack
        .wait_for("orders", UPGRADE, "awaiting promotion", |f| {
            progressing(f, "AwaitingPromotion")
        })
        .await?;
    // The outgoing job fails alone, then (once it runs again) both fail at once.
    std::fs::write(&fail_blue, b"")?;
    wait_taken(&fail_blue).await?;
    stack
        .wait_for("orders", UPGRADE, "awaiting promotion again", |f| {
            progressing(f, "AwaitingPromotion")
        })
        .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    std::fs::write(&fail_blue, b"")?;
    std::fs::write(&fail_green, b"")?;
    wait_taken(&fail_blue).await?;
    wait_taken(&fail_green).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    set_action(stack, "orders", "promote").await?;
    stack.wait_steady("orders", Color::Green, UPGRADE).await?;
    let report = assert_exactly_once(stack, "orders", &output, true).await?;
    eprintln!("{report}");
    bed.stack.shutdown().await;
    Ok(())
}
