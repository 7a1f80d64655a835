//! The ledger: the oracle that says, after a run, how many records were emitted twice, how many
//! never, and how many by the wrong color.
//!
//! Every simulated sink writes its emissions here. Two sink modes:
//! [`SinkMode::AtLeastOnce`] makes every emission visible at once; [`SinkMode::Transactional`]
//! keeps a job attempt's emissions pending until that attempt completes a checkpoint (or a
//! stop-with-savepoint) and discards them when the attempt fails or is cancelled, like a
//! two-phase-commit sink (Kafka transactions). Because the source is deterministic
//! ([`SourceSpec`]), the ledger can enumerate every record that should have been emitted
//! ([`Expectation`]) and so count losses, not only duplicates.
//!
//! Gates also report every record they drop as late (`t <= floor`, [`Ledger::drop_late`]). An
//! expected record that nobody emitted and that a gate of a color other than its owner dropped as
//! late is counted apart, as a **late drop**, not as a loss: it reached only the incoming job
//! after the outgoing job had stopped, like data later than Flink's allowed lateness. Every other
//! missing record is a loss.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Mutex;

use bluegreen_protocol::Color;

use super::source::{Record, RecordId, SourceSpec};

/// How emissions become visible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SinkMode {
    /// Every emission is visible immediately (duplicates after a restart are expected).
    AtLeastOnce,
    /// Emissions are visible once the emitting job attempt completes a checkpoint; a failure or
    /// cancellation discards the uncommitted ones (two-phase commit).
    #[default]
    Transactional,
}

/// One record written by a sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emission {
    /// The source record.
    pub record: RecordId,
    /// Its key.
    pub key: u64,
    /// The running count of its key after this record (the operator's state).
    pub count: u64,
    /// Its event time.
    pub event_time: i64,
    /// The color of the gate that passed it (`None`: the job has no gate).
    pub color: Option<Color>,
    /// The emitting sink subtask.
    pub subtask: u32,
    /// The Flink job id of the emitting job.
    pub job_id: String,
    /// The job's attempt (0 at submission, +1 per restart).
    pub attempt: u32,
}

/// A record a gate dropped as late (`t <= floor`, the gate's `dropped_late`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateDrop {
    /// The source record.
    pub record: RecordId,
    /// Its event time.
    pub event_time: i64,
    /// The color of the gate that dropped it.
    pub color: Color,
    /// The gate subtask.
    pub subtask: u32,
    /// The Flink job id of the dropping job.
    pub job_id: String,
    /// The job's attempt.
    pub attempt: u32,
}

/// A handover at W from one color to the other: from then on the outgoing color owns
/// `t <= W`, the incoming one `t > W`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handover {
    /// The toggle value W.
    pub w: i64,
    /// The incoming color (owns `t > W`).
    pub to: Color,
}

/// What a run should have emitted.
#[derive(Debug, Clone)]
pub struct Expectation {
    /// The topic the jobs read.
    pub source: SourceSpec,
    /// Every record with event time `<= horizon_ms` must have been emitted exactly once...
    pub horizon_ms: i64,
    /// ...if it arrived (became readable) by this time (`None`: whenever it arrives). Late
    /// records can arrive after the end of a run with an event time below the horizon.
    pub arrived_by_ms: Option<i64>,
    /// The color that owns every record before any handover (`None`: do not check colors).
    pub first_owner: Option<Color>,
    /// Handovers in the order they happened (rising W).
    pub handovers: Vec<Handover>,
    /// Whether to check the running count in every emission against a replay of the source
    /// (off when a fault changes the read order, e.g. a stopped split).
    pub check_counts: bool,
}

impl Expectation {
    /// Expect every record with event time `<= horizon_ms` once, from any color.
    pub fn new(source: SourceSpec, horizon_ms: i64) -> Self {
        Self {
            source,
            horizon_ms,
            arrived_by_ms: None,
            first_owner: None,
            handovers: Vec::new(),
            check_counts: true,
        }
    }

