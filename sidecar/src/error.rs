//! The sidecar crate's one error type.

/// Everything that can go wrong in the sidecar.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `wait` parameter that is not a whole number of `ms` or `s`.
    #[error("wait={value:?}: expected a whole number with unit ms or s, e.g. 30000ms or 30s")]
    InvalidWait {
        /// The value as received.
        value: String,
    },
    /// A query string that does not decode: a parameter given twice, a required one missing, or
    /// one that is not of its type.
    #[error("query: {message}")]
    InvalidQuery {
        /// What is wrong, as the decoder says.
        message: String,
    },
    /// A `color` parameter that is not a color.
    #[error("color={value:?}: expected BLUE or GREEN")]
    InvalidColor {
        /// The value as received.
        value: String,
    },
    /// Registering the gate's metrics failed.
    #[error(transparent)]
    Gate(#[from] bluegreen_gate::Error),
    /// Binding or serving the HTTP listener failed.
    #[error("serving HTTP: {0}")]
    Io(#[from] std::io::Error),
}
