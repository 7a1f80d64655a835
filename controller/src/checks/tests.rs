//! The bad-input table of `FlinkBlueGreenDeployment` specs (issue 14, item 5): every invalid spec
//! is refused either by the API server, by our CRD's schema (a 422 naming the field; checked here
//! with the local API server's validator), or by the controller: then the plan touches nothing
//! that runs and reports `Degraded/InvalidSpec` and one Warning event, both naming the field and
//! the fix. `tests/tests/bad_specs.rs` applies representative rows to a running deployment on
//! the local stack.

use bluegreen_protocol::{Color, CoordinationState, Stage, Toggle};
use kube::CustomResourceExt;
use serde_json::{Value, json};

use super::*;
use crate::error::SpecError;
use crate::fixtures::{Scenario, observed, running};
use crate::handover::{Action, Plan, plan};
use crate::observed::{ConfigMapObs, Observed};
use crate::resource::{FlinkBlueGreenDeployment, Phase};

/// Where a bad spec is refused.
#[derive(Debug, Clone, Copy)]
enum Refused {
    /// By the API server, from our CRD's schema: the 422 names this field.
    Admission(&'static str),
    /// By the controller: condition and event name the field and contain the fix.
    Controller {
        field: &'static str,
        fix: &'static str,
    },
}

use Refused::{Admission, Controller};

/// The live job's gates have passed event time 70 000 (watermark 69 000); the last handover left
/// the floor at 50 000.
const PROGRESS: i64 = 70_000;
const FLOOR: i64 = 50_000;

const NAME_40: &str = "orders-with-a-name-that-is-far-too-long0";
const NAME_39: &str = "orders-with-a-name-that-is-far-too-long";

/// (case, resource name, merge patch of the resource, where it is refused).
#[allow(
    clippy::too_many_lines,
    reason = "one row per bad input, read top to bottom"
)]
fn table() -> Vec<(&'static str, &'static str, Value, Refused)> {
    let template = |spec: Value| json!({"spec": {"template": {"spec": spec}}});
    let job = |job: Value| template(json!({ "job": job }));
    let coordination = |c: Value| json!({"spec": {"coordination": c}});
    let ok = "orders";
    vec![
        (
            "missing template",
            ok,
            json!({"spec": {"template": null}}),
            Admission("spec.template"),
        ),
        (
            "template without a job",
            ok,
            template(json!({"job": null})),
            Admission("spec.template.spec.job"),
        ),
        (
            "empty jar",
            ok,
            job(json!({"jarURI": " "})),
            Controller {
                field: "spec.template.spec.job.jarURI",
                fix: "must name the job jar",
            },
        ),
        (
            "parallelism 0",
            ok,
            job(json!({"parallelism": 0})),
            Controller {
                field: "spec.template.spec.job.parallelism",
                fix: "at least 1",
            },
        ),
        (
            "negative parallelism",
            ok,
            job(json!({"parallelism": -4})),
            Controller {
                field: "spec.template.spec.job.parallelism",
                fix: "at least 1",
            },
        ),
        (
            "parallelism not a number",
            ok,
            job(json!({"parallelism": "two"})),
            Admission("spec.template.spec.job.parallelism"),
        ),
        (
            "negative duration",
            ok,
            coordination(json!({"abortGracePeriod": "-5m"})),
            Controller {
                field: "spec.coordination.abortGracePeriod",
                fix: "must be >= 0",
            },
        ),
        (
            "minReady not a duration",
            ok,
            coordination(json!({"minReady": "ten seconds"})),
            Controller {
                field: "spec.coordination.minReady",
                fix: "write e.g. 30s",
            },
        ),
        (
            "negative lag",
            ok,
            coordination(json!({"health": {"maxLag": "-1s"}})),
            Controller {
                field: "spec.coordination.health.maxLag",
                fix: "must be >= 0",
            },
        ),
        (
            "absurd deletion delay",
            ok,
            coordination(json!({"deploymentDeletionDelay": "10000h"})),
            Controller {
                field: "spec.coordination.deploymentDeletionDelay",
                fix: "at most 7 days",
            },
        ),
        (
            "absurd toggle offset",
            ok,
            coordination(json!({"toggle": {"offset": "2562047788015215h"}})),
            Controller {
                field: "spec.coordination.toggle.offset",
                fix: "at most 7 days",
            },
        ),
        (
            "absurd savepoint backoff",
            ok,
            coordination(json!({"savepoint": {"backoff": "200h", "maxAttempts": 40}})),
            Controller {
                field: "spec.coordination.savepoint.backoff",
                fix: "at most 7 days",
            },
        ),
        (
            "a duration that is not one",
            ok,
            coordination(json!({"savepoint": {"timeout": "ten minutes"}})),
            Controller {
                field: "spec.coordination.savepoint.timeout",
                fix: "write e.g. 30s",
            },
        ),
        (
            "no savepoint attempt",
            ok,
            coordination(json!({"savepoint": {"maxAttempts": 0}})),
            Controller {
                field: "spec.coordination.savepoint.maxAttempts",
                fix: "at least 1",
            },
        ),
        (
            "negative savepoint attempts",
            ok,
            coordination(json!({"savepoint": {"maxAttempts": -1}})),
            Admission("spec.coordination.savepoint.maxAttempts"),
        ),
        (
            "negative checkpoints",
            ok,
            coordination(json!({"health": {"minCheckpoints": -1}})),
            Admission("spec.coordination.health.minCheckpoints"),
        ),
        (
            "unknown restoreFrom",
            ok,
            coordination(json!({"restoreFrom": "latest"})),
            Admission("spec.coordination.restoreFrom"),
        ),
        (
            "unknown promotion",
            ok,
            coordination(json!({"promotion": "later"})),
            Admission("spec.coordination.promotion"),
        ),
        (
            "unknown onDelete",
            ok,
            coordination(json!({"onDelete": "keep"})),
            Admission("spec.coordination.onDelete"),
        ),
        (
            "unknown upgradeMode",
            ok,
            job(json!({"upgradeMode": "fast"})),
            Controller {
                field: "spec.template.spec.job.upgradeMode",
                fix: "`savepoint` or `last-state`",
            },
        ),
        (
            "stateless without asking for it",
            ok,
            job(json!({"upgradeMode": "stateless"})),
            Controller {
                field: "spec.template.spec.job.upgradeMode",
                fix: "restoreFrom: stateless",
            },
        ),
        (
            "unknown job state",
            ok,
            job(json!({"state": "paused"})),
            Controller {
                field: "spec.template.spec.job.state",
                fix: "`running` or `suspended`",
            },
        ),
        (
            "unknown Flink mode",
            ok,
            template(json!({"mode": "cluster"})),
            Controller {
                field: "spec.template.spec.mode",
                fix: r#""native", "standalone""#,
            },
        ),
        (
            "unknown Flink version",
            ok,
            template(json!({"flinkVersion": "v1_12"})),
            Controller {
                field: "spec.template.spec.flinkVersion",
                fix: r#""v1_20""#,
            },
        ),
        (
            "template field of the wrong type",
            ok,
            template(json!({"taskManager": {"replicas": "two"}})),
            Controller {
                field: "spec.template.spec.taskManager.replicas",
                fix: "must be an integer",
            },
        ),
        (
            "memory as a number",
            ok,
            template(json!({"jobManager": {"resource": {"memory": 2048}}})),
            Controller {
                field: "spec.template.spec.jobManager.resource.memory",
                fix: "must be a string",
            },
        ),
        (
            "pod template that is not a pod",
            ok,
            template(json!({"podTemplate": {"spec": {"volumes": {"name": "data"}}}})),
            Controller {
                field: "spec.template.spec.podTemplate.spec.volumes",
                fix: "must be an array",
            },
        ),
        (
            "both offset and value",
            ok,
            coordination(json!({"toggle": {"offset": "1m", "value": PROGRESS + 1_000}})),
            Controller {
                field: "spec.coordination.toggle",
                fix: "not both",
            },
        ),
        (
            "neither offset nor value",
            ok,
            coordination(json!({"toggle": {"offset": null}})),
            Controller {
                field: "spec.coordination.toggle",
                fix: "set `offset`",
            },
        ),
        (
            "W in the past",
            ok,
            coordination(json!({"toggle": {"offset": null, "value": PROGRESS - 1}})),
            Controller {
                field: "spec.coordination.toggle.value",
                fix: "set a later value",
            },
        ),
        (
            "W at the live job's progress",
            ok,
            coordination(json!({"toggle": {"offset": null, "value": PROGRESS}})),
            Controller {
                field: "spec.coordination.toggle.value",
                fix: "progress 70000",
            },
        ),
        (
            "W at the floor",
            ok,
            coordination(json!({"toggle": {"offset": null, "value": FLOOR}})),
            Controller {
                field: "spec.coordination.toggle.value",
                fix: "the floor 50000",
            },
        ),
        (
            "lastCheckpoint with one retained checkpoint",
            ok,
            coordination(json!({"restoreFrom": "lastCheckpoint"})),
            Controller {
                field: "spec.template.spec.flinkConfiguration[state.checkpoints.num-retained]",
                fix: "2 or more",
            },
        ),
        (
            "name too long for the children",
            NAME_40,
            json!({}),
            Controller {
                field: "metadata.name",
                fix: "at most 39",
            },
        ),
        (
            "name that is no DNS-1035 label",
            "orders.v2",
            json!({}),
            Controller {
                field: "metadata.name",
                fix: "DNS-1035",
            },
        ),
        (
            "name starting with a digit",
            "2orders",
            json!({}),
            Controller {
                field: "metadata.name",
                fix: "starting with a letter",
            },
        ),
    ]
}

