//! After W is set: promotion, a template change, an incoming job failing or deleted.

use super::*;

#[test]
fn promotion_waits_for_checkpoints_and_both_watermarks() {
    let w = 70_000;
    let base = handover(Phase::ToggleSet, Some(w));
    let obs = base
        .green(running("h2", 1, 2, Some(71_000), 69_000))
        .blue(running("h1", 1, 2, Some(70_000), 71_000));
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert!(condition(&p, ConditionType::Progressing).1 == "ToggleSet");
    let ready = obs.green(running("h2", 1, 2, Some(72_000), 70_001));
    let p = plan(&ready);
    assert_eq!(
        p.actions,
        vec![write_configmap(
            1,
            Stage::ClearToTeardown,
            Color::Green,
            Toggle::Set(w)
        )]
    );
    assert_eq!(p.status.active_color, Some(Color::Green));
    assert_eq!(p.status.deployed_template_hash.as_deref(), Some("h2"));
    assert_eq!(transition(&p).phase, Phase::ClearToTeardown);
}

#[test]
fn manual_promotion_waits_for_the_annotation() {
    let w = 70_000;
    let mut obs = ready_to_promote(w);
    obs.valid = valid(|s| s.coordination.promotion = crate::resource::Promotion::Manual);
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert_eq!(
        condition(&p, ConditionType::Progressing).1,
        "AwaitingPromotion"
    );
    obs.action = Some(ManualAction::Promote);
    let p = plan(&obs);
    assert_eq!(transition(&p).phase, Phase::ClearToTeardown);
    assert!(p.actions.contains(&Action::ClearManualAction));
}

#[test]
fn a_template_change_after_w_is_set_updates_green_in_place() {
    let mut obs = handover(Phase::ToggleSet, Some(70_000)).green(running("h2", 1, 2, None, 0));
    obs.template_hash = "h3".into();
    let p = plan(&obs);
    assert_eq!(
        p.actions,
        vec![Action::ApplyChild {
            color: Color::Green,
            template_hash: "h3".into(),
            restore_path: None
        }]
    );
    assert_eq!(transition(&p).template_hash, "h3");
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
    // The operator has not applied the update yet: green runs, past W, but it is the job of h2;
    // promotion waits, or a failing update would be found only after the handover.
    let w = 70_000;
    let mut next = ready_to_promote(w);
    next.green.as_mut().unwrap().template_hash = Some("h3".into());
    next.template_hash = "h3".into();
    next.status = p.status.clone();
    next.green.as_mut().unwrap().upgrading = true;
    let p = plan(&next);
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    let (_, reason, message) = condition_message(&p, ConditionType::Progressing);
    assert_eq!(reason, "ToggleSet");
    assert!(message.contains("updated template"), "{message}");
    // Applied: promoted.
    next.green.as_mut().unwrap().upgrading = false;
    assert_eq!(
        transition(&plan(&next)).phase,
        Phase::ClearToTeardown,
        "promoted once the update is applied"
    );
}

#[test]
fn green_failing_after_w_is_set_is_degraded_but_never_aborted() {
    let mut green = running("h2", 1, 2, None, 0);
    green.job_state = Some(JobStatus::Failed.into());
    let obs = handover(Phase::ToggleSet, Some(70_000)).green(green);
    let p = plan(&at(obs, "2026-01-01T05:00:00Z"));
    assert!(p.actions.is_empty());
    assert_eq!(transition(&p).phase, Phase::ToggleSet);
    assert_eq!(
        condition(&p, ConditionType::Degraded),
        ("True", "IncomingFailedAfterToggle")
    );
}

#[test]
fn green_deleted_after_w_is_set_is_not_recreated_from_the_old_savepoint() {
    let obs = handover(Phase::ToggleSet, Some(70_000)).without(Color::Green);
    let p = plan(&obs);
    assert!(p.actions.is_empty());
    assert_eq!(
        condition(&p, ConditionType::Degraded).1,
        "IncomingMissingAfterToggle"
    );
}
