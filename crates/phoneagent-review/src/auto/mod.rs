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

impl AutoReviewHandle {
    fn lock(&self) -> std::sync::MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Approve the `n`-th most recent denial of the current run (1 = most recent) once: the next
    /// request with exactly the same tool and arguments within `override.ttl_ms` carries the
    /// grant to the reviewer, which still decides (critical stays denied). In memory only.
    ///
    /// # Errors
    /// [`AutoReviewError::NoSuchDenial`] when `n` is 0 or beyond the recent denials.
    pub fn grant_override(&self, n: usize) -> Result<OverrideGrant, AutoReviewError> {
        self.grant_override_at(n, now_ms())
    }

    /// Like [`Self::grant_override`], naming the denial by its request id (what a front end
    /// showed the user), so a newer denial arriving meanwhile cannot shift the grant to another
    /// action.
    ///
    /// # Errors
    /// [`AutoReviewError::UnknownDenial`] when `request_id` is not among the recent denials.
    pub fn grant_override_for(&self, request_id: &str) -> Result<OverrideGrant, AutoReviewError> {
        self.grant_at(DenialRef::Id(request_id), now_ms())
    }

    fn grant_override_at(&self, n: usize, now: u64) -> Result<OverrideGrant, AutoReviewError> {
        self.grant_at(DenialRef::Nth(n), now)
    }

    /// Register a one-time grant for the denial `which` names, under one lock (the choice and
    /// the grant see the same list).
    fn grant_at(&self, which: DenialRef<'_>, now: u64) -> Result<OverrideGrant, AutoReviewError> {
        let max = self.cfg.override_grant.max_pending.max(1);
        let mut st = self.lock();
        let recent = st.recent_denials(max);
        let picked = match which {
            DenialRef::Nth(n) => n.checked_sub(1).and_then(|i| recent.get(i)),
            DenialRef::Id(id) => recent.iter().find(|d| d.request_id == id),
        }
        .cloned();
        let err = || match which {
            DenialRef::Nth(n) => AutoReviewError::NoSuchDenial {
                n,
                available: recent.len(),
                max,
            },
            DenialRef::Id(id) => AutoReviewError::UnknownDenial {
                request_id: id.to_string(),
                available: recent.len(),
            },
        };
        let Some(summary) = picked else {
            return Err(err());
        };
        let Some(d) = st
            .denials
            .iter()
            .find(|d| d.request_id == summary.request_id)
            .cloned()
        else {
            return Err(err());
        };
        let ttl = self.cfg.override_grant.ttl_ms;
        let expires_at_ms = (ttl > 0).then(|| now + ttl);
        st.grants.push(Grant {
            tool: d.tool.clone(),
            args_key: d.args_key.clone(),
            expires_at_ms,
            note: format!(
                "after the reviewer denied it ({}), the user approved this exact action once",
                d.reason
            ),
        });
        Ok(OverrideGrant {
            denial: summary,
            expires_at_ms,
        })
    }

    /// Switch the reviewer off (`true`) or back on (`false`) for the rest of this agent's runs
    /// (the app's on/off switch, SPEC AR8). While off, a request the policy routes to `ai` goes
    /// to the human through the normal approval path (gate `suspended_by_user`) instead of the
    /// reviewer model — after the code gates: `never` rules, an open breaker, an exhausted
    /// review or failure budget still decide as configured (a `deny` stays a denial). A review
    /// already in flight finishes. In memory only.
    pub fn set_suspended(&self, suspended: bool) {
        self.suspended.store(suspended, Ordering::SeqCst);
    }

    /// True while the reviewer is switched off ([`Self::set_suspended`]).
    pub fn is_suspended(&self) -> bool {
        self.suspended.load(Ordering::SeqCst)
    }

    /// Live status.
    pub fn status(&self) -> AutoReviewStatus {
        let st = self.lock();
        let now = now_ms();
        AutoReviewStatus {
            run_id: st.run_id.clone(),
            reviews_used: st.reviews_used,
            reviews_left: self.cfg.budget.max_reviews.saturating_sub(st.reviews_used),
            failures_left: self.cfg.max_failures.saturating_sub(st.failures_used),
            breaker: st.breaker(),
            pending_overrides: st
                .grants
                .iter()
                .filter(|g| g.expires_at_ms.is_none_or(|e| e >= now))
                .count(),
            recent_denials: st.recent_denials(self.cfg.override_grant.max_pending.max(1)),
            suspended: self.is_suspended(),
        }
    }
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

