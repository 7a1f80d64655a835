//! What a gate publishes for other threads ([`GateCell`], read as a [`GateSnapshot`]) and the
//! list of a [`SharedState`](crate::SharedState)'s gates ([`GateList`]): the leaf that the gate,
//! the shared state and the metrics all read.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use bluegreen_protocol::{AppliedState, Color, CoordinationState, GateReport, WatermarkStage};

/// What a gate has applied, as reported to the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct AppliedView {
    pub state: Option<CoordinationState>,
    pub stale: bool,
}

/// The part of a gate other threads read (metrics, snapshots). Written only by the gate's own
/// thread, with plain relaxed stores (one writer, so no read-modify-write is needed), when it
/// [flushes](crate::Gate::flush): whenever one of its counts reaches a multiple of [`FLUSH_EVERY`](crate::FLUSH_EVERY), on
/// every state change, on
/// [`Gate::refresh`](crate::Gate::refresh) and after each batch. On its own cache lines so that gates on different
/// threads never share one.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct GateCell {
    pub color: Color,
    pub passed: AtomicU64,
    pub dropped: AtomicU64,
    pub held: AtomicU64,
    pub dropped_late: AtomicU64,
    /// Meaningful when `passed > 0` or `restored` is set; `i64::MIN` otherwise.
    pub max_passed: AtomicI64,
    pub restored: AtomicU64,
    /// Updated (under the lock: release) only when the gate applies a new generation, right
    /// after a flush: a reader that sees a state also sees the maximum passed under the previous
    /// one.
    pub applied: Mutex<AppliedView>,
}

impl GateCell {
    pub fn new(color: Color) -> Self {
        Self {
            color,
            passed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            held: AtomicU64::new(0),
            dropped_late: AtomicU64::new(0),
            max_passed: AtomicI64::new(i64::MIN),
            restored: AtomicU64::new(0),
            applied: Mutex::new(AppliedView::default()),
        }
    }

    pub fn snapshot(&self) -> GateSnapshot {
        // Applied state first (acquire via the lock): every max_passed store made before the gate
        // applied that state is visible below.
        let applied = *self.applied.lock().unwrap_or_else(PoisonError::into_inner);
        let passed = self.passed.load(Ordering::Relaxed);
        let max = self.max_passed.load(Ordering::Relaxed);
        let known = passed > 0 || self.restored.load(Ordering::Relaxed) != 0;
        GateSnapshot {
            color: self.color,
            passed,
            dropped: self.dropped.load(Ordering::Relaxed),
            held: self.held.load(Ordering::Relaxed),
            dropped_late: self.dropped_late.load(Ordering::Relaxed),
            max_passed_event_time_ms: known.then_some(max),
            applied: applied.state,
            applied_while_stale: applied.stale,
        }
    }
}

/// A gate's progress, as the controller needs it (forwarded to Flink's metric system by the JVM
/// bindings, and aggregated per color into `bluegreen_gate_*` Prometheus metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateSnapshot {
    /// The gate's color.
    pub color: Color,
    /// Records passed (emitted).
    pub passed: u64,
    /// Records dropped because the other color owns them (late records not included).
    pub dropped: u64,
    /// HOLD decisions returned; a held record that is decided later by
    /// [`Gate::decide_or_wait`](crate::Gate::decide_or_wait) counts once here and once as passed or dropped.
    pub held: u64,
    /// Late records dropped: event time at or below the floor (both colors drop them).
    pub dropped_late: u64,
    /// The maximum event time passed (including one restored from a checkpoint with
    /// [`Gate::restore_max_passed`](crate::Gate::restore_max_passed)); `None` before the first.
    pub max_passed_event_time_ms: Option<i64>,
    /// The state the gate decides by (applied on its own thread); `None` before the first.
    pub applied: Option<CoordinationState>,
    /// Whether the gate applied that state flagged stale (it then holds during a transition).
    pub applied_while_stale: bool,
}

impl GateSnapshot {
    /// The applied epoch.
    pub fn epoch(&self) -> Option<u64> {
        self.applied.map(|s| s.epoch)
    }

    /// The applied watermark stage.
    pub fn watermark_stage(&self) -> Option<WatermarkStage> {
        self.applied.map(|s| s.toggle.stage())
    }

    /// The applied watermark toggle value W, if proposed or set.
    pub fn watermark_ms(&self) -> Option<i64> {
        self.applied.and_then(|s| s.toggle.value())
    }

    /// The gate's `bluegreenGateAppliedState` line: the applied state and the maximum passed
    /// event time from this snapshot (which reads the state first, so the maximum covers every
    /// record passed under an older state), with the gate operator's current input `watermark`
    /// and whether all its inputs are `idle`, which only the operator knows, and the gate's color.
    pub fn report(&self, watermark: Option<i64>, idle: bool) -> GateReport {
        GateReport {
            applied: self.applied.as_ref().map(AppliedState::from),
            max_passed: self.max_passed_event_time_ms,
            watermark,
            idle,
            color: Some(self.color),
            problem: None,
        }
    }
}

/// Counters of gates that no longer exist, per color (so per-color counters never decrease).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Retired {
    pub passed: u64,
    pub dropped: u64,
    pub held: u64,
    pub dropped_late: u64,
    pub max_passed: Option<i64>,
}

/// The gates created from one [`SharedState`].
#[derive(Debug, Default)]
pub(crate) struct GateList {
    live: Mutex<Vec<Weak<GateCell>>>,
    retired: Mutex<[Retired; 2]>,
}

pub(crate) fn color_index(color: Color) -> usize {
    match color {
        Color::Blue => 0,
        Color::Green => 1,
    }
}

impl GateList {
    pub fn register(&self, cell: &Arc<GateCell>) {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|weak| weak.strong_count() > 0);
        live.push(Arc::downgrade(cell));
    }

    pub fn retire(&self, cell: &Arc<GateCell>) {
        let snapshot = cell.snapshot();
        let mut retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
        let totals = &mut retired[color_index(cell.color)];
        totals.passed += snapshot.passed;
        totals.dropped += snapshot.dropped;
        totals.held += snapshot.held;
        totals.dropped_late += snapshot.dropped_late;
        totals.max_passed = totals.max_passed.max(snapshot.max_passed_event_time_ms);
        drop(retired);
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|weak| {
            weak.strong_count() > 0 && !std::ptr::eq(weak.as_ptr(), &raw const **cell)
        });
    }

    /// The counters of the gates that ended, per color (blue, green: see [`color_index`]).
    pub fn retired(&self) -> [Retired; 2] {
        *self.retired.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Snapshots of every live gate.
    pub fn snapshots(&self) -> Vec<GateSnapshot> {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.iter()
            .filter_map(Weak::upgrade)
            .map(|cell| cell.snapshot())
            .collect()
    }
}
