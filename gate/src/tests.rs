//! Unit tests: update ordering, hold/wait, counters, metrics and watch-event handling.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bluegreen_protocol::{Color, CoordinationState, Decision, Stage, Toggle, keys};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher::Event;

use crate::source::EventHandler;
use crate::{Applied, Error, Gate, SharedState, StateOptions};

const W: i64 = 1_000;

fn running(epoch: u64, active: Color) -> CoordinationState {
    CoordinationState::new(epoch, Stage::Running, active, Toggle::NotSet)
}

fn shared() -> Arc<SharedState> {
    SharedState::new(StateOptions {
        max_staleness: None,
    })
}

fn rejected(shared: &SharedState, kind: &str) -> u64 {
    shared
        .stats()
        .updates_rejected
        .get(kind)
        .copied()
        .unwrap_or(0)
}

#[test]
fn holds_until_the_first_state_then_follows_the_rule() {
    let shared = shared();
    let mut blue = Gate::new(Color::Blue, shared.clone());
    let mut green = Gate::new(Color::Green, shared.clone());
    assert_eq!(blue.decide(0), Decision::Hold);
    assert_eq!(green.decide(0), Decision::Hold);
    assert_eq!(blue.snapshot().applied, None);

    assert_eq!(shared.offer(running(3, Color::Blue)), Ok(Applied::First));
    assert_eq!(blue.decide(0), Decision::Pass);
    assert_eq!(green.decide(0), Decision::Drop);
    assert_eq!(blue.snapshot().epoch(), Some(3));

    let set = CoordinationState::new(4, Stage::Transitioning, Color::Green, Toggle::Set(W));
    assert_eq!(shared.offer(set), Ok(Applied::Advanced));
    for t in [i64::MIN, W - 1, W, W + 1, i64::MAX] {
        let (b, g) = (blue.decide(t), green.decide(t));
        assert_ne!(b, g, "exactly one color passes t={t}");
        assert_eq!(
            b == Decision::Pass,
            t <= W,
            "W itself goes to the outgoing color"
        );
    }
}

#[test]
fn stale_epoch_is_refused_and_the_last_good_state_kept() {
    let shared = shared();
    let mut gate = Gate::new(Color::Green, shared.clone());
    shared.offer(running(5, Color::Green)).expect("first state");
    let error = shared
        .offer(running(4, Color::Blue))
        .expect_err("older epoch");
    assert_eq!(error.kind(), "StaleEpoch");
    assert_eq!(error.key(), keys::EPOCH);
    assert_eq!(shared.current(), Some(running(5, Color::Green)));
    assert_eq!(gate.decide(7), Decision::Pass);
    assert_eq!(rejected(&shared, "StaleEpoch"), 1);
}

#[test]
fn duplicate_event_is_unchanged_and_does_not_invalidate_gates() {
    let shared = shared();
    let s = CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::Proposed(W));
    assert_eq!(shared.offer(s), Ok(Applied::First));
    let generation = shared.generation();
    assert_eq!(shared.offer(s), Ok(Applied::Unchanged));
    assert_eq!(shared.generation(), generation);
    let stats = shared.stats();
    assert_eq!((stats.updates_applied, stats.updates_unchanged), (1, 1));
    assert_eq!(stats.rejected_total(), 0);
}

#[test]
fn out_of_order_delivery_keeps_the_newer_state() {
    let shared = shared();
    let mut blue = Gate::new(Color::Blue, shared.clone());
    let proposed =
        CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::Proposed(W));
    let set = CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::Set(W));
    let not_set = CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::NotSet);
    shared.offer(set).expect("first");
    for late in [proposed, not_set] {
        let error = shared.offer(late).expect_err("behind the current state");
        assert_eq!(error.kind(), "IllegalTransition");
    }
    assert_eq!(shared.current(), Some(set));
    assert_eq!(
        blue.decide(W + 1),
        Decision::Drop,
        "W is set: no hold above it"
    );
    assert_eq!(rejected(&shared, "IllegalTransition"), 2);
}

#[test]
fn skipped_intermediate_states_are_accepted() {
    let shared = shared();
    shared.offer(running(1, Color::Blue)).expect("first");
    // The gate missed epoch 2's TRANSITIONING and PROPOSED states (a coalesced watch).
    let set = CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::Set(W));
    assert_eq!(shared.offer(set), Ok(Applied::Advanced));
    // And then a whole epoch.
    assert_eq!(shared.offer(running(4, Color::Blue)), Ok(Applied::Advanced));
}

