//! The coordination ConfigMap's content and its strict (de)serialisation.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::ProtocolError;
use crate::keys;
use crate::vocabulary::{Color, Stage, WatermarkStage};

/// The protocol version this build writes and understands (key `protocol-version`).
pub const PROTOCOL_VERSION: u32 = 1;

/// The name of the coordination ConfigMap of a `FlinkBlueGreenDeployment` named `deployment`.
pub fn configmap_name(deployment: &str) -> String {
    format!("{deployment}-bluegreen")
}

/// The watermark toggle value W together with how settled it is. Carrying W inside the variant
/// makes "a stage that needs W but has none" unrepresentable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Toggle {
    /// `WATERMARK_NOT_SET`: no W.
    NotSet,
    /// `WAITING_FOR_WATERMARK`: W is proposed and may still rise; the outgoing color holds records
    /// above it, the incoming color holds everything.
    Proposed(i64),
    /// `WATERMARK_SET`: W is final for this epoch.
    Set(i64),
}

impl Toggle {
    /// The FLIP-504 `watermark-stage` of this toggle.
    pub const fn stage(self) -> WatermarkStage {
        match self {
            Self::NotSet => WatermarkStage::NotSet,
            Self::Proposed(_) => WatermarkStage::WaitingForWatermark,
            Self::Set(_) => WatermarkStage::Set,
        }
    }

    /// W, if proposed or set.
    pub const fn value(self) -> Option<i64> {
        match self {
            Self::NotSet => None,
            Self::Proposed(w) | Self::Set(w) => Some(w),
        }
    }
}

/// The content of the coordination ConfigMap. Written by the controller only; read by gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CoordinationState {
    /// `active-deployment-type`: the live color in INITIALIZING/RUNNING; the incoming color in
    /// TRANSITIONING, CLEAR_TO_TEARDOWN and FAILING (the outgoing one is `active.other()`).
    pub active: Color,
    /// `deployment-deletion-delay-ms`.
    pub deletion_delay_ms: u64,
    /// `stage`.
    pub stage: Stage,
    /// `watermark-stage` and `watermark-toggle-value`.
    pub toggle: Toggle,
    /// `epoch`.
    pub epoch: u64,
    /// `floor`: the W of the last completed handover, if it is still in force.
    pub floor: Option<i64>,
}

impl CoordinationState {
    /// The state the controller writes when it creates a deployment's ConfigMap.
    pub const fn initial(active: Color, deletion_delay_ms: u64) -> Self {
        Self {
            active,
            deletion_delay_ms,
            stage: Stage::Initializing,
            toggle: Toggle::NotSet,
            epoch: 0,
            floor: None,
        }
    }

    /// A state of `epoch` in `stage` with `active` and `toggle`, no deletion delay and no floor
    /// (add them with [`Self::with_deletion_delay_ms`] and [`Self::with_floor`]). Not validated:
    /// tests build illegal states with it too; [`Self::validate`] checks one.
    pub const fn new(epoch: u64, stage: Stage, active: Color, toggle: Toggle) -> Self {
        Self {
            active,
            deletion_delay_ms: 0,
            stage,
            toggle,
            epoch,
            floor: None,
        }
    }

    /// This state with `deployment-deletion-delay-ms` set to `deletion_delay_ms`.
    #[must_use]
    pub const fn with_deletion_delay_ms(self, deletion_delay_ms: u64) -> Self {
        Self {
            deletion_delay_ms,
            ..self
        }
    }

    /// This state with the floor `floor` (`None`: no floor).
    #[must_use]
    pub const fn with_floor(self, floor: Option<i64>) -> Self {
        Self { floor, ..self }
    }

