//! What the controller adds to a child's pod templates for its gates (pure): the gate's
//! environment on the main container, and the `bluegreen-sidecar` container in the TaskManager
//! pod template (docs/operations.md, "Sidecar injection and gate RBAC").
//!
//! The pod templates are read into a partial model (`PodTemplate`): the controller types only
//! what it changes (container names, the main container's `env`) and keeps every other field as
//! written. Reading a user's template into k8s-openapi's `PodTemplateSpec` would silently drop the
//! fields that version of the types does not know.

use std::collections::BTreeMap;

use bluegreen_protocol::Color;
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EnvVar, ResourceRequirements, SeccompProfile, SecretVolumeSource,
    SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::SpecError;
use crate::resource::{FlinkBlueGreenDeploymentSpec, SidecarInjection};

/// The name of the injected container (and of a container the user may have added by hand).
pub const SIDECAR_CONTAINER: &str = "bluegreen-sidecar";
/// The name of Flink's main container in a pod template.
pub const MAIN_CONTAINER: &str = "flink-main-container";
/// The sidecar's image when `spec.sidecar.image` is not set.
pub const DEFAULT_SIDECAR_IMAGE: &str = concat!("bluegreen/sidecar:", env!("CARGO_PKG_VERSION"));
/// The loopback address the sidecar listens on (with `spec.sidecar.port`).
pub const LOOPBACK: &str = "127.0.0.1";
/// The pod volume of a child in another cluster with its gates' kubeconfig for the home API
/// server (the Secret `crate::remote_gate::secret_name`).
pub const HOME_VOLUME: &str = "bluegreen-home";
/// Where that volume is mounted.
pub const HOME_DIR: &str = "/etc/bluegreen/home";
/// The kubeconfig in it.
pub const HOME_KUBECONFIG: &str = "/etc/bluegreen/home/kubeconfig";
/// The sidecar's variable naming its kubeconfig (never set on the main container: Flink's
/// Kubernetes client reads it too, and its own high availability would follow it).
pub const KUBECONFIG_ENV: &str = "KUBECONFIG";

/// Environment variables of the gate's side (the sidecar reads them as its configuration, the
/// JNI shim and the example job read them in the TaskManager's main container).
pub use bluegreen_protocol::wire::env;

/// Where the user's pod templates are, as named in errors.
const COMMON_TEMPLATE_FIELD: &str = "spec.template.spec.podTemplate";
const TASK_MANAGER_FIELD: &str = "spec.template.spec.taskManager";
const TASK_MANAGER_TEMPLATE_FIELD: &str = "spec.template.spec.taskManager.podTemplate";
/// The keys of the FlinkDeployment spec the pod templates are under.
const POD_TEMPLATE_KEY: &str = "podTemplate";
const TASK_MANAGER_KEY: &str = "taskManager";
const VOLUMES_KEY: &str = "volumes";
const VOLUME_MOUNTS_KEY: &str = "volumeMounts";

/// A pod template (a Pod: `apiVersion`, `kind`, `metadata`, `spec`), as far as the controller
/// changes it.
#[derive(Serialize, Deserialize, Debug, Default, Clone, PartialEq)]
struct PodTemplate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<PodSpecPart>,
    #[serde(flatten)]
    other: Map<String, Value>,
}

/// A pod template's `spec`: its containers; everything else is kept as written.
#[derive(Serialize, Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
struct PodSpecPart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    containers: Option<Vec<ContainerPart>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    init_containers: Option<Vec<ContainerPart>>,
    #[serde(flatten)]
    other: Map<String, Value>,
}

/// The list under `key` of `fields` (a pod spec's `volumes`, a container's `volumeMounts`), kept
/// as written (the pod schema check validates them), created if absent.
fn list_mut<'m>(fields: &'m mut Map<String, Value>, key: &str) -> &'m mut Vec<Value> {
    let value = fields
        .entry(key.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !value.is_array() {
        *value = Value::Array(Vec::new());
    }
    value.as_array_mut().expect("made an array above")
}

/// Replaces the entry named `item`'s name in the list under `key` of `fields` by `item`
/// (appended).
fn put_named<T: Serialize>(fields: &mut Map<String, Value>, key: &str, item: &T) {
    let item = serde_json::to_value(item).expect("a k8s type always serialises");
    let list = list_mut(fields, key);
    list.retain(|v| v.get("name") != item.get("name"));
    list.push(item);
}

