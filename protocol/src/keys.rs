//! The ConfigMap data keys. The first five are FLIP-504's; the rest are bluegreen's.

/// The color that is live in steady state, or the incoming color during a transition.
pub const ACTIVE_DEPLOYMENT_TYPE: &str = "active-deployment-type";
/// How long the outgoing deployment is kept after the handover, in milliseconds.
pub const DEPLOYMENT_DELETION_DELAY_MS: &str = "deployment-deletion-delay-ms";
/// The [`Stage`](crate::Stage).
pub const STAGE: &str = "stage";
/// The watermark toggle value W (event time, milliseconds); empty while not set.
pub const WATERMARK_TOGGLE_VALUE: &str = "watermark-toggle-value";
/// The [`WatermarkStage`](crate::WatermarkStage).
pub const WATERMARK_STAGE: &str = "watermark-stage";
/// Transition counter: +1 per transition, never decreases.
pub const EPOCH: &str = "epoch";
/// The protocol version of the writer.
pub const PROTOCOL_VERSION: &str = "protocol-version";
/// The floor F: the W of the last completed handover, in force until the next one (only
/// `t > F` is emitted); empty or absent when there is none.
pub const FLOOR: &str = "floor";

/// Every key the protocol defines, in documentation order.
pub const ALL: [&str; 8] = [
    ACTIVE_DEPLOYMENT_TYPE,
    DEPLOYMENT_DELETION_DELAY_MS,
    STAGE,
    WATERMARK_TOGGLE_VALUE,
    WATERMARK_STAGE,
    EPOCH,
    PROTOCOL_VERSION,
    FLOOR,
];
