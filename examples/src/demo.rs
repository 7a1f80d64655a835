//! The local end-to-end blue/green upgrade demo (README, quick start command 1).
//!
//! Starts a local Kubernetes API server, the local Flink runner and the controller in this
//! process; deploys a stateful job and upgrades it, then lets a ledger count what was emitted:
//! every record once, by the color that owned it.
//!
//! * Real Flink (the default when a `java` runs): the example job (`examples/jobs`) as real Flink
//!   1.20 jobs, one JVM per FlinkDeployment with the real sidecar, writing a FileSink; two
//!   upgrades (one changing the parallelism), each timed phase by phase, and the file ledger.
//! * `--simulated`: the simulated Flink, three upgrades in seconds.
//! * `--sql`: an unchanged SQL script run by `bluegreen-sql-runner` (docs/sql.md) on real Flink,
//!   two upgrades (a parallelism change, then a changed query), and the SQL ledger of its five tables.
//! * `--kafka`: the example job's Kafka shape on real Flink and a real Kafka broker
//!   (`KafkaSource` → count → gate → `KafkaSink` `EXACTLY_ONCE`, a transactional id prefix per
//!   color), two upgrades, and the ledger of the output topic as a `read_committed` consumer reads
//!   it, with the `read_committed` lag's peak during each handover.
//! * `--cross-cluster`: the example job moved to another Kubernetes cluster and back on real
//!   Flink (`examples/src/cross_cluster.rs`: two local API servers, a real runner each, a shared
//!   directory for state and output): blue in A, green in B, blue in A, each with a parallelism
//!   change, and the file ledger after each handover.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::bail;
use bluegreen_examples::cross_cluster::{
    Cluster, CrossClusterStack, REMOTE_NAMESPACE, REMOTE_SECRET,
};
use bluegreen_examples::real::{Artifacts, ExampleJob, java_available};
use bluegreen_examples::{LocalStack, StackOptions, orders_job};
use bluegreen_protocol::Color;
use clap::Parser;
use serde_json::{Value, json};

const NAME: &str = "orders";

/// Prints one line of the demo's timeline: the seconds since `$started` (an `Instant`), then the
/// message (`format!`'s arguments).
macro_rules! say {
    ($started:expr, $($message:tt)*) => {
        println!(
            "[{:>5.1}s] {}",
            $started.elapsed().as_secs_f64(),
            format_args!($($message)*)
        )
    };
}

/// The local blue/green upgrade demo.
#[derive(Debug, Parser)]
#[command(about)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one flag per demo, each conflicting with the others"
)]
struct Args {
    /// Run the simulated Flink instead of real Flink jobs.
    #[arg(long)]
    simulated: bool,
    /// Run the SQL job (`bluegreen-sql-runner` with a script) on real Flink instead.
    #[arg(long, conflicts_with = "simulated")]
    sql: bool,
    /// Run the example job Kafka in, Kafka out, on real Flink and a real Kafka broker.
    #[arg(long, conflicts_with_all = ["simulated", "sql"])]
    kafka: bool,
    /// Move the example job to a second local cluster and back, on real Flink.
    #[arg(long, conflicts_with_all = ["simulated", "sql", "kafka"])]
    cross_cluster: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let args = Args::parse();
    let real = !args.simulated && java_available();
    anyhow::ensure!(
        real || !args.kafka,
        "--kafka runs real Flink and a real broker: no `java` on this machine"
    );
    anyhow::ensure!(
        real || !args.cross_cluster,
        "--cross-cluster runs real Flink: no `java` on this machine"
    );
    if args.kafka {
        // Before anything starts: the broker's jars are there (scripts/demo --kafka installs them).
        bluegreen_examples::kafka::kafka_home()?;
    }
    if !args.simulated && !real {
        println!("bluegreen demo: no `java` on this machine, so the SIMULATED Flink runs");
    }
    let work = tempfile_dir()?;
    let artifacts = if real {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("examples/ is inside the repository");
        // The sidecar of this binary's own cargo profile (scripts/demo builds both in one go).
        let profile = if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        };
        Some(Artifacts::find(repo, profile)?)
    } else {
        None
    };
    if let (true, Some(a)) = (args.cross_cluster, &artifacts) {
        return cross_cluster_demo(a, &work).await;
    }
    let mut stack = LocalStack::start(StackOptions {
        real_flink: artifacts.as_ref().map(|a| a.options(&work.join("flink"))),
        ..StackOptions::default()
    })
    .await?;
    let kubeconfig = std::env::temp_dir().join("bluegreen-demo.kubeconfig");
    std::fs::write(&kubeconfig, stack.server.kubeconfig_yaml())?;
    println!(
        "bluegreen demo on {}: local Kubernetes API at {}",
        if args.kafka {
            "REAL Flink 1.20 (one JVM per FlinkDeployment, the real sidecar) and a REAL Kafka broker (an exactly-once KafkaSink)"
        } else if real {
            "REAL Flink 1.20 (one JVM per FlinkDeployment, the real sidecar, a FileSink)"
        } else {
            "the SIMULATED Flink (--simulated)"
        },
        stack.server.url()
    );
    println!(
        "  watch it with: kubectl --kubeconfig {kc} get fbgd -w\n  \
         or the kubectl plugin's live tree: cargo run -p kubectl-bluegreen -- --kubeconfig {kc} get {NAME} -w\n",
        kc = kubeconfig.display()
    );
    stack.start_controller();
    let outcome = match &artifacts {
        Some(a) if args.sql => sql_demo(&stack, a, &work).await,
        Some(a) if args.kafka => kafka_demo(&stack, a).await,
        Some(a) => real_demo(&stack, a, &work).await,
        None => simulated_demo(&stack).await,
    };
    stack.shutdown().await;
    outcome
}

