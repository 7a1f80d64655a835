//! What the sidecar reads from a request: the URI of `GET /v1/state` and `GET /v1/decide`
//! (`bluegreen_sidecar::{StateRequest, DecideRequest}`, the pure functions its handlers call; it
//! reads no header and no body).
//!
//! Input: the request target as raw bytes (e.g. `/v1/state?since=x.3&wait=30s`), parsed into a
//! URI as the HTTP server does; both request kinds are read from every URI that parses.
//!
//! Checked: nothing panics; an accepted `wait` is a whole number of milliseconds; an accepted
//! `since` comes back byte for byte when the URI is rebuilt from it.
#![no_main]

use std::fmt::Write as _;

use bluegreen_sidecar::{DecideRequest, StateRequest};
use http::Uri;
use libfuzzer_sys::fuzz_target;

/// `s` percent-encoded entirely (so that it decodes back to itself).
fn encoded(s: &str) -> String {
    s.bytes().fold(String::new(), |mut out, b| {
        write!(out, "%{b:02X}").expect("writing to a String cannot fail");
        out
    })
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(uri) = Uri::try_from(bytes) else {
        return;
    };
    if let Ok(state) = StateRequest::from_uri(&uri) {
        if let Some(wait) = state.wait {
            assert_eq!(wait.subsec_nanos() % 1_000_000, 0, "{uri}: {wait:?}");
        }
        if let Some(since) = &state.since {
            let rebuilt: Uri = format!("/v1/state?since={}", encoded(since))
                .parse()
                .expect("a percent-encoded query is a valid URI");
            assert_eq!(
                StateRequest::from_uri(&rebuilt)
                    .ok()
                    .and_then(|s| s.since)
                    .as_deref(),
                Some(since.as_str()),
                "{uri}"
            );
        }
    }
    let _ = DecideRequest::from_uri(&uri);
});
