//! Seams between the loop and the other core crates: image sizing (M6), parsing (A1–A5),
//! coordinate mapping (M5), calibration (M4) and the safety gate (S1–S7).

use phoneagent_device::Screenshot;
use phoneagent_llm::config::ActionProtocol;
use phoneagent_llm::image::ImagePolicy;
use phoneagent_llm::{ChatResponse, ToolSpec};
use phoneagent_protocol::event::MappedPoint;
use phoneagent_protocol::family::FamilyAdapter;
use phoneagent_protocol::{
    AccessMode, Action, ActionKind, CoordinateSpace, ModelPoint, RiskTier, ScreenGeometry,
};
use phoneagent_protocol::{ParseOptions, ToolOptions};

use crate::config::{AgentConfig, Lang};

/// A screenshot prepared for the model.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// `data:` URL.
    pub data_url: String,
    /// Sent width px.
    pub sent_w: u32,
    /// Sent height px.
    pub sent_h: u32,
    /// Size of the screenshot as taken, px.
    pub original: (u32, u32),
    /// Estimated input tokens of the image.
    pub est_tokens: u64,
}

/// Downscale and encode (M6); coordinates are mapped back from the size actually sent.
pub fn prepare(shot: &Screenshot, policy: &ImagePolicy) -> Result<Prepared, String> {
    let _phase = crate::phase!("prepare_image");
    let p = phoneagent_llm::image::prepare_image(&shot.image, policy).map_err(|e| e.to_string())?;
    let (w, h) = p.sent;
    let data_url = {
        let _phase = crate::phase!("data_url");
        p.data_url()
    };
    Ok(Prepared {
        data_url,
        sent_w: w,
        sent_h: h,
        original: p.original,
        est_tokens: (u64::from(w) * u64::from(h)).div_ceil(784) + 10,
    })
}

/// Parse options for the frozen space and the image actually sent.
pub fn parse_options_for(
    space: CoordinateSpace,
    image: (u32, u32),
    wait_max_secs: f64,
    app_launcher: bool,
) -> ParseOptions {
    let mut o = match space {
        CoordinateSpace::ImagePixels | CoordinateSpace::DisplayPixels => {
            ParseOptions::pixels(image.0, image.1)
        }
        _ => ParseOptions::relative_0_999(),
    };
    o.max_wait_secs = wait_max_secs;
    o.with_app_launcher(app_launcher)
}

