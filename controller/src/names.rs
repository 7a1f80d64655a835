//! The names the controller gives to what it writes besides the children's content: the labels
//! and annotation on the children and the gates' RBAC objects, the children's names, its field
//! manager and finalizer, and the manual-action annotation with its values (pure, imports nothing
//! of the crate). [`crate::child`], [`crate::gate_rbac`], the shell and the kubectl plugin share
//! them.

use bluegreen_protocol::Color;

/// The field manager of everything the controller writes.
pub const FIELD_MANAGER: &str = "bluegreen-controller";
/// The finalizer that runs the deletion policy.
pub const FINALIZER: &str = "bluegreen.dev/cleanup";
/// The annotation for manual operations, one [`ManualAction`] each.
pub const ACTION_ANNOTATION: &str = "bluegreen.dev/action";

/// A manual operation requested with the [`ACTION_ANNOTATION`] annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManualAction {
    /// Promote now (manual promotion), once both watermarks are past W.
    Promote,
    /// Abort the handover (only before W is set).
    Abort,
    /// Delete the outgoing job now instead of after the deletion delay.
    Teardown,
    /// Clear the floor (no handover in progress): a new epoch in which records at or below the
    /// last W are emitted again, for a deliberate reprocessing.
    ClearFloor,
}

impl ManualAction {
    /// Every action, in declaration order.
    pub const ALL: &'static [Self] =
        &[Self::Promote, Self::Abort, Self::Teardown, Self::ClearFloor];

    /// The annotation's value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Promote => "promote",
            Self::Abort => "abort",
            Self::Teardown => "teardown",
            Self::ClearFloor => "clear-floor",
        }
    }

    /// Parses the annotation value (surrounding whitespace ignored).
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        Self::ALL.iter().copied().find(|a| a.as_str() == value)
    }
}

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

#[cfg(test)]
mod tests {
    use super::ManualAction;

    #[test]
    fn every_action_parses_from_its_spelling_and_nothing_else_does() {
        for action in ManualAction::ALL {
            assert_eq!(ManualAction::parse(action.as_str()), Some(*action));
            assert_eq!(ManualAction::parse(&format!(" {action:?} ")), None);
        }
        assert_eq!(
            ManualAction::parse(" clear-floor\n"),
            Some(ManualAction::ClearFloor)
        );
        assert_eq!(ManualAction::parse("Promote"), None);
    }
}
