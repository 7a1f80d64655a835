//! Kafka in, Kafka out, through real handovers (issue 24, first slice): a real Apache Kafka broker
//! (4.x, KRaft, one node, `bluegreen_examples::kafka`), the example job's Kafka shape on real Flink 1.20
//! (`--topology kafka`: `KafkaSource` over a 4-partition topic → keyed running count → the gate →
//! `KafkaSink` `EXACTLY_ONCE` with `BlueGreenSinks.transactionalIdPrefix` per color), driven by the
//! unchanged controller through the local API server (the real-mode runner of `real_upgrades.rs`,
//! checkpoint interval 60 s, deletion delay 0 s). The input is written by the test bed's producer
//! while the jobs run; the verdict is a plain Kafka consumer with `isolation.level=read_committed`
//! on the output topic, judged by the file ledger's rules (`file_ledger::judge_lines`): every
//! input record exactly once, by the color that owns its event time, with the right running count.
//!
//! Beside it: an incoming job that fails before W (aborted; a `read_uncommitted` reading tells
//! "never written" from "written and aborted"), and the `read_committed` lag (last stable offset
//! against high watermark) measured around every handover.
//!
//! Needs `scripts/kafka-jars.sh` and the jars of `real_upgrades.rs`; without a `java` on the PATH
//! it says so and passes without running.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::ensure;
use bluegreen_controller::resource::{Outcome, RestoreFrom, TransitionRecord};
use bluegreen_e2e::kafka::ledger::{KEYS, read_committed_report};
use bluegreen_e2e::kafka::{self, KafkaBroker, LagWatch, aborted_lines, now_ms};
use bluegreen_e2e::real::{Bed, UPGRADE, upgrade_step, wait_taken};
use bluegreen_examples::real::ExampleJob;
use bluegreen_local_flink::file_ledger::{Expectation, judge_lines};
use bluegreen_protocol::Color;

const JITTER_MS: u64 = 1500;

/// How long after the checkpoint that [`read_committed_report`] triggers every partition's last
/// stable offset must have reached the high watermark it had when the handover ended: the
/// committers commit as that checkpoint completes. A transaction left open (by a writer that is
/// gone) holds it back until `transaction.timeout.ms`, 600 s in the example job.
const LAG_BOUND: Duration = Duration::from_secs(30);

/// A broker with the topics `in` and `out` and the producer of `in` running.
async fn kafka_with_input() -> anyhow::Result<KafkaBroker> {
    kafka::with_input("in", "out", JITTER_MS).await
}

/// The arguments of the example job's Kafka shape on `kafka`, followed by `extra`.
fn kafka_args(kafka: &KafkaBroker, extra: &[&str]) -> Vec<String> {
    let mut args = kafka::job_args(&kafka.bootstrap, "in", "out", JITTER_MS);
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args
}

/// The `read_committed` lag around one handover (started at `from_ms`, steady at `to_ms`).
#[derive(Debug)]
struct HandoverLag {
    /// The most records written by open transactions at one sample, all partitions together,
    /// between `from_ms` and `to_ms`.
    peak: u64,
    /// From `to_ms` until the last stable offset of every partition reached its high watermark
    /// at `to_ms`.
    caught_up_after: Duration,
}

