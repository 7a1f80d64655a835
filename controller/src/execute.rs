//! Applies a plan (a handover's or a deletion's): the status first (intent, with the trigger ids
//! of the Flink requests it plans), then each action in order (I/O only); nothing writes the
//! status in between. A child is applied after its gates' Role and RoleBinding, rendered from what
//! validating its spec found.

use bluegreen_protocol::{Color, CoordinationState, check_transition, configmap_name};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::checks::{ValidSpec, validate_spec};
use crate::child::{ChildContext, build, child_name};
use crate::clusters::{Reach, Reaches};
use crate::context::{Context, flink_deployment_resource};
use crate::error::{Error, Result, SpecError};
use crate::flink_rest::FlinkRest;
use crate::gate_rbac;
use crate::handover::{Action, Note, Plan};
use crate::names::{ACTION_ANNOTATION, FIELD_MANAGER};
use crate::remote_gate;
use crate::resource::{
    FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentSpec, FlinkBlueGreenDeploymentStatus,
};

/// Writes the plan's status, then runs its actions; stops at the first failing action (the next
/// reconcile plans again from the written status). `valid` is what validating `fbgd`'s spec found
/// (`Observed::valid`); the plan applies a child only when it is `Ok`. An action on a child goes
/// to the cluster the plan's status records for its color (`status.clusters`), through
/// `reaches`; the ConfigMap, the gates' RBAC and the status stay in this cluster.
pub async fn execute(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
    valid: &Result<ValidSpec, SpecError>,
    reaches: &Reaches,
    plan: &Plan,
) -> Result<()> {
    let namespace = fbgd
        .namespace()
        .ok_or(Error::MissingMetadata("namespace"))?;
    let name = fbgd.name_any();
    let api: Api<FlinkBlueGreenDeployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let reach = |color: Color| {
        reaches
            .get(plan.status.clusters.of(color))
            .ok_or(Error::ClusterUnresolved(color))
    };
    if fbgd.status.clone().unwrap_or_default() != plan.status {
        write_status(&api, fbgd, plan.status.clone()).await?;
    }
    // Only now is the plan's status what the resource says: a failed write (a 409) counts
    // nothing, and its replan counts the same handover once.
    ctx.metrics.status_written(&namespace, &name, &plan.status);
    if let Some(record) = &plan.finished {
        ctx.metrics.handover_finished(record);
    }
    publish(ctx, fbgd, &plan.notes).await;
    for action in &plan.actions {
        tracing::info!(deployment = %name, ?action, "executing");
        match action {
            Action::WriteConfigMap(state) => write_configmap(ctx, fbgd, &namespace, *state).await?,
            Action::ApplyChild {
                color,
                template_hash,
                restore_path,
            } => {
                let from = Render {
                    spec: &fbgd.spec,
                    valid: valid.as_ref().map_err(SpecError::clone)?,
                    template_hash,
                    restore_path: restore_path.as_deref(),
                };
                apply_child(ctx, &plan.status, *color, reaches, fbgd, &from).await?;
            }
            Action::RepairChild {
                color,
                spec,
                template_hash,
                restore_path,
            } => {
                // The child as the spec that last ran well renders it, for the incoming color:
                // that spec is not the resource's, so it is validated here, on its own.
                let repaired = validate_spec(spec)?;
                let from = Render {
                    spec,
                    valid: &repaired,
                    template_hash,
                    restore_path: Some(restore_path),
                };
                apply_child(ctx, &plan.status, *color, reaches, fbgd, &from).await?;
            }
            Action::RestartChild { color, nonce } => {
                let children = children_in(reach(*color)?);
                restart_child(&children, &child_name(&name, *color), *nonce).await?;
            }
            Action::DeleteChild(color) => {
                // The binding first: a crash in between leaves the child, so the replan deletes
                // both; the other way round the binding would outlive it.
                let bindings: Api<RoleBinding> = Api::namespaced(ctx.client.clone(), &namespace);
                delete_if_present(&bindings, &gate_rbac::role_binding_name(&name, *color)).await?;
                let children = children_in(reach(*color)?);
                delete_if_present(&children, &child_name(&name, *color)).await?;
            }
            Action::TriggerSavepoint { color, trigger_id } => {
                let (rest, job_id) = child_rest(ctx, reach(*color)?, fbgd, *color).await?;
                let target = fbgd.spec.coordination.savepoint.target_directory.as_deref();
                rest.trigger_savepoint(&job_id, target, trigger_id).await?;
            }
            Action::StopJob {
                color,
                trigger_id,
                drain,
            } => {
                let (rest, job_id) = child_rest(ctx, reach(*color)?, fbgd, *color).await?;
                let target = fbgd.spec.coordination.savepoint.target_directory.as_deref();
                rest.stop_with_savepoint(&job_id, target, trigger_id, *drain)
                    .await?;
            }
            Action::ClearManualAction => {
                let patch = json!({"metadata": {"annotations": {ACTION_ANNOTATION: null}}});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
            Action::Orphan(color) => {
                orphan(&children_in(reach(*color)?), &child_name(&name, *color)).await?;
            }
            Action::DeleteConfigMap => {
                let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
                delete_if_present(&configmaps, &configmap_name(&name)).await?;
            }
            Action::AwaitFinalSavepoint => return Err(Error::FinalSavepointPending(name)),
        }
    }
    Ok(())
}

/// The FlinkDeployments of the namespace `reach` reaches.
fn children_in(reach: &Reach) -> Api<DynamicObject> {
    Api::namespaced_with(
        reach.client.clone(),
        &reach.namespace,
        &flink_deployment_resource(),
    )
}

/// Drops the owner references of the child `name`, so it outlives the resource; a missing
/// child is already gone.
async fn orphan(children: &Api<DynamicObject>, name: &str) -> Result<()> {
    let patch = json!({"metadata": {"ownerReferences": null}});
    match children
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        result => result.map(drop).map_err(Error::from),
    }
}

