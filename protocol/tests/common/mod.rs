//! Builders and enumerations shared by the protocol's integration tests.
#![allow(dead_code)]

use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle, WatermarkStage};

/// Toggle values that exercise the boundaries of i64 and a realistic epoch-millisecond value.
pub const TOGGLE_VALUES: [i64; 5] = [i64::MIN, -1, 0, 1_700_000_000_000, i64::MAX];

/// A state with the given fields and a fixed epoch and deletion delay.
pub fn state(stage: Stage, toggle: Toggle, active: Color) -> CoordinationState {
    CoordinationState::new(7, stage, active, toggle).with_deletion_delay_ms(60_000)
}

/// A toggle of the given watermark stage carrying `w` (ignored for `WATERMARK_NOT_SET`).
pub fn toggle(stage: WatermarkStage, w: i64) -> Toggle {
    match stage {
        WatermarkStage::NotSet => Toggle::NotSet,
        WatermarkStage::WaitingForWatermark => Toggle::Proposed(w),
        WatermarkStage::Set => Toggle::Set(w),
    }
}

/// The event times that probe a rule split at `w`: both ends of i64 and the neighbours of `w`.
pub fn probes(w: Option<i64>) -> Vec<i64> {
    let mut ts = vec![i64::MIN, -1, 0, 1, i64::MAX];
    if let Some(w) = w {
        ts.extend([w.saturating_sub(1), w, w.saturating_add(1)]);
    }
    ts.sort_unstable();
    ts.dedup();
    ts
}
