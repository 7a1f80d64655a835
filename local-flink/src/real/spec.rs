//! The parts of a `FlinkDeployment` spec that real mode runs, as typed structs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::Error;
use crate::secret_volume::{self, SecretMount};

/// The name of the main container in the pod template, as the Apache operator names it.
pub const MAIN_CONTAINER: &str = "flink-main-container";

/// `spec` of a `FlinkDeployment` (the fields real mode uses; the rest is ignored).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeploymentSpec {
    /// `v1_20`, `v2_0`, …: which Flink line runs the job ([`FlinkMajor`](super::FlinkMajor)).
    pub flink_version: Option<String>,
    #[serde(default)]
    pub flink_configuration: BTreeMap<String, String>,
    pub job: Option<JobSpec>,
    pub pod_template: Option<PodTemplate>,
    pub task_manager: Option<TaskManagerSpec>,
}

/// `spec.taskManager` (its pod template only).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskManagerSpec {
    pub pod_template: Option<RawPodTemplate>,
}

/// A pod template whose `spec` is kept as written (for [`secret_volume`]).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RawPodTemplate {
    #[serde(default)]
    pub spec: Value,
}

/// `spec.job`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobSpec {
    #[serde(rename = "jarURI")]
    pub jar_uri: Option<String>,
    pub entry_class: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    pub parallelism: Option<u32>,
    #[serde(default)]
    pub upgrade_mode: UpgradeMode,
    #[serde(default)]
    pub state: JobStateSpec,
    pub initial_savepoint_path: Option<String>,
    #[serde(default)]
    pub allow_non_restored_state: bool,
    pub savepoint_redeploy_nonce: Option<i64>,
}

/// `spec.job.upgradeMode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum UpgradeMode {
    Savepoint,
    LastState,
    #[default]
    Stateless,
}

/// `spec.job.state`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum JobStateSpec {
    #[default]
    Running,
    Suspended,
}

/// `spec.podTemplate`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct PodTemplate {
    pub spec: Option<PodSpec>,
}

/// `spec.podTemplate.spec`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct PodSpec {
    #[serde(default)]
    pub containers: Vec<Container>,
}

/// A container of the pod template.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Container {
    pub name: String,
    #[serde(default)]
    pub env: Vec<EnvVar>,
}

/// An environment variable (`value` only; `valueFrom` is not resolved locally).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnvVar {
    pub name: String,
    pub value: Option<String>,
    pub value_from: Option<Value>,
}

impl DeploymentSpec {
    /// Parses `spec`; a field of the wrong shape is named in the error.
    pub fn parse(spec: &Value) -> Result<Self, Error> {
        let parsed: Self = serde_json::from_value(spec.clone()).map_err(|e| Error::Spec {
            field: "spec",
            problem: e.to_string(),
            fix: "fix the FlinkDeployment spec (see the Apache operator's CRD)",
        })?;
        parsed.job()?;
        parsed.env()?;
        Ok(parsed)
    }

    /// `spec.job` (real mode runs application deployments only).
    pub fn job(&self) -> Result<&JobSpec, Error> {
        self.job.as_ref().ok_or(Error::Spec {
            field: "spec.job",
            problem: "missing".into(),
            fix: "real mode runs application deployments: set spec.job.jarURI",
        })
    }

    /// `spec.job.parallelism`, at least 1 (default 1).
    pub fn parallelism(&self) -> Result<u32, Error> {
        match self.job()?.parallelism {
            Some(0) => Err(Error::Spec {
                field: "spec.job.parallelism",
                problem: "0".into(),
                fix: "set a parallelism of at least 1",
            }),
            p => Ok(p.unwrap_or(1)),
        }
    }

    /// The environment of the main container (`flink-main-container`), as a pod would get it.
    pub fn env(&self) -> Result<Vec<(String, String)>, Error> {
        let containers = self
            .pod_template
            .as_ref()
            .and_then(|t| t.spec.as_ref())
            .map_or(&[][..], |s| s.containers.as_slice());
        let mut env = Vec::new();
        for var in containers
            .iter()
            .filter(|c| c.name == MAIN_CONTAINER)
            .flat_map(|c| &c.env)
        {
            if var.value_from.is_some() {
                return Err(Error::Spec {
                    field: "spec.podTemplate.spec.containers[flink-main-container].env[].valueFrom",
                    problem: format!("{} uses valueFrom", var.name),
                    fix: "real mode has no pod to resolve it in: give the variable a literal value",
                });
            }
            env.push((var.name.clone(), var.value.clone().unwrap_or_default()));
        }
        Ok(env)
    }
}

impl DeploymentSpec {
    /// The Secret volume that holds the kubeconfig of the TaskManager pod template's
    /// `bluegreen-sidecar` (its `KUBECONFIG`), when it has one.
    pub fn sidecar_kubeconfig(&self) -> Option<SecretMount> {
        let template = self.task_manager.as_ref()?.pod_template.as_ref()?;
        secret_volume::kubeconfig_mount(&template.spec)
    }
}

