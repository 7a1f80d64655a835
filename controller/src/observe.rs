//! Gathers what `plan` and `plan_cleanup` need: the children, the ConfigMap and Flink's REST API
//! (I/O only).

use bluegreen_protocol::{Color, CoordinationState, configmap_name};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject};
use serde_json::Value;

use crate::checks::settings_for_plan;
use crate::child::{ANNOTATION_TEMPLATE_HASH, child_name, spec_hash};
use crate::context::{ACTION_ANNOTATION, Context, flink_deployment_resource};
use crate::error::{Error, Result};
use crate::flink_rest::FlinkRest;
use crate::handover::final_savepoint_trigger_id;
use crate::observed::{ChildObs, ConfigMapObs, FlinkObs, ManualAction, Observed};
use crate::resource::{DeletionPolicy, FlinkBlueGreenDeployment, Phase};

/// Observes one resource. REST failures are not errors: that child's `flink` is `None` and the
/// plan waits.
pub async fn observe(ctx: &Context, fbgd: &FlinkBlueGreenDeployment) -> Result<Observed> {
    let namespace = fbgd
        .namespace()
        .ok_or(Error::MissingMetadata("namespace"))?;
    let name = fbgd.name_any();
    let status = fbgd.status.clone().unwrap_or_default();
    let configmap = observe_configmap(ctx, &namespace, &name).await?;
    // The outgoing job's savepoint while snapshotting, its stop-with-savepoint at teardown.
    let trigger = status.transition.as_ref().and_then(|t| {
        let id = if t.phase == Phase::TearingDown {
            t.stop.trigger_id.clone()
        } else {
            t.savepoint_trigger_id.clone()
        };
        t.from.zip(id)
    });
    // The incoming job after W is set: a forward repair needs its latest checkpoint even once
    // it has FAILED.
    let incoming_after_w = status
        .transition
        .as_ref()
        .filter(|t| t.phase == Phase::ToggleSet)
        .map(|t| t.to);
    let mut children = [None, None];
    for (slot, color) in children.iter_mut().zip([Color::Blue, Color::Green]) {
        let savepoint = trigger
            .as_ref()
            .filter(|(c, _)| *c == color)
            .map(|(_, id)| id.as_str());
        let child = child_name(&name, color);
        let failed_checkpoints = incoming_after_w == Some(color);
        *slot = observe_child(ctx, &namespace, &child, savepoint, failed_checkpoints).await?;
    }
    let [blue, green] = children;
    Ok(assemble(fbgd, configmap, blue, green))
}

/// Observes a resource being deleted: its children as Kubernetes reports them and, under
/// `onDelete: savepointThenDelete`, the final savepoint of the active job (a REST failure is an
/// error: deletion waits rather than skip the savepoint).
pub async fn observe_deletion(ctx: &Context, fbgd: &FlinkBlueGreenDeployment) -> Result<Observed> {
    let namespace = fbgd
        .namespace()
        .ok_or(Error::MissingMetadata("namespace"))?;
    let name = fbgd.name_any();
    let configmap = observe_configmap(ctx, &namespace, &name).await?;
    let final_savepoint = fbgd
        .status
        .as_ref()
        .and_then(|s| s.active_color)
        .filter(|_| fbgd.spec.coordination.on_delete == DeletionPolicy::SavepointThenDelete);
    let trigger = final_savepoint_trigger_id(&fbgd.uid().unwrap_or_default());
    let api: Api<DynamicObject> =
        Api::namespaced_with(ctx.client.clone(), &namespace, &flink_deployment_resource());
    let mut children = [None, None];
    for (slot, color) in children.iter_mut().zip([Color::Blue, Color::Green]) {
        let child = child_name(&name, color);
        let Some(mut obs) = api.get_opt(&child).await?.as_ref().map(child_obs) else {
            continue;
        };
        if let Some(job_id) = obs
            .job_id
            .clone()
            .filter(|_| final_savepoint == Some(color))
        {
            let rest = FlinkRest::new(ctx.http.clone(), &ctx.rest_url_template, &namespace, &child);
            obs.flink = Some(FlinkObs {
                savepoint: Some(rest.savepoint_status(&job_id, &trigger).await?),
                ..FlinkObs::default()
            });
        }
        *slot = Some(obs);
    }
    let [blue, green] = children;
    Ok(assemble(fbgd, configmap, blue, green))
}