#[test]
fn invalid_value_then_valid_value() {
    let shared = shared();
    let mut gate = Gate::new(Color::Blue, shared.clone());
    shared.offer(running(1, Color::Blue)).expect("first");
    let mut data = running(1, Color::Blue).to_data();
    data.insert(keys::STAGE.to_owned(), "running".to_owned());
    let error = shared.offer_data(&data).expect_err("misspelled stage");
    assert_eq!((error.kind(), error.key()), ("InvalidValue", keys::STAGE));
    assert_eq!(gate.decide(1), Decision::Pass, "last good state kept");

    let next = CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::NotSet);
    assert_eq!(shared.offer_data(&next.to_data()), Ok(Applied::Advanced));
    assert_eq!(gate.decide(1), Decision::Pass);
    assert_eq!(
        Gate::new(Color::Green, shared.clone()).decide(1),
        Decision::Hold
    );
    assert_eq!(rejected(&shared, "InvalidValue"), 1);
}

#[test]
fn an_invalid_first_state_leaves_gates_holding() {
    let shared = shared();
    let mut gate = Gate::new(Color::Blue, shared.clone());
    let bad = CoordinationState::new(1, Stage::Running, Color::Blue, Toggle::Set(W));
    assert_eq!(shared.offer(bad).map_err(|e| e.kind()), Err("Inconsistent"));
    assert_eq!(
        shared.offer_data(&BTreeMap::new()).map_err(|e| e.kind()),
        Err("MissingKey")
    );
    assert_eq!(gate.decide(0), Decision::Hold);
}

#[test]
fn staleness_holds_during_a_transition_only() {
    let shared = SharedState::new(StateOptions {
        max_staleness: Some(Duration::from_millis(20)),
    });
    let mut blue = Gate::new(Color::Blue, shared.clone());
    shared.offer(running(1, Color::Blue)).expect("first");
    std::thread::sleep(Duration::from_millis(40));
    assert!(shared.check_staleness());
    assert_eq!(
        blue.decide(0),
        Decision::Pass,
        "steady state ignores staleness"
    );

    let transitioning =
        CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::NotSet);
    shared.offer(transitioning).expect("step");
    assert!(!shared.is_stale());
    assert_eq!(blue.decide(0), Decision::Pass);
    std::thread::sleep(Duration::from_millis(40));
    assert!(shared.check_staleness());
    assert_eq!(blue.decide(0), Decision::Hold, "stale during a transition");
    assert!(blue.snapshot().applied_while_stale);
    // A re-read of the same state confirms it.
    assert_eq!(shared.offer(transitioning), Ok(Applied::Unchanged));
    assert_eq!(blue.decide(0), Decision::Pass);
    std::thread::sleep(Duration::from_millis(40));
    assert!(shared.check_staleness());
    shared.mark_confirmed();
    assert_eq!(blue.decide(0), Decision::Pass);
}

#[test]
fn decide_or_wait_blocks_until_a_deciding_state() {
    let shared = shared();
    let mut green = Gate::new(Color::Green, shared.clone());
    shared
        .offer(CoordinationState::new(
            2,
            Stage::Transitioning,
            Color::Green,
            Toggle::Proposed(W),
        ))
        .expect("first");
    let feeder = {
        let shared = shared.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            // A raise of W is not enough for the incoming color; setting it is.
            shared
                .offer(CoordinationState::new(
                    2,
                    Stage::Transitioning,
                    Color::Green,
                    Toggle::Proposed(W + 5),
                ))
                .expect("raise");
            std::thread::sleep(Duration::from_millis(30));
            shared
                .offer(CoordinationState::new(
                    2,
                    Stage::Transitioning,
                    Color::Green,
                    Toggle::Set(W + 5),
                ))
                .expect("set");
        })
    };
    let decision = green.decide_or_wait(W + 6, Duration::from_secs(10));
    feeder.join().expect("feeder thread");
    assert_eq!(
        decision.expect("decided before the timeout"),
        Decision::Pass
    );
    let snapshot = green.snapshot();
    assert_eq!((snapshot.passed, snapshot.held), (1, 1));
    assert_eq!(snapshot.max_passed_event_time_ms, Some(W + 6));
}

