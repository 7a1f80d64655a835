//! The Flink lines real mode runs, and which one a deployment asks for: its `spec.flinkVersion`
//! picks the line, as the Apache operator's image and `flinkVersion` pick a real cluster's.

use std::fmt;
use std::path::PathBuf;

use crate::Error;

/// A Flink major line real mode can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlinkMajor {
    /// Flink 1.20: `spec.flinkVersion: v1_20`.
    V1_20,
    /// Flink 2.x: `spec.flinkVersion: v2_0`, `v2_1`, …
    V2,
}

impl FlinkMajor {
    /// The line of a `spec.flinkVersion` value; an error naming the field and the values real
    /// mode runs for any other (older 1.x lines included: their jobs would silently run on 1.20).
    pub fn of(flink_version: Option<&str>) -> Result<Self, Error> {
        const FIX: &str = "set spec.flinkVersion to v1_20 (Flink 1.20) or v2_0, v2_1, … (Flink 2.x): the lines real mode runs";
        let Some(version) = flink_version else {
            return Err(Error::Spec {
                field: "spec.flinkVersion",
                problem: "missing (the Apache operator requires it too)".into(),
                fix: FIX,
            });
        };
        if version == "v1_20" {
            return Ok(Self::V1_20);
        }
        match version.strip_prefix("v2_") {
            Some(minor) if !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()) => {
                Ok(Self::V2)
            }
            _ => Err(Error::Spec {
                field: "spec.flinkVersion",
                problem: format!("{version:?} is not a line real mode runs"),
                fix: FIX,
            }),
        }
    }

    /// The commands that install this line's Flink `lib/` and build its launcher.
    pub fn install_hint(self) -> &'static str {
        match self {
            Self::V1_20 => "`scripts/flink-jars.sh` and `mvn -B -q package -DskipTests`",
            Self::V2 => {
                "`FLINK_VERSION=2.3.0 scripts/flink-jars.sh` and `mvn -B -q package -DskipTests -Pflink2`"
            }
        }
    }
}

impl fmt::Display for FlinkMajor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::V1_20 => "Flink 1.20",
            Self::V2 => "Flink 2.x",
        })
    }
}

/// One Flink line's files: Flink's `lib/` and the launcher built against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlinkLine {
    /// Flink's `lib/` directory (`scripts/flink-jars.sh` prints it).
    pub lib: PathBuf,
    /// The launcher built for this line: `target/launcher/bluegreen-launcher.jar` (Flink 1.20),
    /// `target/launcher-flink2/bluegreen-launcher.jar` (Flink 2.x, Maven profile `flink2`).
    pub launcher_jar: PathBuf,
}

impl FlinkLine {
    /// A line of `lib` and `launcher_jar`.
    pub fn new(lib: impl Into<PathBuf>, launcher_jar: impl Into<PathBuf>) -> Self {
        Self {
            lib: lib.into(),
            launcher_jar: launcher_jar.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{FlinkLine, FlinkMajor};
    use crate::real::RealFlinkOptions;

    #[test]
    fn a_runner_gives_the_line_asked_for_and_never_another() {
        let mut options = RealFlinkOptions::new(FlinkLine::new("/f1/lib", "/f1/l.jar"), "/w", "");
        assert_eq!(
            options.line(Some("v1_20")).expect("1.20").lib.to_str(),
            Some("/f1/lib")
        );
        let err = options.line(Some("v2_1")).expect_err("no 2.x").to_string();
        assert!(
            err.contains("spec.flinkVersion")
                && err.contains("v2_1")
                && err.contains("FLINK_VERSION=2.3.0 scripts/flink-jars.sh")
                && err.contains("-Pflink2"),
            "{err}"
        );
        options.flink_1_20 = None;
        options.flink_2 = Some(FlinkLine::new("/f2/lib", "/f2/l.jar"));
        assert_eq!(
            options
                .line(Some("v2_1"))
                .expect("2.x")
                .launcher_jar
                .to_str(),
            Some("/f2/l.jar")
        );
        let err = options
            .line(Some("v1_20"))
            .expect_err("no 1.20")
            .to_string();
        assert!(err.contains("scripts/flink-jars.sh"), "{err}");
    }

    #[test]
    fn flink_version_picks_the_line_and_anything_else_names_the_field() {
        assert_eq!(
            FlinkMajor::of(Some("v1_20")).expect("1.20"),
            FlinkMajor::V1_20
        );
        for v in ["v2_0", "v2_3", "v2_4"] {
            assert_eq!(FlinkMajor::of(Some(v)).expect("2.x"), FlinkMajor::V2, "{v}");
        }
        for bad in [Some("v1_19"), Some("v2_"), Some("v2_x"), Some("2.3"), None] {
            let err = FlinkMajor::of(bad).expect_err("refused").to_string();
            assert!(
                err.contains("spec.flinkVersion") && err.contains("v1_20"),
                "{bad:?}: {err}"
            );
        }
    }
}
