//! End-to-end handovers of **real Flink 1.20 jobs**: the unchanged controller drives the example
//! job (`examples/jobs`, a FileSink committed on checkpoints) through the local API server, with
//! every FlinkDeployment run as a real MiniCluster JVM by the real-mode runner and each job's gates
//! fed by the real `bluegreen-sidecar`. Real time, deletion delay 0 s and a checkpoint interval
//! (60 s) longer than every wait of a handover: the outgoing job's last records are committed only
//! by the stop-with-savepoint of the teardown. The file ledger reads only committed part files.
//!
//! Needs the jars built by `scripts/test` (Flink from PyPI, the launcher, the gate and the example
//! job) and `cargo build -p bluegreen-sidecar`; without a `java` on the PATH every test says so and
//! passes without running.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail, ensure};
use bluegreen_controller::resource::{
    Coordination, FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentSpec, FlinkDeploymentSpec,
    FlinkDeploymentTemplate, HealthRequirements, JobSpec, RestoreFrom, TemplateMetadata,
    ToggleChoice,
};
use bluegreen_examples::{LocalStack, NAMESPACE, StackOptions};
use bluegreen_local::file_ledger::{self, Expectation, FileLedgerReport};
use bluegreen_local::flink::DeploymentRef;
use bluegreen_local::flink::real::RealFlinkOptions;
use bluegreen_protocol::Color;
use serde_json::{Value, json};

/// One real-Flink test at a time: each runs up to two job JVMs on a 2-core machine.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long one upgrade (savepoint, new JVM, W, promotion, teardown) may take on a loaded machine.
const UPGRADE: Duration = Duration::from_mins(3);
const ENTRY_CLASS: &str = "io.bluegreen.examples.ExampleJob";
const FLINK_VERSION: &str = "1.20.3";

/// The artifacts a real run needs, or why they are missing.
struct Artifacts {
    flink_lib: PathBuf,
    launcher: PathBuf,
    job_jar: PathBuf,
    sidecar: PathBuf,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_owned()
}

/// `None` (the test passes without running) when no JVM is installed; an error naming the build
/// command when a JVM is there but an artifact is not.
fn artifacts() -> anyhow::Result<Option<Artifacts>> {
    if std::process::Command::new("java")
        .arg("-version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: no `java` on the PATH; real-Flink tests need a JDK 17");
        return Ok(None);
    }
    let root = repo();
    let target = root.join("target");
    let a = Artifacts {
        flink_lib: target.join("flink").join(FLINK_VERSION).join("lib"),
        launcher: target.join("launcher/bluegreen-launcher.jar"),
        job_jar: target.join("examples/bluegreen-example-job.jar"),
        sidecar: target.join("debug/bluegreen-sidecar"),
    };
    for (path, how) in [
        (
            target.join("flink").join(FLINK_VERSION).join(".complete"),
            "scripts/flink-jars.sh",
        ),
        (a.launcher.clone(), "scripts/build-launcher.sh"),
        (
            a.job_jar.clone(),
            "scripts/java-build.sh && scripts/build-example-job.sh",
        ),
        (a.sidecar.clone(), "cargo build -p bluegreen-sidecar"),
    ] {
        ensure!(
            path.exists(),
            "{} is missing: run `{how}` (scripts/test does it before the tests)",
            path.display()
        );
    }
    Ok(Some(a))
}

/// The local stack with the real-mode runner, its files under `work`.
async fn real_stack(a: &Artifacts, work: &Path) -> anyhow::Result<LocalStack> {
    let mut real = RealFlinkOptions::new(&a.flink_lib, &a.launcher, work.join("flink"), "");
    real.sidecar_binary = Some(a.sidecar.clone());
    let mut stack = LocalStack::start(StackOptions {
        real_flink: Some(real),
        ..StackOptions::default()
    })
    .await?;
    stack.start_controller();
    Ok(stack)
}

/// What differs between the example job's deployments in these tests.
#[derive(Clone)]
struct Job<'a> {
    version: &'a str,
    parallelism: i32,
    topology: &'a str,
    output: &'a Path,
    t0: u64,
    extra_args: Vec<String>,
}

impl<'a> Job<'a> {
    fn new(output: &'a Path, t0: u64) -> Self {
        Self {
            version: "v1",
            parallelism: 2,
            topology: "keyed",
            output,
            t0,
            extra_args: Vec::new(),
        }
    }

    fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = [
            ("--output", self.output.display().to_string()),
            ("--version", self.version.to_owned()),
            ("--topology", self.topology.to_owned()),
            ("--t0", self.t0.to_string()),
            ("--rate", "50".to_owned()),
            ("--jitter-ms", "1500".to_owned()),
            ("--idle-active-ms", "15000".to_owned()),
            ("--idle-cycle-ms", "30000".to_owned()),
            ("--idleness-ms", "3000".to_owned()),
        ]
        .into_iter()
        .flat_map(|(k, v)| [k.to_owned(), v])
        .collect();
        args.extend(self.extra_args.iter().cloned());
        args
    }

    /// The `spec.template.spec` patch that moves a deployment to this job.
    fn template_patch(&self) -> Value {
        json!({"template": {"spec": {
            "image": format!("example.com/bluegreen-example:{}", self.version),
            "job": {"parallelism": self.parallelism, "args": self.args()},
        }}})
    }

    fn spec(&self, job_jar: &Path) -> FlinkBlueGreenDeploymentSpec {
        let conf = [
            // Longer than every wait of a handover: nothing is committed by a checkpoint
            // during one, so the teardown's stop-with-savepoint must commit the outgoing job's
            // last records.
            ("execution.checkpointing.interval", "60s"),
            ("metrics.fetcher.update-interval", "500"),
            ("restart-strategy.type", "fixed-delay"),
            ("restart-strategy.fixed-delay.attempts", "3"),
            ("restart-strategy.fixed-delay.delay", "1s"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        FlinkBlueGreenDeploymentSpec {
            template: FlinkDeploymentTemplate {
                metadata: TemplateMetadata::default(),
                spec: FlinkDeploymentSpec {
                    image: Some(format!("example.com/bluegreen-example:{}", self.version)),
                    flink_version: Some("v1_20".into()),
                    flink_configuration: conf,
                    job: JobSpec {
                        jar_uri: format!("local://{}", job_jar.display()),
                        entry_class: Some(ENTRY_CLASS.into()),
                        args: self.args(),
                        parallelism: Some(self.parallelism),
                        upgrade_mode: Some("savepoint".into()),
                        ..JobSpec::default()
                    },
                    other: [(
                        "taskManager".to_owned(),
                        json!({"resource": {"memory": "1024m", "cpu": 1}}),
                    )]
                    .into(),
                },
            },
            coordination: Coordination {
                toggle: ToggleChoice {
                    offset: Some("1s".into()),
                    value: None,
                },
                deployment_deletion_delay: "0s".into(),
                abort_grace_period: "2m".into(),
                health: HealthRequirements {
                    min_checkpoints: 0,
                    max_lag: None,
                },
                ..Coordination::default()
            },
        }
    }
}

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_millis(),
    )
    .expect("fits")
}

async fn status_of(
    stack: &LocalStack,
    name: &str,
) -> anyhow::Result<bluegreen_controller::resource::FlinkBlueGreenDeploymentStatus> {
    let fbgd: FlinkBlueGreenDeployment = stack.fbgds().get(name).await?;
    fbgd.status.context("no status yet")
}

