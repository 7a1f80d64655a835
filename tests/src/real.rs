//! The real-Flink test bed shared by the `real_*.rs` tests: the stack with the real-mode runner
//! (one JVM per job, the real sidecar; Flink 1.20, and Flink 2.x when its jars are built), the built
//! artifacts, one test at a time, and the ledger's verdict.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use bluegreen_controller::resource::{FlinkBlueGreenDeployment, RestoreFrom};
use bluegreen_examples::real::{Artifacts, ExampleJob, java_available};
use bluegreen_examples::{LocalStack, NAMESPACE};
use bluegreen_local_flink::file_ledger::FileLedgerReport;
use bluegreen_protocol::Color;

/// One real-Flink test at a time: each runs up to two job JVMs on a 2-core machine.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long one upgrade (savepoint, new JVM, W, promotion, teardown) may take on a loaded machine.
pub const UPGRADE: Duration = Duration::from_mins(3);

/// `None` (the test passes without running) when no JVM is installed; an error naming the build
/// command when a JVM is there but an artifact is not.
pub fn artifacts() -> anyhow::Result<Option<Artifacts>> {
    if !java_available() {
        eprintln!("SKIPPED: no `java` on the PATH; real-Flink tests need a JDK 17");
        return Ok(None);
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository");
    Artifacts::find(repo, "debug").map(Some)
}

/// One real-Flink test's bed: the stack with the real-mode runner and the controller, the built
/// artifacts and a work directory, held one test at a time.
pub struct Bed {
    /// The stack with the real-mode runner and the controller.
    pub stack: LocalStack,
    /// The built jars and the sidecar.
    pub artifacts: Artifacts,
    work: tempfile::TempDir,
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

impl Bed {
    /// `None` (the test passes without running) when no JVM is installed.
    pub async fn start() -> anyhow::Result<Option<Self>> {
        let serial = SERIAL.lock().await;
        let Some(artifacts) = artifacts()? else {
            return Ok(None);
        };
        let work = tempfile::tempdir()?;
        let stack = LocalStack::start_real(&artifacts, &work.path().join("flink")).await?;
        Ok(Some(Self {
            stack,
            artifacts,
            work,
            _serial: serial,
        }))
    }

    /// A directory for one job's output.
    pub fn output(&self, name: &str) -> std::path::PathBuf {
        self.work.path().join(name)
    }

    /// The lines of the Flink logs of `color`'s jobs of the deployment `orders` (every run) that
    /// contain one of `needles`.
    pub fn flink_log_lines(&self, color: Color, needles: &[&str]) -> anyhow::Result<Vec<String>> {
        let dir = self
            .output("flink")
            .join(bluegreen_examples::NAMESPACE)
            .join(format!("orders-{}", color.suffix()));
        let mut out = Vec::new();
        for run in std::fs::read_dir(&dir).with_context(|| dir.display().to_string())? {
            let log = run?.path().join("flink.log");
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            out.extend(
                text.lines()
                    .filter(|l| needles.iter().any(|n| l.contains(n)))
                    .map(str::to_owned),
            );
        }
        Ok(out)
    }

    /// Creates `name` running `job` (on the Flink line of its `flink_version`) and waits until
    /// blue runs it.
    pub async fn deploy(&self, name: &str, job: &ExampleJob) -> anyhow::Result<()> {
        self.stack
            .create(name, job.spec(self.artifacts.job_jar_for(job)?))
            .await?;
        self.stack.wait_steady(name, Color::Blue, UPGRADE).await?;
        Ok(())
    }
}

/// Commits what the active job read, then asserts the ledger: every record once, by its owner,
/// with the right running count, in undamaged files.
pub async fn assert_exactly_once(
    stack: &LocalStack,
    name: &str,
    output: &Path,
    check_counts: bool,
) -> anyhow::Result<FileLedgerReport> {
    stack.commit_active(name).await?;
    let report = stack.file_report(name, output, check_counts).await?;
    ensure!(report.is_exactly_once_by_owner(), "{report}");
    Ok(report)
}

/// Moves `name` to `job` and waits until it is steady on `to`.
pub async fn upgrade_to(
    stack: &LocalStack,
    name: &str,
    job: &ExampleJob,
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

/// One upgrade of a sequence: `coordination.restoreFrom` set to `restore` first (when given), then
/// `name` moved to `version` at `parallelism` on the color after `from`, which it returns.
pub async fn upgrade_step(
    stack: &LocalStack,
    name: &str,
    job: &mut ExampleJob,
    from: Color,
    (version, parallelism, restore): (&str, i32, Option<RestoreFrom>),
) -> anyhow::Result<Color> {
    if let Some(restore) = restore {
        stack
            .patch_spec(
                name,
                serde_json::json!({"coordination": {"restoreFrom": restore}}),
            )
            .await?;
    }
    job.version = version.into();
    job.parallelism = parallelism;
    upgrade_to(stack, name, job, from.other()).await?;
    Ok(from.other())
}

/// Waits until the job took the fail trigger `file` (a task deletes it as it fails).
pub async fn wait_taken(file: &Path) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_mins(1);
    while file.exists() {
        ensure!(
            tokio::time::Instant::now() < deadline,
            "no job took the fail trigger {}",
            file.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Whether the resource's condition `type_` (`Progressing`, `Degraded`, …) has `reason`.
pub fn has_condition(f: &FlinkBlueGreenDeployment, type_: &str, reason: &str) -> bool {
    f.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == type_ && c.reason == reason)
    })
}

/// Whether the resource's `Progressing` condition has `reason`.
pub fn progressing(f: &FlinkBlueGreenDeployment, reason: &str) -> bool {
    has_condition(f, "Progressing", reason)
}

/// Sets the `bluegreen.dev/action` annotation of `name` (`promote`, `abort`, `teardown`, …).
pub async fn set_action(stack: &LocalStack, name: &str, action: &str) -> anyhow::Result<()> {
    let patch = serde_json::json!({"metadata": {"annotations": {"bluegreen.dev/action": action}}});
    stack
        .fbgds()
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}

/// Deletes `name` and waits until it and both children are gone; returns the path of its final
/// savepoint (`onDelete: savepointThenDelete`), read from its `FinalSavepoint` event.
pub async fn delete_for_final_savepoint(stack: &LocalStack, name: &str) -> anyhow::Result<String> {
    use kube::api::{Api, DeleteParams, DynamicObject};
    stack.fbgds().delete(name, &DeleteParams::default()).await?;
    let children: Api<DynamicObject> = Api::namespaced_with(
        stack.client.clone(),
        NAMESPACE,
        &bluegreen_controller::context::flink_deployment_resource(),
    );
    let deadline = tokio::time::Instant::now() + UPGRADE;
    loop {
        let mut left = Vec::new();
        if stack.fbgds().get_opt(name).await?.is_some() {
            left.push(name.to_owned());
        }
        for color in Color::ALL {
            let child = format!("{name}-{}", color.suffix());
            if children.get_opt(&child).await?.is_some() {
                left.push(child);
            }
        }
        if left.is_empty() {
            break;
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "not deleted within {UPGRADE:?}: {left:?}\n{}",
            stack.diagnose(name).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let notes: Vec<String> = stack
        .events(name)
        .await?
        .into_iter()
        .filter(|e| e.data["reason"] == "FinalSavepoint")
        .filter_map(|e| e.data["note"].as_str().map(str::to_owned))
        .collect();
    let [note] = notes.as_slice() else {
        anyhow::bail!("expected one FinalSavepoint event of {name}, got {notes:?}");
    };
    let (_, path) = note
        .rsplit_once(" at ")
        .with_context(|| format!("no path in {note:?}"))?;
    Ok(path.to_owned())
}

/// Creates `name` again, running `job` started from `savepoint` (`initialSavepointPath`), and
/// waits until blue runs it.
pub async fn recreate_from(
    bed: &Bed,
    name: &str,
    job: &ExampleJob,
    savepoint: &str,
) -> anyhow::Result<()> {
    let mut spec = job.spec(bed.artifacts.job_jar_for(job)?);
    spec.template.spec.job.initial_savepoint_path = Some(savepoint.to_owned());
    bed.stack.create(name, spec).await?;
    bed.stack.wait_steady(name, Color::Blue, UPGRADE).await?;
    Ok(())
}

/// Commits what the active job read, then asserts the ledger: every record once with the right
/// running count, in undamaged files. Colors are not judged: a resource re-created from a final
/// savepoint starts blue again, wherever the deleted one stopped.
pub async fn assert_exactly_once_any_color(
    stack: &LocalStack,
    name: &str,
    output: &Path,
) -> anyhow::Result<FileLedgerReport> {
    stack.commit_active(name).await?;
    let report = stack.file_report(name, output, true).await?;
    ensure!(report.is_exactly_once(), "{report}");
    Ok(report)
}
