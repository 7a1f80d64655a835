//! An unchanged **SQL script** handed over exactly once on **real Flink 1.20**: the script runs
//! in `bluegreen-sql-runner` (`sql-runner/`, docs/sql.md), which gates every INSERT, and the
//! unchanged controller upgrades it through the local API server and the real-mode runner. The
//! input is CSV files written while the jobs run (the filesystem source monitors the directory);
//! the five outputs are filesystem tables (an append-only projection, TUMBLE, HOP and CUMULATE
//! window aggregations over the rowtime, and an interval join of the input with itself), judged by
//! the SQL ledger (`bluegreen_examples::sql`): every record, window and joined pair once, by the
//! color that owns its event time, with the values the input implies.
//!
//! Needs the jars built by `scripts/test` (`mvn -B -q package -DskipTests` builds
//! target/sql-runner/bluegreen-sql-runner.jar) and `cargo build -p bluegreen-sidecar`; without a
//! `java` on the PATH every test says so and passes without running.

use std::time::Duration;

use anyhow::ensure;
use bluegreen_controller::resource::Outcome;
use bluegreen_e2e::real::{Bed, UPGRADE};
use bluegreen_examples::LocalStack;
use bluegreen_examples::sql::{self, InputWriter, SqlJob};
use bluegreen_protocol::Color;

/// Keeps a failed run's files (input, outputs, scripts, the runner's logs) and the handovers for
/// a look.
fn keep(job: &SqlJob, input: &[sql::InputRecord], handovers: &[(i64, Color)]) {
    let to = std::env::temp_dir().join(format!("bluegreen-real-sql-{}", std::process::id()));
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(&job.work)
        .arg(&to)
        .status();
    let lines: Vec<String> = input
        .iter()
        .map(|r| format!("{},{},{}", r.id, r.k, r.ts))
        .collect();
    let _ = std::fs::write(to.join("input-written.csv"), lines.join("\n"));
    // The runner's logs of every job run (launcher, Flink, sidecar), beside the job's work
    // directory: what a failed run needs to be explained.
    if let Some(runner) = job.work.parent().map(|p| p.join("flink")) {
        copy_logs(&runner, &to.join("flink-logs"));
    }
    eprintln!(
        "kept in {} ({status:?}); handovers (W, to): {handovers:?}",
        to.display()
    );
}

/// Copies every `*.log` and `error.txt` under `from` to `to`, keeping the tree.
fn copy_logs(from: &std::path::Path, to: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            copy_logs(&path, &to.join(&name));
        } else if path.extension().is_some_and(|e| e == "log") || name == "error.txt" {
            let _ = std::fs::create_dir_all(to);
            let _ = std::fs::copy(&path, to.join(&name));
        }
    }
}

/// An upgrade to a script with an unwindowed GROUP BY: the incoming job is refused at its start,
/// the handover aborted with the reason, nothing written to its table, `color` still active.
async fn refused_upgrade_changes_nothing(
    stack: &LocalStack,
    job: &mut SqlJob,
    color: Color,
) -> anyhow::Result<()> {
    // A script with an unwindowed GROUP BY: the incoming job is refused at its start, the handover
    // aborted, nothing written to its table, and the running job keeps every record.
    job.version = "refused".into();
    job.write_script()?;
    stack.patch_spec(NAME, job.template_patch()).await?;
    let fbgd = stack
        .wait_for(
            NAME,
            UPGRADE,
            "the refused script's aborted handover",
            |f| {
                f.status.as_ref().is_some_and(|s| {
                    s.transition.is_none()
                        && s.history
                            .first()
                            .is_some_and(|h| h.outcome == Outcome::Aborted)
                })
            },
        )
        .await?;
    let status = fbgd.status.expect("status");
    assert_eq!(status.active_color, Some(color), "{status:?}");
    let reason = status.history[0].reason.clone().unwrap_or_default();
    for words in [
        "INSERT INTO default_catalog.default_database.counts",
        "the query produces updates",
        "has no event-time column (columns: k, cnt)",
        "TUMBLE/HOP/CUMULATE",
    ] {
        assert!(
            reason.contains(words),
            "the reason says {words:?}: {reason}"
        );
    }
    assert!(
        sql::committed_lines(&job.output("counts"))?.is_empty(),
        "nothing may be written by the refused script"
    );
    Ok(())
}

/// The resource's name.
const NAME: &str = "orders-sql";

