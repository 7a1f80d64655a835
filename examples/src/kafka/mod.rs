//! A real Apache Kafka broker for the Kafka shape of the example job (issue 24), shared by the
//! demo (`--kafka`), `bluegreen-local up --kafka`, the upgrade bench (`--kafka`) and the
//! real-Kafka tests: one KRaft node (broker and controller in one JVM) from the Maven Central jars
//! that `scripts/kafka-jars.sh` installs under `target/kafka/<version>`, on loopback ports, its
//! storage formatted in a temp dir with a random cluster id ([`broker`]); and the plain-Kafka side
//! (`scripts/kafka/KafkaTool.java`, nothing of Flink): the producer of the input topic, the
//! `read_committed` oracle of the output topic and its ledger ([`ledger`]), the `read_committed`
//! lag ([`lag`]) and when each record became visible ([`follow`]).

pub mod broker;
pub mod follow;
pub mod lag;
pub mod ledger;

use std::path::{Path, PathBuf};

use anyhow::ensure;

pub use broker::KafkaBroker;
pub use follow::Follower;
pub use lag::{LagSample, LagWatch, aborted_lines};

/// The Kafka version `scripts/kafka-jars.sh` installs.
pub const KAFKA_VERSION: &str = "4.1.1";

/// `target/kafka/<version>` of the repository, or an error naming `scripts/kafka-jars.sh`.
pub fn kafka_home() -> anyhow::Result<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("examples/ is inside the repository");
    let home = repo.join("target/kafka").join(KAFKA_VERSION);
    ensure!(
        home.join(".complete").exists(),
        "{} is missing: run `scripts/kafka-jars.sh` (scripts/test and scripts/demo --kafka do it)",
        home.display()
    );
    Ok(home)
}

/// Partitions of the example input topic (the splits of the file shape).
pub const PARTITIONS: u32 = 4;
/// Records per second the producer writes into each partition.
pub const RATE: u64 = 50;

/// The current wall-clock time, epoch ms.
pub fn now_ms() -> u64 {
    u64::try_from(crate::visibility::now_ms()).expect("the clock is after 1970")
}

/// A broker with the topics `input` and `output` ([`PARTITIONS`] each) and the producer of
/// `input` running from now: [`RATE`] records a second per partition, event times within
/// `jitter_ms` of their schedule, [`ledger::KEYS`] keys per partition.
///
/// # Errors
/// When the broker does not start or a tool fails.
pub async fn with_input(input: &str, output: &str, jitter_ms: u64) -> anyhow::Result<KafkaBroker> {
    let mut kafka = KafkaBroker::start().await?;
    kafka
        .create_topics(&[(input, PARTITIONS), (output, PARTITIONS)])
        .await?;
    kafka.start_producer(
        input,
        PARTITIONS,
        RATE,
        now_ms(),
        jitter_ms,
        1,
        ledger::KEYS,
    )?;
    Ok(kafka)
}

/// The example job's arguments for its Kafka shape (`ExampleJob::extra_args` with topology
/// `kafka`): the brokers, the topics, the producer's jitter (the watermark bound is twice it) and
/// a 3 s source idleness.
pub fn job_args(bootstrap: &str, input: &str, output: &str, jitter_ms: u64) -> Vec<String> {
    [
        "--kafka",
        bootstrap,
        "--input-topic",
        input,
        "--output-topic",
        output,
        "--jitter-ms",
        &jitter_ms.to_string(),
        "--idleness-ms",
        "3000",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The last `n` lines of `path`, for a failure's message.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
