//! What a simulated job is, read from a `FlinkDeployment`'s spec (plain JSON, as a foreign
//! operator sees it). The keys are documented in `docs/local-flink.md`.

use std::collections::BTreeMap;
use std::str::FromStr;

use bluegreen_protocol::Color;
use serde_json::Value;

use super::clock::DEFAULT_START_MS;
use super::source::{IdleWindow, SourceSpec};
use crate::Error;

/// `spec.flinkConfiguration` keys the simulation reads.
pub mod keys {
    use bluegreen_protocol::wire::flink_config;

    /// The gate's color (`BLUE` | `GREEN`); absent: the job has no gate and passes everything.
    pub const GATE_COLOR: &str = flink_config::COLOR;
    /// The coordination ConfigMap's name.
    pub const GATE_CONFIGMAP: &str = flink_config::CONFIGMAP;
    /// The coordination ConfigMap's namespace (default: the deployment's).
    pub const GATE_NAMESPACE: &str = flink_config::NAMESPACE;
    /// How long (simulated ms) a record may stay on HOLD before the job fails.
    pub const GATE_HOLD_TIMEOUT: &str = "bluegreen.sim.gate.hold-timeout-ms";
    /// Seed of the topic.
    pub const SEED: &str = "bluegreen.sim.seed";
    /// Number of splits of the topic.
    pub const SPLITS: &str = "bluegreen.sim.splits";
    /// Records per second per split (1..=1000).
    pub const RECORDS_PER_SECOND: &str = "bluegreen.sim.records-per-second";
    /// Arrival time of the first record, epoch ms.
    pub const START_MS: &str = "bluegreen.sim.start-ms";
    /// Out-of-orderness bound (and watermark strategy bound), ms.
    pub const OUT_OF_ORDERNESS: &str = "bluegreen.sim.out-of-orderness-ms";
    /// Fraction of late records (0.0..=1.0).
    pub const LATE_FRACTION: &str = "bluegreen.sim.late-fraction";
    /// Maximum lateness beyond the out-of-orderness bound, ms.
    pub const LATE_MAX: &str = "bluegreen.sim.late-max-ms";
    /// Number of keys of the keyed running count.
    pub const KEYS: &str = "bluegreen.sim.keys";
    /// Idle windows: `split:period-ms:idle-ms:phase-ms`, several separated by `,`.
    pub const IDLE: &str = "bluegreen.sim.idle";
    /// Source idleness timeout, ms (a split without records for this long is left out of the
    /// watermark); `0` disables idleness.
    pub const IDLENESS_TIMEOUT: &str = "bluegreen.sim.idleness-timeout-ms";
    /// Delay between the deployment and its job running, simulated ms.
    pub const STARTUP_DELAY: &str = "bluegreen.sim.startup-delay-ms";
    /// The job's version tag (default: the image tag, else the jar file name).
    pub const VERSION: &str = "bluegreen.sim.version";
    /// Flink's checkpoint interval (a Flink duration: `10s`, `500 ms`, `1 min`, or plain ms).
    pub const CHECKPOINT_INTERVAL: &str = "execution.checkpointing.interval";
    /// Flink's restart strategy: `fixed-delay` (default) or `none`/`disable`.
    pub const RESTART_STRATEGY: &str = "restart-strategy.type";
    /// Flink's fixed-delay restart attempts.
    pub const RESTART_ATTEMPTS: &str = "restart-strategy.fixed-delay.attempts";
    /// Flink's fixed-delay restart delay (a Flink duration).
    pub const RESTART_DELAY: &str = "restart-strategy.fixed-delay.delay";
    /// Flink's job name.
    pub const PIPELINE_NAME: &str = "pipeline.name";
}

/// Which ConfigMap a job's gates follow, and as which color.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateTarget {
    /// The gates' color.
    pub color: Color,
    /// The coordination ConfigMap's namespace.
    pub namespace: String,
    /// The coordination ConfigMap's name.
    pub configmap: String,
}

/// Flink's restart strategy, as far as the simulation models it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartStrategy {
    /// Restarts allowed before the job fails for good.
    pub attempts: u32,
    /// Delay before each restart, simulated ms.
    pub delay_ms: i64,
}

/// Everything that defines one simulated job, parsed from a FlinkDeployment spec.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSettings {
    /// Job name (`pipeline.name`, else the deployment name).
    pub job_name: String,
    /// The topic.
    pub source: SourceSpec,
    /// `spec.job.parallelism`.
    pub parallelism: u32,
    /// Checkpoint interval (`None`: no periodic checkpoints).
    pub checkpoint_interval_ms: Option<i64>,
    /// Source idleness timeout (`None`: splits never count as idle).
    pub idleness_timeout_ms: Option<i64>,
    /// Time from deployment to a running job.
    pub startup_delay_ms: i64,
    /// Longest HOLD before the job fails.
    pub hold_timeout_ms: i64,
    /// Restart strategy.
    pub restart: RestartStrategy,
    /// The gate, if configured.
    pub gate: Option<GateTarget>,
    /// Version tag of the job's code.
    pub version: String,
}

