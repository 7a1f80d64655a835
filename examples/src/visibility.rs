//! When the example job's output becomes visible: a poller that notes the first time each
//! committed part file of its `FileSink` appears (`part-*`; in-progress and pending files are
//! hidden), and, per record, the latency from its scheduled arrival at the source to that moment.
//! With `--jitter-ms 0` a record's event time is its scheduled arrival, so the latency is read
//! from the line alone. Used by `bluegreen-upgrade-bench`, which also feeds it what a
//! `read_committed` Kafka consumer saw ([`Watcher::record`]).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bluegreen_local_flink::Error;
use bluegreen_local_flink::file_ledger::{OutputLine, committed_part_files};

/// How often the output directory is listed.
pub const POLL: Duration = Duration::from_millis(100);

/// The current wall-clock time, epoch ms.
pub fn now_ms() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    i64::try_from(d.as_millis()).expect("epoch milliseconds fit in i64")
}

/// One record made visible: when (epoch ms) and how long after its scheduled arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// When its part file was first seen.
    pub visible_ms: i64,
    /// `visible_ms` minus its event time (its scheduled arrival).
    pub latency_ms: i64,
}

/// Committed part files as they appear.
#[derive(Debug, Default)]
pub struct Watcher {
    known: HashSet<PathBuf>,
    /// Every commit seen: when, and the records of the files that appeared then.
    commits: BTreeMap<i64, Vec<Sample>>,
}

impl Watcher {
    /// Lists `dir` once (recursively) and notes every part file not seen before, at `at_ms`.
    ///
    /// # Errors
    /// When a directory or a new file cannot be read.
    pub fn poll(&mut self, dir: &Path, at_ms: i64) -> Result<(), Error> {
        for file in committed_part_files(dir)? {
            if self.known.contains(&file) {
                continue;
            }
            let text = std::fs::read_to_string(&file).map_err(|source| Error::LedgerIo {
                path: file.clone(),
                source,
            })?;
            // A commit, even of a file without a record line.
            self.commits.entry(at_ms).or_default();
            for line in text.lines().filter_map(|l| l.parse::<OutputLine>().ok()) {
                self.record(at_ms, line.event_time);
            }
            self.known.insert(file);
        }
        Ok(())
    }

    /// Notes a record of event time `event_time` made visible at `at_ms` (records seen at the same
    /// moment are one commit).
    pub fn record(&mut self, at_ms: i64, event_time: i64) {
        self.commits.entry(at_ms).or_default().push(Sample {
            visible_ms: at_ms,
            latency_ms: at_ms - event_time,
        });
    }

    /// Lists `dir` every [`POLL`] until `stop` resolves, then once more.
    ///
    /// # Errors
    /// As [`Watcher::poll`].
    pub async fn watch(
        &mut self,
        dir: &Path,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<(), Error> {
        tokio::pin!(stop);
        loop {
            if dir.is_dir() {
                self.poll(dir, now_ms())?;
            }
            tokio::select! {
                () = &mut stop => break,
                () = tokio::time::sleep(POLL) => {}
            }
        }
        if dir.is_dir() {
            self.poll(dir, now_ms())?;
        }
        Ok(())
    }

    /// The latency and commit figures of the records made visible in `[from_ms, to_ms)`.
    pub fn summary(&self, from_ms: i64, to_ms: i64) -> Summary {
        let mut latencies: Vec<i64> = self
            .commits
            .range(from_ms..to_ms)
            .flat_map(|(_, s)| s.iter().map(|s| s.latency_ms))
            .collect();
        latencies.sort_unstable();
        // Gaps between consecutive commits, from the last one before the window.
        let before = self.commits.range(..from_ms).next_back().map(|(t, _)| *t);
        let times: Vec<i64> = before
            .into_iter()
            .chain(self.commits.range(from_ms..to_ms).map(|(t, _)| *t))
            .collect();
        let max_gap_ms = times.windows(2).map(|w| w[1] - w[0]).max();
        Summary {
            records: latencies.len(),
            p50_ms: percentile(&latencies, 50),
            p99_ms: percentile(&latencies, 99),
            max_ms: latencies.last().copied(),
            max_gap_ms,
        }
    }

    /// When the first record matching `pred` became visible.
    pub fn first_visible(&self, pred: impl Fn(&Sample) -> bool) -> Option<i64> {
        self.commits
            .values()
            .flatten()
            .find(|s| pred(s))
            .map(|s| s.visible_ms)
    }
}

/// Latency figures over a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Records made visible in the window.
    pub records: usize,
    /// Median latency.
    pub p50_ms: Option<i64>,
    /// 99th percentile latency.
    pub p99_ms: Option<i64>,
    /// Highest latency.
    pub max_ms: Option<i64>,
    /// The longest time between two consecutive commits (`None`: fewer than two).
    pub max_gap_ms: Option<i64>,
}

/// The `p`th percentile (nearest rank) of sorted `values`.
fn percentile(sorted: &[i64], p: usize) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(offset: u64, event_time: i64) -> String {
        format!("0,{offset},{event_time},0,1,BLUE,v1,1\n")
    }

    #[test]
    fn latency_is_measured_from_the_scheduled_arrival_to_the_first_sight_of_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Watcher::default();
        std::fs::write(
            dir.path().join("part-a-0"),
            line(0, 1_000) + &line(1, 1_500),
        )
        .unwrap();
        // Hidden (in progress) and already seen files are not counted again.
        std::fs::write(dir.path().join(".part-b-0.inprogress"), line(2, 1_600)).unwrap();
        w.poll(dir.path(), 2_000).unwrap();
        w.poll(dir.path(), 2_100).unwrap();
        std::fs::create_dir(dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("b/part-a-1"), line(2, 1_600)).unwrap();
        w.poll(dir.path(), 9_000).unwrap();
        let all = w.summary(0, 10_000);
        assert_eq!(all.records, 3);
        assert_eq!(all.max_ms, Some(7_400));
        assert_eq!(all.p50_ms, Some(1_000));
        assert_eq!(all.max_gap_ms, Some(7_000));
        // The window after the first commit counts the gap from it.
        let late = w.summary(5_000, 10_000);
        assert_eq!((late.records, late.max_gap_ms), (1, Some(7_000)));
        assert_eq!(w.first_visible(|s| s.latency_ms > 5_000), Some(9_000));
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), Some(50));
        assert_eq!(percentile(&v, 99), Some(99));
        assert_eq!(percentile(&[7], 99), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }
}
