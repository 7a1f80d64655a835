//! Checks of a `FlinkBlueGreenDeployment` beyond its coordination settings
//! ([`settings::validate`]): its name, from which the children's
//! names and Flink's cluster ids derive, and its template, by the upstream `FlinkDeployment`
//! schema ([`schema`]). Pure, like `settings`: a refused resource changes nothing that runs
//! (the plan reports `Degraded/InvalidSpec` and a Warning event naming the field).

#[cfg(any(test, feature = "fuzzing"))]
pub mod exercise;
pub mod schema;
#[cfg(test)]
mod tests;

use crate::error::Error;
use crate::resource::FlinkBlueGreenDeploymentSpec;
use crate::settings::{self, Settings};

/// Flink's limit on a Kubernetes cluster id, which is the child `FlinkDeployment`'s name
/// (`Constants.MAXIMUM_CHARACTERS_OF_CLUSTER_ID` in flink-kubernetes).
pub const MAX_CLUSTER_ID_LEN: usize = 45;

/// The longest resource name whose children (`<name>-blue`, `<name>-green`) Flink accepts:
/// 45 − `-green`. The ConfigMap `<name>-bluegreen` (253) and the label values (63) then fit too.
pub const MAX_NAME_LEN: usize = MAX_CLUSTER_ID_LEN - "-green".len();

/// Validates the whole resource: its name, its settings, then its template against the
/// upstream schema. The first problem found is the error, naming the field and the fix.
pub fn validate_resource(
    name: &str,
    spec: &FlinkBlueGreenDeploymentSpec,
) -> Result<Settings, Error> {
    check_name(name)?;
    let settings = settings::validate(spec)?;
    schema::check_template(&spec.template.spec)?;
    Ok(settings)
}

/// [`validate_resource`] as the plan takes it (`Observed::settings`): the field and the message
/// of a refusal, or the settings.
pub fn settings_for_plan(
    name: &str,
    spec: &FlinkBlueGreenDeploymentSpec,
) -> Result<Settings, (String, String)> {
    validate_resource(name, spec).map_err(|e| match e {
        Error::InvalidSpec { field, message } => (field.to_owned(), message),
        Error::InvalidField { field, message } => (field, message),
        other => (String::new(), other.to_string()),
    })
}

/// The children are named `<name>-blue` and `<name>-green`; the Apache operator uses a child's
/// name as Flink's cluster id and names its Services after it, so `name` must be a DNS-1035
/// label (a lowercase letter, then lowercase letters, digits or `-`, not ending in `-`) of at
/// most [`MAX_NAME_LEN`] characters.
pub fn check_name(name: &str) -> Result<(), Error> {
    let refuse = |what: String| Error::InvalidField {
        field: "metadata.name".to_owned(),
        message: format!(
            "{name:?} {what}: the children are named {name}-blue and {name}-green, and Flink \
             uses a child's name as its cluster id (a DNS-1035 label of at most \
             {MAX_CLUSTER_ID_LEN} characters); recreate the resource under a name of at most \
             {MAX_NAME_LEN} lowercase letters, digits and '-', starting with a letter"
        ),
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
