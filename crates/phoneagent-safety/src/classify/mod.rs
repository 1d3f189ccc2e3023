//! Classification of one executing call into a risk tier with reasons (SPEC S2, S3, S4).

use std::path::Path;
use std::sync::OnceLock;

use phoneagent_protocol::RiskTier;
use serde::{Deserialize, Serialize};

use crate::boundary::BoundarySet;
use crate::error::Result;
use crate::input::{GateInput, Tool};
use crate::lexicon::{Category, Lexicon};
use crate::normalize::normalize;
use crate::redact::redact_text;
use crate::task::TaskAnalysis;

pub use crate::lexicon::EffectKind;

mod rules;

/// How close (in characters) a commit verb and an irreversible object must be, with no clause
/// punctuation between, to count as a commit ("确认并支付", "Confirm the payment").
pub const COMMIT_WINDOW_CHARS: usize = 8;

/// Longest evidence string kept in a [`Reason`], in characters (after redaction).
pub const EVIDENCE_MAX_CHARS: usize = 48;

/// Stable code of one reason (SPEC S3, S4, S9). Ordered as the rules of S3 apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    /// The model declared `sensitive=true` → hard, before any tool branch.
    SelfDeclaredSensitive,
    /// The task forbids this effect ("不要发送", "don't pay") → blocked with zero touches (S4).
    NegatedTaskBoundary,
    /// `type_text` into a field the device reports as a password field → hard.
    PasswordField,
    /// `type_text` content in the credential/OTP domain (shape or word) → hard.
    CredentialText,
    /// `launch_app` of a payment/bank-like app → soft (launching is reversible).
    PaymentAppLaunch,
    /// A commit phrase, or a commit verb next to an irreversible object → hard.
    CommitIrreversible,
    /// The affirmative or primary button of a dialog whose title/body names an irreversible
    /// effect or says it cannot be undone ("取消订单？此操作无法撤销" + "Yes") → hard (SPEC S10).
    DialogConfirm,
    /// An irreversible object without a commit verb ("删除", "支付方式") → soft.
    IrreversibleObject,
    /// A tap/long-press target (or a type_text field description) in the credential/OTP
    /// domain → hard.
    CredentialTarget,
    /// The shape of a commitment — a commit-like verb with an object the lexicons do not know,
    /// a money amount, the primary button of a dialog they cannot read, a destructive colour —
    /// → `reviewer` tier (SPEC S3 "shape of a commitment").
    CommitmentShape,
    /// Something is drawn under the tap point but cannot be read (an icon), on a screen where an
    /// irreversible effect is plausible (compose screen, checkout, danger zone, a task
    /// boundary) → `reviewer` tier, for the isolated visual reviewer (SPEC S11).
    UnreadableTarget,
    /// Another policy-word hit → soft.
    PolicyWord,
    /// A touch with no target description, no reason, no OCR text and no screen reading: the
    /// call carries no evidence of safety → soft (the reviewer looks at it in reviewer mode).
    NoTargetEvidence,
    /// The built-in lexicons could not be loaded; the gate fails closed → hard.
    LexiconUnavailable,
}

impl ReasonCode {
    /// The snake_case code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SelfDeclaredSensitive => "self_declared_sensitive",
            Self::NegatedTaskBoundary => "negated_task_boundary",
            Self::PasswordField => "password_field",
            Self::CredentialText => "credential_text",
            Self::PaymentAppLaunch => "payment_app_launch",
            Self::CommitIrreversible => "commit_irreversible",
            Self::DialogConfirm => "dialog_confirm",
            Self::CommitmentShape => "commitment_shape",
            Self::UnreadableTarget => "unreadable_target",
            Self::NoTargetEvidence => "no_target_evidence",
            Self::IrreversibleObject => "irreversible_object",
            Self::CredentialTarget => "credential_target",
            Self::PolicyWord => "policy_word",
            Self::LexiconUnavailable => "lexicon_unavailable",
        }
    }
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the evidence of a reason came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A flag of the call (`sensitive`) or the device (`target_is_password_field`).
    Flag,
    /// The model's `target_description`.
    TargetDescription,
    /// The tool's text argument (typed text, app name).
    Text,
    /// The model's `reason`.
    Reason,
    /// OCR text around the target.
    Ocr,
    /// The screen reading's text under the tap point (`screen.target_text`) or its look
    /// (`target_style`, `target_unreadable`) (SPEC S10).
    ScreenTarget,
    /// An element next to a tap point that lies on no element's ink, which the touch may hit
    /// (`screen.nearby_texts`, SPEC S10): classified like the target.
    ScreenNearby,
    /// The dialog the target sits in: title and body (SPEC S10).
    ScreenDialog,
    /// Screen-level context: page title, button row, other screen lines (SPEC S10).
    ScreenContext,
    /// The focused field's label (`screen.field_label`, for `type_text`).
    ScreenField,
    /// The user's task (negated boundaries).
    Task,
    /// The gate itself (lexicons unavailable).
    Gate,
}

