//! The local stack on **real Flink**: what a run needs (the jars and the sidecar), the example
//! job's `FlinkBlueGreenDeployment` (`examples/jobs`, a FileSink committed on checkpoints), and
//! the file ledger's verdict on its committed output. Shared by the demo and the real-Flink
//! end-to-end tests.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail, ensure};
use bluegreen_controller::resource::{
    Coordination, FlinkBlueGreenDeploymentSpec, FlinkDeploymentSpec, FlinkDeploymentTemplate,
    HealthRequirements, JobSpec, TemplateMetadata, ToggleChoice,
};
use bluegreen_local_flink::DeploymentRef;
use bluegreen_local_flink::file_ledger::{self, Expectation, FileLedgerReport};
use bluegreen_local_flink::real::{FlinkLine, FlinkMajor, RealFlinkOptions};
use bluegreen_protocol::Color;
use bluegreen_protocol::flink::JobStatus;
use serde_json::{Value, json};

use crate::{LocalStack, NAMESPACE};

/// The Flink 1.20 version the local real mode runs (`scripts/flink-jars.sh`).
pub const FLINK_VERSION: &str = "1.20.3";
/// The Flink 2.x version it runs (`FLINK_VERSION=2.3.0 scripts/flink-jars.sh`; the Maven profile
/// `flink2` builds the jars against it).
pub const FLINK2_VERSION: &str = "2.3.0";
/// `spec.flinkVersion` of [`FLINK2_VERSION`].
pub const FLINK2_SPEC_VERSION: &str = "v2_3";
/// The example job's main class.
pub const ENTRY_CLASS: &str = "io.bluegreen.examples.ExampleJob";

/// The built artifacts a real run needs.
#[derive(Debug, Clone)]
pub struct Artifacts {
    /// Flink 1.20's `lib/` directory.
    pub flink_lib: PathBuf,
    /// `target/launcher/bluegreen-launcher.jar`.
    pub launcher: PathBuf,
    /// `target/examples/bluegreen-example-job.jar`.
    pub job_jar: PathBuf,
    /// The `bluegreen-sidecar` binary of `profile` (`debug` or `release`).
    pub sidecar: PathBuf,
    /// The Flink 2.x line's jars, when all of them are built ([`Artifacts::flink2`]).
    pub flink2: Option<Flink2Jars>,
}

/// The Flink 2.x line's jars (Maven profile `flink2`, Flink [`FLINK2_VERSION`]).
#[derive(Debug, Clone)]
pub struct Flink2Jars {
    /// Flink 2.x's `lib/` directory.
    pub flink_lib: PathBuf,
    /// `target/launcher-flink2/bluegreen-launcher.jar`.
    pub launcher: PathBuf,
    /// `target/examples-flink2/bluegreen-example-job.jar`.
    pub job_jar: PathBuf,
    /// `target/sql-runner-flink2/bluegreen-sql-runner.jar`.
    pub sql_runner: PathBuf,
}

impl Flink2Jars {
    /// The jars under `target`, when every one of them is there.
    fn find(target: &Path) -> Option<Self> {
        let root = target.join("flink").join(FLINK2_VERSION);
        let jars = Self {
            flink_lib: root.join("lib"),
            launcher: target.join("launcher-flink2/bluegreen-launcher.jar"),
            job_jar: target.join("examples-flink2/bluegreen-example-job.jar"),
            sql_runner: target.join("sql-runner-flink2/bluegreen-sql-runner.jar"),
        };
        [
            &root.join(".complete"),
            &jars.launcher,
            &jars.job_jar,
            &jars.sql_runner,
        ]
        .iter()
        .all(|p| p.exists())
        .then_some(jars)
    }
}

/// Whether a `java` runs on this machine.
pub fn java_available() -> bool {
    std::process::Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success())
}

impl Artifacts {
    /// The artifacts under `repo/target`, with the sidecar of cargo `profile`; an error naming
    /// the command that builds whatever is missing.
    pub fn find(repo: &Path, profile: &str) -> anyhow::Result<Self> {
        let target = repo.join("target");
        let a = Self {
            flink_lib: target.join("flink").join(FLINK_VERSION).join("lib"),
            launcher: target.join("launcher/bluegreen-launcher.jar"),
            job_jar: target.join("examples/bluegreen-example-job.jar"),
            sidecar: target.join(profile).join("bluegreen-sidecar"),
            flink2: Flink2Jars::find(&target),
        };
        let sidecar_build = if profile == "release" {
            "cargo build --release -p bluegreen-sidecar"
        } else {
            "cargo build -p bluegreen-sidecar"
        };
        for (path, how) in [
            (
                target.join("flink").join(FLINK_VERSION).join(".complete"),
                "scripts/flink-jars.sh",
            ),
            (a.launcher.clone(), "mvn -B -q package -DskipTests"),
            (a.job_jar.clone(), "mvn -B -q package -DskipTests"),
            (a.sidecar.clone(), sidecar_build),
        ] {
            ensure!(
                path.exists(),
                "{} is missing: run `{how}` (scripts/test and scripts/demo do it)",
                path.display()
            );
        }
        Ok(a)
    }

