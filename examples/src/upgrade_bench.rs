//! `bluegreen-upgrade-bench`: the output pause users feel during an upgrade, measured on real
//! Flink for the same example job on the same input, upgraded twice in one run: in place the
//! Apache operator's way (`upgradeMode: savepoint` on a plain `FlinkDeployment`: stop with a
//! savepoint, restore the new version from it) and handed over by the controller. For each it
//! prints the longest gap between two commits of the output and the latency of every record (its
//! scheduled arrival at the source → visible in committed output) as p50, p99 and max, over the
//! steady state before the upgrade and over the upgrade window. `scripts/bench upgrade` runs it.
//!
//! `--kafka` runs the example job's Kafka shape instead (`KafkaSource` → count → gate →
//! `KafkaSink` `EXACTLY_ONCE`) on a real broker, each upgrade with input and output topics of its
//! own: a record is visible when a `read_committed` consumer (`KafkaTool follow`) receives it, and
//! the `read_committed` lag (high watermark − last stable offset, all partitions) is sampled every
//! 250 ms; its peak is printed for both windows.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use bluegreen_controller::context::flink_deployment_resource;
use bluegreen_controller::resource::FlinkBlueGreenDeploymentSpec;
use bluegreen_examples::kafka::{self, Follower, KafkaBroker, LagWatch, ledger};
use bluegreen_examples::real::{Artifacts, ExampleJob, java_available};
use bluegreen_examples::visibility::{Summary, Watcher, now_ms};
use bluegreen_examples::{LocalStack, NAMESPACE};
use bluegreen_local_flink::file_ledger::{Expectation, FileLedgerReport, OutputLine, judge_lines};
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
    /// The checkpoint interval of both jobs (the FileSink and the KafkaSink commit on
    /// checkpoints), ms.
    #[arg(long, default_value_t = 2_000)]
    checkpoint_ms: u64,
    /// The handover's `coordination.minReady` (the CRD's default is 10s).
    #[arg(long, default_value = "10s")]
    min_ready: String,
    /// The cargo profile whose sidecar to run (`debug` or `release`).
    #[arg(long, default_value = "debug")]
    profile: String,
    /// Kafka in, Kafka out on a real broker (`scripts/kafka-jars.sh`): visible = received by a
    /// `read_committed` consumer; also the `read_committed` lag's peak.
    #[arg(long)]
    kafka: bool,
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
    /// Kafka: the `read_committed` lag's peak (records) in the steady state and in the upgrade
    /// window.
    lag: Option<(u64, u64)>,
}

/// Where a run's job writes, and how the output's visibility is watched.
enum Sink<'a> {
    /// A `FileSink` into this directory, listed every [`POLL`](bluegreen_examples::visibility::POLL).
    Files(PathBuf),
    /// A `KafkaSink` into `<name>-out` on this broker, from `<name>-in`.
    Kafka(&'a mut KafkaBroker, &'static str),
}

/// What follows a Kafka run's output topic.
struct KafkaWatch {
    follower: Follower,
    lag: LagWatch,
}

/// What was seen of a run's output.
struct Seen {
    watcher: Watcher,
    /// Kafka: every line the `read_committed` consumer received, and the lag samples.
    kafka: Option<(Vec<String>, LagWatch)>,
}

