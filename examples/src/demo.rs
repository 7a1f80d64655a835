//! The local end-to-end blue/green upgrade demo (README, quick start command 1).
//!
//! Starts a local Kubernetes API server, the simulated Flink runner and the controller in this
//! process; deploys a stateful job, upgrades it three times (one with a parallelism change), and
//! lets the ledger count what was emitted: every record once, by the color that owned it.

use std::time::{Duration, Instant};

use anyhow::bail;
use bluegreen_examples::{LocalStack, StackOptions, orders_job};
use bluegreen_protocol::Color;
use serde_json::json;

const NAME: &str = "orders";
const STEP: Duration = Duration::from_mins(2);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    let kubeconfig = std::env::temp_dir().join("bluegreen-demo.kubeconfig");
    std::fs::write(&kubeconfig, stack.server.kubeconfig_yaml())?;
    println!(
        "bluegreen demo: local Kubernetes API at {}",
        stack.server.url()
    );
    println!(
        "  watch it with: kubectl --kubeconfig {} get fbgd,flinkdeployments -w\n",
        kubeconfig.display()
    );
    stack.start_controller();

    let started = Instant::now();
    stack.create(NAME, orders_job("v1", 2)).await?;
    println!(
        "[{:>5.1}s] created FlinkBlueGreenDeployment {NAME} (image orders:v1, parallelism 2)",
        started.elapsed().as_secs_f64()
    );
    stack.wait_steady(NAME, Color::Blue, STEP).await?;
    println!(
        "[{:>5.1}s] blue is running",
        started.elapsed().as_secs_f64()
    );

    let upgrades = [
        ("v2", 4, Color::Green, "image orders:v2, parallelism 2 -> 4"),
        ("v3", 4, Color::Blue, "image orders:v3"),
        ("v4", 2, Color::Green, "image orders:v4, parallelism 4 -> 2"),
    ];
    for (version, parallelism, to, what) in upgrades {
        let t0 = Instant::now();
        stack
            .patch_spec(
                NAME,
                json!({"template": {"spec": {"image": format!("example.com/orders:{version}"), "job": {"parallelism": parallelism}}}}),
            )
            .await?;
        println!(
            "[{:>5.1}s] upgrade: {what}",
            started.elapsed().as_secs_f64()
        );
        let mut last_phase = String::new();
        loop {
            let fbgd = stack.fbgds().get(NAME).await?;
            let status = fbgd.status.unwrap_or_default();
            if let Some(t) = &status.transition {
                let phase = format!("{:?}", t.phase);
                if phase != last_phase {
                    let w = t.toggle.map_or_else(String::new, |w| format!(" W={w}"));
                    println!(
                        "[{:>5.1}s]   {} -> {}: {phase}{w}",
                        started.elapsed().as_secs_f64(),
                        t.from.map_or("-", |c| c.as_str()),
                        t.to
                    );
                    last_phase = phase;
                }
            } else if status.active_color == Some(to) {
                let record = &status.history[0];
                println!(
                    "[{:>5.1}s]   {to} is live (handover took {:.1}s, W={})",
                    started.elapsed().as_secs_f64(),
                    t0.elapsed().as_secs_f64(),
                    record.toggle.unwrap_or_default()
                );
                break;
            }
            if t0.elapsed() > STEP {
                bail!(
                    "the upgrade to {version} did not finish within {STEP:?}: {:?}",
                    status.conditions
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    let report = stack.report(NAME).await?;
    println!("\nledger: {report}");
    stack.shutdown().await;
    if report.is_exactly_once_by_owner() {
        println!("\nexactly once: 0 duplicates, 0 losses across 3 handovers");
        Ok(())
    } else {
        bail!("the ledger found duplicates, losses or wrong colors")
    }
}
