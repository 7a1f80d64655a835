//! The gates' acknowledgement: one `bluegreenGateAppliedState` gauge per gate subtask, whose value
//! is one line of `key=value` pairs ([`GateReport`]).
//!
//! ```text
//! epoch=7 stage=TRANSITIONING active=GREEN watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false
//! ```
//!
//! After `idle` a gate writes its own color, `color=BLUE` (the color it was built with, so the
//! controller can refuse a job whose gates were told the other color), and a gate with a lasting
//! problem appends `problem=<text>` (percent-encoded, see [`report_keys::PROBLEM`]); readers older
//! than those keys ignore them, as any key after `idle`.

use std::fmt;
use std::str::FromStr;

use crate::state::Toggle;
use crate::vocabulary::{Color, Stage, WatermarkStage};

/// The name of the String gauge every gate subtask registers in its operator metric group. The
/// controller reads every metric id ending in it (the Java gate's is
/// `<operator>.bluegreenGate.<gate id>.bluegreenGateAppliedState`).
pub const GATE_REPORT_METRIC: &str = crate::wire::metrics::APPLIED_STATE;

/// The keys of a [`GateReport`] line, in the order they are written.
pub mod report_keys {
    /// The applied epoch.
    pub const EPOCH: &str = "epoch";
    /// The applied stage.
    pub const STAGE: &str = "stage";
    /// The applied active color.
    pub const ACTIVE: &str = "active";
    /// The applied watermark stage: `0` NOT_SET, `1` WAITING, `2` SET, `-1` before any state.
    pub const WATERMARK_STAGE: &str = "watermark-stage";
    /// The applied W; empty when there is none.
    pub const TOGGLE: &str = "toggle";
    /// The applied floor F; empty when there is none.
    pub const FLOOR: &str = "floor";
    /// The highest event time passed (restored state included); `i64::MIN` when nothing passed.
    pub const MAX_PASSED: &str = "max-passed";
    /// The gate operator's current input watermark; `i64::MIN` when there is none.
    pub const WATERMARK: &str = "watermark";
    /// `true` when every input of the gate is idle.
    pub const IDLE: &str = "idle";

    /// Optional, after [`IDLE`]: the color the gate was built with (`BLUE` or `GREEN`), which
    /// decides what it passes. Gates older than the key do not write it.
    pub const COLOR: &str = "color";

    /// Optional, after [`IDLE`] (and [`COLOR`]): what keeps the gate from working now (its state source
    /// unreachable, an update refused). One token: every byte outside `!`..`~`, and `%`, is
    /// written as `%XX` of its UTF-8, e.g. `problem=state%20source:%20sidecar...`.
    pub const PROBLEM: &str = "problem";

    /// Every key that is always written, in line order.
    pub const ALL: [&str; 9] = [
        EPOCH,
        STAGE,
        ACTIVE,
        WATERMARK_STAGE,
        TOGGLE,
        FLOOR,
        MAX_PASSED,
        WATERMARK,
        IDLE,
    ];
}

/// The coordination state a gate applies, as far as the controller needs it (the deletion delay
/// is left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AppliedState {
    /// `epoch`.
    pub epoch: u64,
    /// `stage`.
    pub stage: Stage,
    /// `active-deployment-type`.
    pub active: Color,
    /// `watermark-stage` and W.
    pub toggle: Toggle,
    /// `floor`.
    pub floor: Option<i64>,
}

impl From<&crate::CoordinationState> for AppliedState {
    fn from(s: &crate::CoordinationState) -> Self {
        Self {
            epoch: s.epoch,
            stage: s.stage,
            active: s.active,
            toggle: s.toggle,
            floor: s.floor,
        }
    }
}

