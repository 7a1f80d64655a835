//! Kafka in, Kafka out, through real handovers (issue 24, first slice): a real Apache Kafka broker
//! (4.x, KRaft, one node, `bluegreen_e2e::kafka`), the example job's Kafka shape on real Flink 1.20
//! (`--topology kafka`: `KafkaSource` over a 4-partition topic → keyed running count → the gate →
//! `KafkaSink` `EXACTLY_ONCE` with `BlueGreenSinks.transactionalIdPrefix` per color), driven by the
//! unchanged controller through the local API server (the real-mode runner of `real_upgrades.rs`,
//! checkpoint interval 60 s, deletion delay 0 s). The input is written by the test bed's producer
//! while the jobs run; the verdict is a plain Kafka consumer with `isolation.level=read_committed`
//! on the output topic, judged by the file ledger's rules (`file_ledger::judge_lines`): every
//! input record exactly once, by the color that owns its event time, with the right running count.
//!
//! Needs `scripts/kafka-jars.sh` and the jars of `real_upgrades.rs`; without a `java` on the PATH
//! it says so and passes without running.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, ensure};
use bluegreen_controller::resource::{Outcome, RestoreFrom};
use bluegreen_e2e::kafka::KafkaBroker;
use bluegreen_e2e::real::{Bed, upgrade_step};
use bluegreen_examples::LocalStack;
use bluegreen_examples::real::ExampleJob;
use bluegreen_local_flink::file_ledger::{Expectation, FileLedgerReport, judge_lines};
use bluegreen_protocol::Color;

const PARTITIONS: u32 = 4;
const RATE: u64 = 50;
const JITTER_MS: u64 = 1500;
const KEYS: u64 = 16;

/// The expectation of `name`'s promoted handovers (blue first); `horizons`: every id below them.
async fn expectation(
    stack: &LocalStack,
    name: &str,
    horizons: &BTreeMap<u32, u64>,
) -> anyhow::Result<Expectation> {
    let status = stack.fbgds().get(name).await?.status.context("no status")?;
    let mut handovers: Vec<(i64, Color)> = status
        .history
        .iter()
        .filter(|h| h.outcome == Outcome::Promoted)
        .filter_map(|h| h.toggle.map(|w| (w, h.to)))
        .collect();
    handovers.sort_unstable();
    let mut expect = Expectation::new(Color::Blue).keys_per_split(KEYS);
    for (w, to) in handovers {
        expect = expect.handover(w, to);
    }
    for (&p, &n) in horizons {
        expect = expect.horizon(p, n);
    }
    Ok(expect)
}

/// Commits what the active job read (a checkpoint through Flink's REST API), then judges the
/// output topic as a `read_committed` consumer sees it. The committers commit just after the
/// checkpoint completes, so a read with losses is repeated, up to 30 s; a real loss stays.
async fn read_committed_report(
    stack: &LocalStack,
    kafka: &KafkaBroker,
    name: &str,
    horizons: &BTreeMap<u32, u64>,
) -> anyhow::Result<FileLedgerReport> {
    stack.commit_active(name).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let expect = expectation(stack, name, horizons).await?;
        let lines = kafka.read("out", "read_committed").await?;
        let report = judge_lines(
            Path::new("topic out (read_committed)"),
            lines.iter().map(String::as_str),
            &expect,
        );
        if report.losses == 0 || tokio::time::Instant::now() > deadline {
            return Ok(report);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        stack.commit_active(name).await?;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_in_kafka_out_exactly_once_through_five_real_upgrades_read_committed()
-> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let started = std::time::Instant::now();
    let mut kafka = KafkaBroker::start().await?;
    kafka
        .create_topics(&[("in", PARTITIONS), ("out", PARTITIONS)])
        .await?;
    let t0 = u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis())?;
    kafka.start_producer("in", PARTITIONS, RATE, t0, JITTER_MS, 1, KEYS)?;
    let stack = &bed.stack;
    let mut job = ExampleJob::new(&bed.output("unused"));
    job.topology = "kafka".into();
    job.extra_args = [
        "--kafka",
        &kafka.bootstrap,
        "--input-topic",
        "in",
        "--output-topic",
        "out",
        "--jitter-ms",
        &JITTER_MS.to_string(),
        "--idleness-ms",
        "3000",
    ]
    .map(str::to_owned)
    .to_vec();
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
        color = upgrade_step(stack, "orders", &mut job, color, step).await?;
        let (version, parallelism, restore) = step;
        let report = read_committed_report(stack, &kafka, "orders", &none).await?;
        eprintln!(
            "after the upgrade to {color} ({version}, parallelism {parallelism}, {restore:?}):\n{report}"
        );
        ensure!(report.is_exactly_once_by_owner(), "{report}");
    }
    // Every record the producer wrote, not only those below the highest id seen.
    kafka.stop_producers();
    let horizons = kafka.end_offsets("in").await?;
    let report = read_committed_report(stack, &kafka, "orders", &horizons).await?;
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
    bed.stack.shutdown().await;
    drop(kafka);
    Ok(())
}
