//! The Role and RoleBindings that let the jobs' TaskManagers read their coordination ConfigMap
//! (pure). The sidecar and the JNI shim both watch it with the TaskManager pod's service account;
//! they need `get` (freshness probes), `list` and `watch` (the watch lists and watches with
//! `fieldSelector=metadata.name=<ConfigMap>`, which the API server authorises as a request for
//! that one name) on that one ConfigMap, and nothing else.
//!
//! One Role per resource, one RoleBinding per color: during a handover each child's TaskManagers
//! run with the service account of their own template, which a template change may have changed.

use std::collections::BTreeMap;

use bluegreen_protocol::{Color, configmap_name};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::Value;

use crate::error::SpecError;
use crate::names::{LABEL_COLOR, LABEL_DEPLOYMENT, child_name};
use crate::resource::FlinkDeploymentSpec;

/// The service account of a FlinkDeployment without `spec.serviceAccount` (the Apache operator's
/// job service account).
pub const DEFAULT_SERVICE_ACCOUNT: &str = "flink";
/// Flink's key for the TaskManagers' own service account (default: `spec.serviceAccount`).
pub const TASK_MANAGER_SERVICE_ACCOUNT: &str = "kubernetes.taskmanager.service-account";
/// What the gates may do with their ConfigMap.
pub const VERBS: [&str; 3] = ["get", "watch", "list"];
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The Role of `deployment`'s gates.
pub fn role_name(deployment: &str) -> String {
    format!("{deployment}-bluegreen-gate")
}

/// The RoleBinding of the gates of `deployment`'s child of `color`.
pub fn role_binding_name(deployment: &str, color: Color) -> String {
    format!("{}-bluegreen-gate", child_name(deployment, color))
}

/// The service account the TaskManagers of a child of `spec` run with:
/// `flinkConfiguration[kubernetes.taskmanager.service-account]`, else `serviceAccount`, else
/// `flink`.
pub fn service_account(spec: &FlinkDeploymentSpec) -> Result<String, SpecError> {
    if let Some(account) = spec.flink_configuration.get(TASK_MANAGER_SERVICE_ACCOUNT) {
        return if account.trim().is_empty() {
            Err(SpecError::new(
                "spec.template.spec.flinkConfiguration[kubernetes.taskmanager.service-account]",
                "is empty; name the TaskManagers' ServiceAccount or leave the key out",
            ))
        } else {
            Ok(account.trim().to_owned())
        };
    }
    match spec.other.get("serviceAccount") {
        None | Some(Value::Null) => Ok(DEFAULT_SERVICE_ACCOUNT.to_owned()),
        Some(Value::String(account)) if !account.trim().is_empty() => Ok(account.trim().to_owned()),
        Some(other) => Err(SpecError::new(
            "spec.template.spec.serviceAccount",
            format!(
                "{other} is not a ServiceAccount name; write the job's ServiceAccount (e.g. \
                 flink) or leave it out for {DEFAULT_SERVICE_ACCOUNT}"
            ),
        )),
    }
}

fn metadata(
    name: String,
    namespace: &str,
    labels: BTreeMap<String, String>,
    owner: OwnerReference,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(namespace.to_owned()),
        labels: Some(labels),
        owner_references: Some(vec![owner]),
        ..ObjectMeta::default()
    }
}

fn labels(deployment: &str) -> BTreeMap<String, String> {
    [
        ("app.kubernetes.io/managed-by", "bluegreen"),
        (LABEL_DEPLOYMENT, deployment),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The Role: `get`, `watch`, `list` on the coordination ConfigMap of `deployment`, by name.
pub fn role(namespace: &str, deployment: &str, owner: OwnerReference) -> Role {
    Role {
        metadata: metadata(role_name(deployment), namespace, labels(deployment), owner),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".to_owned()]),
            resource_names: Some(vec![configmap_name(deployment)]),
            verbs: VERBS.iter().map(|v| (*v).to_owned()).collect(),
            non_resource_urls: None,
        }]),
    }
}

