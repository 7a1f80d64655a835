//! Hand-edited coordination ConfigMaps in the middle of a handover (issue 14, item 5): W is set,
//! both jobs run, promotion waits for a human. Each edit — every key corrupted in turn, every key
//! deleted in turn, the epoch moved back, W moved after it was set, the ConfigMap deleted — is
//! made by replacing the ConfigMap as `kubectl edit` would, and then:
//!
//! - no gate of either job ever applies anything but the last good state (sampled every few ms
//!   until the ConfigMap is good again): a corrupt or illegal state is refused by every gate;
//! - the controller repairs it (a ConfigMap that does not parse, or that it can move on from, is
//!   rewritten from its status) or reports it (`Degraded/ConfigMapDiverged` naming the fix, the
//!   edit left in place) — then the documented fix, deleting the ConfigMap, makes it rewrite it;
//! - after promotion the ledger counts every record once, by the color that owned its event time.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bluegreen_controller::resource::FlinkBlueGreenDeployment;
use bluegreen_examples::reliability::{Trial, record};
use bluegreen_examples::{LocalStack, NAMESPACE, StackOptions, orders_job};
use bluegreen_local_flink::DeploymentRef;
use bluegreen_protocol::{Color, CoordinationState, Toggle, configmap_name, keys};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

const NAME: &str = "orders";
const WAIT: Duration = Duration::from_mins(1);
const TEST: &str = "configmap_edits::hand_edited_configmaps_mid_handover_never_reach_a_gate_and_are_repaired_or_reported";

/// How the controller answered an edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// It wrote the last good state back.
    Repaired,
    /// It reported `Degraded/ConfigMapDiverged` and left the edit for a human.
    Reported,
}

