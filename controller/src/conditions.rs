//! The `Ready`, `Progressing` and `Degraded` conditions (pure).

use jiff::Timestamp;

use crate::resource::{Condition, Phase};

/// What one planning step concluded about the resource's health.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Health {
    /// The active job runs and no handover is in progress.
    pub ready: bool,
    /// Reason and message of work in progress.
    pub progressing: Option<(String, String)>,
    /// Reason and message of a problem that needs attention.
    pub degraded: Option<(String, String)>,
}

impl Health {
    /// Records work in progress.
    pub fn progressing(&mut self, reason: &str, message: String) {
        self.progressing = Some((reason.to_owned(), message));
    }

    /// Records a problem.
    pub fn degraded(&mut self, reason: &str, message: String) {
        self.degraded = Some((reason.to_owned(), message));
    }
}

/// Sets the three conditions from `health`, keeping `lastTransitionTime` when a status is
/// unchanged.
pub fn update(
    conditions: &mut Vec<Condition>,
    health: &Health,
    phase: Option<Phase>,
    generation: i64,
    now: Timestamp,
) {
    let ready = health.ready && phase.is_none() && health.degraded.is_none();
    let (ready_reason, ready_message) = if ready {
        ("Running", "the active job is running".to_owned())
    } else if let Some(phase) = phase {
        ("HandoverInProgress", format!("handover in phase {phase:?}"))
    } else {
        (
            "NotReady",
            health.degraded.as_ref().map_or_else(
                || "the active job is not running".into(),
                |(_, m)| m.clone(),
            ),
        )
    };
    set(
        conditions,
        "Ready",
        ready,
        ready_reason,
        ready_message,
        generation,
        now,
    );
    match &health.progressing {
        Some((reason, message)) if phase.is_some() => {
            set(
                conditions,
                "Progressing",
                true,
                reason,
                message.clone(),
                generation,
                now,
            );
        }
        _ => set(
            conditions,
            "Progressing",
            false,
            "Idle",
            "no handover in progress".into(),
            generation,
            now,
        ),
    }
    match &health.degraded {
        Some((reason, message)) => set(
            conditions,
            "Degraded",
            true,
            reason,
            message.clone(),
            generation,
            now,
        ),
        None => set(
            conditions,
            "Degraded",
            false,
            "AsExpected",
            "no problem found".into(),
            generation,
            now,
        ),
    }
}

fn set(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: String,
    generation: i64,
    now: Timestamp,
) {
    let status = if status { "True" } else { "False" }.to_owned();
    let existing = conditions.iter_mut().find(|c| c.type_ == type_);
    let last_transition_time = match &existing {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => now.to_string(),
    };
    let condition = Condition {
        type_: type_.to_owned(),
        status,
        reason: reason.to_owned(),
        message,
        last_transition_time,
        observed_generation: Some(generation),
    };
    match existing {
        Some(c) => *c = condition,
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_transition_time_changes_only_with_the_status() {
        let mut conditions = Vec::new();
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let t1: Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        let mut health = Health {
            ready: true,
            ..Health::default()
        };
        update(&mut conditions, &health, None, 1, t0);
        update(&mut conditions, &health, None, 1, t1);
        let ready = conditions.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.last_transition_time, t0.to_string());
        health.degraded("X", "broken".into());
        update(&mut conditions, &health, None, 2, t1);
        let ready = conditions.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.last_transition_time.clone()),
            ("False", t1.to_string())
        );
        let degraded = conditions.iter().find(|c| c.type_ == "Degraded").unwrap();
        assert_eq!(
            (degraded.status.as_str(), degraded.reason.as_str()),
            ("True", "X")
        );
    }
}