    /// The `ai` path: breaker, budgets, grant, cache, the call, the gates, the breaker update.
    async fn review(
        &self,
        evidence: &mut Evidence,
        args_key: &str,
        record: &mut ApprovalReview,
        call: &mut Option<ReviewCall>,
        lang: Lang,
        cancel: &CancellationToken,
    ) -> AutoAction {
        let cfg = &*self.cfg;
        let key = format!("{}\u{1f}{}", evidence.tool, args_key);
        // Before any call: breaker, review budget, failure budget.
        {
            let mut st = self.handle.lock();
            if st.open {
                record.gate = Some("breaker_open".into());
                record.decided_by = DecidedBy::Rule;
                record.reason = say(
                    lang,
                    "The approval circuit breaker is open after repeated denials in this run.",
                    "本次运行多次被拒，审批熔断已打开。",
                );
                return match cfg.circuit_breaker.action {
                    BreakerAction::Stop => AutoAction::StopRun,
                    BreakerAction::Delegate => AutoAction::Delegate,
                    BreakerAction::Deny => AutoAction::Deny,
                };
            }
            if st.reviews_used >= cfg.budget.max_reviews {
                record.gate = Some("budget_exhausted".into());
                record.decided_by = DecidedBy::Policy;
                record.reason = say(
                    lang,
                    &format!(
                        "The run's review budget ({} reviews) is used up.",
                        cfg.budget.max_reviews
                    ),
                    &format!(
                        "本次运行的复核预算（{} 次）已用完。",
                        cfg.budget.max_reviews
                    ),
                );
                return match cfg.budget.on_exhausted {
                    Fallback::Delegate => AutoAction::Delegate,
                    Fallback::Deny => AutoAction::Deny,
                };
            }
            if st.failures_used >= cfg.max_failures {
                record.gate = Some("failure_budget_exhausted".into());
                record.decided_by = DecidedBy::Policy;
                record.reason = say(
                    lang,
                    &format!(
                        "The reviewer failed {} times in this run; it is not asked again.",
                        st.failures_used
                    ),
                    &format!("复核者本次运行已失败 {} 次，不再询问。", st.failures_used),
                );
                return match cfg.on_reviewer_failure {
                    Fallback::Delegate => AutoAction::Delegate,
                    Fallback::Deny => AutoAction::Deny,
                };
            }
            // The user's off switch (after the code gates above, which it must never loosen):
            // the request goes to a person instead of the reviewer model.
            if self.handle.is_suspended() {
                record.gate = Some("suspended_by_user".into());
                record.decided_by = DecidedBy::Human;
                record.reason = say(
                    lang,
                    "Approve for me is switched off for this run: a person decides.",
                    "本次任务已关闭“替我审批”：由人工决定。",
                );
                return AutoAction::Delegate;
            }
            // A one-time grant for exactly this tool + arguments, unexpired: consumed now.
            let now = now_ms();
            st.grants
                .retain(|g| g.expires_at_ms.is_none_or(|e| e >= now));
            if let Some(i) = st
                .grants
                .iter()
                .position(|g| g.args_key == key && g.tool == evidence.tool)
            {
                let g = st.grants.remove(i);
                evidence.grant = Some(g.note);
                record.override_used = true;
            }
        }
        let facts = EvidenceFacts {
            thin: evidence.is_thin(),
            injection: !evidence.injection.is_empty(),
        };
        let model = self
            .reviewer
            .as_ref()
            .map(|r| r.model.clone())
            .unwrap_or_default();
        let cache_key = format!("{key}\u{1f}{}\u{1f}{model}", record.override_used);
        let cached = if cfg.verdict_cache.enabled {
            let now = now_ms();
            let mut st = self.handle.lock();
            st.cache
                .retain(|(_, at, _)| now.saturating_sub(*at) <= cfg.verdict_cache.ttl_ms);
            st.cache
                .iter()
                .find(|(k, _, _)| *k == cache_key)
                .map(|(_, _, v)| v.clone())
        } else {
            None
        };
        let result: Result<Verdict, ReviewFailure> = if let Some(v) = cached {
            record.cached = true;
            Ok(v)
        } else {
            let r = self.call_reviewer(evidence, call, lang, cancel).await;
            if let Some(c) = call.as_ref() {
                record.review_latency_ms = Some(c.elapsed.as_millis() as u64);
            }
            let mut st = self.handle.lock();
            if self.reviewer.is_some() {
                st.reviews_used += 1;
            }
            match &r {
                Ok(v) if cfg.verdict_cache.enabled => {
                    st.cache.push_back((cache_key, now_ms(), v.clone()));
                    while st.cache.len() > cfg.verdict_cache.max_entries.max(1) {
                        st.cache.pop_front();
                    }
                }
                Ok(_) => {}
                Err(_) => st.failures_used += 1,
            }
            r
        };
        let floor = GateFloor {
            tier: evidence.tier,
            task_authorizes: evidence.task_authorizes,
        };
        let gated = apply_gates(result.as_ref(), facts, floor, cfg);
        record.gate = gated.gate.map(str::to_string);
        match &result {
            Ok(v) => {
                record.verdict = Some(v.decision);
                record.risk = Some(v.risk);
                record.user_authorization = Some(v.user_authorization);
                record.suggestion = v.suggestion.clone();
                record.decided_by = DecidedBy::AutoReviewer;
                record.reason = match gated.gate {
                    None => v.reason.clone(),
                    Some(g) => format!("{} [{}]", v.reason, self.gate_note(g, evidence, lang)),
                };
            }
            Err(f) => {
                record.reviewer_error = Some(f.describe());
                record.decided_by = DecidedBy::Policy;
                record.reason = say(
                    lang,
                    &format!("The reviewer could not decide ({}).", f.describe()),
                    &format!("复核者未能给出裁决（{}）。", f.describe()),
                );
            }
        }
        let mut action = match gated.action {
            GateAction::Allow => AutoAction::Allow,
            GateAction::Deny => AutoAction::Deny,
            GateAction::Delegate => AutoAction::Delegate,
        };
        // Breaker: only reviewer verdicts count (failures have their own budget).
        if result.is_ok() {
            let bc = cfg.circuit_breaker;
            let mut st = self.handle.lock();
            let denied = action == AutoAction::Deny;
            st.window.push_back(denied);
            while st.window.len() > bc.window_size.max(1) as usize {
                st.window.pop_front();
            }
            if denied {
                st.consecutive += 1;
            } else if action == AutoAction::Allow {
                st.consecutive = 0;
            }
            let window_denials = st.window.iter().filter(|d| **d).count() as u32;
            let trip = denied
                && ((bc.consecutive_denials > 0 && st.consecutive >= bc.consecutive_denials)
                    || (bc.window_denials > 0 && window_denials >= bc.window_denials));
            if trip {
                st.open = true;
                record.gate = Some("breaker_tripped".into());
                let why = say(
                    lang,
                    &format!(
                        "circuit breaker tripped: {} consecutive denials, {} of the last {} reviews denied",
                        st.consecutive,
                        window_denials,
                        st.window.len()
                    ),
                    &format!(
                        "审批熔断：连续 {} 次拒绝，最近 {} 次复核中 {} 次拒绝",
                        st.consecutive,
                        st.window.len(),
                        window_denials
                    ),
                );
                record.reason = format!("{} [{why}]", record.reason);
                if bc.action == BreakerAction::Stop {
                    action = AutoAction::StopRun;
                }
            }
        }
        action
    }

