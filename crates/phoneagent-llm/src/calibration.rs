//! Coordinate-contract negotiation (SPEC M4).
//!
//! For a profile with `coordinate_space: auto`, before the first planning request:
//! 1. Look up the cache by (endpoint, model, model family, thinking mode, screenshot sizing
//!    policy, protocol).
//! 2. Otherwise render synthetic probe images — a plain light-grey screen of the device's size
//!    with one red disc and a white crosshair at a known position — size and encode them exactly
//!    as screenshots are ([`prepare_image`]), and ask the model to tap the disc, in the profile's
//!    protocol (`do(action="Tap", element=[x,y])` parsed with [`phoneagent_protocol::parse_do`],
//!    or a forced `tap` tool call parsed with [`phoneagent_protocol::parse_tool_call`]).
//! 3. Candidate `relative_0_999` first (the prompt states that contract), then `image_pixels`
//!    (the prompt states the sent image size). Each answer is mapped through the candidate space
//!    and its distance to the disc centre measured in sent-image px. A candidate is frozen only
//!    if **every** probe parsed and the mean and the max error are within bounds (defaults: max
//!    = the disc radius, i.e. the tap lands on the target; mean = half of it). A probe that
//!    misses by more than the max bound ends the candidate early (it cannot pass).
//! 4. Success is cached; failure is [`CalibrationMethod::Rejected`], and
//!    [`CalibrationReport::require_frozen`] turns it into a fail-closed
//!    [`LlmError::Calibration`] naming the endpoint, model and the measured errors.
//!
//! No device is touched. Every call is recorded in the [`TokenLedger`] with kind
//! [`CallKind::Calibration`].

use std::collections::HashMap;
use std::sync::Mutex;

use image::{Rgba, RgbaImage};
use phoneagent_protocol::{
    ActionKind, CoordinateSpace, ModelPoint, ParseOptions, ScreenGeometry, parse_do,
    parse_tool_call,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::client::ModelClient;
use crate::config::{ActionProtocol, Profile, Role};
use crate::error::{LlmError, Result};
use crate::image::prepare_image;
use crate::ledger::{CallKind, TokenLedger};
use crate::mapper::{CanonicalPoint, CoordinateMapper};
use crate::types::{ChatMessage, ChatRequest, ContentPart, ToolChoice, ToolSpec};

/// What a calibration result is cached under (SPEC M4).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CalibrationKey {
    /// `{base_url}/chat/completions`.
    pub endpoint: String,
    /// Model name.
    pub model: String,
    /// The model family in force ([`Profile::resolved_family`], SPEC M7): the same model
    /// talked to in another family's prompt and grammar may answer in another space.
    pub family: String,
    /// [`Profile::thinking_mode_key`].
    pub thinking_mode: String,
    /// [`crate::image::ImagePolicy::fingerprint`].
    pub sizing_policy: String,
    /// `do` or `tools`.
    pub protocol: String,
}

/// A cached, frozen contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedContract {
    /// The frozen space.
    pub space: CoordinateSpace,
    /// Mean probe error when negotiated, sent-image px.
    pub mean_error_px: f64,
    /// Max probe error when negotiated, sent-image px.
    pub max_error_px: f64,
    /// Unix time of the negotiation, seconds.
    pub negotiated_at: u64,
}

/// Where negotiated contracts are kept; the store implements it over SQLite. Errors are
/// reported as text and treated as a cache miss / not cached (calibration still decides).
pub trait CalibrationCache: Send + Sync {
    /// The cached contract for `key`.
    fn get(&self, key: &CalibrationKey) -> std::result::Result<Option<CachedContract>, String>;
    /// Stores a negotiated contract.
    fn put(&self, key: &CalibrationKey, value: &CachedContract) -> std::result::Result<(), String>;
}

/// An in-process [`CalibrationCache`].
#[derive(Debug, Default)]
pub struct MemoryCalibrationCache {
    map: Mutex<HashMap<CalibrationKey, CachedContract>>,
}

