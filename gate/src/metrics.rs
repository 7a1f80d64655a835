//! `bluegreen_gate_*` Prometheus metrics, aggregated per color over a process's gates.
//!
//! Nothing here runs on the hot path: gates only store their own counters; the collector reads
//! them when Prometheus scrapes.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle};
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Gauge, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};

use crate::cell::{GateList, GateSnapshot, color_index};
use crate::error::Error;
use crate::shared::SharedState;

/// How far a state is in the protocol: within an epoch, later steps rank higher. Used to report
/// the least advanced gate of a color.
fn progress(state: &CoordinationState) -> (u64, u8, i64) {
    let rank = match (state.stage, state.toggle) {
        (Stage::Initializing, _) => 0,
        (Stage::Transitioning, Toggle::NotSet) => 1,
        (Stage::Transitioning, Toggle::Proposed(_)) => 2,
        (Stage::Transitioning, Toggle::Set(_)) | (Stage::Failing, _) => 3,
        (Stage::ClearToTeardown, _) => 4,
        (Stage::Running, _) => 5,
    };
    (state.epoch, rank, state.toggle.value().unwrap_or(i64::MIN))
}

/// Per-color aggregate of the live and retired gates of a [`SharedState`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColorAggregate {
    /// The color.
    pub color: Color,
    /// Live gates.
    pub gates: u64,
    /// Live gates that have not applied any state yet.
    pub gates_without_state: u64,
    /// Passed records, summed over live and ended gates.
    pub passed: u64,
    /// Records dropped because the other color owns them, summed.
    pub dropped: u64,
    /// HOLD decisions, summed.
    pub held: u64,
    /// Late records dropped (at or below the floor), summed.
    pub dropped_late: u64,
    /// The maximum passed event time over live and ended gates.
    pub max_passed_event_time_ms: Option<i64>,
    /// The least advanced state applied by a live gate (lowest epoch, then earliest step): what
    /// *every* gate of the color has at least reached, if none lacks a state.
    pub least_applied: Option<CoordinationState>,
}

/// Aggregates `snapshots` (live gates) and the retired totals per color.
fn aggregate(list: &GateList) -> [ColorAggregate; 2] {
    let retired = list.retired();
    let mut out = [Color::Blue, Color::Green].map(|color| {
        let r = retired[color_index(color)];
        ColorAggregate {
            color,
            gates: 0,
            gates_without_state: 0,
            passed: r.passed,
            dropped: r.dropped,
            held: r.held,
            dropped_late: r.dropped_late,
            max_passed_event_time_ms: r.max_passed,
            least_applied: None,
        }
    });
    for snapshot in list.snapshots() {
        let agg = &mut out[color_index(snapshot.color)];
        agg.gates += 1;
        agg.passed += snapshot.passed;
        agg.dropped += snapshot.dropped;
        agg.held += snapshot.held;
        agg.dropped_late += snapshot.dropped_late;
        agg.max_passed_event_time_ms = agg
            .max_passed_event_time_ms
            .max(snapshot.max_passed_event_time_ms);
        match snapshot.applied {
            None => agg.gates_without_state += 1,
            Some(state) => {
                if agg
                    .least_applied
                    .is_none_or(|least| progress(&state) < progress(&least))
                {
                    agg.least_applied = Some(state);
                }
            }
        }
    }
    out
}

impl SharedState {
    /// Per-color aggregates over the gates created from this state (live ones, plus the counters
    /// of ended ones).
    pub fn aggregates(&self) -> [ColorAggregate; 2] {
        aggregate(&self.gates)
    }

    /// Snapshots of every live gate created from this state.
    pub fn gate_snapshots(&self) -> Vec<GateSnapshot> {
        self.gates.snapshots()
    }

    /// Registers the `bluegreen_gate_*` metrics of this state's gates and of its feeder into
    /// `registry` (see `docs/gate.md` for the list). Register each state once per registry.
    pub fn register_metrics(self: &Arc<Self>, registry: &Registry) -> Result<(), Error> {
        registry.register(Box::new(StateCollector::new(Arc::downgrade(self))?))?;
        Ok(())
    }
}

