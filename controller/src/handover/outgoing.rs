//! The outgoing job while a handover runs: how long it has run without a restart, and its restart
//! when it fails for good after W is set.
//!
//! Its gates' reports count as "past W" (for promotion and for its stop) only once it has run
//! `coordination.minReady` without a restart: a restart replays from its last checkpoint, which
//! can lie below W, and Flink's metric store can serve the previous attempt's report for up to
//! `metrics.fetcher.update-interval`. A FAILED outgoing job is never deleted: its records
//! `t <= W` after its last checkpoint exist only in that checkpoint, so it is restarted from it
//! (`spec.restartNonce`) and stopped with a savepoint once it is past W again.

use std::time::Duration;

use bluegreen_protocol::Color;

use super::{Action, Planner};
use crate::conditions::Reason;
use crate::events::EventReason;
use crate::names::ManualAction;
use crate::observed::{ChildObs, FlinkObs, GateObs};
use crate::resource::{MicroTime, OutgoingRestart, TasksReady};
use crate::settings::Settings;

/// Restarts of a failed outgoing job asked for in one handover before it needs a person.
pub const OUTGOING_RESTARTS: u32 = 3;

impl Planner<'_> {
    /// Follows the outgoing job in `transition.outgoingReady`: every task RUNNING with the same
    /// start time since a controller time. Returns how long it has been so (`None`: not now).
    /// A new start time starts the wait again; a job that is not running keeps the record (its
    /// next run has another start time).
    pub(super) fn outgoing_readiness(&mut self, outgoing: &ChildObs) -> Option<Duration> {
        let started = outgoing
            .running()
            .then(|| outgoing.flink.as_ref().and_then(|f| f.tasks_started_at))
            .flatten();
        // The restart took effect once the job is seen not FAILED, or FAILED as another job: a
        // restarted job can fail again between two observations.
        if let Some(restart) = &mut self.transition().outgoing_restart
            && (!outgoing.failed() || outgoing.job_id != restart.failed_job_id)
        {
            restart.ran = true;
        }
        let started = started?;
        let now = MicroTime(self.now());
        let previous = self.transition().outgoing_ready.clone();
        let (record, restarted) = TasksReady::follow(previous, started, now);
        if let Some(was) = restarted {
            self.note(
                true,
                EventReason::OutgoingRestarted,
                format!(
                    "the outgoing job's tasks restarted (start time {started} ms, was {was} ms): it may replay from a checkpoint below W, so its gates count as past W only once it has run minReady again"
                ),
            );
        }
        let since = record.since.clone();
        self.transition().outgoing_ready = Some(record);
        Some(self.since(&since))
    }

    /// Adds the outgoing job's gates as seen now to `transition.outgoingGates` (the most seen
    /// per vertex), while it runs.
    pub(super) fn record_outgoing_gates(&mut self, outgoing: &ChildObs) {
        let Some(gates) = outgoing
            .flink
            .as_ref()
            .and_then(|f| f.gates.as_ref())
            .filter(|_| outgoing.running())
        else {
            return;
        };
        let recorded = &mut self.transition().outgoing_gates;
        for (vertex, n) in &gates.vertices {
            let most = recorded.entry(vertex.clone()).or_insert(0);
            *most = (*most).max(*n);
        }
    }

    /// The outgoing gates seen in this handover that `gates` lacks, described (`None`: none):
    /// such a gate has neither acknowledged W nor passed it, as far as anyone can tell.
    pub(super) fn outgoing_gates_missing(&self, gates: &GateObs) -> Option<String> {
        let expected = &self.status.transition.as_ref()?.outgoing_gates;
        gates
            .missing(expected)
            .map(|m| format!("outgoing gates that reported before to report again (missing: {m})"))
    }

    /// Why the outgoing job's gate reports cannot be trusted now (`None`: they can): it must
    /// run, and have run `minReady` with every task RUNNING and no restart.
    pub(super) fn outgoing_unsettled(
        &self,
        settings: &Settings,
        outgoing: &ChildObs,
    ) -> Option<String> {
        if !outgoing.running() {
            return Some("the outgoing job to run".into());
        }
        match self.outgoing_up {
            Some(up) if up >= settings.min_ready => None,
            seen => Some(format!(
                "the outgoing job to run {:?} with every task RUNNING and no restart (so far: {})",
                settings.min_ready,
                seen.map_or_else(
                    || "not RUNNING with every task now".to_owned(),
                    |d| format!("{:.1}s", d.as_secs_f64())
                )
            )),
        }
    }

    /// Why the outgoing job cannot be stopped yet without losing records `t <= w` (`None`: it
    /// can): its reports must be trusted and every gate past `w`.
    pub(super) fn outgoing_not_past(
        &self,
        settings: &Settings,
        outgoing: &ChildObs,
        w: i64,
    ) -> Option<String> {
        if let Some(why) = self.outgoing_unsettled(settings, outgoing) {
            return Some(why);
        }
        let gates = outgoing.flink.as_ref().and_then(|f| f.gates.clone());
        if let Some(missing) = gates.as_ref().and_then(|g| self.outgoing_gates_missing(g)) {
            return Some(missing);
        }
        if gates.is_none_or(|g| !g.past(w)) {
            let wm = outgoing.flink.as_ref().and_then(FlinkObs::watermark);
            return Some(format!(
                "the outgoing job's watermark ({}) to pass W = {w} again",
                wm.map_or_else(|| "none".to_owned(), |wm| wm.to_string())
            ));
        }
        None
    }

    /// The outgoing job failed for good after W was set: asks the Flink operator to restart it
    /// from its own latest checkpoint (status first, then the patch), at most
    /// [`OUTGOING_RESTARTS`] times; then waits for a person, who may also delete it
    /// (`bluegreen.dev/action=teardown`), losing its uncommitted records `t <= W`.
    pub(super) fn restart_outgoing(&mut self, from: Color, outgoing: &ChildObs, w: i64) {
        let error = outgoing
            .error
            .clone()
            .unwrap_or_else(|| "no error reported".into());
        let record = self.transition().outgoing_restart.clone();
        let lost =
            "its records t <= W after its last completed checkpoint exist only in that checkpoint";
        if let Some(r) = record
            .as_ref()
            .filter(|r| r.ran && r.attempts >= OUTGOING_RESTARTS)
        {
            if self.consume_action(ManualAction::Teardown) {
                self.note(true, EventReason::OutgoingDeleted, format!("the failed outgoing {from} job is deleted by bluegreen.dev/action=teardown; {lost}, and they are lost"));
                self.actions.push(Action::DeleteChild(from));
                return;
            }
            self.health.degraded(
                Reason::OutgoingRestartFailed,
                format!(
                    "the outgoing {from} job failed again after {} restarts from its latest checkpoint (last: {error}); {lost}. Fix the cause and restart it from that checkpoint (change spec.restartNonce of its FlinkDeployment); set bluegreen.dev/action=teardown to delete it instead, losing them",
                    r.attempts
                ),
            );
            return;
        }
        let now = MicroTime(self.now());
        let epoch = self.transition().epoch;
        let restart = match record {
            // Asked for and not run since: the same nonce again (after a crash, or until the
            // Flink operator acts).
            Some(r) if !r.ran => r,
            previous => {
                let attempts = previous.as_ref().map_or(0, |r| r.attempts) + 1;
                let restart = OutgoingRestart {
                    nonce: restart_nonce(epoch, attempts),
                    attempts,
                    requested_at: now,
                    ran: false,
                    failed_job_id: outgoing.job_id.clone(),
                    error: Some(error.clone()),
                };
                self.note(
                    true,
                    EventReason::OutgoingFailed,
                    format!(
                        "the outgoing {from} job failed after W = {w} was set ({error}); {lost}, so it is restarted from it (restart {attempts} of {OUTGOING_RESTARTS}) and stopped with a savepoint once it is past W again"
                    ),
                );
                self.transition().outgoing_restart = Some(restart.clone());
                restart
            }
        };
        if outgoing.restart_nonce != Some(restart.nonce) {
            self.actions.push(Action::RestartChild {
                color: from,
                nonce: restart.nonce,
            });
        }
        self.health.degraded(
            Reason::OutgoingFailed,
            format!(
                "the outgoing {from} job failed after W = {w} was set ({error}); restarting it from its latest checkpoint (spec.restartNonce = {}, restart {} of {OUTGOING_RESTARTS}), then it is stopped with a savepoint once past W",
                restart.nonce, restart.attempts
            ),
        );
    }
}

/// The `restartNonce` of restart `attempt` of the outgoing job in the handover of `epoch`: the
/// same on every replan, and another for every attempt and handover.
fn restart_nonce(epoch: u64, attempt: u32) -> i64 {
    i64::try_from(epoch)
        .unwrap_or(i64::MAX / 1_000)
        .saturating_mul(1_000)
        .saturating_add(i64::from(attempt))
}
