//! Bad specs applied to a running deployment on the local stack (issue 14, item 5; the whole table
//! is `controller/src/checks/tests.rs`): each is refused — by the API server (a 422 naming the
//! field) or by the controller (`Degraded/InvalidSpec` and a Warning event naming the field and the
//! fix) — and the running job is untouched: the same job id, no handover started, no green child.
//! Putting the spec back clears the condition.

use std::time::Duration;

use bluegreen_controller::resource::FlinkBlueGreenDeployment;
use bluegreen_examples::reliability::{Trial, record};
use bluegreen_examples::{LocalStack, NAMESPACE, StackOptions, orders_job};
use bluegreen_local_flink::DeploymentRef;
use bluegreen_protocol::Color;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_mins(1);
const TEST: &str =
    "bad_specs::bad_specs_are_refused_naming_the_field_and_the_running_job_is_untouched";

/// Records a row of the "Bad specs on a running deployment" table.
fn record_refusal(case: &str, outcome: &str, figures: String) -> anyhow::Result<()> {
    record(&Trial {
        area: "Bad specs on a running deployment".into(),
        fault: case.into(),
        runs: 1,
        outcome: outcome.into(),
        duplicates: None,
        losses: None,
        figures,
        test: TEST.into(),
    })?;
    Ok(())
}

fn degraded(f: &FlinkBlueGreenDeployment) -> (String, String, String) {
    f.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Degraded"))
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

/// The id of the job `name-color` runs now.
fn job_id(stack: &LocalStack, name: &str, color: Color) -> Option<String> {
    stack
        .flink
        .job(&DeploymentRef::new(
            NAMESPACE,
            format!("{name}-{}", color.suffix()),
        ))
        .map(|job| job.job_id.clone())
}

async fn child_exists(stack: &LocalStack, name: &str) -> anyhow::Result<bool> {
    let children: Api<DynamicObject> = Api::namespaced_with(
        stack.client.clone(),
        NAMESPACE,
        &bluegreen_controller::context::flink_deployment_resource(),
    );
    Ok(children.get_opt(name).await?.is_some())
}

/// What must not change while a bad spec is refused: blue's job id, the epoch and the history.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Running {
    blue_job: Option<String>,
    epoch: u64,
    handovers: usize,
}

async fn running(stack: &LocalStack) -> anyhow::Result<Running> {
    let status = stack
        .fbgds()
        .get("orders")
        .await?
        .status
        .unwrap_or_default();
    Ok(Running {
        blue_job: job_id(stack, "orders", Color::Blue),
        epoch: status.epoch,
        handovers: status.history.len(),
    })
}

/// Blue still runs the same job and nothing else happened: no handover in the status (none in
/// progress, none finished, the same epoch), no green child, no green job.
async fn assert_untouched(stack: &LocalStack, before: &Running, case: &str) -> anyhow::Result<()> {
    let fbgd = stack.fbgds().get("orders").await?;
    let status = fbgd.status.clone().unwrap_or_default();
    assert_eq!(status.active_color, Some(Color::Blue), "{case}");
    assert!(status.transition.is_none(), "{case}: no handover started");
    assert_eq!(
        &running(stack).await?,
        before,
        "{case}: the same blue job, epoch and history"
    );
    assert!(
        !child_exists(stack, "orders-green").await?,
        "{case}: no green child"
    );
    assert!(job_id(stack, "orders", Color::Green).is_none(), "{case}");
    Ok(())
}

/// The Warning events about `object` with reason InvalidSpec.
async fn invalid_spec_events(stack: &LocalStack, object: &str) -> anyhow::Result<Vec<String>> {
    let events: Api<Event> = Api::namespaced(stack.client.clone(), NAMESPACE);
    Ok(events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some("InvalidSpec")
                && e.type_.as_deref() == Some("Warning")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(object)
        })
        .filter_map(|e| e.note)
        .collect())
}