/// The coordination ConfigMap of the resource `name`.
async fn observe_configmap(ctx: &Context, namespace: &str, name: &str) -> Result<ConfigMapObs> {
    let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), namespace);
    Ok(match configmaps.get_opt(&configmap_name(name)).await? {
        None => ConfigMapObs::Absent,
        Some(cm) => match CoordinationState::from_data(&cm.data.unwrap_or_default()) {
            Ok(state) => ConfigMapObs::Valid(state),
            Err(e) => ConfigMapObs::Invalid(e.to_string()),
        },
    })
}

/// The observation of `fbgd` with what was found of its ConfigMap and children.
fn assemble(
    fbgd: &FlinkBlueGreenDeployment,
    configmap: ConfigMapObs,
    blue: Option<ChildObs>,
    green: Option<ChildObs>,
) -> Observed {
    let job = &fbgd.spec.template.spec.job;
    Observed {
        now: jiff::Timestamp::now(),
        generation: fbgd.metadata.generation.unwrap_or(0),
        uid: fbgd.uid().unwrap_or_default(),
        settings: settings_for_plan(&fbgd.name_any(), &fbgd.spec),
        template_hash: spec_hash(&fbgd.spec),
        initial_savepoint: job.initial_savepoint_path.clone(),
        redeploy_nonce: job.savepoint_redeploy_nonce,
        wanted_job_state: job.state.clone().unwrap_or_else(|| "running".into()),
        status: fbgd.status.clone().unwrap_or_default(),
        configmap,
        blue,
        green,
        action: fbgd
            .annotations()
            .get(ACTION_ANNOTATION)
            .and_then(|v| ManualAction::parse(v)),
        spec: fbgd.spec.clone(),
    }
}

async fn observe_child(
    ctx: &Context,
    namespace: &str,
    name: &str,
    savepoint: Option<&str>,
    failed_checkpoints: bool,
) -> Result<Option<ChildObs>> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(ctx.client.clone(), namespace, &flink_deployment_resource());
    let Some(child) = api.get_opt(name).await? else {
        return Ok(None);
    };
    let mut obs = child_obs(&child);
    let Some(job_id) = obs.job_id.clone() else {
        return Ok(Some(obs));
    };
    let rest = FlinkRest::new(ctx.http.clone(), &ctx.rest_url_template, namespace, name);
    let flink = if obs.running() {
        rest.observe(&job_id, savepoint).await
    } else if let Some(trigger) = savepoint {
        // A stopped job still answers for its stop-with-savepoint.
        rest.savepoint_status(&job_id, trigger)
            .await
            .map(|s| FlinkObs {
                savepoint: Some(s),
                ..FlinkObs::default()
            })
    } else if failed_checkpoints && obs.failed() {
        // Flink keeps an ended job's checkpoint statistics: its own latest checkpoint.
        rest.checkpoints(&job_id).await
    } else {
        return Ok(Some(obs));
    };
    match flink {
        Ok(flink) => obs.flink = Some(flink),
        Err(e) => tracing::warn!(child = name, error = %e, "Flink REST API not reachable"),
    }
    Ok(Some(obs))
}

/// A child FlinkDeployment as Kubernetes reports it (nothing from its REST API yet).
fn child_obs(child: &DynamicObject) -> ChildObs {
    let status = child.data.get("status").cloned().unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().map(str::to_owned);
    ChildObs {
        template_hash: child.annotations().get(ANNOTATION_TEMPLATE_HASH).cloned(),
        deleting: child.metadata.deletion_timestamp.is_some(),
        lifecycle: text(&status["lifecycleState"]),
        job_state: text(&status["jobStatus"]["state"]),
        job_id: text(&status["jobStatus"]["jobId"]),
        error: text(&status["error"]),
        spec_job_state: text(&child.data["spec"]["job"]["state"]),
        flink: None,
    }
}
