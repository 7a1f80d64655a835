//! `/openapi/v3`: placeholder replaced below.
use serde_json::{Value, json};

use super::resources::Registry;

pub(crate) fn index(_registry: &Registry) -> Value {
    json!({"paths": {}})
}

pub(crate) fn document(_registry: &Registry, _path: &str) -> Option<Value> {
    None
}
