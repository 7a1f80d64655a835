//! A crash after every call (issue 14, item 1). One handover is run uninterrupted and the
//! controller's calls to the Kubernetes API and to Flink's REST API are counted up to its last
//! write: K. Then, for every k in 1..=K, the handover is run again with the controller killed
//! right after its k-th call — call k + 1 is held unanswered by the proxy it passes through
//! (`examples/src/calls.rs`), the controller task is aborted and a fresh controller (a new
//! client, as a restarted process) started — and each run must converge with nothing done twice:
//!
//! - every ConfigMap state the controllers wrote, in resourceVersion order, a legal step from the
//!   one before (`check_transition`);
//! - one savepoint and one stop-with-savepoint per handover (a stop resent under the same trigger
//!   id is the same stop), the incoming child created once with one restore path;
//! - no status ever recording an epoch twice in its history; the handover recorded once, Promoted;
//! - the ledger at 0 duplicates / 0 losses with every record by the color that owned it: judged
//!   on each stack after every `LEDGER_EVERY` handovers and after its last, for all its handovers
//!   at once (each with its own W).
//!
//! Watch streams are not calls (see `examples/src/calls.rs`). Two stacks run at a time, each
//! handing over back and forth for half of the crash points, on a simulated clock at `SPEED`. The figures (K, the worst extra time to converge against the uninterrupted run) are
//! printed and recorded for docs/reliability.md. `BLUEGREEN_CRASH_POINTS=3,17` runs only those
//! points; `BLUEGREEN_CRASH_PROGRESS=1` prints each run as it ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bluegreen_controller::handover::HISTORY_LEN;
use bluegreen_controller::resource::FlinkBlueGreenDeploymentSpec;
use bluegreen_examples::audit::Audit;
use bluegreen_examples::calls::{Call, ControllerCalls, Hold, Upstream};
use bluegreen_examples::reliability::{Trial, record};
use bluegreen_examples::{LocalStack, StackOptions, orders_job};
use bluegreen_protocol::{Color, CoordinationState, Stage, configmap_name};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde_json::json;
use tokio::task::JoinSet;

const NAME: &str = "orders";
/// Simulated seconds per wall-clock second.
const SPEED: f64 = 50.0;
const WAIT: Duration = Duration::from_mins(1);
/// The ledger is judged after every this many handovers of a stack (and after its last).
const LEDGER_EVERY: usize = 10;
/// Stacks running at once.
const WORKERS: usize = 2;
/// How long the controller makes no call before a run starts.
const QUIET: Duration = Duration::from_millis(150);
/// How often the test looks for convergence.
const POLL: Duration = Duration::from_millis(50);

fn spec(version: u64) -> FlinkBlueGreenDeploymentSpec {
    let mut spec = orders_job(&format!("v{version}"), 1);
    spec.coordination.deployment_deletion_delay = "0s".into();
    // Fewer records and checkpoints than the demo's: the simulation's share of the CPU is
    // smaller, nothing the controller sees changes.
    let conf = &mut spec.template.spec.flink_configuration;
    conf.insert("bluegreen.sim.records-per-second".into(), "5".into());
    conf.insert("execution.checkpointing.interval".into(), "15s".into());
    spec
}

/// One stack with a controller whose calls go through counting proxies.
struct Bed {
    stack: LocalStack,
    calls: ControllerCalls,
    /// The epoch of the last handover (0: only the first deployment).
    epoch: u64,
    active: Color,
    restarts: u32,
    /// W and the incoming color of every handover, for the ledger.
    handovers: Vec<(i64, Color)>,
    /// The last ConfigMap state judged.
    configmap: Option<CoordinationState>,
    /// How many of the controllers' writes were judged.
    audited: usize,
}

/// What one handover did.
#[derive(Debug)]
struct Run {
    /// The crash point asked for (`None`: uninterrupted or another rule).
    crash_after: Option<usize>,
    /// The call that was held (the controller was killed before it), if the run got that far.
    held: Option<Call>,
    /// The counted calls of the run (up to the crash).
    calls: Vec<Call>,
    /// From the spec change until the handover converged.
    elapsed: Duration,
}

