//! API faults during a handover (issue 14, item 3), on the simulated stack with the local API
//! server's fault injection: conflicts on every write for a while, bursts of 429/500/503, watch
//! streams closed every few seconds, `410 Gone` (compacted history), the API server paused for
//! 30 s (wall clock; the simulated clock runs at `SPEED`), and a leader failover between two
//! replicas whose old leader wakes up with a write in flight, and 409 Conflict on the status write
//! that finishes the handover (counted once in the metrics). Each handover completes (or waits,
//! then completes), nothing is done twice (every ConfigMap step legal, one savepoint, one stop,
//! the incoming child created once with one restore path, no epoch twice in the history) and the
//! ledger counts 0 duplicates / 0 losses. Every row prints a line for docs/reliability.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bluegreen_controller::resource::{
    FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentSpec, Phase,
};
use bluegreen_e2e::{Replica, WAIT, set_image, wait_for_leader};
use bluegreen_examples::audit::Audit;
use bluegreen_examples::calls::{Call, ControllerCalls, Hold, Upstream, Write};
use bluegreen_examples::reliability::{Trial, record};
use bluegreen_examples::{LocalStack, NAMESPACE, StackOptions, orders_job};
use bluegreen_local_apiserver::{FaultInjector, RequestMatch, Verb};
use bluegreen_local_flink::DeploymentRef;
use bluegreen_protocol::{Color, configmap_name};
use kube::Api;
use tokio::sync::watch;

const NAME: &str = "orders";
/// Simulated seconds per wall-clock second.
const SPEED: f64 = 20.0;
const WRITES: [Verb; 4] = [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete];

/// A handover of several seconds, so that faults every second or so meet every phase: W a
/// minute (simulated) ahead of the outgoing job (3 s to pass it), a 2 s deletion delay.
fn spec(version: &str) -> FlinkBlueGreenDeploymentSpec {
    let mut spec = orders_job(version, 2);
    spec.coordination.deployment_deletion_delay = "2s".into();
    spec.coordination.toggle.offset = Some("60s".into());
    spec
}

/// A stack whose outgoing (blue) savepoints and incoming (green) start take 20 s simulated
/// (1 s each).
async fn stack() -> anyhow::Result<LocalStack> {
    let stack = LocalStack::start(StackOptions {
        speed: SPEED,
        ..StackOptions::default()
    })
    .await?;
    let d = |name: &str| DeploymentRef::new(NAMESPACE, format!("{NAME}-{name}"));
    stack.flink.faults().delay_savepoints(&d("blue"), 20_000);
    stack.flink.faults().slow_start(&d("green"), 20_000);
    Ok(stack)
}