/// One gate subtask's acknowledgement: the value of its `bluegreenGateAppliedState` gauge.
///
/// [`Display`](fmt::Display) writes the line; [`FromStr`] parses it strictly (every key present,
/// in order; keys appended after `idle` are ignored, but for `color` and `problem`) and never turns a bad
/// value into a default.
/// `i64::MIN` on the wire means "none" for `max-passed` and `watermark`, so `Some(i64::MIN)` is
/// written like `None` and parses back as `None`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GateReport {
    /// The state the gate applies; `None` before it has applied any.
    pub applied: Option<AppliedState>,
    /// The highest event time passed, restored state included; `None` when nothing passed.
    pub max_passed: Option<i64>,
    /// The gate operator's current input watermark; `None` when there is none.
    pub watermark: Option<i64>,
    /// Whether every input of the gate is idle.
    pub idle: bool,
    /// The color the gate was built with (`color`); `None` from a gate older than the key.
    pub color: Option<Color>,
    /// What keeps the gate from working now, as it says (`problem`); `None` when nothing does.
    pub problem: Option<String>,
}

impl GateReport {
    /// Whether this gate has applied the proposal (or setting) of `w` in epoch `epoch`: it
    /// reports that epoch, watermark stage WAITING or SET, and toggle `w`.
    pub fn acknowledges(&self, epoch: u64, w: i64) -> bool {
        self.applied.is_some_and(|a| {
            a.epoch == epoch && matches!(a.toggle, Toggle::Proposed(t) | Toggle::Set(t) if t == w)
        })
    }

    /// Whether this gate's watermark is past `w`: above it, or every input is idle.
    pub fn past(&self, w: i64) -> bool {
        self.idle || self.watermark.is_some_and(|wm| wm > w)
    }
}

/// The wire code of a watermark stage in a report line.
const fn stage_code(stage: WatermarkStage) -> i8 {
    match stage {
        WatermarkStage::NotSet => 0,
        WatermarkStage::WaitingForWatermark => 1,
        WatermarkStage::Set => 2,
    }
}

/// Writes `i64::MIN` for `None`, the wire form of `max-passed` and `watermark`.
fn or_min(v: Option<i64>) -> i64 {
    v.unwrap_or(i64::MIN)
}

struct Blank<T>(Option<T>);

impl<T: fmt::Display> fmt::Display for Blank<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => Ok(()),
        }
    }
}

impl fmt::Display for GateReport {
    /// The gauge's line, e.g. `epoch=7 stage=TRANSITIONING active=GREEN watermark-stage=1
    /// toggle=1000 floor= max-passed=998 watermark=995 idle=false` (one line).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.applied;
        write!(
            f,
            "epoch={} stage={} active={} watermark-stage={} toggle={} floor={} max-passed={} watermark={} idle={}",
            Blank(a.map(|a| a.epoch)),
            Blank(a.map(|a| a.stage)),
            Blank(a.map(|a| a.active)),
            a.map_or(-1, |a| stage_code(a.toggle.stage())),
            Blank(a.and_then(|a| a.toggle.value())),
            Blank(a.and_then(|a| a.floor)),
            or_min(self.max_passed),
            or_min(self.watermark),
            self.idle,
        )?;
        if let Some(color) = self.color {
            write!(f, " {}={color}", report_keys::COLOR)?;
        }
        match &self.problem {
            Some(problem) => write!(f, " {}={}", report_keys::PROBLEM, encode_problem(problem)),
            None => Ok(()),
        }
    }
}

/// `problem` on the wire: one token, every byte outside `!`..`~` and `%` as `%XX`.
fn encode_problem(problem: &str) -> String {
    use fmt::Write as _;
    let mut out = String::with_capacity(problem.len());
    for b in problem.bytes() {
        if b.is_ascii_graphic() && b != b'%' {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The text of a `problem` token; `None` on a bad escape (invalid UTF-8 is replaced).
fn decode_problem(raw: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(raw.len());
    let mut rest = raw.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let hex = tail.get(..2)?;
            let hex = std::str::from_utf8(hex).ok()?;
            if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                return None;
            }
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Why a `bluegreenGateAppliedState` line could not be parsed. Every variant names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateReportError {
    /// The line ends before `key`.
    #[error(
        "gate report: key `{key}` is missing; a gate writes all of {all} in this order: upgrade the gate",
        all = report_keys::ALL.join(", ")
    )]
    MissingKey {
        /// The missing key.
        key: &'static str,
    },
    /// Another token stands where `key` belongs.
    #[error(
        "gate report: expected `{key}=...` but found {found:?}; a gate writes all of {all} in this order",
        all = report_keys::ALL.join(", ")
    )]
    UnexpectedKey {
        /// The key expected at this position.
        key: &'static str,
        /// The token found instead (verbatim).
        found: String,
    },
    /// A key's value is not of its type.
    #[error("gate report: key `{key}` has invalid value {value:?}; expected {expected}")]
    InvalidValue {
        /// The offending key.
        key: &'static str,
        /// The value found (verbatim).
        value: String,
        /// What the key must hold.
        expected: &'static str,
    },
    /// The applied-state keys contradict each other (some empty, others not; or a toggle that
    /// does not match the watermark stage).
    #[error("gate report: key `{key}` = {value:?} is inconsistent: {reason}")]
    Inconsistent {
        /// The key whose value contradicts the rest.
        key: &'static str,
        /// Its value.
        value: String,
        /// Which rule it breaks and how to fix it.
        reason: &'static str,
    },
}

