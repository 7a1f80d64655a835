//! The `FlinkDeployment` status the local operator writes, with the Apache operator's field
//! names and values (`status.lifecycleState`, `status.jobManagerDeploymentStatus`,
//! `status.jobStatus`, `status.reconciliationStatus`, `status.error`). Pure: no client.

use bluegreen_protocol::flink::{JobStatus, LifecycleState, ReconciliationState};
use bluegreen_protocol::wire::flink_deployment;
use serde_json::{Value, json};

/// `status.jobManagerDeploymentStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JmStatus {
    Missing,
    Deploying,
    DeployedNotReady,
    Ready,
    Error,
}

impl JmStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "MISSING",
            Self::Deploying => "DEPLOYING",
            Self::DeployedNotReady => "DEPLOYED_NOT_READY",
            Self::Ready => "READY",
            Self::Error => "ERROR",
        }
    }
}

/// Everything the status says, in one place; rendered by [`StatusModel::to_json`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StatusModel {
    pub lifecycle: LifecycleState,
    pub jm: JmStatus,
    pub job_state: Option<JobStatus>,
    pub job_id: Option<String>,
    pub job_name: String,
    pub start_time_ms: Option<i64>,
    pub update_time_ms: i64,
    pub upgrade_savepoint_path: Option<String>,
    pub last_savepoint: Option<(String, i64)>,
    pub error: Option<String>,
    pub reconciled_spec: Option<Value>,
    pub stable_spec: Option<Value>,
    pub reconciliation_ms: i64,
    pub upgrading: bool,
    pub observed_generation: Option<i64>,
}

impl StatusModel {
    pub fn new(job_name: String) -> Self {
        Self {
            lifecycle: LifecycleState::Created,
            jm: JmStatus::Missing,
            job_state: None,
            job_id: None,
            job_name,
            start_time_ms: None,
            update_time_ms: 0,
            upgrade_savepoint_path: None,
            last_savepoint: None,
            error: None,
            reconciled_spec: None,
            stable_spec: None,
            reconciliation_ms: 0,
            upgrading: false,
            observed_generation: None,
        }
    }

    fn spec_string(spec: Option<&Value>, first: bool) -> Value {
        spec.map_or(Value::Null, |s| {
            Value::String(
                json!({
                    "spec": s,
                    "resource_metadata": {"apiVersion": flink_deployment::API_VERSION, "firstDeployment": first},
                })
                .to_string(),
            )
        })
    }

    /// The `status` object. Absent values are `null`, so that a JSON merge patch clears them.
    pub fn to_json(&self) -> Value {
        let savepoint_info = json!({
            "lastSavepoint": self.last_savepoint.as_ref().map(|(location, ts)| json!({
                "timeStamp": ts,
                "location": location,
                "triggerType": "UPGRADE",
                "formatType": "CANONICAL",
            })),
        });
        json!({
            "lifecycleState": self.lifecycle.as_str(),
            "jobManagerDeploymentStatus": self.jm.as_str(),
            "error": self.error,
            "observedGeneration": self.observed_generation,
            "jobStatus": {
                "jobName": self.job_name,
                "jobId": self.job_id,
                "state": self.job_state.map(JobStatus::as_str),
                "startTime": self.start_time_ms.map(|t| t.to_string()),
                "updateTime": self.update_time_ms.to_string(),
                "upgradeSavepointPath": self.upgrade_savepoint_path,
                "savepointInfo": savepoint_info,
            },
            "reconciliationStatus": {
                "reconciliationTimestamp": self.reconciliation_ms,
                "lastReconciledSpec": Self::spec_string(self.reconciled_spec.as_ref(), self.stable_spec.is_none()),
                "lastStableSpec": Self::spec_string(self.stable_spec.as_ref(), false),
                "state": if self.upgrading {
                    ReconciliationState::Upgrading
                } else {
                    ReconciliationState::Deployed
                }
                .as_str(),
            },
            "clusterInfo": {"flink-version": "1.20.1", "flink-revision": "bluegreen-local"},
        })
    }
}

/// Merge-patches `status` into the FlinkDeployment's status subresource, retrying conflicts and
/// transient errors a few times; `false` when the resource is gone or every attempt failed.
pub(crate) async fn write_status(
    api: &kube::Api<kube::api::DynamicObject>,
    key: &super::DeploymentRef,
    status: &Value,
) -> bool {
    use kube::api::{Patch, PatchParams};
    let patch = json!({ "status": status });
    for attempt in 0..5_u64 {
        match api
            .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return true,
            Err(kube::Error::Api(e)) if e.code == 404 => return false,
            Err(e) => {
                tracing::debug!(deployment = %key, error = %e, "status write failed; retrying");
                tokio::time::sleep(std::time::Duration::from_millis(20 * (attempt + 1))).await;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_uses_the_apache_operator_field_names() {
        let mut s = StatusModel::new("orders".into());
        s.lifecycle = LifecycleState::Stable;
        s.jm = JmStatus::Ready;
        s.job_state = Some(JobStatus::Running);
        s.job_id = Some("ab".into());
        s.start_time_ms = Some(5);
        s.reconciled_spec = Some(json!({"job": {"parallelism": 2}}));
        let v = s.to_json();
        assert_eq!(v["lifecycleState"], "STABLE");
        assert_eq!(v["jobManagerDeploymentStatus"], "READY");
        assert_eq!(v["jobStatus"]["state"], "RUNNING");
        assert_eq!(v["jobStatus"]["startTime"], "5");
        assert_eq!(v["reconciliationStatus"]["state"], "DEPLOYED");
        let spec: Value = serde_json::from_str(
            v["reconciliationStatus"]["lastReconciledSpec"]
                .as_str()
                .expect("a JSON string"),
        )
        .expect("valid JSON");
        assert_eq!(spec["spec"]["job"]["parallelism"], 2);
        assert!(v["error"].is_null());
    }
}