    /// The Flink 2.x jars, or an error naming the commands that build them.
    pub fn flink2(&self) -> anyhow::Result<&Flink2Jars> {
        self.flink2.as_ref().with_context(|| {
            format!(
                "the Flink 2.x jars are missing under target/ (flink/{FLINK2_VERSION}, launcher-flink2, examples-flink2, sql-runner-flink2): run {} (scripts/test does it)",
                FlinkMajor::V2.install_hint()
            )
        })
    }

    /// The example job's jar for `job`'s `spec.flinkVersion`.
    pub fn job_jar_for(&self, job: &ExampleJob) -> anyhow::Result<&Path> {
        Ok(match FlinkMajor::of(Some(&job.flink_version))? {
            FlinkMajor::V1_20 => &self.job_jar,
            FlinkMajor::V2 => &self.flink2()?.job_jar,
        })
    }

    /// Real-mode runner options with the sidecar and every Flink line built, its files under
    /// `work`.
    pub fn options(&self, work: &Path) -> RealFlinkOptions {
        let mut real =
            RealFlinkOptions::new(FlinkLine::new(&self.flink_lib, &self.launcher), work, "");
        real.flink_2 = self
            .flink2
            .as_ref()
            .map(|j| FlinkLine::new(&j.flink_lib, &j.launcher));
        real.sidecar_binary = Some(self.sidecar.clone());
        real
    }
}

/// One deployment of the example job: what differs between versions and tests.
#[derive(Debug, Clone)]
pub struct ExampleJob {
    /// `v1` or `v2` (v2 writes a visibly different value).
    pub version: String,
    /// `job.parallelism`.
    pub parallelism: i32,
    /// `keyed`, `chained`, `two-sinks`, `windowed` or `kafka`.
    pub topology: String,
    /// Where the FileSink commits its part files.
    pub output: PathBuf,
    /// The source's schedule start (epoch ms): the same for every color.
    pub t0: u64,
    /// More job arguments.
    pub extra_args: Vec<String>,
    /// `spec.flinkVersion`: `v1_20`, or [`FLINK2_SPEC_VERSION`] for the Flink 2.x line (with its
    /// jar, [`Artifacts::job_jar_for`]).
    pub flink_version: String,
}

impl ExampleJob {
    /// v1, parallelism 2, keyed, scheduled from now.
    pub fn new(output: &Path) -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("the clock is after 1970")
            .as_millis();
        Self {
            version: "v1".into(),
            parallelism: 2,
            topology: "keyed".into(),
            output: output.to_owned(),
            t0: u64::try_from(now).expect("epoch milliseconds fit in u64"),
            extra_args: Vec::new(),
            flink_version: "v1_20".into(),
        }
    }

    /// The job's arguments: 4 splits at 50 records/s each, event times up to 1.5 s out of order,
    /// split 1 idle 15 s of every 30 s.
    ///
    /// With topology `kafka` only the version, the topology and `extra_args` (the Kafka shape reads
    /// its input from a topic: `--kafka`, `--input-topic`, `--output-topic` go in `extra_args`).
    pub fn args(&self) -> Vec<String> {
        if self.topology == "kafka" {
            let mut args = vec![
                "--version".to_owned(),
                self.version.clone(),
                "--topology".to_owned(),
                "kafka".to_owned(),
            ];
            args.extend(self.extra_args.iter().cloned());
            return args;
        }
        let mut args: Vec<String> = [
            ("--output", self.output.display().to_string()),
            ("--version", self.version.clone()),
            ("--topology", self.topology.clone()),
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

    /// The merge patch of `spec` that moves a deployment to this job.
    pub fn template_patch(&self) -> Value {
        json!({"template": {"spec": {
            "image": format!("example.com/bluegreen-example:{}", self.version),
            "job": {"parallelism": self.parallelism, "args": self.args()},
        }}})
    }

    /// The resource's spec: deletion delay 0 s and a checkpoint interval (60 s) longer than every
    /// wait of a handover, so that the teardown's stop-with-savepoint alone commits the outgoing
    /// job's last records.
    pub fn spec(&self, job_jar: &Path) -> FlinkBlueGreenDeploymentSpec {
        let conf = [
            ("execution.checkpointing.interval", "60s"),
            // restoreFrom: lastCheckpoint needs the chosen checkpoint to outlive the next one.
            ("state.checkpoints.num-retained", "2"),
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
                    flink_version: Some(self.flink_version.clone()),
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
                min_ready: "2s".into(),
                health: HealthRequirements {
                    min_checkpoints: 0,
                    max_lag: None,
                },
                ..Coordination::default()
            },
            sidecar: bluegreen_controller::resource::SidecarInjection::default(),
            cluster: None,
        }
    }
}

impl LocalStack {
    /// The stack on real Flink with `artifacts` (the real-mode runner's files under `work`) and
    /// the controller running.
    pub async fn start_real(artifacts: &Artifacts, work: &Path) -> anyhow::Result<Self> {
        let mut stack = Self::start(crate::StackOptions {
            real_flink: Some(artifacts.options(work)),
            ..crate::StackOptions::default()
        })
        .await?;
        stack.start_controller();
        Ok(stack)
    }