    /// Expects only records that arrived by `t` (the end of the run).
    #[must_use]
    pub fn arrived_by(mut self, t: i64) -> Self {
        self.arrived_by_ms = Some(t);
        self
    }

    /// Checks colors: `first` owns everything before the first handover.
    #[must_use]
    pub fn owned_by(mut self, first: Color) -> Self {
        self.first_owner = Some(first);
        self
    }

    /// Adds a handover at `w` to `to`.
    #[must_use]
    pub fn handover(mut self, w: i64, to: Color) -> Self {
        self.handovers.push(Handover { w, to });
        self
    }

    /// Does not compare running counts (see [`Expectation::check_counts`]).
    #[must_use]
    pub fn without_count_check(mut self) -> Self {
        self.check_counts = false;
        self
    }

    /// The color that owns event time `t`, if colors are checked.
    pub fn owner(&self, t: i64) -> Option<Color> {
        let mut owner = self.first_owner?;
        for h in &self.handovers {
            if t > h.w {
                owner = h.to;
            }
        }
        Some(owner)
    }
}

/// Counts for one color, or for all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Visible emissions.
    pub emissions: u64,
    /// Distinct records among them.
    pub distinct: u64,
    /// Emissions beyond the first of the same record.
    pub duplicates: u64,
    /// Expected records (owned by this color, for a per-color count) never emitted by anyone.
    pub losses: u64,
    /// Emissions of a record owned by the other color.
    pub wrong_color: u64,
    /// Expected records never emitted by anyone that this color's gate dropped as late while the
    /// other color owned them (for a per-color count: attributed to the dropping color). Their
    /// own class, not counted in `losses`: see the module documentation.
    pub late_drops: u64,
}

/// The ledger's verdict on a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerReport {
    /// Records the expectation requires (event time `<= horizon`).
    pub expected: u64,
    /// All colors together. `duplicates` here also counts a record emitted once by each color.
    pub total: Counts,
    /// Per emitting color (`None`: ungated jobs).
    pub per_color: BTreeMap<Option<Color>, Counts>,
    /// Emissions whose running count differs from a replay of the source (restored state wrong).
    pub count_mismatches: u64,
    /// Emissions still pending in open transactions (not counted above).
    pub pending: u64,
    /// Every late drop the gates reported ([`Ledger::drop_late`]), emitted elsewhere or not: one
    /// per gate decision, as the gates' `dropped_late` counters count them.
    pub late_drop_events: u64,
    /// Up to 20 examples of problems, for failure messages.
    pub examples: Vec<String>,
}

impl LedgerReport {
    /// Exactly once: no duplicates, no losses, no late drops, no count mismatches (restored
    /// state right). Wrong colors are reported apart: a record emitted once by the "wrong" color
    /// is still emitted exactly once (see `docs/correctness.md`).
    pub fn is_exactly_once(&self) -> bool {
        self.is_exactly_once_within_lateness() && self.total.late_drops == 0
    }

    /// Exactly once for every record that was not too late: no duplicates, no losses, no count
    /// mismatches; records missing only because a gate dropped them as late are allowed (the
    /// handover's allowed lateness, `docs/correctness.md` section 3).
    pub fn is_exactly_once_within_lateness(&self) -> bool {
        self.total.duplicates == 0 && self.total.losses == 0 && self.count_mismatches == 0
    }

    /// Exactly once, and every record emitted by the color that owns its event time.
    pub fn is_exactly_once_by_owner(&self) -> bool {
        self.is_exactly_once() && self.total.wrong_color == 0
    }

    /// The counts of one color (zero if it emitted nothing and owned nothing).
    pub fn color(&self, color: Option<Color>) -> Counts {
        self.per_color.get(&color).copied().unwrap_or_default()
    }
}