/// The name of a list entry (a volume).
fn name_of(v: &Value) -> Option<&str> {
    v.get("name").and_then(Value::as_str)
}

/// A container: its name and environment; everything else is kept as written.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct ContainerPart {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    env: Option<Vec<EnvVar>>,
    #[serde(flatten)]
    other: Map<String, Value>,
}

/// The FlinkDeployment's `taskManager` section: its pod template; everything else is kept.
#[derive(Serialize, Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
struct TaskManagerPart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod_template: Option<PodTemplate>,
    #[serde(flatten)]
    other: Map<String, Value>,
}

impl PodTemplate {
    fn containers(&self) -> &[ContainerPart] {
        self.spec
            .as_ref()
            .and_then(|s| s.containers.as_deref())
            .unwrap_or_default()
    }

    /// Whether a container or init container of this name is in the template.
    fn has_container(&self, name: &str) -> bool {
        self.spec.as_ref().is_some_and(|s| {
            s.containers
                .iter()
                .chain(&s.init_containers)
                .flatten()
                .any(|c| c.name == name)
        })
    }

    fn containers_mut(&mut self) -> &mut Vec<ContainerPart> {
        self.spec
            .get_or_insert_with(PodSpecPart::default)
            .containers
            .get_or_insert_with(Vec::new)
    }

    /// The names of the pod's volumes.
    fn volume_names(&self) -> Vec<String> {
        self.spec
            .as_ref()
            .and_then(|s| s.other.get(VOLUMES_KEY))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| name_of(v).unwrap_or_default().to_owned())
            .collect()
    }

    fn spec_fields_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.spec.get_or_insert_with(PodSpecPart::default).other
    }
}

impl ContainerPart {
    fn named(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            env: None,
            other: Map::new(),
        }
    }
}

/// Reads the value at `key` of the FlinkDeployment spec's pass-through fields as `T` (absent or
/// `null`: the default), naming `field` when it does not have that shape.
fn read<T: DeserializeOwned + Default>(
    other: &BTreeMap<String, Value>,
    key: &str,
    field: &'static str,
) -> Result<T, SpecError> {
    match other.get(key) {
        None | Some(Value::Null) => Ok(T::default()),
        Some(value) => serde_json::from_value(value.clone()).map_err(|e| {
            SpecError::new(
                field,
                format!(
                    "is not a valid pod template ({e}); it is a Pod: `spec.containers` and \
                     `spec.initContainers` are lists of containers, each with a `name`"
                ),
            )
        }),
    }
}

fn write<T: Serialize>(other: &mut BTreeMap<String, Value>, key: &str, value: &T) {
    other.insert(
        key.to_owned(),
        serde_json::to_value(value).expect("a pod template part always serialises"),
    );
}

/// The user's pod templates as validation parsed them: the common one and the TaskManager's
/// section.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PodTemplates {
    common: PodTemplate,
    task_manager: TaskManagerPart,
}

impl PodTemplates {
    /// Reads the pod templates from the FlinkDeployment spec's pass-through fields, naming the
    /// field whose shape is wrong.
    fn read(other: &BTreeMap<String, Value>) -> Result<Self, SpecError> {
        let task_manager = match other.get(TASK_MANAGER_KEY) {
            None | Some(Value::Null) => TaskManagerPart::default(),
            Some(Value::Object(_)) => read(other, TASK_MANAGER_KEY, TASK_MANAGER_TEMPLATE_FIELD)?,
            Some(_) => {
                return Err(SpecError::new(
                    TASK_MANAGER_FIELD,
                    "must be an object (the FlinkDeployment's taskManager section)",
                ));
            }
        };
        Ok(Self {
            common: read(other, POD_TEMPLATE_KEY, COMMON_TEMPLATE_FIELD)?,
            task_manager,
        })
    }

    /// A container named `bluegreen-sidecar` the user added to either template.
    fn user_sidecar(&self) -> bool {
        self.common.has_container(SIDECAR_CONTAINER)
            || self
                .task_manager
                .pod_template
                .as_ref()
                .is_some_and(|t| t.has_container(SIDECAR_CONTAINER))
    }
}