/// One reason for a tier: a stable code, the tier it alone implies, where it was found, and the
/// matched evidence — redacted (phone numbers, e-mail, codes, keys masked) and at most
/// [`EVIDENCE_MAX_CHARS`] characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    /// Stable code.
    pub code: ReasonCode,
    /// The tier this reason alone implies.
    pub tier: RiskTier,
    /// Where the evidence was found.
    pub source: Source,
    /// The matched text, redacted then truncated.
    pub evidence: String,
    /// The irreversible effect, for commits, objects and boundaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<EffectKind>,
    /// The lexicon entry that matched, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

/// Whether the task authorizes the hard effects of a call (SPEC S12).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "authorization", rename_all = "snake_case")]
pub enum Authorization {
    /// The call is not hard: there is nothing to authorize.
    #[default]
    NotNeeded,
    /// Every hard reason names an effect kind and the task authorizes each of them.
    Authorized,
    /// A hard effect the task does not authorize.
    NotAuthorized {
        /// The hard effect kinds the task does not authorize.
        kinds: Vec<EffectKind>,
    },
    /// A hard reason names no effect kind (self-declared `sensitive`, a dialog that only says
    /// "cannot be undone", the gate unavailable): no task can authorize an unknown effect.
    UnknownKind,
}

/// The result of classifying one call: the tier (maximum over its reasons, `none` when there
/// are none), the reasons in rule order (SPEC S3, S9), the effects and whether the task
/// authorizes them (SPEC S12), and the screen-level findings (SPEC S10, S11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Classification {
    /// The tier: `none`, `soft`, `reviewer` (a commitment shape or an unreadable target on a
    /// high-stakes screen) or `hard`.
    pub tier: RiskTier,
    /// Why, in the order of the S3 rules.
    pub reasons: Vec<Reason>,
    /// The effect kinds of the hard reasons (credential reasons count as
    /// [`EffectKind::Credential`]), sorted, without duplicates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<EffectKind>,
    /// Whether the task authorizes those effects (SPEC S12): [`crate::decide`] lets
    /// `confirm_irreversible=true` run a hard call only when it does.
    #[serde(default)]
    pub authorization: Authorization,
    /// Effects the screen makes plausible (a compose screen → send, a checkout → payment, a
    /// danger zone → delete) plus the effects the task forbids, when a screen reading was
    /// given (SPEC S10). Data for the visual reviewer; never raises the tier by itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plausible_effects: Vec<EffectKind>,
    /// The target cannot be read and an irreversible effect is plausible: the runtime must ask
    /// the isolated visual reviewer (SPEC S11); [`crate::decide`] returns
    /// [`crate::Decision::VisualReview`] (or asks the person in `hard` mode).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub visual_review: bool,
}

impl Classification {
    /// The reason with this code, if any.
    pub fn reason(&self, code: ReasonCode) -> Option<&Reason> {
        self.reasons.iter().find(|r| r.code == code)
    }

    /// True when some reason has this code.
    pub fn has(&self, code: ReasonCode) -> bool {
        self.reason(code).is_some()
    }

    /// The reason a receipt or console notice leads with: the first hard reason, else the first.
    pub fn primary(&self) -> Option<&Reason> {
        self.reasons
            .iter()
            .find(|r| r.tier == RiskTier::Hard)
            .or_else(|| self.reasons.first())
    }

    /// The effect kind a reason stands for: its `kind`, or [`EffectKind::Credential`] for the
    /// credential reasons.
    pub fn effect_of(r: &Reason) -> Option<EffectKind> {
        match r.code {
            ReasonCode::PasswordField
            | ReasonCode::CredentialText
            | ReasonCode::CredentialTarget => Some(EffectKind::Credential),
            _ => r.kind,
        }
    }

