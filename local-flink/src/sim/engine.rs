//! One attempt of a simulated job, synchronously: source → keyed running count → gate → sink.
//!
//! The pipeline has two vertices, like a small Flink job: the source (parallelism `p`, split `s`
//! read by subtask `s % p`) and, after a key-by, the chained `Count -> Gate -> Sink` vertex
//! (record with key `k` handled by subtask `k % p`). Records are processed in one global order,
//! (arrival time, split), so every run of the same topic sees the same order and running counts
//! are reproducible. A record the gate holds blocks the whole job (backpressure through the
//! key-by) until the gate can decide it.
//!
//! Watermarks follow Flink's bounded-out-of-orderness generator with idleness: per split
//! `max event time seen - bound - 1`, a split without records for the idleness timeout is left
//! out, a source subtask emits the minimum over its active splits, the downstream vertex the
//! minimum over active source subtasks; every emitted watermark is monotonic.

use std::collections::HashMap;
use std::sync::Arc;

use bluegreen_gate::{Gate, GateHandle, SharedState};
use bluegreen_protocol::{Color, Decision};

use super::config::JobSettings;
use super::ledger::{Emission, LateDrop, Ledger};
use super::snapshot::{Snapshot, SnapshotKind};
use super::source::Record;
use crate::Error;

/// Flink's "no watermark yet".
pub const NO_WATERMARK: i64 = i64::MIN;

#[derive(Debug, Clone, Copy)]
struct SplitState {
    /// Largest event time read (`i64::MIN`: none yet).
    max_ts: i64,
    /// Simulation time of the last record read (or of the attempt's start).
    last_activity: i64,
}

/// Per-subtask counters of the `Count -> Gate -> Sink` vertex.
#[derive(Debug, Clone, Copy, Default)]
pub struct SubtaskCounters {
    /// Records in.
    pub records_in: u64,
    /// Records emitted to the sink.
    pub records_out: u64,
}

/// A record the gate could not decide yet.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    /// The record.
    pub record: Record,
    /// The gate subtask holding it.
    pub subtask: u32,
    /// Simulation time the hold started.
    pub since_ms: i64,
}

/// One running attempt of a job.
#[derive(Debug)]
pub struct Engine {
    settings: Arc<JobSettings>,
    job_id: String,
    attempt: u32,
    positions: Vec<u64>,
    splits: Vec<SplitState>,
    source_wm: Vec<i64>,
    job_wm: i64,
    /// Every source subtask is idle, so the gate's inputs are.
    inputs_idle: bool,
    counts: HashMap<u64, u64>,
    gates: Vec<Gate>,
    color: Option<Color>,
    restored_max_passed: Option<i64>,
    counters: Vec<SubtaskCounters>,
    held: Option<Held>,
    /// When this attempt started (a backlog record is first seen then, not at its arrival).
    started_ms: i64,
}

impl Engine {
    /// A fresh attempt started at `now_ms`, from `restore` if given. `shared` feeds the gates
    /// (`None`: the job has no gate and passes everything).
    pub fn new(
        settings: Arc<JobSettings>,
        job_id: String,
        attempt: u32,
        now_ms: i64,
        restore: Option<&Snapshot>,
        shared: Option<(Color, Arc<SharedState>)>,
    ) -> Result<Self, Error> {
        let n_splits = settings.source.splits as usize;
        let p = settings.parallelism as usize;
        let mut positions = vec![0; n_splits];
        let mut counts = HashMap::new();
        let mut restored_max_passed = None;
        if let Some(s) = restore {
            if s.positions.len() != n_splits {
                return Err(Error::IncompatibleSnapshot {
                    path: s.path.clone(),
                    reason: format!(
                        "it has {} splits, the job reads {n_splits}",
                        s.positions.len()
                    ),
                });
            }
            if s.source != settings.source {
                return Err(Error::IncompatibleSnapshot {
                    path: s.path.clone(),
                    reason:
                        "it was taken from a different topic (bluegreen.sim.* source keys differ)"
                            .into(),
                });
            }
            positions.clone_from(&s.positions);
            counts.extend(s.counts.iter().map(|(k, v)| (*k, *v)));
            restored_max_passed = s.gate_max_passed;
        }
        let (color, gates) = match shared {
            None => (None, Vec::new()),
            Some((color, shared)) => {
                let gates = (0..p)
                    .map(|_| {
                        let mut g = Gate::new(color, Arc::clone(&shared));
                        if let Some(max) = restored_max_passed {
                            g.restore_max_passed(max);
                        }
                        g
                    })
                    .collect();
                (Some(color), gates)
            }
        };
        Ok(Self {
            job_id,
            attempt,
            positions,
            splits: vec![
                SplitState {
                    max_ts: i64::MIN,
                    last_activity: now_ms,
                };
                n_splits
            ],
            source_wm: vec![NO_WATERMARK; p],
            job_wm: NO_WATERMARK,
            inputs_idle: false,
            counts,
            gates,
            color,
            restored_max_passed,
            counters: vec![SubtaskCounters::default(); p],
            held: None,
            started_ms: now_ms,
            settings,
        })
    }