/// Waits for `Degraded/InvalidSpec` naming `field` and the Warning event with the same message.
async fn wait_refused(
    stack: &LocalStack,
    name: &str,
    field: &str,
    fix: &str,
) -> anyhow::Result<String> {
    let fbgd = stack
        .wait_for(name, WAIT, &format!("InvalidSpec naming {field}"), |f| {
            let (status, reason, message) = degraded(f);
            status == "True" && reason == "InvalidSpec" && message.contains(&format!("`{field}`"))
        })
        .await?;
    let message = degraded(&fbgd).2;
    assert!(
        message.contains(fix),
        "{field}: the fix {fix:?} in {message}"
    );
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if invalid_spec_events(stack, name)
            .await?
            .iter()
            .any(|note| note == &message)
        {
            return Ok(message);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no InvalidSpec event for {field}: {:?}",
            invalid_spec_events(stack, name).await?
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_healthy(stack: &LocalStack, case: &str) -> anyhow::Result<()> {
    stack
        .wait_for("orders", WAIT, &format!("{case}: Degraded False"), |f| {
            degraded(f).0 == "False"
        })
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_specs_are_refused_naming_the_field_and_the_running_job_is_untouched()
-> anyhow::Result<()> {
    let mut stack = LocalStack::start(StackOptions::default()).await?;
    stack.start_controller();
    stack.create("orders", orders_job("v1", 2)).await?;
    stack.wait_steady("orders", Color::Blue, WAIT).await?;
    let before = running(&stack).await?;
    assert!(before.blue_job.is_some(), "blue runs");

    // Refused by the controller: (case, bad patch, field, fix, the patch that puts it back).
    let refused_by_the_controller: [(&str, Value, &str, &str, Value); 4] = [
        (
            "parallelism 0",
            json!({"template": {"spec": {"job": {"parallelism": 0}}}}),
            "spec.template.spec.job.parallelism",
            "at least 1",
            json!({"template": {"spec": {"job": {"parallelism": 2}}}}),
        ),
        (
            "a template the upstream FlinkDeployment schema refuses",
            json!({"template": {"spec": {"mode": "cluster", "taskManager": {"replicas": "two"}}}}),
            "spec.template.spec.mode",
            r#""native", "standalone""#,
            json!({"template": {"spec": {"mode": null, "taskManager": {"replicas": null}}}}),
        ),
        (
            "an absurd duration",
            json!({"coordination": {"deploymentDeletionDelay": "10000h"}}),
            "spec.coordination.deploymentDeletionDelay",
            "at most 7 days",
            json!({"coordination": {"deploymentDeletionDelay": "1s"}}),
        ),
        (
            "W in the past, with a new image",
            json!({"template": {"spec": {"image": "example.com/orders:v2"}},
                   "coordination": {"toggle": {"offset": null, "value": 1_000}}}),
            "spec.coordination.toggle.value",
            "set a later value",
            json!({"template": {"spec": {"image": "example.com/orders:v1"}},
                   "coordination": {"toggle": {"offset": "10s", "value": null}}}),
        ),
    ];
    for (case, bad, field, fix, back) in refused_by_the_controller {
        let started = std::time::Instant::now();
        stack.patch_spec("orders", bad).await?;
        let message = wait_refused(&stack, "orders", field, fix).await?;
        let refused_in = started.elapsed();
        println!("{case}: {message}");
        // Keep it refused for a while: no resync starts anything either.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_untouched(&stack, &before, case).await?;
        stack.patch_spec("orders", back).await?;
        wait_healthy(&stack, case).await?;
        assert_untouched(&stack, &before, case).await?;
        record_refusal(
            case,
            "Degraded/InvalidSpec and a Warning event naming the field and the fix; the running job untouched; cleared when put back",
            format!("refused in {} ms; names `{field}`", refused_in.as_millis()),
        )?;
    }

    // Refused by the API server (our CRD's schema): the spec never changes.
    for (case, bad, field) in [
        (
            "unknown restoreFrom",
            json!({"coordination": {"restoreFrom": "latest"}}),
            "spec.coordination.restoreFrom",
        ),
        (
            "missing template",
            json!({"template": null}),
            "spec.template",
        ),
        (
            "parallelism not a number",
            json!({"template": {"spec": {"job": {"parallelism": "two"}}}}),
            "spec.template.spec.job.parallelism",
        ),
    ] {
        let error = stack
            .patch_spec("orders", bad)
            .await
            .expect_err("the API server refuses it");
        let text = format!("{error:#}");
        assert!(text.contains(field), "{case}: {text}");
        println!("{case}: {text}");
        assert_untouched(&stack, &before, case).await?;
        record_refusal(
            case,
            "refused by the API server (the CRD's schema): the stored spec unchanged",
            format!("422 names `{field}`"),
        )?;
    }
    assert_eq!(degraded(&stack.fbgds().get("orders").await?).0, "False");

    a_name_too_long_creates_nothing(&stack, &before).await?;
    stack.shutdown().await;
    Ok(())
}

/// A name too long for the children: nothing is created at all, and the running job is untouched.
async fn a_name_too_long_creates_nothing(
    stack: &LocalStack,
    before: &Running,
) -> anyhow::Result<()> {
    let long = "orders-with-a-name-that-is-far-too-long0";
    stack.create(long, orders_job("v1", 2)).await?;
    let message = wait_refused(stack, long, "metadata.name", "at most 39").await?;
    println!("name too long: {message}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    for color in [Color::Blue, Color::Green] {
        assert!(!child_exists(stack, &format!("{long}-{}", color.suffix())).await?);
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(stack.client.clone(), NAMESPACE);
    assert!(
        configmaps
            .get_opt(&format!("{long}-bluegreen"))
            .await?
            .is_none()
    );
    assert_untouched(stack, before, "another resource").await?;
    record_refusal(
        "a name too long for the children (40 characters)",
        "Degraded/InvalidSpec naming metadata.name; no child, no ConfigMap; other resources untouched",
        "names `metadata.name`, at most 39".into(),
    )?;
    Ok(())
}