    pub(crate) fn push(&mut self, r: Reason) {
        let dup = self.reasons.iter().any(|o| {
            o.code == r.code && o.source == r.source && o.evidence == r.evidence && o.kind == r.kind
        });
        if !dup {
            self.tier = self.tier.max(r.tier);
            self.reasons.push(r);
        }
    }

    fn finish(mut self, task: &TaskAnalysis) -> Self {
        self.reasons.sort_by_key(|r| (r.code, r.source));
        let hard: Vec<&Reason> = self
            .reasons
            .iter()
            .filter(|r| r.tier == RiskTier::Hard)
            .collect();
        let mut effects: Vec<EffectKind> = hard.iter().filter_map(|r| Self::effect_of(r)).collect();
        effects.sort();
        effects.dedup();
        // A self-declared `sensitive` next to a named effect adds no unknown: the named effect
        // is what the call does. Alone, it is an effect of unknown kind.
        let unknown = hard.iter().any(|r| {
            Self::effect_of(r).is_none()
                && (r.code != ReasonCode::SelfDeclaredSensitive || effects.is_empty())
        });
        self.authorization = if self.tier < RiskTier::Hard {
            Authorization::NotNeeded
        } else if unknown {
            Authorization::UnknownKind
        } else {
            let kinds: Vec<EffectKind> = effects
                .iter()
                .copied()
                .filter(|k| !task.authorizes(*k))
                .collect();
            if kinds.is_empty() {
                Authorization::Authorized
            } else {
                Authorization::NotAuthorized { kinds }
            }
        };
        self.effects = effects;
        self.plausible_effects.sort();
        self.plausible_effects.dedup();
        self
    }
}

/// True when the text a `type_text` types (normalized, at least 3 characters) appears in the
/// task (normalized): the user wrote it.
fn typed_text_is_in_task(input: &GateInput) -> bool {
    let (Some(text), Some(task)) = (input.text.as_deref(), input.task.as_deref()) else {
        return false;
    };
    let t = normalize(text);
    t.chars().count() >= 3 && normalize(task).contains(&t)
}

/// The gate: compiled lexicons plus the classification rules. Cheap to share (`&Gate`);
/// classification is pure and allocation-light.
#[derive(Debug, Clone)]
pub struct Gate {
    lexicon: Lexicon,
}

/// What a scan of one target text found (internal).
#[derive(Debug, Default)]
pub(crate) struct TargetScan {
    /// Commit hits: (kind, evidence span text, entry id).
    pub(crate) commits: Vec<(EffectKind, String, String)>,
    /// Bare object hits not part of a commit.
    pub(crate) objects: Vec<(EffectKind, String, String)>,
    /// Credential words: (evidence, entry id, typed_only).
    pub(crate) credentials: Vec<(String, String, bool)>,
    /// Policy words (including bare commit verbs listed as policy words).
    pub(crate) policy: Vec<(String, String)>,
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// Characters that end a clause: a verb and an object on either side are not "together".
pub(crate) fn is_clause_break(c: char) -> bool {
    matches!(
        c,
        '。' | '，' | ',' | '.' | ';' | '；' | '!' | '！' | '?' | '？' | '\n' | '、' | '|'
    )
}

/// True when spans `a` and `b` do not overlap and the text between them is at most `max`
/// characters with no clause punctuation.
pub(crate) fn near(text: &str, a: (usize, usize), b: (usize, usize), max: usize) -> bool {
    if overlaps(a, b) {
        return false;
    }
    let (lo, hi) = if a.1 <= b.0 { (a.1, b.0) } else { (b.1, a.0) };
    let Some(gap) = text.get(lo..hi) else {
        return false;
    };
    let mut n = 0;
    for c in gap.chars() {
        if is_clause_break(c) {
            return false;
        }
        n += 1;
        if n > max {
            return false;
        }
    }
    true
}

pub(crate) fn evidence(s: &str) -> String {
    let red = redact_text(s);
    let t = red.trim();
    if t.chars().count() <= EVIDENCE_MAX_CHARS {
        t.to_string()
    } else {
        let mut out: String = t.chars().take(EVIDENCE_MAX_CHARS).collect();
        out.push('…');
        out
    }
}

fn builtin_gate() -> &'static std::result::Result<Gate, String> {
    static GATE: OnceLock<std::result::Result<Gate, String>> = OnceLock::new();
    GATE.get_or_init(|| Gate::builtin().map_err(|e| e.to_string()))
}