impl CalibrationCache for MemoryCalibrationCache {
    fn get(&self, key: &CalibrationKey) -> std::result::Result<Option<CachedContract>, String> {
        let map = self
            .map
            .lock()
            .map_err(|_| "cache lock poisoned".to_string())?;
        Ok(map.get(key).cloned())
    }

    fn put(&self, key: &CalibrationKey, value: &CachedContract) -> std::result::Result<(), String> {
        let mut map = self
            .map
            .lock()
            .map_err(|_| "cache lock poisoned".to_string())?;
        map.insert(key.clone(), value.clone());
        Ok(())
    }
}

/// How the contract was decided (the `method` of a `coordinate_calibration` event): the
/// protocol's closed vocabulary.
pub use phoneagent_protocol::CalibrationMethod;

/// One probe under one candidate space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    /// Candidate space the prompt stated.
    pub space: CoordinateSpace,
    /// Target centre, sent-image px.
    pub target_px: (f64, f64),
    /// The model's raw point, when its answer parsed.
    pub answer: Option<ModelPoint>,
    /// The answer in sent-image px under `space`.
    pub answer_px: Option<(f64, f64)>,
    /// Distance to the target, sent-image px (`None` = unparseable / out of the space).
    pub error_px: Option<f64>,
    /// Why the answer was not usable, when it was not.
    pub problem: Option<String>,
}

/// Errors of one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateResult {
    /// The candidate.
    pub space: CoordinateSpace,
    /// Its probes (possibly fewer than configured when it failed early).
    pub probes: Vec<ProbeResult>,
    /// Mean error over parsed probes, px.
    pub mean_error_px: Option<f64>,
    /// Max error over parsed probes, px.
    pub max_error_px: Option<f64>,
    /// Whether it met both bounds on every probe.
    pub accepted: bool,
}

/// The outcome of [`negotiate`]; the runtime turns it into a `coordinate_calibration` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationReport {
    /// How it was decided.
    pub method: CalibrationMethod,
    /// The frozen space; `None` when rejected.
    pub space: Option<CoordinateSpace>,
    /// Endpoint.
    pub endpoint: String,
    /// Model.
    pub model: String,
    /// Candidates tried, in order (empty for explicit/cached).
    pub candidates: Vec<CandidateResult>,
    /// Mean-error bound used, px.
    pub mean_bound_px: f64,
    /// Max-error bound used, px.
    pub max_bound_px: f64,
    /// Sent probe image size, px.
    pub image_size: (u32, u32),
    /// Model calls made.
    pub calls: u32,
    /// Human-readable summary.
    pub detail: String,
}

impl CalibrationReport {
    /// The frozen space, or the fail-closed error (code `calibration_failed`) naming endpoint,
    /// model and measured errors.
    pub fn require_frozen(&self) -> Result<CoordinateSpace> {
        self.space
            .ok_or_else(|| LlmError::Calibration(self.detail.clone()))
    }

    /// The probes of every candidate in the event's shape
    /// (`target_px`, `answer`, `error_px`).
    pub fn event_probes(&self) -> Vec<phoneagent_protocol::event::CalibrationProbe> {
        self.candidates
            .iter()
            .flat_map(|c| c.probes.iter())
            .map(|p| phoneagent_protocol::event::CalibrationProbe {
                target_px: [p.target_px.0, p.target_px.1],
                answer: p.answer.map(|a| [a.x, a.y]),
                error_px: p.error_px,
            })
            .collect()
    }

    /// The `coordinate_calibration` event (SPEC M4).
    pub fn to_event(&self) -> phoneagent_protocol::AgentEvent {
        phoneagent_protocol::AgentEvent::CoordinateCalibration {
            method: self.method,
            space: self.space,
            probes: self.event_probes(),
            detail: self.detail.clone(),
        }
    }
}

/// Tunables; the defaults fit phone screenshots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationSettings {
    /// Probe centres in canonical `[0,1]²`. Spread out and away from the origin so the
    /// candidate spaces disagree clearly.
    pub probes: Vec<(f64, f64)>,
    /// Disc radius as a fraction of the short side of the screen.
    pub radius_fraction: f64,
    /// Mean-error bound, sent-image px; `None` = half the disc radius.
    pub mean_bound_px: Option<f64>,
    /// Max-error bound, sent-image px; `None` = the disc radius.
    pub max_bound_px: Option<f64>,
    /// `max_tokens` per probe call (room for a thinking block).
    pub max_tokens: u32,
}