/// Parses a Flink duration: plain milliseconds or a number with a unit
/// (`ms`, `s`, `min`, `h`, `d` and their long forms), as Flink's `TimeUtils.parseDuration`.
pub fn parse_duration_ms(raw: &str) -> Option<i64> {
    let s = raw.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: i64 = num.parse().ok()?;
    let factor = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1000,
        "m" | "min" | "minute" | "minutes" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(factor)
}

struct Conf<'a> {
    map: &'a BTreeMap<String, String>,
}

impl Conf<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.map.get(key).map(String::as_str)
    }

    fn num<T: FromStr>(&self, key: &'static str, default: T) -> Result<T, Error> {
        match self.get(key) {
            None => Ok(default),
            Some(raw) => raw.trim().parse().map_err(|_| Error::Config {
                key,
                value: raw.to_owned(),
                expected: "a number",
            }),
        }
    }

    fn duration(&self, key: &'static str) -> Result<Option<i64>, Error> {
        self.get(key)
            .map(|raw| {
                parse_duration_ms(raw).ok_or_else(|| Error::Config {
                    key,
                    value: raw.to_owned(),
                    expected: "a Flink duration such as 10s, 500 ms or 1 min",
                })
            })
            .transpose()
    }
}

fn parse_idle(raw: &str) -> Result<Vec<IdleWindow>, Error> {
    let bad = || Error::Config {
        key: keys::IDLE,
        value: raw.to_owned(),
        expected: "split:period-ms:idle-ms:phase-ms[,...] with idle-ms < period-ms",
    };
    raw.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|part| {
            let nums: Vec<i64> = part
                .split(':')
                .map(|n| n.trim().parse::<i64>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad())?;
            let [split, period_ms, idle_ms, phase_ms] = nums[..] else {
                return Err(bad());
            };
            let split = u32::try_from(split).map_err(|_| bad())?;
            if period_ms <= 0 || idle_ms <= 0 || idle_ms >= period_ms || phase_ms < 0 {
                return Err(bad());
            }
            Ok(IdleWindow {
                split,
                period_ms,
                idle_ms,
                phase_ms,
            })
        })
        .collect()
}

