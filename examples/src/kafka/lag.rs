//! The `read_committed` lag of a topic (each partition's last stable offset against its high
//! watermark, sampled by `KafkaTool watch-lag`) and what aborted transactions contained.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::process::Child;
use std::time::Duration;

use anyhow::{Context as _, bail};

use super::KafkaBroker;

/// What aborted transactions contained: every line of the `read_uncommitted` reading beyond the
/// `read_committed` one (as multisets; each line is a record's whole output line). Meaningful when
/// no transaction is open, e.g. after a checkpoint with the input stopped.
pub fn aborted_lines(committed: &[String], uncommitted: &[String]) -> Vec<String> {
    let mut left: BTreeMap<&str, u64> = BTreeMap::new();
    for line in committed {
        *left.entry(line.as_str()).or_default() += 1;
    }
    let mut aborted = Vec::new();
    for line in uncommitted {
        match left.get_mut(line.as_str()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => aborted.push(line.clone()),
        }
    }
    aborted
}

/// One sample of a partition's `read_committed` lag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LagSample {
    /// Wall-clock time of the sample (epoch ms).
    pub at_ms: u64,
    /// The partition.
    pub partition: u32,
    /// Its last stable offset: where a `read_committed` consumer stops.
    pub stable: u64,
    /// Its high watermark: where a `read_uncommitted` consumer stops.
    pub high: u64,
}

impl LagSample {
    /// Records written by transactions still open (or by those after the first open one).
    pub fn lag(&self) -> u64 {
        self.high.saturating_sub(self.stable)
    }
}

/// `KafkaTool watch-lag` running on one topic; killed when dropped.
pub struct LagWatch {
    child: Child,
    out: PathBuf,
}

impl KafkaBroker {
    /// Starts sampling the `read_committed` lag of every partition of `topic` every `period`
    /// (`KafkaTool watch-lag`, one JVM for the whole run).
    pub fn watch_lag(&self, topic: &str, period: Duration) -> anyhow::Result<LagWatch> {
        let out = self.dir().join(format!("lag-{topic}.txt"));
        let err = self.dir().join(format!("lag-{topic}.log"));
        let child = self.spawn_tool(
            "watch-lag",
            &[topic.to_owned(), period.as_millis().to_string()],
            &out,
            &err,
        )?;
        Ok(LagWatch { child, out })
    }
}

impl LagWatch {
    /// Every sample so far, in order (a partly written last line is left out).
    pub fn samples(&self) -> anyhow::Result<Vec<LagSample>> {
        let text = fs::read_to_string(&self.out)?;
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        complete
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                let [at, p, stable, high] = f.as_slice() else {
                    bail!("not `epochMs partition stable high`: {l:?}");
                };
                Ok(LagSample {
                    at_ms: at.parse()?,
                    partition: p.parse()?,
                    stable: stable.parse()?,
                    high: high.parse()?,
                })
            })
            .collect()
    }

    /// The most records written by open transactions at one sampling, all partitions together,
    /// between `from_ms` and `to_ms` (epoch ms, both included); 0 without a sample there.
    pub fn peak(&self, from_ms: u64, to_ms: u64) -> anyhow::Result<u64> {
        Ok(peak(&self.samples()?, from_ms, to_ms))
    }

    /// When (epoch ms) the last stable offset of every partition first reached the high watermark
    /// it had at `at_ms` (its last sampling up to then), if it has; an error without a sample up to
    /// `at_ms`.
    pub fn caught_up(&self, at_ms: u64) -> anyhow::Result<Option<u64>> {
        caught_up(&self.samples()?, at_ms)
    }

    /// Waits (sampling every 500 ms) until [`caught_up`](Self::caught_up) at `at_ms` and returns
    /// when that was (epoch ms); an error naming the last stable offsets still behind when
    /// `deadline_ms` (epoch ms) passes first: a transaction left open by a writer that is gone holds
    /// them back until `transaction.timeout.ms`.
    pub async fn wait_caught_up(&self, at_ms: u64, deadline_ms: u64) -> anyhow::Result<u64> {
        loop {
            if let Some(at) = self.caught_up(at_ms)? {
                if at > deadline_ms {
                    bail!(
                        "the last stable offsets reached the high watermarks of {at_ms} only at \
                         {at}, {} ms after the deadline",
                        at - deadline_ms
                    );
                }
                return Ok(at);
            }
            if super::now_ms() > deadline_ms {
                bail!(
                    "a transaction stays open: at the deadline the last stable offsets {:?} are \
                     still below the high watermarks of {at_ms}",
                    self.last()?
                );
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// The last sampling, every partition (empty before the first).
    pub fn last(&self) -> anyhow::Result<Vec<LagSample>> {
        Ok(by_time(&self.samples()?)
            .into_values()
            .next_back()
            .unwrap_or_default())
    }
}

/// [`LagWatch::peak`] of `samples`.
fn peak(samples: &[LagSample], from_ms: u64, to_ms: u64) -> u64 {
    by_time(samples)
        .range(from_ms..=to_ms)
        .map(|(_, s)| s.iter().map(LagSample::lag).sum::<u64>())
        .max()
        .unwrap_or(0)
}

/// [`LagWatch::caught_up`] of `samples`.
fn caught_up(samples: &[LagSample], at_ms: u64) -> anyhow::Result<Option<u64>> {
    let samples = by_time(samples);
    let (_, then) = samples
        .range(..=at_ms)
        .next_back()
        .context("no lag sample up to then")?;
    Ok(samples
        .range(at_ms..)
        .find(|(_, now)| {
            then.iter().all(|end| {
                now.iter()
                    .any(|s| s.partition == end.partition && s.stable >= end.high)
            })
        })
        .map(|(&at, _)| at))
}

/// `samples` by time, one entry per sampling (every partition).
fn by_time(samples: &[LagSample]) -> BTreeMap<u64, Vec<LagSample>> {
    let mut out: BTreeMap<u64, Vec<LagSample>> = BTreeMap::new();
    for s in samples {
        out.entry(s.at_ms).or_default().push(*s);
    }
    out
}

impl Drop for LagWatch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::{LagSample, caught_up, peak};

    fn s(at_ms: u64, partition: u32, stable: u64, high: u64) -> LagSample {
        LagSample {
            at_ms,
            partition,
            stable,
            high,
        }
    }

    #[test]
    fn the_peak_sums_the_partitions_of_one_sampling_and_catching_up_reaches_the_high_watermark_then()
     {
        let samples = [
            s(1, 0, 0, 5),
            s(1, 1, 0, 5),
            s(2, 0, 5, 9),
            s(2, 1, 2, 9),
            s(3, 0, 9, 9),
            s(3, 1, 4, 9),
            s(4, 0, 9, 12),
            s(4, 1, 9, 12),
        ];
        assert_eq!(peak(&samples, 1, 2), 11);
        assert_eq!(peak(&samples, 3, 4), 6);
        assert_eq!(peak(&samples, 5, 9), 0);
        // At 2 the high watermarks were 9: both stable offsets reach 9 at 4.
        assert_eq!(caught_up(&samples, 2).unwrap(), Some(4));
        assert_eq!(caught_up(&samples, 4).unwrap(), None);
        assert!(caught_up(&samples, 0).is_err());
    }
}