#[test]
fn decide_or_wait_times_out_with_an_error() {
    let shared = shared();
    let mut gate = Gate::new(Color::Blue, shared);
    let error = gate
        .decide_or_wait(42, Duration::from_millis(20))
        .expect_err("no state ever arrives");
    assert!(matches!(
        error,
        Error::HoldTimeout {
            color: Color::Blue,
            event_time_ms: 42,
            ..
        }
    ));
    assert!(
        error
            .to_string()
            .contains("no valid coordination state yet")
    );
}

#[tokio::test]
async fn decide_or_wait_async_waits_and_times_out() {
    let shared = shared();
    let mut gate = Gate::new(Color::Blue, shared.clone());
    let timeout = gate
        .decide_or_wait_async(1, Duration::from_millis(20))
        .await;
    assert!(matches!(timeout, Err(Error::HoldTimeout { .. })));

    let feeder = {
        let shared = shared.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            shared.offer(running(1, Color::Green)).expect("first");
        })
    };
    let decision = gate
        .decide_or_wait_async(1, Duration::from_secs(10))
        .await
        .expect("decided");
    feeder.await.expect("feeder task");
    assert_eq!(decision, Decision::Drop);
}

#[test]
fn counters_batch_and_restore() {
    let shared = shared();
    shared
        .offer(CoordinationState::new(
            2,
            Stage::Transitioning,
            Color::Green,
            Toggle::Proposed(W),
        ))
        .expect("first");
    let mut blue = Gate::new(Color::Blue, shared.clone());
    let times = [W - 10, W, W + 1, 5, W + 100];
    let one_by_one: Vec<Decision> = times.iter().map(|&t| blue.decide(t)).collect();
    let mut batch_gate = Gate::new(Color::Blue, shared.clone());
    let mut batch = [Decision::Hold; 5];
    assert_eq!(batch_gate.decide_batch(&times, &mut batch), 5);
    assert_eq!(one_by_one, batch);
    for snapshot in [blue.snapshot(), batch_gate.snapshot()] {
        assert_eq!(
            (snapshot.passed, snapshot.dropped, snapshot.held),
            (3, 0, 2)
        );
        assert_eq!(snapshot.max_passed_event_time_ms, Some(W));
        assert_eq!(snapshot.watermark_ms(), Some(W));
    }
    // Shorter output: decides only what fits.
    assert_eq!(batch_gate.decide_batch(&times, &mut batch[..2]), 2);

    let mut restored = Gate::new(Color::Blue, shared.clone());
    assert_eq!(restored.snapshot().max_passed_event_time_ms, None);
    restored.restore_max_passed(W + 7);
    restored.decide(3);
    assert_eq!(restored.snapshot().max_passed_event_time_ms, Some(W + 7));
    let handle = restored.handle();
    assert_eq!(
        handle.snapshot().passed,
        0,
        "other threads see counts when the gate flushes"
    );
    restored.refresh();
    assert_eq!(handle.snapshot(), restored.snapshot());
    for _ in 0..crate::FLUSH_EVERY {
        restored.decide(4);
    }
    assert!(handle.snapshot().passed >= crate::FLUSH_EVERY);
}

#[test]
fn idle_gates_report_new_states_after_refresh() {
    let shared = shared();
    let mut gate = Gate::new(Color::Blue, shared.clone());
    shared.offer(running(1, Color::Blue)).expect("first");
    assert_eq!(
        gate.snapshot().applied,
        None,
        "applied only on the gate's thread"
    );
    assert!(gate.refresh());
    assert!(!gate.refresh());
    assert_eq!(gate.snapshot().epoch(), Some(1));
}

