//! [`Effort`]: how hard a reasoning model should think, on the ladder OpenAI's Responses API
//! takes (`none`, `minimal`, `low`, `medium`, `high`, `xhigh`).

use serde::{Deserialize, Serialize};

/// A reasoning-effort level, weakest first.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    /// No reasoning.
    None,
    /// The least reasoning a model does.
    Minimal,
    /// Low.
    Low,
    /// Medium: a provider's usual default.
    #[default]
    Medium,
    /// High: geode's default for a task.
    High,
    /// The most (`max` in GEODE's requests).
    #[serde(rename = "xhigh")]
    XHigh,
}

impl Effort {
    /// Every level, weakest first.
    pub const ALL: [Effort; 6] = [
        Self::None,
        Self::Minimal,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::XHigh,
    ];

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::XHigh => "xhigh",
        }
    }

    /// A label as GEODE's requests carry it, read leniently: any case, `max` for `xhigh`, and
    /// anything else `medium` (a label is advice to the model, never a reason to refuse a task).
    ///
    /// ```
    /// use geode::vocab::Effort;
    /// assert_eq!(Effort::from_label(" HIGH"), Effort::High);
    /// assert_eq!(Effort::from_label("max"), Effort::XHigh);
    /// assert_eq!(Effort::from_label("whatever"), Effort::Medium);
    /// ```
    pub fn from_label(label: &str) -> Self {
        match label.trim().to_ascii_lowercase().as_str() {
            "max" => Self::XHigh,
            other => other.parse().unwrap_or_default(),
        }
    }
}

impl std::fmt::Display for Effort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Effort {
    type Err = super::UnknownName;

    /// The exact name, as [`Self::as_str`] writes it.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        super::by_name(&Self::ALL, Self::as_str, "effort", text)
    }
}