/// Waits (wall clock, bounded) until `name` runs `color` alone with no handover in progress,
/// through the injected faults: a failed read is read again.
async fn steady(stack: &LocalStack, color: Color) -> anyhow::Result<()> {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(f) = stack.fbgds().get(NAME).await
            && f.status.as_ref().is_some_and(|s| {
                s.active_color == Some(color)
                    && s.transition.is_none()
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
            })
        {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "not steady on {color} within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The phase of the handover in progress, or `None`.
async fn phase(fbgds: &Api<FlinkBlueGreenDeployment>) -> Option<Phase> {
    let fbgd = fbgds.get(NAME).await.ok()?;
    fbgd.status?.transition.map(|t| t.phase)
}

/// Waits (polling) until the handover is at least in `phase` (or over); the phase it saw.
async fn reached(fbgds: &Api<FlinkBlueGreenDeployment>, wanted: Phase) -> Option<Phase> {
    let order = |p: Phase| match p {
        Phase::Snapshotting => 0,
        Phase::Deploying => 1,
        Phase::ConfirmingToggle => 2,
        Phase::ToggleSet => 3,
        Phase::ClearToTeardown => 4,
        Phase::TearingDown => 5,
        Phase::Aborting => 6,
    };
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        match phase(fbgds).await {
            Some(p) if order(p) >= order(wanted) => return Some(p),
            None if fbgds
                .get(NAME)
                .await
                .ok()
                .and_then(|f| f.status)
                .is_some_and(|s| s.epoch >= 1) =>
            {
                return None;
            }
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    None
}

/// What a finished handover showed.
struct Verdict {
    configmap_states: usize,
    duplicates: u64,
    losses: u64,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ConfigMap states, every step legal; 1 savepoint, 1 stop, 1 incoming child; ledger {} duplicates, {} losses",
            self.configmap_states, self.duplicates, self.losses
        )
    }
}

/// Judges a finished handover to GREEN from the controllers' writes: nothing done twice,
/// nothing illegal; then the ledger.
async fn judge(stack: &LocalStack, writes: Vec<Write>) -> anyhow::Result<Verdict> {
    let audit = Audit::new(writes);
    let configmap_states = audit.check_configmap(&configmap_name(NAME))?;
    audit.check_history(NAME)?;
    let savepoints = audit.savepoint_count();
    anyhow::ensure!(
        savepoints == 1,
        "{savepoints} savepoints: {:?}",
        audit.savepoint_triggers()
    );
    let stops = audit.stop_count();
    anyhow::ensure!(stops == 1, "{stops} stops: {:?}", audit.stops());
    let green = audit.child_restore_paths(&format!("{NAME}-green"));
    anyhow::ensure!(
        green.len() == 1 && green.values().all(|p| p.len() == 1),
        "the incoming child was created or restored more than once: {green:?}"
    );
    let status = stack.fbgds().get(NAME).await?.status.unwrap_or_default();
    anyhow::ensure!(
        status.history.len() == 2
            && status.history[0].outcome == bluegreen_controller::resource::Outcome::Promoted,
        "history: {:?}",
        status.history
    );
    let report = stack.report(NAME).await?;
    anyhow::ensure!(report.is_exactly_once_by_owner(), "{report}");
    Ok(Verdict {
        configmap_states,
        duplicates: report.total.duplicates,
        losses: report.total.losses,
    })
}

/// Prints a row and records it for docs/reliability.md.
fn report(
    fault: &str,
    injected: &str,
    took: Duration,
    verdict: &Verdict,
    test: &str,
) -> anyhow::Result<()> {
    println!(
        "| {fault} | {injected} | promoted in {:.1} s | {verdict} |",
        took.as_secs_f64()
    );
    record(&Trial {
        area: "API faults".into(),
        fault: fault.into(),
        runs: 1,
        outcome: format!(
            "completed: promoted in {:.1} s; {injected}",
            took.as_secs_f64()
        ),
        duplicates: Some(verdict.duplicates),
        losses: Some(verdict.losses),
        figures: verdict.to_string(),
        test: format!("tests/tests/api_faults.rs::{test}"),
    })?;
    Ok(())
}

/// A stack with one controller whose calls go through a proxy that records its writes, running
/// blue steady.
async fn proxied_on_blue() -> anyhow::Result<(LocalStack, ControllerCalls)> {
    let mut stack = stack().await?;
    let calls =
        ControllerCalls::start(stack.server.config(), &stack.flink.rest_url_template()).await?;
    stack.ctx = Arc::new(calls.context("controller")?);
    stack.start_controller();
    stack.create(NAME, spec("v1")).await?;
    stack.wait_steady(NAME, Color::Blue, WAIT).await?;
    Ok((stack, calls))
}

/// One row of the table: what runs beside the handover until it converges.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Nothing: the baseline.
    Baseline,
    /// 409 Conflict on every write, 2 s of every 3 s.
    Conflicts,
    /// Bursts of 429, 500 or 503 on every request.
    Bursts,
    /// Every watch stream closed every second.
    WatchesClosed,
    /// History compacted (`410 Gone`) and watches closed every second.
    HistoryCompacted,
    /// The API server paused for 30 s once W is set.
    Paused,
}

