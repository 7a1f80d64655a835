//! The Kafka sink's transaction naming strategies through real handovers (issue 24): connector
//! 5.0.0-2.2 on **real Flink 2.3.0** offers `TransactionNamingStrategy.INCREMENTING` (its
//! `DEFAULT`, the 3.x naming `<prefix>-<subtask>-<checkpoint id>`) and `POOLING` (ids
//! `<prefix>-<subtask>-<n>` reused once committed, lingering ones found by listing the topic's open
//! transactions). The upstream bug FLINK-40626 leaves a pooled transaction open until
//! `transaction.timeout.ms` after a prefix change or a downscale. Every handover changes the prefix
//! (it is per color); here each one is also a downscale, 3 → 2. Through `BlueGreenSinks.sinkTo`
//! the incoming writers restore none of the outgoing color's writer state, so the connector sees
//! neither change, and neither strategy leaves a transaction open (docs/jvm.md says why, and where
//! FLINK-40626 remains).
//!
//! For each strategy, the example job's Kafka shape (`--transaction-naming`) on the unchanged
//! controller: blue at parallelism 3 commits a checkpoint first (so that `POOLING` reuses a
//! committed id at the handover's savepoint), then hands over to green at parallelism 2. The
//! `read_committed` oracle reads 0 duplicates / 0 losses before and after, no producer is fenced,
//! and the `read_committed` lag (each partition's last stable offset against its high watermark,
//! sampled every 0.5 s) is measured before, during and after the handover: every partition's last
//! stable offset must reach the high watermark it had at the end of the handover within
//! [`LAG_BOUND`].
//!
//! Needs what `real_flink2.rs` needs (`FLINK_VERSION=2.3.0 scripts/flink-jars.sh`, `mvn -B -q
//! package -DskipTests -Pflink2`, `scripts/kafka-jars.sh`, `cargo build -p bluegreen-sidecar`);
//! without a `java` on the PATH every test says so and passes without running.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::ensure;
use bluegreen_e2e::kafka::{self, LagWatch, ledger::read_committed_report, now_ms};
use bluegreen_e2e::real::{Bed, upgrade_step};
use bluegreen_examples::real::{ExampleJob, FLINK2_SPEC_VERSION};
use bluegreen_protocol::Color;

const JITTER_MS: u64 = 1500;

/// How long after the end of a handover every partition's last stable offset may stay below the
/// high watermark it had then. At that point the open transactions are the incoming job's only
/// (the outgoing job's last ones were committed by its stop-with-savepoint before it was
/// deleted); the checkpoint that [`read_committed_report`] triggers right away commits them as it
/// completes (1–3 s here), so the lag returns to what the checkpoint interval makes it. The bound
/// leaves room for a loaded 2-core machine; a transaction left open holds the last stable offset
/// until `transaction.timeout.ms` (600 s in the example job), far beyond it.
const LAG_BOUND: Duration = Duration::from_secs(30);

/// What a fenced producer logs: the writer's failed send, and the committer's failed commit (for
/// `POOLING`, FLINK-40626's signature: a recovered transaction whose id was reused).
const FENCED: [&str; 3] = [
    "ProducerFencedException",
    "InvalidProducerEpochException",
    "because its producer is already fenced",
];