/// The tool specs of the `tools` front end.
pub fn tool_specs(cfg: &AgentConfig) -> Vec<ToolSpec> {
    let opts = ToolOptions {
        app_launcher: cfg.app_launcher,
        max_wait_secs: cfg.wait_max_secs,
        ..ToolOptions::default()
    };
    let schemas = phoneagent_protocol::tool_schemas(&opts);
    schemas
        .as_array()
        .map(|arr| {
            arr.iter()
                .filter_map(|t| {
                    let f = t.get("function")?;
                    Some(ToolSpec {
                        name: f.get("name")?.as_str()?.to_string(),
                        description: f
                            .get("description")
                            .and_then(|d| d.as_str())
                            .unwrap_or_default()
                            .to_string(),
                        parameters: f.get("parameters")?.clone(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A rejection of the model's answer.
#[derive(Debug, Clone)]
pub struct Rejection {
    /// Stable kind.
    pub kind: String,
    /// What the model is told.
    pub message: String,
}

/// Parsed answer: actions in order (tool-call id when any).
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// Each call's result.
    pub actions: Vec<Result<(Option<String>, Action), Rejection>>,
}

impl Parsed {
    /// The first rejection; an answer with no action at all is a rejection too.
    pub fn first_error(&self) -> Option<Rejection> {
        if self.actions.is_empty() {
            return Some(Rejection {
                kind: "no_action".into(),
                message: "the answer contained no action".into(),
            });
        }
        self.actions.iter().find_map(|a| a.as_ref().err().cloned())
    }
}

fn rejection(e: &phoneagent_protocol::ParseError) -> Rejection {
    Rejection {
        kind: e.kind.as_str().to_string(),
        message: e.retry_instruction(),
    }
}

/// Parse the actor's answer with the configured front end (A1–A5), or with the profile's
/// model family's grammar when it has one (SPEC M7: points come back in the family's frozen
/// space for the image sent; Qwen-family native tool calls are read as `mobile_use` calls).
pub fn parse_response(
    resp: &ChatResponse,
    protocol: ActionProtocol,
    family: Option<&FamilyAdapter>,
    cfg: &AgentConfig,
    space: Option<CoordinateSpace>,
    image: (u32, u32),
    task: &str,
) -> Parsed {
    let _phase = crate::phase!("parse_response");
    let opts = parse_options_for(
        space.unwrap_or(CoordinateSpace::Relative0999),
        image,
        cfg.wait_max_secs,
        cfg.app_launcher,
    )
    .with_task(task);
    let mut out = Parsed::default();
    if let Some(ad) = family {
        if resp.tool_calls.is_empty() {
            out.actions.push(
                ad.parse(&resp.content, image, &opts)
                    .map(|a| (None, a))
                    .map_err(|e| rejection(&e)),
            );
        } else {
            for call in &resp.tool_calls {
                out.actions.push(
                    ad.parse_tool_call(&call.name, &call.arguments, image, &opts)
                        .map(|a| (Some(call.id.clone()), a))
                        .map_err(|e| rejection(&e)),
                );
            }
        }
        return out;
    }
    match protocol {
        ActionProtocol::Tools if !resp.tool_calls.is_empty() => {
            for call in &resp.tool_calls {
                out.actions.push(
                    phoneagent_protocol::parse_tool_call(&call.name, &call.arguments, &opts)
                        .map(|a| (Some(call.id.clone()), a))
                        .map_err(|e| rejection(&e)),
                );
            }
        }
        _ => {
            // The `do` grammar; a tools-profile model that answered in text gets the same parser.
            out.actions.push(
                phoneagent_protocol::parse_do(&resp.content, &opts)
                    .map(|a| (None, a))
                    .map_err(|e| rejection(&e)),
            );
        }
    }
    out
}

/// The points of an action in model space.
fn model_points(a: &Action) -> Vec<ModelPoint> {
    match &a.kind {
        ActionKind::Tap { element }
        | ActionKind::DoubleTap { element }
        | ActionKind::LongPress { element, .. } => vec![*element],
        ActionKind::Swipe { start, end, .. } => vec![*start, *end],
        _ => vec![],
    }
}

/// Map every point of `a` through the frozen contract onto the current geometry (M5).
pub fn map_points(
    a: &Action,
    space: CoordinateSpace,
    p: &Prepared,
    geometry: &ScreenGeometry,
) -> Result<Vec<MappedPoint>, String> {
    let mapper = phoneagent_llm::mapper::CoordinateMapper::new(
        space,
        p.original,
        (p.sent_w, p.sent_h),
        *geometry,
    )
    .map_err(|e| e.to_string())?;
    model_points(a)
        .into_iter()
        .map(|mp| {
            mapper
                .map(mp, geometry)
                .map(|m| MappedPoint {
                    model: m.model,
                    canonical: [m.canonical.x, m.canonical.y],
                    runtime: m.runtime,
                    device: m.device,
                })
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// What the gate says about one executing call.
#[derive(Debug, Clone)]
pub enum GateVerdict {
    /// Run it.
    Allow {
        /// Tier.
        tier: RiskTier,
        /// Reason codes.
        reasons: Vec<String>,
    },
    /// Wary/reviewer: not run; receipt to the model.
    Warn {
        /// Tier.
        tier: RiskTier,
        /// Reason codes.
        reasons: Vec<String>,
        /// The warning receipt (S5).
        receipt: String,
        /// The one-line console notice.
        notice: String,
    },
    /// Reviewer mode: a soft candidate for the reversibility reviewer.
    Review {
        /// Tier.
        tier: RiskTier,
        /// Reason codes.
        reasons: Vec<String>,
        /// Redacted target summary (≤ 120 chars).
        summary: String,
    },
    /// Hard mode: ask a human; approve-for-me: ask the auto-reviewer first (SPEC AR1).
    NeedsApproval {
        /// Who is asked first.
        route: phoneagent_safety::ApprovalRoute,
        /// Tier.
        tier: RiskTier,
        /// Reason codes.
        reasons: Vec<String>,
        /// Redacted target.
        target: String,
        /// The task authorizes this call's effect (SPEC S12), judged by the gate with the
        /// screen reading: approve-for-me takes this, never the reviewer's labels.
        task_authorizes: bool,
    },
    /// An unreadable target where an irreversible effect is plausible (SPEC S11): the isolated
    /// visual reviewer decides what the control does; failing that, the person.
    VisualReview {
        /// Tier.
        tier: RiskTier,
        /// Reason codes.
        reasons: Vec<String>,
        /// Redacted target.
        target: String,
    },
    /// Negated task boundary (S4): zero touches.
    Blocked {
        /// Tier.
        tier: RiskTier,
        /// Reason codes.
        reasons: Vec<String>,
        /// Message to the model.
        message: String,
    },
}

impl GateVerdict {
    /// The gate's reason codes, whatever the verdict.
    pub fn reasons(&self) -> &[String] {
        match self {
            Self::Allow { reasons, .. }
            | Self::Warn { reasons, .. }
            | Self::Review { reasons, .. }
            | Self::NeedsApproval { reasons, .. }
            | Self::VisualReview { reasons, .. }
            | Self::Blocked { reasons, .. } => reasons,
        }
    }
}

/// What the runtime knows about a call beyond the model's words (SPEC S3, S10).
#[derive(Debug, Clone, Default)]
pub struct GateContext {
    /// For `type_text`: whether the last touch focused a credential field (`None` = unknown).
    pub password_field: Option<bool>,
    /// The gate's own reading of the planning frame around the target (SPEC S10), when a
    /// screen reader is configured.
    pub screen: Option<phoneagent_protocol::ScreenReading>,
    /// The gate options of the run (`plain_wary`, SPEC S12).
    pub options: phoneagent_safety::GateOptions,
}

fn safety_lang(l: Lang) -> phoneagent_safety::Lang {
    match l {
        Lang::En => phoneagent_safety::Lang::En,
        Lang::Zh => phoneagent_safety::Lang::Zh,
    }
}

/// Max chars of the reviewer's target summary (SPEC S7).
const REVIEW_SUMMARY_CHARS: usize = 120;

/// The redacted target summary a reviewer or a human sees.
fn target_summary(input: &phoneagent_safety::GateInput) -> String {
    let raw = input
        .target_description
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .or(input.text.as_deref())
        .unwrap_or("");
    phoneagent_safety::redact_text(raw)
        .chars()
        .take(REVIEW_SUMMARY_CHARS)
        .collect()
}

/// Classify and decide (S1–S6). Pure and synchronous.
pub fn gate(
    mode: AccessMode,
    action: &Action,
    task: &str,
    lang: Lang,
    ctx: &GateContext,
) -> GateVerdict {
    use phoneagent_safety::Decision as D;
    let _phase = crate::phase!("safety_gate");
    let mut input = phoneagent_safety::GateInput::from_action(action, Some(task));
    input.target_is_password_field = ctx.password_field;
    input.screen = ctx.screen.clone();
    let cls = phoneagent_safety::classify(&input);
    // One code once (several sources often find the same reason), in first-seen order.
    let mut reasons: Vec<String> = Vec::new();
    for r in &cls.reasons {
        let code = r.code.as_str();
        if !reasons.iter().any(|c| c == code) {
            reasons.push(code.to_string());
        }
    }
    let d = phoneagent_safety::decide_with(mode, &input, &cls, ctx.options);
    let tier = d.tier;
    let l = safety_lang(lang);
    match d.decision {
        D::Allow { .. } => GateVerdict::Allow { tier, reasons },
        D::Warn { receipt } => GateVerdict::Warn {
            tier,
            reasons,
            notice: phoneagent_safety::console_notice(&receipt, l),
            receipt: receipt.render(l),
        },
        D::Review => GateVerdict::Review {
            tier,
            reasons,
            summary: target_summary(&input),
        },
        D::NeedsApproval { route } => GateVerdict::NeedsApproval {
            route,
            tier,
            reasons,
            target: target_summary(&input),
            task_authorizes: cls.authorization == phoneagent_safety::Authorization::Authorized,
        },
        // SPEC S11: the runtime asks the isolated visual reviewer; whatever it cannot clear
        // goes to the person (the gate's fallback is always the person).
        D::VisualReview { .. } => GateVerdict::VisualReview {
            tier,
            reasons,
            target: target_summary(&input),
        },
        D::BlockedByTaskBoundary { receipt } => GateVerdict::Blocked {
            tier,
            reasons,
            message: receipt.render(l),
        },
    }
}

/// Which receipt to render after a review (SPEC S5, S7).
#[derive(Debug, Clone, Copy)]
pub enum ReceiptFor<'a> {
    /// The human's approval dialog shows the gate's own receipt.
    Gate,
    /// The reviewer judged the call irreversible.
    ReviewerIrreversible,
    /// The reviewer was unavailable / failed (`reviewer_*_failclosed`).
    ReviewerFailClosed(&'a str),
}

/// The warning receipt for `action`.
pub fn receipt(action: &Action, task: &str, lang: Lang, which: ReceiptFor<'_>) -> String {
    let input = phoneagent_safety::GateInput::from_action(action, Some(task));
    let r = match which {
        ReceiptFor::Gate => {
            let cls = phoneagent_safety::classify(&input);
            phoneagent_safety::WarningReceipt::from_classification(&input, &cls)
        }
        ReceiptFor::ReviewerIrreversible => phoneagent_safety::WarningReceipt::reviewer(&input),
        ReceiptFor::ReviewerFailClosed(code) => {
            phoneagent_safety::WarningReceipt::reviewer_fail_closed(&input, code)
        }
    };
    r.render(safety_lang(lang))
}