    /// Parses ConfigMap data strictly. Unknown keys are ignored (forward compatibility); a
    /// missing key, a misspelled value, a malformed or negative number, or keys that contradict
    /// each other give an error naming the key.
    pub fn from_data(data: &BTreeMap<String, String>) -> Result<Self, ProtocolError> {
        let version = parse_u64(data, keys::PROTOCOL_VERSION)?;
        if version != u64::from(PROTOCOL_VERSION) {
            return Err(ProtocolError::UnsupportedVersion {
                found: u32::try_from(version).unwrap_or(u32::MAX),
                supported: PROTOCOL_VERSION,
            });
        }
        let active = parse_enum::<Color>(data, keys::ACTIVE_DEPLOYMENT_TYPE, Color::EXPECTED)?;
        let deletion_delay_ms = parse_u64(data, keys::DEPLOYMENT_DELETION_DELAY_MS)?;
        let stage = parse_enum::<Stage>(data, keys::STAGE, Stage::EXPECTED)?;
        let watermark_stage =
            parse_enum::<WatermarkStage>(data, keys::WATERMARK_STAGE, WatermarkStage::EXPECTED)?;
        let epoch = parse_u64(data, keys::EPOCH)?;
        let toggle = parse_toggle(data, watermark_stage)?;
        let floor = parse_floor(data)?;
        let parsed = Self {
            active,
            deletion_delay_ms,
            stage,
            toggle,
            epoch,
            floor,
        };
        parsed.validate()?;
        Ok(parsed)
    }

    /// The ConfigMap data for this state (every protocol key, nothing else).
    pub fn to_data(&self) -> BTreeMap<String, String> {
        let w = self
            .toggle
            .value()
            .map(|w| w.to_string())
            .unwrap_or_default();
        [
            (
                keys::ACTIVE_DEPLOYMENT_TYPE,
                self.active.as_str().to_owned(),
            ),
            (
                keys::DEPLOYMENT_DELETION_DELAY_MS,
                self.deletion_delay_ms.to_string(),
            ),
            (keys::STAGE, self.stage.as_str().to_owned()),
            (keys::WATERMARK_TOGGLE_VALUE, w),
            (
                keys::WATERMARK_STAGE,
                self.toggle.stage().as_str().to_owned(),
            ),
            (keys::EPOCH, self.epoch.to_string()),
            (keys::PROTOCOL_VERSION, PROTOCOL_VERSION.to_string()),
            (
                keys::FLOOR,
                self.floor.map(|f| f.to_string()).unwrap_or_default(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// Checks that `stage` and the toggle agree (INITIALIZING and RUNNING have no W,
    /// CLEAR_TO_TEARDOWN needs W set, FAILING happens only before W is set; errors name
    /// `watermark-stage`), then that the floor fits (none in INITIALIZING, below W whenever W is
    /// proposed or set; errors name `floor`).
    pub fn validate(&self) -> Result<(), ProtocolError> {
        let reason = match (self.stage, self.toggle) {
            (Stage::Initializing | Stage::Running, Toggle::NotSet)
            | (Stage::Transitioning, _)
            | (Stage::ClearToTeardown, Toggle::Set(_))
            | (Stage::Failing, Toggle::NotSet | Toggle::Proposed(_)) => {
                return self.validate_floor();
            }
            (Stage::Initializing | Stage::Running, _) => {
                "INITIALIZING and RUNNING require WATERMARK_NOT_SET and an empty watermark-toggle-value"
            }
            (Stage::ClearToTeardown, _) => "CLEAR_TO_TEARDOWN requires WATERMARK_SET",
            (Stage::Failing, Toggle::Set(_)) => {
                "FAILING is only reachable before the toggle is set; after WATERMARK_SET the handover is finished forward"
            }
        };
        Err(ProtocolError::Inconsistent {
            key: keys::WATERMARK_STAGE,
            value: self.toggle.stage().as_str().to_owned(),
            reason,
        })
    }

    /// The floor part of [`validate`](Self::validate).
    pub(crate) fn validate_floor(&self) -> Result<(), ProtocolError> {
        let Some(floor) = self.floor else {
            return Ok(());
        };
        let reason = if self.stage == Stage::Initializing {
            "INITIALIZING has no floor (no handover has completed yet): leave `floor` empty"
        } else if self.toggle.value().is_some_and(|w| floor >= w) {
            "the floor must be below W (watermark-toggle-value): propose W >= floor + 1"
        } else {
            return Ok(());
        };
        Err(ProtocolError::Inconsistent {
            key: keys::FLOOR,
            value: floor.to_string(),
            reason,
        })
    }

    /// The color that emits records above W during a handover (`active`), if one is in progress.
    pub const fn incoming(&self) -> Option<Color> {
        match self.stage {
            Stage::Transitioning | Stage::ClearToTeardown | Stage::Failing => Some(self.active),
            Stage::Initializing | Stage::Running => None,
        }
    }
}

impl fmt::Display for CoordinationState {
    /// Short form for logs and errors, e.g. `epoch 3 TRANSITIONING active=GREEN
    /// WATERMARK_SET(W=1000) floor=900` (the floor only when there is one).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "epoch {} {} active={} {}",
            self.epoch,
            self.stage,
            self.active,
            self.toggle.stage()
        )?;
        if let Some(w) = self.toggle.value() {
            write!(f, "(W={w})")?;
        }
        match self.floor {
            Some(floor) => write!(f, " floor={floor}"),
            None => Ok(()),
        }
    }
}

fn get<'a>(
    data: &'a BTreeMap<String, String>,
    key: &'static str,
    expected: &'static str,
) -> Result<&'a str, ProtocolError> {
    data.get(key)
        .map(String::as_str)
        .ok_or(ProtocolError::MissingKey { key, expected })
}

