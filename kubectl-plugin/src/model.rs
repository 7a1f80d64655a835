//! One read of a FlinkBlueGreenDeployment with its children and coordination ConfigMap.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use bluegreen_controller::child::{LABEL_DEPLOYMENT, child_name};
use bluegreen_controller::context::flink_deployment_resource;
use bluegreen_controller::resource::{
    Condition, FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentStatus,
};
use bluegreen_protocol::{Color, CoordinationState, configmap_name, keys};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::{Client, CustomResourceExt, Resource};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::error::Error;

/// The resource as read, with its status parsed by the controller's own types.
#[derive(Debug, Clone)]
pub struct Deployment {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// The status, or why it does not parse with this build's types.
    pub status: Result<FlinkBlueGreenDeploymentStatus, String>,
    /// The fields every controller version writes alike, read even when `status` does not
    /// parse (e.g. a phase a newer controller added).
    pub core: StatusCore,
    /// Status fields this build does not know (written by a newer controller), as found.
    pub unknown_status: BTreeMap<String, Value>,
    /// The object exactly as the server returned it (for `-o json|yaml`).
    pub raw: Value,
}

/// The status fields `status` judges by, parsed on their own.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusCore {
    /// `Ready`, `Progressing`, `Degraded`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// `metadata.generation` last acted upon.
    pub observed_generation: Option<i64>,
    /// The handover in progress, whatever its shape.
    pub transition: Option<IgnoredAny>,
}

/// The fields of a child FlinkDeployment the tree shows.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildDoc {
    /// `spec`.
    #[serde(default)]
    pub spec: ChildSpec,
    /// `status`.
    #[serde(default)]
    pub status: ChildStatus,
}

/// `spec` of a child.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChildSpec {
    /// `spec.job`.
    #[serde(default)]
    pub job: ChildJob,
}

/// `spec.job` of a child.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChildJob {
    /// `spec.job.parallelism`.
    pub parallelism: Option<i64>,
    /// `spec.job.state` (`running` or `suspended`).
    pub state: Option<String>,
}

/// `status` of a child, as the Apache operator writes it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildStatus {
    /// `status.lifecycleState`.
    pub lifecycle_state: Option<String>,
    /// `status.jobStatus`.
    pub job_status: Option<JobStatus>,
    /// `status.error`.
    pub error: Option<String>,
}

/// `status.jobStatus` of a child.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    /// `RUNNING`, `FAILED`, ...
    pub state: Option<String>,
}

/// A child as found.
#[derive(Debug, Clone)]
pub struct Child {
    /// Its color.
    pub color: Color,
    /// `<name>-<color>`.
    pub name: String,
    /// The parsed fields, or why they do not parse; `None` when the child does not exist.
    pub doc: Option<Result<ChildDoc, String>>,
    /// The object as returned.
    pub raw: Option<Value>,
}

/// The coordination ConfigMap as found.
#[derive(Debug, Clone)]
pub struct Coordination {
    /// `<name>-bluegreen`.
    pub name: String,
    /// The data, parsed strictly; `Err` keeps the raw keys and the reason.
    pub state: Result<CoordinationState, (BTreeMap<String, String>, String)>,
    /// The object as returned.
    pub raw: Value,
}

/// Everything `get` shows.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The resource.
    pub deployment: Deployment,
    /// Blue then green.
    pub children: Vec<Child>,
    /// The ConfigMap, if it exists.
    pub coordination: Option<Coordination>,
}

impl Snapshot {
    /// All objects as a `v1` `List` (for `-o json|yaml`).
    pub fn to_list(&self) -> Value {
        let mut items = vec![self.deployment.raw.clone()];
        items.extend(self.children.iter().filter_map(|c| c.raw.clone()));
        items.extend(self.coordination.iter().map(|c| c.raw.clone()));
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items})
    }
}

/// The API resource of `FlinkBlueGreenDeployment`.
pub fn resource() -> ApiResource {
    ApiResource::erase::<FlinkBlueGreenDeployment>(&())
}

