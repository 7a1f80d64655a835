//! Least privilege, proven: the controller runs as its own ServiceAccount with only the RBAC that
//! `deploy/` installs (the `kubectl kustomize deploy/` output, applied to the local API server
//! with authentication and RBAC on), and
//!
//! - it works: deploy, two handovers (blue to green and back), 0 duplicates and 0 losses,
//!   delete, without a single refused request;
//! - removing any one right (one verb of one rule) breaks something named: the API server
//!   refuses the controller exactly that verb on that resource, and the controller's own log
//!   shows that 403 (or the scenario stops).
//!
//! Simulated Flink (20x), one bed per removed right, several at a time.

mod rbac_bed;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bluegreen_examples::reliability::{Trial, record};
use bluegreen_local_apiserver::Denial;
use rbac_bed::{
    Bed, INSTALL_NAMESPACE, Right, SIDECAR_RBAC_FROM_CONTROLLER, Step, capture_logs, captured_logs,
    install_objects, rights, without,
};

/// The controller's debug lines carry the watcher errors (`reconcile error`), its warnings the
/// failed reconciles and events.
const LOG_FILTER: &str = "warn,bluegreen_controller=debug,least_privilege=debug";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_hands_over_with_only_the_rbac_in_deploy() -> anyhow::Result<()> {
    capture_logs(LOG_FILTER);
    let started = Instant::now();
    let bed = Bed::start(
        INSTALL_NAMESPACE,
        &install_objects(INSTALL_NAMESPACE),
        false,
    )
    .await?;
    bed.run(Step::Deploy, Duration::from_mins(1)).await?;
    bed.run(Step::HandOver, Duration::from_mins(1)).await?;
    bed.run(Step::HandBack, Duration::from_mins(1)).await?;
    let report = bed.report().await?;
    assert!(report.is_exactly_once_by_owner(), "{report}");
    assert!(
        report.total.duplicates == 0 && report.total.losses == 0,
        "{report}"
    );
    bed.run(Step::Delete, Duration::from_mins(1)).await?;
    let denials = bed.server.denials();
    assert!(
        denials.is_empty(),
        "nothing may be refused with the RBAC in deploy/: {denials:#?}"
    );
    println!(
        "handover with the RBAC in deploy/ (sidecars as themselves: {SIDECAR_RBAC_FROM_CONTROLLER}): {:.1} s, {report}",
        started.elapsed().as_secs_f64()
    );
    record(&Trial {
        area: "Least privilege".into(),
        fault:
            "the controller with only the RBAC in deploy/, the gates as the job's ServiceAccount"
                .into(),
        runs: 1,
        outcome: "deploy, two handovers and delete complete; no request refused".into(),
        duplicates: Some(report.total.duplicates),
        losses: Some(report.total.losses),
        figures: format!("{:.1} s", started.elapsed().as_secs_f64()),
        test: "least_privilege::the_controller_hands_over_with_only_the_rbac_in_deploy".into(),
    })?;
    bed.shutdown().await;
    Ok(())
}

/// How one removal was found out.
#[derive(Debug)]
struct Finding {
    right: Right,
    denial: Option<Denial>,
    /// The controller's log line naming the 403.
    logged: Option<String>,
    /// The step that did not finish, if one did not.
    stuck: Option<Step>,
    /// The steps that finished.
    finished: Vec<Step>,
    seconds: f64,
}

impl Finding {
    fn proven(&self) -> bool {
        self.denial.is_some() && (self.logged.is_some() || self.stuck.is_some())
    }
}

/// How long each step may take before the scenario counts as stopped.
fn step_timeout(step: Step) -> Duration {
    match step {
        Step::Deploy | Step::Delete => Duration::from_secs(40),
        Step::HandOver | Step::HandBack => Duration::from_secs(80),
    }
}

/// The controller's refusal of `right`, if the server recorded one.
fn denial_of(bed: &Bed, right: &Right) -> Option<Denial> {
    bed.controller_denials().into_iter().find(|d| {
        d.code == 403
            && d.verb == right.verb
            && right.groups.contains(&d.group)
            && right.resources.contains(&d.resource)
    })
}

/// A line of the controller's log that names that refusal (the 403's message quotes the user,
/// the verb and the resource).
fn logged(bed: &Bed, denial: &Denial) -> Option<String> {
    let needle = format!(
        "User \"{}\" cannot {} resource \"{}\" in API group \"{}\"",
        bed.controller_user(),
        denial.verb,
        denial.resource,
        denial.group
    );
    captured_logs()
        .lines()
        .map(|l| l.replace('\\', ""))
        .find(|l| l.contains(&needle))
}

