//! Property test: a blue and a green gate, fed the same record stream and the same legal sequence
//! of coordination states, each with its own random delays (a gate sees a random subsequence of
//! the states, lagging by a random amount, sometimes with old states replayed), never both pass a
//! record, and never both drop one once both have seen the final state.
//!
//! The controller is modelled as the protocol requires (`docs/protocol.md`): it walks legal steps
//! only (checked with `is_step`), sets W only once the outgoing gate reports a proposed state of
//! the current epoch and a maximum passed event time `<= W` (raising W otherwise; it reads them
//! through a `GateHandle`, as another thread would: counters as last published), deletes the
//! outgoing job before `RUNNING` follows `CLEAR_TO_TEARDOWN` (the incoming one before `RUNNING`
//! follows `FAILING`), and starts the incoming job after `TRANSITIONING` is written, from the
//! outgoing job's position in the record stream. It writes `CLEAR_TO_TEARDOWN` only once both
//! jobs' watermarks are past W, modelled as "neither job has a record at or below W left to
//! read", so that no record is lost. Jobs also restart from checkpoints (re-reading records):
//! after a handover completes, the floor F = W keeps the incoming color from re-emitting a record
//! at or below W that the outgoing color emitted; both colors drop such late records, which the
//! no-loss check therefore leaves out.

use std::sync::Arc;

use bluegreen_gate::{Gate, GateHandle, SharedState, StateOptions};
use bluegreen_protocol::{Color, CoordinationState, Decision, Stage, Toggle, is_step};
use proptest::prelude::*;

struct SimGate {
    gate: Gate,
    /// What the controller reads (another thread's view: counters as last published).
    handle: GateHandle,
    shared: Arc<SharedState>,
    /// Index in the sequence of the newest state delivered.
    view: Option<usize>,
    /// The first index this gate may be delivered (its job started after it was written).
    created_at: usize,
    /// The next record it decides.
    cursor: usize,
}

fn index(color: Color) -> usize {
    match color {
        Color::Blue => 0,
        Color::Green => 1,
    }
}

struct Sim {
    seq: Vec<CoordinationState>,
    gates: [Option<SimGate>; 2],
    records: Vec<i64>,
    /// Per record, per color: whether any incarnation of the color passed it.
    passed: Vec<[bool; 2]>,
    /// Per record, per color: the decision made after both gates saw the final state.
    final_phase: Vec<[Option<Decision>; 2]>,
    draining: bool,
}

impl Sim {
    fn new(records: Vec<i64>) -> Self {
        let first = CoordinationState::initial(Color::Blue, 0);
        let n = records.len();
        let mut sim = Self {
            seq: vec![first],
            gates: [None, None],
            records,
            passed: vec![[false; 2]; n],
            final_phase: vec![[None; 2]; n],
            draining: false,
        };
        sim.start_job(Color::Blue, 0);
        sim
    }

    fn last(&self) -> CoordinationState {
        *self.seq.last().expect("the sequence starts with one state")
    }

    fn start_job(&mut self, color: Color, cursor: usize) {
        let shared = SharedState::new(StateOptions {
            max_staleness: None,
        });
        let gate = Gate::new(color, shared.clone());
        self.gates[index(color)] = Some(SimGate {
            handle: gate.handle(),
            gate,
            shared,
            view: None,
            created_at: self.seq.len() - 1,
            cursor,
        });
    }

    fn publish(&mut self, next: CoordinationState) -> Result<(), TestCaseError> {
        let prev = self.last();
        prop_assert!(is_step(&prev, &next), "not a legal step: {prev} -> {next}");
        self.seq.push(next);
        Ok(())
    }

