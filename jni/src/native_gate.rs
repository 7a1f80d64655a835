//! A Rust [`Gate`] driven from Java, one per subtask, with reusable buffers for batches.

use bluegreen_gate::Gate;
use bluegreen_protocol::{Color, Decision};

use crate::watches::WatchHandle;

/// One subtask's gate, deciding records for Java (`JniGate`). The Java side calls it from one
/// thread; the FFI layer still keeps it behind a mutex, so misuse is slow, never unsound.
#[derive(Debug)]
pub struct NativeGate {
    gate: Gate,
    times: Vec<i64>,
    decisions: Vec<Decision>,
    bytes: Vec<i8>,
}

impl NativeGate {
    /// A gate of color `color` over the state of `watch`.
    pub fn new(watch: &WatchHandle, color: Color) -> Self {
        Self {
            gate: Gate::new(color, watch.shared().clone()),
            times: Vec::new(),
            decisions: Vec::new(),
            bytes: Vec::new(),
        }
    }

    /// The decision for one record (counted by the gate).
    pub fn decide(&mut self, event_time_ms: i64) -> Decision {
        self.gate.decide(event_time_ms)
    }

    /// Decides `count` records whose event times `fill` writes into a scratch buffer, and returns
    /// their decisions as bytes (`Decision as i8`: 0 PASS, 1 DROP, 2 HOLD), the encoding of the
    /// Java `Decision` ordinals.
    pub fn decide_batch_with(
        &mut self,
        count: usize,
        fill: impl FnOnce(&mut [i64]) -> Result<(), crate::Error>,
    ) -> Result<&[i8], crate::Error> {
        self.times.resize(count, 0);
        self.decisions.resize(count, Decision::Hold);
        self.bytes.resize(count, 0);
        fill(&mut self.times)?;
        let decided = self.gate.decide_batch(&self.times, &mut self.decisions);
        for (byte, decision) in self.bytes.iter_mut().zip(&self.decisions[..decided]) {
            *byte = *decision as i8;
        }
        Ok(&self.bytes[..decided])
    }

    /// The underlying gate (snapshots, restore of the max passed event time).
    pub fn gate(&mut self) -> &mut Gate {
        &mut self.gate
    }
}