/// Collects the metrics of one [`SharedState`] at scrape time.
struct StateCollector {
    shared: Weak<SharedState>,
    passed: IntCounterVec,
    dropped: IntCounterVec,
    held: IntCounterVec,
    dropped_late: IntCounterVec,
    max_passed: IntGaugeVec,
    applied_epoch: IntGaugeVec,
    applied_watermark_stage: IntGaugeVec,
    applied_watermark: IntGaugeVec,
    gates: IntGaugeVec,
    gates_without_state: IntGaugeVec,
    updates_applied: IntCounter,
    updates_rejected: IntCounterVec,
    deletions: IntCounter,
    watch_restarts: IntCounter,
    watch_errors: IntCounter,
    staleness: Gauge,
    stale: IntGauge,
    lock: Mutex<()>,
}

fn counter_vec(name: &str, help: &str, label: &str) -> Result<IntCounterVec, Error> {
    Ok(IntCounterVec::new(Opts::new(name, help), &[label])?)
}

fn gauge_vec(name: &str, help: &str) -> Result<IntGaugeVec, Error> {
    Ok(IntGaugeVec::new(Opts::new(name, help), &["color"])?)
}

/// Sets a counter to an absolute total (counters only move forward here: totals never decrease).
fn set_counter(counter: &IntCounter, total: u64) {
    let current = counter.get();
    if total >= current {
        counter.inc_by(total - current);
    } else {
        counter.reset();
        counter.inc_by(total);
    }
}

