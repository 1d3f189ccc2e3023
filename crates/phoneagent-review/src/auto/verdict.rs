//! Strict verdict parsing and the gates applied in code after the reviewer answers (SPEC AR1,
//! AR3, AR6).

use phoneagent_protocol::{ReviewDecision, ReviewRisk, RiskTier, UserAuthorization};
use serde::Deserialize;

use super::config::{AutoReviewConfig, Fallback, OnRiskExceeded};

/// A valid reviewer verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// allow / deny / uncertain.
    pub decision: ReviewDecision,
    /// low / medium / high / critical.
    pub risk: ReviewRisk,
    /// none / low / medium / high.
    pub user_authorization: UserAuthorization,
    /// The reviewer said the effect's scope is bounded (absent → not bounded).
    pub scope_bounded: bool,
    /// Why (non-empty).
    pub reason: String,
    /// A safer alternative (empty → None).
    pub suggestion: Option<String>,
}

/// Why a review produced no usable verdict; `on_reviewer_failure` decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewFailure {
    /// No reviewer model is configured.
    Unavailable,
    /// The call exceeded `timeout_ms`.
    Timeout(u64),
    /// The call failed (HTTP, connection refused, …).
    Error(String),
    /// The answer was cut (`finish_reason = length`).
    Truncated,
    /// The answer is not a valid verdict.
    Invalid(String),
}

impl ReviewFailure {
    /// Text for the ledger's `reviewer_error`.
    pub fn describe(&self) -> String {
        match self {
            Self::Unavailable => "unavailable: no auto_reviewer model is configured".into(),
            Self::Timeout(ms) => format!("timeout after {ms} ms"),
            Self::Error(e) => format!("error: {e}"),
            Self::Truncated => "truncated: the answer was cut at the token limit".into(),
            Self::Invalid(e) => format!("invalid: {e}"),
        }
    }
}

#[derive(Debug, Deserialize)]
struct RawVerdict {
    decision: String,
    risk: String,
    user_authorization: String,
    #[serde(default)]
    scope: Option<String>,
    reason: String,
    #[serde(default)]
    suggestion: Option<String>,
}

fn token(v: &str) -> String {
    v.trim().to_ascii_lowercase()
}

/// Parse a reviewer answer strictly: the first JSON object with all of `decision`, `risk`,
/// `user_authorization` and `reason` (non-empty); every enum value must be one of the listed
/// English tokens (case-insensitive); `scope` (`bounded`/`unbounded`) and `suggestion` are
/// optional; `finish_reason = length` is a truncated answer. Extra keys are ignored.
///
/// # Errors
/// [`ReviewFailure::Truncated`] or [`ReviewFailure::Invalid`] naming the bad field.
pub fn parse_verdict(
    content: &str,
    finish_reason: Option<&str>,
    reason_max_chars: usize,
) -> Result<Verdict, ReviewFailure> {
    if finish_reason == Some("length") {
        return Err(ReviewFailure::Truncated);
    }
    let Some(raw) = crate::extract_json::<RawVerdict>(content) else {
        let shown: String = content.chars().take(80).collect();
        return Err(ReviewFailure::Invalid(format!(
            "no JSON object with decision, risk, user_authorization and reason in the answer {shown:?}"
        )));
    };
    let decision = match token(&raw.decision).as_str() {
        "allow" => ReviewDecision::Allow,
        "deny" => ReviewDecision::Deny,
        "uncertain" => ReviewDecision::Uncertain,
        other => {
            return Err(ReviewFailure::Invalid(format!(
                "decision {other:?} is not allow, deny or uncertain"
            )));
        }
    };
    let risk = match token(&raw.risk).as_str() {
        "low" => ReviewRisk::Low,
        "medium" => ReviewRisk::Medium,
        "high" => ReviewRisk::High,
        "critical" => ReviewRisk::Critical,
        other => {
            return Err(ReviewFailure::Invalid(format!(
                "risk {other:?} is not low, medium, high or critical"
            )));
        }
    };
    let user_authorization = match token(&raw.user_authorization).as_str() {
        "none" => UserAuthorization::None,
        "low" => UserAuthorization::Low,
        "medium" => UserAuthorization::Medium,
        "high" => UserAuthorization::High,
        other => {
            return Err(ReviewFailure::Invalid(format!(
                "user_authorization {other:?} is not none, low, medium or high"
            )));
        }
    };
    let scope_bounded = match raw.scope.as_deref().map(token).as_deref() {
        None | Some("unbounded") | Some("") => false,
        Some("bounded") => true,
        Some(other) => {
            return Err(ReviewFailure::Invalid(format!(
                "scope {other:?} is not bounded or unbounded"
            )));
        }
    };
    let reason = raw.reason.trim();
    if reason.is_empty() {
        return Err(ReviewFailure::Invalid("reason is empty".into()));
    }
    let clip = |s: &str| -> String { s.chars().take(reason_max_chars.max(40)).collect() };
    Ok(Verdict {
        decision,
        risk,
        user_authorization,
        scope_bounded,
        reason: clip(reason),
        suggestion: raw
            .suggestion
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(clip),
    })
}