/// Checks what rendering needs from the spec besides the TaskManagers' service account
/// ([`crate::gate_rbac::service_account`]): the shape of the pod templates, returned parsed for
/// [`inject`], and `spec.sidecar`.
pub fn validate(spec: &FlinkBlueGreenDeploymentSpec) -> Result<PodTemplates, SpecError> {
    let templates = PodTemplates::read(&spec.template.spec.other)?;
    let sidecar = &spec.sidecar;
    if sidecar.port < 1024 {
        return Err(SpecError::new(
            "spec.sidecar.port",
            format!(
                "{} is not a port the sidecar can listen on: it runs as a non-root user; \
                 use 1024-65535 (default 8787)",
                sidecar.port
            ),
        ));
    }
    if let Some(image) = &sidecar.image
        && (image.is_empty() || image.chars().any(char::is_whitespace))
    {
        return Err(SpecError::new(
            "spec.sidecar.image",
            format!(
                "{image:?} is not an image reference; write e.g. \
                 registry.example.com/bluegreen/sidecar:{}, or leave it out for {DEFAULT_SIDECAR_IMAGE}",
                env!("CARGO_PKG_VERSION")
            ),
        ));
    }
    Ok(templates)
}

/// What the gates of one child need to find their state.
#[derive(Debug, Clone, Copy)]
pub struct GateTarget<'a> {
    /// The child's color.
    pub color: Color,
    /// The coordination ConfigMap's name.
    pub configmap: &'a str,
    /// Its namespace (the resource's).
    pub namespace: &'a str,
    /// A child in another cluster: the Secret there with its gates' kubeconfig for this
    /// cluster's API server, mounted at [`HOME_DIR`]. `None`: a child in this cluster (its
    /// gates use their pod's service account).
    pub home_secret: Option<&'a str>,
}

/// Adds the gate's environment to the main container of the common pod template and, unless
/// `spec.sidecar.inject` is `false` or the user's templates already have a `bluegreen-sidecar`,
/// the sidecar to the TaskManager pod template. `templates` are the user's, as [`validate`]
/// parsed them; the result replaces `podTemplate` and `taskManager` in `other`, the
/// FlinkDeployment spec's pass-through fields, and keeps everything else in them.
pub fn inject(
    other: &mut BTreeMap<String, Value>,
    templates: &PodTemplates,
    sidecar: &SidecarInjection,
    target: GateTarget<'_>,
) {
    let inject_sidecar = sidecar.inject && !templates.user_sidecar();
    let PodTemplates {
        mut common,
        mut task_manager,
    } = templates.clone();
    let url = format!("http://{LOOPBACK}:{}", sidecar.port);
    let mut vars = gate_env(target);
    if inject_sidecar {
        vars.push(env_var(env::SIDECAR_URL, &url));
    }
    let home = target.home_secret.map(home_volume);
    if home.is_some() && !inject_sidecar {
        // No sidecar of ours: the JNI shim reads the kubeconfig in the TaskManagers' main
        // container.
        vars.push(env_var(env::HOME_KUBECONFIG, HOME_KUBECONFIG));
    }
    set_main_env(&mut common, vars);
    write(other, POD_TEMPLATE_KEY, &common);
    if inject_sidecar {
        let container = sidecar_container(sidecar, target);
        add_task_manager_container(&common, &mut task_manager, &container);
    } else if home.is_some() {
        mount_in_task_manager_main(&common, &mut task_manager, &home_mount());
    }
    if let Some(volume) = &home {
        add_task_manager_volume(&common, &mut task_manager, volume);
    }
    if inject_sidecar || home.is_some() {
        write(other, TASK_MANAGER_KEY, &task_manager);
    }
}

/// The volume of the Secret `secret` with the gates' kubeconfig for the home API server.
fn home_volume(secret: &str) -> Volume {
    Volume {
        name: HOME_VOLUME.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_owned()),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// Its mount, read-only at [`HOME_DIR`].
fn home_mount() -> VolumeMount {
    VolumeMount {
        name: HOME_VOLUME.to_owned(),
        mount_path: HOME_DIR.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    }
}

fn env_var(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    }
}