/// A fresh directory for the run's files (kept after the run, and named, for a look).
fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("bluegreen-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

async fn real_demo(stack: &LocalStack, a: &Artifacts, work: &Path) -> anyhow::Result<()> {
    let output = work.join("output");
    let started = Instant::now();
    let mut job = ExampleJob::new(&output);
    stack.create(NAME, job.spec(&a.job_jar)).await?;
    say!(
        started,
        "created {NAME}: the example job v1, parallelism 2, FileSink into {}",
        output.display()
    );
    stack
        .wait_steady(NAME, Color::Blue, Duration::from_mins(3))
        .await?;
    say!(started, "blue is running");
    let mut rows = Vec::new();
    for (version, parallelism, to) in [("v2", 3, Color::Green), ("v1", 3, Color::Blue)] {
        job.version = version.into();
        job.parallelism = parallelism;
        say!(started, "upgrade to {version}, parallelism {parallelism}");
        rows.push(upgrade(stack, &started, job.template_patch(), to).await?);
    }
    stack.commit_active(NAME).await?;
    let report = stack.file_report(NAME, &output, true).await?;
    print_phases("upgrade", &rows);
    println!("\n{report}");
    if report.is_exactly_once_by_owner() {
        println!(
            "\nexactly once on real Flink: 0 duplicates, 0 losses, 0 wrong colors, no damaged file across 2 handovers ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    } else {
        bail!("the ledger found duplicates, losses, wrong colors or damaged files")
    }
}

/// The example job moved to cluster B and back (`examples/src/cross_cluster.rs`), each move a
/// handover with a parallelism change, judged by the file ledger after each.
async fn cross_cluster_demo(a: &Artifacts, work: &Path) -> anyhow::Result<()> {
    let stack = CrossClusterStack::start(a, work).await?;
    let (kc_a, kc_b) = (
        work.join("cluster-a.kubeconfig"),
        work.join("cluster-b.kubeconfig"),
    );
    std::fs::write(&kc_a, stack.home.server.kubeconfig_yaml())?;
    std::fs::write(&kc_b, stack.remote.kubeconfig_yaml())?;
    println!(
        "bluegreen demo across two clusters on REAL Flink 1.20 (one JVM per FlinkDeployment, the real sidecar, a FileSink)\n  \
         cluster A (home): local Kubernetes API at {}: the resource, its coordination ConfigMap, the controller, a Flink runner\n  \
         cluster B: local Kubernetes API at {}: namespace {REMOTE_NAMESPACE}, its own Flink runner; the controller reaches it through the kubeconfig Secret {REMOTE_SECRET} in A\n  \
         shared storage both reach (stands for S3): {}\n  \
         watch them with: kubectl --kubeconfig {} get fbgd,flinkdeployments -w\n                   \
         kubectl --kubeconfig {} -n {REMOTE_NAMESPACE} get flinkdeployments -w\n",
        stack.home.server.url(),
        stack.remote.url(),
        stack.shared.display(),
        kc_a.display(),
        kc_b.display(),
    );
    let outcome = cross_cluster_moves(&stack, a).await;
    stack.shutdown().await;
    outcome
}

async fn cross_cluster_moves(stack: &CrossClusterStack, a: &Artifacts) -> anyhow::Result<()> {
    let started = Instant::now();
    let output = stack.shared.join("output");
    let mut job = ExampleJob::new(&output);
    stack
        .home
        .create(NAME, stack.spec(&job, &a.job_jar))
        .await?;
    say!(
        started,
        "created {NAME} in A: the example job v1, parallelism 2, no spec.cluster (it runs at home)"
    );
    stack
        .wait_steady(NAME, Color::Blue, Duration::from_mins(3))
        .await?;
    say!(
        started,
        "blue runs in cluster A ({})",
        stack.placement().await?
    );
    let mut rows = Vec::new();
    for (cluster, version, parallelism, to, what) in [
        (
            Cluster::Remote,
            "v2",
            3,
            Color::Green,
            "move to cluster B (spec.cluster: the Secret, namespace, REST URL template)",
        ),
        (
            Cluster::Home,
            "v1",
            2,
            Color::Blue,
            "move back to cluster A (spec.cluster removed)",
        ),
    ] {
        job.version = version.into();
        job.parallelism = parallelism;
        say!(started, "{what}, {version}, parallelism {parallelism}");
        rows.push(upgrade(&stack.home, &started, stack.move_patch(&job, cluster), to).await?);
        stack.commit_active(NAME).await?;
        let report = stack.home.file_report(NAME, &output, true).await?;
        say!(
            started,
            "{to} runs in {cluster} ({}); file ledger so far: {} lines, {} duplicates, {} losses, {} wrong colors",
            stack.placement().await?,
            report.total_lines(),
            report.duplicates,
            report.losses,
            report.wrong_color
        );
        if let Some(volume) = stack
            .remote_volume(NAME, to)
            .filter(|_| cluster == Cluster::Remote)
        {
            println!(
                "          {to}'s sidecar in B reads A's coordination ConfigMap with the token the controller wrote into the Secret {} in B (mounted at {})",
                volume.file_name().unwrap_or_default().to_string_lossy(),
                volume.display()
            );
        }
        if !report.is_exactly_once_by_owner() {
            bail!("the ledger found duplicates, losses, wrong colors or damaged files:\n{report}");
        }
    }
    let report = stack.home.file_report(NAME, &output, true).await?;
    print_phases("move", &rows);
    println!("\n{report}");
    println!(
        "\nexactly once across two clusters on real Flink: 0 duplicates, 0 losses, 0 wrong colors across 2 moves ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The example job's Kafka shape on a real broker: created, upgraded twice (one a downscale),
/// judged by a `read_committed` consumer of the output topic.
async fn kafka_demo(stack: &LocalStack, a: &Artifacts) -> anyhow::Result<()> {
    use bluegreen_examples::kafka::{self, ledger, now_ms};
    const JITTER_MS: u64 = 1500;
    let started = Instant::now();
    let mut broker = kafka::with_input("in", "out", JITTER_MS).await?;
    let lag = broker.watch_lag("out", Duration::from_millis(500))?;
    say!(
        started,
        "Kafka {} broker on {}: topics in and out ({} partitions), writing {} records/s into each partition of in",
        kafka::KAFKA_VERSION,
        broker.bootstrap,
        kafka::PARTITIONS,
        kafka::RATE
    );
    let mut job = ExampleJob::new(Path::new("unused"));
    job.topology = "kafka".into();
    job.extra_args = kafka::job_args(&broker.bootstrap, "in", "out", JITTER_MS);
    stack.create(NAME, job.spec(&a.job_jar)).await?;
    say!(
        started,
        "created {NAME}: the example job v1, parallelism 2, KafkaSource(in) -> count -> gate -> KafkaSink(out) EXACTLY_ONCE, prefix per color"
    );
    stack
        .wait_steady(NAME, Color::Blue, Duration::from_mins(3))
        .await?;
    say!(started, "blue is running");
    let mut rows = Vec::new();
    let mut peaks = Vec::new();
    for (version, parallelism, to) in [("v2", 3, Color::Green), ("v1", 2, Color::Blue)] {
        job.version = version.into();
        job.parallelism = parallelism;
        say!(started, "upgrade to {version}, parallelism {parallelism}");
        let from = now_ms();
        rows.push(upgrade(stack, &started, job.template_patch(), to).await?);
        peaks.push(lag.peak(from, now_ms())?);
    }
    broker.stop_producers();
    let horizons = broker.end_offsets("in").await?;
    let produced: u64 = horizons.values().sum();
    say!(
        started,
        "input stopped at {produced} records; a checkpoint commits the rest"
    );
    let report = ledger::read_committed_report(stack, &broker, NAME, "out", &horizons).await?;
    print_phases("upgrade", &rows);
    let peaks: Vec<String> = peaks.iter().map(u64::to_string).collect();
    println!(
        "\nread_committed lag peak per handover (records written by open transactions, all partitions): {}",
        peaks.join(", ")
    );
    println!("\n{report}");
    if report.is_exactly_once_by_owner() && report.total_lines() == produced {
        println!(
            "\nexactly once on real Kafka: 0 duplicates, 0 losses, 0 wrong colors, 0 wrong counts; all {produced} input records read once by a read_committed consumer across 2 handovers ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    } else {
        bail!(
            "the read_committed ledger found duplicates, losses, wrong colors or wrong counts ({} of {produced} records read)",
            report.total_lines()
        )
    }
}

/// The SQL job (`examples/src/sql.rs`): created, upgraded twice, judged by the SQL ledger.
async fn sql_demo(stack: &LocalStack, a: &Artifacts, work: &Path) -> anyhow::Result<()> {
    use bluegreen_examples::sql::{self, InputWriter, SqlJob};
    let started = Instant::now();
    let jar = sql::runner_jar(a)?;
    let mut job = SqlJob::new(&work.join("sql"));
    std::fs::create_dir_all(job.input())?;
    let script = job.write_script()?;
    stack.create(NAME, job.spec(&jar)).await?;
    say!(
        started,
        "created {NAME}: bluegreen-sql-runner --script {} (a projection, TUMBLE, HOP and CUMULATE window counts and an interval join into filesystem tables under {})",
        script.display(),
        job.work.join("output").display()
    );
    stack
        .wait_steady(NAME, Color::Blue, Duration::from_mins(3))
        .await?;
    let input = InputWriter::start(&job.input())?;
    say!(
        started,
        "blue is running; writing one CSV file of 50 orders a second into {}",
        job.input().display()
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    let mut rows = Vec::new();
    for (version, parallelism, to) in [("v1", 3, Color::Green), ("v2", 3, Color::Blue)] {
        job.version = version.into();
        job.parallelism = parallelism;
        let script = job.write_script()?;
        say!(
            started,
            "upgrade to {} ({version}), parallelism {parallelism}",
            script.display()
        );
        // As in tests/tests/real_sql.rs: no input while the incoming job starts (docs/sql.md).
        input.pause();
        let resume = async {
            let running = sql::wait_running(stack, NAME, to, Duration::from_mins(3)).await;
            tokio::time::sleep(Duration::from_secs(2)).await;
            input.resume();
            running
        };
        let (row, running) =
            tokio::join!(upgrade(stack, &started, job.template_patch(), to), resume);
        running?;
        rows.push(row?);
    }
    let records = input.stop().await?;
    tokio::time::sleep(Duration::from_secs(8)).await;
    stack.commit_active(NAME).await?;
    let handovers = stack.promoted_handovers(NAME).await?;
    let last = records.iter().map(|r| r.ts).max().unwrap_or(0);
    let report = sql::judge(&job, &records, &handovers, last)?;
    print_phases("upgrade", &rows);
    println!("\n{} records written; {report}", records.len());
    if report.is_exactly_once_by_owner() {
        println!(
            "\nexactly once on real Flink, SQL: 0 duplicates, 0 losses, 0 wrong colors, 0 wrong values in all five tables across 2 handovers ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    } else {
        bail!("the SQL ledger found duplicates, losses, wrong colors or wrong values")
    }
}

/// The table of `rows`, one line per handover (`what`: `upgrade` or `move`).
fn print_phases(what: &str, rows: &[Row]) {
    println!("\nphases of each {what} (seconds since the spec change):");
    println!(
        "  {:<8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12}  controller",
        "to", "savepoint", "running", "W set", "promoted", "old gone", "stack RSS"
    );
    for row in rows {
        println!("  {row}");
    }
}

/// When each phase of one upgrade was first seen, and what the controller itself spent.
struct Row {
    to: Color,
    savepoint: Option<f64>,
    running: Option<f64>,
    toggle_set: Option<f64>,
    promoted: Option<f64>,
    done: f64,
    peak_rss_mib: u64,
    reconciles: u64,
    reconcile_seconds: f64,
}

impl std::fmt::Display for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
        write!(
            f,
            "{:<8} {:>9} {:>9} {:>9} {:>9} {:>9.1} {:>8} MiB  {} reconciles, {:.2} s ({:.1} %)",
            self.to.as_str(),
            s(self.savepoint),
            s(self.running),
            s(self.toggle_set),
            s(self.promoted),
            self.done,
            self.peak_rss_mib,
            self.reconciles,
            self.reconcile_seconds,
            100.0 * self.reconcile_seconds / self.done
        )
    }
}

/// Applies `patch` and follows the handover to `to` phase by phase.
async fn upgrade(
    stack: &LocalStack,
    started: &Instant,
    patch: Value,
    to: Color,
) -> anyhow::Result<Row> {
    let metrics = &stack.ctx.metrics.reconcile_duration;
    let (count0, sum0) = (metrics.get_sample_count(), metrics.get_sample_sum());
    let t0 = Instant::now();
    stack.patch_spec(NAME, patch).await?;
    let mut row = Row {
        to,
        savepoint: None,
        running: None,
        toggle_set: None,
        promoted: None,
        done: 0.0,
        peak_rss_mib: 0,
        reconciles: 0,
        reconcile_seconds: 0.0,
    };
    let mut last_phase = String::new();
    loop {
        let status = stack.fbgds().get(NAME).await?.status.unwrap_or_default();
        let at = t0.elapsed().as_secs_f64();
        row.peak_rss_mib = row.peak_rss_mib.max(stack_rss_mib());
        if let Some(t) = &status.transition {
            let phase = format!("{:?}", t.phase);
            if phase != last_phase {
                let slot = match phase.as_str() {
                    "Deploying" => &mut row.savepoint,
                    "ConfirmingToggle" => &mut row.running,
                    "ToggleSet" => &mut row.toggle_set,
                    "ClearToTeardown" | "TearingDown" => &mut row.promoted,
                    _ => &mut None,
                };
                slot.get_or_insert(at);
                let w = t.toggle.map_or_else(String::new, |w| format!(" W={w}"));
                say!(
                    started,
                    "  {} -> {}: {phase}{w}",
                    t.from.map_or("-", |c| c.as_str()),
                    t.to
                );
                last_phase = phase;
            }
        } else if status.active_color == Some(to) {
            row.done = at;
            say!(started, "  {to} is live, the old job is gone ({at:.1} s)");
            break;
        }
        if t0.elapsed() > Duration::from_mins(3) {
            bail!(
                "the upgrade to {to} did not finish within 3 minutes: {:?}",
                status.conditions
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    row.reconciles = metrics.get_sample_count() - count0;
    row.reconcile_seconds = metrics.get_sample_sum() - sum0;
    Ok(row)
}

/// The resident memory of this process and its children (the job JVMs and sidecars), in MiB.
fn stack_rss_mib() -> u64 {
    let me = std::process::id();
    let rss = |pid: &str| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .unwrap_or(0)
    };
    let parent = |pid: &str| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let mut kib = rss(&me.to_string());
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str() else { continue };
            if pid.bytes().all(|b| b.is_ascii_digit()) && parent(pid) == Some(me) {
                kib += rss(pid);
            }
        }
    }
    kib / 1024
}

async fn simulated_demo(stack: &LocalStack) -> anyhow::Result<()> {
    let started = Instant::now();
    stack.create(NAME, orders_job("v1", 2)).await?;
    say!(
        started,
        "created FlinkBlueGreenDeployment {NAME} (image orders:v1, parallelism 2)"
    );
    stack
        .wait_steady(NAME, Color::Blue, Duration::from_mins(2))
        .await?;
    say!(started, "blue is running");
    let upgrades = [
        ("v2", 4, Color::Green, "image orders:v2, parallelism 2 -> 4"),
        ("v3", 4, Color::Blue, "image orders:v3"),
        ("v4", 2, Color::Green, "image orders:v4, parallelism 4 -> 2"),
    ];
    for (version, parallelism, to, what) in upgrades {
        say!(started, "upgrade: {what}");
        upgrade(
            stack,
            &started,
            json!({"template": {"spec": {"image": format!("example.com/orders:{version}"), "job": {"parallelism": parallelism}}}}),
            to,
        )
        .await?;
    }
    let report = stack.report(NAME).await?;
    println!("\nledger: {report}");
    if report.is_exactly_once_by_owner() {
        println!("\nexactly once: 0 duplicates, 0 losses across 3 handovers");
        Ok(())
    } else {
        bail!("the ledger found duplicates, losses or wrong colors")
    }
}
