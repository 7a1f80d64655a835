//! Gathers what `plan` and `plan_cleanup` need: the children, the ConfigMap and Flink's REST API
//! (I/O only).

use bluegreen_protocol::flink::{JobStatus, LifecycleState, ReconciliationState, Reported};
use bluegreen_protocol::{Color, CoordinationState, configmap_name};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::checks::validate_resource;
use crate::child::{ANNOTATION_TEMPLATE_HASH, child_name, spec_hash};
use crate::clusters::{Reach, Reaches, Unusable};
use crate::context::{Context, flink_deployment_resource};
use crate::error::{Error, Result};
use crate::flink_rest::FlinkRest;
use crate::handover::{ends_handover_first, final_savepoint_trigger_id};
use crate::names::ACTION_ANNOTATION;
use crate::names::ManualAction;
use crate::observed::{ChildObs, ConfigMapObs, FlinkObs, JobState, Observed};
use crate::remote_gate;
use crate::resource::{DeletionPolicy, FlinkBlueGreenDeployment, Phase};

/// Observes one resource, each child in the cluster it runs in; with the clusters it resolved,
/// for `execute`. REST failures are not errors: that child's `flink` is `None` and the plan
/// waits. A cluster that cannot be used refuses the spec (`Observed::valid`), naming the field
/// that names it, and its child is not looked for.
pub async fn observe(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
) -> Result<(Observed, Reaches)> {
    let namespace = fbgd
        .namespace()
        .ok_or(Error::MissingMetadata("namespace"))?;
    let name = fbgd.name_any();
    let status = fbgd.status.clone().unwrap_or_default();
    let configmap = observe_configmap(ctx, &namespace, &name).await?;
    let (reaches, mut unusable) = ctx
        .clusters
        .resolve(
            &ctx.client,
            &ctx.rest_url_template,
            &namespace,
            fbgd.spec.cluster.as_deref(),
            &status.clusters,
        )
        .await;
    // The gates there need this cluster's API server.
    if let Some(Err(e)) = fbgd
        .spec
        .cluster
        .as_deref()
        .map(|c| remote_gate::home_server(c, &ctx.home_api))
    {
        unusable.target.get_or_insert(e);
    }
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
    // The incoming job before W is set: whether it has stayed up (`coordination.minReady`).
    let incoming_before_w = status
        .transition
        .as_ref()
        .filter(|t| matches!(t.phase, Phase::Deploying | Phase::ConfirmingToggle))
        .map(|t| t.to);
    // The outgoing job during a handover: whether it has stayed up (a restart replays from a
    // checkpoint below W), for promotion and for its stop after W is set.
    let outgoing = status
        .transition
        .as_ref()
        .filter(|t| t.phase != Phase::Aborting)
        .and_then(|t| t.from);
    let mut children = [None, None];
    for (slot, color) in children.iter_mut().zip([Color::Blue, Color::Green]) {
        let savepoint = trigger
            .as_ref()
            .filter(|(c, _)| *c == color)
            .map(|(_, id)| id.as_str());
        let child = child_name(&name, color);
        let reads = Reads {
            failed_checkpoints: incoming_after_w == Some(color),
            readiness: incoming_before_w == Some(color) || outgoing == Some(color),
        };
        let Some(reach) = reaches.get(status.clusters.of(color)) else {
            continue;
        };
        *slot = observe_child(ctx, reach, &child, savepoint, reads).await?;
    }
    let [blue, green] = children;
    let observed = assemble(fbgd, configmap, blue, green, unusable);
    Ok((observed, reaches))
}