/// Runs the scenario on a bed without `right` until the removal is found out or the scenario
/// stops.
async fn remove(index: usize, right: Right) -> anyhow::Result<Finding> {
    let started = Instant::now();
    let namespace = format!("bg-r{index:02}");
    let objects = without(&install_objects(&namespace), &right);
    let bed = Bed::start(&namespace, &objects, false).await?;
    let mut finding = Finding {
        right,
        denial: None,
        logged: None,
        stuck: None,
        finished: Vec::new(),
        seconds: 0.0,
    };
    'steps: for step in [Step::Deploy, Step::HandOver, Step::HandBack, Step::Delete] {
        bed.begin(step).await?;
        let deadline = Instant::now() + step_timeout(step);
        loop {
            finding.denial = denial_of(&bed, &finding.right);
            if let Some(d) = &finding.denial {
                finding.logged = logged(&bed, d);
                if finding.logged.is_some() {
                    break 'steps;
                }
            }
            if bed.done(step).await? {
                finding.finished.push(step);
                break;
            }
            if Instant::now() > deadline {
                finding.stuck = Some(step);
                break 'steps;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    finding.seconds = started.elapsed().as_secs_f64();
    bed.shutdown().await;
    Ok(finding)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_any_one_right_of_the_controllers_rbac_breaks_something_named()
-> anyhow::Result<()> {
    capture_logs(LOG_FILTER);
    let started = Instant::now();
    let all = rights(&install_objects(INSTALL_NAMESPACE));
    assert!(
        all.len() >= 20,
        "the install grants {} rights: {all:#?}",
        all.len()
    );
    // Several beds at a time: most removals show within seconds of the start.
    let permits = Arc::new(tokio::sync::Semaphore::new(6));
    let tasks: Vec<_> = all
        .into_iter()
        .enumerate()
        .map(|(i, right)| {
            let permits = Arc::clone(&permits);
            tokio::spawn(async move {
                let _permit = permits.acquire_owned().await?;
                remove(i, right).await
            })
        })
        .collect();
    let mut findings = Vec::new();
    for task in tasks {
        findings.push(task.await??);
    }
    let mut table = String::new();
    for f in &findings {
        let how = match (&f.logged, f.stuck) {
            (Some(_), _) => "the controller logs the 403".to_owned(),
            (None, Some(step)) => format!("{step:?} does not finish"),
            (None, None) => "NOT FOUND OUT".to_owned(),
        };
        let _ = writeln!(
            table,
            "{:<60} {:>5.1} s  after {:?}: {how}{}",
            f.right.to_string(),
            f.seconds,
            f.finished,
            f.denial.as_ref().map_or_else(
                || " (no 403 recorded)".to_owned(),
                |d| format!(" — {}", d.message)
            )
        );
    }
    println!(
        "{} rights removed one at a time in {:.1} s:\n{table}",
        findings.len(),
        started.elapsed().as_secs_f64()
    );
    let logged = findings.iter().filter(|f| f.logged.is_some()).count();
    record(&Trial {
        area: "Least privilege".into(),
        fault: "one right of the controller's RBAC removed (each of them, one bed each)".into(),
        runs: u32::try_from(findings.len())?,
        outcome: format!(
            "{} of {} found out: the API server refuses exactly that verb ({logged} named in the controller's log, the rest stop a step)",
            findings.iter().filter(|f| f.proven()).count(),
            findings.len()
        ),
        duplicates: None,
        losses: None,
        figures: format!("{:.1} s for all", started.elapsed().as_secs_f64()),
        test:
            "least_privilege::removing_any_one_right_of_the_controllers_rbac_breaks_something_named"
                .into(),
    })?;
    // kube's event recorder patches an event only when the same event repeats (its series);
    // whether the scenario repeats one depends on timing, so that one right is reported when
    // the scenario did not exercise it rather than failed (seen in CI; docs/reliability.md).
    let series_patch = |f: &&Finding| {
        f.right.verb == "patch"
            && f.right.resources.iter().any(|r| r == "events")
            && f.denial.is_none()
            && f.stuck.is_none()
    };
    for f in findings.iter().filter(series_patch) {
        println!("not exercised by this run (no event repeated): {}", f.right);
    }
    let unproven: Vec<_> = findings
        .iter()
        .filter(|f| !f.proven() && !series_patch(f))
        .collect();
    assert!(
        unproven.is_empty(),
        "removing these rights broke nothing named:\n{table}\n{unproven:#?}"
    );
    Ok(())
}