impl Fault {
    fn row(self) -> &'static str {
        match self {
            Self::Baseline => "none (the baseline)",
            Self::Conflicts => "409 Conflict on every write, 2 s of every 3 s",
            Self::Bursts => {
                "bursts of 429, 500 or 503 on every request, 0.3 s long, 0.7–2.9 s apart"
            }
            Self::WatchesClosed => "every watch stream closed every 1 s",
            Self::HistoryCompacted => "410 Gone: history compacted and watches closed every 1 s",
            Self::Paused => "the API server paused for 30 s once W is set",
        }
    }

    /// Injects the fault until the handover ends (`done`); what it injected.
    async fn inject(
        self,
        faults: FaultInjector,
        fbgds: Api<FlinkBlueGreenDeployment>,
        mut done: watch::Receiver<bool>,
    ) -> String {
        match self {
            Self::Baseline => "nothing injected".to_owned(),
            Self::Conflicts => {
                let on = Duration::from_secs(2);
                let n = windows(&faults, &mut done, on, &[Duration::from_secs(1)], |_| {
                    for verb in WRITES {
                        faults.fail_next(RequestMatch::verb(verb), u32::MAX, 409);
                    }
                })
                .await;
                format!("{n} windows")
            }
            Self::Bursts => {
                // Irregular gaps: a period equal to the controller's retry interval would meet
                // every retry in a burst, which no real storm does.
                let gaps = [1300, 700, 2100, 1700, 900, 2900, 1100].map(Duration::from_millis);
                let on = Duration::from_millis(300);
                let bursts = windows(&faults, &mut done, on, &gaps, |i| {
                    faults.fail_next(RequestMatch::any(), u32::MAX, [429, 500, 503][i % 3]);
                })
                .await;
                format!("{bursts} bursts")
            }
            Self::WatchesClosed => {
                let closed = every_second(&mut done, || faults.close_watches()).await;
                format!("closed {closed} times")
            }
            Self::HistoryCompacted => {
                let compacted = every_second(&mut done, || {
                    faults.compact_history();
                    faults.close_watches();
                })
                .await;
                format!("compacted {compacted} times")
            }
            Self::Paused => {
                let Some(at) = reached(&fbgds, Phase::ToggleSet).await else {
                    return "the handover ended before the pause".to_owned();
                };
                faults.pause();
                tokio::time::sleep(Duration::from_secs(30)).await;
                faults.resume();
                format!("paused 30 s in {at:?}")
            }
        }
    }
}

/// Runs the handover from blue to green with `fault` beside it until it converges; judges and
/// records it.
async fn handover_under(fault: Fault, test: &str) -> anyhow::Result<()> {
    let row = fault.row();
    let (stack, calls) = proxied_on_blue().await?;
    let (done_tx, done_rx) = watch::channel(false);
    let started = Instant::now();
    set_image(&stack, "v2").await?;
    let injected = tokio::spawn(fault.inject(stack.server.faults(), stack.fbgds(), done_rx));
    let steady = steady(&stack, Color::Green).await;
    let _ = done_tx.send(true);
    let injected = injected.await?;
    stack.server.faults().clear();
    stack.server.faults().resume();
    if let Err(e) = steady {
        let status = stack.fbgds().get(NAME).await?.status;
        anyhow::bail!(
            "{e} under {row} ({injected}); status: {}\n{}",
            serde_json::to_string_pretty(&status)?,
            stack.diagnose(NAME).await
        );
    }
    let took = started.elapsed();
    if std::env::var_os("XDEBUG").is_some() {
        let status_writes = status_writes(&calls, started);
        eprintln!("{row}: {} status writes", status_writes.len());
        let bodies: Vec<_> = status_writes
            .into_iter()
            .filter(|w| w.status == 200)
            .map(|w| w.response["status"].clone())
            .collect();
        for pair in bodies.windows(2).skip(20).take(2) {
            eprintln!("A: {}", serde_json::to_string(&pair[0]).unwrap_or_default());
            eprintln!("B: {}", serde_json::to_string(&pair[1]).unwrap_or_default());
        }
    }
    let verdict = judge(&stack, calls.gate.writes()).await?;
    report(row, &injected, took, &verdict, test)?;
    stack.shutdown().await;
    Ok(())
}

/// The controller's status writes answered after `since`, in order.
fn status_writes(calls: &ControllerCalls, since: Instant) -> Vec<Write> {
    calls
        .gate
        .writes()
        .into_iter()
        .filter(|w| {
            w.path
                .split('?')
                .next()
                .is_some_and(|p| p.ends_with("/status"))
                && w.at > since
        })
        .collect()
}

/// Sleeps `d` unless the handover ends first; `false` when it ended.
async fn pause_or_done(done: &mut watch::Receiver<bool>, d: Duration) -> bool {
    let ended = tokio::select! {
        () = tokio::time::sleep(d) => false,
        _ = done.wait_for(|d| *d) => true,
    };
    !ended && !*done.borrow()
}

/// Until the handover ends: `inject` (the fault of window `i`, from 0), `on` long, then the
/// faults cleared for the next of `gaps` (cycled); how many windows.
async fn windows(
    faults: &FaultInjector,
    done: &mut watch::Receiver<bool>,
    on: Duration,
    gaps: &[Duration],
    mut inject: impl FnMut(usize),
) -> usize {
    let mut windows = 0;
    for gap in gaps.iter().cycle() {
        inject(windows);
        windows += 1;
        let more = pause_or_done(done, on).await;
        faults.clear();
        if !more || !pause_or_done(done, *gap).await {
            break;
        }
    }
    windows
}

