//! The simulated source: a deterministic, replayable, partitioned "topic".
//!
//! Every record is a pure function of `(seed, split, offset)`, like a record in a Kafka topic, so
//! any number of jobs can read the same topic at once, a job restored from a snapshot re-reads
//! exactly the same records, and the ledger can enumerate every record that should have been
//! emitted. A record becomes readable when the simulation clock passes its arrival time.
//!
//! Arrivals sit on a grid: split `s` gets one record every `interval_ms`, except in its idle
//! windows (see [`IdleWindow`]), where it gets none. A record's event time is its arrival time
//! minus a jitter in `0..=out_of_orderness_ms`; a `late_fraction` of records get a larger jitter
//! (`out_of_orderness_ms + 1 ..= out_of_orderness_ms + late_max_ms`) and so arrive behind the
//! watermark.

use serde::{Deserialize, Serialize};

use super::clock::DEFAULT_START_MS;

/// Bits of a [`RecordId`] that hold the offset; the split sits above them.
const OFFSET_BITS: u32 = 40;

/// A record's identity: its split and offset packed into one number (`split << 40 | offset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordId(pub u64);

impl RecordId {
    /// The id of the record at `offset` in `split`.
    pub const fn new(split: u32, offset: u64) -> Self {
        Self(((split as u64) << OFFSET_BITS) | (offset & ((1 << OFFSET_BITS) - 1)))
    }

    /// The split the record belongs to.
    pub const fn split(self) -> u32 {
        // The id was built from a u32 split, so the shifted value fits.
        #[allow(clippy::cast_possible_truncation)]
        let split = (self.0 >> OFFSET_BITS) as u32;
        split
    }

    /// The record's offset within its split.
    pub const fn offset(self) -> u64 {
        self.0 & ((1 << OFFSET_BITS) - 1)
    }
}

impl std::fmt::Display for RecordId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.split(), self.offset())
    }
}

/// One source record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Identity (split and offset).
    pub id: RecordId,
    /// Key for the keyed running count.
    pub key: u64,
    /// Event time, epoch milliseconds.
    pub event_time: i64,
    /// When the record becomes readable (simulation clock, epoch milliseconds).
    pub arrival: i64,
}

/// A recurring idle period of one split: starting at `phase_ms` after the source start, and
/// then every `period_ms`, the split gets no records for `idle_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleWindow {
    /// The split that goes idle.
    pub split: u32,
    /// Length of one cycle (active plus idle), milliseconds.
    pub period_ms: i64,
    /// How long the split is idle in each cycle, milliseconds (less than `period_ms`).
    pub idle_ms: i64,
    /// Where the first idle period starts, relative to the source start, milliseconds.
    pub phase_ms: i64,
}

/// The definition of a topic: everything that determines its records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceSpec {
    /// Seed of every pseudo-random choice.
    pub seed: u64,
    /// Number of splits (partitions).
    pub splits: u32,
    /// Time between two arrivals on one split, milliseconds (at least 1).
    pub interval_ms: i64,
    /// Arrival time of offset 0 of every split.
    pub start_ms: i64,
    /// Maximum jitter of an in-order record, milliseconds (the watermark strategy's bound).
    pub out_of_orderness_ms: i64,
    /// Fraction of records, in millionths, that are late.
    pub late_per_million: u32,
    /// Maximum extra jitter of a late record beyond `out_of_orderness_ms`, milliseconds.
    pub late_max_ms: i64,
    /// Number of distinct keys.
    pub keys: u64,
    /// Idle windows (at most one per split is used).
    pub idle: Vec<IdleWindow>,
}

impl Default for SourceSpec {
    fn default() -> Self {
        Self {
            seed: 42,
            splits: 4,
            interval_ms: 100,
            start_ms: DEFAULT_START_MS,
            out_of_orderness_ms: 500,
            late_per_million: 0,
            late_max_ms: 0,
            keys: 16,
            idle: Vec::new(),
        }
    }
}

/// An idle pattern in grid slots.
#[derive(Debug, Clone, Copy)]
struct SlotPattern {
    /// Slots per cycle.
    period: u64,
    /// Idle slots per cycle (a prefix of the rotated cycle).
    idle: u64,
    /// Rotation: slot `j` is at position `j + shift` of the cycle.
    shift: u64,
}

impl SlotPattern {
    fn active(self) -> u64 {
        self.period - self.idle
    }

    /// Active slots among rotated positions `0..x`.
    fn active_below(self, x: u64) -> u64 {
        (x / self.period) * self.active() + (x % self.period).saturating_sub(self.idle)
    }
}

