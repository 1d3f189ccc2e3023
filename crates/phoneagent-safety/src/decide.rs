//! From access mode, call and classification to a decision (SPEC S1, S4, S6, AR1).

use phoneagent_protocol::{AccessMode, RiskTier};
use serde::{Deserialize, Serialize};

use crate::classify::{Authorization, Classification, Gate};
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

/// Options of [`decide_with`] / [`Gate::evaluate_with`]. The default is the safe behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GateOptions {
    /// Source 000's plain `wary`: in `wary` and `reviewer` modes a model's
    /// `confirm_irreversible=true` runs every hard call, whatever the task asked for. Off by
    /// default: then `confirm_irreversible=true` runs only a hard effect whose kind the task
    /// authorizes, and any other irreversible effect goes to the person (SPEC S12). Documented
    /// in `docs/safety.md` § Task authorization.
    #[serde(default)]
    pub plain_wary: bool,
}

/// Why a call was allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllowBasis {
    /// Not an executing tool (SPEC S2).
    NotGated,
    /// Access mode `off`.
    ModeOff,
    /// Wary/reviewer and the model re-sent with `confirm_irreversible=true`, and the task
    /// authorizes the effect (or `plain_wary` is on) (SPEC S6, S12).
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
    /// Reviewer mode, soft or `reviewer` tier: ask the reversibility reviewer (SPEC S7); its
    /// verdict decides.
    Review,
    /// The target cannot be read and an irreversible effect is plausible (SPEC S11): ask the
    /// isolated visual reviewer (screenshot with the tap point marked and a crop, never the
    /// conversation). When no visual reviewer is configured, it fails, or it judges the control
    /// irreversible, the call goes to `fallback` (fail closed, SPEC S7).
    VisualReview {
        /// Who decides when the visual reviewer cannot clear the call.
        fallback: ApprovalRoute,
    },
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
    /// Stable name (`allow`, `warn`, `review`, `visual_review`, `needs_approval`,
    /// `blocked_by_task_boundary`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Allow { .. } => "allow",
            Self::Warn { .. } => "warn",
            Self::Review => "review",
            Self::VisualReview { .. } => "visual_review",
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

/// [`decide_with`] with the default [`GateOptions`].
pub fn decide(mode: AccessMode, input: &GateInput, c: &Classification) -> GateDecision {
    decide_with(mode, input, c, GateOptions::default())
}

/// Decide what happens to a classified call (SPEC S1, S4, S6, S11, S12, AR1). In order:
/// 1. not an executing tool → allow (`not_gated`);
/// 2. a negated task boundary → `blocked_by_task_boundary`, in every mode — including `off`
///    and with `confirm_irreversible=true` — because it is the user's own explicit instruction;
/// 3. `off` → allow;
/// 4. hard tier:
///    * `wary` / `reviewer`: without `confirm_irreversible` → warning receipt; with it → run
///      only when the task authorizes every hard effect ([`Authorization::Authorized`]) or
///      `plain_wary` is on, else the person (`needs_approval`, route human);
///    * `hard` → the person;
///    * `approve-for-me` → the auto-reviewer when the task authorizes the effect, else the
///      person (a hard effect the task did not ask for is never auto-allowed);
/// 5. an unreadable target on a high-stakes screen ([`Classification::visual_review`]):
///    `hard` → the person; `wary`, `reviewer`, `approve-for-me` → `visual_review` with the
///    person as fallback;
/// 6. `reviewer` tier (a commitment shape): `hard` → the person; `reviewer` → the reviewer;
///    `approve-for-me` → the auto-reviewer; `wary` → warning receipt (a confirmation of an
///    effect of unknown kind then goes to the person, by rule 4);
/// 7. soft tier: `reviewer` mode → the reviewer (`confirm_irreversible` does not skip it);
///    otherwise allow;
/// 8. none → allow.
pub fn decide_with(
    mode: AccessMode,
    input: &GateInput,
    c: &Classification,
    opts: GateOptions,
) -> GateDecision {
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
    let human = Decision::NeedsApproval {
        route: ApprovalRoute::Human,
    };
    let warn = || Decision::Warn {
        receipt: WarningReceipt::from_classification(input, c),
    };
    if mode == AccessMode::Off {
        return out(c.tier, allow(AllowBasis::ModeOff));
    }
    match c.tier {
        RiskTier::Hard => {
            let authorized = c.authorization == Authorization::Authorized;
            let d = match mode {
                AccessMode::Wary | AccessMode::Reviewer => {
                    if !input.confirm_irreversible {
                        warn()
                    } else if authorized || opts.plain_wary {
                        allow(AllowBasis::ConfirmedIrreversible)
                    } else {
                        human
                    }
                }
                AccessMode::ApproveForMe if authorized => Decision::NeedsApproval {
                    route: ApprovalRoute::AutoReviewer,
                },
                _ => human,
            };
            out(RiskTier::Hard, d)
        }
        RiskTier::Reviewer if c.visual_review => {
            let d = match mode {
                AccessMode::Hard => human,
                _ => Decision::VisualReview {
                    fallback: ApprovalRoute::Human,
                },
            };
            out(RiskTier::Reviewer, d)
        }
        RiskTier::Reviewer => {
            let d = match mode {
                AccessMode::Hard => human,
                AccessMode::Reviewer => Decision::Review,
                AccessMode::ApproveForMe => Decision::NeedsApproval {
                    route: ApprovalRoute::AutoReviewer,
                },
                _ if input.confirm_irreversible && opts.plain_wary => {
                    allow(AllowBasis::ConfirmedIrreversible)
                }
                _ if input.confirm_irreversible => human,
                _ => warn(),
            };
            out(RiskTier::Reviewer, d)
        }
        RiskTier::Soft if mode == AccessMode::Reviewer => out(RiskTier::Reviewer, Decision::Review),
        t => out(t, allow(AllowBasis::BelowThreshold)),
    }
}

impl Gate {
    /// Classify and decide in one call with the default options: the classification (for the
    /// audit event's reasons) and the decision.
    pub fn evaluate(&self, mode: AccessMode, input: &GateInput) -> (Classification, GateDecision) {
        self.evaluate_with(mode, input, GateOptions::default())
    }

    /// Classify and decide in one call with `opts` (e.g. `plain_wary`).
    pub fn evaluate_with(
        &self,
        mode: AccessMode,
        input: &GateInput,
        opts: GateOptions,
    ) -> (Classification, GateDecision) {
        let c = self.classify(input);
        let d = decide_with(mode, input, &c, opts);
        (c, d)
    }
}
