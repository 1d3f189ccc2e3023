//! The per-run token ledger (SPEC M3, S7, R6, R7).
//!
//! Every model call of a run — planning, the protocol retry, calibration probes, the finish
//! verifier and both reviewers — is recorded with its role, kind, tokens, cost and latency.
//! The runtime enforces two budgets through [`TokenLedger::would_exceed`]:
//! * the **run token budget**: prompt + completion tokens over the whole run;
//! * the **input-token budget**: prompt tokens of a single request (R6 drops the oldest whole
//!   turns to fit it).
//!
//! [`estimate_prompt_tokens`] gives the pre-call estimate the checks need. The ledger is
//! thread-safe (`&self` methods) so reviewers running beside the planner can record into it.

use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::config::{Price, Role};
use crate::types::{ChatRequest, ChatResponse, ContentPart};

/// Why a call was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// A planning step of the actor.
    Planning,
    /// The one same-step protocol retry (SPEC A4).
    ProtocolRetry,
    /// A coordinate-calibration probe (SPEC M4).
    Calibration,
    /// The finish verifier (SPEC F2).
    Verifier,
    /// The reversibility reviewer (SPEC S7).
    SafetyReviewer,
    /// The approve-for-me reviewer (SPEC AR1).
    AutoReviewer,
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// Sequence number in the run, from 1.
    pub seq: u64,
    /// Role that made it.
    pub role: Role,
    /// Why.
    pub kind: CallKind,
    /// Runtime step, when inside one.
    pub step: Option<u32>,
    /// Model name.
    pub model: String,
    /// Prompt tokens (server-reported; 0 when the server reported none).
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// True when the server reported usage (false = tokens unknown, counted as 0).
    pub usage_reported: bool,
    /// Cost in USD from the profile's prices; `None` without prices.
    pub cost_usd: Option<f64>,
    /// Wall time, ms.
    pub latency_ms: u64,
}

/// Budgets; `None` = unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budgets {
    /// Max prompt + completion tokens over the run.
    pub run_tokens: Option<u64>,
    /// Max prompt tokens of one request.
    pub input_tokens: Option<u64>,
}

/// Which budget a planned call would break.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "budget", rename_all = "snake_case")]
pub enum BudgetExceeded {
    /// The request alone is larger than the input-token budget.
    InputTokens {
        /// Estimated prompt tokens.
        estimated: u64,
        /// The budget.
        limit: u64,
    },
    /// The run would go over its token budget.
    RunTokens {
        /// Tokens used so far.
        used: u64,
        /// Estimated tokens of the call.
        estimated: u64,
        /// The budget.
        limit: u64,
    },
}

impl std::fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InputTokens { estimated, limit } => write!(
                f,
                "the request needs about {estimated} input tokens, over the input-token budget of {limit}"
            ),
            Self::RunTokens {
                used,
                estimated,
                limit,
            } => write!(
                f,
                "the run has used {used} tokens; this call (about {estimated}) would exceed the run token budget of {limit}"
            ),
        }
    }
}

/// Totals for one group (role, kind or the whole run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Number of calls.
    pub calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Sum of known costs, USD.
    pub cost_usd: f64,
    /// True when some call in the group had no price (cost is a lower bound).
    pub cost_incomplete: bool,
    /// Sum of latencies, ms.
    pub latency_ms: u64,
}

impl Totals {
    fn add(&mut self, r: &CallRecord) {
        self.calls += 1;
        self.prompt_tokens += r.prompt_tokens;
        self.completion_tokens += r.completion_tokens;
        match r.cost_usd {
            Some(c) => self.cost_usd += c,
            None => self.cost_incomplete = true,
        }
        self.latency_ms += r.latency_ms;
    }

    /// Prompt + completion.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// Serializable summary of a run's ledger (for events, the trajectory and the UI).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerSummary {
    /// Whole run.
    pub total: Totals,
    /// By role, in role order.
    pub by_role: Vec<(Role, Totals)>,
    /// By kind, in kind order.
    pub by_kind: Vec<(CallKind, Totals)>,
    /// The budgets in force.
    pub budgets: Budgets,
    /// Every call.
    pub calls: Vec<CallRecord>,
}

/// The ledger of one run.
#[derive(Debug, Default)]
pub struct TokenLedger {
    budgets: Budgets,
    calls: Mutex<Vec<CallRecord>>,
}