/// The process-wide built-in gate, when its lexicons loaded.
pub(crate) fn builtin() -> Option<&'static Gate> {
    builtin_gate().as_ref().ok()
}

/// Which classification layers run; all on by default. Switching one off is for measuring what
/// each layer contributes (the corpus benchmark), never for production use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layers {
    /// The commitment-shape rule (`commitment_shape`).
    pub shape: bool,
    /// The screen reading (`input.screen`) as a source.
    pub screen: bool,
}

impl Default for Layers {
    fn default() -> Self {
        Self {
            shape: true,
            screen: true,
        }
    }
}

/// Classify one call with the built-in lexicons (see [`Gate::classify`]). The lexicons are
/// compiled once per process. Should they fail to load (the crate's tests rule that out), every
/// gated call is `hard` with reason `lexicon_unavailable`: the gate fails closed (SPEC P2).
pub fn classify(input: &GateInput) -> Classification {
    match builtin_gate() {
        Ok(g) => g.classify(input),
        Err(msg) => {
            let mut c = Classification::default();
            if input.tool.is_gated() {
                c.push(Reason {
                    code: ReasonCode::LexiconUnavailable,
                    tier: RiskTier::Hard,
                    source: Source::Gate,
                    evidence: evidence(msg),
                    kind: None,
                    entry: None,
                });
                c.authorization = Authorization::UnknownKind;
            }
            c
        }
    }
}

impl Gate {
    /// A gate over the built-in lexicons.
    ///
    /// # Errors
    /// Only if a built-in lexicon file is broken (ruled out by the crate's tests).
    pub fn builtin() -> Result<Self> {
        Ok(Self::new(Lexicon::builtin()?))
    }

    /// A gate over the built-in lexicons extended by the user's lexicon file at `path` (entries
    /// with a built-in id replace it; new ids are added).
    ///
    /// # Errors
    /// Any [`crate::Error`] of [`Lexicon::load_file`], naming the file, the entry and what is wrong.
    pub fn with_user_lexicon(path: &Path) -> Result<Self> {
        let mut lex = Lexicon::builtin()?;
        lex.extend(Lexicon::load_file(path)?);
        Ok(Self::new(lex))
    }

    /// A gate over exactly these lexicons.
    pub fn new(lexicon: Lexicon) -> Self {
        Self { lexicon }
    }

    /// The lexicons in use.
    pub fn lexicon(&self) -> &Lexicon {
        &self.lexicon
    }

    /// The negated boundaries of a task (SPEC S4), e.g. "不要发送" → {send}.
    pub fn boundaries(&self, task: &str) -> BoundarySet {
        BoundarySet::parse(&self.lexicon, task)
    }

    /// Classify one call (SPEC S2, S3, S4, S10, S12). Analyzes `input.task`; when many calls
    /// share a task, analyze once with [`Gate::analyze_task`] and use [`Gate::classify_with`].
    pub fn classify(&self, input: &GateInput) -> Classification {
        let task = input
            .task
            .as_deref()
            .map(|t| self.analyze_task(t))
            .unwrap_or_default();
        self.classify_with(input, &task)
    }

    /// Classify one call against an already analyzed task, with every layer on.
    pub fn classify_with(&self, input: &GateInput, task: &TaskAnalysis) -> Classification {
        self.classify_layers(input, task, Layers::default())
    }

