//! Deletion: `plan_cleanup(&Observed) -> Plan`, the finalizer's decisions per `onDelete` policy
//! (pure).
//!
//! Under `savepointThenDelete` the final savepoint is a stop-with-savepoint of the only job: the
//! stop commits the sink's output at the savepoint, so a resource re-created from it (which
//! starts blue, with no W and no floor) finds no committable of the other color left to skip. A
//! handover in progress ends first: before W is set it is aborted (the incoming job, which has
//! emitted nothing, deleted), once W is set it is finished (promoted without waiting for a person
//! or the deletion delay, the outgoing job stopped with a savepoint), so that one job holds every
//! record's state. The stop's trigger id derives from the resource's uid, so a retried cleanup
//! finds, rather than repeats, the stop it asked for.

use std::time::Duration;

use bluegreen_protocol::Color;

use super::{Action, Note, Plan, STEADY_REQUEUE, final_savepoint_trigger_id, plan};
use crate::conditions::{ConditionType, Reason};
use crate::events::EventReason;
use crate::observed::{Observed, SavepointObs};
use crate::resource::{DeletionPolicy, FlinkBlueGreenDeploymentStatus, Phase, Promotion};

/// Whether the deletion of a resource with `status` under `policy` first ends its handover (one
/// that deployed the incoming job), so that the cleanup needs the full observation.
pub fn ends_handover_first(
    policy: DeletionPolicy,
    status: &FlinkBlueGreenDeploymentStatus,
) -> bool {
    policy == DeletionPolicy::SavepointThenDelete
        && status
            .transition
            .as_ref()
            .is_some_and(|t| t.from.is_some() && t.phase != Phase::Snapshotting)
}

/// Plans one cleanup of a resource being deleted. Idempotent, and correct when no handover ever
/// ran. The status is left as observed, except while a handover ends first.
pub fn plan_cleanup(obs: &Observed) -> Plan {
    let policy = obs.spec.coordination.on_delete;
    if ends_handover_first(policy, &obs.status) {
        return end_handover(obs);
    }
    let mut notes = Vec::new();
    let actions = match policy {
        DeletionPolicy::Orphan => Color::ALL.iter().copied().map(Action::Orphan).collect(),
        DeletionPolicy::SavepointThenDelete => match final_savepoint(obs, &mut notes) {
            Some(waiting) => waiting,
            None => delete_all(),
        },
        DeletionPolicy::Delete => delete_all(),
    };
    Plan {
        status: obs.status.clone(),
        actions,
        notes,
        requeue_after: STEADY_REQUEUE,
        finished: None,
    }
}

/// One step of the handover the deletion waits for, planned as `plan` plans it with promotion
/// `auto` and no deletion delay, a handover before W being aborted; the finalizer is kept and
/// `Progressing` says why (`DeletionWaitsForHandover`, also an Event the first time).
fn end_handover(obs: &Observed) -> Plan {
    let mut ending = obs.clone();
    if let Ok(valid) = ending.valid.as_mut() {
        valid.settings.promotion = Promotion::Auto;
        valid.settings.deletion_delay = Duration::ZERO;
    }
    let mut w_set = true;
    if let Some(t) = ending.status.transition.as_mut()
        && matches!(t.phase, Phase::Deploying | Phase::ConfirmingToggle)
    {
        // The incoming job has emitted nothing: deleting it loses nothing.
        w_set = false;
        t.phase = Phase::Aborting;
        t.abort_reason = Some(format!(
            "{}: the resource is being deleted before W was set",
            Reason::DeletionWaitsForHandover
        ));
    }
    let mut p = plan(&ending);
    let why = if w_set {
        "W is set, so the handover is finished first (promoted now, the outgoing job stopped with a savepoint)"
    } else {
        "W is not set, so the handover is aborted first (the incoming job deleted)"
    };
    let waiting = Reason::DeletionWaitsForHandover.as_str();
    let noticed = obs
        .status
        .conditions
        .iter()
        .any(|c| c.type_ == ConditionType::Progressing.as_str() && c.reason == waiting);
    if let Some(c) = p
        .status
        .conditions
        .iter_mut()
        .find(|c| c.type_ == ConditionType::Progressing.as_str() && c.status == "True")
    {
        c.message = format!(
            "the resource is being deleted: {why}, then the only job is stopped with the final savepoint; now {}: {}",
            c.reason, c.message
        );
        waiting.clone_into(&mut c.reason);
    }
    if !noticed {
        p.notes.push(Note {
            warning: false,
            reason: EventReason::DeletionWaitsForHandover,
            message: format!(
                "deletion waits for the handover: {why}, then the only job is stopped with the final savepoint"
            ),
        });
    }
    p.actions.push(Action::AwaitFinalSavepoint);
    p
}

