//! `bluegreen-upgrade-bench`: the output pause users feel during an upgrade, measured on real
//! Flink for the same example job on the same input, upgraded twice in one run: in place the
//! Apache operator's way (`upgradeMode: savepoint` on a plain `FlinkDeployment`: stop with a
//! savepoint, restore the new version from it) and handed over by the controller. For each it
//! prints the longest gap between two commits of the output and the latency of every record (its
//! scheduled arrival at the source → visible in committed output) as p50, p99 and max, over the
//! steady state before the upgrade and over the upgrade window. `scripts/bench upgrade` runs it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use bluegreen_controller::context::flink_deployment_resource;
use bluegreen_controller::resource::FlinkBlueGreenDeploymentSpec;
use bluegreen_examples::real::{Artifacts, ExampleJob, java_available};
use bluegreen_examples::visibility::{Summary, Watcher, now_ms};
use bluegreen_examples::{LocalStack, NAMESPACE};
use bluegreen_protocol::Color;
use bluegreen_protocol::flink::JobStatus;
use clap::Parser;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

/// Measures an in-place upgrade and a bluegreen handover of the example job on real Flink.
#[derive(Parser, Debug)]
#[command(name = "bluegreen-upgrade-bench")]
struct Args {
    /// Seconds of steady state measured before each upgrade.
    #[arg(long, default_value_t = 30)]
    steady_s: u64,
    /// Seconds measured after each upgrade has ended (its window ends then).
    #[arg(long, default_value_t = 20)]
    after_s: u64,
    /// The checkpoint interval of both jobs (the FileSink commits on checkpoints), ms.
    #[arg(long, default_value_t = 2_000)]
    checkpoint_ms: u64,
    /// The handover's `coordination.minReady` (the CRD's default is 10s).
    #[arg(long, default_value = "10s")]
    min_ready: String,
    /// The cargo profile whose sidecar to run (`debug` or `release`).
    #[arg(long, default_value = "debug")]
    profile: String,
}

/// One upgrade's measurement.
struct Run {
    name: &'static str,
    /// The controller's events during the upgrade: reason, seconds since the spec change.
    phases: Vec<(String, f64)>,
    steady: Summary,
    upgrade: Summary,
    /// Spec change → the new version running (in place) or steady on green (handover).
    took: Duration,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(
        args.steady_s > 10,
        "--steady-s {} is too short: the steady state leaves out its first 10 s (the job's start); give at least 11",
        args.steady_s
    );
    ensure!(
        java_available(),
        "no `java` on the PATH: the bench runs real Flink"
    );
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("examples/ is inside the repository")?
        .to_owned();
    let artifacts = Artifacts::find(&repo, &args.profile)?;
    let work = tempfile::tempdir()?;
    let stack = LocalStack::start_real(&artifacts, &work.path().join("flink")).await?;
    let in_place = in_place(&stack, &artifacts, &args, &work.path().join("in-place")).await?;
    let handover = handover(&stack, &artifacts, &args, &work.path().join("handover")).await?;
    stack.shutdown().await;
    print(&args, &[in_place, handover]);
    Ok(())
}

/// The example job for the bench: no jitter (event time = scheduled arrival), no idle split.
fn job(output: &Path) -> ExampleJob {
    let mut job = ExampleJob::new(output);
    job.extra_args = ["--jitter-ms", "0", "--idle-split", "-1"]
        .map(str::to_owned)
        .to_vec();
    job
}

/// The job's resource spec with the bench's checkpoint interval.
fn bench_spec(job: &ExampleJob, jar: &Path, args: &Args) -> FlinkBlueGreenDeploymentSpec {
    let mut spec = job.spec(jar);
    spec.template.spec.flink_configuration.insert(
        "execution.checkpointing.interval".into(),
        format!("{}ms", args.checkpoint_ms),
    );
    spec.coordination.min_ready.clone_from(&args.min_ready);
    spec
}

/// The job's FlinkDeployment spec as JSON, with the bench's checkpoint interval.
fn child_spec(job: &ExampleJob, jar: &Path, args: &Args) -> anyhow::Result<serde_json::Value> {
    Ok(serde_json::to_value(
        bench_spec(job, jar, args).template.spec,
    )?)
}

