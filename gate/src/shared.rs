//! The coordination state of one deployment, shared by every gate of a process.
//!
//! One [`SharedState`] per process (in an [`Arc`]) holds the last good [`CoordinationState`]; a
//! [`ConfigMapSource`](crate::ConfigMapSource) (or any other feeder, through
//! [`SharedState::offer`]) updates it, and any number of [`Gate`](crate::Gate)s read it. Writers
//! serialise on a mutex (rare: one update per controller step); readers never lock: each gate
//! keeps its own precomputed [`Rule`] and revalidates it with one acquire load of
//! [`SharedState::generation`] per record (or per batch).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bluegreen_protocol::{Color, CoordinationState, ProtocolError, Rule, check_transition};

use crate::cell::GateList;

/// How a [`SharedState`] treats its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateOptions {
    /// During a transition (stage `TRANSITIONING`, `CLEAR_TO_TEARDOWN` or `FAILING`) gates hold
    /// every record while the view is older than this (see [`SharedState::staleness`]). In steady
    /// state (`INITIALIZING`, `RUNNING`) staleness never changes a decision: only the active color
    /// passes and nothing it can miss makes that wrong before the next transition, which the gate
    /// sees as an update. `None`: never hold because of staleness.
    ///
    /// Enforced by [`SharedState::check_staleness`], which a [`ConfigMapSource`](crate::ConfigMapSource)
    /// calls on a timer; other feeders call it themselves (or never, to disable it).
    pub max_staleness: Option<Duration>,
}

impl Default for StateOptions {
    /// `max_staleness`: 30 s.
    fn default() -> Self {
        Self {
            max_staleness: Some(Duration::from_secs(30)),
        }
    }
}

/// What an accepted [`SharedState::offer`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Applied {
    /// The first valid state: gates stop holding everything.
    First,
    /// A state reachable from the previous one by legal steps replaced it.
    Advanced,
    /// The same state again (a replay, a re-list, a probe): only the freshness changed.
    Unchanged,
}

/// The immutable value gates read when their generation is out of date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Published {
    /// The generation this value was published under.
    pub generation: u64,
    /// The last good state, if any.
    pub state: Option<CoordinationState>,
    /// Whether the view is older than [`StateOptions::max_staleness`].
    pub stale: bool,
}

impl Published {
    /// The rule of a gate of color `color` under this value: hold everything without a state, and
    /// during a transition while stale; otherwise the protocol's rule.
    pub fn rule(&self, color: Color) -> Rule {
        match self.state {
            None => Rule::HOLD,
            Some(state) if self.stale && state.incoming().is_some() => Rule::HOLD,
            Some(state) => Rule::for_state(&state, color),
        }
    }
}

/// Keeps a value on its own cache line so that per-record reads of the generation never share a
/// line with data written elsewhere.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CachePadded<T>(pub T);

#[derive(Debug)]
struct Writer {
    state: Option<CoordinationState>,
    stale: bool,
    generation: u64,
}

/// Counters of a state's feeders; read them with [`SharedState::stats`].
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub applied: AtomicU64,
    pub unchanged: AtomicU64,
    pub rejected: Mutex<BTreeMap<&'static str, u64>>,
    pub deletions: AtomicU64,
    pub watch_restarts: AtomicU64,
    pub watch_errors: AtomicU64,
    pub superseded: AtomicU64,
    pub probes: AtomicU64,
}

/// A copy of a [`SharedState`]'s feeder counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// Offers that changed the state (`Applied::First` or `Applied::Advanced`).
    pub updates_applied: u64,
    /// Offers accepted without a change (`Applied::Unchanged`).
    pub updates_unchanged: u64,
    /// Refused offers by [`ProtocolError::kind`] (parse errors and illegal transitions).
    pub updates_rejected: BTreeMap<&'static str, u64>,
    /// Times the ConfigMap was seen deleted or absent (the last good state is kept).
    pub deletions: u64,
    /// Re-lists of the watch after the first list (after a 410 or a failed resume).
    pub watch_restarts: u64,
    /// Errors the watch reported (it recovers by itself, with backoff).
    pub watch_errors: u64,
    /// Watch events skipped because a newer `resourceVersion` had already been read (a probe
    /// overtook the watch).
    pub superseded: u64,
    /// Freshness probes (GETs) sent because the watch had been quiet.
    pub probes: u64,
}

impl SourceStats {
    /// All refused offers, whatever their kind.
    pub fn rejected_total(&self) -> u64 {
        self.updates_rejected.values().sum()
    }
}

/// The last good coordination state of one deployment, shared by a process's gates.
///
/// Create one per process with [`SharedState::new`], feed it from one
/// [`ConfigMapSource`](crate::ConfigMapSource) (or [`offer`](Self::offer)), and create gates from
/// it with [`Gate::new`](crate::Gate::new).
#[derive(Debug)]
pub struct SharedState {
    generation: CachePadded<AtomicU64>,
    published: ArcSwap<Published>,
    writer: Mutex<Writer>,
    changed: Condvar,
    notify: tokio::sync::watch::Sender<u64>,
    /// The raw data of the last offer accepted through [`SharedState::offer_data`], numbered.
    accepted_data: tokio::sync::watch::Sender<AcceptedSlot>,
    options: StateOptions,
    clock_base: Instant,
    /// Nanoseconds after `clock_base` of the last confirmation; `u64::MAX` before the first.
    confirmed_at: AtomicU64,
    pub(crate) stats: Stats,
    pub(crate) gates: GateList,
}