/// What the `POOLING` writer logs when it lists the lingering transactions of its prefix on start
/// (`INCREMENTING`'s probing logs no such line).
const LISTED: &str = "open transactions for subtask";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incrementing_naming_leaves_no_transaction_open_after_a_downscaling_handover()
-> anyhow::Result<()> {
    handover_leaves_no_transaction_open("incrementing").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooling_naming_leaves_no_transaction_open_after_a_downscaling_handover()
-> anyhow::Result<()> {
    handover_leaves_no_transaction_open("pooling").await
}

/// The lag figures of one handover.
#[derive(Debug)]
struct Lag {
    /// The most records in open transactions at one sampling (all partitions) while blue ran
    /// steady before the handover: what the checkpoint interval alone makes it.
    before: u64,
    /// The same during the handover.
    during: u64,
    /// From the end of the handover until every partition's last stable offset reached the high
    /// watermark it had then.
    caught_up_after: Duration,
}

/// Blue (parallelism 3) hands over to green (2) with `--transaction-naming naming`: read_committed
/// 0/0 before and after, no producer fenced, the lag back within [`LAG_BOUND`].
async fn handover_leaves_no_transaction_open(naming: &str) -> anyhow::Result<()> {
    let Some(bed) = Bed::start().await? else {
        return Ok(());
    };
    let started = Instant::now();
    let mut broker = kafka::with_input("in", "out", JITTER_MS).await?;
    let watch = broker.watch_lag("out", Duration::from_millis(500))?;
    let stack = &bed.stack;
    let mut job = ExampleJob::new(&bed.output("unused"));
    job.flink_version = FLINK2_SPEC_VERSION.into();
    job.topology = "kafka".into();
    job.parallelism = 3;
    job.extra_args = kafka::job_args(&broker.bootstrap, "in", "out", JITTER_MS);
    job.extra_args
        .extend(["--transaction-naming".to_owned(), naming.to_owned()]);
    bed.deploy("orders", &job).await?;
    let deployed_ms = now_ms();
    let none = BTreeMap::new();
    // A committed checkpoint: POOLING takes its ids back at the next snapshot, the handover's
    // savepoint.
    let report = read_committed_report(stack, &broker, "orders", "out", &none).await?;
    ensure!(report.is_exactly_once_by_owner(), "{report}");
    let from_ms = now_ms();
    let color = upgrade_step(stack, "orders", &mut job, Color::Blue, ("v2", 2, None)).await?;
    let to_ms = now_ms();
    let report = read_committed_report(stack, &broker, "orders", "out", &none).await?;
    let lag = lag(&watch, deployed_ms, from_ms, to_ms).await?;
    eprintln!(
        "{naming}: blue (3) → {color} (2) in {:.1} s; read_committed lag peak {} records before \
         (blue steady, one checkpoint), {} during the handover, caught up {:.1} s after it ended\n{report}",
        Duration::from_millis(to_ms - from_ms).as_secs_f64(),
        lag.before,
        lag.during,
        lag.caught_up_after.as_secs_f64()
    );
    ensure!(report.is_exactly_once_by_owner(), "{report}");
    broker.stop_producers();
    let horizons = broker.end_offsets("in").await?;
    let report = read_committed_report(stack, &broker, "orders", "out", &horizons).await?;
    let listed = bed.flink_log_lines(Color::Green, &[LISTED])?;
    eprintln!(
        "{naming}, every input record ({horizons:?}), read_committed:\n{report}\n\
         green's writers listed: {listed:?}\nwhole test {:?}",
        started.elapsed()
    );
    ensure!(report.is_exactly_once_by_owner(), "{report}");
    ensure!(
        report.total_lines() == horizons.values().sum::<u64>(),
        "{report}"
    );
    ensure!(report.lines[&Color::Green] > 100, "{report}");
    // The strategy took effect: only POOLING's abort lists open transactions, once per subtask.
    let expected = if naming == "pooling" { 2 } else { 0 };
    ensure!(
        listed.len() == expected,
        "{naming}: green's writers listed open transactions {} times, not {expected}",
        listed.len()
    );
    for &color in Color::ALL {
        let fenced = bed.flink_log_lines(color, &FENCED)?;
        ensure!(
            fenced.is_empty(),
            "{color} was fenced: {:?}",
            fenced.first()
        );
    }
    bed.stack.shutdown().await;
    drop(broker);
    Ok(())
}

/// The lag around the handover from `from_ms` to `to_ms` (blue steady since `steady_ms`); an error when a partition's last stable
/// offset has not reached its high watermark at `to_ms` within [`LAG_BOUND`] of it.
async fn lag(watch: &LagWatch, steady_ms: u64, from_ms: u64, to_ms: u64) -> anyhow::Result<Lag> {
    let at = watch
        .wait_caught_up(to_ms, to_ms + u64::try_from(LAG_BOUND.as_millis())?)
        .await?;
    Ok(Lag {
        before: watch.peak(steady_ms, from_ms)?,
        during: watch.peak(from_ms, to_ms)?,
        caught_up_after: Duration::from_millis(at - to_ms),
    })
}