/// RFC 7396 JSON merge patch.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let map = target.as_object_mut().expect("an object");
    for (key, value) in patch {
        if value.is_null() {
            map.remove(key);
        } else {
            merge(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// The valid resource every case patches, as the API server stores it.
fn base(name: &str) -> Value {
    let spec = crate::fixtures::spec("local:///opt/flink/usrlib/orders.jar");
    json!({
        "apiVersion": "bluegreen.dev/v1alpha1",
        "kind": "FlinkBlueGreenDeployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    })
}

/// What our CRD's schema says about `object` (the API server's 422 causes, as field paths).
fn admission_errors(object: &Value) -> Vec<String> {
    let crd = serde_json::to_value(FlinkBlueGreenDeployment::crd()).expect("the CRD serialises");
    bluegreen_local_apiserver::validate_against_crd(&crd, "v1alpha1", object)
        .expect("our CRD has a v1alpha1 schema")
        .errors
        .into_iter()
        .map(|cause| format!("{}: {}", cause.field, cause.message))
        .collect()
}

/// A steady deployment on blue whose template has just changed (a handover would start): the
/// live job's gates report [`PROGRESS`], the floor is [`FLOOR`].
fn steady_with_new_template(valid: Result<ValidSpec, SpecError>) -> Observed {
    let mut obs = observed();
    obs.valid = valid;
    obs.template_hash = "h2".into();
    obs.status.active_color = Some(Color::Blue);
    obs.status.deployed_template_hash = Some("h1".into());
    obs.status.epoch = 1;
    obs.status.floor = Some(FLOOR);
    obs.configmap = ConfigMapObs::Valid(CoordinationState {
        active: Color::Blue,
        deletion_delay_ms: 0,
        stage: Stage::Running,
        toggle: Toggle::NotSet,
        epoch: 1,
        floor: Some(FLOOR),
    });
    obs.blue(running("h1", 1, 0, Some(PROGRESS), PROGRESS - 1_000))
}

fn degraded(plan: &Plan) -> (String, String, String) {
    plan.status
        .conditions
        .iter()
        .find(|c| c.type_ == crate::conditions::ConditionType::Degraded.as_str())
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

#[test]
fn every_bad_spec_is_refused_naming_the_field_and_the_fix_and_nothing_runs() {
    let rows = table();
    for (case, name, patch, refused) in &rows {
        let mut object = base(name);
        merge(&mut object, patch);
        let at_admission = admission_errors(&object);
        match *refused {
            Admission(field) => {
                assert!(
                    at_admission.iter().any(|e| e.starts_with(field)),
                    "{case}: the API server should refuse `{field}`, says {at_admission:?}"
                );
            }
            Controller { field, fix } => {
                assert!(
                    at_admission.is_empty(),
                    "{case}: the API server already refuses it: {at_admission:?}; the row should say Admission"
                );
                let fbgd: FlinkBlueGreenDeployment = serde_json::from_value(object)
                    .unwrap_or_else(|e| panic!("{case}: the controller cannot read it: {e}"));
                let obs = steady_with_new_template(validate_resource(name, &fbgd.spec));
                let p = plan(&obs);
                assert!(
                    p.actions.is_empty(),
                    "{case}: nothing may run: {:?}",
                    p.actions
                );
                assert!(p.status.transition.is_none(), "{case}: no handover");
                let (status, reason, message) = degraded(&p);
                assert_eq!(
                    (status.as_str(), reason.as_str()),
                    ("True", "InvalidSpec"),
                    "{case}"
                );
                assert!(
                    message.contains(&format!("`{field}`")) && message.contains(fix),
                    "{case}: the condition should name `{field}` and say {fix:?}: {message}"
                );
                let warnings: Vec<_> = p
                    .notes
                    .iter()
                    .filter(|n| n.warning && n.reason == crate::events::EventReason::InvalidSpec)
                    .collect();
                assert!(
                    warnings.len() == 1 && warnings[0].message == message,
                    "{case}: one Warning event with the condition's message: {:?}",
                    p.notes
                );
                // The next resync keeps the condition but publishes no second event.
                let mut again = obs.clone();
                again.status = p.status.clone();
                let p2 = plan(&again);
                assert_eq!(degraded(&p2).2, message, "{case}");
                assert!(
                    p2.notes
                        .iter()
                        .all(|n| n.reason != crate::events::EventReason::InvalidSpec),
                    "{case}: {:?}",
                    p2.notes
                );
            }
        }
    }
    println!("{} bad specs refused", rows.len());
}

#[test]
fn the_base_spec_and_the_longest_name_are_valid_and_start_the_handover() {
    for name in ["orders", NAME_39] {
        let fbgd: FlinkBlueGreenDeployment = serde_json::from_value(base(name)).expect("readable");
        assert!(admission_errors(&base(name)).is_empty());
        let p = plan(&steady_with_new_template(validate_resource(
            name, &fbgd.spec,
        )));
        assert_eq!(degraded(&p).0, "False", "{name}");
        assert_eq!(
            p.status.transition.as_ref().map(|t| t.phase),
            Some(Phase::Snapshotting),
            "{name}"
        );
    }
    // A W after both the progress and the floor is taken as it is.
    let mut object = base("orders");
    merge(
        &mut object,
        &json!({"spec": {"coordination": {"toggle": {"offset": null, "value": PROGRESS + 1}}}}),
    );
    let fbgd: FlinkBlueGreenDeployment = serde_json::from_value(object).expect("readable");
    let p = plan(&steady_with_new_template(validate_resource(
        "orders", &fbgd.spec,
    )));
    assert!(
        matches!(
            p.actions.first(),
            Some(Action::TriggerSavepoint {
                color: Color::Blue,
                ..
            })
        ),
        "{:?}",
        p.actions
    );
}

#[test]
fn the_vendored_schema_is_the_upstream_crd_spec() {
    let crd = bluegreen_local_flink::crd::flink_deployment_crd().expect("the upstream CRD");
    let upstream = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|versions| {
            versions
                .iter()
                .find(|v| v["name"] == "v1beta1")
                .and_then(|v| v.pointer("/schema/openAPIV3Schema/properties/spec"))
        })
        .expect("FlinkDeployment v1beta1 has a spec schema");
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schemas/flinkdeployment-v1beta1-spec.json"
    );
    if std::env::var_os("BLUEGREEN_BLESS").is_some() {
        let text = serde_json::to_string(upstream).expect("serialises") + "\n";
        std::fs::write(path, text).expect("write the vendored schema");
    }
    assert!(
        schema::schema() == upstream,
        "{path} is not the spec schema of local-flink/crds/flinkdeployments.flink.apache.org-v1.yml; \
         regenerate it with BLUEGREEN_BLESS=1 cargo test -p bluegreen-controller vendored_schema"
    );
}