/// Deletes `name` (background propagation); a missing object is already deleted.
pub(crate) async fn delete_if_present<K>(api: &Api<K>, name: &str) -> Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// What a child is rendered from.
struct Render<'a> {
    /// The resource's spec, or the one a forward repair redeploys.
    spec: &'a FlinkBlueGreenDeploymentSpec,
    /// What validating `spec` found.
    valid: &'a ValidSpec,
    /// The template's hash, recorded on the child.
    template_hash: &'a str,
    /// `initialSavepointPath` of the child.
    restore_path: Option<&'a str>,
}

/// Server-side applies the child of `color` of `fbgd` rendered `from` in the cluster `status`
/// records for it (`status.clusters`, through `reaches`): in this cluster after its gates' Role
/// and RoleBinding, in another one after its gates' credential for the home ConfigMap
/// (`remote_gate::ensure`).
async fn apply_child(
    ctx: &Context,
    status: &FlinkBlueGreenDeploymentStatus,
    color: Color,
    reaches: &Reaches,
    fbgd: &FlinkBlueGreenDeployment,
    from: &Render<'_>,
) -> Result<()> {
    let namespace = fbgd
        .namespace()
        .ok_or(Error::MissingMetadata("namespace"))?;
    let cluster = status.clusters.of(color);
    let reach = reaches
        .get(cluster)
        .ok_or(Error::ClusterUnresolved(color))?;
    match cluster {
        Some(cluster) if reach.remote => {
            remote_gate::ensure(ctx, fbgd, &namespace, color, cluster, reach).await?;
        }
        _ => apply_gate_rbac(ctx, fbgd, from.valid, &namespace, color).await?,
    }
    let body = child_body(fbgd, reach, color, from)?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    children_in(reach)
        .patch(
            &child_name(&fbgd.name_any(), color),
            &params,
            &Patch::Apply(&body),
        )
        .await?;
    Ok(())
}

