//! What the JNI entry points read from Java, as pure functions (no JVM needed): the strings,
//! numbers and array lengths Java passes are turned into Rust values here, so that
//! [`ffi`](crate::ffi) only moves them across the boundary. Unit-tested below and fuzzed by
//! `fuzz/fuzz_targets/jni_inputs.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use bluegreen_protocol::Color;

use crate::error::Error;

/// `newGate`'s color: `BLUE` or `GREEN`, exactly.
pub fn color(text: &str) -> Result<Color, Error> {
    text.parse().map_err(|()| Error::Color(text.to_owned()))
}

/// `offer`'s JSON: an object whose values are strings (the ConfigMap's data).
pub fn offered_data(json: &str) -> Result<BTreeMap<String, String>, Error> {
    Ok(serde_json::from_str(json)?)
}

/// `awaitState`'s `sinceRevision` and `timeoutMs`: negative values mean "any revision" and "do
/// not wait".
pub fn await_arguments(since_revision: i64, timeout_ms: i64) -> (u64, Duration) {
    (
        u64::try_from(since_revision).unwrap_or(0),
        Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0)),
    )
}

/// How many records `decideBatch` decides: `count`, clamped to `0..=` the shorter of the two
/// arrays.
pub fn batch_count(count: i32, event_times_len: i32, out_len: i32) -> usize {
    let available = event_times_len.min(out_len).max(0);
    usize::try_from(count.clamp(0, available)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colors_are_spelled_exactly() {
        assert_eq!(color("GREEN").ok(), Some(Color::Green));
        for bad in ["green", " BLUE", "", "BLUE\0"] {
            assert!(matches!(color(bad), Err(Error::Color(_))), "{bad:?}");
        }
    }

    #[test]
    fn offered_data_is_an_object_of_strings() {
        let data = offered_data(r#"{"epoch": "3", "x": ""}"#).expect("valid");
        assert_eq!(data.get("epoch").map(String::as_str), Some("3"));
        for bad in [
            r#"{"epoch": 3}"#,
            "[]",
            "",
            r#"{"a": "b"} x"#,
            r#"{"a": null}"#,
        ] {
            assert!(matches!(offered_data(bad), Err(Error::Json(_))), "{bad:?}");
        }
    }

    #[test]
    fn negative_await_arguments_mean_any_revision_and_no_wait() {
        assert_eq!(await_arguments(-1, -5), (0, Duration::ZERO));
        assert_eq!(await_arguments(7, 1500), (7, Duration::from_millis(1500)));
        assert_eq!(
            await_arguments(i64::MAX, i64::MAX).1,
            Duration::from_millis(i64::MAX.unsigned_abs())
        );
    }

    #[test]
    fn batch_counts_never_exceed_either_array() {
        assert_eq!(batch_count(10, 4, 8), 4);
        assert_eq!(batch_count(10, 8, 4), 4);
        assert_eq!(batch_count(3, 8, 4), 3);
        assert_eq!(batch_count(-1, 8, 4), 0);
        assert_eq!(batch_count(i32::MAX, -2, 4), 0);
        assert_eq!(batch_count(i32::MIN, i32::MIN, i32::MIN), 0);
    }
}