/// splitmix64: a tiny, well-mixed, stateless hash; good enough for reproducible simulation data.
pub(crate) const fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SourceSpec {
    fn pattern(&self, split: u32) -> Option<SlotPattern> {
        let w = self.idle.iter().find(|w| w.split == split)?;
        let interval = self.interval();
        let period = u64::try_from(w.period_ms / interval).ok()?;
        let idle = u64::try_from(w.idle_ms / interval).ok()?;
        if period == 0 || idle == 0 || idle >= period {
            return None;
        }
        let phase = u64::try_from(w.phase_ms.max(0) / interval).unwrap_or(0) % period;
        Some(SlotPattern {
            period,
            idle,
            shift: (period - phase) % period,
        })
    }

    fn interval(&self) -> i64 {
        self.interval_ms.max(1)
    }

    fn slot_time(&self, slot: u64) -> i64 {
        let slot = i64::try_from(slot).unwrap_or(i64::MAX);
        self.start_ms
            .saturating_add(slot.saturating_mul(self.interval()))
    }

    /// The grid slot of `offset` on `split`.
    fn slot_of(&self, split: u32, offset: u64) -> u64 {
        match self.pattern(split) {
            None => offset,
            Some(p) => {
                let m = p.active_below(p.shift) + offset;
                let rotated = (m / p.active()) * p.period + p.idle + m % p.active();
                rotated - p.shift
            }
        }
    }

    /// When the record at `offset` of `split` becomes readable.
    pub fn arrival(&self, split: u32, offset: u64) -> i64 {
        self.slot_time(self.slot_of(split, offset))
    }

    /// How many records of `split` have arrived by `now_ms` (offsets `0..n` are readable).
    pub fn available(&self, split: u32, now_ms: i64) -> u64 {
        if now_ms < self.start_ms {
            return 0;
        }
        let slots = u64::try_from((now_ms - self.start_ms) / self.interval())
            .unwrap_or(0)
            .saturating_add(1);
        match self.pattern(split) {
            None => slots,
            Some(p) => p.active_below(slots + p.shift) - p.active_below(p.shift),
        }
    }

    /// The record at `offset` of `split`.
    pub fn record(&self, split: u32, offset: u64) -> Record {
        let id = RecordId::new(split, offset);
        let h = mix(self.seed ^ mix(id.0));
        let arrival = self.arrival(split, offset);
        let bound = self.out_of_orderness_ms.max(0);
        let late = self.late_per_million > 0
            && (mix(h ^ 1) % 1_000_000) < u64::from(self.late_per_million)
            && self.late_max_ms > 0;
        let jitter = if late {
            let extra = mix(h ^ 2) % u64::try_from(self.late_max_ms).unwrap_or(1);
            bound + 1 + i64::try_from(extra).unwrap_or(0)
        } else {
            i64::try_from(mix(h ^ 3) % (u64::try_from(bound).unwrap_or(0) + 1)).unwrap_or(0)
        };
        Record {
            id,
            key: mix(h ^ 4) % self.keys.max(1),
            event_time: arrival - jitter,
            arrival,
        }
    }

    /// The largest possible `arrival - event_time` of any record.
    pub fn max_delay_ms(&self) -> i64 {
        let late = if self.late_per_million > 0 {
            self.late_max_ms.max(0)
        } else {
            0
        };
        self.out_of_orderness_ms.max(0) + late
    }

    /// Every record of every split that arrives at or before `until_ms`, in processing order
    /// (arrival time, then split), the order in which a simulated job reads them.
    pub fn records_arrived_by(&self, until_ms: i64) -> Vec<Record> {
        let mut out = Vec::new();
        for split in 0..self.splits {
            let n = self.available(split, until_ms);
            out.extend((0..n).map(|offset| self.record(split, offset)));
        }
        out.sort_by_key(|r| (r.arrival, r.id.split(), r.id.offset()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_with_idle() -> SourceSpec {
        SourceSpec {
            interval_ms: 10,
            idle: vec![IdleWindow {
                split: 1,
                period_ms: 1000,
                idle_ms: 300,
                phase_ms: 250,
            }],
            late_per_million: 100_000,
            late_max_ms: 2000,
            ..SourceSpec::default()
        }
    }

    #[test]
    fn records_are_a_pure_function_of_seed_split_and_offset() {
        let a = spec_with_idle();
        let b = spec_with_idle();
        for offset in 0..500 {
            assert_eq!(a.record(2, offset), b.record(2, offset));
        }
        let other = SourceSpec {
            seed: 7,
            ..a.clone()
        };
        assert!((0..100).any(|o| other.record(0, o).key != a.record(0, o).key));
    }

    #[test]
    fn idle_windows_have_no_arrivals_and_offsets_stay_dense() {
        let spec = spec_with_idle();
        let start = spec.start_ms;
        let mut previous = i64::MIN;
        for offset in 0..1000 {
            let t = spec.arrival(1, offset) - start;
            assert!(t > previous, "arrivals increase");
            previous = t;
            let in_cycle = t % 1000;
            assert!(
                !(250..550).contains(&in_cycle),
                "offset {offset} arrives at {t}, inside the idle window"
            );
            // available() is the inverse of arrival().
            assert_eq!(spec.available(1, start + t), offset + 1);
            assert_eq!(spec.available(1, start + t - 1), offset);
        }
        // The split without an idle window has one record per slot.
        assert_eq!(spec.available(0, start + 999), 100);
        assert_eq!(spec.available(1, start + 999), 70);
    }

    #[test]
    fn jitter_is_bounded_and_late_records_exist() {
        let spec = spec_with_idle();
        let mut late = 0;
        for offset in 0..5000 {
            let r = spec.record(0, offset);
            let delay = r.arrival - r.event_time;
            assert!((0..=spec.max_delay_ms()).contains(&delay));
            if delay > spec.out_of_orderness_ms {
                late += 1;
            }
        }
        assert!((300..700).contains(&late), "about 10% late, got {late}");
    }

    #[test]
    fn record_ids_round_trip() {
        let id = RecordId::new(3, 123_456);
        assert_eq!((id.split(), id.offset()), (3, 123_456));
        assert_eq!(id.to_string(), "3@123456");
    }
}