impl Bed {
    async fn start() -> anyhow::Result<Self> {
        let mut stack = LocalStack::start(StackOptions {
            speed: SPEED,
            ..StackOptions::default()
        })
        .await?;
        let calls =
            ControllerCalls::start(stack.server.config(), &stack.flink.rest_url_template()).await?;
        stack.ctx = Arc::new(calls.context("controller-0")?);
        stack.start_controller();
        stack.create(NAME, spec(0)).await?;
        let bed = Self {
            stack,
            calls,
            epoch: 0,
            active: Color::Blue,
            restarts: 0,
            handovers: Vec::new(),
            configmap: None,
            audited: 0,
        };
        bed.converged(Color::Blue, 0).await?;
        let mut bed = bed;
        let first = Audit::new(bed.calls.gate.writes());
        bed.audited = first.writes().len();
        bed.configmap = first
            .check_configmap_after(&configmap_name(NAME), None)
            .map(|(_, last)| last)?;
        Ok(bed)
    }

    /// Waits until the handover to `to` converged: the status is steady on `to` with epoch
    /// `epoch` the newest in its history, and the ConfigMap is RUNNING on `to`.
    async fn converged(&self, to: Color, epoch: u64) -> anyhow::Result<()> {
        let configmaps: Api<ConfigMap> = Api::default_namespaced(self.stack.client.clone());
        let deadline = Instant::now() + WAIT;
        loop {
            let status = self.stack.fbgds().get(NAME).await?.status;
            let steady = status.as_ref().is_some_and(|s| {
                s.active_color == Some(to)
                    && s.transition.is_none()
                    && s.history.first().is_some_and(|h| h.epoch == epoch)
            });
            if steady {
                let cm = configmaps.get(&configmap_name(NAME)).await?;
                let state = CoordinationState::from_data(&cm.data.unwrap_or_default());
                if state.is_ok_and(|s| s.stage == Stage::Running && s.active == to) {
                    return Ok(());
                }
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the handover to {to} (epoch {epoch}) did not converge; status: {}",
                serde_json::to_string(&status)?
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// One handover; the controller is killed before the first call `hold` holds.
    async fn handover(&mut self, hold: Hold) -> anyhow::Result<Run> {
        let crash_after = match hold {
            Hold::After(k) => Some(k),
            _ => None,
        };
        let crashing = !matches!(hold, Hold::Never);
        let gate = self.calls.gate.clone();
        // Every run starts from an idle controller: the trailing reconciles of the last
        // handover (triggered by its own last writes) are over.
        anyhow::ensure!(
            gate.wait_quiet(QUIET, WAIT).await,
            "the controller did not go idle"
        );
        let (epoch, to) = (self.epoch + 1, self.active.other());
        gate.count(hold);
        let started = Instant::now();
        self.stack
            .patch_spec(
                NAME,
                json!({"template": {"spec": {"image": format!("example.com/orders:v{epoch}")}}}),
            )
            .await?;
        let mut killed_before = None;
        if crashing {
            tokio::select! {
                first_held = gate.wait_held(WAIT) => killed_before = first_held,
                done = self.converged(to, epoch) => done?,
            }
        }
        let calls = gate.calls();
        if killed_before.is_some() {
            self.stack.crash_controller().await;
            gate.stop_counting();
            self.restarts += 1;
            self.stack.ctx = Arc::new(
                self.calls
                    .context(&format!("controller-{}", self.restarts))?,
            );
            self.stack.start_controller();
        }
        self.converged(to, epoch).await?;
        let elapsed = started.elapsed();
        let calls = if killed_before.is_some() {
            calls
        } else {
            // A call held after the handover converged (a steady resync) goes on; a killed
            // controller's held call never does.
            gate.release();
            gate.calls()
        };
        self.epoch = epoch;
        self.active = to;
        self.check(to).await?;
        Ok(Run {
            crash_after,
            held: killed_before.map(|h| h.call),
            calls,
            elapsed,
        })
    }

    /// Nothing done twice in the last handover and nothing illegal: judges every write since
    /// the last judgement (the handover's, and whatever came after the last one was judged),
    /// its ConfigMap states continuing from the last one judged.
    async fn check(&mut self, to: Color) -> anyhow::Result<()> {
        let epoch = self.epoch;
        let writes = self.calls.gate.writes_since(self.audited);
        self.audited += writes.len();
        let run = Audit::new(writes);
        let (_, last) = run.check_configmap_after(&configmap_name(NAME), self.configmap)?;
        self.configmap = last;
        run.check_history(NAME)?;
        let savepoints = run.savepoint_count();
        anyhow::ensure!(
            savepoints == 1,
            "epoch {epoch}: {savepoints} savepoints triggered: {:?}",
            run.savepoint_triggers()
        );
        let stops = run.stop_count();
        anyhow::ensure!(
            stops == 1,
            "epoch {epoch}: {stops} stops: {:?}",
            run.stops()
        );
        let applied = run.child_restore_paths(&format!("{NAME}-{}", to.suffix()));
        anyhow::ensure!(
            applied.len() == 1 && applied.values().all(|paths| paths.len() == 1),
            "epoch {epoch}: the incoming child was created or restored more than once: {applied:?}"
        );
        let status = self
            .stack
            .fbgds()
            .get(NAME)
            .await?
            .status
            .unwrap_or_default();
        let expected = usize::try_from(epoch + 1)?.min(HISTORY_LEN);
        let newest = status.history.first();
        anyhow::ensure!(
            status.history.len() == expected
                && newest.is_some_and(|h| h.outcome
                    == bluegreen_controller::resource::Outcome::Promoted
                    && h.epoch == epoch),
            "epoch {epoch}: history {:?}",
            status.history
        );
        let w = newest
            .and_then(|h| h.toggle)
            .context("no W in the history")?;
        self.handovers.push((w, to));
        Ok(())
    }

    /// The ledger over every handover of this stack: 0 duplicates, 0 losses, right colors.
    async fn check_ledger(&self) -> anyhow::Result<()> {
        let report = self.stack.report_handovers(NAME, &self.handovers).await?;
        anyhow::ensure!(
            report.is_exactly_once_by_owner(),
            "after epoch {}: {report}",
            self.epoch
        );
        Ok(())
    }

    async fn finish(self) -> anyhow::Result<()> {
        let judged = self.check_ledger().await;
        self.stack.shutdown().await;
        judged
    }
}

/// Runs handovers on `bed`, crashing after each of `points` calls; stops early when `failed`
/// is set.
async fn sweep(
    mut bed: Bed,
    points: Vec<usize>,
    failed: Arc<AtomicBool>,
) -> anyhow::Result<Vec<Run>> {
    let mut runs = Vec::new();
    let mut on_bed = Vec::new();
    for k in points {
        if failed.load(Ordering::Relaxed) {
            break;
        }
        on_bed.push(k);
        let run = bed
            .handover(Hold::After(k))
            .await
            .map_err(|e| e.context(format!("crash after call {k}")))?;
        if std::env::var_os("BLUEGREEN_CRASH_PROGRESS").is_some() {
            eprintln!(
                "k = {k}: held {:?}, {} ms",
                run.held.as_ref().map(ToString::to_string),
                run.elapsed.as_millis()
            );
        }
        runs.push(run);
        if bed.handovers.len().is_multiple_of(LEDGER_EVERY) {
            bed.check_ledger()
                .await
                .map_err(|e| e.context(format!("the runs crashing after calls {on_bed:?}")))?;
            on_bed.clear();
        }
    }
    bed.finish()
        .await
        .map_err(|e| e.context(format!("the runs crashing after calls {on_bed:?}")))?;
    Ok(runs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_every_call_of_a_handover_converges_and_acts_once() -> anyhow::Result<()> {
    let started = Instant::now();
    let mut starting = JoinSet::new();
    for _ in 0..WORKERS {
        starting.spawn(Bed::start());
    }
    let mut beds = Vec::new();
    while let Some(bed) = starting.join_next().await {
        beds.push(bed??);
    }
    let uninterrupted = beds[0].handover(Hold::Never).await?;
    let k_max = uninterrupted
        .calls
        .iter()
        .rposition(Call::is_write)
        .expect("a handover writes")
        + 1;
    let writes = uninterrupted.calls[..k_max]
        .iter()
        .filter(|c| c.is_write())
        .count();
    println!(
        "uninterrupted handover: K = {k_max} calls ({writes} writes) up to its last write, {} ms",
        uninterrupted.elapsed.as_millis()
    );
    for (i, call) in uninterrupted.calls[..k_max].iter().enumerate() {
        println!("  call {:>3}: {call}", i + 1);
    }
    let only = std::env::var("BLUEGREEN_CRASH_POINTS").ok();
    let points: Vec<usize> = match &only {
        Some(list) => list
            .split(',')
            .filter_map(|p| p.trim().parse().ok())
            .collect(),
        None => (1..=k_max).collect(),
    };
    let mut runs = sweep_all(beds, &points).await?;
    runs.sort_by_key(|r| r.crash_after);
    let summary = summarize(&runs, uninterrupted.elapsed);
    let took = started.elapsed().as_secs();
    println!(
        "K = {k_max}; {} of {} runs crashed at their point; uninterrupted {} ms; worst extra time to converge {} ms (crash after call {}); {took} s in all",
        summary.crashed,
        runs.len(),
        uninterrupted.elapsed.as_millis(),
        summary.worst.as_millis(),
        summary.worst_after
    );
    if only.is_none() {
        record(&Trial {
            area: "Controller crashes".into(),
            fault: "the controller killed right after its k-th call of a handover, then restarted; every k in 1..=K".into(),
            runs: u32::try_from(runs.len())?,
            outcome: format!(
                "every run converged: every ConfigMap step legal, one savepoint, one stop and one incoming child per handover, no epoch twice in a history; {} runs were killed at their call, the others made fewer calls than k",
                summary.crashed
            ),
            duplicates: Some(0),
            losses: Some(0),
            figures: format!(
                "K = {k_max} calls (Kubernetes API and Flink REST, up to the handover's last write; {writes} writes; watch streams not counted); uninterrupted {:.1} s; worst extra time to converge {:.1} s (after call {}); {took} s for the sweep",
                uninterrupted.elapsed.as_secs_f64(),
                summary.worst.as_secs_f64(),
                summary.worst_after
            ),
            test: "tests/tests/crash_every_call.rs::a_crash_after_every_call_of_a_handover_converges_and_acts_once".into(),
        })?;
    }
    Ok(())
}

/// Runs `points` on `beds`, one bed per worker (every `WORKERS`-th point each), concurrently;
/// the first failure stops the others.
async fn sweep_all(beds: Vec<Bed>, points: &[usize]) -> anyhow::Result<Vec<Run>> {
    let failed = Arc::new(AtomicBool::new(false));
    let mut workers = JoinSet::new();
    for (w, bed) in beds.into_iter().enumerate() {
        let mine: Vec<usize> = points.iter().copied().skip(w).step_by(WORKERS).collect();
        let failed = Arc::clone(&failed);
        workers.spawn(async move {
            let result = sweep(bed, mine, Arc::clone(&failed)).await;
            if result.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            result
        });
    }
    let mut runs = Vec::new();
    let mut first_error = None;
    while let Some(result) = workers.join_next().await {
        match result? {
            Ok(mine) => runs.extend(mine),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(runs),
    }
}

/// The runs' figures.
struct Summary {
    /// Runs killed at their call.
    crashed: usize,
    /// The longest time to converge beyond the uninterrupted run's, over the killed runs.
    worst: Duration,
    /// The call after which that run was killed.
    worst_after: usize,
}

/// Prints one line per run and sums them up against the uninterrupted run's `base`.
fn summarize(runs: &[Run], base: Duration) -> Summary {
    let mut summary = Summary {
        crashed: 0,
        worst: Duration::ZERO,
        worst_after: 0,
    };
    for run in runs {
        let k = run.crash_after.unwrap_or(0);
        let extra = run.elapsed.saturating_sub(base);
        match &run.held {
            Some(next) => {
                summary.crashed += 1;
                if extra > summary.worst {
                    summary.worst = extra;
                    summary.worst_after = k;
                }
                println!(
                    "crash after call {k:>3} ({}), before {next}: converged in {} ms (+{} ms)",
                    run.calls
                        .get(k.wrapping_sub(1))
                        .map_or_else(|| "-".to_owned(), ToString::to_string),
                    run.elapsed.as_millis(),
                    extra.as_millis()
                );
            }
            None => println!(
                "crash after call {k:>3}: not reached, this run made {} calls; converged in {} ms",
                run.calls.len(),
                run.elapsed.as_millis()
            ),
        }
    }
    summary
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_right_after_the_savepoint_trigger_takes_no_second_savepoint() -> anyhow::Result<()>
{
    let mut bed = Bed::start().await?;
    let triggered = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&triggered);
    // Hold the first call after the savepoint trigger: the trigger went out under the id the
    // status recorded before it; the restarted controller must not take a second savepoint.
    let run = bed
        .handover(Hold::From(Arc::new(move |c: &Call| {
            let after = seen.load(Ordering::Relaxed);
            if c.upstream == Upstream::FlinkRest
                && c.method == "POST"
                && c.path
                    .split('?')
                    .next()
                    .is_some_and(|p| p.ends_with("/savepoints"))
            {
                seen.store(true, Ordering::Relaxed);
            }
            after
        })))
        .await?;
    anyhow::ensure!(
        triggered.load(Ordering::Relaxed) && run.held.is_some(),
        "the controller was not killed right after the savepoint trigger: {run:?}"
    );
    println!(
        "killed after {} before {}",
        run.calls
            .last()
            .map(ToString::to_string)
            .unwrap_or_default(),
        run.held
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    bed.finish().await
}