/// What the gates make of a review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateAction {
    /// Run the call.
    Allow,
    /// Do not run it.
    Deny,
    /// Ask the human.
    Delegate,
}

/// The gated result: the action and the gate that made or changed it (None = the reviewer's own
/// decision stood).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gated {
    /// What happens.
    pub action: GateAction,
    /// The gate, by its stable name (see [`phoneagent_protocol::ApprovalReview::gate`]).
    pub gate: Option<&'static str>,
}

fn fallback(f: Fallback) -> GateAction {
    match f {
        Fallback::Delegate => GateAction::Delegate,
        Fallback::Deny => GateAction::Deny,
    }
}

/// Facts about the evidence the gates need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EvidenceFacts {
    /// No screenshot, or the arguments were truncated / unparseable.
    pub thin: bool,
    /// The actor's texts address the agent/reviewer or claim prior approval.
    pub injection: bool,
}

/// What the safety gate itself found, independent of the reviewer (SPEC S12, AR3): the risk
/// floor and the user's authorization come from here, never from the reviewer's own `risk` and
/// `user_authorization` labels (the reviewer can only raise the risk).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GateFloor {
    /// The gate's tier of the call: `hard` floors the risk at `high`, `reviewer` at `medium`.
    pub tier: RiskTier,
    /// The task (the user's own words) authorizes every hard effect of the call
    /// (`phoneagent_safety::Authorization::Authorized`). False by default: a hard call without
    /// it is never auto-allowed.
    pub task_authorizes: bool,
}

impl GateFloor {
    /// The floor of `risk`: `high` for a hard call, `medium` for a `reviewer` one, else `low`.
    pub fn risk(&self) -> ReviewRisk {
        match self.tier {
            RiskTier::Hard => ReviewRisk::High,
            RiskTier::Reviewer => ReviewRisk::Medium,
            _ => ReviewRisk::Low,
        }
    }

    /// The user's authorization as the gate's task analysis says: `high` when the task
    /// authorizes the effect, `none` otherwise.
    pub fn authorization(&self) -> UserAuthorization {
        if self.task_authorizes {
            UserAuthorization::High
        } else {
            UserAuthorization::None
        }
    }
}

