//! The local stack the demo and the end-to-end tests run on ([`stack`]: the in-process
//! Kubernetes API server with both CRDs, the local Flink runner on a scaled clock, and the
//! controller — the same code as `bluegreen-controller run`, pointed at them through an ordinary
//! `kube::Client`), and the sample job they run ([`orders_job`]).

pub mod audit;
pub mod calls;
pub mod cross_cluster;
pub mod kafka;
pub mod real;
pub mod reliability;
pub mod sql;
pub mod stack;
pub mod visibility;

use std::collections::BTreeMap;

use bluegreen_controller::resource::{
    Coordination, FlinkBlueGreenDeploymentSpec, FlinkDeploymentSpec, FlinkDeploymentTemplate,
    JobSpec, ToggleChoice,
};
use serde_json::json;

pub use stack::{LocalStack, NAMESPACE, StackOptions, ledger_report};

/// The sample job: a keyed running count over a 4-split topic with out-of-order and late
/// records, gated before its sink. `version` goes into the image tag.
pub fn orders_job(version: &str, parallelism: i32) -> FlinkBlueGreenDeploymentSpec {
    let conf: BTreeMap<String, String> = [
        ("bluegreen.sim.splits", "4"),
        ("bluegreen.sim.records-per-second", "20"),
        ("bluegreen.sim.out-of-orderness-ms", "500"),
        ("bluegreen.sim.late-fraction", "0.01"),
        ("bluegreen.sim.late-max-ms", "2000"),
        ("bluegreen.sim.version", version),
        ("execution.checkpointing.interval", "5s"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    FlinkBlueGreenDeploymentSpec {
        template: FlinkDeploymentTemplate {
            metadata: bluegreen_controller::resource::TemplateMetadata::default(),
            spec: FlinkDeploymentSpec {
                image: Some(format!("example.com/orders:{version}")),
                flink_version: Some("v1_20".into()),
                flink_configuration: conf,
                job: JobSpec {
                    jar_uri: "local:///opt/flink/usrlib/orders.jar".into(),
                    parallelism: Some(parallelism),
                    upgrade_mode: Some("savepoint".into()),
                    ..JobSpec::default()
                },
                other: [
                    ("serviceAccount".to_owned(), json!("flink")),
                    (
                        "jobManager".to_owned(),
                        json!({"resource": {"memory": "1024m", "cpu": 0.5}}),
                    ),
                    (
                        "taskManager".to_owned(),
                        json!({"resource": {"memory": "2048m", "cpu": 1}}),
                    ),
                ]
                .into(),
            },
        },
        coordination: Coordination {
            toggle: ToggleChoice {
                offset: Some("10s".into()),
                value: None,
            },
            deployment_deletion_delay: "1s".into(),
            abort_grace_period: "30s".into(),
            min_ready: "1s".into(),
            ..Coordination::default()
        },
        sidecar: bluegreen_controller::resource::SidecarInjection::default(),
        cluster: None,
    }
}