const NEVER: u64 = u64::MAX;

/// The raw data of the last accepted offer with its number (see [`SharedState::accepted_data`]).
type AcceptedSlot = Option<(u64, Arc<BTreeMap<String, String>>)>;

impl SharedState {
    /// A state holder with no state yet (every gate holds every record until the first valid
    /// state arrives).
    pub fn new(options: StateOptions) -> Arc<Self> {
        Arc::new(Self {
            generation: CachePadded(AtomicU64::new(0)),
            published: ArcSwap::from_pointee(Published {
                generation: 0,
                state: None,
                stale: false,
            }),
            writer: Mutex::new(Writer {
                state: None,
                stale: false,
                generation: 0,
            }),
            changed: Condvar::new(),
            notify: tokio::sync::watch::Sender::new(0),
            accepted_data: tokio::sync::watch::Sender::new(None),
            options,
            clock_base: Instant::now(),
            confirmed_at: AtomicU64::new(NEVER),
            stats: Stats::default(),
            gates: GateList::default(),
        })
    }

    /// The options this state was created with.
    pub fn options(&self) -> StateOptions {
        self.options
    }

    /// Offers a state read from the coordination ConfigMap (or fed by a binding or a test).
    ///
    /// The first state is accepted if it is [valid](CoordinationState::validate); later ones only
    /// if [`check_transition`] accepts them from the current state. A refused state leaves the
    /// current one in place, is counted by [`ProtocolError::kind`] and logged (`warn`, with key
    /// and reason). An accepted offer also confirms freshness (see [`staleness`](Self::staleness)).
    pub fn offer(&self, next: CoordinationState) -> Result<Applied, ProtocolError> {
        self.offer_with_data(next, None)
    }

    /// [`offer`](Self::offer), keeping `data` as the accepted raw data if `next` is accepted
    /// (under the writer lock, so the raw data always belongs to the current state).
    fn offer_with_data(
        &self,
        next: CoordinationState,
        data: Option<&BTreeMap<String, String>>,
    ) -> Result<Applied, ProtocolError> {
        let mut writer = self.lock_writer();
        let verdict = match writer.state {
            None => next.validate().map(|()| Applied::First),
            Some(prev) => check_transition(&prev, &next).map(|()| {
                if prev == next {
                    Applied::Unchanged
                } else {
                    Applied::Advanced
                }
            }),
        };
        match verdict {
            Ok(applied) => {
                if let Some(data) = data {
                    self.keep_accepted_data(data);
                }
                self.touch_confirmed();
                let was_stale = writer.stale;
                writer.stale = false;
                if applied == Applied::Unchanged {
                    self.stats.unchanged.fetch_add(1, Ordering::Relaxed);
                } else {
                    self.stats.applied.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(state = %next, "coordination state applied");
                }
                if applied != Applied::Unchanged || was_stale {
                    writer.state = Some(next);
                    self.publish(&mut writer);
                }
                Ok(applied)
            }
            Err(error) => {
                self.reject(&error);
                Err(error)
            }
        }
    }

    /// Parses ConfigMap data with [`CoordinationState::from_data`] and [offers](Self::offer) the
    /// result; a parse error is counted and logged like a refused transition.
    ///
    /// The data of every accepted offer is kept verbatim (see
    /// [`accepted_data`](Self::accepted_data)) for bindings that hand it on to another gate.
    pub fn offer_data(&self, data: &BTreeMap<String, String>) -> Result<Applied, ProtocolError> {
        match CoordinationState::from_data(data) {
            Ok(state) => self.offer_with_data(state, Some(data)),
            Err(error) => {
                self.reject(&error);
                Err(error)
            }
        }
    }

    fn keep_accepted_data(&self, data: &BTreeMap<String, String>) {
        self.accepted_data.send_if_modified(|slot| {
            if slot.as_ref().is_some_and(|(_, last)| **last == *data) {
                return false;
            }
            let number = slot.as_ref().map_or(1, |(number, _)| number + 1);
            *slot = Some((number, Arc::new(data.clone())));
            true
        });
    }

    fn reject(&self, error: &ProtocolError) {
        *self
            .stats
            .rejected
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(error.kind())
            .or_default() += 1;
        tracing::warn!(
            key = error.key(),
            kind = error.kind(),
            reason = %error,
            "coordination state refused; keeping the last good state"
        );
    }

    /// The raw ConfigMap data of the last offer accepted through [`offer_data`](Self::offer_data)
    /// (`None` before the first; states fed with [`offer`](Self::offer) have no raw data), with a
    /// number that grows by one whenever that data changes (unknown keys included). Refused data
    /// never shows here. The receiver is notified of every change, so bindings (the sidecar, the
    /// JNI shim) can serve the last accepted data verbatim to gates that re-parse it.
    pub fn accepted_data(&self) -> tokio::sync::watch::Receiver<AcceptedSlot> {
        self.accepted_data.subscribe()
    }

