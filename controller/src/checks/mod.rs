//! Validation of a `FlinkBlueGreenDeployment`, once per observation, into a [`ValidSpec`]: its
//! name, from which the children's names and Flink's cluster ids derive, its job fields and
//! coordination settings ([`settings::validate`]), its pod templates and sidecar
//! ([`injection::validate`]), the TaskManagers' service account ([`gate_rbac::service_account`])
//! and its template by the upstream `FlinkDeployment` schema ([`schema`]). Pure: a refused
//! resource changes nothing that runs (the plan reports `Degraded/InvalidSpec` and a Warning
//! event naming the field).

pub mod cluster;
pub mod schema;
#[cfg(test)]
mod tests;

use crate::error::SpecError;
use crate::gate_rbac;
use crate::injection::{self, PodTemplates};
use crate::resource::FlinkBlueGreenDeploymentSpec;
use crate::settings::{self, Settings};

/// Flink's limit on a Kubernetes cluster id, which is the child `FlinkDeployment`'s name
/// (`Constants.MAXIMUM_CHARACTERS_OF_CLUSTER_ID` in flink-kubernetes).
pub const MAX_CLUSTER_ID_LEN: usize = 45;

/// The longest resource name whose children (`<name>-blue`, `<name>-green`) Flink accepts:
/// 45 − `-green`. The ConfigMap `<name>-bluegreen` (253) and the label values (63) then fit too.
pub const MAX_NAME_LEN: usize = MAX_CLUSTER_ID_LEN - "-green".len();

/// What validation found in a spec that passed every check: what the plan and the rendering of
/// the children use.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidSpec {
    /// The coordination settings.
    pub settings: Settings,
    /// The user's pod templates, parsed.
    pub pod_templates: PodTemplates,
    /// The service account the TaskManagers run with (their gates' RoleBinding names it).
    pub service_account: String,
}

/// Validates the whole resource: its name, then its spec ([`validate_spec`]). The first problem
/// found is the error, naming the field and the fix.
pub fn validate_resource(
    name: &str,
    spec: &FlinkBlueGreenDeploymentSpec,
) -> Result<ValidSpec, SpecError> {
    check_name(name)?;
    validate_spec(spec)
}

/// Validates a spec: its settings, its target cluster's fields, its pod templates and sidecar,
/// the TaskManagers' service account, then its template against the upstream schema.
pub fn validate_spec(spec: &FlinkBlueGreenDeploymentSpec) -> Result<ValidSpec, SpecError> {
    let settings = settings::validate(spec)?;
    cluster::check(spec)?;
    let pod_templates = injection::validate(spec)?;
    let service_account = gate_rbac::service_account(&spec.template.spec)?;
    schema::check_template(&spec.template.spec)?;
    Ok(ValidSpec {
        settings,
        pod_templates,
        service_account,
    })
}

/// The children are named `<name>-blue` and `<name>-green`; the Apache operator uses a child's
/// name as Flink's cluster id and names its Services after it, so `name` must be a DNS-1035
/// label (a lowercase letter, then lowercase letters, digits or `-`, not ending in `-`) of at
/// most [`MAX_NAME_LEN`] characters.
pub fn check_name(name: &str) -> Result<(), SpecError> {
    let refuse = |what: String| {
        SpecError::new(
            "metadata.name",
            format!(
                "{name:?} {what}: the children are named {name}-blue and {name}-green, and Flink \
             uses a child's name as its cluster id (a DNS-1035 label of at most \
             {MAX_CLUSTER_ID_LEN} characters); recreate the resource under a name of at most \
             {MAX_NAME_LEN} lowercase letters, digits and '-', starting with a letter"
            ),
        )
    };
    let length = name.chars().count();
    if length > MAX_NAME_LEN {
        return Err(refuse(format!(
            "is {length} characters long, {} over {MAX_NAME_LEN}",
            length - MAX_NAME_LEN
        )));
    }
    let starts_with_letter = name.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    let allowed = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !starts_with_letter || !allowed || name.ends_with('-') {
        return Err(refuse("is not a DNS-1035 label".to_owned()));
    }
    Ok(())
}
