//! The simulation clock: every simulated job, timer and status transition reads time from here,
//! so a test can run an hour of event time in a second (manual mode) or run the simulation beside
//! a controller that uses real time (scaled mode).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// 2026-01-01T00:00:00Z in epoch milliseconds: where clocks and sources start unless told
/// otherwise.
pub const DEFAULT_START_MS: i64 = 1_767_225_600_000;

/// How often a waiter re-reads a scaled clock (wall time).
const SCALED_TICK: Duration = Duration::from_millis(5);

/// A controllable clock in epoch milliseconds. Cheap to clone; clones share the time.
#[derive(Debug, Clone)]
pub struct SimClock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    mode: Mode,
    /// Manual mode: the current time. Scaled mode: bumped on every read so waiters see movement.
    now: watch::Sender<i64>,
}

#[derive(Debug, Clone, Copy)]
enum Mode {
    Manual,
    Scaled {
        wall_start: Instant,
        sim_start: i64,
        factor: f64,
    },
}

impl SimClock {
    /// A clock that stands still until [`advance`](Self::advance) or [`set`](Self::set) moves it.
    pub fn manual(start_ms: i64) -> Self {
        Self::with_mode(Mode::Manual, start_ms)
    }

    /// A clock that runs `factor` times as fast as the wall clock, starting at `start_ms`
    /// (`factor` 1.0 is real time; 100.0 runs 100 s of simulated time per wall second).
    pub fn scaled(start_ms: i64, factor: f64) -> Self {
        let factor = if factor.is_finite() && factor > 0.0 {
            factor
        } else {
            1.0
        };
        Self::with_mode(
            Mode::Scaled {
                wall_start: Instant::now(),
                sim_start: start_ms,
                factor,
            },
            start_ms,
        )
    }

    fn with_mode(mode: Mode, start_ms: i64) -> Self {
        let (now, _) = watch::channel(start_ms);
        Self {
            inner: Arc::new(Inner { mode, now }),
        }
    }

    /// Whether the clock only moves when told to.
    pub fn is_manual(&self) -> bool {
        matches!(self.inner.mode, Mode::Manual)
    }

    /// The current time in epoch milliseconds.
    pub fn now_ms(&self) -> i64 {
        match self.inner.mode {
            Mode::Manual => *self.inner.now.borrow(),
            Mode::Scaled {
                wall_start,
                sim_start,
                factor,
            } => {
                let elapsed = wall_start.elapsed().as_secs_f64() * factor * 1000.0;
                // Saturating float-to-int conversion is what we want for absurd factors.
                #[allow(clippy::cast_possible_truncation)]
                let elapsed = elapsed as i64;
                sim_start.saturating_add(elapsed)
            }
        }
    }

    /// Moves a manual clock forward by `ms` and returns the new time. A scaled clock ignores
    /// this (it follows the wall clock) and returns its current time.
    pub fn advance(&self, ms: i64) -> i64 {
        match self.inner.mode {
            Mode::Manual => {
                let mut now = 0;
                self.inner.now.send_modify(|t| {
                    *t = t.saturating_add(ms.max(0));
                    now = *t;
                });
                now
            }
            Mode::Scaled { .. } => self.now_ms(),
        }
    }

    /// Sets a manual clock to `ms` if that is later than now (time never goes back).
    pub fn set(&self, ms: i64) -> i64 {
        let now = self.now_ms();
        self.advance(ms.saturating_sub(now))
    }

    /// Waits until the clock reads at least `deadline_ms`.
    pub async fn sleep_until(&self, deadline_ms: i64) {
        let mut rx = self.inner.now.subscribe();
        loop {
            let now = self.now_ms();
            if now >= deadline_ms {
                return;
            }
            match self.inner.mode {
                Mode::Manual => {
                    if rx.changed().await.is_err() {
                        // The sender lives in `self`; it cannot be dropped while we hold `self`.
                        return;
                    }
                }
                Mode::Scaled { factor, .. } => {
                    #[allow(clippy::cast_precision_loss)]
                    let wall_ms = (deadline_ms - now) as f64 / factor;
                    let wait = Duration::from_secs_f64((wall_ms / 1000.0).clamp(0.0005, 3600.0));
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// Waits until the clock has moved past `seen_ms` (manual mode) or for one short wall-clock
    /// tick (scaled mode). Job drivers call this between steps.
    pub async fn tick(&self, seen_ms: i64) {
        match self.inner.mode {
            Mode::Manual => self.sleep_until(seen_ms.saturating_add(1)).await,
            Mode::Scaled { .. } => tokio::time::sleep(SCALED_TICK).await,
        }
    }
}

impl Default for SimClock {
    /// A manual clock at [`DEFAULT_START_MS`].
    fn default() -> Self {
        Self::manual(DEFAULT_START_MS)
    }
}

impl crate::shell::Clock for SimClock {
    fn now_ms(&self) -> i64 {
        SimClock::now_ms(self)
    }

    fn sleep_until(&self, at_ms: i64) -> impl std::future::Future<Output = ()> + Send {
        SimClock::sleep_until(self, at_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn manual_clock_wakes_sleepers_when_advanced() {
        let clock = SimClock::manual(1000);
        let c = clock.clone();
        let sleeper = tokio::spawn(async move {
            c.sleep_until(1500).await;
            c.now_ms()
        });
        clock.advance(200);
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished());
        clock.advance(400);
        let woke_at = tokio::time::timeout(Duration::from_secs(5), sleeper)
            .await
            .expect("sleeper wakes")
            .expect("sleeper task");
        assert_eq!(woke_at, 1600);
    }

    #[tokio::test]
    async fn scaled_clock_runs_faster_than_the_wall() {
        let clock = SimClock::scaled(0, 1000.0);
        let start = clock.now_ms();
        tokio::time::timeout(Duration::from_secs(5), clock.sleep_until(start + 2000))
            .await
            .expect("2 simulated seconds pass in about 2 ms");
        assert!(clock.now_ms() >= start + 2000);
    }

    #[test]
    fn manual_clock_never_goes_back() {
        let clock = SimClock::manual(100);
        assert_eq!(clock.set(50), 100);
        assert_eq!(clock.advance(-5), 100);
        assert_eq!(clock.set(150), 150);
    }
}
