//! Warning receipts and console notices (SPEC S5, S7), in the shape of source 000 § 预警文案:
//!
//! ```text
//! ⚠️ 已拦截（未执行）：tap → 「确认支付」
//! 世界事实：该操作疑似『不可逆提交』（如支付/转账/下单/删除等确认动作）。
//! 选项：
//!   1) 确认执行：带 confirm_irreversible=true 重新调用同一工具（其余参数不变）。
//!   2) 放弃：改做其它操作或重新观测。
//!   3) 交人工：调用 ask_user 询问，或 take_over 请求人工接管。
//! ```
//!
//! The receipt is returned to the model as the tool result with status `error`; nothing ran.
//! The target text is processed as the source says: the typed text (`type_text`) is redacted then
//! truncated to [`TYPED_TEXT_MAX_CHARS`]; a `target_description` is redacted then truncated to
//! [`TARGET_MAX_CHARS`]; a `launch_app` name is only truncated to [`APP_NAME_MAX_CHARS`].

use serde::{Deserialize, Serialize};

use crate::classify::{Classification, EffectKind, ReasonCode};
use crate::input::{GateInput, Lang, Tool};
use crate::redact::redact_text;

/// `type_text` content in a receipt: at most this many characters, after redaction.
pub const TYPED_TEXT_MAX_CHARS: usize = 32;
/// `target_description` in a receipt: at most this many characters, after redaction.
pub const TARGET_MAX_CHARS: usize = 24;
/// `launch_app` name in a receipt: at most this many characters (not redacted: app names are
/// not private, source 000).
pub const APP_NAME_MAX_CHARS: usize = 24;

/// Longest target summary the reversibility reviewer sees, in characters (SPEC S7).
pub const REVIEWER_SUMMARY_MAX_CHARS: usize = 120;

/// The redacted target summary the reversibility reviewer sees next to the tool name (SPEC S7):
/// the target description, the typed text or app name and the OCR text around the target,
/// joined with ` | `, redacted, then truncated to [`REVIEWER_SUMMARY_MAX_CHARS`] characters.
/// Never the reason, the task or the conversation.
pub fn reviewer_summary(input: &GateInput) -> String {
    let parts: Vec<String> = [
        input.target_description.as_deref(),
        input.text.as_deref(),
        input.ocr_text.as_deref(),
    ]
    .into_iter()
    .flatten()
    .map(str::trim)
    .filter(|s| !s.is_empty())
    .map(redact_text)
    .collect();
    truncate(&parts.join(" | "), REVIEWER_SUMMARY_MAX_CHARS)
}

/// What the receipt says the call looks like (the "suspected irreversible kind").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReceiptKind {
    /// 『不可逆提交』: a confirming action such as pay/transfer/order/delete.
    Commit {
        /// The effect, when the classification named one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        effect: Option<EffectKind>,
    },
    /// 『凭据/验证码输入』: password, one-time code, phone number, account…
    Credential,
    /// The model itself declared the call `sensitive=true`.
    SelfDeclared,
    /// The reversibility reviewer judged the call irreversible (SPEC S7).
    Reviewer,
    /// The reviewer is unavailable or failed; treated as irreversible (SPEC S7, P2). `code` is
    /// `reviewer_unavailable_failclosed` or `reviewer_error_failclosed`.
    ReviewerFailClosed {
        /// The audit code.
        code: String,
    },
    /// The task forbids this effect (SPEC S4); `confirm_irreversible` cannot override it.
    TaskBoundary {
        /// The forbidden effect.
        effect: EffectKind,
        /// The task phrase that forbids it (e.g. `不要发送`).
        phrase: String,
    },
    /// The gate's lexicons could not be loaded; the call is treated as risky (fail-closed).
    GateUnavailable,
}