/// A plain FlinkDeployment upgraded in place: `upgradeMode: savepoint`, as the Apache operator
/// does it.
async fn in_place(
    stack: &LocalStack,
    artifacts: &Artifacts,
    args: &Args,
    output: &Path,
) -> anyhow::Result<Run> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        stack.client.clone(),
        NAMESPACE,
        &flink_deployment_resource(),
    );
    let mut job = job(output);
    // No controller, no sidecar: the gate runs with a static RUNNING state.
    job.extra_args
        .extend(["--color", "BLUE", "--state-source", "static-running"].map(str::to_owned));
    let mut object = DynamicObject::new("inplace", &flink_deployment_resource()).within(NAMESPACE);
    object.data = json!({"spec": child_spec(&job, &artifacts.job_jar, args)?});
    api.create(&PostParams::default(), &object).await?;
    let first = wait_job(&api, "inplace", None).await?;
    let mut watcher = Watcher::default();
    let measured = async {
        tokio::time::sleep(Duration::from_secs(args.steady_s)).await;
        let start = now_ms();
        job.version = "v2".into();
        let patch = json!({"spec": child_spec(&job, &artifacts.job_jar, args)?});
        api.patch("inplace", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        wait_job(&api, "inplace", Some(&first)).await?;
        let done = now_ms();
        tokio::time::sleep(Duration::from_secs(args.after_s)).await;
        anyhow::Ok((start, done))
    };
    let (start, done) = watch_while(&mut watcher, output, measured).await?;
    api.delete("inplace", &kube::api::DeleteParams::default())
        .await?;
    Ok(run(
        "in place (upgradeMode: savepoint)",
        &watcher,
        args,
        start,
        done,
    ))
}

/// The same job handed over by the controller.
async fn handover(
    stack: &LocalStack,
    artifacts: &Artifacts,
    args: &Args,
    output: &Path,
) -> anyhow::Result<Run> {
    let mut job = job(output);
    stack
        .create("handover", bench_spec(&job, &artifacts.job_jar, args))
        .await?;
    stack
        .wait_steady("handover", Color::Blue, Duration::from_mins(3))
        .await?;
    let mut watcher = Watcher::default();
    let measured = async {
        tokio::time::sleep(Duration::from_secs(args.steady_s)).await;
        let start = now_ms();
        job.version = "v2".into();
        stack.patch_spec("handover", job.template_patch()).await?;
        stack
            .wait_steady("handover", Color::Green, Duration::from_mins(3))
            .await?;
        let done = now_ms();
        tokio::time::sleep(Duration::from_secs(args.after_s)).await;
        anyhow::Ok((start, done))
    };
    let (start, done) = watch_while(&mut watcher, output, measured).await?;
    let report = stack.file_report("handover", output, true).await?;
    ensure!(report.is_exactly_once_by_owner(), "the handover: {report}");
    let mut run = run("bluegreen handover", &watcher, args, start, done);
    run.phases = timeline(stack, "handover", start).await?;
    Ok(run)
}

/// Runs `measured` while `watcher` polls `output`; returns what it returned.
async fn watch_while<T>(
    watcher: &mut Watcher,
    output: &Path,
    measured: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let dir: PathBuf = output.to_owned();
    let watching = watcher.watch(&dir, async {
        let _ = rx.await;
    });
    let measuring = async {
        let r = measured.await;
        let _ = tx.send(());
        r
    };
    let (polled, result) = tokio::join!(watching, measuring);
    polled?;
    result
}

/// The controller's events about `name` since `start_ms` (epoch ms): reason and seconds after it,
/// in order.
async fn timeline(
    stack: &LocalStack,
    name: &str,
    start_ms: i64,
) -> anyhow::Result<Vec<(String, f64)>> {
    let mut out = Vec::new();
    for e in stack.events(name).await? {
        let (Some(reason), Some(at)) = (e.data["reason"].as_str(), e.data["eventTime"].as_str())
        else {
            continue;
        };
        let at: jiff::Timestamp = at.parse()?;
        let after = at.as_millisecond() - start_ms;
        if after >= 0 {
            out.push((reason.to_owned(), ratio(after, 1_000)));
        }
    }
    out.sort_by(|a, b| a.1.total_cmp(&b.1));
    Ok(out)
}