/// The server-side-apply body of the child of `color` of `fbgd` in the cluster `reach` reaches,
/// rendered `from`.
fn child_body(
    fbgd: &FlinkBlueGreenDeployment,
    reach: &Reach,
    color: Color,
    from: &Render<'_>,
) -> Result<serde_json::Value> {
    let namespace = fbgd
        .namespace()
        .ok_or(Error::MissingMetadata("namespace"))?;
    let name = fbgd.name_any();
    let uid = fbgd.uid().ok_or(Error::MissingMetadata("uid"))?;
    let owner_api_version = FlinkBlueGreenDeployment::api_version(&()).to_string();
    let owner_kind = FlinkBlueGreenDeployment::kind(&()).to_string();
    let child_ctx = ChildContext {
        deployment: &name,
        namespace: &namespace,
        child_namespace: &reach.namespace,
        owned: !reach.remote,
        owner_uid: &uid,
        owner_api_version: &owner_api_version,
        owner_kind: &owner_kind,
    };
    build(
        &child_ctx,
        from.spec,
        from.valid,
        color,
        from.template_hash,
        from.restore_path,
    )
}

/// Server-side applies the gates' Role and the RoleBinding of the child of `color` to the service
/// account of `valid` (owned by the resource, so they are garbage-collected with it). Runs before
/// every apply of that child, so its TaskManagers can read the ConfigMap from their first start,
/// and repeats harmlessly after a restart.
async fn apply_gate_rbac(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
    valid: &ValidSpec,
    namespace: &str,
    color: Color,
) -> Result<()> {
    let name = fbgd.name_any();
    let owner = apply_gate_role(ctx, fbgd, namespace).await?;
    let binding = gate_rbac::role_binding(namespace, &name, color, &valid.service_account, owner);
    Api::<RoleBinding>::namespaced(ctx.client.clone(), namespace)
        .patch(
            &gate_rbac::role_binding_name(&name, color),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&binding),
        )
        .await?;
    Ok(())
}

/// Server-side applies the gates' Role of `fbgd` in `namespace` (get/list/watch on its
/// ConfigMap), owned by the resource; returns that owner reference for what is bound to it.
pub(crate) async fn apply_gate_role(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
    namespace: &str,
) -> Result<OwnerReference> {
    let name = fbgd.name_any();
    let owner = fbgd
        .controller_owner_ref(&())
        .ok_or(Error::MissingMetadata("uid"))?;
    let role = gate_rbac::role(namespace, &name, owner.clone());
    Api::<Role>::namespaced(ctx.client.clone(), namespace)
        .patch(
            &gate_rbac::role_name(&name),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&role),
        )
        .await?;
    Ok(owner)
}

/// The REST client of the child of `color`, in the cluster `reach` reaches, and its job id.
async fn child_rest(
    ctx: &Context,
    reach: &Reach,
    fbgd: &FlinkBlueGreenDeployment,
    color: Color,
) -> Result<(FlinkRest, String)> {
    let child = child_name(&fbgd.name_any(), color);
    let job_id = children_in(reach)
        .get(&child)
        .await?
        .data
        .pointer("/status/jobStatus/jobId")
        .and_then(|v| v.as_str().map(str::to_owned))
        .ok_or_else(|| Error::FlinkRest {
            url: child.clone(),
            message: "the job has no jobId yet".into(),
        })?;
    let rest = FlinkRest::new(
        ctx.http.clone(),
        &reach.rest_url_template,
        &reach.namespace,
        &child,
    );
    Ok((rest, job_id))
}

/// Replaces the status, guarded by the observed resourceVersion: a concurrent writer makes this
/// fail with 409 and the reconcile is retried from a fresh observation.
async fn write_status(
    api: &Api<FlinkBlueGreenDeployment>,
    current: &FlinkBlueGreenDeployment,
    status: FlinkBlueGreenDeploymentStatus,
) -> Result<()> {
    let mut next = current.clone();
    next.status = Some(status);
    next.metadata.managed_fields = None;
    api.replace_status(&current.name_any(), &PostParams::default(), &next)
        .await?;
    Ok(())
}

