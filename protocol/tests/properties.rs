//! Property tests of the rule and the ConfigMap codec.

mod common;

use std::collections::BTreeMap;

use bluegreen_protocol::{
    AppliedState, Color, CoordinationState, Decision, GateReport, Stage, Toggle, decide, keys,
    report_keys,
};
use proptest::prelude::*;

fn any_color() -> impl Strategy<Value = Color> {
    prop::sample::select(Color::ALL)
}

fn any_toggle() -> impl Strategy<Value = Toggle> {
    prop_oneof![
        Just(Toggle::NotSet),
        any::<i64>().prop_map(Toggle::Proposed),
        any::<i64>().prop_map(Toggle::Set),
    ]
}

/// A floor: none, anywhere, or just below a W near it.
fn any_floor() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        Just(None),
        any::<i64>().prop_map(Some),
        prop::sample::select(vec![i64::MIN, i64::MIN + 1, i64::MAX]).prop_map(Some),
    ]
}

/// Any state that validates.
fn valid_state() -> impl Strategy<Value = CoordinationState> {
    (
        any_color(),
        any::<u64>(),
        prop::sample::select(Stage::ALL),
        any_toggle(),
        any::<u64>(),
        any_floor(),
    )
        .prop_map(
            |(active, deletion_delay_ms, stage, toggle, epoch, floor)| CoordinationState {
                floor,
                active,
                deletion_delay_ms,
                stage,
                toggle,
                epoch,
            },
        )
        .prop_filter("valid", |s| s.validate().is_ok())
}

/// Any INITIALIZING or RUNNING state (RUNNING possibly with a floor).
fn steady_state() -> impl Strategy<Value = CoordinationState> {
    (
        any_color(),
        any::<u64>(),
        prop::sample::select(vec![Stage::Initializing, Stage::Running]),
        any::<u64>(),
        any_floor(),
    )
        .prop_map(
            |(active, deletion_delay_ms, stage, epoch, floor)| CoordinationState {
                floor: if stage == Stage::Running { floor } else { None },
                active,
                deletion_delay_ms,
                stage,
                toggle: Toggle::NotSet,
                epoch,
            },
        )
}

/// Event times biased towards the interesting places: near W, near the ends of i64.
fn event_time_near(w: i64) -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        (-3i64..=3).prop_map(move |d| w.saturating_add(d)),
        prop::sample::select(vec![i64::MIN, i64::MIN + 1, i64::MAX - 1, i64::MAX]),
    ]
}

/// Any state with W set (TRANSITIONING or CLEAR_TO_TEARDOWN), possibly a floor below W, and
/// an event time near W or the floor.
fn with_w_set() -> impl Strategy<Value = (CoordinationState, i64)> {
    (
        any_color(),
        any::<u64>(),
        prop::sample::select(vec![Stage::Transitioning, Stage::ClearToTeardown]),
        any::<i64>().prop_filter("a floor fits below W", |w| *w != i64::MIN),
        any::<u64>(),
        prop_oneof![Just(None), (1u64..=u64::MAX).prop_map(Some)],
    )
        .prop_flat_map(|(active, deletion_delay_ms, stage, w, epoch, gap)| {
            // F = W - gap, kept within i64.
            let floor = gap.map(|g| w.saturating_sub_unsigned(g));
            let near = prop_oneof![event_time_near(w), event_time_near(floor.unwrap_or(w))];
            let s = CoordinationState {
                floor,
                active,
                deletion_delay_ms,
                stage,
                toggle: Toggle::Set(w),
                epoch,
            };
            (Just(s), near)
        })
}

