//! The gate's hot path: `Gate::decide` per record against a plain `i64` comparison in the same
//! run, `Gate::decide_batch`, each without and with a floor, and throughput with 1 and 2 threads
//! (one gate per thread, one shared state). `cargo bench -p bluegreen-gate --bench decide`;
//! figures in `docs/performance.md`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bluegreen_gate::{Gate, SharedState, StateOptions};
use bluegreen_protocol::{Color, CoordinationState, Decision, Rule, Stage, Toggle};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const N: usize = 4096;
const W: i64 = 1_700_000_000_000;

/// Event times around W: `spread` 0 gives all records at W - 1 (predictable), larger values mix
/// records on both sides of W (half of them above it).
fn event_times(spread: i64) -> Vec<i64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..N)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let offset = i64::try_from(x % 1_000_003).expect("small") % (2 * spread + 1);
            W - 1 + offset - spread
        })
        .collect()
}

fn shared(state: CoordinationState) -> Arc<SharedState> {
    let shared = SharedState::new(StateOptions::default());
    shared.offer(state).expect("a valid state");
    shared
}

fn steady() -> CoordinationState {
    CoordinationState {
        floor: None,
        active: Color::Blue,
        deletion_delay_ms: 0,
        stage: Stage::Running,
        toggle: Toggle::NotSet,
        epoch: 1,
    }
}

fn handover() -> CoordinationState {
    CoordinationState {
        floor: None,
        active: Color::Green,
        stage: Stage::Transitioning,
        toggle: Toggle::Set(W),
        epoch: 2,
        ..steady()
    }
}

fn floored(floor: i64, state: CoordinationState) -> CoordinationState {
    CoordinationState {
        floor: Some(floor),
        ..state
    }
}

fn single_thread(c: &mut Criterion) {
    for (name, state, spread) in [
        ("steady", steady(), 0),
        // The floor just below every record: the same decisions, plus the floor's comparison.
        ("steady_floor", floored(W - 2, steady()), 0),
        ("handover_mixed", handover(), 1_000),
        // A quarter of the records at or below the floor: late drops, counted apart.
        ("handover_mixed_floor", floored(W - 501, handover()), 1_000),
    ] {
        let times = event_times(spread);
        let mut group = c.benchmark_group(format!("decide/{name}"));
        group.throughput(Throughput::Elements(N as u64));
        let w = black_box(W);
        group.bench_function("baseline_i64_le", |b| {
            b.iter(|| {
                for &t in &times {
                    black_box(black_box(t) <= w);
                }
            });
        });
        let rule = black_box(Rule::for_state(&state, Color::Blue));
        group.bench_function("protocol_rule", |b| {
            b.iter(|| {
                for &t in &times {
                    black_box(rule.decide(black_box(t)));
                }
            });
        });
        let mut gate = Gate::new(Color::Blue, shared(state));
        group.bench_function("gate_decide", |b| {
            b.iter(|| {
                for &t in &times {
                    black_box(gate.decide(black_box(t)));
                }
            });
        });
        let mut out = vec![Decision::Hold; N];
        group.bench_function("gate_decide_batch", |b| {
            b.iter(|| black_box(gate.decide_batch(black_box(&times), &mut out)));
        });
        group.finish();
    }
}

fn threads(c: &mut Criterion) {
    let times = event_times(1_000);
    let shared = shared(handover());
    let mut group = c.benchmark_group("decide/threads");
    for threads in [1_usize, 2] {
        group.throughput(Throughput::Elements((N * threads) as u64));
        let mut gates: Vec<Gate> = (0..threads)
            .map(|_| Gate::new(Color::Blue, shared.clone()))
            .collect();
        group.bench_function(format!("{threads}"), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                std::thread::scope(|scope| {
                    for gate in &mut gates {
                        let times = &times;
                        scope.spawn(move || {
                            for _ in 0..iters {
                                for &t in times {
                                    black_box(gate.decide(black_box(t)));
                                }
                            }
                        });
                    }
                });
                start.elapsed()
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    targets = single_thread, threads
}
criterion_main!(benches);