    fn parallelism(&self) -> usize {
        self.settings.parallelism as usize
    }

    /// The next readable record in processing order with arrival `<= until_ms`. `stopped[s]`
    /// is the time split `s` stopped delivering, if it is stopped.
    fn next_record(&self, until_ms: i64, stopped: &[Option<i64>]) -> Option<Record> {
        let source = &self.settings.source;
        let mut best: Option<(i64, u32)> = None;
        for (split, &offset) in self.positions.iter().enumerate() {
            let split = u32::try_from(split).unwrap_or(u32::MAX);
            let arrival = source.arrival(split, offset);
            let limit = match stopped.get(split as usize).copied().flatten() {
                Some(since) => until_ms.min(since - 1),
                None => until_ms,
            };
            if arrival <= limit && best.is_none_or(|b| (arrival, split) < b) {
                best = Some((arrival, split));
            }
        }
        best.map(|(_, split)| source.record(split, self.positions[split as usize]))
    }

    /// Processes every readable record that arrived by `until_ms`, emitting into `ledger`.
    /// Returns the held record if the gate blocks the job.
    pub fn run_until(
        &mut self,
        until_ms: i64,
        stopped: &[Option<i64>],
        ledger: &Ledger,
    ) -> Option<Held> {
        let held = self.run_records(until_ms, stopped, ledger);
        // Publish the gates' counters now, so that they match the ledger after every step.
        for gate in &mut self.gates {
            gate.flush();
        }
        held
    }

    fn run_records(
        &mut self,
        until_ms: i64,
        stopped: &[Option<i64>],
        ledger: &Ledger,
    ) -> Option<Held> {
        if let Some(held) = self.held
            && !self.try_release(held, ledger)
        {
            return Some(held);
        }
        while let Some(record) = self.next_record(until_ms, stopped) {
            self.update_watermarks(record.arrival);
            let p = self.parallelism() as u64;
            let subtask = u32::try_from(record.key % p).unwrap_or(0);
            let (decision, late) = match self.gates.get_mut(subtask as usize) {
                None => (Decision::Pass, false),
                Some(gate) => {
                    gate.refresh();
                    if gate.rule().decide(record.event_time) == Decision::Hold {
                        // Count the hold once; the record stays unread.
                        gate.decide(record.event_time);
                        let held = Held {
                            record,
                            subtask,
                            since_ms: record.arrival.max(self.started_ms),
                        };
                        self.held = Some(held);
                        return Some(held);
                    }
                    let decision = gate.decide(record.event_time);
                    (decision, gate.rule().is_late(record.event_time))
                }
            };
            self.consume(record, subtask, decision, late, ledger);
        }
        self.update_watermarks(until_ms);
        None
    }

    /// Re-decides a held record under the gate's newest state; consumes it if decidable.
    fn try_release(&mut self, held: Held, ledger: &Ledger) -> bool {
        let Some(gate) = self.gates.get_mut(held.subtask as usize) else {
            return true;
        };
        gate.refresh();
        if gate.rule().decide(held.record.event_time) == Decision::Hold {
            return false;
        }
        let decision = gate.decide(held.record.event_time);
        let late = gate.rule().is_late(held.record.event_time);
        self.held = None;
        self.consume(held.record, held.subtask, decision, late, ledger);
        true
    }