/// Both children, then the ConfigMap.
fn delete_all() -> Vec<Action> {
    let mut actions: Vec<Action> = Color::ALL
        .iter()
        .copied()
        .map(Action::DeleteChild)
        .collect();
    actions.push(Action::DeleteConfigMap);
    actions
}

/// The actions that wait for the final stop-with-savepoint of the active job, or `None` (with a
/// note when it ended) once deleting may go on: there is no active job with a job id, or its
/// stop completed or failed.
fn final_savepoint(obs: &Observed, notes: &mut Vec<Note>) -> Option<Vec<Action>> {
    let active = obs.status.active_color?;
    let child = obs.child(active).filter(|c| c.job_id.is_some())?;
    match child.flink.as_ref().and_then(|f| f.savepoint.clone()) {
        Some(SavepointObs::Completed(path)) => {
            notes.push(Note {
                warning: false,
                reason: EventReason::FinalSavepoint,
                message: format!("final savepoint of the {} job at {path}", active.suffix()),
            });
            None
        }
        Some(SavepointObs::Failed(why)) => {
            notes.push(Note {
                warning: true,
                reason: EventReason::FinalSavepointFailed,
                message: format!("final savepoint failed ({why}); deleting anyway"),
            });
            None
        }
        Some(SavepointObs::InProgress) => Some(vec![Action::AwaitFinalSavepoint]),
        Some(SavepointObs::Unknown) | None => Some(vec![
            Action::StopJob {
                color: active,
                trigger_id: final_savepoint_trigger_id(&obs.uid),
                drain: false,
            },
            Action::AwaitFinalSavepoint,
        ]),
    }
}

#[cfg(test)]
mod tests {
    use bluegreen_protocol::Color;

    use super::plan_cleanup;
    use crate::events::EventReason;
    use crate::fixtures::{observed, running, with_child};
    use crate::handover::Action;
    use crate::handover::final_savepoint_trigger_id;
    use crate::observed::{ChildObs, FlinkObs, Observed, SavepointObs};
    use crate::resource::DeletionPolicy;

    /// What the active (blue) child looks like when the resource is deleted.
    #[derive(Clone, Copy, Debug)]
    enum Active {
        /// No color was ever active (deleted during the first deployment).
        Never,
        /// The active child is gone.
        Missing,
        /// The active child has no job id yet.
        NoJob,
        /// The final savepoint was not triggered yet (or the job forgot it).
        NotTriggered,
        /// The final savepoint is being taken.
        InProgress,
        /// The final savepoint completed.
        Completed,
        /// The final savepoint failed.
        Failed,
    }

    const EVENTS: [Active; 7] = [
        Active::Never,
        Active::Missing,
        Active::NoJob,
        Active::NotTriggered,
        Active::InProgress,
        Active::Completed,
        Active::Failed,
    ];

    fn deleting(policy: DeletionPolicy, active: Active) -> Observed {
        let mut obs = observed();
        obs.spec.coordination.on_delete = policy;
        obs.status.active_color = Some(Color::Blue);
        let savepoint = match active {
            Active::Never => {
                obs.status.active_color = None;
                None
            }
            Active::Missing | Active::NoJob | Active::NotTriggered => None,
            Active::InProgress => Some(SavepointObs::InProgress),
            Active::Completed => Some(SavepointObs::Completed("file:///sp/final".into())),
            Active::Failed => Some(SavepointObs::Failed("disk full".into())),
        };
        let blue = match active {
            Active::Missing => None,
            Active::NoJob => Some(ChildObs {
                job_id: None,
                flink: None,
                ..running("h1", 0, 0, None, 0)
            }),
            _ => Some(ChildObs {
                flink: Some(FlinkObs {
                    savepoint,
                    ..FlinkObs::default()
                }),
                ..running("h1", 0, 0, None, 0)
            }),
        };
        let obs = with_child(obs, Color::Blue, blue);
        with_child(obs, Color::Green, Some(running("h1", 0, 0, None, 0)))
    }

