//! The real server's size limit on ConfigMaps and Secrets (`core.MaxSecretSize`, 1 MiB): the
//! values of `data` and `binaryData` (a Secret's decoded bytes) together may not exceed it.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde_json::Value;

use super::api_error::{ApiError, Cause};
use super::meta::ObjExt;

/// `core.MaxSecretSize`: the most bytes a ConfigMap's or Secret's values may hold.
pub(crate) const MAX_SIZE: usize = 1024 * 1024;

/// Which kind is checked (the field Kubernetes names in its error differs).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Limited {
    ConfigMap,
    Secret,
}

/// `422 Invalid` when the object's values are over [`MAX_SIZE`], as Kubernetes'
/// `ValidateConfigMap`/`ValidateSecret`: `[]: Too long: must have at most 1048576 bytes`
/// (`data: ...` for a Secret). `obj` has been decoded as its type already.
pub(crate) fn check(kind: Limited, obj: &Value) -> Result<(), ApiError> {
    let (total, kind_name, field) = match kind {
        Limited::ConfigMap => {
            let cm: ConfigMap = decode(obj)?;
            let text: usize = cm.data.iter().flatten().map(|(_, v)| v.len()).sum();
            let binary: usize = cm
                .binary_data
                .iter()
                .flatten()
                .map(|(_, v)| v.0.len())
                .sum();
            (text + binary, "ConfigMap", "[]")
        }
        Limited::Secret => {
            let s: Secret = decode(obj)?;
            let data: usize = s.data.iter().flatten().map(|(_, v)| v.0.len()).sum();
            (data, "Secret", "data")
        }
    };
    if total <= MAX_SIZE {
        return Ok(());
    }
    Err(ApiError::invalid(
        "",
        kind_name,
        obj.name(),
        &[Cause {
            reason: "FieldValueTooLong".into(),
            message: format!("Too long: must have at most {MAX_SIZE} bytes"),
            field: field.into(),
        }],
    ))
}

fn decode<T: serde::de::DeserializeOwned>(obj: &Value) -> Result<T, ApiError> {
    serde_json::from_value(obj.clone())
        .map_err(|e| ApiError::bad_request(format!("cannot decode the object: {e}")))
}
