//! From access mode, call and classification to a decision (SPEC S1, S4, S6, AR1).

use phoneagent_protocol::{AccessMode, RiskTier};
use serde::{Deserialize, Serialize};

use crate::classify::{Classification, Gate};
use crate::input::GateInput;
use crate::receipt::WarningReceipt;

/// Who is asked when a call needs approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalRoute {
    /// The human (hard mode, SPEC S8).
    Human,
    /// The auto-reviewer model first (approve-for-me, SPEC AR1); the runtime routes it.
    AutoReviewer,
}

/// Why a call was allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllowBasis {
    /// Not an executing tool (SPEC S2).
    NotGated,
    /// Access mode `off`.
    ModeOff,
    /// Wary/reviewer and the model re-sent with `confirm_irreversible=true` (SPEC S6).
    ConfirmedIrreversible,
    /// The tier does not stop the call in this mode (none; soft outside reviewer mode).
    BelowThreshold,
}

/// What happens to the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run it.
    Allow {
        /// Why.
        basis: AllowBasis,
    },
    /// Do not run it; return this warning receipt to the model (wary / reviewer, hard tier).
    Warn {
        /// The receipt (render with a language).
        receipt: WarningReceipt,
    },
    /// Reviewer mode, soft tier: ask the reversibility reviewer (SPEC S7); its verdict decides.
    Review,
    /// Hard mode / approve-for-me, hard tier: interrupt and wait for approval.
    NeedsApproval {
        /// Who approves.
        route: ApprovalRoute,
    },
    /// The task forbids this effect (SPEC S4): not run, zero touches, in every mode.
    BlockedByTaskBoundary {
        /// The receipt (render with a language).
        receipt: WarningReceipt,
    },
}

impl Decision {
    /// Stable name (`allow`, `warn`, `review`, `needs_approval`, `blocked_by_task_boundary`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Allow { .. } => "allow",
            Self::Warn { .. } => "warn",
            Self::Review => "review",
            Self::NeedsApproval { .. } => "needs_approval",
            Self::BlockedByTaskBoundary { .. } => "blocked_by_task_boundary",
        }
    }
}

/// A gate decision with what an audit event needs (SPEC S9): mode, classified tier, effective
/// tier (`reviewer` for a soft call in reviewer mode) and the decision. The reasons stay in the
/// [`Classification`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateDecision {
    /// The access mode in force.
    pub mode: AccessMode,
    /// The tier classification produced.
    pub classified_tier: RiskTier,
    /// The tier as handled: `reviewer` for a soft call sent to the reviewer, else the classified
    /// tier.
    pub tier: RiskTier,
    /// What happens.
    #[serde(flatten)]
    pub decision: Decision,
}

impl GateDecision {
    /// True when the call runs now without anyone else deciding.
    pub fn executes(&self) -> bool {
        matches!(self.decision, Decision::Allow { .. })
    }
}

/// Decide what happens to a classified call (SPEC S1, S4, S6, AR1). In order:
/// 1. not an executing tool → allow (`not_gated`);
/// 2. a negated task boundary → `blocked_by_task_boundary`, in every mode — including `off`
///    and with `confirm_irreversible=true` — because it is the user's own explicit instruction,
///    not a heuristic;
/// 3. `off` → allow;
/// 4. `wary` / `reviewer`: `confirm_irreversible=true` is read first and the call runs, even with
///    `sensitive=true` (S6); otherwise hard → warning receipt; soft → reviewer mode sends it to
///    the reviewer, wary allows it; none → allow;
/// 5. `hard` / `approve-for-me`: `confirm_irreversible` is ignored; hard → needs approval by the
///    human / the auto-reviewer; soft and none → allow.
pub fn decide(mode: AccessMode, input: &GateInput, c: &Classification) -> GateDecision {
    let out = |tier: RiskTier, decision: Decision| GateDecision {
        mode,
        classified_tier: c.tier,
        tier,
        decision,
    };
    if !input.tool.is_gated() {
        return out(
            RiskTier::None,
            Decision::Allow {
                basis: AllowBasis::NotGated,
            },
        );
    }
    if let Some(receipt) = WarningReceipt::task_boundary(input, c) {
        return out(c.tier, Decision::BlockedByTaskBoundary { receipt });
    }
    let allow = |basis| Decision::Allow { basis };
    match mode {
        AccessMode::Off => out(c.tier, allow(AllowBasis::ModeOff)),
        AccessMode::Wary | AccessMode::Reviewer => {
            if input.confirm_irreversible {
                return out(c.tier, allow(AllowBasis::ConfirmedIrreversible));
            }
            match c.tier {
                RiskTier::Hard => out(
                    RiskTier::Hard,
                    Decision::Warn {
                        receipt: WarningReceipt::from_classification(input, c),
                    },
                ),
                RiskTier::Soft | RiskTier::Reviewer if mode == AccessMode::Reviewer => {
                    out(RiskTier::Reviewer, Decision::Review)
                }
                t => out(t, allow(AllowBasis::BelowThreshold)),
            }
        }
        AccessMode::Hard | AccessMode::ApproveForMe => match c.tier {
            RiskTier::Hard => out(
                RiskTier::Hard,
                Decision::NeedsApproval {
                    route: if mode == AccessMode::Hard {
                        ApprovalRoute::Human
                    } else {
                        ApprovalRoute::AutoReviewer
                    },
                },
            ),
            t => out(t, allow(AllowBasis::BelowThreshold)),
        },
    }
}

impl Gate {
    /// Classify and decide in one call: the classification (for the audit event's reasons) and
    /// the decision.
    pub fn evaluate(&self, mode: AccessMode, input: &GateInput) -> (Classification, GateDecision) {
        let c = self.classify(input);
        let d = decide(mode, input, &c);
        (c, d)
    }
}
