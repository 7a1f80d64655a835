//! After promotion: the deletion delay, then the outgoing job stopped with a savepoint (never
//! cancelled) and its child deleted.

use std::time::Duration;

use bluegreen_protocol::Color;

use super::{ACTIVE_REQUEUE, Action, Planner, WATCHED_REQUEUE, stop_trigger_id};
use crate::conditions::Reason;
use crate::events::EventReason;
use crate::names::ManualAction;
use crate::observed::{ChildObs, SavepointObs};
use crate::resource::{MicroTime, Outcome, OutgoingStop, Phase};
use crate::settings::Settings;

impl Planner<'_> {
    pub(super) fn clear_to_teardown(&mut self, settings: &Settings, from: Color) {
        let t = self.transition().clone();
        if let Some(outgoing) = self.obs.child(from).filter(|c| c.failed()).cloned() {
            self.restart_outgoing(from, &outgoing, t.toggle.expect("W is set after promotion"));
            return;
        }
        let early = self.consume_action(ManualAction::Teardown);
        if early || self.since(&t.phase_started_at) >= settings.deletion_delay {
            self.set_phase(Phase::TearingDown);
            self.tearing_down(settings, t.from.expect("handover has an outgoing color"));
        } else {
            self.health.progressing(
                Reason::ClearToTeardown,
                format!("keeping the outgoing job for {:?}", settings.deletion_delay),
            );
        }
    }

    /// Stops the outgoing job with a savepoint, which commits its output, and deletes its child
    /// once the job is FINISHED. A job that cannot be stopped is kept: cancelling it would
    /// discard its uncommitted records `t <= W`.
    pub(super) fn tearing_down(&mut self, settings: &Settings, from: Color) {
        let Some(outgoing) = self.obs.child(from).cloned() else {
            let t = self.transition().clone();
            self.finish_transition(Outcome::Promoted, None);
            let stopped = t
                .stop
                .savepoint
                .map_or_else(String::new, |p| format!("; its final savepoint is {p}"));
            self.note(
                false,
                EventReason::HandoverCompleted,
                format!("{} is the only job{stopped}", t.to),
            );
            self.health.ready = true;
            self.repaired_degraded();
            return;
        };
        if outgoing.deleting {
            self.health.progressing(
                Reason::TearingDown,
                format!("deleting the {} job", from.suffix()),
            );
            return;
        }
        if outgoing.failed() {
            let w = self.transition().toggle.expect("W is set after promotion");
            self.restart_outgoing(from, &outgoing, w);
            return;
        }
        if outgoing.holds_no_output() {
            self.actions.push(Action::DeleteChild(from));
            self.health.progressing(
                Reason::TearingDown,
                format!("deleting the {} job", from.suffix()),
            );
            return;
        }
        let stop = self.transition().stop.clone();
        match (
            &stop.trigger_id,
            outgoing.flink.as_ref().and_then(|f| f.savepoint.clone()),
        ) {
            (None, _) if stop.attempts >= settings.savepoint_attempts => {
                self.stop_given_up(from, &stop);
            }
            (None, _) => self.start_stop(settings, from, &outgoing, &stop),
            (Some(_), Some(SavepointObs::Completed(path))) => {
                if stop.savepoint.as_deref() != Some(&path) {
                    self.note(
                        false,
                        EventReason::OutgoingStopped,
                        format!("the outgoing job committed its output and stopped with a savepoint at {path}"),
                    );
                    self.transition().stop.savepoint = Some(path);
                }
                self.health.progressing(
                    Reason::TearingDown,
                    "waiting for the outgoing job to be FINISHED".into(),
                );
            }
            (Some(_), Some(SavepointObs::Failed(reason))) => self.stop_failed(settings, reason),
            (Some(_), _)
                if stop
                    .since
                    .as_ref()
                    .is_some_and(|s| self.since(s) > settings.savepoint_timeout) =>
            {
                self.stop_failed(
                    settings,
                    format!("no result within {:?}", settings.savepoint_timeout),
                );
            }
            (Some(trigger_id), Some(SavepointObs::Unknown)) if outgoing.running() => {
                // The request may never have arrived (a crash after the status write), or the
                // job restarted since: sent only while it is past W (see `start_stop`).
                let w = self.transition().toggle.expect("W is set after promotion");
                if let Some(why) = self.outgoing_not_past(settings, &outgoing, w) {
                    self.health.progressing(
                        Reason::OutgoingNotReady,
                        format!("waiting for {why}, to stop it with a savepoint"),
                    );
                    return;
                }
                self.actions.push(Action::StopJob {
                    color: from,
                    trigger_id: trigger_id.clone(),
                    drain: stop.drain,
                });
                self.health.progressing(
                    Reason::TearingDown,
                    "stopping the outgoing job with a savepoint".into(),
                );
            }
            (Some(_), _) => self.health.progressing(
                Reason::TearingDown,
                "the outgoing job's stop-with-savepoint is in progress".into(),
            ),
        }
    }

    /// Every stop attempt failed: the job is kept (never cancelled) until a person acts.
    pub(super) fn stop_given_up(&mut self, from: Color, stop: &OutgoingStop) {
        if self.consume_action(ManualAction::Teardown) {
            self.transition().stop.attempts = 0;
            self.note(false, EventReason::OutgoingStopRetried, "retrying the stop-with-savepoint of the outgoing job (bluegreen.dev/action=teardown)");
            self.requeue = ACTIVE_REQUEUE;
            return;
        }
        self.requeue = WATCHED_REQUEUE;
        self.health.degraded(
            Reason::OutgoingStopFailed,
            format!(
                "the outgoing {from} job could not be stopped with a savepoint ({} attempts, last: {}); it keeps running because cancelling it would discard its uncommitted output (records t <= W). Fix the cause and set bluegreen.dev/action=teardown to retry, or stop the job with a savepoint yourself; deleting its FlinkDeployment also finishes the handover, losing that output",
                stop.attempts,
                stop.last_error.as_deref().unwrap_or("unknown"),
            ),
        );
    }

    /// Sends the stop-with-savepoint (after the backoff of a failed attempt), its trigger id
    /// recorded in the status first.
    pub(super) fn start_stop(
        &mut self,
        settings: &Settings,
        from: Color,
        outgoing: &ChildObs,
        stop: &OutgoingStop,
    ) {
        let backoff =
            settings.savepoint_backoff * 2u32.saturating_pow(stop.attempts.saturating_sub(1));
        let waited = stop.since.as_ref().map_or(Duration::MAX, |s| self.since(s));
        let w = self.transition().toggle.expect("W is set after promotion");
        if stop.attempts > 0 && waited < backoff {
            self.health.progressing(
                Reason::TeardownBackoff,
                format!("retrying the stop-with-savepoint of the outgoing job after {backoff:?}"),
            );
        } else if let Some(why) = self.outgoing_not_past(settings, outgoing, w) {
            // A stop now would commit only what a restarted job has replayed so far: its
            // records up to W after that are dropped by the incoming job.
            self.health.progressing(
                Reason::OutgoingNotReady,
                format!("waiting for {why}, to stop it with a savepoint"),
            );
        } else {
            let t = self.transition().clone();
            let trigger_id = stop_trigger_id(&t.template_hash, t.epoch, stop.attempts);
            let drain = outgoing
                .flink
                .as_ref()
                .and_then(|f| f.gates.as_ref())
                .is_some_and(|g| g.relies_on_idleness(w));
            let now = MicroTime(self.now());
            let s = &mut self.transition().stop;
            s.trigger_id = Some(trigger_id.clone());
            s.since = Some(now);
            s.drain = drain;
            if drain {
                self.note(
                    false,
                    EventReason::OutgoingDrained,
                    format!("the outgoing job's watermark is not past W = {w}, only its idle inputs count it past: stopping it with drain, which fires its windows and timers so that their results t <= W are emitted"),
                );
            }
            self.actions.push(Action::StopJob {
                color: from,
                trigger_id,
                drain,
            });
            self.health.progressing(
                Reason::TearingDown,
                if drain {
                    "stopping the outgoing job with a savepoint and drain".into()
                } else {
                    "stopping the outgoing job with a savepoint".into()
                },
            );
        }
    }

    pub(super) fn stop_failed(&mut self, settings: &Settings, reason: String) {
        let now = MicroTime(self.now());
        let s = &mut self.transition().stop;
        s.attempts += 1;
        s.trigger_id = None;
        s.since = Some(now);
        s.last_error = Some(reason.clone());
        let attempts = s.attempts;
        if attempts >= settings.savepoint_attempts {
            self.note(
                true,
                EventReason::OutgoingStopFailed,
                format!("the outgoing job could not be stopped with a savepoint after {attempts} attempts (last: {reason}); it is kept running so that its uncommitted output is not discarded"),
            );
            self.health.degraded(
                Reason::OutgoingStopFailed,
                format!("stop-with-savepoint of the outgoing job failed {attempts} times, last: {reason}; set bluegreen.dev/action=teardown to retry"),
            );
        } else {
            self.note(
                true,
                EventReason::OutgoingStopFailed,
                format!(
                    "stop-with-savepoint attempt {attempts} of {}: {reason}",
                    settings.savepoint_attempts
                ),
            );
            self.health.progressing(Reason::TeardownBackoff, reason);
        }
    }
}