/// The code gates, in order (SPEC AR3, AR6, S12). The risk is the reviewer's `risk` raised to
/// the gate's floor ([`GateFloor::risk`]); the authorization is the gate's task analysis
/// ([`GateFloor::authorization`]) — the reviewer's `user_authorization` is recorded, never used.
/// 1. no verdict (failure) → `on_reviewer_failure`;
/// 2. risk `critical` → deny, always, whatever the decision or authorization;
/// 3. decision `deny` → deny; `uncertain` → `on_uncertain`;
/// 4. decision `allow`:
///    a. a hard call whose effect the task does not authorize → the human (`unauthorized_effect`):
///    never auto-allowed;
///    b. the actor's texts address the agent/reviewer (screen text relayed as authority) → deny;
///    c. thin evidence → `on_uncertain` (never allow);
///    d. risk `high` without the task's authorization and a bounded scope → the human;
///    e. risk above `max_auto_allow_risk` → `on_risk_exceeded`;
///    f. allow.
pub fn apply_gates(
    verdict: Result<&Verdict, &ReviewFailure>,
    facts: EvidenceFacts,
    floor: GateFloor,
    cfg: &AutoReviewConfig,
) -> Gated {
    let g = |action, gate| Gated {
        action,
        gate: Some(gate),
    };
    let v = match verdict {
        Err(_) => return g(fallback(cfg.on_reviewer_failure), "reviewer_failure"),
        Ok(v) => v,
    };
    let risk = v.risk.max(floor.risk());
    if risk == ReviewRisk::Critical {
        return if v.decision == ReviewDecision::Deny {
            Gated {
                action: GateAction::Deny,
                gate: None,
            }
        } else {
            g(GateAction::Deny, "critical_risk")
        };
    }
    match v.decision {
        ReviewDecision::Deny => Gated {
            action: GateAction::Deny,
            gate: None,
        },
        ReviewDecision::Uncertain => g(fallback(cfg.on_uncertain), "uncertain"),
        ReviewDecision::Allow => {
            if floor.tier == RiskTier::Hard && !floor.task_authorizes {
                return g(GateAction::Delegate, "unauthorized_effect");
            }
            if facts.injection {
                return g(GateAction::Deny, "screen_text_addresses_agent");
            }
            if facts.thin {
                return g(fallback(cfg.on_uncertain), "thin_evidence");
            }
            if risk == ReviewRisk::High
                && !(floor.authorization() >= UserAuthorization::Medium && v.scope_bounded)
            {
                return g(GateAction::Delegate, "high_risk_unauthorized");
            }
            if risk > cfg.max_auto_allow_risk {
                return match cfg.on_risk_exceeded {
                    OnRiskExceeded::Delegate => g(GateAction::Delegate, "risk_exceeded"),
                    OnRiskExceeded::Deny => g(GateAction::Deny, "risk_exceeded"),
                    OnRiskExceeded::Allow => g(GateAction::Allow, "risk_exceeded"),
                };
            }
            Gated {
                action: GateAction::Allow,
                gate: None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_parsing() {
        let v = parse_verdict(
            "```json\n{\"decision\":\"Allow\",\"risk\":\"low\",\"user_authorization\":\"high\",\"scope\":\"bounded\",\"reason\":\"ok\",\"suggestion\":\"\",\"extra\":1}\n```",
            Some("stop"),
            2000,
        )
        .unwrap();
        assert_eq!(v.decision, ReviewDecision::Allow);
        assert!(v.scope_bounded);
        assert_eq!(v.suggestion, None);
        for (bad, what) in [
            (
                r#"{"decision":"yes","risk":"low","user_authorization":"high","reason":"r"}"#,
                "decision",
            ),
            (
                r#"{"decision":"allow","risk":"severe","user_authorization":"high","reason":"r"}"#,
                "risk",
            ),
            (
                r#"{"decision":"allow","risk":"low","user_authorization":"full","reason":"r"}"#,
                "user_authorization",
            ),
            (
                r#"{"decision":"allow","risk":"low","user_authorization":"high","reason":" "}"#,
                "reason",
            ),
            (
                r#"{"decision":"allow","risk":"low","user_authorization":"high","scope":"some","reason":"r"}"#,
                "scope",
            ),
            (r#"{"decision":"allow","risk":"low"}"#, "no JSON object"),
            ("I think it's fine", "no JSON object"),
        ] {
            match parse_verdict(bad, None, 2000) {
                Err(ReviewFailure::Invalid(m)) => assert!(m.contains(what), "{bad}: {m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert_eq!(
            parse_verdict(r#"{"decision":"allow""#, Some("length"), 2000),
            Err(ReviewFailure::Truncated)
        );
    }

    fn verdict(risk: ReviewRisk, auth: UserAuthorization) -> Verdict {
        Verdict {
            decision: ReviewDecision::Allow,
            risk,
            user_authorization: auth,
            scope_bounded: true,
            reason: "looks fine".into(),
            suggestion: None,
        }
    }

    /// Issue 11: a reviewer answering `allow / risk low / authorization high` on a payment the
    /// task never asked for does not get it through; the gate's floor decides.
    #[test]
    fn reviewer_labels_never_authorize_a_hard_effect_the_task_did_not_ask_for() {
        let cfg = AutoReviewConfig::default();
        let v = verdict(ReviewRisk::Low, UserAuthorization::High);
        let unauthorized = GateFloor {
            tier: RiskTier::Hard,
            task_authorizes: false,
        };
        let g = apply_gates(Ok(&v), EvidenceFacts::default(), unauthorized, &cfg);
        assert_eq!(g.action, GateAction::Delegate);
        assert_eq!(g.gate, Some("unauthorized_effect"));
        // The same verdict on a payment the task asked for, bounded: allowed.
        let authorized = GateFloor {
            tier: RiskTier::Hard,
            task_authorizes: true,
        };
        let g = apply_gates(Ok(&v), EvidenceFacts::default(), authorized, &cfg);
        assert_eq!(g.action, GateAction::Allow);
        // Unbounded scope on a hard effect: the floor makes it high risk → the human.
        let mut unbounded = v.clone();
        unbounded.scope_bounded = false;
        let g = apply_gates(Ok(&unbounded), EvidenceFacts::default(), authorized, &cfg);
        assert_eq!(g.gate, Some("high_risk_unauthorized"));
    }

    #[test]
    fn the_floor_raises_the_reviewers_risk_never_lowers_it() {
        let cfg = AutoReviewConfig {
            max_auto_allow_risk: ReviewRisk::Low,
            ..AutoReviewConfig::default()
        };
        let v = verdict(ReviewRisk::Low, UserAuthorization::High);
        let floor = GateFloor {
            tier: RiskTier::Reviewer,
            task_authorizes: false,
        };
        let g = apply_gates(Ok(&v), EvidenceFacts::default(), floor, &cfg);
        assert_eq!(
            g.gate,
            Some("risk_exceeded"),
            "reviewer tier floors at medium"
        );
        // A reviewer saying critical is still denied whatever the floor.
        let crit = verdict(ReviewRisk::Critical, UserAuthorization::High);
        let g = apply_gates(
            Ok(&crit),
            EvidenceFacts::default(),
            GateFloor::default(),
            &cfg,
        );
        assert_eq!(g.action, GateAction::Deny);
    }

    /// The reviewer's `user_authorization` is not used: `none` from the reviewer on an effect
    /// the task authorizes does not block it, `high` on one it does not authorize does not
    /// allow it (covered above).
    #[test]
    fn authorization_comes_from_the_task_analysis() {
        let cfg = AutoReviewConfig::default();
        let v = verdict(ReviewRisk::High, UserAuthorization::None);
        let floor = GateFloor {
            tier: RiskTier::Hard,
            task_authorizes: true,
        };
        assert_eq!(
            apply_gates(Ok(&v), EvidenceFacts::default(), floor, &cfg).action,
            GateAction::Allow
        );
    }
}