/// Calls `act` every second until the handover ends; how many times.
async fn every_second(done: &mut watch::Receiver<bool>, mut act: impl FnMut()) -> usize {
    let mut times = 0;
    while pause_or_done(done, Duration::from_secs(1)).await {
        act();
        times += 1;
    }
    times
}

/// One test per row: `name: fault;` runs [`handover_under`] under `fault`.
macro_rules! rows {
    ($($test:ident: $fault:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() -> anyhow::Result<()> {
            handover_under($fault, stringify!($test)).await
        }
    )*};
}

rows! {
    without_faults_the_same_handover_is_the_baseline: Fault::Baseline;
    conflicts_on_every_write_for_a_while_only_delay_the_handover: Fault::Conflicts;
    bursts_of_429_500_and_503_only_delay_the_handover: Fault::Bursts;
    watch_streams_closed_every_second_do_not_stall_the_handover: Fault::WatchesClosed;
    compacted_history_410_gone_makes_watchers_relist_and_the_handover_goes_on: Fault::HistoryCompacted;
    the_api_server_paused_for_30_seconds_makes_the_handover_wait: Fault::Paused;
}

/// A replica with leader election whose calls go through its own proxies.
struct Proxied {
    calls: ControllerCalls,
    replica: Replica,
}

async fn replica(stack: &LocalStack, identity: &str) -> anyhow::Result<Proxied> {
    let calls =
        ControllerCalls::start(stack.server.config(), &stack.flink.rest_url_template()).await?;
    let ctx = Arc::new(calls.context(identity)?);
    Ok(Proxied {
        calls,
        replica: Replica::start(ctx, identity),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_failover_mid_handover_fences_the_old_leaders_late_writes() -> anyhow::Result<()> {
    let stack = stack().await?;
    let a = replica(&stack, "replica-a").await?;
    let b = replica(&stack, "replica-b").await?;
    let (old, new) = if wait_for_leader(&[&a.replica, &b.replica]).await? == 0 {
        (a, b)
    } else {
        (b, a)
    };
    stack.create(NAME, spec("v1")).await?;
    stack.wait_steady(NAME, Color::Blue, WAIT).await?;
    // The leader freezes at its first Flink REST write of the handover (the savepoint trigger):
    // its status already says Snapshotting, the request is in flight, and every later call of it
    // (lease renewals included) hangs too. The standby takes over once the lease expires.
    old.calls.gate.count(Hold::From(Arc::new(|c: &Call| {
        c.upstream == Upstream::FlinkRest && c.is_write()
    })));
    let started = Instant::now();
    set_image(&stack, "v2").await?;
    let frozen = old
        .calls
        .gate
        .wait_held(WAIT)
        .await
        .ok_or_else(|| anyhow::anyhow!("the leader made no Flink write"))?;
    let before_freeze = old.calls.gate.write_count();
    let deadline = Instant::now() + WAIT;
    while !new.replica.leads() {
        anyhow::ensure!(Instant::now() < deadline, "the standby did not take over");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The new leader gets past the savepoint; then the old one wakes up with its stale request.
    reached(&stack.fbgds(), Phase::ConfirmingToggle).await;
    old.calls.gate.release();
    steady(&stack, Color::Green).await?;
    let took = started.elapsed();
    old.replica.shut_down().await;
    // Its writes after it woke up, counted by what they were and how the server answered.
    let mut late: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for w in old.calls.gate.writes_since(before_freeze) {
        let path = w.path.split('?').next().unwrap_or_default().to_owned();
        let mut last: Vec<&str> = path.rsplit('/').take(2).collect();
        last.reverse();
        let what = match last.as_slice() {
            [_, "savepoints"] => "savepoints".to_owned(),
            other => other.join("/"),
        };
        *late
            .entry(format!("{} {what} → {}", w.method, w.status))
            .or_default() += 1;
    }
    let late: Vec<String> = late
        .into_iter()
        .map(|(what, n)| format!("{n} × {what}"))
        .collect();
    anyhow::ensure!(
        !late.is_empty(),
        "the old leader made no write after it woke up"
    );
    if std::env::var_os("XDEBUG").is_some() {
        let t0 = started;
        for (who, g) in [("old", &old.calls.gate), ("new", &new.calls.gate)] {
            for w in g.writes() {
                if w.at > t0 {
                    eprintln!(
                        "{who} {:>6} ms {} {} -> {}",
                        (w.at - t0).as_millis(),
                        w.method,
                        w.path.split('?').next().unwrap_or_default(),
                        w.status
                    );
                }
            }
        }
    }
    let mut writes = old.calls.gate.writes();
    writes.extend(new.calls.gate.writes());
    let verdict = judge(&stack, writes).await?;
    report(
        "leader failover: the leader frozen mid-handover, its calls delivered late",
        &format!(
            "held before `{}`; its late writes: {}",
            frozen.call,
            late.join(", ")
        ),
        took,
        &verdict,
        "a_leader_failover_mid_handover_fences_the_old_leaders_late_writes",
    )?;
    new.replica.shut_down().await;
    stack.shutdown().await;
    Ok(())
}

/// Whether `w`'s request wrote a status with no handover in progress: the write that finishes
/// the handover (its record at the head of the history).
fn finishes_the_handover(w: &Write) -> bool {
    w.request
        .pointer("/status/transition")
        .is_none_or(serde_json::Value::is_null)
        && w.request.pointer("/status/history/0/outcome") == Some(&"Promoted".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_status_write_that_finishes_the_handover_is_counted_once() -> anyhow::Result<()> {
    const REFUSALS: u32 = 2;
    let (stack, calls) = proxied_on_blue().await?;
    let ctx = Arc::clone(&stack.ctx);
    let metrics = &ctx.metrics;
    let promoted = || metrics.handovers.with_label_values(&["Promoted"]).get();
    let (promoted_before, timed_before) =
        (promoted(), metrics.handover_duration.get_sample_count());
    // The controller deletes the outgoing child after it wrote the status that says so; once
    // the child is gone, its next status write finishes the handover. Hold it at that deletion,
    // make the API server refuse the next status writes with 409, and let it go on.
    let outgoing = format!("/flinkdeployments/{NAME}-blue");
    calls.gate.count(Hold::From(Arc::new(move |c: &Call| {
        c.upstream == Upstream::Kubernetes
            && c.method == "DELETE"
            && c.path
                .split('?')
                .next()
                .is_some_and(|p| p.ends_with(&outgoing))
    })));
    let started = Instant::now();
    set_image(&stack, "v2").await?;
    calls
        .gate
        .wait_held(WAIT)
        .await
        .ok_or_else(|| anyhow::anyhow!("the controller did not delete the outgoing child"))?;
    anyhow::ensure!(
        promoted() == promoted_before,
        "counted before the handover finished"
    );
    let status_write = RequestMatch::verb(Verb::Update)
        .resource("flinkbluegreendeployments")
        .name(NAME)
        .subresource("status");
    stack.server.faults().fail_next(status_write, REFUSALS, 409);
    let released = Instant::now();
    calls.gate.release();
    steady(&stack, Color::Green).await?;
    let took = started.elapsed();
    stack.server.faults().clear();
    // The status writes after the release: the finishing one refused REFUSALS times, then
    // written. (Before the hold, a status write may have met the test's own spec change: a 409
    // of its own.) The test's own watch may see the status before the proxy has recorded the
    // write that made it, and before the controller has read the answer and counted it: wait
    // for both.
    let deadline = Instant::now() + WAIT;
    let writes = loop {
        let writes = status_writes(&calls, released);
        let accepted = writes.iter().any(|w| w.status == 200);
        // The duration is observed after the counter went up.
        let counted = metrics.handover_duration.get_sample_count() > timed_before;
        if accepted && counted || Instant::now() >= deadline {
            break writes;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let refusals = usize::try_from(REFUSALS)?;
    let finishing: Vec<(u16, bool)> = writes
        .iter()
        .take(refusals + 1)
        .map(|w| (w.status, finishes_the_handover(w)))
        .collect();
    let mut expected = vec![(409, true); refusals];
    expected.push((200, true));
    anyhow::ensure!(
        finishing == expected,
        "the status writes after the release (status, whether it finishes the handover): \
         {finishing:?}, not {expected:?}"
    );
    let (counted, timed) = (
        promoted() - promoted_before,
        metrics.handover_duration.get_sample_count() - timed_before,
    );
    anyhow::ensure!(
        (counted, timed) == (1, 1),
        "bluegreen_controller_handovers_total{{outcome=\"Promoted\"}} went up by {counted} and \
         bluegreen_controller_handover_duration_seconds counted {timed} for one handover whose \
         finishing status write was refused {REFUSALS} times"
    );
    let verdict = judge(&stack, calls.gate.writes()).await?;
    report(
        "409 Conflict on the status write that finishes the handover",
        &format!("refused {REFUSALS} times, then written; counted once in the handover metrics"),
        took,
        &verdict,
        "a_refused_status_write_that_finishes_the_handover_is_counted_once",
    )?;
    stack.shutdown().await;
    Ok(())
}