/// A warning receipt: the blocked call and why, rendered with [`WarningReceipt::render`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarningReceipt {
    /// Always `error`: the call did not run.
    pub status: String,
    /// The blocked tool.
    pub tool: Tool,
    /// The target as shown: redacted then truncated (see the module docs); `None` when the
    /// call named no target.
    pub target: Option<String>,
    /// What the call looks like.
    #[serde(flatten)]
    pub kind: ReceiptKind,
    /// The stable code the console notice names (`commit_irreversible`,
    /// `reviewer_irreversible`, …).
    pub reason_code: String,
    /// The redacted evidence of that reason, for the console notice.
    pub evidence: String,
}

fn truncate(s: &str, max: usize) -> String {
    let t = s.trim();
    if t.chars().count() <= max {
        t.to_string()
    } else {
        let mut out: String = t.chars().take(max).collect();
        out.push('…');
        out
    }
}

/// What a receipt shows instead of text typed into a password/credential field (or marked
/// `sensitive`).
pub const SECRET_MASK: &str = "[secret]";

/// The target text of `input` as a receipt shows it: `type_text` → the typed text, redacted
/// then truncated to 32 chars; `launch_app` → the app name truncated to 24 chars; other tools →
/// the `target_description` redacted then truncated to 24 chars. `None` when there is none.
pub fn receipt_target(input: &GateInput) -> Option<String> {
    let nonempty = |s: &Option<String>| {
        s.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    match input.tool {
        Tool::TypeText => nonempty(&input.text)
            .map(|t| truncate(&redact_text(&t), TYPED_TEXT_MAX_CHARS))
            .or_else(|| {
                nonempty(&input.target_description)
                    .map(|t| truncate(&redact_text(&t), TARGET_MAX_CHARS))
            }),
        Tool::LaunchApp => nonempty(&input.text)
            .or_else(|| nonempty(&input.target_description))
            .map(|t| truncate(&t, APP_NAME_MAX_CHARS)),
        _ => nonempty(&input.target_description)
            .or_else(|| input.screen.as_ref().and_then(|s| nonempty(&s.target_text)))
            .map(|t| truncate(&redact_text(&t), TARGET_MAX_CHARS)),
    }
}

impl WarningReceipt {
    fn new(input: &GateInput, kind: ReceiptKind, reason_code: &str, evidence: &str) -> Self {
        // Text typed into a password or credential field, or self-declared sensitive, is never
        // repeated: the receipt goes to the model, the console, the store and exports.
        let secret = input.tool == Tool::TypeText
            && (input.sensitive
                || input.target_is_password_field == Some(true)
                || matches!(reason_code, "password_field" | "credential_target"));
        Self {
            status: "error".into(),
            tool: input.tool,
            target: if secret {
                input
                    .text
                    .as_deref()
                    .filter(|t| !t.trim().is_empty())
                    .map(|_| SECRET_MASK.to_string())
            } else {
                receipt_target(input)
            },
            kind,
            reason_code: reason_code.into(),
            evidence: truncate(&redact_text(evidence), TARGET_MAX_CHARS),
        }
    }

    /// The gate's warning receipt for a hard call (wary / reviewer modes). The kind follows the
    /// strongest hard reason: commit > credential > self-declared.
    pub fn from_classification(input: &GateInput, c: &Classification) -> Self {
        let pick = [
            ReasonCode::CommitIrreversible,
            ReasonCode::DialogConfirm,
            ReasonCode::PasswordField,
            ReasonCode::CredentialText,
            ReasonCode::CredentialTarget,
            ReasonCode::SelfDeclaredSensitive,
            ReasonCode::LexiconUnavailable,
        ]
        .iter()
        .find_map(|&code| c.reason(code));
        let Some(r) = pick.or_else(|| c.primary()) else {
            return Self::new(
                input,
                ReceiptKind::Commit { effect: None },
                "commit_irreversible",
                "",
            );
        };
        let kind = match r.code {
            ReasonCode::CommitIrreversible
            | ReasonCode::IrreversibleObject
            | ReasonCode::DialogConfirm
            | ReasonCode::CommitmentShape
            | ReasonCode::UnreadableTarget
            | ReasonCode::NoTargetEvidence => ReceiptKind::Commit { effect: r.kind },
            ReasonCode::PasswordField
            | ReasonCode::CredentialText
            | ReasonCode::CredentialTarget => ReceiptKind::Credential,
            ReasonCode::SelfDeclaredSensitive => ReceiptKind::SelfDeclared,
            ReasonCode::LexiconUnavailable => ReceiptKind::GateUnavailable,
            ReasonCode::NegatedTaskBoundary => ReceiptKind::TaskBoundary {
                effect: r.kind.unwrap_or(EffectKind::Submit),
                phrase: r
                    .evidence
                    .split(" ⇢ ")
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            },
            ReasonCode::PaymentAppLaunch | ReasonCode::PolicyWord => {
                ReceiptKind::Commit { effect: r.kind }
            }
        };
        Self::new(input, kind, r.code.as_str(), &r.evidence)
    }

    /// The receipt of a call blocked by a negated task boundary (SPEC S4), or `None` when the
    /// classification has no `negated_task_boundary` reason.
    pub fn task_boundary(input: &GateInput, c: &Classification) -> Option<Self> {
        let r = c.reason(ReasonCode::NegatedTaskBoundary)?;
        let mut parts = r.evidence.splitn(2, " ⇢ ");
        let phrase = parts.next().unwrap_or_default().to_string();
        let ev = parts.next().unwrap_or_default().to_string();
        Some(Self::new(
            input,
            ReceiptKind::TaskBoundary {
                effect: r.kind.unwrap_or(EffectKind::Submit),
                phrase,
            },
            r.code.as_str(),
            &ev,
        ))
    }

    /// The receipt when the reversibility reviewer judged a soft call irreversible (SPEC S7).
    pub fn reviewer(input: &GateInput) -> Self {
        Self::new(input, ReceiptKind::Reviewer, "reviewer_irreversible", "")
    }

    /// The receipt when the reviewer is unavailable or failed (`code` =
    /// `reviewer_unavailable_failclosed` / `reviewer_error_failclosed`, SPEC S7).
    pub fn reviewer_fail_closed(input: &GateInput, code: &str) -> Self {
        Self::new(
            input,
            ReceiptKind::ReviewerFailClosed { code: code.into() },
            code,
            "",
        )
    }

    /// The world-fact sentence.
    pub fn world_fact(&self, lang: Lang) -> String {
        match (&self.kind, lang) {
            (ReceiptKind::Commit { .. }, Lang::Zh) => {
                "该操作疑似『不可逆提交』（如支付/转账/下单/删除等确认动作）。".into()
            }
            (ReceiptKind::Commit { .. }, Lang::En) => {
                "this action looks like an ‘irreversible commit’ (a confirming action such as pay/transfer/order/delete).".into()
            }
            (ReceiptKind::Credential, Lang::Zh) => {
                "该操作疑似『凭据/验证码输入』（如密码、验证码、手机号、邮箱、账号等敏感信息）。".into()
            }
            (ReceiptKind::Credential, Lang::En) => {
                "this action looks like ‘credential or verification-code entry’ (password, one-time code, phone number, e-mail, account and similar private data).".into()
            }
            (ReceiptKind::SelfDeclared, Lang::Zh) => {
                "模型自申报该操作为『敏感操作』（sensitive=true）。".into()
            }
            (ReceiptKind::SelfDeclared, Lang::En) => {
                "the model itself declared this action ‘sensitive’ (sensitive=true).".into()
            }
            (ReceiptKind::Reviewer, Lang::Zh) => "复核模型判定该操作『不可逆』。".into(),
            (ReceiptKind::Reviewer, Lang::En) => {
                "the reviewer model judged this action ‘irreversible’.".into()
            }
            (ReceiptKind::ReviewerFailClosed { code }, Lang::Zh) => {
                format!("复核模型不可用或出错（{code}），按『不可逆』处理（fail-closed）。")
            }
            (ReceiptKind::ReviewerFailClosed { code }, Lang::En) => format!(
                "the reviewer model is unavailable or failed ({code}); the action is treated as ‘irreversible’ (fail-closed)."
            ),
            (ReceiptKind::TaskBoundary { effect, phrase }, Lang::Zh) => format!(
                "任务明确禁止『{}』（任务原文：「{phrase}」），该操作疑似执行被禁止的效果；confirm_irreversible=true 不能越过任务边界。",
                effect.zh()
            ),
            (ReceiptKind::TaskBoundary { effect, phrase }, Lang::En) => format!(
                "the task forbids this effect (‘{}’, task says: “{phrase}”) and this action looks like it; confirm_irreversible=true cannot override a task boundary.",
                effect.en()
            ),
            (ReceiptKind::GateUnavailable, Lang::Zh) => {
                "安全门词表不可用，按风险操作处理（fail-closed）。".into()
            }
            (ReceiptKind::GateUnavailable, Lang::En) => {
                "the safety gate's lexicons are unavailable; the action is treated as risky (fail-closed).".into()
            }
        }
    }

    /// The numbered options (without their numbers). A task-boundary receipt has no
    /// "confirm" option.
    pub fn options(&self, lang: Lang) -> Vec<String> {
        let confirm = match lang {
            Lang::Zh => "确认执行：带 confirm_irreversible=true 重新调用同一工具（其余参数不变）。",
            Lang::En => {
                "Confirm: call the same tool again with confirm_irreversible=true (other arguments unchanged)."
            }
        };
        let give_up = match lang {
            Lang::Zh => "放弃：改做其它操作或重新观测。",
            Lang::En => "Give up: do something else or re-observe the screen.",
        };
        let human = match lang {
            Lang::Zh => "交人工：调用 ask_user 询问，或 take_over 请求人工接管。",
            Lang::En => "Hand over: call ask_user to ask, or take_over to request a human.",
        };
        let mut out = Vec::with_capacity(3);
        if !matches!(self.kind, ReceiptKind::TaskBoundary { .. }) {
            out.push(confirm.to_string());
        }
        out.push(give_up.to_string());
        out.push(human.to_string());
        out
    }

    /// The full receipt text in `lang` (the tool result the model sees).
    pub fn render(&self, lang: Lang) -> String {
        let target = match (&self.target, lang) {
            (Some(t), _) => t.clone(),
            (None, Lang::Zh) => "（未描述目标）".into(),
            (None, Lang::En) => "(no target described)".into(),
        };
        let mut s = match lang {
            Lang::Zh => format!(
                "⚠️ 已拦截（未执行）：{} → 「{}」\n世界事实：{}\n选项：\n",
                self.tool,
                target,
                self.world_fact(lang)
            ),
            Lang::En => format!(
                "⚠️ Blocked (not executed): {} → “{}”\nWorld fact: {}\nOptions:\n",
                self.tool,
                target,
                self.world_fact(lang)
            ),
        };
        for (i, o) in self.options(lang).iter().enumerate() {
            s.push_str(&format!("  {}) {}\n", i + 1, o));
        }
        s.pop();
        s
    }

    /// The one-line, non-blocking console notice (SPEC S5):
    /// `[safety] <tool>: <reason> — blocked, waiting for model confirmation`.
    pub fn notice(&self, lang: Lang) -> String {
        console_notice(self, lang)
    }
}

/// The one-line console notice for a receipt (SPEC S5). A task-boundary block says so instead
/// of waiting for confirmation.
pub fn console_notice(receipt: &WarningReceipt, lang: Lang) -> String {
    let reason = match (receipt.evidence.is_empty(), lang) {
        (true, _) => receipt.reason_code.clone(),
        (false, Lang::Zh) => format!("{} 「{}」", receipt.reason_code, receipt.evidence),
        (false, Lang::En) => format!("{} “{}”", receipt.reason_code, receipt.evidence),
    };
    let tail = match (&receipt.kind, lang) {
        (ReceiptKind::TaskBoundary { .. }, Lang::Zh) => "已拦截，任务禁止该操作",
        (ReceiptKind::TaskBoundary { .. }, Lang::En) => "blocked, the task forbids it",
        (_, Lang::Zh) => "已拦截，等待模型确认",
        (_, Lang::En) => "blocked, waiting for model confirmation",
    };
    format!("[safety] {}: {} — {}", receipt.tool, reason, tail)
}