/// Waits until the FlinkDeployment `name` runs a job other than `previous`; returns its id.
async fn wait_job(
    api: &Api<DynamicObject>,
    name: &str,
    previous: Option<&str>,
) -> anyhow::Result<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_mins(3);
    loop {
        let object = api.get(name).await?;
        let status = &object.data["status"]["jobStatus"];
        if status["state"] == JobStatus::Running.as_str()
            && let Some(id) = status["jobId"].as_str()
            && Some(id) != previous
        {
            return Ok(id.to_owned());
        }
        if tokio::time::Instant::now() > deadline {
            bail!(
                "{name} did not run a new job within 3 minutes: {}",
                object.data["status"]
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The figures of one upgrade: the steady state is the `steady_s` before the spec change (its
/// first 10 s left out, for the start), the upgrade window from the spec change to `after_s`
/// after the upgrade ended.
fn run(name: &'static str, w: &Watcher, args: &Args, start: i64, done: i64) -> Run {
    let steady_ms = i64::try_from(args.steady_s * 1000).unwrap_or(i64::MAX);
    let after_ms = i64::try_from(args.after_s * 1000).unwrap_or(i64::MAX);
    Run {
        name,
        phases: Vec::new(),
        steady: w.summary(start - steady_ms + 10_000, start),
        upgrade: w.summary(start, done + after_ms),
        took: Duration::from_millis(u64::try_from(done - start).unwrap_or(0)),
    }
}

/// `a / b`, for latencies and durations in ms (far below 2^52).
#[allow(clippy::cast_precision_loss)]
fn ratio(a: i64, b: i64) -> f64 {
    a as f64 / b.max(1) as f64
}

fn ms(v: Option<i64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v}"))
}

fn print(args: &Args, runs: &[Run]) {
    println!(
        "checkpoint interval {} ms, minReady {}, 4 splits x 50 records/s, steady {} s, after {} s",
        args.checkpoint_ms, args.min_ready, args.steady_s, args.after_s
    );
    println!(
        "{:<36} {:>8} | {:>7} {:>7} {:>7} {:>8} | {:>7} {:>7} {:>7} {:>8}",
        "upgrade", "took ms", "p50", "p99", "max", "max gap", "p50", "p99", "max", "max gap"
    );
    println!(
        "{:<45} | {:^40} | {:^40}",
        "", "steady state (ms)", "upgrade window (ms)"
    );
    for r in runs {
        println!(
            "{:<36} {:>8} | {:>7} {:>7} {:>7} {:>8} | {:>7} {:>7} {:>7} {:>8}",
            r.name,
            r.took.as_millis(),
            ms(r.steady.p50_ms),
            ms(r.steady.p99_ms),
            ms(r.steady.max_ms),
            ms(r.steady.max_gap_ms),
            ms(r.upgrade.p50_ms),
            ms(r.upgrade.p99_ms),
            ms(r.upgrade.max_ms),
            ms(r.upgrade.max_gap_ms),
        );
    }
    for r in runs.iter().filter(|r| !r.phases.is_empty()) {
        let phases: Vec<String> = r
            .phases
            .iter()
            .map(|(reason, s)| format!("{reason} {s:.1}"))
            .collect();
        println!(
            "{} events (s after the spec change): {}",
            r.name,
            phases.join(", ")
        );
    }
    if let [in_place, handover] = runs
        && let (Some(a), Some(b)) = (in_place.upgrade.max_ms, handover.upgrade.max_ms)
    {
        let goal = handover
            .steady
            .max_ms
            .map(|m| m + i64::try_from(args.checkpoint_ms).unwrap_or(0));
        println!(
            "upgrade-window max latency: in place {a} ms, bluegreen {b} ms ({:.1}x lower); goal: bluegreen max <= steady max + one checkpoint interval = {} ms: {}",
            ratio(a, b),
            ms(goal),
            if goal.is_some_and(|g| b <= g) {
                "met"
            } else {
                "NOT met"
            }
        );
    }
}
