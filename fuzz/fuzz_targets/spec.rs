//! Spec validation (`bluegreen_controller::checks::validate_resource`: the name, the settings
//! and the template against the upstream FlinkDeployment schema) on arbitrary JSON or YAML, then
//! the handover planner driven by every spec it accepts.
//!
//! Input: text. A first line `#name: NAME` names the resource (default `orders`). The rest is
//! the `spec` of a `FlinkBlueGreenDeployment` as JSON (how the controller reads it from the API
//! server) or, when it is no JSON, YAML (how people write it).
//!
//! Checked: nothing panics; a refusal names a field of the resource (`spec.…` or
//! `metadata.name`); an accepted spec plans a handover from a running blue job, replanned with
//! its own status while the clock jumps ahead (up to 100 years) and the savepoints fail
//! (`exercise::drive`), without panicking: the durations, backoffs and deadlines of the
//! spec meet the planner's clock arithmetic there.
#![no_main]

use bluegreen_controller::checks::validate_resource;
use bluegreen_controller::exercise;
use bluegreen_controller::resource::FlinkBlueGreenDeploymentSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let (name, body) = match text
        .strip_prefix("#name: ")
        .and_then(|rest| rest.split_once('\n'))
    {
        Some((name, body)) => (name, body),
        None => ("orders", text),
    };
    let spec: FlinkBlueGreenDeploymentSpec = match serde_json::from_str(body) {
        Ok(spec) => spec,
        Err(_) => match serde_yaml::from_str(body) {
            Ok(spec) => spec,
            Err(_) => return,
        },
    };
    let valid = match validate_resource(name, &spec) {
        Ok(valid) => valid,
        Err(refused) => {
            assert!(
                refused.field.starts_with("spec.") || refused.field == "metadata.name",
                "{refused}"
            );
            return;
        }
    };
    let _ = exercise::drive(&spec, valid);
});
