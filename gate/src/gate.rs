//! The per-subtask gate: one comparison per record against a cached [`Rule`].

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use bluegreen_protocol::{Color, Decision, Rule};

use crate::cell::{AppliedView, GateCell, GateSnapshot};
use crate::error::Error;
use crate::shared::{Published, SharedState};

/// A read-only handle on a gate's progress, for another thread (a metric reporter) while the gate
/// itself stays with its subtask.
#[derive(Debug, Clone)]
pub struct GateHandle(Arc<GateCell>);

impl GateHandle {
    /// The gate's progress now.
    pub fn snapshot(&self) -> GateSnapshot {
        self.0.snapshot()
    }
}

/// A gate publishes its counters to other threads whenever its count of passed, dropped or held
/// records reaches a multiple of this (so they lag by fewer than `3 * FLUSH_EVERY` records), and
/// at once on state changes, [`Gate::refresh`] and after batches.
pub const FLUSH_EVERY: u64 = 1024;

/// The gate of one subtask: decides every record by its event time.
///
/// Create one per subtask with [`Gate::new`] from a process-wide [`SharedState`]. Deciding takes
/// `&mut self`: a gate has exactly one writer (its subtask's thread), which is what makes its
/// counters plain fields. The hot path ([`decide`](Self::decide)) takes no lock, allocates
/// nothing and makes no system call: one acquire load of the shared generation, one comparison,
/// and the gate's own counters, which it publishes to other threads (relaxed stores) every
/// [`FLUSH_EVERY`] records and whenever it applies a new state. Reported progress is therefore
/// exact where it matters: a [`GateSnapshot`] that shows a state also shows the maximum event
/// time passed before it; counts seen from other threads lag by fewer than `3 * FLUSH_EVERY`
/// records (or until the next [`refresh`](Self::refresh)).
///
/// Reported progress (see [`GateSnapshot::applied`]) changes only on the gate's thread, when it
/// decides a record or calls [`refresh`](Self::refresh); an idle subtask should call `refresh` on
/// a timer so that the controller sees it apply new states.
///
/// A gate is aligned to 128 bytes (two cache lines, the unit of the adjacent-line prefetcher):
/// its counters change on every record, so two gates decided on two threads must never share a
/// line, wherever they are allocated (side by side in a `Vec`, say).
#[derive(Debug)]
#[repr(align(128))]
pub struct Gate {
    generation: u64,
    rule: Rule,
    /// Records per [`Decision`], indexed by its discriminant, and late drops at index 3 (one
    /// increment per record, see [`Gate::record`]).
    counts: [u64; 4],
    max_passed: i64,
    restored: bool,
    cell: Arc<GateCell>,
    shared: Arc<SharedState>,
    color: Color,
}

impl Gate {
    /// A gate of color `color` reading `shared`. It holds every record until `shared` has a
    /// valid state.
    pub fn new(color: Color, shared: Arc<SharedState>) -> Self {
        let cell = Arc::new(GateCell::new(color));
        shared.gates.register(&cell);
        let mut gate = Self {
            generation: u64::MAX,
            rule: Rule::HOLD,
            counts: [0; 4],
            max_passed: i64::MIN,
            restored: false,
            cell,
            shared,
            color,
        };
        gate.refresh();
        gate
    }

    /// The gate's color.
    pub fn color(&self) -> Color {
        self.color
    }

    /// The shared state the gate reads.
    pub fn shared(&self) -> &Arc<SharedState> {
        &self.shared
    }

    /// Restores the maximum passed event time from the subtask's checkpoint (it must survive
    /// restarts, see `docs/protocol.md`, "Confirming W"). Never lowers it.
    pub fn restore_max_passed(&mut self, event_time_ms: i64) {
        self.max_passed = self.max_passed.max(event_time_ms);
        self.restored = true;
        self.flush();
    }

    /// The decision for a record with event time `event_time_ms`, counted.
    #[inline]
    pub fn decide(&mut self, event_time_ms: i64) -> Decision {
        self.sync();
        let decision = self.rule.decide(event_time_ms);
        if self
            .record(decision, event_time_ms)
            .is_multiple_of(FLUSH_EVERY)
        {
            self.flush();
        }
        decision
    }

    /// Decides `event_times[i]` into `decisions[i]` for the first `min(len)` records and returns
    /// how many it decided. The whole batch is decided under one state (checked once), and the
    /// counters are published once: the form for bindings that cross an FFI boundary.
    pub fn decide_batch(&mut self, event_times: &[i64], decisions: &mut [Decision]) -> usize {
        self.sync();
        let rule = self.rule;
        let n = event_times.len().min(decisions.len());
        for (&t, out) in event_times[..n].iter().zip(&mut decisions[..n]) {
            let decision = rule.decide(t);
            *out = decision;
            let _ = self.record(decision, t);
        }
        self.flush();
        n
    }

    /// Like [`decide`](Self::decide), but on HOLD blocks the calling thread until a state arrives
    /// under which the record is passed or dropped, for at most `timeout`. On timeout it returns
    /// [`Error::HoldTimeout`]: fail the task (Flink restarts it from its checkpoint); never guess.
    /// Do not call it on an async runtime's worker thread; use
    /// [`decide_or_wait_async`](Self::decide_or_wait_async) there.
    pub fn decide_or_wait(
        &mut self,
        event_time_ms: i64,
        timeout: Duration,
    ) -> Result<Decision, Error> {
        let decision = self.decide(event_time_ms);
        if decision != Decision::Hold {
            return Ok(decision);
        }
        let start = Instant::now();
        let deadline = start + timeout;
        loop {
            if !self.shared.changed_blocking(self.generation, deadline) {
                return Err(self.hold_timeout(event_time_ms, start.elapsed()));
            }
            if let Some(decision) = self.retry_held(event_time_ms) {
                return Ok(decision);
            }
        }
    }