/// Measures the handover's lag from `watch`; waits up to [`LAG_BOUND`] for the catch-up.
async fn handover_lag(watch: &LagWatch, from_ms: u64, to_ms: u64) -> anyhow::Result<HandoverLag> {
    let at = watch
        .wait_caught_up(to_ms, now_ms() + u64::try_from(LAG_BOUND.as_millis())?)
        .await?;
    Ok(HandoverLag {
        peak: watch.peak(from_ms, to_ms)?,
        caught_up_after: Duration::from_millis(at - to_ms),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_in_kafka_out_exactly_once_through_five_real_upgrades_read_committed()
-> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let started = std::time::Instant::now();
    let mut kafka = kafka_with_input().await?;
    let watch = kafka.watch_lag("out", Duration::from_millis(500))?;
    let stack = &bed.stack;
    let mut job = ExampleJob::new(&bed.output("unused"));
    job.topology = "kafka".into();
    job.extra_args = kafka_args(&kafka, &[]);
    bed.deploy("orders", &job).await?;
    let none = BTreeMap::new();
    let mut color = Color::Blue;
    // v1 (parallelism 2) → v2 (3) → v1 (2) → v2 (2, restored from blue's last checkpoint, which
    // the check before it triggered) → v1 (3) → v2 (2).
    let steps: [(&str, i32, Option<RestoreFrom>); 5] = [
        ("v2", 3, None),
        ("v1", 2, None),
        ("v2", 2, Some(RestoreFrom::LastCheckpoint)),
        ("v1", 3, Some(RestoreFrom::Savepoint)),
        ("v2", 2, None),
    ];
    for step in steps {
        let from_ms = now_ms();
        color = upgrade_step(stack, "orders", &mut job, color, step).await?;
        let to_ms = now_ms();
        let (version, parallelism, restore) = step;
        let report = read_committed_report(stack, &kafka, "orders", "out", &none).await?;
        let lag = handover_lag(&watch, from_ms, to_ms).await?;
        eprintln!(
            "after the upgrade to {color} ({version}, parallelism {parallelism}, {restore:?}): \
             read_committed lag peak {} records during the handover ({:.1} s), \
             caught up {:.1} s after it ended\n{report}",
            lag.peak,
            Duration::from_millis(to_ms - from_ms).as_secs_f64(),
            lag.caught_up_after.as_secs_f64()
        );
        ensure!(report.is_exactly_once_by_owner(), "{report}");
    }
    // Every record the producer wrote, not only those below the highest id seen.
    kafka.stop_producers();
    let horizons = kafka.end_offsets("in").await?;
    let report = read_committed_report(stack, &kafka, "orders", "out", &horizons).await?;
    eprintln!(
        "every input record ({horizons:?} per partition), read_committed:\n{report}\n\
         whole test {:?}",
        started.elapsed()
    );
    ensure!(report.is_exactly_once_by_owner(), "{report}");
    let produced: u64 = horizons.values().sum();
    ensure!(report.total_lines() == produced, "{report}");
    ensure!(report.lines[&Color::Blue] > 1000, "{report}");
    ensure!(report.lines[&Color::Green] > 1000, "{report}");
    // Per-color prefixes: no producer of either color was ever fenced (the shared-prefix test is
    // the opposite case).
    for &color in Color::ALL {
        let fenced = bed.flink_log_lines(color, &FENCED)?;
        ensure!(
            fenced.is_empty(),
            "{color} was fenced: {:?}",
            fenced.first()
        );
    }
    bed.stack.shutdown().await;
    drop(kafka);
    Ok(())
}

/// Keeps the fail trigger `file` in place (a task deletes it as it fails) until the handover in
/// progress is aborted; the history entry of the abort.
async fn fail_until_aborted(bed: &Bed, file: &Path) -> anyhow::Result<TransitionRecord> {
    let deadline = tokio::time::Instant::now() + UPGRADE;
    let aborted = loop {
        let status = bed
            .stack
            .fbgds()
            .get("orders")
            .await?
            .status
            .unwrap_or_default();
        if status.transition.is_none()
            && let Some(h) = status.history.first()
            && h.outcome == Outcome::Aborted
        {
            break h.clone();
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "the handover was not aborted within {UPGRADE:?}: {status:?}"
        );
        if !file.exists() {
            std::fs::write(file, b"")?;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    if file.exists() {
        std::fs::remove_file(file)?;
    }
    Ok(aborted)
}

/// The incoming job fails at its first record, again after every restart, until its restart
/// strategy is exhausted: the controller aborts the handover before W and blue keeps every record.
/// Then blue fails over once (its restarted writer aborts the transaction it had open). With the
/// input stopped and a checkpoint committed, the `read_committed` reading holds every record
/// once, all blue; the `read_uncommitted` reading holds no green record (never written) and blue's
/// aborted transaction (written and aborted: each of its records also committed once after the
/// replay). Judged as if it were the output, the `read_uncommitted` reading fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_job_failing_before_w_is_aborted_and_nothing_of_it_is_read_committed()
-> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let started = std::time::Instant::now();
    let mut kafka = kafka_with_input().await?;
    let stack = &bed.stack;
    let (fail_blue, fail_green) = (bed.output("fail-blue"), bed.output("fail-green"));
    let mut job = ExampleJob::new(&bed.output("unused"));
    job.topology = "kafka".into();
    job.extra_args = kafka_args(
        &kafka,
        &["--fail-trigger", &fail_blue.display().to_string()],
    );
    bed.deploy("orders", &job).await?;
    job.version = "v2".into();
    job.extra_args = kafka_args(
        &kafka,
        &["--fail-trigger", &fail_green.display().to_string()],
    );
    stack.patch_spec("orders", job.template_patch()).await?;
    let aborted = fail_until_aborted(&bed, &fail_green).await?;
    eprintln!("aborted: {aborted:?}");
    // (`toggle` in the history is W once proposed: the gates may have seen it WAITING.)
    ensure!(
        aborted
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("before W was set")),
        "{aborted:?}"
    );
    // Blue fails over with records in its open transaction.
    tokio::time::sleep(Duration::from_secs(5)).await;
    std::fs::write(&fail_blue, b"")?;
    wait_taken(&fail_blue).await?;
    // (Not Ready after an abort: `Degraded/HandoverAborted` until the template changes.)
    tokio::time::sleep(Duration::from_secs(10)).await;
    kafka.stop_producers();
    let horizons = kafka.end_offsets("in").await?;
    // Blue runs again once a checkpoint can be taken; it then reads up to the horizons.
    let deadline = tokio::time::Instant::now() + UPGRADE;
    while let Err(e) = stack.commit_active("orders").await {
        ensure!(tokio::time::Instant::now() < deadline, "{e:#}");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let report = read_committed_report(stack, &kafka, "orders", "out", &horizons).await?;
    eprintln!("read_committed, every input record ({horizons:?}):\n{report}");
    ensure!(report.is_exactly_once_by_owner(), "{report}");
    ensure!(
        report.total_lines() == horizons.values().sum::<u64>(),
        "{report}"
    );
    ensure!(!report.lines.contains_key(&Color::Green), "{report}");
    let committed = kafka.read("out", "read_committed").await?;
    let uncommitted = kafka.read("out", "read_uncommitted").await?;
    let aborted = aborted_lines(&committed, &uncommitted);
    let expect = Expectation::new(Color::Blue).keys_per_split(KEYS);
    let raw = judge_lines(
        Path::new("topic out (read_uncommitted)"),
        uncommitted.iter().map(String::as_str),
        &expect,
    );
    let only_aborted = judge_lines(
        Path::new("aborted transactions"),
        aborted.iter().map(String::as_str),
        &expect.clone().without_count_check(),
    );
    eprintln!(
        "read_uncommitted: {} records, {} of them in aborted transactions\n{raw}\n\
         the aborted ones alone:\n{only_aborted}\nwhole test {:?}",
        uncommitted.len(),
        aborted.len(),
        started.elapsed()
    );
    // Never written: no green record, committed or aborted.
    ensure!(!raw.lines.contains_key(&Color::Green), "{raw}");
    // Written and aborted: blue's open transaction at its failover, each record committed once
    // after the replay, so the raw reading shows them as duplicates.
    ensure!(!aborted.is_empty(), "blue's failover aborted nothing");
    ensure!(only_aborted.duplicates == 0, "{only_aborted}");
    let committed_set: std::collections::BTreeSet<&str> =
        committed.iter().map(String::as_str).collect();
    ensure!(
        aborted.iter().all(|l| committed_set.contains(l.as_str())),
        "an aborted record was not committed after the replay"
    );
    ensure!(raw.duplicates == aborted.len() as u64, "{raw}");
    bed.stack.shutdown().await;
    drop(kafka);
    Ok(())
}

/// What a fenced Kafka producer logs (the writer's failed send, the committer's failed commit).
const FENCED: [&str; 2] = ["ProducerFencedException", "InvalidProducerEpochException"];

/// One prefix for both colors, one upgrade 2 → 3. `BlueGreenSinks.sinkTo` refuses such a
/// `KafkaSink` when the job is built (`KafkaSinkCheckTest`); `--transactional-id-prefix
/// shared-unchecked` places the gate before the unwrapped sink to show why: green's writers,
/// restored from blue's savepoint (checkpoint N), abort the lingering transactions
/// `orders-shared-<subtask>-<N+1…>` on start, which are blue's open ones: blue's producers are
/// fenced and blue fails over (its restarted writers may fence green in turn: they did in the
/// runs through the wrapper, not in the first run unwrapped). The damage the test asserts: the
/// outgoing job fenced, and records written and aborted. What a `read_committed` consumer reads
/// is printed: every failover restores the job's own savepoint or checkpoint and writes what was
/// aborted again, so it read 0/0 in every run so far (docs/jvm.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_transactional_id_prefix_fences_the_outgoing_job_on_real_kafka()
-> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let started = std::time::Instant::now();
    let mut kafka = kafka_with_input().await?;
    let stack = &bed.stack;
    let mut job = ExampleJob::new(&bed.output("unused"));
    job.topology = "kafka".into();
    job.extra_args = kafka_args(&kafka, &["--transactional-id-prefix", "shared-unchecked"]);
    bed.deploy("orders", &job).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    upgrade_step(stack, "orders", &mut job, Color::Blue, ("v2", 3, None)).await?;
    kafka.stop_producers();
    let horizons = kafka.end_offsets("in").await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let deadline = tokio::time::Instant::now() + UPGRADE;
    while let Err(e) = stack.commit_active("orders").await {
        ensure!(tokio::time::Instant::now() < deadline, "{e:#}");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let report = read_committed_report(stack, &kafka, "orders", "out", &horizons).await?;
    let committed = kafka.read("out", "read_committed").await?;
    let uncommitted = kafka.read("out", "read_uncommitted").await?;
    let aborted = aborted_lines(&committed, &uncommitted);
    let (blue, green) = (
        bed.flink_log_lines(Color::Blue, &FENCED)?,
        bed.flink_log_lines(Color::Green, &FENCED)?,
    );
    eprintln!(
        "shared prefix: blue logged {} fencing lines, green {}; {} records written and aborted\n\
         e.g. blue: {:?}\n     green: {:?}\n\
         read_committed, every input record ({horizons:?}):\n{report}\nwhole test {:?}",
        blue.len(),
        green.len(),
        aborted.len(),
        blue.first(),
        green.first(),
        started.elapsed()
    );
    ensure!(!blue.is_empty(), "blue was not fenced");
    ensure!(!aborted.is_empty(), "nothing was written and aborted");
    bed.stack.shutdown().await;
    drop(kafka);
    Ok(())
}
