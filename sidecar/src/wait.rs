//! The `wait` query parameter of `GET /v1/state`.

use std::time::Duration;

use crate::error::Error;

/// Parses a long-poll wait such as `30000ms` or `30s` (docs/jvm.md: the unit is `ms` or `s`; a
/// bare number is read as milliseconds).
pub fn parse_wait(value: &str) -> Result<Duration, Error> {
    let invalid = || Error::InvalidWait {
        value: value.to_owned(),
    };
    let (digits, per_unit_ms) = if let Some(ms) = value.strip_suffix("ms") {
        (ms, 1)
    } else if let Some(s) = value.strip_suffix('s') {
        (s, 1000)
    } else {
        (value, 1)
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let number: u64 = digits.parse().map_err(|_| invalid())?;
    number
        .checked_mul(per_unit_ms)
        .map(Duration::from_millis)
        .ok_or_else(invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_seconds_and_bare_numbers_parse() {
        assert_eq!(parse_wait("30000ms").ok(), Some(Duration::from_secs(30)));
        assert_eq!(parse_wait("30s").ok(), Some(Duration::from_secs(30)));
        assert_eq!(parse_wait("250").ok(), Some(Duration::from_millis(250)));
        assert_eq!(parse_wait("0ms").ok(), Some(Duration::ZERO));
    }

    #[test]
    fn signs_fractions_spaces_and_other_units_are_refused() {
        for bad in [
            "",
            "ms",
            "-1ms",
            "+1s",
            "1.5s",
            " 1s",
            "1 s",
            "1m",
            "1h",
            "99999999999999999999s",
        ] {
            assert!(parse_wait(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