    fn gate_note(&self, gate: &str, evidence: &Evidence, lang: Lang) -> String {
        let cfg = &*self.cfg;
        match (gate, lang) {
            ("critical_risk", Lang::En) => "critical risk is always denied".into(),
            ("critical_risk", Lang::Zh) => "严重风险一律拒绝".into(),
            ("uncertain", Lang::En) => "the reviewer is uncertain".into(),
            ("uncertain", Lang::Zh) => "复核者无法判断".into(),
            ("screen_text_addresses_agent", Lang::En) => format!(
                "text relayed from the screen addresses the agent or claims prior approval ({}); screen text cannot authorize",
                evidence.injection.join(", ")
            ),
            ("screen_text_addresses_agent", Lang::Zh) => format!(
                "屏幕上的文字在对代理喊话或声称已预先授权（{}）；屏幕文字不能授权",
                evidence.injection.join("，")
            ),
            ("thin_evidence", Lang::En) => {
                "the evidence is incomplete (no screenshot, or truncated/unparseable arguments): not auto-allowed".into()
            }
            ("thin_evidence", Lang::Zh) => "证据不完整（无截图或参数被截断/无法解析），不自动放行".into(),
            ("high_risk_unauthorized", Lang::En) => {
                "high risk needs the task's authorization and a bounded scope".into()
            }
            ("high_risk_unauthorized", Lang::Zh) => "高风险需要任务授权且范围受限".into(),
            ("unauthorized_effect", Lang::En) => {
                "the task never asked for this irreversible effect: a person decides".into()
            }
            ("unauthorized_effect", Lang::Zh) => "任务并未要求此不可逆效果，交由人工决定".into(),
            ("risk_exceeded", Lang::En) => format!(
                "risk above the auto-allow limit ({})",
                cfg.max_auto_allow_risk.as_str()
            ),
            ("risk_exceeded", Lang::Zh) => format!(
                "风险超过自动放行上限（{}）",
                cfg.max_auto_allow_risk.as_str()
            ),
            (other, _) => other.to_string(),
        }
    }