/// The REST base of the active job's deployment (through the runner's proxy) and its job id.
async fn active_job(stack: &LocalStack, name: &str) -> anyhow::Result<(String, String)> {
    let status = status_of(stack, name).await?;
    let color = status.active_color.context("no active color")?;
    let real = stack
        .real_flink
        .as_ref()
        .context("not a real-Flink stack")?;
    let base = real.rest_url(&DeploymentRef::new(
        NAMESPACE,
        format!("{name}-{}", color.suffix()),
    ));
    let jobs: Value = reqwest::get(format!("{base}/jobs")).await?.json().await?;
    let id = jobs["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|j| j["status"] == "RUNNING")
        .and_then(|j| j["id"].as_str())
        .with_context(|| format!("no RUNNING job at {base}/jobs: {jobs}"))?
        .to_owned();
    Ok((base, id))
}

/// Triggers a checkpoint of the active job (Flink's REST API) and waits until it completed, so
/// that everything it read is committed.
async fn commit_active(stack: &LocalStack, name: &str) -> anyhow::Result<()> {
    let (base, id) = active_job(stack, name).await?;
    let http = reqwest::Client::new();
    let completed = |v: &Value| v["counts"]["completed"].as_u64().unwrap_or(0);
    let before: Value = http
        .get(format!("{base}/jobs/{id}/checkpoints"))
        .send()
        .await?
        .json()
        .await?;
    let answer = http
        .post(format!("{base}/jobs/{id}/checkpoints"))
        .json(&json!({}))
        .send()
        .await?;
    ensure!(
        answer.status().is_success(),
        "checkpoint trigger: {}",
        answer.text().await?
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let now: Value = http
            .get(format!("{base}/jobs/{id}/checkpoints"))
            .send()
            .await?
            .json()
            .await?;
        if completed(&now) > completed(&before) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the triggered checkpoint did not complete: {now}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The ledger of `output` judged by the handovers in `name`'s status (blue first).
async fn ledger(
    stack: &LocalStack,
    name: &str,
    output: &Path,
    check_counts: bool,
) -> anyhow::Result<FileLedgerReport> {
    let status = status_of(stack, name).await?;
    let mut handovers: Vec<(i64, Color)> = status
        .history
        .iter()
        .filter(|h| h.outcome == "Promoted")
        .filter_map(|h| h.toggle.map(|w| (w, h.to)))
        .collect();
    handovers.sort_unstable();
    let mut expect = Expectation::new(Color::Blue);
    for (w, to) in handovers {
        expect = expect.handover(w, to);
    }
    if !check_counts {
        expect = expect.without_count_check();
    }
    Ok(file_ledger::read_dir(output, &expect)?)
}

/// Commits what the active job read, then asserts the ledger: every record once, by its owner,
/// with the right running count, in undamaged files.
async fn assert_exactly_once(
    stack: &LocalStack,
    name: &str,
    output: &Path,
    check_counts: bool,
) -> anyhow::Result<FileLedgerReport> {
    commit_active(stack, name).await?;
    let report = ledger(stack, name, output, check_counts).await?;
    ensure!(report.is_exactly_once_by_owner(), "{report}");
    Ok(report)
}

async fn upgrade_to(
    stack: &LocalStack,
    name: &str,
    job: &Job<'_>,
    to: Color,
) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    stack.patch_spec(name, job.template_patch()).await?;
    stack.wait_steady(name, to, UPGRADE).await?;
    eprintln!(
        "upgrade to {} ({}, parallelism {}): {:?}",
        to,
        job.version,
        job.parallelism,
        started.elapsed()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_real_upgrades_emit_every_record_exactly_once() -> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let Some(a) = artifacts()? else {
        return Ok(());
    };
    let work = tempfile::tempdir()?;
    let output = work.path().join("out");
    let stack = real_stack(&a, work.path()).await?;
    let mut job = Job::new(&output, now_ms());
    stack.create("orders", job.spec(&a.job_jar)).await?;
    stack.wait_steady("orders", Color::Blue, UPGRADE).await?;
    let mut color = Color::Blue;
    let steps: [(&str, i32, Option<RestoreFrom>); 5] = [
        ("v2", 2, None),
        ("v1", 3, None),
        ("v2", 3, Some(RestoreFrom::LastCheckpoint)),
        ("v1", 2, Some(RestoreFrom::Savepoint)),
        ("v2", 2, None),
    ];
    for (version, parallelism, restore) in steps {
        if let Some(restore) = restore {
            stack
                .patch_spec("orders", json!({"coordination": {"restoreFrom": restore}}))
                .await?;
        }
        color = color.other();
        job.version = version;
        job.parallelism = parallelism;
        upgrade_to(&stack, "orders", &job, color).await?;
        let report = assert_exactly_once(&stack, "orders", &output, true).await?;
        eprintln!("{report}");
    }
    let status = status_of(&stack, "orders").await?;
    assert_eq!(status.epoch, 5);
    let report = ledger(&stack, "orders", &output, true).await?;
    assert!(report.lines[&Color::Blue] > 1000, "{report}");
    assert!(report.lines[&Color::Green] > 1000, "{report}");
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_sink_that_cannot_survive_a_handover_is_refused_before_any_record()
-> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let Some(a) = artifacts()? else {
        return Ok(());
    };
    let work = tempfile::tempdir()?;
    let output = work.path().join("out");
    let stack = real_stack(&a, work.path()).await?;
    let mut job = Job::new(&output, now_ms());
    // FileSink with its default rolling policy, as a user would write it: its in-progress part
    // file is not committed by a stop-with-savepoint without drain.
    job.extra_args = vec!["--rolling".into(), "default".into()];
    stack.create("orders", job.spec(&a.job_jar)).await?;
    let fbgd = stack
        .wait_for("orders", UPGRADE, "the refusal in the status", |f| {
            f.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.message.contains("OnCheckpointRollingPolicy"))
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
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_job_that_cannot_start_is_aborted_and_the_outgoing_job_keeps_every_record()
-> anyhow::Result<()> {
    let _serial = SERIAL.lock().await;
    let Some(a) = artifacts()? else {
        return Ok(());
    };
    let work = tempfile::tempdir()?;
    let output = work.path().join("out");
    let stack = real_stack(&a, work.path()).await?;
    let job = Job::new(&output, now_ms());
    stack.create("orders", job.spec(&a.job_jar)).await?;
    stack.wait_steady("orders", Color::Blue, UPGRADE).await?;
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
        .wait_for("orders", UPGRADE, "the aborted handover", |f| {
            f.status.as_ref().is_some_and(|s| {
                s.transition.is_none() && s.history.first().is_some_and(|h| h.outcome == "Aborted")
            })
        })
        .await?;
    let status = status_of(&stack, "orders").await?;
    assert_eq!(status.active_color, Some(Color::Blue));
    let reason = status.history[0].reason.clone().unwrap_or_default();
    assert!(
        reason.contains("NoSuchJob"),
        "the reason names the cause: {reason}"
    );
    // Blue kept running and emitting alone.
    let report = assert_exactly_once(&stack, "orders", &output, true).await?;
    assert_eq!(
        report.lines.get(&Color::Green).copied().unwrap_or(0),
        0,
        "{report}"
    );
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_chained_into_the_source_vertex_and_two_gated_sinks_hand_over() -> anyhow::Result<()>
{
    let _serial = SERIAL.lock().await;
    let Some(a) = artifacts()? else {
        return Ok(());
    };
    let work = tempfile::tempdir()?;
    let stack = real_stack(&a, work.path()).await?;
    for (name, topology) in [("chained", "chained"), ("twosinks", "two-sinks")] {
        let output = work.path().join(name);
        let mut job = Job::new(&output, now_ms());
        job.topology = topology;
        stack.create(name, job.spec(&a.job_jar)).await?;
        stack.wait_steady(name, Color::Blue, UPGRADE).await?;
        job.version = "v2";
        upgrade_to(&stack, name, &job, Color::Green).await?;
        commit_active(&stack, name).await?;
        // The chained topology has no keyed state: its lines carry count 0.
        let counts = topology != "chained";
        let dirs = if topology == "two-sinks" {
            vec![output.join("a"), output.join("b")]
        } else {
            vec![output.clone()]
        };
        for dir in dirs {
            let report = ledger(&stack, name, &dir, counts).await?;
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
        stack.fbgds().delete(name, &Default::default()).await?;
    }
    stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_job_restarting_right_after_promotion_emits_nothing_twice() -> anyhow::Result<()>
{
    let _serial = SERIAL.lock().await;
    let Some(a) = artifacts()? else {
        return Ok(());
    };
    let work = tempfile::tempdir()?;
    let output = work.path().join("out");
    let trigger = work.path().join("fail-now");
    let stack = real_stack(&a, work.path()).await?;
    let mut job = Job::new(&output, now_ms());
    job.extra_args = vec!["--fail-trigger".into(), trigger.display().to_string()];
    stack.create("orders", job.spec(&a.job_jar)).await?;
    stack.wait_steady("orders", Color::Blue, UPGRADE).await?;
    job.version = "v2";
    upgrade_to(&stack, "orders", &job, Color::Green).await?;
    // Green has taken no checkpoint (60 s interval): it restarts from blue's savepoint and reads
    // again every record since, including those t <= W that blue emitted.
    std::fs::write(&trigger, b"")?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
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
        match commit_active(&stack, "orders").await {
            Ok(()) => break,
            Err(e) if tokio::time::Instant::now() < deadline => {
                eprintln!("waiting for the restarted job: {e:#}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
    }
    let report = ledger(&stack, "orders", &output, true).await?;
    assert!(report.is_exactly_once_by_owner(), "{report}");
    stack.shutdown().await;
    Ok(())
}