    /// Reads `record` (position, watermark, running count) and writes its `decision`: an
    /// emission, or, for a record the gate dropped as `late` (at or below the floor), a late drop.
    fn consume(
        &mut self,
        record: Record,
        subtask: u32,
        decision: Decision,
        late: bool,
        ledger: &Ledger,
    ) {
        let split = record.id.split() as usize;
        self.positions[split] += 1;
        let s = &mut self.splits[split];
        s.max_ts = s.max_ts.max(record.event_time);
        s.last_activity = record.arrival;
        let count = self.counts.entry(record.key).or_default();
        *count += 1;
        let count = *count;
        let c = &mut self.counters[subtask as usize];
        c.records_in += 1;
        if decision == Decision::Pass {
            c.records_out += 1;
            ledger.emit(Emission {
                record: record.id,
                key: record.key,
                count,
                event_time: record.event_time,
                color: self.color,
                subtask,
                job_id: self.job_id.clone(),
                attempt: self.attempt,
            });
        } else if let (Decision::Drop, true, Some(color)) = (decision, late, self.color) {
            ledger.drop_late(LateDrop {
                record: record.id,
                event_time: record.event_time,
                color,
                subtask,
                job_id: self.job_id.clone(),
                attempt: self.attempt,
            });
        }
        self.update_watermarks(record.arrival);
    }

    /// Recomputes the watermarks as of simulation time `now_ms`.
    fn update_watermarks(&mut self, now_ms: i64) {
        let bound = self.settings.source.out_of_orderness_ms;
        let idle_after = self.settings.idleness_timeout_ms;
        let p = self.parallelism();
        let mut job_min: Option<i64> = None;
        for subtask in 0..p {
            let mut min: Option<i64> = None;
            for (split, s) in self.splits.iter().enumerate() {
                if split % p != subtask {
                    continue;
                }
                let idle = idle_after.is_some_and(|t| now_ms.saturating_sub(s.last_activity) >= t);
                if idle {
                    continue;
                }
                let wm = if s.max_ts == i64::MIN {
                    NO_WATERMARK
                } else {
                    s.max_ts.saturating_sub(bound).saturating_sub(1)
                };
                min = Some(min.map_or(wm, |m: i64| m.min(wm)));
            }
            // A subtask whose splits are all idle (or that has none) is idle: it keeps its
            // last watermark and does not hold the downstream one back.
            if let Some(min) = min {
                self.source_wm[subtask] = self.source_wm[subtask].max(min);
                let wm = self.source_wm[subtask];
                job_min = Some(job_min.map_or(wm, |m: i64| m.min(wm)));
            }
        }
        if let Some(min) = job_min {
            self.job_wm = self.job_wm.max(min);
        }
        self.inputs_idle = p > 0 && job_min.is_none();
    }

    /// The state to store in a checkpoint or savepoint.
    pub fn snapshot(&self, kind: SnapshotKind, id: u64, path: String, now_ms: i64) -> Snapshot {
        let gate_max = self
            .gates
            .iter()
            .filter_map(|g| g.snapshot().max_passed_event_time_ms)
            .chain(self.restored_max_passed)
            .max();
        Snapshot {
            id,
            path,
            kind,
            job_id: self.job_id.clone(),
            taken_at_ms: now_ms,
            source: self.settings.source.clone(),
            positions: self.positions.clone(),
            counts: self.counts.iter().map(|(k, v)| (*k, *v)).collect(),
            gate_max_passed: gate_max,
        }
    }

    /// Lets every gate apply the newest coordination state, so that idle subtasks report it too.
    pub fn refresh_gates(&mut self) {
        for g in &mut self.gates {
            g.refresh();
        }
    }

    /// The watermark of the `Count -> Gate -> Sink` vertex.
    pub fn job_watermark(&self) -> i64 {
        self.job_wm
    }

    /// Whether every input of the `Count -> Gate -> Sink` vertex is idle.
    pub fn inputs_idle(&self) -> bool {
        self.inputs_idle
    }

    /// The output watermark of every source subtask.
    pub fn source_watermarks(&self) -> &[i64] {
        &self.source_wm
    }