impl Sink<'_> {
    /// The example job for the bench: no jitter (event time = scheduled arrival), no idle split.
    fn job(&self) -> ExampleJob {
        match self {
            Self::Files(output) => {
                let mut job = ExampleJob::new(output);
                job.extra_args = ["--jitter-ms", "0", "--idle-split", "-1"]
                    .map(str::to_owned)
                    .to_vec();
                job
            }
            Self::Kafka(broker, name) => {
                let mut job = ExampleJob::new(Path::new("unused"));
                job.topology = "kafka".into();
                job.extra_args = kafka::job_args(
                    &broker.bootstrap,
                    &format!("{name}-in"),
                    &format!("{name}-out"),
                    0,
                );
                job
            }
        }
    }

    /// Just before the job starts. Kafka: the topics, the consumer and the lag sampler of the
    /// output.
    async fn prepare(&mut self) -> anyhow::Result<Option<KafkaWatch>> {
        let Self::Kafka(broker, name) = self else {
            return Ok(None);
        };
        let (input, output) = (format!("{name}-in"), format!("{name}-out"));
        broker
            .create_topics(&[(&input, kafka::PARTITIONS), (&output, kafka::PARTITIONS)])
            .await?;
        Ok(Some(KafkaWatch {
            follower: broker.follow(&output)?,
            lag: broker.watch_lag(&output, LAG_PERIOD)?,
        }))
    }

    /// Once the job runs. Kafka: the producer of the input, from now and without jitter (so the
    /// job has no backlog to catch up and a record's event time is its scheduled arrival).
    fn start_input(&mut self) -> anyhow::Result<()> {
        if let Self::Kafka(broker, name) = self {
            broker.start_producer(
                &format!("{name}-in"),
                kafka::PARTITIONS,
                kafka::RATE,
                kafka::now_ms(),
                0,
                1,
                ledger::KEYS,
            )?;
        }
        Ok(())
    }

    /// Runs `measured` while the output is watched; what it returned and what was seen.
    async fn watch<T>(
        &mut self,
        kafka: Option<KafkaWatch>,
        measured: impl std::future::Future<Output = anyhow::Result<T>>,
    ) -> anyhow::Result<(T, Seen)> {
        let mut watcher = Watcher::default();
        match (self, kafka) {
            (Self::Files(output), _) => {
                let result = watch_while(&mut watcher, output, measured).await?;
                Ok((
                    result,
                    Seen {
                        watcher,
                        kafka: None,
                    },
                ))
            }
            (Self::Kafka(broker, _), Some(KafkaWatch { follower, lag })) => {
                let result = measured.await?;
                broker.stop_producers();
                let mut lines = Vec::new();
                for seen in follower.seen()? {
                    let line: OutputLine = seen
                        .value
                        .parse()
                        .with_context(|| format!("an output record: {:?}", seen.value))?;
                    watcher.record(seen.at_ms, line.event_time);
                    lines.push(seen.value);
                }
                Ok((
                    result,
                    Seen {
                        watcher,
                        kafka: Some((lines, lag)),
                    },
                ))
            }
            (Self::Kafka(..), None) => bail!("a Kafka run without its consumer"),
        }
    }
}

/// A Kafka sink on `broker` when there is one, else a FileSink into `work/<name>`.
fn sink<'a>(broker: Option<&'a mut KafkaBroker>, name: &'static str, work: &Path) -> Sink<'a> {
    match broker {
        Some(b) => Sink::Kafka(b, name),
        None => Sink::Files(work.join(name)),
    }
}

/// How often the `read_committed` lag is sampled.
const LAG_PERIOD: Duration = Duration::from_millis(250);