    /// The async form of [`decide_or_wait`](Self::decide_or_wait) (needs a Tokio runtime with
    /// timers for the timeout).
    pub async fn decide_or_wait_async(
        &mut self,
        event_time_ms: i64,
        timeout: Duration,
    ) -> Result<Decision, Error> {
        let decision = self.decide(event_time_ms);
        if decision != Decision::Hold {
            return Ok(decision);
        }
        let start = tokio::time::Instant::now();
        let deadline = start + timeout;
        loop {
            let shared = Arc::clone(&self.shared);
            if tokio::time::timeout_at(deadline, shared.changed(self.generation))
                .await
                .is_err()
            {
                return Err(self.hold_timeout(event_time_ms, start.elapsed()));
            }
            if let Some(decision) = self.retry_held(event_time_ms) {
                return Ok(decision);
            }
        }
    }

    /// Applies the newest state now, without deciding a record; returns whether it changed the
    /// gate's rule or reported state. Call it from a timer on idle subtasks.
    /// It also publishes the gate's counters to other threads.
    pub fn refresh(&mut self) -> bool {
        if self.shared.generation() == self.generation {
            self.flush();
            return false;
        }
        self.apply(&self.shared.published());
        true
    }

    /// Publishes the gate's counters and maximum passed event time to other threads (handles,
    /// metrics) now.
    pub fn flush(&mut self) {
        let [passed, dropped, held, dropped_late] = self.counts;
        self.cell.passed.store(passed, Ordering::Relaxed);
        self.cell.dropped.store(dropped, Ordering::Relaxed);
        self.cell.held.store(held, Ordering::Relaxed);
        self.cell
            .dropped_late
            .store(dropped_late, Ordering::Relaxed);
        self.cell
            .max_passed
            .store(self.max_passed, Ordering::Relaxed);
        self.cell
            .restored
            .store(u64::from(self.restored), Ordering::Relaxed);
    }

    /// The rule the gate decides by (as of its last refresh).
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// The gate's progress now (exact: read on the gate's own thread).
    pub fn snapshot(&self) -> GateSnapshot {
        let [passed, dropped, held, dropped_late] = self.counts;
        let applied = *self
            .cell
            .applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        GateSnapshot {
            color: self.color,
            passed,
            dropped,
            held,
            dropped_late,
            max_passed_event_time_ms: (passed > 0 || self.restored).then_some(self.max_passed),
            applied: applied.state,
            applied_while_stale: applied.stale,
        }
    }

    /// A handle that reads this gate's progress from another thread.
    pub fn handle(&self) -> GateHandle {
        GateHandle(Arc::clone(&self.cell))
    }

    /// Re-decides a held record after a state change, counting only a final decision.
    fn retry_held(&mut self, event_time_ms: i64) -> Option<Decision> {
        self.sync();
        let decision = self.rule.decide(event_time_ms);
        (decision != Decision::Hold).then(|| {
            let _ = self.record(decision, event_time_ms);
            decision
        })
    }

    fn hold_timeout(&self, event_time_ms: i64, waited: Duration) -> Error {
        let published = self.shared.published();
        let state = match published.state {
            None => "no valid coordination state yet".to_owned(),
            Some(s) if published.stale => format!("{s} (stale)"),
            Some(s) => s.to_string(),
        };
        Error::HoldTimeout {
            color: self.color,
            event_time_ms,
            waited,
            state,
        }
    }

    /// Revalidates the cached rule: one relaxed load on the hot path (an acquire load would make
    /// the compiler reload the gate's own fields after it, for every record); the acquire fence
    /// is on the cold path, once per state change.
    #[inline]
    fn sync(&mut self) {
        if self.shared.generation_relaxed() != self.generation {
            self.refresh_cold();
        }
    }

    #[cold]
    #[inline(never)]
    fn refresh_cold(&mut self) {
        std::sync::atomic::fence(Ordering::Acquire);
        self.apply(&self.shared.published());
    }

    fn apply(&mut self, published: &Published) {
        // Everything passed under the previous rule becomes visible before the new state does.
        self.flush();
        self.rule = published.rule(self.color);
        // The published value's own generation, not the one we loaded: if it is older, the next
        // record sees the mismatch again and reloads.
        self.generation = published.generation;
        *self
            .cell
            .applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = AppliedView {
            state: published.state,
            stale: published.stale,
        };
    }

    /// Counts one decision and returns the new count of its kind. A late record (a DROP at or
    /// below the floor) counts at index 3 instead of 1: `Drop as usize + 2`, branch-free.
    #[inline]
    fn record(&mut self, decision: Decision, event_time_ms: i64) -> u64 {
        let late = usize::from(self.rule.is_late(event_time_ms));
        let count = &mut self.counts[decision as usize + 2 * late];
        *count += 1;
        let count = *count;
        // Branch-free: decisions on both sides of W interleave unpredictably during a handover.
        let passed = if decision == Decision::Pass {
            event_time_ms
        } else {
            i64::MIN
        };
        self.max_passed = self.max_passed.max(passed);
        count
    }
}

impl Drop for Gate {
    /// Folds the gate's counters into its color's totals, so the per-color counters never go
    /// down when a subtask ends.
    fn drop(&mut self) {
        self.flush();
        self.shared.gates.retire(&self.cell);
    }
}