    fn delete_all() -> Vec<Action> {
        vec![
            Action::DeleteChild(Color::Blue),
            Action::DeleteChild(Color::Green),
            Action::DeleteConfigMap,
        ]
    }

    #[test]
    fn orphan_drops_both_owner_references_and_nothing_else_in_every_case() {
        for active in EVENTS {
            let obs = deleting(DeletionPolicy::Orphan, active);
            let p = plan_cleanup(&obs);
            assert_eq!(
                p.actions,
                vec![Action::Orphan(Color::Blue), Action::Orphan(Color::Green)],
                "{active:?}"
            );
            assert!(p.notes.is_empty(), "{active:?}");
            assert_eq!(p.status, obs.status, "{active:?}: the status is left alone");
        }
    }

    #[test]
    fn delete_deletes_both_children_then_the_configmap_in_every_case() {
        for active in EVENTS {
            let obs = deleting(DeletionPolicy::Delete, active);
            let p = plan_cleanup(&obs);
            assert_eq!(p.actions, delete_all(), "{active:?}");
            assert!(p.notes.is_empty(), "{active:?}");
            assert_eq!(p.status, obs.status, "{active:?}");
        }
    }

    #[test]
    fn savepoint_then_delete_stops_the_active_job_with_the_final_savepoint_and_waits_for_it() {
        let trigger = final_savepoint_trigger_id("uid-1");
        for active in EVENTS {
            let obs = deleting(DeletionPolicy::SavepointThenDelete, active);
            let p = plan_cleanup(&obs);
            let (actions, note) = match active {
                Active::Never | Active::Missing | Active::NoJob => (delete_all(), None),
                Active::NotTriggered => (
                    vec![
                        Action::StopJob {
                            color: Color::Blue,
                            trigger_id: trigger.clone(),
                            drain: false,
                        },
                        Action::AwaitFinalSavepoint,
                    ],
                    None,
                ),
                Active::InProgress => (vec![Action::AwaitFinalSavepoint], None),
                Active::Completed => (delete_all(), Some((EventReason::FinalSavepoint, false))),
                Active::Failed => (
                    delete_all(),
                    Some((EventReason::FinalSavepointFailed, true)),
                ),
            };
            assert_eq!(p.actions, actions, "{active:?}");
            let notes: Vec<_> = p.notes.iter().map(|n| (n.reason, n.warning)).collect();
            assert_eq!(notes, note.into_iter().collect::<Vec<_>>(), "{active:?}");
            assert_eq!(p.status, obs.status, "{active:?}");
        }
    }

    #[test]
    fn the_final_savepoint_note_names_the_job_and_the_path() {
        let p = plan_cleanup(&deleting(
            DeletionPolicy::SavepointThenDelete,
            Active::Completed,
        ));
        assert_eq!(
            p.notes[0].message,
            "final savepoint of the blue job at file:///sp/final"
        );
    }

    #[test]
    fn a_retried_cleanup_asks_for_the_same_savepoint_and_another_resource_for_its_own() {
        let first = plan_cleanup(&deleting(
            DeletionPolicy::SavepointThenDelete,
            Active::NotTriggered,
        ));
        let again = plan_cleanup(&deleting(
            DeletionPolicy::SavepointThenDelete,
            Active::NotTriggered,
        ));
        assert_eq!(first, again);
        assert_ne!(
            final_savepoint_trigger_id("uid-1"),
            final_savepoint_trigger_id("uid-2")
        );
        assert_eq!(final_savepoint_trigger_id("uid-1").len(), 32);
    }
}