fn saturating_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl StateCollector {
    fn new(shared: Weak<SharedState>) -> Result<Self, Error> {
        Ok(Self {
            shared,
            passed: counter_vec(
                "bluegreen_gate_records_passed_total",
                "Records the gates passed (emitted), summed over the color's gates.",
                "color",
            )?,
            dropped: counter_vec(
                "bluegreen_gate_records_dropped_total",
                "Records the gates dropped because the other color owns them, summed.",
                "color",
            )?,
            held: counter_vec(
                "bluegreen_gate_records_held_total",
                "HOLD decisions (the gate could not decide yet), summed.",
                "color",
            )?,
            dropped_late: counter_vec(
                "bluegreen_gate_records_dropped_late_total",
                "Late records the gates dropped (event time at or below the floor), summed.",
                "color",
            )?,
            max_passed: gauge_vec(
                "bluegreen_gate_max_passed_event_time_ms",
                "Maximum event time (epoch ms) passed by any gate of the color.",
            )?,
            applied_epoch: gauge_vec(
                "bluegreen_gate_applied_epoch",
                "Epoch of the least advanced state applied by a gate of the color (the minimum).",
            )?,
            applied_watermark_stage: gauge_vec(
                "bluegreen_gate_applied_watermark_stage",
                "Watermark stage of that least advanced state: 0 NOT_SET, 1 WAITING_FOR_WATERMARK, 2 SET.",
            )?,
            applied_watermark: gauge_vec(
                "bluegreen_gate_applied_watermark_ms",
                "W of that least advanced state, when proposed or set.",
            )?,
            gates: gauge_vec("bluegreen_gate_gates", "Live gates of the color.")?,
            gates_without_state: gauge_vec(
                "bluegreen_gate_gates_without_state",
                "Live gates that have applied no state yet (they hold everything).",
            )?,
            updates_applied: IntCounter::new(
                "bluegreen_gate_source_updates_applied_total",
                "Coordination states accepted that changed the state.",
            )?,
            updates_rejected: counter_vec(
                "bluegreen_gate_source_updates_rejected_total",
                "Coordination states refused (the last good state is kept), by error kind.",
                "kind",
            )?,
            deletions: IntCounter::new(
                "bluegreen_gate_source_deletions_total",
                "Times the coordination ConfigMap was seen deleted or absent (the last good state is kept).",
            )?,
            watch_restarts: IntCounter::new(
                "bluegreen_gate_source_watch_restarts_total",
                "Re-lists of the ConfigMap watch after the first list (410 Gone, failed resume).",
            )?,
            watch_errors: IntCounter::new(
                "bluegreen_gate_source_watch_errors_total",
                "Errors reported by the ConfigMap watch (it recovers with backoff).",
            )?,
            staleness: Gauge::new(
                "bluegreen_gate_source_staleness_seconds",
                "Seconds since the state was last confirmed against the ConfigMap.",
            )?,
            stale: IntGauge::new(
                "bluegreen_gate_source_stale",
                "1 while the view is older than the bound (gates hold during a transition).",
            )?,
            lock: Mutex::new(()),
        })
    }

    fn update(&self, shared: &SharedState) {
        for agg in aggregate(&shared.gates) {
            let color = [agg.color.as_str()];
            set_counter(&self.passed.with_label_values(&color), agg.passed);
            set_counter(&self.dropped.with_label_values(&color), agg.dropped);
            set_counter(&self.held.with_label_values(&color), agg.held);
            set_counter(
                &self.dropped_late.with_label_values(&color),
                agg.dropped_late,
            );
            self.gates
                .with_label_values(&color)
                .set(saturating_i64(agg.gates));
            self.gates_without_state
                .with_label_values(&color)
                .set(saturating_i64(agg.gates_without_state));
            match agg.max_passed_event_time_ms {
                Some(max) => self.max_passed.with_label_values(&color).set(max),
                None => {
                    let _ = self.max_passed.remove_label_values(&color);
                }
            }
            if let Some(least) = agg.least_applied {
                self.applied_epoch
                    .with_label_values(&color)
                    .set(saturating_i64(least.epoch));
                let watermark_stage = match least.toggle {
                    Toggle::NotSet => 0,
                    Toggle::Proposed(_) => 1,
                    Toggle::Set(_) => 2,
                };
                self.applied_watermark_stage
                    .with_label_values(&color)
                    .set(watermark_stage);
                match least.toggle.value() {
                    Some(w) => self.applied_watermark.with_label_values(&color).set(w),
                    None => {
                        let _ = self.applied_watermark.remove_label_values(&color);
                    }
                }
            } else {
                let _ = self.applied_epoch.remove_label_values(&color);
                let _ = self.applied_watermark_stage.remove_label_values(&color);
                let _ = self.applied_watermark.remove_label_values(&color);
            }
        }
        let stats = shared.stats();
        set_counter(&self.updates_applied, stats.updates_applied);
        for (kind, count) in &stats.updates_rejected {
            set_counter(&self.updates_rejected.with_label_values(&[*kind]), *count);
        }
        set_counter(&self.deletions, stats.deletions);
        set_counter(&self.watch_restarts, stats.watch_restarts);
        set_counter(&self.watch_errors, stats.watch_errors);
        self.staleness.set(shared.staleness().as_secs_f64());
        self.stale.set(i64::from(shared.is_stale()));
    }

    fn collectors(&self) -> [&dyn Collector; 17] {
        [
            &self.passed,
            &self.dropped,
            &self.held,
            &self.dropped_late,
            &self.max_passed,
            &self.applied_epoch,
            &self.applied_watermark_stage,
            &self.applied_watermark,
            &self.gates,
            &self.gates_without_state,
            &self.updates_applied,
            &self.updates_rejected,
            &self.deletions,
            &self.watch_restarts,
            &self.watch_errors,
            &self.staleness,
            &self.stale,
        ]
    }
}

impl Collector for StateCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.collectors()
            .into_iter()
            .flat_map(Collector::desc)
            .collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let _serialised = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(shared) = self.shared.upgrade() {
            self.update(&shared);
        }
        self.collectors()
            .into_iter()
            .flat_map(Collector::collect)
            .collect()
    }
}