    /// One controller step, if one is enabled.
    fn controller(&mut self, choice: u8, value: u16) -> Result<(), TestCaseError> {
        use Stage::{
            ClearToTeardown as C, Failing as F, Initializing as I, Running as R, Transitioning as T,
        };
        let cur = self.last();
        let with = |stage, toggle| CoordinationState {
            stage,
            toggle,
            ..cur
        };
        if choice % 16 == 15 {
            // Configuration change: legal in any step.
            return self.publish(CoordinationState {
                deletion_delay_ms: cur.deletion_delay_ms + 1,
                ..cur
            });
        }
        match (cur.stage, cur.toggle) {
            (I, _) => self.publish(with(R, Toggle::NotSet)),
            (R, _) => {
                let outgoing = index(cur.active);
                let cursor = self.gates[outgoing].as_ref().map_or(0, |g| g.cursor);
                // Step 9 carries the floor.
                self.publish(CoordinationState {
                    active: cur.active.other(),
                    stage: T,
                    toggle: Toggle::NotSet,
                    epoch: cur.epoch + 1,
                    ..cur
                })?;
                // The incoming job starts from the outgoing job's savepoint.
                self.start_job(cur.active.other(), cursor);
                Ok(())
            }
            (T, Toggle::NotSet) if choice.is_multiple_of(5) => {
                self.publish(with(F, Toggle::NotSet))
            }
            (T, Toggle::NotSet) => {
                // The controller proposes W >= F + 1.
                let w = i64::from(value % 200).max(cur.floor.map_or(i64::MIN, |f| f + 1));
                self.publish(with(T, Toggle::Proposed(w)))
            }
            (T, Toggle::Proposed(w)) => match choice % 5 {
                0 => self.publish(with(F, Toggle::Proposed(w))),
                1 => self.publish(with(T, Toggle::Proposed(w + 1 + i64::from(value % 50)))),
                _ => {
                    let outgoing = self.gates[index(cur.active.other())]
                        .as_ref()
                        .expect("the outgoing job runs during a transition")
                        .handle
                        .snapshot();
                    let confirmed = outgoing.epoch() == Some(cur.epoch)
                        && matches!(
                            outgoing.applied.map(|s| s.toggle),
                            Some(Toggle::Proposed(_))
                        );
                    match outgoing.max_passed_event_time_ms {
                        _ if !confirmed => Ok(()), // wait for the gate to report
                        Some(max) if max > w => self.publish(with(T, Toggle::Proposed(max + 1))),
                        _ => self.publish(with(T, Toggle::Set(w))),
                    }
                }
            },
            (T, Toggle::Set(w)) => {
                // Both jobs' watermarks are past W: neither will read a record at or below W
                // any more (no late data; see the module documentation).
                let past_w = self.gates.iter().flatten().all(|g| {
                    self.records[g.cursor.min(self.records.len())..]
                        .iter()
                        .all(|&t| t > w)
                });
                if past_w {
                    self.publish(with(C, Toggle::Set(w)))
                } else {
                    Ok(())
                }
            }
            (C, toggle) => {
                self.gates[index(cur.active.other())] = None; // outgoing job deleted
                // Step 6: W becomes the floor.
                self.publish(CoordinationState {
                    floor: toggle.value(),
                    ..with(R, Toggle::NotSet)
                })
            }
            (F, _) => {
                self.gates[index(cur.active)] = None; // incoming job deleted
                self.publish(CoordinationState {
                    active: cur.active.other(),
                    stage: R,
                    toggle: Toggle::NotSet,
                    ..cur
                })
            }
        }
    }

    /// Delivers a newer state (possibly skipping some) to one gate.
    fn deliver(&mut self, color: Color, value: u16, refresh: bool) -> Result<(), TestCaseError> {
        let last = self.seq.len() - 1;
        let Some(g) = self.gates[index(color)].as_mut() else {
            return Ok(());
        };
        let low = g.view.map_or(g.created_at, |v| v + 1).max(g.created_at);
        if low > last {
            return Ok(());
        }
        let j = low + usize::from(value) % (last - low + 1);
        let offered = g.shared.offer(self.seq[j]);
        prop_assert!(offered.is_ok(), "legal successor refused: {:?}", offered);
        g.view = Some(j);
        if refresh {
            g.gate.refresh();
        }
        Ok(())
    }

    /// One job restarts from a checkpoint `value % 20` records back: a new gate that restores the
    /// maximum passed event time and re-reads those records. Output a job emitted before the
    /// checkpoint it restarts from is committed (it stays in `passed`); a restart that re-emits it
    /// is the same color emitting again, which the transactional sink deduplicates. What must
    /// never happen is the other color emitting it too.
    fn restart(&mut self, color: Color, value: u16) {
        let Some(g) = self.gates[index(color)].as_mut() else {
            return;
        };
        let max = g.gate.snapshot().max_passed_event_time_ms;
        let mut gate = Gate::new(color, g.shared.clone());
        if let Some(max) = max {
            gate.restore_max_passed(max);
        }
        g.handle = gate.handle();
        g.gate = gate;
        g.cursor = g.cursor.saturating_sub(usize::from(value % 20));
    }

