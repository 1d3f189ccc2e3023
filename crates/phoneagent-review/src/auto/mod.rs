//! The approve-for-me reviewer (SPEC AR1–AR8).
//!
//! In access mode `approve-for-me`, an approval request that `hard` mode would put to a person
//! comes here first. [`AutoReview::decide`] routes it (ordered regex rules → per-tool table →
//! default: `ai` | `human` | `never`), checks the run's circuit breaker and budgets, builds the
//! redacted, fenced [`Evidence`] package, asks the reviewer model for a strict JSON verdict, and
//! applies the code gates ([`apply_gates`]). It returns what the runtime must do
//! ([`AutoAction`]), the ledger record ([`ApprovalReview`]) and the text for the actor.
//!
//! Failure is never an allow: a timeout, an error, a truncated or invalid answer, a missing
//! reviewer or thin evidence goes to `on_reviewer_failure` / `on_uncertain` (default: the human).
//!
//! Per-run state (budgets, breaker, recent denials, one-time grants, verdict cache) lives behind
//! an [`AutoReviewHandle`] that front ends clone to show live status and to grant a one-time
//! override ([`AutoReviewHandle::grant_override`]). It is in memory only: nothing survives a
//! restart, and a new run starts from zero.

pub mod config;
pub mod evidence;
pub mod verdict;

mod handle;
mod review;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use phoneagent_llm::{ChatRequest, ChatResponse, LlmError, ModelClient};
use phoneagent_protocol::event::DecidedBy;
use phoneagent_protocol::{ApprovalOutcome, ApprovalPolicy, ApprovalReview, BreakerState};
use phoneagent_safety::Lang;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

pub use config::{
    AutoReviewConfig, BreakerAction, BreakerConfig, CacheConfig, CompiledPolicy, Fallback,
    OnRiskExceeded, OverrideConfig, PolicyRule, ReviewBudget, Routed, RuleField,
};
pub use evidence::{
    ApprovalInput, ArgumentsInput, Evidence, RedactedArguments, injection_markers, redact_arguments,
};
pub use verdict::{
    EvidenceFacts, GateAction, GateFloor, Gated, ReviewFailure, Verdict, apply_gates, parse_verdict,
};

/// Errors of the approve-for-me configuration and of override grants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AutoReviewError {
    /// The policy file is unreadable or invalid.
    #[error("approval policy {path}: {message}. Fix the file or remove it to use the defaults.")]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// `Agent::with_approve_for_me` was called while a run or step session held the agent.
    #[error("approve-for-me can only be configured before a run starts: wait for the run to end")]
    Busy,
    /// A rule's regex does not compile.
    #[error("approval rule {index} has an invalid pattern {pattern:?}: {message}")]
    Rule {
        /// 1-based index.
        index: usize,
        /// The pattern.
        pattern: String,
        /// The regex error.
        message: String,
    },
    /// `grant_override_for(request_id)` names no recent denial.
    #[error(
        "the denial {request_id} is no longer among the run's {available} recent denial(s): it expired or the run ended"
    )]
    UnknownDenial {
        /// The request id asked for.
        request_id: String,
        /// Denials available.
        available: usize,
    },
    /// `grant_override(n)` names no recent denial.
    #[error(
        "no denial number {n} to override: the current run has {available} recent denial(s) (1 = most recent, at most {max})"
    )]
    NoSuchDenial {
        /// Requested index (1-based).
        n: usize,
        /// Denials available.
        available: usize,
        /// `override.max_pending`.
        max: usize,
    },
}

/// The reviewer model route.
#[derive(Clone)]
pub struct ReviewerRoute {
    /// The client.
    pub client: Arc<dyn ModelClient>,
    /// Profile name (ledger).
    pub profile: String,
    /// Model name (ledger, cache key).
    pub model: String,
}

/// What the runtime must do with the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoAction {
    /// Run the call.
    Allow,
    /// Do not run it; return `feedback` to the actor.
    Deny,
    /// Put it to the human through the normal approval path.
    Delegate,
    /// Do not run it, return `feedback`, and end the run: the circuit breaker tripped with
    /// action `stop` (the reason is in the record).
    StopRun,
}