/// Moves the ConfigMap to `desired`, refusing any write `check_transition` rejects and guarding
/// the replace with the resourceVersion it read.
async fn write_configmap(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
    namespace: &str,
    desired: CoordinationState,
) -> Result<()> {
    let name = configmap_name(&fbgd.name_any());
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), namespace);
    let data = desired.to_data();
    let Some(mut existing) = api.get_opt(&name).await? else {
        let owner = fbgd
            .controller_owner_ref(&())
            .ok_or(Error::MissingMetadata("uid"))?;
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.to_owned()),
                labels: Some([(crate::child::LABEL_DEPLOYMENT.to_owned(), fbgd.name_any())].into()),
                owner_references: Some(vec![owner]),
                ..ObjectMeta::default()
            },
            data: Some(data),
            ..ConfigMap::default()
        };
        api.create(&PostParams::default(), &cm).await?;
        return Ok(());
    };
    if let Ok(current) = CoordinationState::from_data(&existing.data.clone().unwrap_or_default()) {
        if current == desired {
            return Ok(());
        }
        check_transition(&current, &desired).map_err(|source| Error::Coordination {
            name: name.clone(),
            source,
        })?;
    }
    let mut merged = existing.data.take().unwrap_or_default();
    merged.extend(data);
    existing.data = Some(merged);
    existing.metadata.managed_fields = None;
    api.replace(&name, &PostParams::default(), &existing)
        .await?;
    Ok(())
}

/// The `action` of the event carrying `message`: `Reconcile/` and a digest of the message. kube's
/// `Recorder` folds events with the same reason and action into one series (client-go's key has
/// the note too), so without the digest a new message under an old reason, such as a second
/// invalid field within 6 minutes, would only raise the count of the old event and never show.
fn event_action(message: &str) -> String {
    use sha2::{Digest as _, Sha256};
    let digest = Sha256::digest(message);
    digest
        .iter()
        .take(4)
        .fold(String::from("Reconcile/"), |mut action, b| {
            use std::fmt::Write as _;
            write!(action, "{b:02x}").expect("writing to a String cannot fail");
            action
        })
}

/// Publishes `notes` as Kubernetes Events about `fbgd` (best effort: failures are logged).
async fn publish(ctx: &Context, fbgd: &FlinkBlueGreenDeployment, notes: &[Note]) {
    let reference = fbgd.object_ref(&());
    for note in notes {
        let event = Event {
            type_: if note.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: note.reason.as_str().to_owned(),
            note: Some(note.message.chars().take(1000).collect()),
            action: event_action(&note.message),
            secondary: None,
        };
        if let Err(e) = ctx.recorder.publish(&event, &reference).await {
            tracing::warn!(error = %e, reason = note.reason.as_str(), "could not publish event");
        }
    }
}

/// Sets `spec.restartNonce` of the child `name` by a merge patch of that one field: the rest of
/// the child stays as it was applied.
async fn restart_child(children: &Api<DynamicObject>, name: &str, nonce: i64) -> Result<()> {
    let body = json!({"spec": {"restartNonce": nonce}});
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    children.patch(name, &params, &Patch::Merge(&body)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::event_action;

    #[test]
    fn each_message_gets_its_own_event_series_and_a_repeat_joins_it() {
        let a = event_action("`spec.template.spec.job.parallelism` must be at least 1");
        let b = event_action("`spec.template.spec.mode` is \"cluster\"");
        assert_ne!(a, b, "a new message is a new event");
        assert_eq!(
            a,
            event_action("`spec.template.spec.job.parallelism` must be at least 1"),
            "a repeat raises the count of the same event"
        );
        assert!(a.starts_with("Reconcile/") && a.len() <= 128, "{a}");
    }
}