#[test]
fn metrics_aggregate_per_color() {
    let shared = shared();
    let registry = prometheus::Registry::new();
    shared.register_metrics(&registry).expect("register");
    assert!(
        matches!(shared.register_metrics(&registry), Err(Error::Metrics(_))),
        "duplicate registration is an error"
    );
    shared
        .offer(CoordinationState::new(
            2,
            Stage::Transitioning,
            Color::Green,
            Toggle::NotSet,
        ))
        .expect("first");
    let mut a = Gate::new(Color::Blue, shared.clone());
    let mut b = Gate::new(Color::Blue, shared.clone());
    let mut g = Gate::new(Color::Green, shared.clone());
    a.decide(10);
    b.decide(30);
    g.decide(5);
    shared
        .offer(CoordinationState::new(
            2,
            Stage::Transitioning,
            Color::Green,
            Toggle::Proposed(W),
        ))
        .expect("propose");
    a.decide(20); // a applied the proposal; b did not yet.
    let _ = shared.offer(running(1, Color::Blue)); // rejected: StaleEpoch
    // A state change publishes what was passed before it; the rest is published by `refresh`
    // (the bindings' timer), `flush` or every FLUSH_EVERY records.
    let text = gather(&registry);
    assert!(
        text.contains("bluegreen_gate_records_passed_total{color=\"BLUE\"} 1"),
        "{text}"
    );
    assert!(text.contains("bluegreen_gate_max_passed_event_time_ms{color=\"BLUE\"} 10"));
    a.flush();
    g.flush();
    b.flush();

    let text = gather(&registry);
    for line in [
        "bluegreen_gate_records_passed_total{color=\"BLUE\"} 3",
        "bluegreen_gate_records_held_total{color=\"GREEN\"} 1",
        "bluegreen_gate_max_passed_event_time_ms{color=\"BLUE\"} 30",
        "bluegreen_gate_applied_epoch{color=\"BLUE\"} 2",
        "bluegreen_gate_applied_watermark_stage{color=\"BLUE\"} 0",
        "bluegreen_gate_gates{color=\"BLUE\"} 2",
        "bluegreen_gate_source_updates_applied_total 2",
        "bluegreen_gate_source_updates_rejected_total{kind=\"StaleEpoch\"} 1",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    b.refresh();
    let text = gather(&registry);
    assert!(text.contains("bluegreen_gate_applied_watermark_stage{color=\"BLUE\"} 1"));
    assert!(text.contains("bluegreen_gate_applied_watermark_ms{color=\"BLUE\"} 1000"));
    assert!(!text.contains("bluegreen_gate_max_passed_event_time_ms{color=\"GREEN\"}"));

    drop(b);
    let text = gather(&registry);
    assert!(
        text.contains("bluegreen_gate_records_passed_total{color=\"BLUE\"} 3"),
        "ended gates still count"
    );
    assert!(text.contains("bluegreen_gate_max_passed_event_time_ms{color=\"BLUE\"} 30"));
    assert!(text.contains("bluegreen_gate_gates{color=\"BLUE\"} 1"));
    assert_eq!(shared.aggregates()[0].passed, 3);
}

fn gather(registry: &prometheus::Registry) -> String {
    prometheus::TextEncoder::new()
        .encode_to_string(&registry.gather())
        .expect("text encoding")
}

fn configmap(name: &str, resource_version: u64, state: &CoordinationState) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            resource_version: Some(resource_version.to_string()),
            ..ObjectMeta::default()
        },
        data: Some(state.to_data()),
        ..ConfigMap::default()
    }
}

#[test]
fn watch_events_feed_the_state_and_deletion_keeps_it() {
    let shared = shared();
    let mut handler = EventHandler::new(shared.clone(), "orders-bluegreen".to_owned());
    let first = running(1, Color::Blue);
    let next = CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::NotSet);
    handler.handle(Ok(Event::Init));
    handler.handle(Ok(Event::InitApply(configmap(
        "orders-bluegreen",
        10,
        &first,
    ))));
    handler.handle(Ok(Event::InitDone));
    assert_eq!(shared.current(), Some(first));
    handler.handle(Ok(Event::Apply(configmap("other", 11, &next))));
    assert_eq!(
        shared.current(),
        Some(first),
        "another object is never applied"
    );
    handler.handle(Ok(Event::Apply(configmap("orders-bluegreen", 12, &next))));
    assert_eq!(shared.current(), Some(next));
    // A probe overtook the watch: the older watch event is skipped, not refused.
    let proposed =
        CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::Proposed(W));
    handler.handle_probe(Ok(Some(configmap("orders-bluegreen", 20, &proposed))));
    handler.handle(Ok(Event::Apply(configmap("orders-bluegreen", 15, &next))));
    assert_eq!(shared.current(), Some(proposed));
    assert_eq!(shared.stats().superseded, 1);
    assert_eq!(shared.stats().rejected_total(), 0);

    handler.handle(Ok(Event::Delete(configmap(
        "orders-bluegreen",
        21,
        &proposed,
    ))));
    handler.handle_probe(Ok(None));
    // A re-list that finds nothing.
    handler.handle(Ok(Event::Init));
    handler.handle(Ok(Event::InitDone));
    assert_eq!(
        shared.current(),
        Some(proposed),
        "deletion keeps the last good state"
    );
    let stats = shared.stats();
    assert_eq!(
        (stats.deletions, stats.watch_restarts),
        (1, 1),
        "a deletion is counted once, however often the absence is seen again"
    );

    handler.handle(Err(kube::runtime::watcher::Error::NoResourceVersion));
    assert_eq!(shared.stats().watch_errors, 1);
    // A re-created ConfigMap with a legal successor is applied.
    let set = CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::Set(W));
    handler.handle(Ok(Event::Init));
    handler.handle(Ok(Event::InitApply(configmap(
        "orders-bluegreen",
        30,
        &set,
    ))));
    handler.handle(Ok(Event::InitDone));
    assert_eq!(shared.current(), Some(set));
    handler.handle(Ok(Event::Delete(configmap("orders-bluegreen", 31, &set))));
    assert_eq!(
        shared.stats().deletions,
        2,
        "a second deletion after re-creation counts"
    );
}