    /// Replays an older state to one gate (a duplicate or out-of-order delivery): never changes it.
    fn replay(&mut self, color: Color, value: u16) -> Result<(), TestCaseError> {
        let Some(g) = self.gates[index(color)].as_mut() else {
            return Ok(());
        };
        let Some(view) = g.view else { return Ok(()) };
        let k = usize::from(value) % (view + 1);
        // The deletion delay is configuration that may change in any step, so a replay that
        // differs only in it is accepted (and reverts it); nothing a gate decides by changes.
        let decisive = |s: Option<CoordinationState>| {
            s.map(|s| CoordinationState {
                deletion_delay_ms: 0,
                ..s
            })
        };
        let before = decisive(g.shared.current());
        let _ = g.shared.offer(self.seq[k]);
        prop_assert_eq!(decisive(g.shared.current()), before);
        Ok(())
    }

    /// One gate decides its next record (a held record stays next).
    fn decide(&mut self, color: Color) -> Result<bool, TestCaseError> {
        let c = index(color);
        let Some(g) = self.gates[c].as_mut() else {
            return Ok(false);
        };
        let Some(&t) = self.records.get(g.cursor) else {
            return Ok(false);
        };
        let decision = g.gate.decide(t);
        if decision == Decision::Hold {
            return Ok(false);
        }
        let r = g.cursor;
        g.cursor += 1;
        if decision == Decision::Pass {
            prop_assert!(
                !self.passed[r][1 - c],
                "record {r} (t={t}) passed by both colors; states: {:?}",
                self.seq.iter().map(ToString::to_string).collect::<Vec<_>>()
            );
            self.passed[r][c] = true;
        }
        if self.draining {
            self.final_phase[r][c] = Some(decision);
        }
        Ok(true)
    }

    /// Every gate sees the final state, then decides everything it can.
    fn drain(&mut self) -> Result<(), TestCaseError> {
        let last = self.seq.len() - 1;
        for color in [Color::Blue, Color::Green] {
            if let Some(g) = self.gates[index(color)].as_mut()
                && g.view != Some(last)
            {
                prop_assert!(g.shared.offer(self.seq[last]).is_ok());
                g.view = Some(last);
            }
        }
        self.draining = true;
        for color in [Color::Blue, Color::Green] {
            while self.decide(color)? {}
        }
        let final_state = self.last();
        for (r, both) in self.final_phase.iter().enumerate() {
            // Records at or below the floor are late: both colors drop them.
            if final_state.floor.is_some_and(|f| self.records[r] <= f) {
                continue;
            }
            if let [Some(blue), Some(green)] = *both {
                prop_assert!(
                    !(blue == Decision::Drop && green == Decision::Drop),
                    "record {r} dropped by both under the final state {final_state}"
                );
                if matches!(final_state.toggle, Toggle::Set(_)) {
                    prop_assert!(
                        (blue == Decision::Pass) != (green == Decision::Pass),
                        "with W set exactly one color passes record {r}"
                    );
                }
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Controller(u8, u16),
    Deliver(Color, u16, bool),
    Replay(Color, u16),
    Restart(Color, u16),
    Decide(Color),
}

fn color() -> impl Strategy<Value = Color> {
    prop_oneof![Just(Color::Blue), Just(Color::Green)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (any::<u8>(), any::<u16>()).prop_map(|(c, v)| Op::Controller(c, v)),
        3 => (color(), any::<u16>(), any::<bool>()).prop_map(|(c, v, r)| Op::Deliver(c, v, r)),
        1 => (color(), any::<u16>()).prop_map(|(c, v)| Op::Replay(c, v)),
        1 => (color(), any::<u16>()).prop_map(|(c, v)| Op::Restart(c, v)),
        6 => color().prop_map(Op::Decide),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn two_gates_never_both_pass(
        records in prop_oneof![
            // Arbitrary event times around the proposals.
            prop::collection::vec(-20_i64..240, 1..120),
            // Mostly increasing event times with some disorder, so that watermarks pass W and
            // transitions complete.
            prop::collection::vec(-3_i64..8, 1..120).prop_map(|steps| {
                steps.iter().scan(0, |t, step| { *t += step; Some(*t) }).collect()
            }),
        ],
        ops in prop::collection::vec(op(), 0..400),
    ) {
        let mut sim = Sim::new(records);
        for op in ops {
            match op {
                Op::Controller(choice, value) => sim.controller(choice, value)?,
                Op::Deliver(color, value, refresh) => sim.deliver(color, value, refresh)?,
                Op::Replay(color, value) => sim.replay(color, value)?,
                Op::Restart(color, value) => sim.restart(color, value),
                Op::Decide(color) => {
                    sim.decide(color)?;
                }
            }
        }
        sim.drain()?;
    }
}