/// The RoleBinding of the Role to `service_account`, the TaskManagers' of the child of `color`.
pub fn role_binding(
    namespace: &str,
    deployment: &str,
    color: Color,
    service_account: &str,
    owner: OwnerReference,
) -> RoleBinding {
    let mut labels = labels(deployment);
    labels.insert(LABEL_COLOR.to_owned(), color.suffix().to_owned());
    RoleBinding {
        metadata: metadata(
            role_binding_name(deployment, color),
            namespace,
            labels,
            owner,
        ),
        role_ref: RoleRef {
            api_group: Some(RBAC_GROUP.to_owned()),
            kind: "Role".to_owned(),
            name: role_name(deployment),
        },
        subjects: Some(vec![Subject {
            api_group: None,
            kind: "ServiceAccount".to_owned(),
            name: service_account.to_owned(),
            namespace: Some(namespace.to_owned()),
        }]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::spec;

    fn owner() -> OwnerReference {
        OwnerReference {
            api_version: "bluegreen.dev/v1alpha1".into(),
            kind: "FlinkBlueGreenDeployment".into(),
            name: "orders".into(),
            uid: "uid-1".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }
    }

    #[test]
    fn the_role_allows_exactly_get_watch_list_on_the_one_configmap() {
        let role = role("prod", "orders", owner());
        assert_eq!(role.metadata.name.as_deref(), Some("orders-bluegreen-gate"));
        assert_eq!(role.metadata.namespace.as_deref(), Some("prod"));
        assert_eq!(role.metadata.owner_references, Some(vec![owner()]));
        let rules = role.rules.expect("rules");
        assert_eq!(rules.len(), 1, "{rules:?}");
        let only = &rules[0];
        assert_eq!(
            only.api_groups,
            Some(vec![String::new()]),
            "the core group only"
        );
        assert_eq!(only.resources, Some(vec!["configmaps".to_owned()]));
        assert_eq!(
            only.resource_names,
            Some(vec!["orders-bluegreen".to_owned()])
        );
        assert_eq!(only.non_resource_urls, None);
        let mut verbs = only.verbs.clone();
        verbs.sort();
        assert_eq!(verbs, ["get", "list", "watch"]);
        // Verb by verb: what the gates do is allowed, nothing else is.
        for verb in [
            "get",
            "list",
            "watch",
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection",
            "*",
        ] {
            let allowed = only.verbs.iter().any(|v| v == verb);
            assert_eq!(allowed, ["get", "list", "watch"].contains(&verb), "{verb}");
        }
        for resource in ["configmaps", "secrets", "pods", "*", "configmaps/status"] {
            let covered = only.resources.iter().flatten().any(|r| r == resource);
            assert_eq!(covered, resource == "configmaps", "{resource}");
        }
    }

    #[test]
    fn the_binding_binds_the_templates_service_account_to_the_role() {
        let account = service_account(&spec("local:///job.jar").template.spec).expect("valid");
        assert_eq!(account, DEFAULT_SERVICE_ACCOUNT);
        let binding = role_binding("prod", "orders", Color::Green, &account, owner());
        assert_eq!(
            binding.metadata.name.as_deref(),
            Some("orders-green-bluegreen-gate")
        );
        assert_eq!(binding.metadata.owner_references, Some(vec![owner()]));
        assert_eq!(
            binding.role_ref,
            RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "Role".into(),
                name: "orders-bluegreen-gate".into(),
            }
        );
        assert_eq!(
            binding.subjects,
            Some(vec![Subject {
                api_group: None,
                kind: "ServiceAccount".into(),
                name: "flink".into(),
                namespace: Some("prod".into()),
            }])
        );
    }

    #[test]
    fn the_task_managers_service_account_comes_from_the_template() {
        let mut s = spec("local:///job.jar").template.spec;
        s.other
            .insert("serviceAccount".into(), Value::String("orders-job".into()));
        assert_eq!(service_account(&s).expect("valid"), "orders-job");
        s.flink_configuration
            .insert(TASK_MANAGER_SERVICE_ACCOUNT.into(), "orders-tm".into());
        assert_eq!(service_account(&s).expect("valid"), "orders-tm");
        s.flink_configuration
            .insert(TASK_MANAGER_SERVICE_ACCOUNT.into(), " ".into());
        assert!(service_account(&s).is_err());
        s.flink_configuration.clear();
        s.other
            .insert("serviceAccount".into(), serde_json::json!(7));
        match service_account(&s) {
            Err(SpecError { field, .. }) => {
                assert_eq!(field, "spec.template.spec.serviceAccount");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}