impl LedgerReport {
    /// Counts the expected record `r` that nobody emitted: a late drop if a gate of a color that
    /// does not own it dropped it as late (`late_by`), else a loss, described in the result. An
    /// owner that drops its own record has lost it.
    fn missing(
        &mut self,
        r: &Record,
        expectation: &Expectation,
        late_by: Option<&Vec<Color>>,
    ) -> Option<String> {
        let owner = expectation.owner(r.event_time);
        if let Some(color) = late_by.and_then(|colors| colors.iter().find(|c| owner != Some(**c))) {
            self.total.late_drops += 1;
            self.per_color.entry(Some(*color)).or_default().late_drops += 1;
            return None;
        }
        self.total.losses += 1;
        if owner.is_some() {
            self.per_color.entry(owner).or_default().losses += 1;
        }
        Some(format!(
            "lost: {} (t={}, arrival={}, owner {owner:?})",
            r.id, r.event_time, r.arrival
        ))
    }
}

impl fmt::Display for LedgerReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.total;
        write!(
            f,
            "expected {} | emitted {} ({} distinct) | duplicates {} | losses {} | late drops {} ({} late-drop events) | wrong color {} | count mismatches {} | pending {}",
            self.expected,
            t.emissions,
            t.distinct,
            t.duplicates,
            t.losses,
            t.late_drops,
            self.late_drop_events,
            t.wrong_color,
            self.count_mismatches,
            self.pending
        )?;
        for (color, c) in &self.per_color {
            let name = color.map_or("UNGATED", Color::as_str);
            write!(
                f,
                "\n  {name}: emitted {} duplicates {} losses {} late drops {} wrong color {}",
                c.emissions, c.duplicates, c.losses, c.late_drops, c.wrong_color
            )?;
        }
        for e in &self.examples {
            write!(f, "\n  - {e}")?;
        }
        Ok(())
    }
}

/// A transaction: one attempt of one job.
type TxnKey = (String, u32);

/// The oracle. Shared by every simulated sink of a runner (`Arc<Ledger>`).
#[derive(Debug, Default)]
pub struct Ledger {
    mode: SinkMode,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    visible: Vec<Emission>,
    pending: HashMap<TxnKey, Vec<Emission>>,
    discarded: u64,
    late: Vec<LateDrop>,
}

impl Ledger {
    /// An empty ledger with the given sink mode.
    pub fn new(mode: SinkMode) -> Self {
        Self {
            mode,
            inner: Mutex::default(),
        }
    }

