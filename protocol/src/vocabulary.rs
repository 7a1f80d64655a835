//! The enumerated values of the coordination ConfigMap, spelled exactly as in FLIP-504.

use std::fmt;
use std::str::FromStr;

/// Defines an enum whose variants have one fixed wire spelling each, with `as_str`, `ALL`,
/// `Display` and a strict `FromStr` (exact, case-sensitive match).
macro_rules! spelled_enum {
    ($(#[$meta:meta])* $name:ident, $expected:literal, { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];
            /// The spellings accepted on the wire, for error messages.
            pub const EXPECTED: &'static str = $expected;

            /// The wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text,)+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = ();
            fn from_str(s: &str) -> Result<Self, ()> {
                match s { $($text => Ok(Self::$variant),)+ _ => Err(()) }
            }
        }
    };
}

spelled_enum!(
    /// One of the two deployments. Each child `FlinkDeployment` and every gate in it has one.
    Color, "one of BLUE, GREEN", {
        /// The `<name>-blue` deployment.
        Blue => "BLUE",
        /// The `<name>-green` deployment.
        Green => "GREEN",
    }
);

impl Color {
    /// The other color.
    #[must_use]
    pub const fn other(self) -> Self {
        match self {
            Self::Blue => Self::Green,
            Self::Green => Self::Blue,
        }
    }

    /// The lower-case suffix of the child deployment's name (`<name>-blue`).
    pub const fn suffix(self) -> &'static str {
        match self {
            Self::Blue => "blue",
            Self::Green => "green",
        }
    }
}

spelled_enum!(
    /// Where the blue/green deployment is in its life.
    Stage, "one of INITIALIZING, RUNNING, TRANSITIONING, CLEAR_TO_TEARDOWN, FAILING", {
        /// The first deployment is starting; only the active color exists.
        Initializing => "INITIALIZING",
        /// Steady state: the active color is the only one that emits.
        Running => "RUNNING",
        /// A handover to the active color is in progress; the other color is the outgoing one.
        Transitioning => "TRANSITIONING",
        /// Both jobs are past the toggle; the outgoing job may be deleted after the deletion delay.
        ClearToTeardown => "CLEAR_TO_TEARDOWN",
        /// The handover is being aborted before the toggle was set; the outgoing color keeps emitting.
        Failing => "FAILING",
    }
);

spelled_enum!(
    /// How far the watermark toggle value W is settled within a transition.
    WatermarkStage, "one of WATERMARK_NOT_SET, WAITING_FOR_WATERMARK, WATERMARK_SET", {
        /// No toggle value yet.
        NotSet => "WATERMARK_NOT_SET",
        /// A toggle value is proposed; it may still rise until it is set.
        WaitingForWatermark => "WAITING_FOR_WATERMARK",
        /// The toggle value is final for this epoch.
        Set => "WATERMARK_SET",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_and_are_case_sensitive() {
        for c in Color::ALL {
            assert_eq!(c.as_str().parse::<Color>(), Ok(*c));
            assert!(c.as_str().to_lowercase().parse::<Color>().is_err());
        }
        for s in Stage::ALL {
            assert_eq!(s.as_str().parse::<Stage>(), Ok(*s));
        }
        for w in WatermarkStage::ALL {
            assert_eq!(w.as_str().parse::<WatermarkStage>(), Ok(*w));
        }
    }

    #[test]
    fn other_color_is_an_involution() {
        for c in Color::ALL {
            assert_ne!(c.other(), *c);
            assert_eq!(c.other().other(), *c);
        }
    }
}
