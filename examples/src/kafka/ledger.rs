//! The verdict on the Kafka shape's output topic as a `read_committed` consumer reads it, by the
//! file ledger's rules (`file_ledger::judge_lines`): every input record exactly once, by the color
//! that owns its event time, with the right running count.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bluegreen_local_flink::file_ledger::{Expectation, FileLedgerReport, judge_lines};
use bluegreen_protocol::Color;

use super::KafkaBroker;
use crate::LocalStack;

/// The input's keys per partition (the producer's and the ledger's).
pub const KEYS: u64 = 16;

/// What the ledger expects of `name`'s output: blue first, then the color of each promoted
/// handover in its status above that handover's W, [`KEYS`] keys per partition.
///
/// # Errors
/// When `name` cannot be read or has no status.
pub async fn expectation(stack: &LocalStack, name: &str) -> anyhow::Result<Expectation> {
    let mut expect = Expectation::new(Color::Blue).keys_per_split(KEYS);
    for (w, to) in stack.promoted_handovers(name).await? {
        expect = expect.handover(w, to);
    }
    Ok(expect)
}

/// Commits what `name`'s active job read (a checkpoint through Flink's REST API), then judges
/// `topic` as a `read_committed` consumer reads it, against the promoted handovers of `name`;
/// `horizons`: every id below them per partition must be there (else only those below the highest
/// id seen). The committers commit just after the checkpoint completes, so a reading with losses
/// is repeated, up to 30 s; a real loss stays.
///
/// # Errors
/// When the checkpoint fails or the topic cannot be read.
pub async fn read_committed_report(
    stack: &LocalStack,
    kafka: &KafkaBroker,
    name: &str,
    topic: &str,
    horizons: &BTreeMap<u32, u64>,
) -> anyhow::Result<FileLedgerReport> {
    stack.commit_active(name).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let source = format!("topic {topic} (read_committed)");
    loop {
        let mut expect = expectation(stack, name).await?;
        for (&p, &n) in horizons {
            expect = expect.horizon(p, n);
        }
        let lines = kafka.read(topic, "read_committed").await?;
        let report = judge_lines(
            Path::new(&source),
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