/// The environment both the sidecar and the main container get.
fn gate_env(target: GateTarget<'_>) -> Vec<EnvVar> {
    vec![
        env_var(env::COLOR, target.color.as_str()),
        env_var(env::CONFIGMAP, target.configmap),
        env_var(env::NAMESPACE, target.namespace),
    ]
}

/// Sets `vars` on the main container (added if the template has none), replacing variables of
/// the same names and keeping the others in their order.
fn set_main_env(template: &mut PodTemplate, vars: Vec<EnvVar>) {
    let env = main_container(template).env.get_or_insert_with(Vec::new);
    env.retain(|v| !vars.iter().any(|ours| ours.name == v.name));
    env.extend(vars);
}

/// The main container of `template` (added if it has none).
fn main_container(template: &mut PodTemplate) -> &mut ContainerPart {
    let containers = template.containers_mut();
    let index = if let Some(i) = containers.iter().position(|c| c.name == MAIN_CONTAINER) {
        i
    } else {
        containers.push(ContainerPart::named(MAIN_CONTAINER));
        containers.len() - 1
    };
    &mut containers[index]
}

/// The default resources of the sidecar: one watch and a long-poll server (a few MiB).
fn default_resources() -> ResourceRequirements {
    let quantity = |q: &str| Quantity(q.to_owned());
    ResourceRequirements {
        requests: Some(
            [
                ("cpu".to_owned(), quantity("10m")),
                ("memory".to_owned(), quantity("32Mi")),
            ]
            .into(),
        ),
        limits: Some([("memory".to_owned(), quantity("64Mi"))].into()),
        ..ResourceRequirements::default()
    }
}

/// The `bluegreen-sidecar` container: the child's ConfigMap, served on loopback only, as a
/// non-root process with a read-only root filesystem and no capabilities. For a child in another
/// cluster it reads the ConfigMap with the kubeconfig of the Secret mounted at [`HOME_DIR`]
/// (`KUBECONFIG`).
pub fn sidecar_container(sidecar: &SidecarInjection, target: GateTarget<'_>) -> Container {
    let mut vars = gate_env(target);
    vars.push(env_var(
        env::LISTEN,
        &format!("{LOOPBACK}:{}", sidecar.port),
    ));
    if target.home_secret.is_some() {
        vars.push(env_var(KUBECONFIG_ENV, HOME_KUBECONFIG));
    }
    Container {
        volume_mounts: target.home_secret.map(|_| vec![home_mount()]),
        name: SIDECAR_CONTAINER.to_owned(),
        image: Some(
            sidecar
                .image
                .clone()
                .unwrap_or_else(|| DEFAULT_SIDECAR_IMAGE.to_owned()),
        ),
        env: Some(vars),
        resources: Some(sidecar.resources.clone().unwrap_or_else(default_resources)),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_owned()]),
                add: None,
            }),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".to_owned(),
                localhost_profile: None,
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    }
}

/// Appends `container` to the TaskManager pod template so that the Apache operator's merge of
/// the common template into it leaves every container as the user wrote it.
///
/// The operator merges `taskManager.podTemplate` into `podTemplate` list element by list element,
/// by position (its default; `kubernetes.operator.pod-template.merge-arrays-by-name: true` merges
/// by name). Appended right after the user's TaskManager containers, the sidecar would be merged
/// *into* the common template's container at that position (usually `flink-main-container`). So
/// for each common container beyond the user's TaskManager containers, a container with only its
/// name is added first: merged by position it changes nothing (the same name), merged by name too.
/// A common container whose name the user's TaskManager containers already have gets no such
/// entry (merged by name it would replace the user's; merged by position that template already
/// gives two containers one name).
fn add_task_manager_container(
    common: &PodTemplate,
    task_manager: &mut TaskManagerPart,
    container: &Container,
) {
    let template = task_manager
        .pod_template
        .get_or_insert_with(PodTemplate::default);
    let containers = template.containers_mut();
    let placeholders: Vec<ContainerPart> = common
        .containers()
        .iter()
        .skip(containers.len())
        .filter(|c| !containers.iter().any(|own| own.name == c.name))
        .map(|c| ContainerPart::named(&c.name))
        .collect();
    containers.extend(placeholders);
    let value = serde_json::to_value(container).expect("a Container always serialises");
    containers.push(serde_json::from_value(value).expect("a Container has a name"));
}