/// Observes a resource being deleted: its children as Kubernetes reports them and, under
/// `onDelete: savepointThenDelete`, the final savepoint of the active job (a REST failure is an
/// error: deletion waits rather than skip the savepoint), or everything `observe` reads while
/// the handover in progress ends first. A cluster a child runs in that cannot be used is an
/// error: deletion waits rather than leave that child behind.
pub async fn observe_deletion(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
) -> Result<(Observed, Reaches)> {
    let status = fbgd.status.clone().unwrap_or_default();
    if ends_handover_first(fbgd.spec.coordination.on_delete, &status) {
        let (observed, reaches) = observe(ctx, fbgd).await?;
        // A child not looked for is not gone.
        for color in [Color::Blue, Color::Green] {
            if reaches.get(status.clusters.of(color)).is_none() {
                return Err(Error::ClusterUnresolved(color));
            }
        }
        return Ok((observed, reaches));
    }
    let namespace = fbgd
        .namespace()
        .ok_or(Error::MissingMetadata("namespace"))?;
    let name = fbgd.name_any();
    let configmap = observe_configmap(ctx, &namespace, &name).await?;
    let (reaches, unusable) = ctx
        .clusters
        .resolve(
            &ctx.client,
            &ctx.rest_url_template,
            &namespace,
            None,
            &status.clusters,
        )
        .await;
    if let Some(down) = unusable.running {
        tracing::warn!(deployment = %name, why = %down.why, "deletion waits for a cluster");
    }
    let final_savepoint = fbgd
        .status
        .as_ref()
        .and_then(|s| s.active_color)
        .filter(|_| fbgd.spec.coordination.on_delete == DeletionPolicy::SavepointThenDelete);
    let trigger = final_savepoint_trigger_id(&fbgd.uid().unwrap_or_default());
    let mut children = [None, None];
    for (slot, color) in children.iter_mut().zip([Color::Blue, Color::Green]) {
        let child = child_name(&name, color);
        let reach = reaches
            .get(status.clusters.of(color))
            .ok_or(Error::ClusterUnresolved(color))?;
        let api: Api<DynamicObject> = Api::namespaced_with(
            reach.client.clone(),
            &reach.namespace,
            &flink_deployment_resource(),
        );
        let Some(found) = api.get_opt(&child).await? else {
            continue;
        };
        let mut obs = child_obs(&found)?;
        if let Some(job_id) = obs
            .job_id
            .clone()
            .filter(|_| final_savepoint == Some(color))
        {
            let rest = FlinkRest::new(
                ctx.http.clone(),
                &reach.rest_url_template,
                &reach.namespace,
                &child,
            );
            obs.flink = Some(FlinkObs {
                savepoint: Some(rest.savepoint_status(&job_id, &trigger).await?),
                ..FlinkObs::default()
            });
        }
        *slot = Some(obs);
    }
    let [blue, green] = children;
    Ok((
        assemble(fbgd, configmap, blue, green, Unusable::default()),
        reaches,
    ))
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

/// The observation of `fbgd` with what was found of its ConfigMap and children, and which
/// clusters could not be used (`unusable`).
fn assemble(
    fbgd: &FlinkBlueGreenDeployment,
    configmap: ConfigMapObs,
    blue: Option<ChildObs>,
    green: Option<ChildObs>,
    unusable: Unusable,
) -> Observed {
    let target = unusable.target.map_or(Ok(()), Err);
    let job = &fbgd.spec.template.spec.job;
    Observed {
        now: jiff::Timestamp::now(),
        generation: fbgd.metadata.generation.unwrap_or(0),
        uid: fbgd.uid().unwrap_or_default(),
        valid: validate_resource(&fbgd.name_any(), &fbgd.spec)
            .and_then(|valid| target.map(|()| valid)),
        cluster_down: unusable.running,
        template_hash: spec_hash(&fbgd.spec),
        initial_savepoint: job.initial_savepoint_path.clone(),
        redeploy_nonce: job.savepoint_redeploy_nonce,
        wanted_job_state: job
            .state
            .as_deref()
            .and_then(JobState::parse)
            .unwrap_or_default(),
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

/// What `observe_child` reads beyond a running job's usual view.
struct Reads {
    /// An ended job's latest checkpoint (the incoming job after W, for a forward repair).
    failed_checkpoints: bool,
    /// When a running job's tasks started (the incoming job before W, the outgoing one always).
    readiness: bool,
}

/// The child `name` in the cluster `reach` reaches, with its REST API's view.
async fn observe_child(
    ctx: &Context,
    reach: &Reach,
    name: &str,
    savepoint: Option<&str>,
    reads: Reads,
) -> Result<Option<ChildObs>> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        reach.client.clone(),
        &reach.namespace,
        &flink_deployment_resource(),
    );
    let Some(child) = api.get_opt(name).await? else {
        return Ok(None);
    };
    let mut obs = child_obs(&child)?;
    let Some(job_id) = obs.job_id.clone() else {
        return Ok(Some(obs));
    };
    let rest = FlinkRest::new(
        ctx.http.clone(),
        &reach.rest_url_template,
        &reach.namespace,
        name,
    );
    let flink = if obs.running() {
        rest.observe(&job_id, savepoint, reads.readiness).await
    } else if let Some(trigger) = savepoint {
        // A stopped job still answers for its stop-with-savepoint.
        rest.savepoint_status(&job_id, trigger)
            .await
            .map(|s| FlinkObs {
                savepoint: Some(s),
                ..FlinkObs::default()
            })
    } else if reads.failed_checkpoints && obs.failed() {
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

/// A child FlinkDeployment as Kubernetes reports it (nothing from its REST API yet); an error
/// when the Apache operator's status or the child's job spec has another shape.
fn child_obs(child: &DynamicObject) -> Result<ChildObs> {
    let status: ChildStatus = typed(child.data.get("status"))?;
    let spec: ChildSpec = typed(child.data.get("spec"))?;
    let job = status.job_status.unwrap_or_default();
    let behind = match (status.observed_generation, child.metadata.generation) {
        (Some(observed), Some(generation)) => observed < generation,
        _ => false,
    };
    let upgrading = behind
        || status
            .reconciliation_status
            .and_then(|r| r.state)
            .is_some_and(|s| s.is(ReconciliationState::Upgrading));
    Ok(ChildObs {
        template_hash: child.annotations().get(ANNOTATION_TEMPLATE_HASH).cloned(),
        deleting: child.metadata.deletion_timestamp.is_some(),
        lifecycle: status.lifecycle_state,
        job_state: job.state,
        job_id: job.job_id,
        error: status.error,
        spec_job_state: spec.job.and_then(|j| j.state),
        restart_nonce: spec.restart_nonce,
        upgrading,
        flink: None,
    })
}

/// `value` (absent or null: the default) as a `T`.
fn typed<T: DeserializeOwned + Default>(value: Option<&Value>) -> Result<T> {
    match value {
        None | Some(Value::Null) => Ok(T::default()),
        Some(value) => Ok(T::deserialize(value)?),
    }
}

/// `status` of a FlinkDeployment, as far as the controller reads it.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ChildStatus {
    #[serde(default)]
    lifecycle_state: Option<Reported<LifecycleState>>,
    #[serde(default)]
    job_status: Option<ChildJobStatus>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    observed_generation: Option<i64>,
    #[serde(default)]
    reconciliation_status: Option<ReconciliationStatus>,
}

/// `status.reconciliationStatus` of a FlinkDeployment.
#[derive(Deserialize, Default)]
struct ReconciliationStatus {
    #[serde(default)]
    state: Option<Reported<ReconciliationState>>,
}

/// `status.jobStatus` of a FlinkDeployment.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ChildJobStatus {
    #[serde(default)]
    state: Option<Reported<JobStatus>>,
    #[serde(default)]
    job_id: Option<String>,
}

/// `spec` of a FlinkDeployment, as far as the controller reads it.
#[derive(Deserialize, Default)]
struct ChildSpec {
    #[serde(default)]
    job: Option<ChildJob>,
    #[serde(default, rename = "restartNonce")]
    restart_nonce: Option<i64>,
}

/// `spec.job` of a FlinkDeployment.
#[derive(Deserialize, Default)]
struct ChildJob {
    #[serde(default)]
    state: Option<JobState>,
}

#[cfg(test)]
mod tests {
    use bluegreen_protocol::flink::{JobStatus, LifecycleState};
    use kube::api::DynamicObject;
    use serde_json::json;

    use super::child_obs;
    use crate::observed::JobState;

    /// The child `orders-blue` (template hash h1) with `data` (its spec and status).
    fn child(data: serde_json::Value) -> DynamicObject {
        let mut object = json!({
            "apiVersion": "flink.apache.org/v1beta1",
            "kind": "FlinkDeployment",
            "metadata": {"name": "orders-blue", "annotations": {"bluegreen.dev/template-hash": "h1"}},
        });
        if let (Some(object), serde_json::Value::Object(data)) = (object.as_object_mut(), data) {
            object.extend(data);
        }
        serde_json::from_value(object).expect("a DynamicObject")
    }

    #[test]
    fn the_child_status_is_read_by_field_and_a_changed_shape_is_an_error() {
        let obs = child_obs(&child(json!({
            "spec": {"job": {"state": "running", "jarURI": "local:///job.jar"}},
            "status": {
                "lifecycleState": "STABLE",
                "jobStatus": {"state": "RUNNING", "jobId": "j1", "startTime": "1"},
                "error": null,
            },
        })))
        .expect("the operator's shape");
        assert_eq!(obs.template_hash.as_deref(), Some("h1"));
        assert_eq!(obs.lifecycle, Some(LifecycleState::Stable.into()));
        assert_eq!(obs.job_state, Some(JobStatus::Running.into()));
        assert_eq!(obs.job_id.as_deref(), Some("j1"));
        assert_eq!(obs.spec_job_state, Some(JobState::Running));
        assert!(obs.running());
        assert!(
            !obs.upgrading,
            "no generation to compare, nothing upgrading"
        );
        let fresh = child_obs(&child(json!({"spec": {}}))).expect("no status yet");
        assert_eq!(fresh.job_state, None);
        // The operator has not seen the latest spec, or is applying it: upgrading.
        let generation = |observed: i64, state: &str| {
            let mut c = child(json!({"status": {
                "observedGeneration": observed,
                "reconciliationStatus": {"state": state},
            }}));
            c.metadata.generation = Some(3);
            child_obs(&c).expect("the operator's shape").upgrading
        };
        assert!(
            generation(2, "DEPLOYED"),
            "spec generation 3 not observed yet"
        );
        assert!(generation(3, "UPGRADING"), "observed, being applied");
        assert!(!generation(3, "DEPLOYED"), "applied");
        for changed in [
            json!({"status": {"jobStatus": "RUNNING"}}),
            json!({"status": {"jobStatus": {"jobId": 7}}}),
            json!({"status": {"lifecycleState": ["STABLE"]}}),
            json!({"spec": {"job": {"state": true}}}),
            json!({"spec": {"job": {"state": "paused"}}}),
        ] {
            assert!(child_obs(&child(changed.clone())).is_err(), "{changed}");
        }
    }
}
