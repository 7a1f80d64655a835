//! Errors of the protocol crate: every variant names the ConfigMap key and the fix.

use crate::keys;

/// Why a coordination state could not be parsed, or why an update was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// A required key is absent from the ConfigMap's data.
    #[error("coordination ConfigMap: key `{key}` is missing; expected {expected}")]
    MissingKey {
        /// The missing key.
        key: &'static str,
        /// What the key must hold.
        expected: &'static str,
    },
    /// A key holds a value that is not of its type or not one of its allowed spellings.
    #[error("coordination ConfigMap: key `{key}` has invalid value {value:?}; expected {expected}")]
    InvalidValue {
        /// The offending key.
        key: &'static str,
        /// The value found (verbatim).
        value: String,
        /// What the key must hold.
        expected: &'static str,
    },
    /// The keys parse one by one but contradict each other (for example `stage: RUNNING` with a
    /// watermark toggle set).
    #[error("coordination ConfigMap: key `{key}` = {value:?} is inconsistent: {reason}")]
    Inconsistent {
        /// The key whose value contradicts the rest.
        key: &'static str,
        /// Its value.
        value: String,
        /// Which rule it breaks and how to fix it.
        reason: &'static str,
    },
    /// The ConfigMap was written by a newer, incompatible protocol version.
    #[error(
        "coordination ConfigMap: key `{key}` = {found} is not supported; this build speaks protocol version {supported}: upgrade the gate",
        key = keys::PROTOCOL_VERSION
    )]
    UnsupportedVersion {
        /// The version found.
        found: u32,
        /// The version this build speaks.
        supported: u32,
    },
    /// An update carries an older epoch than the state already applied.
    #[error(
        "stale coordination state: key `{key}` went back from {current} to {offered}; the older update is ignored",
        key = keys::EPOCH
    )]
    StaleEpoch {
        /// The epoch already applied.
        current: u64,
        /// The epoch of the refused update.
        offered: u64,
    },
    /// An update that no sequence of legal controller steps can produce from the current state.
    #[error("illegal coordination transition in epoch {epoch}: {from} -> {to}: {reason}")]
    IllegalTransition {
        /// The epoch of the refused update.
        epoch: u64,
        /// The current state, in short form.
        from: String,
        /// The refused state, in short form.
        to: String,
        /// The rule it breaks.
        reason: &'static str,
    },
}

impl ProtocolError {
    /// The ConfigMap key the error is about.
    pub const fn key(&self) -> &'static str {
        match self {
            Self::MissingKey { key, .. }
            | Self::InvalidValue { key, .. }
            | Self::Inconsistent { key, .. } => key,
            Self::UnsupportedVersion { .. } => keys::PROTOCOL_VERSION,
            Self::StaleEpoch { .. } | Self::IllegalTransition { .. } => keys::EPOCH,
        }
    }

    /// A stable, language-neutral name of the error's kind (used by the shared test vectors and
    /// as a metric label).
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::MissingKey { .. } => "MissingKey",
            Self::InvalidValue { .. } => "InvalidValue",
            Self::Inconsistent { .. } => "Inconsistent",
            Self::UnsupportedVersion { .. } => "UnsupportedVersion",
            Self::StaleEpoch { .. } => "StaleEpoch",
            Self::IllegalTransition { .. } => "IllegalTransition",
        }
    }
}