/// The reviewer call made for a request, for the caller's token ledger.
#[derive(Debug)]
pub struct ReviewCall {
    /// The answer, when the call returned one.
    pub response: Option<ChatResponse>,
    /// The client error, when it failed (a timeout has neither).
    pub error: Option<LlmError>,
    /// Wall time of the call.
    pub elapsed: Duration,
}

/// The decision on one request.
#[derive(Debug)]
pub struct AutoDecision {
    /// What happens.
    pub action: AutoAction,
    /// The ledger record. For [`AutoAction::Delegate`] the caller completes `outcome`,
    /// `decided_by`, `reason`, `latency_ms` and `human_request_id` after the human answers.
    pub record: ApprovalReview,
    /// The reviewer call, if one was made.
    pub call: Option<ReviewCall>,
    /// Text for the actor's tool result (denial reason with the no-detour instruction; allow
    /// reason when `record_allowed_verdicts`), `None` when nothing is to be said.
    pub feedback: Option<String>,
}

/// A recent denial an override can point at.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct DenialSummary {
    /// 1 = most recent.
    pub n: usize,
    /// Request id.
    pub request_id: String,
    /// Tool.
    pub tool: String,
    /// Redacted target.
    pub target: String,
    /// Denial reason.
    pub reason: String,
    /// When, ms since the Unix epoch.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub at_ms: u64,
}

/// A one-time grant registered by [`AutoReviewHandle::grant_override`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct OverrideGrant {
    /// The denial it answers.
    pub denial: DenialSummary,
    /// Expiry, ms since the Unix epoch (None = no expiry).
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub expires_at_ms: Option<u64>,
}

/// Live status of the current run (for the app's Approvals tab).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct AutoReviewStatus {
    /// Run the state belongs to (None before the first request).
    pub run_id: Option<String>,
    /// Reviewer calls made.
    pub reviews_used: u32,
    /// Reviewer calls left.
    pub reviews_left: u32,
    /// Failures left.
    pub failures_left: u32,
    /// Breaker counters.
    pub breaker: BreakerState,
    /// Unused, unexpired grants.
    pub pending_overrides: usize,
    /// Recent denials, most recent first (at most `override.max_pending`).
    pub recent_denials: Vec<DenialSummary>,
    /// The user switched the reviewer off for this run ([`AutoReviewHandle::set_suspended`]):
    /// requests routed to `ai` go to the human instead.
    pub suspended: bool,
}

#[derive(Debug, Clone)]
struct Denial {
    request_id: String,
    tool: String,
    target: String,
    args_key: String,
    reason: String,
    at_ms: u64,
}

#[derive(Debug, Clone)]
struct Grant {
    tool: String,
    args_key: String,
    expires_at_ms: Option<u64>,
    note: String,
}

#[derive(Debug, Default)]
struct RunState {
    run_id: Option<String>,
    reviews_used: u32,
    failures_used: u32,
    consecutive: u32,
    window: VecDeque<bool>,
    open: bool,
    denials: Vec<Denial>,
    grants: Vec<Grant>,
    cache: VecDeque<(String, u64, Verdict)>,
}

impl RunState {
    fn breaker(&self) -> BreakerState {
        BreakerState {
            consecutive_denials: self.consecutive,
            window_denials: self.window.iter().filter(|d| **d).count() as u32,
            window_reviews: self.window.len() as u32,
            open: self.open,
        }
    }