/// The `read_committed` ledger of what the consumer received.
fn kafka_report(lines: &[String], expect: &Expectation) -> FileLedgerReport {
    judge_lines(
        Path::new("the output topic, read_committed"),
        lines.iter().map(String::as_str),
        expect,
    )
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
    let mut broker = if args.kafka {
        Some(KafkaBroker::start().await?)
    } else {
        None
    };
    let stack = LocalStack::start_real(&artifacts, &work.path().join("flink")).await?;
    let in_place = Box::pin(in_place(
        &stack,
        &artifacts,
        &args,
        sink(broker.as_mut(), "inplace", work.path()),
    ))
    .await?;
    let handover = Box::pin(handover(
        &stack,
        &artifacts,
        &args,
        sink(broker.as_mut(), "handover", work.path()),
    ))
    .await?;
    stack.shutdown().await;
    print(&args, &[in_place, handover]);
    Ok(())
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
    mut sink: Sink<'_>,
) -> anyhow::Result<Run> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        stack.client.clone(),
        NAMESPACE,
        &flink_deployment_resource(),
    );
    let mut job = sink.job();
    // No controller, no sidecar: the gate runs with a static RUNNING state.
    job.extra_args
        .extend(["--color", "BLUE", "--state-source", "static-running"].map(str::to_owned));
    let kafka = sink.prepare().await?;
    let mut object = DynamicObject::new("inplace", &flink_deployment_resource()).within(NAMESPACE);
    object.data = json!({"spec": child_spec(&job, &artifacts.job_jar, args)?});
    api.create(&PostParams::default(), &object).await?;
    let first = wait_job(&api, "inplace", None).await?;
    sink.start_input()?;
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
    let ((start, done), seen) = Box::pin(sink.watch(kafka, measured)).await?;
    api.delete("inplace", &kube::api::DeleteParams::default())
        .await?;
    let run = run(
        "in place (upgradeMode: savepoint)",
        &seen,
        args,
        start,
        done,
    )?;
    if let Some((lines, _)) = &seen.kafka {
        let report = kafka_report(
            lines,
            &Expectation::new(Color::Blue).keys_per_split(ledger::KEYS),
        );
        println!("in place, read_committed: {report}");
        ensure!(report.is_exactly_once(), "in place: {report}");
    }
    Ok(run)
}

/// The same job handed over by the controller.
async fn handover(
    stack: &LocalStack,
    artifacts: &Artifacts,
    args: &Args,
    mut sink: Sink<'_>,
) -> anyhow::Result<Run> {
    let mut job = sink.job();
    let kafka = sink.prepare().await?;
    stack
        .create("handover", bench_spec(&job, &artifacts.job_jar, args))
        .await?;
    stack
        .wait_steady("handover", Color::Blue, Duration::from_mins(3))
        .await?;
    sink.start_input()?;
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
    let ((start, done), seen) = Box::pin(sink.watch(kafka, measured)).await?;
    let report = match (&sink, &seen.kafka) {
        (Sink::Files(output), _) => stack.file_report("handover", output, true).await?,
        (Sink::Kafka(..), Some((lines, _))) => {
            kafka_report(lines, &ledger::expectation(stack, "handover").await?)
        }
        (Sink::Kafka(..), None) => bail!("a Kafka run without its consumer"),
    };
    if seen.kafka.is_some() {
        println!("handover, read_committed: {report}");
    }
    ensure!(report.is_exactly_once_by_owner(), "the handover: {report}");
    let mut run = run("bluegreen handover", &seen, args, start, done)?;
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
fn run(name: &'static str, seen: &Seen, args: &Args, start: i64, done: i64) -> anyhow::Result<Run> {
    let steady_ms = i64::try_from(args.steady_s * 1000)?;
    let after_ms = i64::try_from(args.after_s * 1000)?;
    let steady_from = start - steady_ms + 10_000;
    let end = done + after_ms;
    let lag = match &seen.kafka {
        Some((_, lag)) => {
            let ms = |t: i64| u64::try_from(t);
            Some((
                lag.peak(ms(steady_from)?, ms(start)?)?,
                lag.peak(ms(start)?, ms(end)?)?,
            ))
        }
        None => None,
    };
    Ok(Run {
        name,
        phases: Vec::new(),
        steady: seen.watcher.summary(steady_from, start),
        upgrade: seen.watcher.summary(start, end),
        took: Duration::from_millis(u64::try_from(done - start).unwrap_or(0)),
        lag,
    })
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
        "{}, checkpoint interval {} ms, minReady {}, 4 {} x 50 records/s, steady {} s, after {} s",
        if args.kafka {
            "Kafka (visible = received by a read_committed consumer)"
        } else {
            "FileSink (visible = committed part file listed)"
        },
        args.checkpoint_ms,
        args.min_ready,
        if args.kafka { "partitions" } else { "splits" },
        args.steady_s,
        args.after_s
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
    for r in runs {
        if let Some((steady, upgrade)) = r.lag {
            println!(
                "{} read_committed lag peak (records, all partitions): steady {steady}, upgrade window {upgrade}",
                r.name
            );
        }
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
