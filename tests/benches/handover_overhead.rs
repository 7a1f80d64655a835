//! Handover overhead of the controller: wall time from a spec change to promotion and to the end
//! of the handover, on the local stack with the simulated Flink clock running 1000× faster than
//! the wall clock, so that what Flink itself imposes (job start, checkpoints, the watermark
//! reaching W) shrinks to a few milliseconds and what remains is the controller's own work
//! (watch latency, reconciles, API and REST round trips). Prints the figures.
//!
//! `cargo bench -p bluegreen-e2e --bench handover_overhead`

use std::time::{Duration, Instant};

use bluegreen_examples::{LocalStack, StackOptions, orders_job};
use bluegreen_protocol::Color;
use serde_json::json;

// The status keeps the last 10 handovers (with the first deployment), which `report` reads.
const HANDOVERS: usize = 9;
const SPEED: f64 = 1000.0;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut stack = LocalStack::start(StackOptions {
        speed: SPEED,
        ..StackOptions::default()
    })
    .await?;
    stack.start_controller();
    let mut spec = orders_job("v0", 2);
    spec.coordination.deployment_deletion_delay = "0s".into();
    for (k, v) in [
        ("bluegreen.sim.records-per-second", "1"),
        ("bluegreen.sim.startup-delay-ms", "2000"),
        ("execution.checkpointing.interval", "5s"),
    ] {
        spec.template
            .spec
            .flink_configuration
            .insert(k.into(), v.into());
    }
    // Flink-imposed waits per handover, in simulated ms: start-up, one checkpoint, W offset.
    let imposed = Duration::from_secs_f64((2000.0 + 5000.0 + 10_000.0) / 1000.0 / SPEED);
    stack.create("orders", spec).await?;
    stack
        .wait_steady("orders", Color::Blue, Duration::from_mins(1))
        .await?;
    let mut to_promotion = Vec::new();
    let mut to_end = Vec::new();
    let mut color = Color::Blue;
    for i in 1..=HANDOVERS {
        color = color.other();
        let t0 = Instant::now();
        stack
            .patch_spec(
                "orders",
                json!({"template": {"spec": {"image": format!("example.com/orders:v{i}")}}}),
            )
            .await?;
        stack
            .wait_for("orders", Duration::from_mins(1), "promotion", |f| {
                f.status
                    .as_ref()
                    .is_some_and(|s| s.active_color == Some(color))
            })
            .await?;
        to_promotion.push(t0.elapsed());
        stack
            .wait_steady("orders", color, Duration::from_mins(1))
            .await?;
        to_end.push(t0.elapsed());
    }
    let report = stack.report("orders").await?;
    stack.shutdown().await;
    to_promotion.sort();
    to_end.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p50 = |v: &[Duration]| v[v.len() / 2];
    println!(
        "handover overhead ({HANDOVERS} handovers, simulated clock {SPEED}x, deletion delay 0s)"
    );
    println!(
        "  Flink-imposed waits per handover: {:.1} ms (start-up + 1 checkpoint + W offset, simulated)",
        ms(imposed)
    );
    println!(
        "  spec change -> promotion: p50 {:.0} ms, max {:.0} ms; minus Flink-imposed waits: p50 {:.0} ms",
        ms(p50(&to_promotion)),
        ms(*to_promotion.last().expect("handovers")),
        ms(p50(&to_promotion).saturating_sub(imposed))
    );
    println!(
        "  spec change -> outgoing job deleted, RUNNING: p50 {:.0} ms, max {:.0} ms",
        ms(p50(&to_end)),
        ms(*to_end.last().expect("handovers"))
    );
    println!(
        "  ledger: {}",
        report.to_string().lines().next().unwrap_or_default()
    );
    anyhow::ensure!(report.is_exactly_once_by_owner(), "{report}");
    Ok(())
}