    fn recent_denials(&self, max: usize) -> Vec<DenialSummary> {
        self.denials
            .iter()
            .rev()
            .take(max)
            .enumerate()
            .map(|(i, d)| DenialSummary {
                n: i + 1,
                request_id: d.request_id.clone(),
                tool: d.tool.clone(),
                target: d.target.clone(),
                reason: d.reason.clone(),
                at_ms: d.at_ms,
            })
            .collect()
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Which recent denial a grant is for.
#[derive(Clone, Copy)]
enum DenialRef<'a> {
    /// The n-th most recent (1 = latest).
    Nth(usize),
    /// By request id.
    Id(&'a str),
}

/// A clonable handle on the per-run state: live status and one-time overrides (SPEC AR7).
#[derive(Clone)]
pub struct AutoReviewHandle {
    state: Arc<Mutex<RunState>>,
    cfg: Arc<AutoReviewConfig>,
    suspended: Arc<AtomicBool>,
}

/// The approve-for-me engine: configuration, the reviewer route and the per-run state.
pub struct AutoReview {
    cfg: Arc<AutoReviewConfig>,
    policy: CompiledPolicy,
    reviewer: Option<ReviewerRoute>,
    handle: AutoReviewHandle,
}

/// Localized code-made reasons.
fn say(lang: Lang, en: &str, zh: &str) -> String {
    match lang {
        Lang::En => en.to_string(),
        Lang::Zh => zh.to_string(),
    }
}

impl AutoReview {
    /// An engine over `cfg` and `reviewer` (None → every `ai` request is a reviewer failure:
    /// `on_reviewer_failure`, by default the human).
    ///
    /// # Errors
    /// [`AutoReviewError::Rule`] when a rule's regex is invalid.
    pub fn new(
        cfg: AutoReviewConfig,
        reviewer: Option<ReviewerRoute>,
    ) -> Result<Self, AutoReviewError> {
        let policy = CompiledPolicy::new(&cfg)?;
        let cfg = Arc::new(cfg);
        Ok(Self {
            handle: AutoReviewHandle {
                state: Arc::new(Mutex::new(RunState::default())),
                cfg: cfg.clone(),
                suspended: Arc::new(AtomicBool::new(false)),
            },
            cfg,
            policy,
            reviewer,
        })
    }

    /// Defaults and no reviewer model (every `ai` request goes to `on_reviewer_failure`, by
    /// default the human). Infallible: the default configuration has no rules.
    pub fn unconfigured() -> Self {
        let cfg = Arc::new(AutoReviewConfig::default());
        Self {
            handle: AutoReviewHandle {
                state: Arc::new(Mutex::new(RunState::default())),
                cfg: cfg.clone(),
                suspended: Arc::new(AtomicBool::new(false)),
            },
            policy: CompiledPolicy::without_rules(&cfg),
            cfg,
            reviewer: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AutoReviewConfig {
        &self.cfg
    }

    /// The reviewer route, if any.
    pub fn reviewer(&self) -> Option<&ReviewerRoute> {
        self.reviewer.as_ref()
    }

    /// A handle on the per-run state.
    pub fn handle(&self) -> AutoReviewHandle {
        self.handle.clone()
    }

    /// Start a run: per-run state (budgets, breaker, denials, grants, cache) is reset when
    /// `run_id` differs from the current one. Returns true when it did (a new run).
    pub fn begin_run(&self, run_id: &str) -> bool {
        let mut st = self.handle.lock();
        if st.run_id.as_deref() == Some(run_id) {
            return false;
        }
        *st = RunState {
            run_id: Some(run_id.to_string()),
            ..RunState::default()
        };
        true
    }

    /// Decide one approval request (see the module docs). `request_id` names the ledger row.
    pub async fn decide(
        &self,
        request_id: &str,
        input: &ApprovalInput,
        lang: Lang,
        cancel: &CancellationToken,
    ) -> AutoDecision {
        let t0 = Instant::now();
        let cfg = &*self.cfg;
        let args_key = match &input.arguments {
            ArgumentsInput::Json(v) => v.to_string(),
            ArgumentsInput::Raw(t) => t.clone(),
        };
        let routed = self.policy.route(
            &input.tool,
            input.model_reason.as_deref().unwrap_or(""),
            &args_key,
        );

        let mut evidence = Evidence::build(input, cfg);
        let mut record = ApprovalReview {
            request_id: request_id.to_string(),
            tool: input.tool.clone(),
            target: evidence.target.clone(),
            arguments: evidence.arguments.value.clone(),
            arguments_truncated: evidence.arguments.truncated,
            tier: input.tier,
            reasons: input.reasons.clone(),
            policy: routed.policy,
            policy_source: routed.source.clone(),
            outcome: ApprovalOutcome::Denied,
            decided_by: DecidedBy::Rule,
            delegated: false,
            verdict: None,
            risk: None,
            user_authorization: None,
            reason: String::new(),
            suggestion: None,
            gate: None,
            reviewer_error: None,
            reviewer_profile: self.reviewer.as_ref().map(|r| r.profile.clone()),
            reviewer_model: self.reviewer.as_ref().map(|r| r.model.clone()),
            review_latency_ms: None,
            latency_ms: 0,
            reviews_left: 0,
            failures_left: 0,
            breaker: BreakerState::default(),
            override_used: false,
            cached: false,
            human_request_id: None,
        };
        let mut call = None;
        let action = match routed.policy {
            ApprovalPolicy::Never => {
                record.gate = Some("policy_never".into());
                record.reason = say(
                    lang,
                    &format!(
                        "The approval policy ({}) never allows this call.",
                        routed.source
                    ),
                    &format!("审批策略（{}）禁止此操作。", routed.source),
                );
                AutoAction::Deny
            }
            ApprovalPolicy::Human => {
                record.gate = Some("policy_human".into());
                record.delegated = true;
                record.decided_by = DecidedBy::Human;
                record.reason = say(
                    lang,
                    &format!(
                        "The approval policy ({}) sends this call to a person.",
                        routed.source
                    ),
                    &format!("审批策略（{}）要求由人工审批此操作。", routed.source),
                );
                AutoAction::Delegate
            }
            ApprovalPolicy::Ai => {
                let a = self
                    .review(
                        &mut evidence,
                        &args_key,
                        &mut record,
                        &mut call,
                        lang,
                        cancel,
                    )
                    .await;
                if a == AutoAction::Deny || a == AutoAction::StopRun {
                    let mut st = self.handle.lock();
                    st.denials.push(Denial {
                        request_id: request_id.to_string(),
                        tool: input.tool.clone(),
                        target: record.target.clone(),
                        args_key: format!("{}\u{1f}{}", input.tool, args_key),
                        reason: record.reason.clone(),
                        at_ms: now_ms(),
                    });
                    let keep = cfg.override_grant.max_pending.max(1);
                    let excess = st.denials.len().saturating_sub(keep);
                    st.denials.drain(..excess);
                }
                a
            }
        };
        {
            let st = self.handle.lock();
            record.reviews_left = cfg.budget.max_reviews.saturating_sub(st.reviews_used);
            record.failures_left = cfg.max_failures.saturating_sub(st.failures_used);
            record.breaker = st.breaker();
        }
        record.outcome = if action == AutoAction::Allow {
            ApprovalOutcome::Allowed
        } else {
            ApprovalOutcome::Denied
        };
        if action == AutoAction::Delegate {
            record.delegated = true;
        }
        record.latency_ms = t0.elapsed().as_millis() as u64;
        let feedback = self.feedback(action, &record, lang);
        AutoDecision {
            action,
            record,
            call,
            feedback,
        }
    }

    fn feedback(&self, action: AutoAction, r: &ApprovalReview, lang: Lang) -> Option<String> {
        let sugg = r
            .suggestion
            .as_deref()
            .map(|s| match lang {
                Lang::En => format!(" Safer alternative: {s}"),
                Lang::Zh => format!(" 更安全的做法：{s}"),
            })
            .unwrap_or_default();
        match action {
            AutoAction::Deny | AutoAction::StopRun if self.cfg.feed_reason_to_model => {
                Some(match lang {
                    Lang::En => format!(
                        "Denied by the approval reviewer: {}{sugg} The call was not executed. Do not try to reach the same goal by a detour (another button, another screen, another app or different wording); continue with what the user asked, or ask the user.",
                        r.reason
                    ),
                    Lang::Zh => format!(
                        "审批复核拒绝了此操作：{}{sugg} 该操作未执行。不要绕道（换按钮、换页面、换应用或换说法）去达成同一目标；继续完成用户要求的部分，或询问用户。",
                        r.reason
                    ),
                })
            }
            AutoAction::Deny | AutoAction::StopRun => Some(say(
                lang,
                "Denied by the approval reviewer: the call was not executed. Do not try to reach the same goal by a detour.",
                "审批复核拒绝了此操作，未执行。不要绕道达成同一目标。",
            )),
            AutoAction::Allow if self.cfg.record_allowed_verdicts && !r.reason.is_empty() => {
                Some(match lang {
                    Lang::En => format!("Approved by the approval reviewer: {}", r.reason),
                    Lang::Zh => format!("审批复核已放行：{}", r.reason),
                })
            }
            _ => None,
        }
    }
}