#[test]
fn watch_event_with_bad_data_is_refused() {
    let shared = shared();
    let mut handler = EventHandler::new(shared.clone(), "x".to_owned());
    let mut cm = configmap("x", 1, &running(1, Color::Blue));
    handler.handle(Ok(Event::Apply(cm.clone())));
    cm.data
        .as_mut()
        .expect("data")
        .insert(keys::PROTOCOL_VERSION.to_owned(), "2".to_owned());
    cm.metadata.resource_version = Some("2".to_owned());
    handler.handle(Ok(Event::Apply(cm)));
    assert_eq!(rejected(&shared, "UnsupportedVersion"), 1);
    assert_eq!(shared.current(), Some(running(1, Color::Blue)));
}

#[test]
fn accepted_data_keeps_only_accepted_raw_data() {
    let shared = shared();
    let slot = shared.accepted_data();
    assert!(slot.borrow().is_none());
    let mut data = running(1, Color::Blue).to_data();
    data.insert("is-first-deployment".to_owned(), "true".to_owned());
    shared.offer_data(&data).expect("first");
    assert_eq!(
        slot.borrow().as_ref().map(|(n, d)| (*n, (**d).clone())),
        Some((1, data.clone()))
    );
    // The same data again does not renumber; refused data never shows.
    shared.offer_data(&data).expect("replay");
    let stale = running(0, Color::Blue).to_data();
    assert!(shared.offer_data(&stale).is_err());
    assert_eq!(slot.borrow().as_ref().map(|(n, _)| *n), Some(1));
    // States offered without raw data leave the slot alone.
    shared
        .offer(CoordinationState::new(
            2,
            Stage::Transitioning,
            Color::Green,
            Toggle::NotSet,
        ))
        .expect("step");
    assert_eq!(slot.borrow().as_ref().map(|(n, _)| *n), Some(1));
    let next = CoordinationState::new(2, Stage::Transitioning, Color::Green, Toggle::Proposed(W))
        .to_data();
    shared.offer_data(&next).expect("proposal");
    assert_eq!(
        slot.borrow().as_ref().map(|(n, d)| (*n, (**d).clone())),
        Some((2, next))
    );
}

fn floored(floor: i64, state: CoordinationState) -> CoordinationState {
    state.with_floor(Some(floor))
}

#[test]
fn a_gate_under_a_floor_drops_and_counts_late_records() {
    let shared = shared();
    let mut green = Gate::new(Color::Green, shared.clone());
    let mut blue = Gate::new(Color::Blue, shared.clone());
    shared
        .offer(floored(W, running(4, Color::Green)))
        .expect("RUNNING with a floor");
    green.refresh();
    assert_eq!(green.rule().floor(), Some(W));
    // Late records (t <= F) are dropped by both colors and counted apart from ordinary drops.
    assert_eq!(green.decide(W), Decision::Drop);
    assert_eq!(green.decide(i64::MIN), Decision::Drop);
    assert_eq!(green.decide(W + 1), Decision::Pass);
    assert_eq!(blue.decide(W), Decision::Drop);
    assert_eq!(blue.decide(W + 1), Decision::Drop);
    let g = green.snapshot();
    assert_eq!(
        (
            g.passed,
            g.dropped,
            g.dropped_late,
            g.max_passed_event_time_ms
        ),
        (1, 0, 2, Some(W + 1))
    );
    let b = blue.snapshot();
    assert_eq!((b.passed, b.dropped, b.dropped_late), (0, 1, 1));
    // Batches count the same way, and other threads see it after the flush.
    let mut out = [Decision::Hold; 3];
    green.decide_batch(&[W - 1, W, W + 2], &mut out);
    assert_eq!(out, [Decision::Drop, Decision::Drop, Decision::Pass]);
    assert_eq!(green.handle().snapshot().dropped_late, 4);
    // The per-color totals and the Prometheus counter, which survive the gate.
    drop(green);
    blue.flush();
    let [blue_agg, green_agg] = shared.aggregates();
    assert_eq!((blue_agg.dropped_late, green_agg.dropped_late), (1, 4));
    let registry = prometheus::Registry::new();
    shared.register_metrics(&registry).expect("register");
    let text = gather(&registry);
    assert!(
        text.contains("bluegreen_gate_records_dropped_late_total{color=\"GREEN\"} 4"),
        "{text}"
    );
    assert!(
        text.contains("bluegreen_gate_records_dropped_total{color=\"GREEN\"} 0"),
        "{text}"
    );
}

