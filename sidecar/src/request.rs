//! What the sidecar reads from a request: the query strings of `GET /v1/state` and
//! `GET /v1/decide`. Pure functions of the request's URI (no socket, no runtime), so that they are
//! unit-tested and fuzzed (`fuzz/fuzz_targets/sidecar_request.rs`) exactly as the handlers use
//! them. The paths are matched by the router; no header or body is read.

use std::str::FromStr;
use std::time::Duration;

use axum::extract::Query;
use axum::http::Uri;
use bluegreen_protocol::Color;
use serde::Deserialize;

use crate::error::Error;
use crate::wait::parse_wait;

/// The parameters of `GET /v1/state?since=REVISION&wait=30000ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRequest {
    /// The revision the client already has (`since`), if any.
    pub since: Option<String>,
    /// How long the client is willing to wait (`wait`), before the sidecar's cap; `None` when
    /// the request names no wait (the sidecar's default applies).
    pub wait: Option<Duration>,
}

/// The parameters of `GET /v1/decide?color=BLUE&ts=123`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecideRequest {
    /// The gate color to decide for (`color`); `None`: the sidecar's own color.
    pub color: Option<Color>,
    /// The event time to decide (`ts`, epoch milliseconds).
    pub ts: i64,
}

#[derive(Debug, Deserialize)]
struct RawState {
    since: Option<String>,
    wait: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RawDecide {
    color: Option<String>,
    ts: i64,
}

/// Decodes the query string of `uri` (percent-decoding, `+` as space) into `T`; a parameter given
/// twice, a missing required one or one that is not of its type is [`Error::InvalidQuery`].
/// Unknown parameters are ignored.
fn query<T: serde::de::DeserializeOwned>(uri: &Uri) -> Result<T, Error> {
    Query::<T>::try_from_uri(uri)
        .map(|Query(value)| value)
        .map_err(|rejection| Error::InvalidQuery {
            message: rejection.body_text(),
        })
}

impl StateRequest {
    /// Reads `since` and `wait` from `uri` (`wait` by [`parse_wait`]).
    pub fn from_uri(uri: &Uri) -> Result<Self, Error> {
        let raw: RawState = query(uri)?;
        Ok(Self {
            since: raw.since,
            wait: raw.wait.as_deref().map(parse_wait).transpose()?,
        })
    }
}

impl DecideRequest {
    /// Reads `color` (`BLUE` or `GREEN`, exactly) and `ts` (required) from `uri`.
    pub fn from_uri(uri: &Uri) -> Result<Self, Error> {
        let raw: RawDecide = query(uri)?;
        let color = raw
            .color
            .map(|text| Color::from_str(&text).map_err(|()| Error::InvalidColor { value: text }))
            .transpose()?;
        Ok(Self { color, ts: raw.ts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(text: &str) -> Uri {
        text.parse().expect("a valid URI")
    }

    #[test]
    fn state_parameters_are_optional_and_decoded() {
        assert_eq!(
            StateRequest::from_uri(&uri("/v1/state")).ok(),
            Some(StateRequest {
                since: None,
                wait: None
            })
        );
        assert_eq!(
            StateRequest::from_uri(&uri("/v1/state?since=a%2Eb.3&wait=30s&other=x")).ok(),
            Some(StateRequest {
                since: Some("a.b.3".into()),
                wait: Some(Duration::from_secs(30))
            })
        );
    }

    #[test]
    fn a_bad_or_repeated_state_parameter_is_refused() {
        for bad in [
            "/v1/state?wait=1.5s",
            "/v1/state?wait=",
            "/v1/state?since=a&since=b",
            "/v1/state?wait=1s&wait=2s",
        ] {
            assert!(StateRequest::from_uri(&uri(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn decide_needs_a_timestamp_and_an_exact_color() {
        assert_eq!(
            DecideRequest::from_uri(&uri("/v1/decide?ts=-5&color=GREEN")).ok(),
            Some(DecideRequest {
                color: Some(Color::Green),
                ts: -5
            })
        );
        assert_eq!(
            DecideRequest::from_uri(&uri("/v1/decide?ts=9223372036854775807")).ok(),
            Some(DecideRequest {
                color: None,
                ts: i64::MAX
            })
        );
        for bad in [
            "/v1/decide",
            "/v1/decide?color=BLUE",
            "/v1/decide?ts=1.5",
            "/v1/decide?ts=9223372036854775808",
            "/v1/decide?ts=1&color=blue",
            "/v1/decide?ts=1&ts=2",
        ] {
            assert!(DecideRequest::from_uri(&uri(bad)).is_err(), "{bad}");
        }
        let Err(error) = DecideRequest::from_uri(&uri("/v1/decide?ts=1&color=RED")) else {
            panic!("RED is no color");
        };
        assert!(error.to_string().contains("BLUE"), "{error}");
    }
}
