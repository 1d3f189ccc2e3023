//! Closed vocabularies of the event stream (issue #13): why a run ended, why a screenshot was
//! taken, what a freshness check, the finish verifier or a tool result came to, and how the
//! coordinate contract was settled. Each serializes as the same snake_case string the stream
//! has always carried, so stored runs and exports read back unchanged; front ends match on the
//! variants (TypeScript gets string-literal unions), never on prose.

use serde::{Deserialize, Serialize};

use crate::ErrorCode;

/// A run's ending that is not an error: the model finished, or a person or a breaker ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum EndReason {
    /// The model finished and the finish was accepted (SPEC F1–F3).
    FinishAccepted,
    /// The model's finish was refused twice in a row; the run stops instead of looping.
    FinishRejectedTwice,
    /// A person took over when asked (a blocked screen, a request for help), SPEC S8.
    TakeOverAccepted,
    /// The person took over after the loop guard fired (SPEC R5).
    LoopTakeover,
    /// The loop guard fired and nobody took over (SPEC R5).
    LoopDetected,
    /// A protected (blank) screen and the person took over (SPEC D3).
    ScreenshotBlockedTakeover,
    /// The approve-for-me circuit breaker opened (SPEC AR6).
    ApprovalBreaker,
    /// Found `running` at start-up after a crash (SPEC T1).
    Interrupted,
}

impl EndReason {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FinishAccepted => "finish_accepted",
            Self::FinishRejectedTwice => "finish_rejected_twice",
            Self::TakeOverAccepted => "take_over_accepted",
            Self::LoopTakeover => "loop_takeover",
            Self::LoopDetected => "loop_detected",
            Self::ScreenshotBlockedTakeover => "screenshot_blocked_takeover",
            Self::ApprovalBreaker => "approval_breaker",
            Self::Interrupted => "interrupted",
        }
    }
}

/// Why a run ended (`RunFinished.termination_code`, the store's `termination_code` column):
/// an [`EndReason`], or the [`ErrorCode`] of the error or limit that ended it (`cancelled`,
/// `max_steps`, `max_duration`, `budget_exhausted`, `device_lost`, `store`, …). Serialized as
/// the bare snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum TerminationCode {
    /// A non-error ending.
    Ended(EndReason),
    /// An error or a limit.
    Error(ErrorCode),
}

impl TerminationCode {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ended(r) => r.as_str(),
            Self::Error(c) => c.as_str(),
        }
    }
}

impl From<EndReason> for TerminationCode {
    fn from(r: EndReason) -> Self {
        Self::Ended(r)
    }
}

impl From<ErrorCode> for TerminationCode {
    fn from(c: ErrorCode) -> Self {
        Self::Error(c)
    }
}

impl std::fmt::Display for TerminationCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for TerminationCode {
    type Err = String;

    /// Parse a stored name; an unknown one is an error naming it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(serde_json::Value::String(s.to_string()))
            .map_err(|_| format!("unknown termination code `{s}`"))
    }
}

impl PartialEq<str> for TerminationCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for TerminationCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Why a screenshot was taken (`Observation.purpose`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum ObservationPurpose {
    /// The frame the model plans on (SPEC R1).
    Plan,
    /// The re-check just before dispatch (SPEC R3).
    Freshness,
    /// The frame after an action (SPEC R4).
    Verify,
    /// The frame the finish review package is bound to (SPEC F1).
    Confirm,
}

impl ObservationPurpose {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Freshness => "freshness",
            Self::Verify => "verify",
            Self::Confirm => "confirm",
        }
    }
}

/// What the freshness check before dispatch found (SPEC R3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum FreshnessOutcome {
    /// The screen is the one the action was planned on.
    Fresh,
    /// It moved, then settled back within the rechecks.
    FreshAfterRecheck,
    /// It changed: the action is not sent and the model replans.
    Stale,
}

impl FreshnessOutcome {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fresh => "fresh",
            Self::FreshAfterRecheck => "fresh_after_recheck",
            Self::Stale => "stale",
        }
    }
}

/// The finish verifier's verdict (SPEC F2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum VerifierVerdict {
    /// The screen shows the task done.
    Pass,
    /// It does not: the finish is refused.
    Reject,
    /// No verifier model is configured (fail-open, audited).
    Skipped,
}

impl VerifierVerdict {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Reject => "reject",
            Self::Skipped => "skipped",
        }
    }
}

/// Whether a tool result returned to the model reports success (`ToolResult.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum ToolStatus {
    /// The call did what it asked.
    Ok,
    /// It was refused or failed; the text says why.
    Error,
}

impl ToolStatus {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
        }
    }
}

/// How the coordinate contract was settled (SPEC M4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum CalibrationMethod {
    /// The model family's trained convention (SPEC M7): no probing.
    Family,
    /// The profile (or `MODEL_COORDINATE_SPACE`) names the space.
    Explicit,
    /// A previous negotiation with this model was reused.
    Cached,
    /// Probes settled it now.
    Negotiated,
    /// No candidate space fitted: the run stops (fail-closed).
    Rejected,
}

impl CalibrationMethod {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Family => "family",
            Self::Explicit => "explicit",
            Self::Cached => "cached",
            Self::Negotiated => "negotiated",
            Self::Rejected => "rejected",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn termination_codes_serialize_as_bare_names_and_read_back() {
        for (code, name) in [
            (EndReason::FinishAccepted.into(), "finish_accepted"),
            (EndReason::ApprovalBreaker.into(), "approval_breaker"),
            (TerminationCode::Error(ErrorCode::Cancelled), "cancelled"),
            (TerminationCode::Error(ErrorCode::MaxSteps), "max_steps"),
            (TerminationCode::Error(ErrorCode::DeviceLost), "device_lost"),
        ] {
            let v = serde_json::to_value(code).unwrap();
            assert_eq!(v, serde_json::json!(name));
            let back: TerminationCode = serde_json::from_value(v).unwrap();
            assert_eq!(back, code);
            assert_eq!(name.parse::<TerminationCode>().unwrap(), code);
            assert!(code == name, "{code} == {name}");
        }
        let e = "finished_somehow".parse::<TerminationCode>().unwrap_err();
        assert!(e.contains("finished_somehow"), "{e}");
    }

    #[test]
    fn purposes_and_verdicts_keep_their_wire_names() {
        let v = serde_json::to_value([
            ObservationPurpose::Plan,
            ObservationPurpose::Freshness,
            ObservationPurpose::Verify,
            ObservationPurpose::Confirm,
        ])
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!(["plan", "freshness", "verify", "confirm"])
        );
        for p in [ObservationPurpose::Plan, ObservationPurpose::Confirm] {
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
        assert_eq!(
            serde_json::to_value(FreshnessOutcome::FreshAfterRecheck).unwrap(),
            "fresh_after_recheck"
        );
        assert_eq!(
            serde_json::to_value(VerifierVerdict::Skipped).unwrap(),
            "skipped"
        );
        assert_eq!(serde_json::to_value(ToolStatus::Error).unwrap(), "error");
        assert_eq!(
            serde_json::to_value(CalibrationMethod::Negotiated).unwrap(),
            "negotiated"
        );
        assert!(serde_json::from_value::<VerifierVerdict>("maybe".into()).is_err());
    }
}