    /// Classify one call against an already analyzed task with the given layers.
    ///
    /// Rules, in the order of SPEC S3 (every text source is classified on its own; the tier is
    /// the maximum, so no source can lower what another found):
    /// 1. not an executing tool → `none`, no reasons (S2);
    /// 2. `sensitive=true` → hard `self_declared_sensitive` (before any tool branch);
    /// 3. `type_text`: known password field → hard `password_field`; credential/OTP shapes or
    ///    words in the typed text → hard `credential_text`; credential words in the field's
    ///    description/reason/OCR → hard `credential_target`; objects and policy words there →
    ///    soft;
    /// 4. `launch_app`: payment/bank-like app → soft `payment_app_launch`; objects and policy
    ///    words → soft;
    /// 5. tap / double tap / long press, on target description, reason and OCR text: commit
    ///    phrase or commit verb next to an irreversible object → hard `commit_irreversible`;
    ///    bare object → soft `irreversible_object`; credential words → hard
    ///    `credential_target`; other policy words → soft `policy_word`; an effect the task
    ///    forbids → hard `negated_task_boundary` (S4); a commit-like target whose object the
    ///    lexicons do not know → `reviewer` `commitment_shape`; no text at all → soft
    ///    `no_target_evidence`;
    /// 6. the screen reading, when given (S10, S11, see `screen.rs`): the text under the tap
    ///    point as a source; a bare 确定/OK in a dialog read with the dialog's title and body
    ///    (`dialog_confirm`); screen context as `plausible_effects`; an unreadable target on a
    ///    high-stakes screen → `reviewer` `unreadable_target` with `visual_review`.
    ///
    /// Finally the hard reasons' effect kinds are checked against the task (S12).
    pub fn classify_layers(
        &self,
        input: &GateInput,
        task: &TaskAnalysis,
        layers: Layers,
    ) -> Classification {
        let boundaries = &task.forbidden;
        let mut c = Classification::default();
        if !input.tool.is_gated() {
            return c;
        }
        if input.sensitive {
            c.push(Reason {
                code: ReasonCode::SelfDeclaredSensitive,
                tier: RiskTier::Hard,
                source: Source::Flag,
                evidence: "sensitive=true".into(),
                kind: None,
                entry: None,
            });
        }
        let sources: [(Source, Option<&str>); 3] = [
            (
                Source::TargetDescription,
                input.target_description.as_deref(),
            ),
            (Source::Reason, input.reason.as_deref()),
            (Source::Ocr, input.ocr_text.as_deref()),
        ];
        match input.tool {
            Tool::TypeText => self.type_text(input, &sources, &mut c),
            Tool::LaunchApp => self.launch_app(input, &sources, &mut c),
            _ => {
                self.touch(&sources, boundaries, &mut c);
                if layers.shape
                    && let Some(text) = input.target_description.as_deref()
                {
                    self.shape(Source::TargetDescription, text, &mut c);
                }
                let no_text = sources
                    .iter()
                    .all(|(_, t)| t.is_none_or(|t| t.trim().is_empty()));
                let no_screen = !layers.screen || input.screen.is_none();
                if no_text && no_screen && c.tier < RiskTier::Soft {
                    c.push(Reason {
                        code: ReasonCode::NoTargetEvidence,
                        tier: RiskTier::Soft,
                        source: Source::Gate,
                        evidence: "no target description, reason or screen reading".into(),
                        kind: None,
                        entry: None,
                    });
                }
            }
        }
        if layers.screen
            && let Some(screen) = input.screen.as_ref()
        {
            self.screen(input, screen, task, layers, &mut c);
        }
        let mut c = c.finish(task);
        // The user's own words authorize typing them (SPEC S12): an e-mail address or a
        // number the task spells out may be typed once the model confirms it; any other
        // credential effect still needs the person. The tier stays hard.
        if input.tool == Tool::TypeText
            && let Authorization::NotAuthorized { kinds } = &c.authorization
            && kinds.iter().all(|k| *k == EffectKind::Credential)
            && typed_text_is_in_task(input)
        {
            c.authorization = Authorization::Authorized;
        }
        c
    }
}

/// Blank benign look-alikes in normalized text (one space per character, SPEC S3).
pub(crate) fn mask(lexicon: &Lexicon, norm: &str) -> String {
    let benign = lexicon.hits(Category::Benign, norm);
    if benign.is_empty() {
        return norm.to_string();
    }
    norm.char_indices()
        .map(|(i, ch)| {
            if benign.iter().any(|h| i >= h.start && i < h.end) {
                ' '
            } else {
                ch
            }
        })
        .collect()
}

pub(crate) fn reason(
    code: ReasonCode,
    tier: RiskTier,
    source: Source,
    ev: &str,
    kind: Option<EffectKind>,
    entry: String,
) -> Reason {
    Reason {
        code,
        tier,
        source,
        evidence: evidence(ev),
        kind,
        entry: Some(entry),
    }
}