fn parse_enum<T: std::str::FromStr>(
    data: &BTreeMap<String, String>,
    key: &'static str,
    expected: &'static str,
) -> Result<T, ProtocolError> {
    let raw = get(data, key, expected)?;
    raw.parse().map_err(|_| ProtocolError::InvalidValue {
        key,
        value: raw.to_owned(),
        expected,
    })
}

const UNSIGNED: &str = "a non-negative decimal integer (digits only, at most 18446744073709551615)";
const SIGNED: &str =
    "an event time in epoch milliseconds: a decimal integer, optionally negative, within i64";

fn parse_u64(data: &BTreeMap<String, String>, key: &'static str) -> Result<u64, ProtocolError> {
    let raw = get(data, key, UNSIGNED)?;
    let invalid = || ProtocolError::InvalidValue {
        key,
        value: raw.to_owned(),
        expected: UNSIGNED,
    };
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    raw.parse().map_err(|_| invalid())
}

fn parse_i64(key: &'static str, raw: &str) -> Result<i64, ProtocolError> {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    let w = if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        None
    } else {
        raw.parse::<i64>().ok()
    };
    w.ok_or_else(|| ProtocolError::InvalidValue {
        key,
        value: raw.to_owned(),
        expected: SIGNED,
    })
}

/// `floor`: absent or empty means none (ConfigMaps written before the key existed have none).
fn parse_floor(data: &BTreeMap<String, String>) -> Result<Option<i64>, ProtocolError> {
    match data.get(keys::FLOOR).map(String::as_str) {
        None | Some("") => Ok(None),
        Some(raw) => parse_i64(keys::FLOOR, raw).map(Some),
    }
}

fn parse_toggle(
    data: &BTreeMap<String, String>,
    stage: WatermarkStage,
) -> Result<Toggle, ProtocolError> {
    let key = keys::WATERMARK_TOGGLE_VALUE;
    let raw = get(data, key, "empty, or W in epoch milliseconds")?;
    if stage == WatermarkStage::NotSet {
        return if raw.is_empty() {
            Ok(Toggle::NotSet)
        } else {
            Err(ProtocolError::Inconsistent {
                key,
                value: raw.to_owned(),
                reason: "must be empty while watermark-stage is WATERMARK_NOT_SET",
            })
        };
    }
    let w = parse_i64(key, raw)?;
    Ok(match stage {
        WatermarkStage::WaitingForWatermark => Toggle::Proposed(w),
        WatermarkStage::Set | WatermarkStage::NotSet => Toggle::Set(w),
    })
}
