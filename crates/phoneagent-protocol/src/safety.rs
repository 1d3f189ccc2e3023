//! Access modes and risk tiers (SPEC S1, S3, AR1).

use serde::{Deserialize, Serialize};

/// How executing tool calls are gated (SPEC S1). `ask_user`/`take_over` interrupt in every mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum AccessMode {
    /// No gating of executing tools.
    Off,
    /// Default: a risky call is not executed; the model gets a warning receipt and must re-send
    /// with `confirm_irreversible=true`.
    #[default]
    Wary,
    /// A risky call interrupts and waits for a human approve/reject.
    Hard,
    /// Wary, plus the reversibility reviewer ranks soft candidates.
    Reviewer,
    /// Hard-mode approval requests go to the auto-reviewer model first (SPEC AR1).
    ApproveForMe,
}

impl AccessMode {
    /// The stable name (`off`, `wary`, `hard`, `reviewer`, `approve-for-me`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Wary => "wary",
            Self::Hard => "hard",
            Self::Reviewer => "reviewer",
            Self::ApproveForMe => "approve-for-me",
        }
    }
}

impl std::str::FromStr for AccessMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" => Ok(Self::Off),
            "wary" => Ok(Self::Wary),
            "hard" => Ok(Self::Hard),
            "reviewer" => Ok(Self::Reviewer),
            "approve-for-me" | "approve_for_me" => Ok(Self::ApproveForMe),
            other => Err(format!(
                "unknown access mode {other:?}: use off, wary, hard, reviewer or approve-for-me"
            )),
        }
    }
}

impl std::fmt::Display for AccessMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Risk tier of one executing call (SPEC S3), ordered: `None < Soft < Reviewer < Hard`.
/// Nothing the model says may lower a tier.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum RiskTier {
    /// No policy hit.
    #[default]
    None,
    /// Recall candidate: only the reviewer mode looks at it.
    Soft,
    /// Sent to the reversibility reviewer.
    Reviewer,
    /// Irreversible or credential: warning receipt (wary) or human approval (hard).
    Hard,
}