impl GateReportError {
    /// The report key the error is about.
    pub const fn key(&self) -> &'static str {
        match self {
            Self::MissingKey { key }
            | Self::UnexpectedKey { key, .. }
            | Self::InvalidValue { key, .. }
            | Self::Inconsistent { key, .. } => key,
        }
    }

    /// A stable, language-neutral name of the error's kind (used by the shared test vectors).
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::MissingKey { .. } => "MissingKey",
            Self::UnexpectedKey { .. } => "UnexpectedKey",
            Self::InvalidValue { .. } => "InvalidValue",
            Self::Inconsistent { .. } => "Inconsistent",
        }
    }
}

const U64: &str = "empty (no state applied yet) or a non-negative decimal integer";
const I64: &str = "a decimal integer within i64 (-9223372036854775808 for none)";
const I64_OR_EMPTY: &str = "empty (none) or a decimal integer within i64";
const WSTAGE: &str = "one of -1 (no state applied yet), 0 (NOT_SET), 1 (WAITING), 2 (SET)";
const BOOL: &str = "true or false";
const PROBLEM: &str = "text with every byte outside ! to ~, and %, written as %XX";

fn invalid(key: &'static str, value: &str, expected: &'static str) -> GateReportError {
    GateReportError::InvalidValue {
        key,
        value: value.to_owned(),
        expected,
    }
}

/// A strict signed decimal: optional `-`, then digits only.
fn strict_i64(raw: &str) -> Option<i64> {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok()
}

fn opt<T>(
    key: &'static str,
    raw: &str,
    expected: &'static str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, GateReportError> {
    if raw.is_empty() {
        return Ok(None);
    }
    parse(raw)
        .map(Some)
        .ok_or_else(|| invalid(key, raw, expected))
}

fn min_is_none(key: &'static str, raw: &str) -> Result<Option<i64>, GateReportError> {
    let v = strict_i64(raw).ok_or_else(|| invalid(key, raw, I64))?;
    Ok((v != i64::MIN).then_some(v))
}

impl FromStr for GateReport {
    type Err = GateReportError;

    fn from_str(line: &str) -> Result<Self, Self::Err> {
        use report_keys as k;
        let mut tokens = line.split_ascii_whitespace();
        let mut values = [""; 9];
        for (key, slot) in k::ALL.into_iter().zip(&mut values) {
            let token = tokens.next().ok_or(GateReportError::MissingKey { key })?;
            *slot = token
                .strip_prefix(key)
                .and_then(|rest| rest.strip_prefix('='))
                .ok_or_else(|| GateReportError::UnexpectedKey {
                    key,
                    found: token.to_owned(),
                })?;
        }
        let [
            epoch,
            stage,
            active,
            wstage,
            toggle,
            floor,
            max_passed,
            watermark,
            idle,
        ] = values;

        let epoch = opt(k::EPOCH, epoch, U64, |r| {
            r.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| r.parse::<u64>().ok())
                .flatten()
        })?;
        let stage = opt(k::STAGE, stage, Stage::EXPECTED, |r| {
            r.parse::<Stage>().ok()
        })?;
        let active = opt(k::ACTIVE, active, Color::EXPECTED, |r| {
            r.parse::<Color>().ok()
        })?;
        let code = match wstage {
            "-1" => None,
            "0" => Some(WatermarkStage::NotSet),
            "1" => Some(WatermarkStage::WaitingForWatermark),
            "2" => Some(WatermarkStage::Set),
            _ => return Err(invalid(k::WATERMARK_STAGE, wstage, WSTAGE)),
        };
        let w = opt(k::TOGGLE, toggle, I64_OR_EMPTY, strict_i64)?;
        let floor_value = opt(k::FLOOR, floor, I64_OR_EMPTY, strict_i64)?;
        let max_passed = min_is_none(k::MAX_PASSED, max_passed)?;
        let watermark = min_is_none(k::WATERMARK, watermark)?;
        let idle = match idle {
            "true" => true,
            "false" => false,
            _ => return Err(invalid(k::IDLE, idle, BOOL)),
        };