/// Adds `mount` to the main container of the TaskManager pod template: its own entry if it has
/// one, else one at the main container's position in the common template (after name-only
/// entries for the common containers before it), for the same reason as
/// [`add_task_manager_container`]: the operator merges the container lists by position (or by
/// name).
fn mount_in_task_manager_main(
    common: &PodTemplate,
    task_manager: &mut TaskManagerPart,
    mount: &VolumeMount,
) {
    let template = task_manager
        .pod_template
        .get_or_insert_with(PodTemplate::default);
    let containers = template.containers_mut();
    if !containers.iter().any(|c| c.name == MAIN_CONTAINER) {
        let before_main = common
            .containers()
            .iter()
            .take_while(|c| c.name != MAIN_CONTAINER)
            .skip(containers.len())
            .map(|c| ContainerPart::named(&c.name))
            .collect::<Vec<_>>();
        containers.extend(before_main);
        containers.push(ContainerPart::named(MAIN_CONTAINER));
    }
    let main = containers
        .iter_mut()
        .find(|c| c.name == MAIN_CONTAINER)
        .expect("added above");
    put_named(&mut main.other, VOLUME_MOUNTS_KEY, mount);
}

/// Appends `volume` to the TaskManager pod template, after a name-only entry for each common
/// volume beyond the TaskManager's own, for the same reason as [`add_task_manager_container`]:
/// the operator merges the volume lists by position (or by name).
fn add_task_manager_volume(
    common: &PodTemplate,
    task_manager: &mut TaskManagerPart,
    volume: &Volume,
) {
    let template = task_manager
        .pod_template
        .get_or_insert_with(PodTemplate::default);
    let volumes = list_mut(template.spec_fields_mut(), VOLUMES_KEY);
    volumes.retain(|v| name_of(v) != Some(HOME_VOLUME));
    let placeholders: Vec<Value> = common
        .volume_names()
        .into_iter()
        .skip(volumes.len())
        .filter(|name| !volumes.iter().any(|own| name_of(own) == Some(name)))
        .map(|name| serde_json::json!({ "name": name }))
        .collect();
    volumes.extend(placeholders);
    volumes.push(serde_json::to_value(volume).expect("a Volume always serialises"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target() -> GateTarget<'static> {
        GateTarget {
            color: Color::Green,
            configmap: "orders-bluegreen",
            namespace: "prod",
            home_secret: None,
        }
    }

    /// What rendering does: the templates in `other` parsed (they must be valid), then injected.
    fn read_and_inject(
        other: &mut BTreeMap<String, Value>,
        sidecar: &SidecarInjection,
        target: GateTarget<'_>,
    ) {
        let templates = PodTemplates::read(other).expect("valid");
        inject(other, &templates, sidecar, target);
    }

    fn names(template: &Value) -> Vec<&str> {
        template["spec"]["containers"]
            .as_array()
            .expect("containers")
            .iter()
            .map(|c| c["name"].as_str().expect("name"))
            .collect()
    }

    /// The operator's merge of the TaskManager template into the common one
    /// (`FlinkUtils.mergePodTemplates`): objects recursively, lists by position or by name.
    fn operator_merge(to: &mut Value, from: &Value, by_name: bool) {
        let (Value::Object(to), Value::Object(from)) = (to, from) else {
            return;
        };
        for (key, from_child) in from {
            match (to.get_mut(key), from_child) {
                (Some(Value::Array(to_list)), Value::Array(from_list)) => {
                    let named = |l: &[Value]| l.iter().all(|e| e.get("name").is_some());
                    if by_name && named(to_list) && named(from_list) {
                        for from_el in from_list {
                            match to_list.iter_mut().find(|e| e["name"] == from_el["name"]) {
                                Some(to_el) => operator_merge(to_el, from_el, by_name),
                                None => to_list.push(from_el.clone()),
                            }
                        }
                    } else {
                        for (i, from_el) in from_list.iter().enumerate() {
                            if to_list.len() <= i {
                                to_list.push(from_el.clone());
                            }
                            operator_merge(&mut to_list[i], from_el, by_name);
                        }
                    }
                }
                (Some(to_child @ Value::Object(_)), _) => {
                    operator_merge(to_child, from_child, by_name);
                }
                _ => {
                    to.insert(key.clone(), from_child.clone());
                }
            }
        }
    }

    fn rendered(other: &BTreeMap<String, Value>, by_name: bool) -> Value {
        let mut pod = other.get(POD_TEMPLATE_KEY).cloned().unwrap_or(json!({}));
        let tm = other
            .get(TASK_MANAGER_KEY)
            .and_then(|t| t.get("podTemplate"))
            .cloned()
            .unwrap_or(json!({}));
        operator_merge(&mut pod, &tm, by_name);
        pod
    }

    fn containers(pod: &Value) -> Vec<Value> {
        pod["spec"]["containers"]
            .as_array()
            .expect("containers")
            .clone()
    }

    /// For a child in another cluster the rendered TaskManager pod has the user's volumes as
    /// written and the home Secret's volume once, whichever way the operator merges lists, and the
    /// container that reads the ConfigMap (the sidecar, or the main container with
    /// `inject: false`) mounts it once.
    #[test]
    fn a_remote_childs_home_volume_is_added_once_and_the_users_volumes_are_kept() {
        let users: [BTreeMap<String, Value>; 4] = [
            BTreeMap::new(),
            [(
                "podTemplate".to_owned(),
                json!({"spec": {"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "configMap": {"name": "c"}}]}}),
            )]
            .into(),
            [
                (
                    "podTemplate".to_owned(),
                    json!({"spec": {"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}]}}),
                ),
                (
                    "taskManager".to_owned(),
                    json!({"podTemplate": {"spec": {"volumes": [{"name": "tm", "emptyDir": {}}]}}}),
                ),
            ]
            .into(),
            [
                (
                    "podTemplate".to_owned(),
                    json!({"spec": {"containers": [{"name": "log-shipper", "image": "fluent"}, {"name": "flink-main-container"}]}}),
                ),
                (
                    "taskManager".to_owned(),
                    json!({"podTemplate": {"spec": {"volumes": [{"name": "tm", "emptyDir": {}}, {"name": "tm2", "emptyDir": {}}]}}}),
                ),
            ]
            .into(),
        ];
        let remote = GateTarget {
            home_secret: Some("orders-green-bluegreen-home"),
            ..target()
        };
        let off = SidecarInjection {
            inject: false,
            ..SidecarInjection::default()
        };
        for sidecar in [SidecarInjection::default(), off] {
            let reader = if sidecar.inject {
                SIDECAR_CONTAINER
            } else {
                MAIN_CONTAINER
            };
            for user in &users {
                for by_name in [false, true] {
                    let mut home = user.clone();
                    read_and_inject(&mut home, &sidecar, target());
                    let mut away = user.clone();
                    read_and_inject(&mut away, &sidecar, remote);
                    let volumes = |pod: &Value| {
                        let mut list = pod["spec"]["volumes"]
                            .as_array()
                            .cloned()
                            .unwrap_or_default();
                        list.sort_by_key(ToString::to_string);
                        list
                    };
                    let pod = rendered(&away, by_name);
                    let mut expected = volumes(&rendered(&home, by_name));
                    expected.push(json!({"name": "bluegreen-home", "secret": {"secretName": "orders-green-bluegreen-home"}}));
                    expected.sort_by_key(ToString::to_string);
                    let case = format!("{user:?}, by name: {by_name}, inject: {}", sidecar.inject);
                    assert_eq!(volumes(&pod), expected, "{case}");
                    let mut mounts = Vec::new();
                    for c in containers(&pod) {
                        for m in c["volumeMounts"].as_array().into_iter().flatten() {
                            if m["name"] == HOME_VOLUME {
                                mounts.push((c["name"].clone(), m.clone()));
                            }
                        }
                    }
                    assert_eq!(
                        mounts,
                        [(
                            json!(reader),
                            json!({"name": HOME_VOLUME, "mountPath": HOME_DIR, "readOnly": true})
                        )],
                        "{case}"
                    );
                }
            }
        }
    }

    /// Injecting the sidecar changes the pod the operator renders from the user's templates by
    /// exactly two things, whichever way it merges lists: the sidecar is appended (once), and the
    /// main container's environment gains `BLUEGREEN_SIDECAR_URL`.
    #[test]
    fn the_rendered_pod_keeps_the_users_containers_and_gains_the_sidecar_once() {
        let user_templates: [BTreeMap<String, Value>; 4] = [
            BTreeMap::new(),
            [(
                "podTemplate".to_owned(),
                json!({"spec": {"containers": [{"name": "flink-main-container", "env": [{"name": "A", "value": "1"}]}, {"name": "log-shipper", "image": "fluent"}], "volumes": [{"name": "v"}]}}),
            )]
            .into(),
            [
                (
                    "podTemplate".to_owned(),
                    json!({"spec": {"containers": [{"name": "log-shipper", "image": "fluent"}, {"name": "flink-main-container"}]}}),
                ),
                (
                    "taskManager".to_owned(),
                    json!({"replicas": 2, "podTemplate": {"metadata": {"labels": {"tm": "yes"}}, "spec": {"containers": [{"name": "log-shipper", "args": ["--tm"]}]}}}),
                ),
            ]
            .into(),
            [(
                "taskManager".to_owned(),
                json!({"podTemplate": {"spec": {"containers": [{"name": "flink-main-container", "env": [{"name": "B", "value": "2"}]}, {"name": "tm-only", "image": "x"}]}}}),
            )]
            .into(),
        ];
        let off = SidecarInjection {
            inject: false,
            ..SidecarInjection::default()
        };
        for user in user_templates {
            for by_name in [false, true] {
                let mut without = user.clone();
                read_and_inject(&mut without, &off, target());
                let mut with = user.clone();
                read_and_inject(&mut with, &SidecarInjection::default(), target());
                let baseline = containers(&rendered(&without, by_name));
                let mut injected = containers(&rendered(&with, by_name));
                let sidecar = injected.pop().expect("a container");
                assert_eq!(
                    sidecar["name"], SIDECAR_CONTAINER,
                    "last (by name: {by_name})"
                );
                assert_eq!(sidecar["image"], DEFAULT_SIDECAR_IMAGE);
                assert_eq!(
                    injected.len(),
                    baseline.len(),
                    "{injected:?} vs {baseline:?}"
                );
                for (got, want) in injected.iter().zip(&baseline) {
                    let mut got = got.clone();
                    if got["name"] == MAIN_CONTAINER {
                        let env = got["env"].as_array_mut().expect("env");
                        let url =
                            json!({"name": env::SIDECAR_URL, "value": "http://127.0.0.1:8787"});
                        assert_eq!(env.iter().filter(|v| **v == url).count(), 1, "{env:?}");
                        env.retain(|v| *v != url);
                    }
                    assert_eq!(&got, want, "by name: {by_name}, user templates {user:?}");
                }
            }
        }
    }

    #[test]
    fn the_users_task_manager_fields_are_kept() {
        let mut other: BTreeMap<String, Value> = [(
            "taskManager".to_owned(),
            json!({"replicas": 2, "resource": {"memory": "2048m"}, "podTemplate": {"metadata": {"labels": {"tm": "yes"}}, "spec": {"nodeSelector": {"pool": "flink"}, "containers": [{"name": "flink-main-container", "resources": {"limits": {"cpu": "2"}}}]}}}),
        )]
        .into();
        read_and_inject(&mut other, &SidecarInjection::default(), target());
        let tm = &other["taskManager"];
        assert_eq!(tm["replicas"], 2);
        assert_eq!(tm["resource"]["memory"], "2048m");
        assert_eq!(tm["podTemplate"]["metadata"]["labels"]["tm"], "yes");
        assert_eq!(tm["podTemplate"]["spec"]["nodeSelector"]["pool"], "flink");
        assert_eq!(
            names(&tm["podTemplate"]),
            [MAIN_CONTAINER, SIDECAR_CONTAINER]
        );
        assert_eq!(
            tm["podTemplate"]["spec"]["containers"][0]["resources"]["limits"]["cpu"],
            "2"
        );
    }

    #[test]
    fn a_hand_added_sidecar_is_kept_and_nothing_is_added() {
        for (key, template) in [
            (
                "podTemplate",
                json!({"spec": {"containers": [{"name": "bluegreen-sidecar", "image": "mine"}]}}),
            ),
            (
                "taskManager",
                json!({"podTemplate": {"spec": {"initContainers": [{"name": "bluegreen-sidecar", "image": "mine", "restartPolicy": "Always"}]}}}),
            ),
        ] {
            let mut other: BTreeMap<String, Value> = [(key.to_owned(), template.clone())].into();
            read_and_inject(&mut other, &SidecarInjection::default(), target());
            let text = serde_json::to_string(&other).unwrap();
            assert_eq!(text.matches(SIDECAR_CONTAINER).count(), 1, "{text}");
            assert!(!text.contains(env::SIDECAR_URL), "{text}");
            assert!(text.contains("\"mine\""), "{text}");
        }
    }

    #[test]
    fn turned_off_adds_only_the_gate_environment() {
        let mut other = BTreeMap::new();
        let off = SidecarInjection {
            inject: false,
            ..SidecarInjection::default()
        };
        read_and_inject(&mut other, &off, target());
        assert!(!other.contains_key("taskManager"));
        let text = serde_json::to_string(&other).unwrap();
        assert!(!text.contains(SIDECAR_CONTAINER), "{text}");
        assert!(!text.contains(env::SIDECAR_URL), "{text}");
        assert!(text.contains(env::CONFIGMAP), "{text}");
    }

    #[test]
    fn the_sidecar_container_is_configured_and_listens_on_loopback_only() {
        let sidecar = SidecarInjection {
            inject: true,
            image: Some("registry.example.com/bluegreen/sidecar:9".into()),
            resources: Some(ResourceRequirements {
                limits: Some([("memory".to_owned(), Quantity("128Mi".into()))].into()),
                ..ResourceRequirements::default()
            }),
            port: 9999,
        };
        let c = sidecar_container(&sidecar, target());
        assert_eq!(c.name, SIDECAR_CONTAINER);
        assert_eq!(
            c.image.as_deref(),
            Some("registry.example.com/bluegreen/sidecar:9")
        );
        assert_eq!(c.resources, sidecar.resources);
        let env: BTreeMap<&str, &str> = c
            .env
            .iter()
            .flatten()
            .map(|v| (v.name.as_str(), v.value.as_deref().unwrap()))
            .collect();
        assert_eq!(
            env,
            BTreeMap::from([
                (env::COLOR, "GREEN"),
                (env::CONFIGMAP, "orders-bluegreen"),
                (env::NAMESPACE, "prod"),
                (env::LISTEN, "127.0.0.1:9999"),
            ])
        );
        assert!(
            c.ports.is_none(),
            "nothing is exposed beyond the pod's loopback"
        );
        let security = c.security_context.expect("security context");
        assert_eq!(security.run_as_non_root, Some(true));
        assert_eq!(security.read_only_root_filesystem, Some(true));
        assert_eq!(security.allow_privilege_escalation, Some(false));
        let defaults = sidecar_container(&SidecarInjection::default(), target());
        assert_eq!(defaults.image.as_deref(), Some(DEFAULT_SIDECAR_IMAGE));
        assert_eq!(defaults.resources, Some(default_resources()));
    }

    #[test]
    fn malformed_templates_and_sidecar_settings_name_the_field() {
        let field = |result: Result<PodTemplates, SpecError>| match result {
            Err(SpecError { field, .. }) => field,
            other => panic!("expected a refusal, got {other:?}"),
        };
        let mut s = crate::fixtures::spec("local:///job.jar");
        s.sidecar.port = 80;
        assert_eq!(field(validate(&s)), "spec.sidecar.port");
        s = crate::fixtures::spec("local:///job.jar");
        s.sidecar.image = Some(String::new());
        assert_eq!(field(validate(&s)), "spec.sidecar.image");
        for (key, value, expected) in [
            (
                "podTemplate",
                json!({"spec": {"containers": {"name": "x"}}}),
                COMMON_TEMPLATE_FIELD,
            ),
            (
                "taskManager",
                json!({"podTemplate": {"spec": {"containers": [{"image": "no-name"}]}}}),
                TASK_MANAGER_TEMPLATE_FIELD,
            ),
            ("taskManager", json!("big"), TASK_MANAGER_FIELD),
        ] {
            let mut s = crate::fixtures::spec("local:///job.jar");
            s.template.spec.other.insert(key.into(), value);
            assert_eq!(field(validate(&s)), expected);
        }
        assert!(validate(&crate::fixtures::spec("local:///job.jar")).is_ok());
    }
}