    /// The sink mode.
    pub fn mode(&self) -> SinkMode {
        self.mode
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; keep using it.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records one emission (visible at once, or pending in the attempt's transaction).
    pub fn emit(&self, emission: Emission) {
        let mut inner = self.lock();
        match self.mode {
            SinkMode::AtLeastOnce => inner.visible.push(emission),
            SinkMode::Transactional => inner
                .pending
                .entry((emission.job_id.clone(), emission.attempt))
                .or_default()
                .push(emission),
        }
    }

    /// Records that a gate dropped a record as late (at once: a drop is not output, so it does
    /// not wait for a commit, and a failed attempt's drops stay recorded, as the gate counted
    /// them).
    pub fn drop_late(&self, drop: LateDrop) {
        self.lock().late.push(drop);
    }

    /// Every late drop recorded so far.
    pub fn late_drops(&self) -> Vec<LateDrop> {
        self.lock().late.clone()
    }

    /// Commits the pending emissions of one job attempt (its checkpoint completed). Returns how
    /// many became visible.
    pub fn commit(&self, job_id: &str, attempt: u32) -> usize {
        let mut inner = self.lock();
        let batch = inner
            .pending
            .remove(&(job_id.to_owned(), attempt))
            .unwrap_or_default();
        let n = batch.len();
        inner.visible.extend(batch);
        n
    }

    /// Discards the pending emissions of one job attempt (it failed or was cancelled).
    pub fn abort(&self, job_id: &str, attempt: u32) -> usize {
        let mut inner = self.lock();
        let n = inner
            .pending
            .remove(&(job_id.to_owned(), attempt))
            .map_or(0, |b| b.len());
        inner.discarded += n as u64;
        n
    }

    /// The visible emissions, in the order they became visible.
    pub fn emissions(&self) -> Vec<Emission> {
        self.lock().visible.clone()
    }

    /// Emissions waiting in open transactions.
    pub fn pending(&self) -> u64 {
        self.lock().pending.values().map(|b| b.len() as u64).sum()
    }

    /// Emissions discarded by aborted transactions so far.
    pub fn discarded(&self) -> u64 {
        self.lock().discarded
    }

    /// Per record, the colors of the gates that dropped it as late (once per drop).
    fn late_by_record(&self) -> HashMap<RecordId, Vec<Color>> {
        let mut late_by: HashMap<RecordId, Vec<Color>> = HashMap::new();
        for d in &self.lock().late {
            late_by.entry(d.record).or_default().push(d.color);
        }
        late_by
    }

    /// Judges the visible emissions against `expectation`.
    pub fn report(&self, expectation: &Expectation) -> LedgerReport {
        let emissions = self.emissions();
        let late_by = self.late_by_record();
        let mut report = LedgerReport {
            pending: self.pending(),
            late_drop_events: late_by.values().map(|c| c.len() as u64).sum(),
            ..LedgerReport::default()
        };
        let mut examples: Vec<String> = Vec::new();
        let mut note = |msg: String| {
            if examples.len() < 20 {
                examples.push(msg);
            }
        };

        // Emissions per record, overall and per color.
        let mut seen: HashMap<RecordId, u64> = HashMap::new();
        let mut seen_by_color: HashMap<(Option<Color>, RecordId), u64> = HashMap::new();
        for e in &emissions {
            let total = seen.entry(e.record).or_default();
            *total += 1;
            let by_color = seen_by_color.entry((e.color, e.record)).or_default();
            *by_color += 1;
            let counts = report.per_color.entry(e.color).or_default();
            counts.emissions += 1;
            if *by_color == 1 {
                counts.distinct += 1;
            } else {
                counts.duplicates += 1;
            }
            if *total > 1 {
                report.total.duplicates += 1;
                note(format!(
                    "duplicate: {} (t={}) emission #{} by {:?} subtask {} job {} attempt {}",
                    e.record, e.event_time, total, e.color, e.subtask, e.job_id, e.attempt
                ));
            }
            if let (Some(owner), Some(color)) = (expectation.owner(e.event_time), e.color)
                && owner != color
            {
                counts.wrong_color += 1;
                report.total.wrong_color += 1;
                note(format!(
                    "wrong color: {} (t={}) emitted by {color}, owned by {owner}",
                    e.record, e.event_time
                ));
            }
        }
        report.total.emissions = emissions.len() as u64;
        report.total.distinct = seen.len() as u64;

        // Replay the source: losses up to the horizon, and the running count of every record.
        let source = &expectation.source;
        let replay_until = emissions
            .iter()
            .map(|e| source.arrival(e.record.split(), e.record.offset()))
            .max()
            .unwrap_or(i64::MIN)
            .max(expectation.horizon_ms.saturating_add(source.max_delay_ms()));
        let mut running: HashMap<u64, u64> = HashMap::new();
        let mut expected_count: HashMap<RecordId, u64> = HashMap::new();
        for r in source.records_arrived_by(replay_until) {
            let c = running.entry(r.key).or_default();
            *c += 1;
            if expectation.check_counts {
                expected_count.insert(r.id, *c);
            }
            if r.event_time > expectation.horizon_ms
                || expectation.arrived_by_ms.is_some_and(|t| r.arrival > t)
            {
                continue;
            }
            report.expected += 1;
            if !seen.contains_key(&r.id)
                && let Some(lost) = report.missing(&r, expectation, late_by.get(&r.id))
            {
                note(lost);
            }
        }
        if expectation.check_counts {
            for e in &emissions {
                if expected_count.get(&e.record) != Some(&e.count) {
                    report.count_mismatches += 1;
                    note(format!(
                        "count mismatch: {} key {} emitted count {}, replay says {:?}",
                        e.record,
                        e.key,
                        e.count,
                        expected_count.get(&e.record)
                    ));
                }
            }
        }
        report.examples = examples;
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> SourceSpec {
        SourceSpec {
            splits: 2,
            interval_ms: 100,
            out_of_orderness_ms: 0,
            ..SourceSpec::default()
        }
    }

    /// Emits, with correct running counts, every record that arrives by `until`.
    fn emit_all(ledger: &Ledger, spec: &SourceSpec, until: i64, color: Option<Color>) {
        let mut running: HashMap<u64, u64> = HashMap::new();
        for r in spec.records_arrived_by(until) {
            let c = running.entry(r.key).or_default();
            *c += 1;
            ledger.emit(Emission {
                record: r.id,
                key: r.key,
                count: *c,
                event_time: r.event_time,
                color,
                subtask: 0,
                job_id: "j".into(),
                attempt: 0,
            });
        }
    }

    #[test]
    fn a_complete_run_is_exactly_once() {
        let spec = source();
        let ledger = Ledger::new(SinkMode::AtLeastOnce);
        let horizon = spec.start_ms + 10_000;
        emit_all(&ledger, &spec, horizon, None);
        let report = ledger.report(&Expectation::new(spec, horizon));
        assert!(report.is_exactly_once(), "{report}");
        assert_eq!(report.expected, 2 * 101);
    }

    #[test]
    fn the_oracle_sees_duplicates_losses_wrong_colors_and_bad_counts() {
        let spec = source();
        let ledger = Ledger::new(SinkMode::AtLeastOnce);
        let horizon = spec.start_ms + 10_000;
        emit_all(&ledger, &spec, horizon - 1000, Some(Color::Blue));
        emit_all(&ledger, &spec, horizon - 2000, Some(Color::Blue));
        let expectation = Expectation::new(spec.clone(), horizon)
            .owned_by(Color::Blue)
            .handover(horizon - 5000, Color::Green);
        let report = ledger.report(&expectation);
        assert_eq!(report.total.duplicates, 2 * 81);
        assert_eq!(report.total.losses, 2 * 10);
        assert_eq!(report.color(Some(Color::Green)).losses, 2 * 10);
        assert_eq!(report.total.wrong_color, 2 * 40 + 2 * 30);
        assert!(!report.is_exactly_once());

        let bad = Ledger::new(SinkMode::AtLeastOnce);
        let r = spec.record(0, 3);
        bad.emit(Emission {
            record: r.id,
            key: r.key,
            count: 99,
            event_time: r.event_time,
            color: None,
            subtask: 0,
            job_id: "j".into(),
            attempt: 0,
        });
        let report = bad.report(&Expectation::new(spec, i64::MIN));
        assert_eq!(report.count_mismatches, 1, "{report}");
    }

    #[test]
    fn a_late_drop_by_the_other_color_is_its_own_class_and_every_other_miss_is_a_loss() {
        let spec = source();
        let horizon = spec.start_ms + 10_000;
        let toggle = spec.start_ms + 5_000;
        let expectation = Expectation::new(spec.clone(), horizon)
            .owned_by(Color::Blue)
            .handover(toggle, Color::Green);
        let records = spec.records_arrived_by(horizon);
        let owned_by_blue: Vec<_> = records.iter().filter(|r| r.event_time <= toggle).collect();
        let owned_by_green: Vec<_> = records.iter().filter(|r| r.event_time > toggle).collect();
        // late: blue's, reached only green after blue stopped, dropped as late: a late drop.
        // lost: blue's, simply never emitted: a loss.
        // own: green's own, dropped as late by green (a floor above W would do that): a loss.
        // twice: blue's, emitted by blue and also dropped as late by a lagging green: neither.
        let (late, lost, twice) = (owned_by_blue[3], owned_by_blue[7], owned_by_blue[9]);
        let own = owned_by_green[2];
        let ledger = Ledger::new(SinkMode::AtLeastOnce);
        let mut running: HashMap<u64, u64> = HashMap::new();
        for r in spec.records_arrived_by(horizon + spec.max_delay_ms()) {
            let count = running.entry(r.key).or_default();
            *count += 1;
            if [late.id, lost.id, own.id].contains(&r.id) {
                continue;
            }
            ledger.emit(Emission {
                record: r.id,
                key: r.key,
                count: *count,
                event_time: r.event_time,
                color: expectation.owner(r.event_time),
                subtask: 0,
                job_id: "j".into(),
                attempt: 0,
            });
        }
        for r in [late, own, twice] {
            ledger.drop_late(LateDrop {
                record: r.id,
                event_time: r.event_time,
                color: Color::Green,
                subtask: 0,
                job_id: "g".into(),
                attempt: 0,
            });
        }
        let report = ledger.report(&expectation);
        assert_eq!(report.total.late_drops, 1, "{report}");
        assert_eq!(report.color(Some(Color::Green)).late_drops, 1, "{report}");
        assert_eq!(report.total.losses, 2, "{report}");
        assert_eq!(report.color(Some(Color::Blue)).losses, 1, "{report}");
        assert_eq!(report.color(Some(Color::Green)).losses, 1, "{report}");
        assert_eq!(report.late_drop_events, 3, "{report}");
        assert_eq!(report.total.duplicates, 0, "{report}");
        assert!(!report.is_exactly_once(), "{report}");
        assert!(!report.is_exactly_once_within_lateness(), "{report}");
        assert!(
            report
                .to_string()
                .contains("late drops 1 (3 late-drop events)"),
            "{report}"
        );
        // Without the two losses only the late drop is missing: exactly once within lateness.
        let ledger_b = Ledger::new(SinkMode::AtLeastOnce);
        for e in ledger.emissions() {
            ledger_b.emit(e);
        }
        let mut running: HashMap<u64, u64> = HashMap::new();
        for r in spec.records_arrived_by(horizon + spec.max_delay_ms()) {
            let count = running.entry(r.key).or_default();
            *count += 1;
            if [lost.id, own.id].contains(&r.id) {
                ledger_b.emit(Emission {
                    record: r.id,
                    key: r.key,
                    count: *count,
                    event_time: r.event_time,
                    color: expectation.owner(r.event_time),
                    subtask: 0,
                    job_id: "j".into(),
                    attempt: 0,
                });
            }
        }
        ledger_b.drop_late(ledger.late_drops()[0].clone());
        let report = ledger_b.report(&expectation);
        assert_eq!(
            (report.total.losses, report.total.late_drops),
            (0, 1),
            "{report}"
        );
        assert!(report.is_exactly_once_within_lateness(), "{report}");
        assert!(!report.is_exactly_once(), "{report}");
    }

    #[test]
    fn transactional_emissions_are_visible_only_after_commit() {
        let spec = source();
        let ledger = Ledger::new(SinkMode::Transactional);
        emit_all(&ledger, &spec, spec.start_ms + 1000, None);
        assert!(ledger.emissions().is_empty());
        assert_eq!(ledger.pending(), 22);
        assert_eq!(ledger.commit("j", 0), 22);
        assert_eq!(ledger.emissions().len(), 22);
        emit_all(&ledger, &spec, spec.start_ms + 1000, None);
        assert_eq!(ledger.abort("j", 0), 22);
        assert_eq!(ledger.discarded(), 22);
        assert_eq!(ledger.emissions().len(), 22);
    }
}