impl Default for CalibrationSettings {
    fn default() -> Self {
        Self {
            probes: vec![(0.22, 0.18), (0.78, 0.33), (0.36, 0.64), (0.70, 0.86)],
            radius_fraction: 0.05,
            mean_bound_px: None,
            max_bound_px: None,
            max_tokens: 1024,
        }
    }
}

/// Everything [`negotiate`] needs.
pub struct CalibrationContext<'a> {
    /// The model to probe.
    pub client: &'a dyn ModelClient,
    /// Its profile (protocol, coordinate space, sizing policy, prices, thinking mode).
    pub profile: &'a Profile,
    /// Role the calls are booked under (normally the actor).
    pub role: Role,
    /// The device display the probes imitate (size and orientation).
    pub geometry: ScreenGeometry,
    /// The run's ledger.
    pub ledger: &'a TokenLedger,
    /// The cache.
    pub cache: &'a dyn CalibrationCache,
    /// Cancels the probes.
    pub cancel: &'a CancellationToken,
    /// Tunables.
    pub settings: CalibrationSettings,
}

/// The cache key of a profile served by `endpoint`.
pub fn cache_key(endpoint: &str, profile: &Profile) -> CalibrationKey {
    CalibrationKey {
        endpoint: endpoint.to_string(),
        model: profile.model.clone(),
        family: profile.resolved_family().0.as_str().to_string(),
        thinking_mode: profile.thinking_mode_key(),
        sizing_policy: profile.image.fingerprint(),
        protocol: profile.protocol.as_str().to_string(),
    }
}

/// Renders one probe screen: light grey, a red disc of `radius` px with a white crosshair,
/// centred at `center` (px).
pub fn render_probe(width: u32, height: u32, center: (u32, u32), radius: u32) -> RgbaImage {
    let mut img = RgbaImage::from_pixel(width, height, Rgba([236, 236, 236, 255]));
    let (cx, cy) = (i64::from(center.0), i64::from(center.1));
    let r = i64::from(radius.max(2));
    let bar = (r / 8).max(1);
    for y in (cy - r).max(0)..=(cy + r).min(i64::from(height) - 1) {
        for x in (cx - r).max(0)..=(cx + r).min(i64::from(width) - 1) {
            let (dx, dy) = (x - cx, y - cy);
            if dx * dx + dy * dy <= r * r {
                let cross = dx.abs() <= bar / 2 || dy.abs() <= bar / 2;
                let px = if cross {
                    Rgba([255, 255, 255, 255])
                } else {
                    Rgba([220, 30, 30, 255])
                };
                img.put_pixel(x as u32, y as u32, px);
            }
        }
    }
    img
}

/// System message of every probe: the role marker the house's prompts carry, nothing else.
const CALIBRATION_SYSTEM: &str =
    "[phoneagent-role: calibration]\nYou point at targets on phone screenshots.";

fn prompt(space: CoordinateSpace, sent: (u32, u32), protocol: ActionProtocol) -> String {
    let contract = match space {
        CoordinateSpace::ImagePixels => format!(
            "Coordinates are pixels of this {}x{} px image: x from 0 (left) to {} (right), y from 0 (top) to {} (bottom).",
            sent.0,
            sent.1,
            sent.0 - 1,
            sent.1 - 1
        ),
        _ => "Coordinates are relative integers from 0 to 999 on each axis: x from 0 (left edge) to 999 (right edge), y from 0 (top edge) to 999 (bottom edge), whatever the image size.".to_string(),
    };
    let answer = match protocol {
        ActionProtocol::Do => {
            "Answer with exactly one call and nothing after it: do(action=\"Tap\", element=[x,y])"
        }
        ActionProtocol::Tools => "Call the `tap` tool once with element=[x,y].",
    };
    format!(
        "This is a calibration screen of a phone. It shows one red disc with a white crosshair on a plain background. Tap the exact centre of the red disc. {contract} {answer}"
    )
}