/// Status field names the controller crate's CRD schema declares.
static KNOWN_STATUS_FIELDS: LazyLock<BTreeSet<String>> = LazyLock::new(|| {
    FlinkBlueGreenDeployment::crd()
        .spec
        .versions
        .iter()
        .filter_map(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref())
        .filter_map(|s| s.properties.as_ref()?.get("status")?.properties.as_ref())
        .flat_map(|p| p.keys().cloned())
        .collect()
});

impl Deployment {
    /// Reads the typed view out of a fetched object.
    pub fn from_object(obj: &DynamicObject) -> Self {
        let raw = serde_json::to_value(obj).unwrap_or(Value::Null);
        let status_raw = obj.data.get("status").cloned().unwrap_or(Value::Null);
        let core = serde_json::from_value(status_raw.clone()).unwrap_or_default();
        let status = if status_raw.is_null() {
            Ok(FlinkBlueGreenDeploymentStatus::default())
        } else {
            serde_json::from_value(status_raw.clone()).map_err(|e| e.to_string())
        };
        let unknown_status = match status_raw {
            Value::Object(map) => map
                .into_iter()
                .filter(|(k, _)| !KNOWN_STATUS_FIELDS.contains(k))
                .collect(),
            _ => BTreeMap::new(),
        };
        Self {
            name: obj.meta().name.clone().unwrap_or_default(),
            namespace: obj.meta().namespace.clone().unwrap_or_default(),
            generation: obj.meta().generation,
            status,
            core,
            unknown_status,
            raw,
        }
    }
}

/// Reads the resource, both children and the ConfigMap.
pub async fn snapshot(client: &Client, namespace: &str, name: &str) -> Result<Snapshot, Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource());
    let obj = api
        .get_opt(name)
        .await
        .map_err(|e| {
            Error::api(
                format!("reading flinkbluegreendeployment {namespace}/{name}"),
                e,
            )
        })?
        .ok_or_else(|| Error::NotFound {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })?;
    let deployment = Deployment::from_object(&obj);
    let fds: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &flink_deployment_resource());
    let listed = fds
        .list(&ListParams::default().labels(&format!("{LABEL_DEPLOYMENT}={name}")))
        .await;
    // Without the FlinkDeployment CRD (or permission to list it) both children say why.
    let found = listed
        .map(|l| l.items)
        .map_err(|e| format!("cannot list flinkdeployments: {e}"));
    let children = Color::ALL
        .iter()
        .map(|&color| {
            let child = child_name(name, color);
            let obj = found.as_ref().ok().and_then(|items| {
                items
                    .iter()
                    .find(|o| o.meta().name.as_deref() == Some(child.as_str()))
            });
            let doc = match (&found, obj) {
                (Err(e), _) => Some(Err(e.clone())),
                (Ok(_), None) => None,
                (Ok(_), Some(o)) => Some(
                    serde_json::from_value::<ChildDoc>(o.data.clone()).map_err(|e| e.to_string()),
                ),
            };
            Child {
                color,
                name: child,
                doc,
                raw: obj.and_then(|o| serde_json::to_value(o).ok()),
            }
        })
        .collect();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let cm_name = configmap_name(name);
    let coordination = cms
        .get_opt(&cm_name)
        .await
        .map_err(|e| Error::api(format!("reading configmap {namespace}/{cm_name}"), e))?
        .map(|cm| {
            let data = cm.data.clone().unwrap_or_default();
            Coordination {
                name: cm_name.clone(),
                state: CoordinationState::from_data(&data).map_err(|e| (data, e.to_string())),
                raw: serde_json::to_value(&cm).unwrap_or(Value::Null),
            }
        });
    Ok(Snapshot {
        deployment,
        children,
        coordination,
    })
}

/// The raw `stage` and `epoch` of a ConfigMap that does not parse.
pub fn raw_stage_epoch(data: &BTreeMap<String, String>) -> (String, String) {
    let get = |k: &str| data.get(k).cloned().unwrap_or_else(|| "?".into());
    (get(keys::STAGE), get(keys::EPOCH))
}