    /// Records that the current view is known to match the ConfigMap now (a feeder re-read it and
    /// found nothing newer). Clears the stale flag.
    pub fn mark_confirmed(&self) {
        self.touch_confirmed();
        let mut writer = self.lock_writer();
        if writer.stale {
            writer.stale = false;
            self.publish(&mut writer);
        }
    }

    /// Time since the view was last confirmed (an accepted offer or [`mark_confirmed`]); since
    /// creation if it never was.
    ///
    /// [`mark_confirmed`]: Self::mark_confirmed
    pub fn staleness(&self) -> Duration {
        let now = self.clock_base.elapsed();
        match self.confirmed_at.load(Ordering::Relaxed) {
            NEVER => now,
            at => now.saturating_sub(Duration::from_nanos(at)),
        }
    }

    /// Sets the stale flag when [`staleness`](Self::staleness) exceeds
    /// [`StateOptions::max_staleness`] and returns whether the view is stale. While stale, gates
    /// hold every record during a transition; the next accepted offer or confirmation clears it.
    pub fn check_staleness(&self) -> bool {
        let Some(bound) = self.options.max_staleness else {
            return false;
        };
        if self.staleness() <= bound {
            return self.is_stale();
        }
        let mut writer = self.lock_writer();
        // Re-check under the lock: a confirmation may have raced with us.
        if !writer.stale && self.staleness() > bound {
            writer.stale = true;
            tracing::warn!(
                staleness = ?self.staleness(),
                bound = ?bound,
                state = ?writer.state.map(|s| s.to_string()),
                "coordination state is stale: gates hold during a transition until it is confirmed"
            );
            self.publish(&mut writer);
        }
        writer.stale
    }

    /// Whether the view is currently flagged stale.
    pub fn is_stale(&self) -> bool {
        self.published.load().stale
    }

    /// The last good state, if any.
    pub fn current(&self) -> Option<CoordinationState> {
        self.published.load().state
    }

    /// A counter that changes whenever the state or the stale flag changes (never decreases).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.0.load(Ordering::Acquire)
    }

    /// A copy of the feeder counters.
    pub fn stats(&self) -> SourceStats {
        SourceStats {
            updates_applied: self.stats.applied.load(Ordering::Relaxed),
            updates_unchanged: self.stats.unchanged.load(Ordering::Relaxed),
            updates_rejected: self
                .stats
                .rejected
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            deletions: self.stats.deletions.load(Ordering::Relaxed),
            watch_restarts: self.stats.watch_restarts.load(Ordering::Relaxed),
            watch_errors: self.stats.watch_errors.load(Ordering::Relaxed),
            superseded: self.stats.superseded.load(Ordering::Relaxed),
            probes: self.stats.probes.load(Ordering::Relaxed),
        }
    }

    /// Waits until the generation differs from `seen` (returns at once if it already does).
    pub async fn changed(&self, seen: u64) {
        let mut receiver = self.notify.subscribe();
        // The sender lives as long as `self`, so this cannot fail while we borrow `self`.
        let _ = receiver.wait_for(|generation| *generation != seen).await;
    }

    /// Blocks until the generation differs from `seen` or `deadline` passes; returns whether it
    /// changed.
    pub fn changed_blocking(&self, seen: u64, deadline: Instant) -> bool {
        let mut writer = self.lock_writer();
        loop {
            if writer.generation != seen {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            writer = self
                .changed
                .wait_timeout(writer, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The generation without ordering, for the gates' hot path: a gate that sees a new value
    /// issues an acquire fence before it reads [`published`](Self::published), and caches the
    /// published value's own generation, so a stale read only costs another reload.
    #[inline]
    pub(crate) fn generation_relaxed(&self) -> u64 {
        self.generation.0.load(Ordering::Relaxed)
    }

    /// The value gates read when their generation is out of date.
    #[inline]
    pub(crate) fn published(&self) -> Arc<Published> {
        self.published.load_full()
    }

    fn touch_confirmed(&self) {
        let now = u64::try_from(self.clock_base.elapsed().as_nanos()).unwrap_or(NEVER - 1);
        self.confirmed_at.store(now, Ordering::Relaxed);
    }

    fn lock_writer(&self) -> MutexGuard<'_, Writer> {
        // Every critical section leaves `Writer` consistent, so a poisoned lock is still usable.
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publishes the writer's state under a new generation and wakes every waiter. The value is
    /// stored before the generation (release), so a gate that sees the new generation (acquire)
    /// loads at least this value.
    fn publish(&self, writer: &mut Writer) {
        writer.generation += 1;
        self.published.store(Arc::new(Published {
            generation: writer.generation,
            state: writer.state,
            stale: writer.stale,
        }));
        self.generation
            .0
            .store(writer.generation, Ordering::Release);
        self.changed.notify_all();
        self.notify.send_replace(writer.generation);
    }
}