/// Any gate report; `None` stands for `i64::MIN` on the wire, so `Some(i64::MIN)` is not generated.
fn any_report() -> impl Strategy<Value = GateReport> {
    let not_min =
        || prop::option::of(any::<i64>().prop_filter("MIN means none", |v| *v != i64::MIN));
    let applied = (
        any::<u64>(),
        prop::sample::select(Stage::ALL),
        any_color(),
        any_toggle(),
        prop::option::of(any::<i64>()),
    )
        .prop_map(|(epoch, stage, active, toggle, floor)| AppliedState {
            epoch,
            stage,
            active,
            toggle,
            floor,
        });
    (
        prop::option::of(applied),
        not_min(),
        not_min(),
        any::<bool>(),
        prop::option::of(any_color()),
        prop::option::of(any::<String>()),
    )
        .prop_map(
            |(applied, max_passed, watermark, idle, color, problem)| GateReport {
                applied,
                max_passed,
                watermark,
                idle,
                color,
                problem: problem.filter(|p| !p.is_empty()),
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 4096,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// With W set, exactly one color passes each record above the floor and the other drops it:
    /// no duplicate and no loss at the rule level. Both drop a record at or below the floor.
    #[test]
    fn colors_partition_event_time_once_w_is_set((s, t) in with_w_set()) {
        let blue = decide(Some(&s), Color::Blue, t);
        let green = decide(Some(&s), Color::Green, t);
        if s.floor.is_some_and(|f| t <= f) {
            prop_assert_eq!([blue, green], [Decision::Drop, Decision::Drop], "{} at t={}", s, t);
            return Ok(());
        }
        let mut pair = [blue, green];
        pair.sort_by_key(|d| *d as u8);
        prop_assert_eq!(pair, [Decision::Pass, Decision::Drop], "{} at t={}", s, t);
        let owner = if t <= s.toggle.value().unwrap() { s.active.other() } else { s.active };
        prop_assert_eq!(decide(Some(&s), owner, t), Decision::Pass);
    }

    /// In steady state exactly the active color passes, above the floor.
    #[test]
    fn in_steady_state_only_the_active_color_passes(s in steady_state(), t in any::<i64>()) {
        let late = s.floor.is_some_and(|f| t <= f);
        let active = if late { Decision::Drop } else { Decision::Pass };
        prop_assert_eq!(decide(Some(&s), s.active, t), active);
        prop_assert_eq!(decide(Some(&s), s.active.other(), t), Decision::Drop);
    }

    /// Whatever the state, a record is never passed by both colors.
    #[test]
    fn no_state_lets_both_colors_pass(s in valid_state(), t in any::<i64>()) {
        let both = decide(Some(&s), Color::Blue, t) == Decision::Pass
            && decide(Some(&s), Color::Green, t) == Decision::Pass;
        prop_assert!(!both, "{} at t={}", s, t);
    }

    #[test]
    fn configmap_data_round_trips(s in valid_state()) {
        prop_assert_eq!(CoordinationState::from_data(&s.to_data()), Ok(s));
    }

    #[test]
    fn unknown_keys_do_not_change_the_parse(s in valid_state(), extra in prop::collection::btree_map("[a-z][a-z-]{0,20}", ".*", 0..5)) {
        let mut data = s.to_data();
        for (k, v) in extra {
            if !keys::ALL.contains(&k.as_str()) {
                data.insert(k, v);
            }
        }
        prop_assert_eq!(CoordinationState::from_data(&data), Ok(s));
    }

    /// Arbitrary data never panics the parser; protocol keys get arbitrary values too.
    #[test]
    fn parsing_arbitrary_data_never_panics(
        values in prop::collection::vec(prop::option::of(".*"), keys::ALL.len()),
        extra in prop::collection::btree_map(".*", ".*", 0..4),
    ) {
        let mut data: BTreeMap<String, String> = extra;
        for (key, value) in keys::ALL.iter().zip(values) {
            if let Some(v) = value {
                data.insert((*key).to_owned(), v);
            }
        }
        if let Err(e) = CoordinationState::from_data(&data) {
            prop_assert!(e.to_string().contains(e.key()));
        }
    }

    #[test]
    fn gate_reports_round_trip(r in any_report()) {
        let line = r.to_string();
        prop_assert!(!line.contains('\n'));
        prop_assert_eq!(line.parse::<GateReport>(), Ok(r));
    }

    /// Arbitrary text, and well-formed lines with one value replaced by arbitrary text, never
    /// panic the parser; every error names its key.
    #[test]
    fn parsing_arbitrary_report_lines_never_panics(
        r in any_report(),
        junk in ".*",
        at in 0..report_keys::ALL.len(),
    ) {
        let mut tokens: Vec<String> = r.to_string().split(' ').map(str::to_owned).collect();
        tokens[at] = format!("{}={junk}", report_keys::ALL[at]);
        for line in [junk.clone(), tokens.join(" ")] {
            if let Err(e) = line.parse::<GateReport>() {
                prop_assert!(e.to_string().contains(e.key()));
            }
        }
    }
}