    /// Handles on the gates' progress (empty without a gate).
    pub fn gate_handles(&self) -> Vec<GateHandle> {
        self.gates.iter().map(Gate::handle).collect()
    }

    /// Per-subtask counters of the gate vertex.
    pub fn counters(&self) -> &[SubtaskCounters] {
        &self.counters
    }

    /// The attempt number.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Records read so far, per split.
    pub fn positions(&self) -> &[u64] {
        &self.positions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::ledger::{Expectation, SinkMode};
    use crate::sim::source::IdleWindow;
    use serde_json::json;

    fn settings(extra: &serde_json::Value) -> Arc<JobSettings> {
        let mut conf = json!({
            "bluegreen.sim.splits": "3",
            "bluegreen.sim.records-per-second": "10",
            "bluegreen.sim.out-of-orderness-ms": "300",
            "bluegreen.sim.idleness-timeout-ms": "2000",
        });
        if let (Some(c), Some(e)) = (conf.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        let spec = json!({"job": {"parallelism": 2}, "flinkConfiguration": conf});
        Arc::new(JobSettings::from_spec("ns", "job", &spec).expect("settings"))
    }

    #[test]
    fn an_ungated_engine_emits_every_record_once_with_correct_counts() {
        let s = settings(&json!({"bluegreen.sim.late-fraction": "0.05"}));
        let ledger = Ledger::new(SinkMode::AtLeastOnce);
        let start = s.source.start_ms;
        let mut e = Engine::new(Arc::clone(&s), "j".into(), 0, start, None, None).expect("engine");
        for step in 1..=60 {
            assert!(e.run_until(start + step * 1000, &[], &ledger).is_none());
        }
        let horizon = e.job_watermark();
        assert!(
            horizon > start + 55_000,
            "watermark follows the data: {horizon}"
        );
        let report = ledger.report(&Expectation::new(s.source.clone(), horizon));
        assert!(report.is_exactly_once(), "{report}");
        assert!(report.expected > 1500);
    }

    #[test]
    fn restoring_a_snapshot_resumes_exactly_there() {
        let s = settings(&json!({}));
        let ledger = Ledger::new(SinkMode::AtLeastOnce);
        let start = s.source.start_ms;
        let mut a = Engine::new(Arc::clone(&s), "a".into(), 0, start, None, None).expect("engine");
        a.run_until(start + 10_000, &[], &ledger);
        let snap = a.snapshot(SnapshotKind::Savepoint, 1, "p".into(), start + 10_000);
        drop(a);
        let mut b = Engine::new(
            Arc::clone(&s),
            "b".into(),
            0,
            start + 10_000,
            Some(&snap),
            None,
        )
        .expect("restore");
        b.run_until(start + 20_000, &[], &ledger);
        let report = ledger.report(&Expectation::new(s.source.clone(), b.job_watermark()));
        assert!(report.is_exactly_once(), "{report}");
    }

    #[test]
    fn an_idle_split_stops_holding_the_watermark_back_and_late_records_stay_late() {
        let mut s = (*settings(&json!({}))).clone();
        s.source.idle = vec![IdleWindow {
            split: 1,
            period_ms: 60_000,
            idle_ms: 20_000,
            phase_ms: 10_000,
        }];
        let s = Arc::new(s);
        let start = s.source.start_ms;
        let ledger = Ledger::new(SinkMode::AtLeastOnce);
        let mut e = Engine::new(Arc::clone(&s), "j".into(), 0, start, None, None).expect("engine");
        e.run_until(start + 11_000, &[], &ledger);
        let before = e.job_watermark();
        // Split 1 has been silent for 1 s: not idle yet, it holds the watermark.
        e.run_until(start + 11_500, &[], &ledger);
        assert!(e.job_watermark() <= start + 10_000);
        // After the idleness timeout the other splits drive the watermark.
        e.run_until(start + 25_000, &[], &ledger);
        assert!(e.job_watermark() > start + 24_000, "{}", e.job_watermark());
        assert!(e.job_watermark() > before);
        let wm = e.job_watermark();
        // When split 1 comes back its watermark is below the others: the output does not regress.
        e.run_until(start + 31_000, &[], &ledger);
        assert!(e.job_watermark() >= wm);
    }
}