impl TokenLedger {
    /// An empty ledger with these budgets.
    pub fn new(budgets: Budgets) -> Self {
        Self {
            budgets,
            calls: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<CallRecord>> {
        // A panic while holding the lock cannot leave the Vec inconsistent: keep going.
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The budgets.
    pub fn budgets(&self) -> Budgets {
        self.budgets
    }

    /// Records a finished call from its response; returns the record.
    pub fn record(
        &self,
        role: Role,
        kind: CallKind,
        step: Option<u32>,
        price: Option<&Price>,
        resp: &ChatResponse,
        model: &str,
    ) -> CallRecord {
        let usage = resp.usage.unwrap_or_default();
        let mut calls = self.lock();
        let rec = CallRecord {
            seq: calls.len() as u64 + 1,
            role,
            kind,
            step,
            model: resp.model.clone().unwrap_or_else(|| model.to_string()),
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            usage_reported: resp.usage.is_some(),
            cost_usd: price.map(|p| p.cost(usage.prompt_tokens, usage.completion_tokens)),
            latency_ms: resp.latency_ms,
        };
        calls.push(rec.clone());
        rec
    }

    /// Tokens used so far (prompt + completion).
    pub fn used_tokens(&self) -> u64 {
        self.lock()
            .iter()
            .map(|r| r.prompt_tokens + r.completion_tokens)
            .sum()
    }

    /// Tokens left in the run budget (`None` = unlimited; 0 when exhausted).
    pub fn remaining(&self) -> Option<u64> {
        self.budgets
            .run_tokens
            .map(|limit| limit.saturating_sub(self.used_tokens()))
    }

    /// True when the run token budget is used up.
    pub fn exhausted(&self) -> bool {
        self.remaining() == Some(0)
    }

    /// Would a call with `estimated_prompt` input tokens and up to `max_completion` output
    /// tokens break a budget? Checks the input-token budget first.
    pub fn would_exceed(
        &self,
        estimated_prompt: u64,
        max_completion: u64,
    ) -> Option<BudgetExceeded> {
        if let Some(limit) = self.budgets.input_tokens
            && estimated_prompt > limit
        {
            return Some(BudgetExceeded::InputTokens {
                estimated: estimated_prompt,
                limit,
            });
        }
        if let Some(limit) = self.budgets.run_tokens {
            let used = self.used_tokens();
            let estimated = estimated_prompt + max_completion;
            if used + estimated > limit {
                return Some(BudgetExceeded::RunTokens {
                    used,
                    estimated,
                    limit,
                });
            }
        }
        None
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<CallRecord> {
        self.lock().clone()
    }

    /// Totals by role, by kind and overall.
    pub fn summary(&self) -> LedgerSummary {
        let calls = self.calls();
        let mut total = Totals::default();
        let mut by_role: std::collections::BTreeMap<Role, Totals> = Default::default();
        let mut by_kind: std::collections::BTreeMap<CallKind, Totals> = Default::default();
        for r in &calls {
            total.add(r);
            by_role.entry(r.role).or_default().add(r);
            by_kind.entry(r.kind).or_default().add(r);
        }
        LedgerSummary {
            total,
            by_role: by_role.into_iter().collect(),
            by_kind: by_kind.into_iter().collect(),
            budgets: self.budgets,
            calls,
        }
    }
}

/// Rough prompt-token estimate of a request, for budget checks before sending: text at
/// 1 token per 3 bytes (conservative for CJK), tools' JSON likewise, 8 tokens per message, and
/// each image by its decoded size from the data URL header when possible — one token per
/// 28×28 patch (Qwen-VL; OpenAI's tiles are cheaper) — else 1 500 tokens. Over-estimates on
/// purpose: a budget check should fail early, not late.
pub fn estimate_prompt_tokens(req: &ChatRequest) -> u64 {
    let mut t: u64 = 0;
    for m in &req.messages {
        t += 8;
        for p in &m.content {
            t += match p {
                ContentPart::Text { text } => (text.len() as u64).div_ceil(3),
                ContentPart::Image { url, .. } => image_tokens(url),
            };
        }
        for c in &m.tool_calls {
            t += ((c.name.len() + c.arguments.len()) as u64).div_ceil(3) + 8;
        }
    }
    for tool in &req.tools {
        t += ((tool.name.len() + tool.description.len() + tool.parameters.to_string().len())
            as u64)
            .div_ceil(3);
    }
    t
}

fn image_tokens(url: &str) -> u64 {
    use base64::Engine;
    let dims = url
        .split_once(";base64,")
        .and_then(|(_, b64)| {
            // The header is in the first bytes; decode a prefix (a multiple of 4 chars).
            let prefix = &b64[..b64.len().min(64 * 1024) / 4 * 4];
            base64::engine::general_purpose::STANDARD
                .decode(prefix)
                .ok()
        })
        .and_then(|bytes| {
            image::ImageReader::new(std::io::Cursor::new(bytes))
                .with_guessed_format()
                .ok()?
                .into_dimensions()
                .ok()
        });
    match dims {
        Some((w, h)) => (u64::from(w).div_ceil(28) * u64::from(h).div_ceil(28)).max(1) + 2,
        None => 1500,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ChatMessage, Usage};

    fn resp(p: u64, c: u64, ms: u64) -> ChatResponse {
        ChatResponse {
            usage: Some(Usage {
                prompt_tokens: p,
                completion_tokens: c,
            }),
            latency_ms: ms,
            ..Default::default()
        }
    }

    #[test]
    fn records_totals_and_budgets() {
        let l = TokenLedger::new(Budgets {
            run_tokens: Some(10_000),
            input_tokens: Some(4_000),
        });
        let price = Price {
            prompt_per_mtok: 1.0,
            completion_per_mtok: 4.0,
        };
        l.record(
            Role::Actor,
            CallKind::Calibration,
            None,
            Some(&price),
            &resp(1000, 10, 50),
            "m",
        );
        l.record(
            Role::Actor,
            CallKind::Planning,
            Some(1),
            Some(&price),
            &resp(3000, 100, 900),
            "m",
        );
        let r = l.record(
            Role::SafetyReviewer,
            CallKind::SafetyReviewer,
            Some(1),
            None,
            &ChatResponse::default(),
            "judge",
        );
        assert_eq!(r.seq, 3);
        assert!(!r.usage_reported);
        assert_eq!(l.used_tokens(), 4110);
        assert_eq!(l.remaining(), Some(5890));
        assert_eq!(
            l.would_exceed(5000, 100),
            Some(BudgetExceeded::InputTokens {
                estimated: 5000,
                limit: 4000
            })
        );
        let over = l.would_exceed(3900, 2000).unwrap();
        assert!(
            over.to_string().contains("run token budget of 10000"),
            "{over}"
        );
        assert_eq!(l.would_exceed(3000, 500), None);
        let s = l.summary();
        assert_eq!(s.total.calls, 3);
        assert!(s.total.cost_incomplete);
        assert!((s.total.cost_usd - (0.00104 + 0.0034)).abs() < 1e-12);
        assert_eq!(s.by_role[0].0, Role::Actor);
        assert_eq!(s.by_role[0].1.tokens(), 4110);
        assert_eq!(s.by_kind[0].0, CallKind::Planning);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["calls"][0]["kind"], "calibration");
        assert_eq!(json["by_role"][1][0], "safety_reviewer");
    }

    #[test]
    fn exhaustion() {
        let l = TokenLedger::new(Budgets {
            run_tokens: Some(100),
            input_tokens: None,
        });
        assert!(!l.exhausted());
        l.record(
            Role::Actor,
            CallKind::Planning,
            None,
            None,
            &resp(90, 20, 1),
            "m",
        );
        assert!(l.exhausted());
        assert_eq!(l.remaining(), Some(0));
        assert!(
            TokenLedger::default()
                .would_exceed(u64::MAX / 4, 0)
                .is_none()
        );
    }

    #[test]
    fn estimates_images_by_size() {
        let img = image::RgbaImage::new(672, 1493);
        let prepared =
            crate::image::prepare_image(&img, &crate::image::ImagePolicy::default()).unwrap();
        let req = ChatRequest {
            messages: vec![
                ChatMessage::system("x".repeat(300)),
                ChatMessage::user_parts(vec![ContentPart::image(prepared.data_url())]),
            ],
            ..Default::default()
        };
        let t = estimate_prompt_tokens(&req);
        // 24·54 patches + text 100 + 2·8 + 2.
        assert_eq!(t, 24 * 54 + 2 + 100 + 16);
    }
}