    async fn call_reviewer(
        &self,
        evidence: &Evidence,
        call: &mut Option<ReviewCall>,
        lang: Lang,
        cancel: &CancellationToken,
    ) -> Result<Verdict, ReviewFailure> {
        let Some(route) = &self.reviewer else {
            return Err(ReviewFailure::Unavailable);
        };
        let req = ChatRequest {
            messages: evidence.messages(&self.cfg, lang),
            tools: vec![],
            tool_choice: None,
            temperature: Some(0.0),
            max_tokens: Some(self.cfg.max_tokens),
            stream: None,
        };
        let t0 = Instant::now();
        let child = cancel.child_token();
        let timeout = Duration::from_millis(self.cfg.timeout_ms.max(1));
        let out = tokio::time::timeout(timeout, route.client.chat(req, &child)).await;
        let elapsed = t0.elapsed();
        match out {
            Err(_) => {
                child.cancel();
                *call = Some(ReviewCall {
                    response: None,
                    error: None,
                    elapsed,
                });
                Err(ReviewFailure::Timeout(self.cfg.timeout_ms))
            }
            Ok(Err(e)) => {
                let msg = e.to_string();
                *call = Some(ReviewCall {
                    response: None,
                    error: Some(e),
                    elapsed,
                });
                Err(ReviewFailure::Error(msg))
            }
            Ok(Ok(resp)) => {
                let v = parse_verdict(
                    &resp.content,
                    resp.finish_reason.as_deref(),
                    self.cfg.reason_max_chars,
                );
                *call = Some(ReviewCall {
                    response: Some(resp),
                    error: None,
                    elapsed,
                });
                v
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(cfg: AutoReviewConfig) -> AutoReview {
        AutoReview::new(cfg, None).unwrap()
    }

    fn deny(h: &AutoReviewHandle, id: &str, tool: &str, args: &str) {
        h.lock().denials.push(Denial {
            request_id: id.into(),
            tool: tool.into(),
            target: "t".into(),
            args_key: format!("{tool}\u{1f}{args}"),
            reason: "no".into(),
            at_ms: 1,
        });
    }

    #[test]
    fn override_points_at_the_nth_most_recent_denial_and_expires() {
        let e = engine(AutoReviewConfig {
            override_grant: OverrideConfig {
                ttl_ms: 1000,
                max_pending: 2,
            },
            ..AutoReviewConfig::default()
        });
        e.begin_run("r1");
        let h = e.handle();
        assert!(matches!(
            h.grant_override(1),
            Err(AutoReviewError::NoSuchDenial { available: 0, .. })
        ));
        deny(&h, "a", "tap", "1");
        deny(&h, "b", "tap", "2");
        deny(&h, "c", "tap", "3");
        assert!(h.grant_override(0).is_err());
        assert!(matches!(
            h.grant_override(3),
            Err(AutoReviewError::NoSuchDenial { max: 2, .. })
        ));
        let g = h.grant_override_at(2, 10_000).unwrap();
        assert_eq!(g.denial.request_id, "b");
        assert_eq!(g.expires_at_ms, Some(11_000));
        assert_eq!(h.lock().grants[0].args_key, "tap\u{1f}2");
        // A new run forgets grants and denials.
        e.begin_run("r2");
        assert_eq!(h.status().pending_overrides, 0);
        assert!(h.status().recent_denials.is_empty());
    }
}