impl JobSpec {
    /// The local jar of `jarURI` (`local:///abs/path.jar` or `file:///abs/path.jar`); it must
    /// exist.
    pub fn jar_path(&self) -> Result<PathBuf, Error> {
        const FIELD: &str = "spec.job.jarURI";
        let uri = self.jar_uri.as_deref().ok_or(Error::Spec {
            field: FIELD,
            problem: "missing".into(),
            fix: "set it to local:///abs/path.jar or file:///abs/path.jar",
        })?;
        let path = uri
            .strip_prefix("local://")
            .or_else(|| uri.strip_prefix("file://"))
            .ok_or_else(|| Error::Spec {
                field: FIELD,
                problem: format!("{uri:?} is not a local jar"),
                fix: "real mode runs jars on this machine: use local:///abs/path.jar or file:///abs/path.jar",
            })?;
        let path = PathBuf::from(path);
        if !path.is_absolute() {
            return Err(Error::Spec {
                field: FIELD,
                problem: format!("{uri:?} has a relative path"),
                fix: "use an absolute path, e.g. local:///opt/jobs/job.jar",
            });
        }
        if !path.is_file() {
            return Err(Error::Spec {
                field: FIELD,
                problem: format!("{} does not exist", path.display()),
                fix: "build the jar first or point jarURI at an existing file",
            });
        }
        Ok(path)
    }
}

/// The spec without `job.state` (a state change is a suspend or resume, not an upgrade).
pub(crate) fn deployable(spec: &Value) -> Value {
    let mut s = spec.clone();
    if let Some(job) = s.get_mut("job").and_then(Value::as_object_mut) {
        job.remove("state");
    }
    s
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_main_containers_env_and_the_job_fields_are_read() {
        let spec = DeploymentSpec::parse(&json!({
            "flinkConfiguration": {"a": "b"},
            "job": {"jarURI": "local:///x.jar", "upgradeMode": "last-state", "state": "suspended", "parallelism": 2},
            "podTemplate": {"spec": {"containers": [
                {"name": "sidecar", "env": [{"name": "X", "value": "no"}]},
                {"name": "flink-main-container", "env": [{"name": "BLUEGREEN_COLOR", "value": "BLUE"}]},
            ]}},
        }))
        .expect("valid");
        let job = spec.job().expect("job");
        assert_eq!(job.upgrade_mode, UpgradeMode::LastState);
        assert_eq!(job.state, JobStateSpec::Suspended);
        assert_eq!(spec.parallelism().expect("p"), 2);
        assert_eq!(
            spec.env().expect("env"),
            vec![("BLUEGREEN_COLOR".into(), "BLUE".into())]
        );
    }

    #[test]
    fn the_sidecars_kubeconfig_volume_is_read_from_the_task_manager_pod_template() {
        let sidecar = json!({
            "name": "bluegreen-sidecar",
            "env": [{"name": "KUBECONFIG", "value": "/etc/bluegreen/home/kubeconfig"}],
            "volumeMounts": [{"name": "bluegreen-home", "mountPath": "/etc/bluegreen/home"}],
        });
        let volumes = json!([{"name": "bluegreen-home", "secret": {"secretName": "orders-green-bluegreen-home"}}]);
        let spec = DeploymentSpec::parse(&json!({
            "job": {"jarURI": "local:///x.jar"},
            "taskManager": {"resource": {"cpu": 1}, "podTemplate": {"spec": {
                "containers": [sidecar.clone()], "volumes": volumes.clone(),
            }}},
        }))
        .expect("valid");
        let mount = spec.sidecar_kubeconfig().expect("a mount");
        assert_eq!(
            (mount.secret.as_str(), mount.file.as_str()),
            ("orders-green-bluegreen-home", "kubeconfig")
        );
        // In the common pod template only, or no taskManager at all: the runner's kubeconfig.
        for spec in [
            json!({"job": {"jarURI": "local:///x.jar"}, "podTemplate": {"spec": {"containers": [sidecar], "volumes": volumes}}}),
            json!({"job": {"jarURI": "local:///x.jar"}, "taskManager": {"resource": {"cpu": 1}}}),
        ] {
            let spec = DeploymentSpec::parse(&spec).expect("valid");
            assert_eq!(spec.sidecar_kubeconfig(), None);
        }
    }

    #[test]
    fn a_jar_uri_that_is_not_local_names_the_field_and_the_fix() {
        let spec = DeploymentSpec::parse(&json!({"job": {"jarURI": "s3://bucket/job.jar"}}))
            .expect("parses");
        let err = spec
            .job()
            .expect("job")
            .jar_path()
            .expect_err("not local")
            .to_string();
        assert!(
            err.contains("spec.job.jarURI") && err.contains("local:///"),
            "{err}"
        );
        let err = DeploymentSpec::parse(
            &json!({"job": {"jarURI": "local:///x.jar", "upgradeMode": "never"}}),
        )
        .expect_err("bad mode")
        .to_string();
        assert!(err.contains("never") && err.contains("last-state"), "{err}");
    }
}