        let applied = applied_state(values, (epoch, stage, active, code), w, floor_value)?;
        let rest: Vec<&str> = tokens.collect();
        let after_idle = |key: &str| {
            rest.iter()
                .find_map(|t| t.strip_prefix(key)?.strip_prefix('='))
        };
        let color = after_idle(k::COLOR)
            .map(|raw| {
                raw.parse::<Color>()
                    .map_err(|()| invalid(k::COLOR, raw, Color::EXPECTED))
            })
            .transpose()?;
        let problem = after_idle(k::PROBLEM)
            .map(|raw| decode_problem(raw).ok_or_else(|| invalid(k::PROBLEM, raw, PROBLEM)))
            .transpose()?;
        Ok(Self {
            applied,
            max_passed,
            watermark,
            idle,
            color,
            problem,
        })
    }
}

/// The applied state from its parsed parts: all present, or all absent before any state.
fn applied_state(
    values: [&str; 9],
    parts: (
        Option<u64>,
        Option<Stage>,
        Option<Color>,
        Option<WatermarkStage>,
    ),
    w: Option<i64>,
    floor_value: Option<i64>,
) -> Result<Option<AppliedState>, GateReportError> {
    use report_keys as k;
    let [_, _, _, _, toggle, floor, ..] = values;
    Ok(match parts {
        (None, None, None, None) => {
            for (key, raw) in [(k::TOGGLE, toggle), (k::FLOOR, floor)] {
                if !raw.is_empty() {
                    return Err(GateReportError::Inconsistent {
                        key,
                        value: raw.to_owned(),
                        reason: "must be empty before any state is applied (watermark-stage=-1)",
                    });
                }
            }
            None
        }
        (Some(epoch), Some(stage), Some(active), Some(code)) => {
            let toggle = match (code, w) {
                (WatermarkStage::NotSet, None) => Toggle::NotSet,
                (WatermarkStage::WaitingForWatermark, Some(w)) => Toggle::Proposed(w),
                (WatermarkStage::Set, Some(w)) => Toggle::Set(w),
                (WatermarkStage::NotSet, Some(_)) => {
                    return Err(GateReportError::Inconsistent {
                        key: k::TOGGLE,
                        value: toggle.to_owned(),
                        reason: "must be empty when watermark-stage=0 (NOT_SET)",
                    });
                }
                (_, None) => {
                    return Err(GateReportError::Inconsistent {
                        key: k::TOGGLE,
                        value: String::new(),
                        reason: "must hold W when watermark-stage is 1 (WAITING) or 2 (SET)",
                    });
                }
            };
            Some(AppliedState {
                epoch,
                stage,
                active,
                toggle,
                floor: floor_value,
            })
        }
        _ => {
            // Name the first applied-state key that is empty while another is not.
            let (key, value) = [
                (k::EPOCH, values[0]),
                (k::STAGE, values[1]),
                (k::ACTIVE, values[2]),
                (k::WATERMARK_STAGE, values[3]),
            ]
            .into_iter()
            .find(|(_, raw)| raw.is_empty() || *raw == "-1")
            .unwrap_or((k::EPOCH, values[0]));
            return Err(GateReportError::Inconsistent {
                key,
                value: value.to_owned(),
                reason: "epoch, stage, active and watermark-stage are either all set or all empty (watermark-stage=-1)",
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(toggle: Toggle, max_passed: Option<i64>) -> GateReport {
        GateReport {
            applied: Some(AppliedState {
                epoch: 7,
                stage: Stage::Transitioning,
                active: Color::Green,
                toggle,
                floor: None,
            }),
            max_passed,
            watermark: Some(995),
            idle: false,
            color: None,
            problem: None,
        }
    }

    #[test]
    fn writes_the_documented_line() {
        let r = report(Toggle::Proposed(1000), Some(998));
        assert_eq!(
            r.to_string(),
            "epoch=7 stage=TRANSITIONING active=GREEN watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false"
        );
        let none = GateReport {
            applied: None,
            max_passed: None,
            watermark: None,
            idle: true,
            color: None,
            problem: None,
        };
        assert_eq!(
            none.to_string(),
            "epoch= stage= active= watermark-stage=-1 toggle= floor= max-passed=-9223372036854775808 watermark=-9223372036854775808 idle=true"
        );
    }

    #[test]
    fn acknowledges_only_the_proposal_of_that_epoch_and_w() {
        for t in [Toggle::Proposed(1000), Toggle::Set(1000)] {
            assert!(report(t, None).acknowledges(7, 1000));
            assert!(!report(t, None).acknowledges(8, 1000));
            assert!(!report(t, None).acknowledges(7, 999));
        }
        assert!(!report(Toggle::NotSet, None).acknowledges(7, 1000));
        let none = GateReport {
            applied: None,
            ..report(Toggle::NotSet, None)
        };
        assert!(!none.acknowledges(0, 0));
    }

    #[test]
    fn past_needs_a_watermark_above_w_or_idle_inputs() {
        let r = report(Toggle::Set(1000), None);
        assert!(r.past(994));
        assert!(!r.past(995));
        let no_watermark = GateReport {
            watermark: None,
            ..r.clone()
        };
        assert!(!no_watermark.past(i64::MIN));
        assert!(
            GateReport {
                idle: true,
                ..no_watermark
            }
            .past(i64::MAX)
        );
    }

    #[test]
    fn a_problem_is_one_percent_encoded_token_after_idle_and_reads_back() {
        let problem = "state source: sidecar http://127.0.0.1:8787/v1/state?wait=30000ms: \
                       java.net.ConnectException 100% \u{e9}\ttab";
        let r = GateReport {
            problem: Some(problem.to_owned()),
            ..report(Toggle::NotSet, None)
        };
        let line = r.to_string();
        assert!(
            line.ends_with(" idle=false problem=state%20source:%20sidecar%20http://127.0.0.1:8787/v1/state?wait=30000ms:%20java.net.ConnectException%20100%25%20%C3%A9%09tab"),
            "{line}"
        );
        assert_eq!(line.split_ascii_whitespace().count(), 10, "{line}");
        assert_eq!(line.parse::<GateReport>(), Ok(r));
        // Among other trailing keys, in any place after `idle`.
        let base = report(Toggle::NotSet, None).to_string();
        let parsed: GateReport = format!("{base} lag=3 problem=a%20b x=1").parse().unwrap();
        assert_eq!(parsed.problem.as_deref(), Some("a b"));
        for bad in ["%", "%2", "%zz", "a%2Gb"] {
            let e = format!("{base} problem={bad}")
                .parse::<GateReport>()
                .unwrap_err();
            assert_eq!((e.kind(), e.key()), ("InvalidValue", "problem"), "{bad}");
        }
    }

    #[test]
    fn the_color_is_a_token_after_idle_before_a_problem_and_reads_back() {
        let r = GateReport {
            color: Some(Color::Blue),
            problem: Some("x".into()),
            ..report(Toggle::Proposed(1000), Some(998))
        };
        let line = r.to_string();
        assert!(line.ends_with(" idle=false color=BLUE problem=x"), "{line}");
        assert_eq!(line.parse::<GateReport>(), Ok(r));
        let base = report(Toggle::NotSet, None).to_string();
        let parsed: GateReport = format!("{base} lag=3 color=GREEN").parse().unwrap();
        assert_eq!(parsed.color, Some(Color::Green));
        assert_eq!(base.parse::<GateReport>().unwrap().color, None);
        for bad in ["", "blue", "RED"] {
            let e = format!("{base} color={bad}")
                .parse::<GateReport>()
                .unwrap_err();
            assert_eq!((e.kind(), e.key()), ("InvalidValue", "color"), "{bad:?}");
        }
    }
}