#[test]
fn without_a_floor_nothing_is_late() {
    let shared = shared();
    let mut blue = Gate::new(Color::Blue, shared.clone());
    shared.offer(running(1, Color::Blue)).expect("RUNNING");
    blue.refresh();
    assert_eq!(blue.rule().floor(), None);
    assert_eq!(blue.decide(i64::MIN), Decision::Pass);
    assert_eq!(blue.snapshot().dropped_late, 0);
    // F = i64::MAX: every record is late.
    let shared = self::shared();
    let mut blue = Gate::new(Color::Blue, shared.clone());
    shared
        .offer(floored(i64::MAX, running(2, Color::Blue)))
        .expect("RUNNING with the highest floor");
    assert_eq!(blue.decide(i64::MAX), Decision::Drop);
    assert_eq!(blue.snapshot().dropped_late, 1);
}

#[test]
fn a_hand_deleted_floor_is_refused_and_the_last_good_state_kept() {
    let shared = shared();
    let mut green = Gate::new(Color::Green, shared.clone());
    let good = floored(W, running(4, Color::Green));
    let mut data = good.to_data();
    shared.offer_data(&data).expect("RUNNING with a floor");
    data.remove(keys::FLOOR);
    let err = shared.offer_data(&data).expect_err("floor deleted by hand");
    assert_eq!(err.kind(), "IllegalTransition", "{err}");
    assert!(err.to_string().contains("floor"), "{err}");
    assert_eq!(shared.current(), Some(good));
    assert_eq!(rejected(&shared, "IllegalTransition"), 1);
    assert_eq!(green.decide(W), Decision::Drop);
    assert_eq!(green.snapshot().dropped_late, 1);
}

#[test]
fn a_snapshot_becomes_the_applied_state_line() {
    let shared = shared();
    let mut blue = Gate::new(Color::Blue, shared.clone());
    let before = blue.snapshot().report(None, false);
    assert_eq!(
        before.to_string(),
        "epoch= stage= active= watermark-stage=-1 toggle= floor= max-passed=-9223372036854775808 watermark=-9223372036854775808 idle=false color=BLUE"
    );
    shared
        .offer(floored(500, running(6, Color::Blue)))
        .expect("RUNNING");
    shared
        .offer(floored(
            500,
            CoordinationState::new(7, Stage::Transitioning, Color::Green, Toggle::Proposed(W)),
        ))
        .expect("proposal");
    assert_eq!(blue.decide(998), Decision::Pass);
    blue.flush();
    let report = blue.handle().snapshot().report(Some(995), false);
    assert_eq!(
        report.to_string(),
        "epoch=7 stage=TRANSITIONING active=GREEN watermark-stage=1 toggle=1000 floor=500 max-passed=998 watermark=995 idle=false color=BLUE"
    );
    assert!(report.acknowledges(7, W));
    assert!(!report.past(W));
}

#[test]
fn gates_side_by_side_share_no_cache_line() {
    let shared = shared();
    let gates: Vec<Gate> = (0..3)
        .map(|_| Gate::new(Color::Blue, shared.clone()))
        .collect();
    for pair in gates.windows(2) {
        let (a, b) = (&raw const pair[0] as usize, &raw const pair[1] as usize);
        assert_eq!(a % 128, 0, "a gate starts on a 128-byte boundary");
        assert!(
            b - a >= 128,
            "gates {a:#x} and {b:#x} share a cache-line pair"
        );
    }
}