    /// The REST base of `name`'s active job (through the real runner's proxy) and its job id.
    pub async fn active_job(&self, name: &str) -> anyhow::Result<(String, String)> {
        let status = self
            .fbgds()
            .get(name)
            .await?
            .status
            .context("no status yet")?;
        let color = status.active_color.context("no active color")?;
        let real = self.real_flink.as_ref().context("not a real-Flink stack")?;
        let base = real.rest_url(&DeploymentRef::new(
            NAMESPACE,
            format!("{name}-{}", color.suffix()),
        ));
        let id = running_job_id(&base).await?;
        Ok((base, id))
    }

    /// Triggers a checkpoint of `name`'s active job through Flink's REST API and waits until it
    /// completed, so that everything the job read is committed.
    pub async fn commit_active(&self, name: &str) -> anyhow::Result<()> {
        let (base, id) = self.active_job(name).await?;
        commit_checkpoint(&base, &id).await
    }

    /// The file ledger of `output`, judged by the promoted handovers in `name`'s status (blue
    /// first); `check_counts` also checks each record's running count.
    pub async fn file_report(
        &self,
        name: &str,
        output: &Path,
        check_counts: bool,
    ) -> anyhow::Result<FileLedgerReport> {
        let mut expect = Expectation::new(Color::Blue);
        for (w, to) in self.promoted_handovers(name).await? {
            expect = expect.handover(w, to);
        }
        if !check_counts {
            expect = expect.without_count_check();
        }
        Ok(file_ledger::read_dir(output, &expect)?)
    }
}

/// The id of the RUNNING job at `base`, a job's Flink REST base URL.
pub async fn running_job_id(base: &str) -> anyhow::Result<String> {
    let jobs: Value = reqwest::get(format!("{base}/jobs")).await?.json().await?;
    Ok(jobs["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|j| j["status"] == JobStatus::Running.as_str())
        .and_then(|j| j["id"].as_str())
        .with_context(|| format!("no RUNNING job at {base}/jobs: {jobs}"))?
        .to_owned())
}

/// Triggers a checkpoint of job `id` at `base` (its Flink REST base URL) and waits until it
/// completed, so that everything the job read is committed.
pub async fn commit_checkpoint(base: &str, id: &str) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let url = format!("{base}/jobs/{id}/checkpoints");
    let completed = |v: &Value| v["counts"]["completed"].as_u64().unwrap_or(0);
    let before: Value = http.get(&url).send().await?.json().await?;
    let answer = http.post(&url).json(&json!({})).send().await?;
    ensure!(
        answer.status().is_success(),
        "checkpoint trigger at {url}: {}",
        answer.text().await?
    );
    let deadline = tokio::time::Instant::now() + Duration::from_mins(1);
    loop {
        let now: Value = http.get(&url).send().await?.json().await?;
        if completed(&now) > completed(&before) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the triggered checkpoint did not complete: {now}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `run-N` directories under a real deployment's directory, in order of their number
/// (`run-2` before `run-10`).
pub fn runs(deployment_dir: &Path) -> Vec<PathBuf> {
    let mut runs: Vec<(u32, PathBuf)> = std::fs::read_dir(deployment_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.strip_prefix("run-")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    runs.sort();
    runs.into_iter().map(|(_, run)| run).collect()
}

/// The last lines of every run's `launcher.log` and `sidecar.log` and the errors in its
/// `flink.log`, under a real deployment's directory (for a failed test's message); runs in order
/// of their number (`run-2` before `run-10`).
pub fn log_tails(deployment_dir: &Path) -> String {
    const LINES: usize = 15;
    let mut out = String::new();
    for run in runs(deployment_dir) {
        for (file, errors_only) in [
            ("launcher.log", false),
            ("sidecar.log", false),
            ("flink.log", true),
        ] {
            let path = run.join(file);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let lines: Vec<&str> = text
                .lines()
                .filter(|l| !errors_only || l.contains("ERROR") || l.contains("Exception"))
                .collect();
            let tail = &lines[lines.len().saturating_sub(LINES)..];
            let _ = writeln!(out, "--- {} ({} lines)", path.display(), lines.len());
            for line in tail {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::log_tails;

    #[test]
    fn log_tails_reads_every_run_in_order_of_its_number() {
        let dir = tempfile::tempdir().expect("tempdir");
        for n in [10, 2, 1] {
            let run = dir.path().join(format!("run-{n}"));
            std::fs::create_dir(&run).expect("mkdir");
            std::fs::write(run.join("launcher.log"), format!("launcher of run {n}\n"))
                .expect("log");
        }
        let tails = log_tails(dir.path());
        let order: Vec<&str> = tails
            .lines()
            .filter(|l| l.starts_with("launcher of run"))
            .collect();
        assert_eq!(
            order,
            [
                "launcher of run 1",
                "launcher of run 2",
                "launcher of run 10"
            ]
        );
    }
}