fn condition(f: &FlinkBlueGreenDeployment, type_: &str) -> (String, String, String) {
    f.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

fn d(color: Color) -> DeploymentRef {
    DeploymentRef::new(NAMESPACE, format!("{NAME}-{}", color.suffix()))
}

/// What every gate of both jobs applied now (`None`: a gate that applied nothing yet).
fn gate_states(stack: &LocalStack) -> Vec<(Color, Option<CoordinationState>)> {
    [Color::Blue, Color::Green]
        .into_iter()
        .filter_map(|color| stack.flink.job(&d(color)).map(|job| (color, job)))
        .flat_map(|(color, job)| {
            job.view()
                .gates
                .iter()
                .map(|g| (color, g.snapshot().applied))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The ConfigMap's data now (`None`: it does not exist).
async fn data(cms: &Api<ConfigMap>) -> anyhow::Result<Option<BTreeMap<String, String>>> {
    Ok(cms
        .get_opt(&configmap_name(NAME))
        .await?
        .map(|cm| cm.data.unwrap_or_default()))
}

/// Replaces the ConfigMap's data with `edited` (as `kubectl edit` does: a full replace).
async fn replace(cms: &Api<ConfigMap>, edited: BTreeMap<String, String>) -> anyhow::Result<()> {
    let mut cm = cms.get(&configmap_name(NAME)).await?;
    cm.data = Some(edited);
    cms.replace(&configmap_name(NAME), &PostParams::default(), &cm)
        .await?;
    Ok(())
}

/// One hand edit: its name and the data it leaves (`None`: the ConfigMap is deleted).
struct Edit {
    what: String,
    data: Option<BTreeMap<String, String>>,
}

fn edits(good: &BTreeMap<String, String>, state: &CoordinationState) -> Vec<Edit> {
    let mut edits = Vec::new();
    for key in good.keys() {
        let mut corrupt = good.clone();
        corrupt.insert(key.clone(), "not-a-value".into());
        edits.push(Edit {
            what: format!("`{key}` corrupted"),
            data: Some(corrupt),
        });
        let mut deleted = good.clone();
        deleted.remove(key);
        edits.push(Edit {
            what: format!("`{key}` deleted"),
            data: Some(deleted),
        });
    }
    let back = CoordinationState {
        epoch: state.epoch - 1,
        ..*state
    };
    edits.push(Edit {
        what: "epoch moved back".into(),
        data: Some(back.to_data()),
    });
    let Toggle::Set(w) = state.toggle else {
        unreachable!("the edits are made while W is set")
    };
    let moved = CoordinationState {
        toggle: Toggle::Set(w + 60_000),
        ..*state
    };
    edits.push(Edit {
        what: "W moved 60 s later after it was set".into(),
        data: Some(moved.to_data()),
    });
    edits.push(Edit {
        what: "ConfigMap deleted".into(),
        data: None,
    });
    // An edit that means the same state (an empty key deleted) is no edit.
    edits.retain(|e| {
        e.data
            .as_ref()
            .is_none_or(|d| CoordinationState::from_data(d).ok() != Some(*state))
    });
    edits
}

/// Makes `edit`, then waits until the ConfigMap holds `last_good` again — repaired by the controller,
/// or, once it reported the edit, after the documented fix (deleting the ConfigMap) — while
/// checking every few ms that no gate applies anything but `last_good`.
async fn try_edit(
    stack: &LocalStack,
    cms: &Api<ConfigMap>,
    edit: &Edit,
    last_good: CoordinationState,
) -> anyhow::Result<Answer> {
    let started = Instant::now();
    match &edit.data {
        Some(edited) => replace(cms, edited.clone()).await?,
        None => {
            cms.delete(&configmap_name(NAME), &DeleteParams::default())
                .await?;
        }
    }
    let mut answer = Answer::Repaired;
    loop {
        for (color, applied) in gate_states(stack) {
            anyhow::ensure!(
                applied.is_none_or(|s| s == last_good),
                "{}: a {color} gate applied {applied:?}, not the last good state {last_good}",
                edit.what
            );
        }
        // Good again: the same state (a key whose absence means the same, like an empty
        // `floor`, may stay absent).
        if data(cms)
            .await?
            .is_some_and(|d| CoordinationState::from_data(&d).is_ok_and(|s| s == last_good))
        {
            return Ok(answer);
        }
        let fbgd = stack.fbgds().get(NAME).await?;
        let (status, reason, message) = condition(&fbgd, "Degraded");
        if answer == Answer::Repaired && status == "True" && reason == "ConfigMapDiverged" {
            // Reported, not overwritten: the edit is still there, and the message names the fix.
            anyhow::ensure!(
                data(cms).await? == edit.data,
                "{}: reported, but the ConfigMap changed",
                edit.what
            );
            anyhow::ensure!(message.contains("delete it"), "{}: {message}", edit.what);
            answer = Answer::Reported;
            cms.delete(&configmap_name(NAME), &DeleteParams::default())
                .await?;
        }
        anyhow::ensure!(
            started.elapsed() < WAIT,
            "{}: the ConfigMap was neither repaired nor reported within {WAIT:?}: {:?}\n{}",
            edit.what,
            data(cms).await?,
            stack.diagnose(NAME).await
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_edited_configmaps_mid_handover_never_reach_a_gate_and_are_repaired_or_reported()
-> anyhow::Result<()> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    let mut spec = orders_job("v1", 2);
    spec.coordination.promotion = bluegreen_controller::resource::Promotion::Manual;
    stack.create(NAME, spec).await?;
    stack.wait_steady(NAME, Color::Blue, WAIT).await?;
    stack
        .patch_spec(
            NAME,
            json!({"template": {"spec": {"image": "example.com/orders:v2"}}}),
        )
        .await?;
    stack
        .wait_for(NAME, WAIT, "awaiting promotion", |f| {
            condition(f, "Progressing").1 == "AwaitingPromotion"
        })
        .await?;
    let cms: Api<ConfigMap> = Api::namespaced(stack.client.clone(), NAMESPACE);
    let good = data(&cms).await?.expect("the ConfigMap exists");
    let state = CoordinationState::from_data(&good)?;
    assert!(matches!(state.toggle, Toggle::Set(_)), "{state}");
    // Every gate of both jobs applied the state with W set before anything is edited.
    let deadline = Instant::now() + WAIT;
    while !gate_states(&stack)
        .iter()
        .all(|(_, applied)| *applied == Some(state))
    {
        anyhow::ensure!(
            Instant::now() < deadline,
            "gates: {:?}",
            gate_states(&stack)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        keys::ALL
            .iter()
            .all(|k| good.contains_key(*k) || *k == keys::FLOOR)
    );

    let mut answers = Vec::new();
    for edit in edits(&good, &state) {
        let started = Instant::now();
        let answer = try_edit(&stack, &cms, &edit, state).await?;
        println!(
            "{:<45} {answer:?} in {} ms",
            edit.what,
            started.elapsed().as_millis()
        );
        answers.push((edit.what, answer, started.elapsed()));
    }
    // Some edits the controller can move on from; the illegal ones it must report.
    for (what, answer, _) in &answers {
        if what.starts_with("epoch moved back") || what.starts_with("W moved") {
            assert_eq!(*answer, Answer::Reported, "{what}");
        }
    }

    let patch = json!({"metadata": {"annotations": {"bluegreen.dev/action": "promote"}}});
    stack
        .fbgds()
        .patch(NAME, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let done = stack.wait_steady(NAME, Color::Green, WAIT).await?;
    assert_eq!(condition(&done, "Degraded").0, "False", "{done:?}");
    let report = stack.report(NAME).await?;
    println!("{report}");
    assert!(report.is_exactly_once_by_owner(), "{report}");
    for (what, answer, took) in &answers {
        record(&Trial {
            area: "Hand-edited ConfigMaps (W set, both jobs running)".into(),
            fault: what.clone(),
            runs: 1,
            outcome: match answer {
                Answer::Repaired => "every gate kept the last good state; the controller rewrote it",
                Answer::Reported => {
                    "every gate kept the last good state; Degraded/ConfigMapDiverged, edit left; rewritten once deleted"
                }
            }
            .into(),
            duplicates: Some(report.total.duplicates),
            losses: Some(report.total.losses),
            figures: format!("good again in {} ms", took.as_millis()),
            test: TEST.into(),
        })?;
    }
    stack.shutdown().await;
    Ok(())
}
