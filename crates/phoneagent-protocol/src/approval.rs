//! Approve-for-me types (SPEC AR1–AR8): the reviewer's verdict vocabulary, routing policies and
//! the one ledger record every approval request of that mode leaves in the event stream.
//!
//! The enums are closed English tokens (the reviewer's JSON is validated against them); only the
//! free-text `reason` / `suggestion` follow the run's language.

use serde::{Deserialize, Serialize};

use crate::event::DecidedBy;
use crate::safety::RiskTier;

/// What the auto-reviewer said (SPEC AR1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum ReviewDecision {
    /// Run the call.
    Allow,
    /// Do not run the call.
    Deny,
    /// The reviewer cannot tell: `on_uncertain` decides.
    Uncertain,
}

impl ReviewDecision {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::Uncertain => "uncertain",
        }
    }
}

/// Risk level the reviewer assigns, ordered `Low < Medium < High < Critical` (SPEC AR1, AR3).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum ReviewRisk {
    /// Routine.
    Low,
    /// Some consequence, easily undone.
    Medium,
    /// Hard to undo (money, sending, deleting): needs medium/high user authorization and a
    /// bounded scope to be auto-allowed.
    #[default]
    High,
    /// Always denied, whatever the authorization.
    Critical,
}

impl ReviewRisk {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }
}

/// How clearly the user authorized this exact effect, ordered `None < Low < Medium < High`
/// (SPEC AR1). Judged from the user's task (and a one-time grant), never from screen text.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum UserAuthorization {
    /// Nothing the user said covers it.
    #[default]
    None,
    /// Loosely implied.
    Low,
    /// Clearly within the task.
    Medium,
    /// Explicitly asked for (or granted once by the user).
    High,
}

impl UserAuthorization {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// Routing result of the policy (SPEC AR2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum ApprovalPolicy {
    /// Ask the auto-reviewer model.
    #[default]
    Ai,
    /// The normal human approval path, untouched.
    Human,
    /// Reject with an explanation; no model call, no human.
    Never,
}

impl ApprovalPolicy {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ai => "ai",
            Self::Human => "human",
            Self::Never => "never",
        }
    }
}

/// Final outcome of one approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum ApprovalOutcome {
    /// The call ran.
    Allowed,
    /// The call did not run.
    Denied,
}

impl ApprovalOutcome {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Denied => "denied",
        }
    }
}

/// Circuit-breaker counters after a request (SPEC AR4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct BreakerState {
    /// Reviewer denials in a row (an allow resets it; failures and human decisions don't count).
    pub consecutive_denials: u32,
    /// Denials among the last `window_size` reviews.
    pub window_denials: u32,
    /// Reviews currently in the window (≤ `window_size`).
    pub window_reviews: u32,
    /// The breaker tripped in this run.
    pub open: bool,
}

/// One approval request of the approve-for-me mode, as decided: one ledger row (SPEC AR8).
/// Emitted once per request, after the final decision (after the human answered when it was
/// delegated). Never carries secrets: `target`, `arguments`, `reason` are redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct ApprovalReview {
    /// Unique id of the request (`ar-<uuid>`).
    pub request_id: String,
    /// Tool name (`tap`, `type`, …).
    pub tool: String,
    /// Redacted target summary.
    pub target: String,
    /// Redacted, truncated arguments as the reviewer saw them.
    pub arguments: serde_json::Value,
    /// True when an argument value or the document was cut (thin evidence).
    pub arguments_truncated: bool,
    /// Gate tier that raised the request.
    pub tier: RiskTier,
    /// Gate reason codes.
    pub reasons: Vec<String>,
    /// Routing result.
    pub policy: ApprovalPolicy,
    /// Where the policy came from: `rule:<n>` (+ ` (<note>)`), `tool:<name>` or `default`.
    pub policy_source: String,
    /// Final outcome.
    pub outcome: ApprovalOutcome,
    /// Who made the final decision: `auto_reviewer`, `human`, `rule` (policy `never`, breaker,
    /// budget) or `policy` (a configured fallback such as `on_reviewer_failure: deny`).
    pub decided_by: DecidedBy,
    /// True when the request went on to the human (by policy or by a gate).
    pub delegated: bool,
    /// The reviewer's own decision, when it answered validly.
    pub verdict: Option<ReviewDecision>,
    /// The reviewer's risk, when it answered validly.
    pub risk: Option<ReviewRisk>,
    /// The reviewer's view of the user's authorization, when it answered validly.
    pub user_authorization: Option<UserAuthorization>,
    /// The final reason (the reviewer's, a gate's, or the human's note).
    pub reason: String,
    /// A safer alternative, when the reviewer gave one.
    pub suggestion: Option<String>,
    /// The code gate that changed or made the decision (`critical_risk`, `high_risk_unauthorized`,
    /// `risk_exceeded`, `uncertain`, `reviewer_failure`, `thin_evidence`,
    /// `screen_text_addresses_agent`, `budget_exhausted`, `failure_budget_exhausted`,
    /// `breaker_open`, `breaker_tripped`, `policy_never`, `policy_human`).
    pub gate: Option<String>,
    /// Why the reviewer failed (`timeout`, `error: …`, `truncated`, `invalid: …`), if it did.
    pub reviewer_error: Option<String>,
    /// Reviewer route: profile name.
    pub reviewer_profile: Option<String>,
    /// Reviewer route: model name.
    pub reviewer_model: Option<String>,
    /// Time of the reviewer call, ms (absent when none was made).
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub review_latency_ms: Option<u64>,
    /// Time from request to final decision, ms (includes the human's wait).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub latency_ms: u64,
    /// Reviews left in this run's budget after this request.
    pub reviews_left: u32,
    /// Reviewer failures left in this run's failure budget.
    pub failures_left: u32,
    /// Breaker counters after this request.
    pub breaker: BreakerState,
    /// A one-time user override was consumed by this request (the reviewer saw it).
    pub override_used: bool,
    /// The verdict came from the verdict cache.
    pub cached: bool,
    /// Id of the human request when delegated.
    pub human_request_id: Option<String>,
}
