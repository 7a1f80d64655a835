//! The names the controller gives to what it writes besides the children's content: the labels
//! and annotation on the children and the gates' RBAC objects, and the children's names (pure,
//! imports nothing of the crate). [`crate::child`], [`crate::gate_rbac`] and the shell share them.

use bluegreen_protocol::Color;

/// Label: the owning `FlinkBlueGreenDeployment`'s name.
pub const LABEL_DEPLOYMENT: &str = "bluegreen.dev/deployment";
/// Label: the child's color (`blue`/`green`).
pub const LABEL_COLOR: &str = "bluegreen.dev/color";
/// Label used by the Apache operator's own blue/green (kept for tooling that knows it).
pub const LABEL_UPSTREAM_TYPE: &str = "flink/blue-green-deployment-type";
/// Annotation: hash of the template the child runs.
pub const ANNOTATION_TEMPLATE_HASH: &str = "bluegreen.dev/template-hash";

/// The name of the child of `color`.
pub fn child_name(deployment: &str, color: Color) -> String {
    format!("{deployment}-{}", color.suffix())
}