/// The string map `spec.flinkConfiguration` (non-string values are rendered as JSON).
pub fn flink_configuration(spec: &Value) -> BTreeMap<String, String> {
    spec.get("flinkConfiguration")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    (k.clone(), v)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The version tag: explicit key, else the image tag, else the jar's file name.
fn version(spec: &Value, conf: &Conf<'_>) -> String {
    if let Some(v) = conf.get(keys::VERSION) {
        return v.to_owned();
    }
    let image = spec.get("image").and_then(Value::as_str).unwrap_or("");
    if let Some((_, tag)) = image.rsplit_once(':').filter(|(_, t)| !t.contains('/')) {
        return tag.to_owned();
    }
    spec.pointer("/job/jarURI")
        .and_then(Value::as_str)
        .and_then(|j| j.rsplit('/').next())
        .unwrap_or("unversioned")
        .to_owned()
}

fn source_spec(conf: &Conf<'_>) -> Result<SourceSpec, Error> {
    let rps: i64 = conf.num(keys::RECORDS_PER_SECOND, 10)?;
    if !(1..=1000).contains(&rps) {
        return Err(Error::Config {
            key: keys::RECORDS_PER_SECOND,
            value: rps.to_string(),
            expected: "an integer in 1..=1000",
        });
    }
    let late_fraction: f64 = conf.num(keys::LATE_FRACTION, 0.0)?;
    if !(0.0..=1.0).contains(&late_fraction) {
        return Err(Error::Config {
            key: keys::LATE_FRACTION,
            value: late_fraction.to_string(),
            expected: "a fraction in 0.0..=1.0",
        });
    }
    // In range 0..=1e6 after the check above.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let late_per_million = (late_fraction * 1_000_000.0).round() as u32;
    let splits: u32 = conf.num(keys::SPLITS, 4)?;
    if splits == 0 {
        return Err(Error::Config {
            key: keys::SPLITS,
            value: "0".into(),
            expected: "at least 1",
        });
    }
    Ok(SourceSpec {
        seed: conf.num(keys::SEED, 42)?,
        splits,
        interval_ms: 1000 / rps,
        start_ms: conf.num(keys::START_MS, DEFAULT_START_MS)?,
        out_of_orderness_ms: conf.num(keys::OUT_OF_ORDERNESS, 500)?,
        late_per_million,
        late_max_ms: conf.num(keys::LATE_MAX, 2000)?,
        keys: conf.num(keys::KEYS, 16)?,
        idle: conf
            .get(keys::IDLE)
            .map(parse_idle)
            .transpose()?
            .unwrap_or_default(),
    })
}

fn gate_target(conf: &Conf<'_>, namespace: &str) -> Result<Option<GateTarget>, Error> {
    Ok(match conf.get(keys::GATE_COLOR) {
        None => None,
        Some(raw) => {
            let color = raw.parse::<Color>().map_err(|()| Error::Config {
                key: keys::GATE_COLOR,
                value: raw.to_owned(),
                expected: Color::EXPECTED,
            })?;
            let configmap = conf.get(keys::GATE_CONFIGMAP).ok_or(Error::Config {
                key: keys::GATE_CONFIGMAP,
                value: String::new(),
                expected: "the coordination ConfigMap's name (required with bluegreen.gate.color)",
            })?;
            Some(GateTarget {
                color,
                namespace: conf
                    .get(keys::GATE_NAMESPACE)
                    .unwrap_or(namespace)
                    .to_owned(),
                configmap: configmap.to_owned(),
            })
        }
    })
}

impl JobSettings {
    /// Reads the settings of the deployment `name` in `namespace` from its `spec`.
    pub fn from_spec(namespace: &str, name: &str, spec: &Value) -> Result<Self, Error> {
        let map = flink_configuration(spec);
        let conf = Conf { map: &map };
        let parallelism = spec
            .pointer("/job/parallelism")
            .and_then(Value::as_u64)
            .unwrap_or(1);
        let parallelism = u32::try_from(parallelism)
            .ok()
            .filter(|p| (1..=1024).contains(p))
            .ok_or_else(|| Error::Config {
                key: "spec.job.parallelism",
                value: parallelism.to_string(),
                expected: "an integer in 1..=1024",
            })?;
        let source = source_spec(&conf)?;
        let gate = gate_target(&conf, namespace)?;
        let restart = match conf.get(keys::RESTART_STRATEGY) {
            Some("none" | "off" | "disable") => RestartStrategy {
                attempts: 0,
                delay_ms: 0,
            },
            _ => RestartStrategy {
                attempts: conf.num(keys::RESTART_ATTEMPTS, u32::MAX)?,
                delay_ms: conf.duration(keys::RESTART_DELAY)?.unwrap_or(1000),
            },
        };
        let idleness: i64 = conf.num(keys::IDLENESS_TIMEOUT, 10_000)?;
        Ok(Self {
            job_name: conf.get(keys::PIPELINE_NAME).unwrap_or(name).to_owned(),
            source,
            parallelism,
            checkpoint_interval_ms: conf
                .duration(keys::CHECKPOINT_INTERVAL)?
                .filter(|ms| *ms > 0),
            idleness_timeout_ms: (idleness > 0).then_some(idleness),
            startup_delay_ms: conf.num(keys::STARTUP_DELAY, 2000)?,
            hold_timeout_ms: conf.num(keys::GATE_HOLD_TIMEOUT, 600_000)?,
            restart,
            gate,
            version: version(spec, &conf),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_parse_like_flink() {
        assert_eq!(parse_duration_ms("10s"), Some(10_000));
        assert_eq!(parse_duration_ms("500 ms"), Some(500));
        assert_eq!(parse_duration_ms("1 min"), Some(60_000));
        assert_eq!(parse_duration_ms("250"), Some(250));
        assert_eq!(parse_duration_ms("ten"), None);
    }

    #[test]
    fn settings_come_from_the_spec() {
        let spec = json!({
            "image": "registry/orders:2.1",
            "job": {"jarURI": "local:///opt/job.jar", "parallelism": 3},
            "flinkConfiguration": {
                "bluegreen.gate.color": "GREEN",
                "bluegreen.gate.configmap": "orders-bluegreen",
                "bluegreen.sim.records-per-second": "20",
                "bluegreen.sim.idle": "1:60000:20000:5000",
                "execution.checkpointing.interval": "5 s",
            }
        });
        let s = JobSettings::from_spec("ns", "orders-green", &spec).expect("valid");
        assert_eq!(s.parallelism, 3);
        assert_eq!(s.source.interval_ms, 50);
        assert_eq!(s.checkpoint_interval_ms, Some(5000));
        assert_eq!(s.version, "2.1");
        assert_eq!(s.source.idle.len(), 1);
        let gate = s.gate.expect("gate");
        assert_eq!(
            (gate.color, gate.namespace.as_str(), gate.configmap.as_str()),
            (Color::Green, "ns", "orders-bluegreen")
        );
    }

    #[test]
    fn bad_values_name_their_key() {
        let spec = json!({"flinkConfiguration": {"bluegreen.gate.color": "green"}});
        let err = JobSettings::from_spec("ns", "x", &spec).expect_err("lower case color");
        assert!(err.to_string().contains("bluegreen.gate.color"), "{err}");
        let spec = json!({"flinkConfiguration": {"bluegreen.sim.idle": "1:10:20:0"}});
        assert!(JobSettings::from_spec("ns", "x", &spec).is_err());
    }
}