/// Records written this long ago must be in the committed output.
const SETTLE: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_sql_script_is_handed_over_exactly_once_and_a_refused_one_changes_nothing()
-> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let stack = &bed.stack;
    let jar = sql::runner_jar(&bed.artifacts)?;
    let mut job = SqlJob::new(&bed.output("sql"));
    std::fs::create_dir_all(job.input())?;
    job.write_script()?;
    stack.create(NAME, job.spec(&jar)).await?;
    stack.wait_steady(NAME, Color::Blue, UPGRADE).await?;
    let input = InputWriter::start(&job.input())?;
    tokio::time::sleep(Duration::from_secs(15)).await;
    // A parallelism change, a changed query (one more projected column), another parallelism change.
    let mut color = Color::Blue;
    for (version, parallelism) in [("v1", 3), ("v2", 3), ("v2", 2)] {
        job.version = version.into();
        job.parallelism = parallelism;
        job.write_script()?;
        let started = std::time::Instant::now();
        // No input while the incoming job starts: the filesystem source reads a backlog of files
        // in no particular order, and a backlog longer than the watermark bound (30 s) makes its
        // older records late for the window in the incoming job (docs/sql.md, section 3). Records
        // flow again before W is proposed, so the handover itself happens under load.
        input.pause();
        stack.patch_spec(NAME, job.template_patch()).await?;
        color = color.other();
        sql::wait_running(stack, NAME, color, UPGRADE).await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        input.resume();
        stack.wait_steady(NAME, color, UPGRADE).await?;
        eprintln!(
            "upgrade to {color} ({version}, parallelism {parallelism}): {:?}",
            started.elapsed()
        );
        let report = sql::report(stack, NAME, &job, &input, SETTLE).await?;
        eprintln!("{report}");
        if !report.is_exactly_once_by_owner() {
            keep(
                &job,
                &input.records(),
                &stack.promoted_handovers(NAME).await?,
            );
        }
        ensure!(report.is_exactly_once_by_owner(), "{report}");
    }
    refused_upgrade_changes_nothing(stack, &mut job, color).await?;
    let records = input.stop().await?;
    tokio::time::sleep(Duration::from_secs(8)).await;
    // Every record written, and every window the watermark has closed, exactly once.
    let last = records.iter().map(|r| r.ts).max().unwrap_or(0);
    stack.commit_active(NAME).await?;
    let handovers = stack.promoted_handovers(NAME).await?;
    let report = sql::judge(&job, &records, &handovers, last)?;
    eprintln!("final: {} records written; {report}", records.len());
    if !report.is_exactly_once_by_owner() {
        keep(&job, &records, &handovers);
    }
    ensure!(report.is_exactly_once_by_owner(), "{report}");
    ensure!(
        handovers.len() == 3,
        "three promoted handovers: {handovers:?}"
    );
    for color in Color::ALL {
        let lines =
            |table: &std::collections::BTreeMap<Color, u64>| table.get(color).copied().unwrap_or(0);
        ensure!(
            lines(&report.projected) > 100
                && lines(&report.joined) > 100
                && [&report.windows, &report.hop, &report.cumulate]
                    .into_iter()
                    .all(|windows| lines(windows) > 10),
            "both colors wrote every table: {report}"
        );
    }
    ensure!(
        report.projected_v2 > 100,
        "v2's extra column reached the output: {report}"
    );
    bed.stack.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sql_script_with_an_unwindowed_group_by_is_refused_before_any_record()
-> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let stack = &bed.stack;
    let jar = sql::runner_jar(&bed.artifacts)?;
    let mut job = SqlJob::new(&bed.output("sql"));
    job.version = "refused".into();
    let input = InputWriter::start(&job.input())?;
    job.write_script()?;
    stack.create("refused-sql", job.spec(&jar)).await?;
    let fbgd = stack
        .wait_for(
            "refused-sql",
            UPGRADE,
            "the whole refusal in the status",
            |f| {
                f.status.as_ref().is_some_and(|s| {
                    s.conditions.iter().any(|c| {
                        c.message
                            .contains("INSERT INTO default_catalog.default_database.counts")
                            && c.message.contains("or write an append-only query")
                    })
                })
            },
        )
        .await?;
    let status = fbgd.status.expect("status");
    assert_eq!(status.active_color, None, "{status:?}");
    input.stop().await?;
    for table in sql::OUTPUTS.into_iter().chain(["counts"]) {
        assert!(
            sql::committed_lines(&job.output(table))?.is_empty(),
            "no record may be written to {table}"
        );
    }
    bed.stack.shutdown().await;
    Ok(())
}

/// The oracle is not vacuous: the same SQL job handed over with the incoming job's gates
/// misconfigured (`--state-source static-running`: they never learn W and pass every record, as
/// an ungated job would) is caught by the SQL ledger. Run by hand (`-- --ignored`): it shows the
/// ledger failing, not a property users rely on. (It used to tell the incoming job it is blue;
/// since gates report their color the controller never gives such a job W.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "shows the ledger failing on a misconfigured handover; run by hand"]
async fn the_sql_ledger_catches_a_handover_with_misconfigured_gates() -> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let stack = &bed.stack;
    let jar = sql::runner_jar(&bed.artifacts)?;
    let mut job = SqlJob::new(&bed.output("sql"));
    std::fs::create_dir_all(job.input())?;
    job.write_script()?;
    stack.create(NAME, job.spec(&jar)).await?;
    stack.wait_steady(NAME, Color::Blue, UPGRADE).await?;
    let input = InputWriter::start(&job.input())?;
    tokio::time::sleep(Duration::from_secs(20)).await;
    job.parallelism = 3;
    job.extra_args = vec!["--state-source".into(), "static-running".into()];
    stack.patch_spec(NAME, job.template_patch()).await?;
    let steady = stack.wait_steady(NAME, Color::Green, UPGRADE).await;
    eprintln!("misconfigured handover: {steady:?}");
    tokio::time::sleep(Duration::from_secs(20)).await;
    let report = sql::report(stack, NAME, &job, &input, SETTLE).await?;
    eprintln!("{report}");
    ensure!(
        !report.is_exactly_once_by_owner() && report.duplicates + report.losses > 0,
        "the ledger must catch it: {report}"
    );
    input.stop().await?;
    bed.stack.shutdown().await;
    Ok(())
}