fn tap_tool() -> ToolSpec {
    ToolSpec {
        name: "tap".into(),
        description: "Tap one point of the screen.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "element": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2,
                             "description": "[x, y] in the coordinate contract stated by the user"}
            },
            "required": ["element"]
        }),
    }
}

/// Decides the coordinate contract for `ctx.profile` (see the module docs). `Err` only for
/// transport failures and cancellation; a model that answers badly yields
/// [`CalibrationMethod::Rejected`].
pub async fn negotiate(ctx: &CalibrationContext<'_>) -> Result<CalibrationReport> {
    let endpoint = ctx.client.endpoint().to_string();
    let model = ctx.client.model().to_string();
    let (w, h) = (ctx.geometry.width_px, ctx.geometry.height_px);
    let sent = ctx.profile.image.target_size(w, h);
    let radius = ((f64::from(w.min(h)) * ctx.settings.radius_fraction).round() as u32).max(4);
    let scale = f64::from(sent.0) / f64::from(w);
    let max_bound = ctx
        .settings
        .max_bound_px
        .unwrap_or(f64::from(radius) * scale);
    let mean_bound = ctx.settings.mean_bound_px.unwrap_or(max_bound / 2.0);
    let mut report = CalibrationReport {
        method: CalibrationMethod::Explicit,
        space: None,
        endpoint: endpoint.clone(),
        model: model.clone(),
        candidates: Vec::new(),
        mean_bound_px: mean_bound,
        max_bound_px: max_bound,
        image_size: sent,
        calls: 0,
        detail: String::new(),
    };
    if ctx.profile.coordinate_space != CoordinateSpace::Auto {
        report.space = Some(ctx.profile.coordinate_space);
        report.detail = format!(
            "coordinate space {} set explicitly for {model} at {endpoint}",
            ctx.profile.coordinate_space
        );
        return Ok(report);
    }
    let key = cache_key(&endpoint, ctx.profile);
    match ctx.cache.get(&key) {
        Ok(Some(c)) => {
            report.method = CalibrationMethod::Cached;
            report.space = Some(c.space);
            report.detail = format!(
                "coordinate space {} from the calibration cache for {model} at {endpoint} (negotiated with mean error {:.1} px, max {:.1} px)",
                c.space, c.mean_error_px, c.max_error_px
            );
            return Ok(report);
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "calibration cache read failed; negotiating"),
    }

    // Probe images, rendered once, used by both candidates.
    let mut images = Vec::new();
    for &(u, v) in &ctx.settings.probes {
        let center = (
            (u * f64::from(w - 1)).round() as u32,
            (v * f64::from(h - 1)).round() as u32,
        );
        let prepared = prepare_image(&render_probe(w, h, center, radius), &ctx.profile.image)?;
        let target = CanonicalPoint {
            x: f64::from(center.0) / f64::from(w - 1),
            y: f64::from(center.1) / f64::from(h - 1),
        };
        images.push((prepared, target));
    }

    for space in [CoordinateSpace::Relative0999, CoordinateSpace::ImagePixels] {
        let mapper = CoordinateMapper::new(space, (w, h), sent, ctx.geometry)?;
        let opts = match space {
            CoordinateSpace::ImagePixels => ParseOptions::pixels(sent.0, sent.1),
            _ => ParseOptions::relative_0_999(),
        };
        let to_px = |c: CanonicalPoint| (c.x * f64::from(sent.0 - 1), c.y * f64::from(sent.1 - 1));
        let mut cand = CandidateResult {
            space,
            probes: Vec::new(),
            mean_error_px: None,
            max_error_px: None,
            accepted: false,
        };
        for (prepared, target) in &images {
            let req = ChatRequest {
                messages: vec![
                    ChatMessage::system(CALIBRATION_SYSTEM),
                    ChatMessage::user_parts(vec![
                        ContentPart::image(prepared.data_url()),
                        ContentPart::text(prompt(space, sent, ctx.profile.protocol)),
                    ]),
                ],
                tools: match ctx.profile.protocol {
                    ActionProtocol::Tools => vec![tap_tool()],
                    ActionProtocol::Do => Vec::new(),
                },
                tool_choice: match ctx.profile.protocol {
                    ActionProtocol::Tools => Some(ToolChoice::Function("tap".into())),
                    ActionProtocol::Do => None,
                },
                temperature: Some(0.0),
                max_tokens: Some(ctx.settings.max_tokens),
                stream: None,
            };
            let resp = ctx.client.chat(req, ctx.cancel).await?;
            report.calls += 1;
            ctx.ledger.record(
                ctx.role,
                CallKind::Calibration,
                None,
                ctx.profile.price.as_ref(),
                &resp,
                &model,
            );
            let parsed = match ctx.profile.protocol {
                ActionProtocol::Do => parse_do(&resp.content, &opts).map_err(|e| e.to_string()),
                ActionProtocol::Tools => match resp.tool_calls.first() {
                    Some(c) => {
                        parse_tool_call(&c.name, &c.arguments, &opts).map_err(|e| e.to_string())
                    }
                    None => Err(format!(
                        "no tool call in the answer (text: {:?})",
                        resp.content.chars().take(80).collect::<String>()
                    )),
                },
            };
            let target_px = to_px(*target);
            let mut probe = ProbeResult {
                space,
                target_px,
                answer: None,
                answer_px: None,
                error_px: None,
                problem: None,
            };
            match parsed.map(|a| a.kind) {
                Ok(ActionKind::Tap { element }) => {
                    probe.answer = Some(element);
                    match mapper.to_canonical(element) {
                        Ok(c) => {
                            let p = to_px(c);
                            probe.answer_px = Some(p);
                            probe.error_px = Some(
                                ((p.0 - target_px.0).powi(2) + (p.1 - target_px.1).powi(2)).sqrt(),
                            );
                        }
                        Err(e) => probe.problem = Some(e.to_string()),
                    }
                }
                Ok(other) => {
                    probe.problem = Some(format!("answered {} instead of a tap", other.name()))
                }
                Err(e) => probe.problem = Some(format!("unparseable answer: {e}")),
            }
            let hopeless = probe.error_px.is_none_or(|e| e > max_bound);
            cand.probes.push(probe);
            if hopeless {
                break;
            }
        }
        let errors: Vec<f64> = cand.probes.iter().filter_map(|p| p.error_px).collect();
        if !errors.is_empty() {
            cand.mean_error_px = Some(errors.iter().sum::<f64>() / errors.len() as f64);
            cand.max_error_px = errors.iter().copied().reduce(f64::max);
        }
        cand.accepted = cand.probes.len() == images.len()
            && errors.len() == images.len()
            && cand.mean_error_px.is_some_and(|m| m <= mean_bound)
            && cand.max_error_px.is_some_and(|m| m <= max_bound);
        let accepted = cand.accepted;
        let (mean, max) = (cand.mean_error_px, cand.max_error_px);
        report.candidates.push(cand);
        if accepted {
            let value = CachedContract {
                space,
                mean_error_px: mean.unwrap_or_default(),
                max_error_px: max.unwrap_or_default(),
                negotiated_at: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or_default(),
            };
            if let Err(e) = ctx.cache.put(&key, &value) {
                tracing::warn!(error = %e, "calibration cache write failed");
            }
            report.method = CalibrationMethod::Negotiated;
            report.space = Some(space);
            report.detail = format!(
                "negotiated coordinate space {space} for {model} at {endpoint}: {} probes on a {}x{} px image, mean error {:.1} px (bound {mean_bound:.1}), max {:.1} px (bound {max_bound:.1})",
                images.len(),
                sent.0,
                sent.1,
                value.mean_error_px,
                value.max_error_px
            );
            return Ok(report);
        }
    }

    report.method = CalibrationMethod::Rejected;
    let summary: Vec<String> = report
        .candidates
        .iter()
        .map(|c| {
            let errs: Vec<String> = c
                .probes
                .iter()
                .map(|p| match (p.error_px, &p.problem) {
                    (Some(e), _) => format!("{e:.1}"),
                    (None, Some(pr)) => format!("unusable ({pr})"),
                    (None, None) => "unusable".into(),
                })
                .collect();
            format!(
                "{}: probe errors [{}] px, mean {}, max {}",
                c.space,
                errs.join(", "),
                c.mean_error_px.map_or("n/a".into(), |m| format!("{m:.1}")),
                c.max_error_px.map_or("n/a".into(), |m| format!("{m:.1}")),
            )
        })
        .collect();
    report.detail = format!(
        "coordinate calibration failed for model {model} at {endpoint}: no coordinate space met the bounds (mean <= {mean_bound:.1} px, max <= {max_bound:.1} px on a {}x{} px image). {}. Stopping before touching the device; set coordinate_space (or MODEL_COORDINATE_SPACE) explicitly if you know the model's convention, or use a model that can point at screen elements",
        sent.0,
        sent.1,
        summary.join("; ")
    );
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_render_has_disc_and_cross() {
        let img = render_probe(100, 200, (50, 60), 10);
        assert_eq!(img.get_pixel(50, 60).0, [255, 255, 255, 255]);
        assert_eq!(img.get_pixel(55, 65).0, [220, 30, 30, 255]);
        assert_eq!(img.get_pixel(5, 5).0, [236, 236, 236, 255]);
        // Near the border: clipped, no panic.
        let _ = render_probe(20, 20, (0, 19), 10);
    }

    #[test]
    fn prompts_state_the_contract() {
        let p = prompt(
            CoordinateSpace::ImagePixels,
            (672, 1493),
            ActionProtocol::Do,
        );
        assert!(p.contains("672x1493") && p.contains("671") && p.contains("do(action=\"Tap\""));
        let p = prompt(
            CoordinateSpace::Relative0999,
            (672, 1493),
            ActionProtocol::Tools,
        );
        assert!(p.contains("0 to 999") && p.contains("`tap` tool"));
    }

    #[test]
    fn memory_cache_roundtrip() {
        let c = MemoryCalibrationCache::default();
        let p = Profile::new("http://h/v1", "m");
        let k = cache_key("http://h/v1/chat/completions", &p);
        assert_eq!(c.get(&k).unwrap(), None);
        let v = CachedContract {
            space: CoordinateSpace::ImagePixels,
            mean_error_px: 1.0,
            max_error_px: 2.0,
            negotiated_at: 1,
        };
        c.put(&k, &v).unwrap();
        assert_eq!(c.get(&k).unwrap(), Some(v));
        let mut p2 = p.clone();
        p2.extra_body.insert(
            "chat_template_kwargs".into(),
            json!({"enable_thinking": true}),
        );
        assert_ne!(cache_key("http://h/v1/chat/completions", &p2), k);
    }

    /// Issue #15 item 2: a contract negotiated for a model in one family is not reused when the
    /// same endpoint and model are talked to in another family (the key had no family: the
    /// UI-TARS override hit the generic entry).
    #[test]
    fn the_cache_is_keyed_per_model_family() {
        use phoneagent_protocol::family::{FamilySetting, ModelFamily};
        let c = MemoryCalibrationCache::default();
        let ep = "http://h/v1/chat/completions";
        let generic = Profile::new("http://h/v1", "my-finetune");
        c.put(
            &cache_key(ep, &generic),
            &CachedContract {
                space: CoordinateSpace::ImagePixels,
                mean_error_px: 1.0,
                max_error_px: 2.0,
                negotiated_at: 1,
            },
        )
        .unwrap();
        let mut tars = generic.clone();
        tars.family = FamilySetting::Fixed(ModelFamily::UiTars);
        assert_ne!(cache_key(ep, &tars), cache_key(ep, &generic));
        assert_eq!(c.get(&cache_key(ep, &tars)).unwrap(), None);
        assert_eq!(cache_key(ep, &tars).family, "ui_tars");
        // `auto` resolving to generic and an explicit `generic` are the same family.
        let mut explicit = generic.clone();
        explicit.family = FamilySetting::Fixed(ModelFamily::Generic);
        assert_eq!(cache_key(ep, &explicit), cache_key(ep, &generic));
        assert!(c.get(&cache_key(ep, &explicit)).unwrap().is_some());
    }
}
