//! The one connection test of a model profile (SPEC M1, M4, M7, M8; issue #15 item 4), shared
//! by `phoneagent doctor --deep` and the app's Settings "Test connection".
//!
//! [`run`] walks six steps in order and reports each as [`StepStatus::Ok`], `Failed` or
//! `Skipped` with a plain-language detail, a fix when it failed, and a sample of what the model
//! answered (at most [`SAMPLE_CHARS`] characters, made inert with
//! [`phoneagent_protocol::text::inert_line`]: a hostile answer can never carry a control
//! sequence to a terminal or markup to the UI):
//!
//! 1. [`StepId::Reachable`]: `GET {base_url}/models` connects and answers.
//! 2. [`StepId::KeyAccepted`]: that request was not refused with HTTP 401/403.
//! 3. [`StepId::ModelListed`]: the listing names the profile's model (skipped when the endpoint
//!    offers no listing).
//! 4. [`StepId::VisionAnswered`]: a one-word question about a synthetic 32×32 image is answered.
//! 5. [`StepId::FamilyGrammar`]: for the actor with a model family adapter (SPEC M7), one action
//!    asked for with the family's own prompt parses with the family's grammar.
//! 6. [`StepId::CoordinateContract`]: which coordinates the model answers in — the family's
//!    convention, the profile's explicit space, or for `auto` (with
//!    [`ConnectionTestOptions::calibrate`]) the result of [`crate::calibration::negotiate`] on
//!    synthetic probe screens.
//!
//! A failed step skips the ones that depend on it. Only synthetic images are sent, never the
//! phone's screen; no device is touched. The API key is never part of any detail, fix or
//! sample (the client's errors never contain it).

use phoneagent_protocol::family::{FamilyAdapter, FamilyPromptInput};
use phoneagent_protocol::text::inert_line;
use phoneagent_protocol::{CoordinateSpace, ParseOptions, Rotation, ScreenGeometry};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::calibration::{
    CalibrationContext, CalibrationMethod, CalibrationSettings, MemoryCalibrationCache, negotiate,
};
use crate::client::{ChatClient, ClientConfig, ModelClient};
use crate::config::{Profile, Role};
use crate::error::LlmError;
use crate::ledger::{Budgets, TokenLedger};
use crate::types::{ChatMessage, ChatRequest, ContentPart};

/// Longest sample of a model answer kept in a step, in characters.
pub const SAMPLE_CHARS: usize = 160;

/// A 32×32 PNG (white top half, black bottom half): the synthetic image of the vision and
/// family steps.
pub const PROBE_PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAAAI0lEQVR4nO3NMQ0AAAgDsPk3DTPBQdIaaOZYBAKBQPAiAIBaq4T6TKHsTNsAAAAASUVORK5CYII=";

/// Which step of the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepId {
    /// The endpoint answers at all.
    Reachable,
    /// The endpoint accepts the API key (or needs none).
    KeyAccepted,
    /// The endpoint lists the profile's model.
    ModelListed,
    /// A request with an image is answered.
    VisionAnswered,
    /// The family's grammar parses a real answer (SPEC M7).
    FamilyGrammar,
    /// The coordinate contract (SPEC M4, M7).
    CoordinateContract,
}

impl StepId {
    /// Every step, in the order [`run`] reports them.
    pub const ALL: [Self; 6] = [
        Self::Reachable,
        Self::KeyAccepted,
        Self::ModelListed,
        Self::VisionAnswered,
        Self::FamilyGrammar,
        Self::CoordinateContract,
    ];

    /// Stable name (`reachable`, `key_accepted`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reachable => "reachable",
            Self::KeyAccepted => "key_accepted",
            Self::ModelListed => "model_listed",
            Self::VisionAnswered => "vision_answered",
            Self::FamilyGrammar => "family_grammar",
            Self::CoordinateContract => "coordinate_contract",
        }
    }

    /// Title for people: `reachable`, `key accepted`, `model listed`, …
    pub fn title(self) -> &'static str {
        match self {
            Self::Reachable => "reachable",
            Self::KeyAccepted => "key accepted",
            Self::ModelListed => "model listed",
            Self::VisionAnswered => "vision request answered",
            Self::FamilyGrammar => "family grammar parsed",
            Self::CoordinateContract => "coordinate contract",
        }
    }
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Passed.
    Ok,
    /// Failed: see the fix.
    Failed,
    /// Not run (does not apply, or an earlier step failed).
    Skipped,
}

/// One step's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionStep {
    /// Which step.
    pub id: StepId,
    /// How it ended.
    pub status: StepStatus,
    /// What happened, in plain language.
    pub detail: String,
    /// What to do, when it failed.
    pub fix: Option<String>,
    /// The first [`SAMPLE_CHARS`] characters of what the model answered, inert.
    pub sample: Option<String>,
}

/// The whole test's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionReport {
    /// Every step of [`StepId::ALL`], in order.
    pub steps: Vec<ConnectionStep>,
    /// The family in force (`generic`, `autoglm`, …) and how it was decided.
    pub family: String,
    /// Model ids the endpoint listed (at most 20), empty when it offers no listing.
    pub listed_models: Vec<String>,
}

impl ConnectionReport {
    /// True when no step failed.
    pub fn ok(&self) -> bool {
        self.steps.iter().all(|s| s.status != StepStatus::Failed)
    }

    /// The first failed step.
    pub fn first_failure(&self) -> Option<&ConnectionStep> {
        self.steps.iter().find(|s| s.status == StepStatus::Failed)
    }

    /// The step `id`.
    pub fn step(&self, id: StepId) -> Option<&ConnectionStep> {
        self.steps.iter().find(|s| s.id == id)
    }
}

/// What to test.
#[derive(Debug, Clone)]
pub struct ConnectionTestOptions {
    /// The profile's name (named in fixes).
    pub profile_name: String,
    /// The role the profile serves; the family step runs for [`Role::Actor`] only.
    pub role: Role,
    /// Run calibration probes for a generic profile with coordinate space `auto` (4–8 model
    /// calls); when false the contract step says it is negotiated at the first run.
    pub calibrate: bool,
    /// Ask the one-word vision question and the family's action (false = steps 1–3 and the
    /// contract description only, as plain `doctor`).
    pub deep: bool,
    /// Set when the profile names a keyring entry that holds no key: the key step fails with
    /// the fix to store it, whatever the endpoint says.
    pub missing_key_entry: Option<String>,
    /// Connect timeout, ms (capped at the profile's).
    pub connect_timeout_ms: u64,
    /// Per-request timeout, ms (capped at the profile's).
    pub timeout_ms: u64,
}

impl ConnectionTestOptions {
    /// The options of Settings' Test connection for the actor profile `name`: deep, calibrating,
    /// 5 s to connect, 60 s per request.
    pub fn deep(name: impl Into<String>, role: Role) -> Self {
        Self {
            profile_name: name.into(),
            role,
            calibrate: true,
            deep: true,
            missing_key_entry: None,
            connect_timeout_ms: 5_000,
            timeout_ms: 60_000,
        }
    }
}

/// `s` as an inert one-line sample of at most [`SAMPLE_CHARS`] characters (`…` when cut).
pub fn sample(s: &str) -> String {
    let line = inert_line(s.trim());
    let mut out: String = line.chars().take(SAMPLE_CHARS).collect();
    if line.chars().count() > SAMPLE_CHARS {
        out.push('…');
    }
    out
}

fn step(id: StepId, status: StepStatus, detail: impl Into<String>) -> ConnectionStep {
    ConnectionStep {
        id,
        status,
        detail: detail.into(),
        fix: None,
        sample: None,
    }
}

fn failed(id: StepId, detail: impl Into<String>, fix: impl Into<String>) -> ConnectionStep {
    ConnectionStep {
        fix: Some(fix.into()),
        ..step(id, StepStatus::Failed, detail)
    }
}

/// The error text of a client error, made inert (an endpoint's error body is untrusted).
fn err_text(e: &LlmError) -> String {
    sample(&e.to_string())
}

fn key_fix(profile: &Profile) -> String {
    match &profile.keyring_entry {
        Some(entry) => format!(
            "store a valid API key for keyring entry {entry:?} (service \"phoneagent\"): paste it into the profile's key field and save it"
        ),
        None => "this endpoint needs an API key: give the profile a keyring entry and store the key there".into(),
    }
}

/// Runs the connection test of `profile` over a client built from `client` (its retries are
/// turned off and its timeouts capped by `opts`). Never fails: every problem is a failed step.
pub async fn run(
    profile: &Profile,
    client: ClientConfig,
    opts: &ConnectionTestOptions,
    cancel: &CancellationToken,
) -> ConnectionReport {
    let family = profile.family_summary();
    let mut steps: Vec<ConnectionStep> = Vec::new();
    let mut listed_models = Vec::new();
    let mut cc = client;
    cc.connect_timeout_ms = cc.connect_timeout_ms.min(opts.connect_timeout_ms.max(1));
    cc.timeout_ms = cc.timeout_ms.min(opts.timeout_ms.max(1));
    cc.retry.max_retries = 0;
    let finish = |mut steps: Vec<ConnectionStep>, listed_models, why: &str| {
        for id in StepId::ALL {
            if !steps.iter().any(|s| s.id == id) {
                steps.push(step(id, StepStatus::Skipped, why.to_string()));
            }
        }
        steps.sort_by_key(|s| StepId::ALL.iter().position(|i| *i == s.id));
        ConnectionReport {
            steps,
            family: family.clone(),
            listed_models,
        }
    };
    let client = match ChatClient::new(cc) {
        Ok(c) => c,
        Err(e) => {
            steps.push(failed(
                StepId::Reachable,
                format!("the client cannot be built: {}", err_text(&e)),
                "check the profile's base URL (e.g. http://127.0.0.1:8000/v1)",
            ));
            return finish(steps, listed_models, "not run: an earlier step failed");
        }
    };
    let endpoint = profile.base_url.trim_end_matches('/').to_string();
    let mut listing = false;
    match client.list_models(cancel).await {
        Ok(ids) => {
            steps.push(step(
                StepId::Reachable,
                StepStatus::Ok,
                format!("{endpoint} answered"),
            ));
            match &opts.missing_key_entry {
                Some(entry) => steps.push(failed(
                    StepId::KeyAccepted,
                    format!("no API key is stored for keyring entry {entry:?}"),
                    format!(
                        "paste the API key into the profile's key field and save it, or clear the keyring entry {entry:?} for a local server that needs no key"
                    ),
                )),
                None => steps.push(step(
                    StepId::KeyAccepted,
                    StepStatus::Ok,
                    if profile.keyring_entry.is_some() {
                        "the endpoint accepted the key"
                    } else {
                        "the endpoint answered without an API key"
                    },
                )),
            }
            match ids {
                Some(ids) => {
                    listing = true;
                    listed_models = ids.iter().take(20).map(|m| sample(m)).collect();
                    if ids.contains(&profile.model) {
                        steps.push(step(
                            StepId::ModelListed,
                            StepStatus::Ok,
                            format!("the endpoint serves {}", sample(&profile.model)),
                        ));
                    } else {
                        let shown: Vec<String> = ids.iter().take(8).map(|m| sample(m)).collect();
                        steps.push(failed(
                            StepId::ModelListed,
                            format!(
                                "the endpoint does not list model {}",
                                sample(&profile.model)
                            ),
                            format!(
                                "set the model of profile {} to one the endpoint serves: {}{}",
                                opts.profile_name,
                                if shown.is_empty() {
                                    "(none listed)".to_string()
                                } else {
                                    shown.join(", ")
                                },
                                if ids.len() > shown.len() { ", …" } else { "" }
                            ),
                        ));
                    }
                }
                None => steps.push(step(
                    StepId::ModelListed,
                    StepStatus::Skipped,
                    "the endpoint offers no model listing (the vision request checks the model)",
                )),
            }
        }
        Err(LlmError::Http {
            status: status @ (401 | 403),
            ..
        }) => {
            steps.push(step(
                StepId::Reachable,
                StepStatus::Ok,
                format!("{endpoint} answered"),
            ));
            let detail = match &opts.missing_key_entry {
                Some(entry) => format!(
                    "the endpoint needs an API key (HTTP {status}) and none is stored for keyring entry {entry:?}"
                ),
                None => format!("the endpoint refused the API key (HTTP {status})"),
            };
            steps.push(failed(StepId::KeyAccepted, detail, key_fix(profile)));
            return finish(
                steps,
                listed_models,
                "not run: the endpoint refused the key",
            );
        }
        Err(e @ (LlmError::Connect { .. } | LlmError::Timeout { .. })) => {
            steps.push(failed(
                StepId::Reachable,
                format!("{endpoint} is unreachable: {}", err_text(&e)),
                format!(
                    "Start the model server, or fix the base URL of profile {} (it must include the API path, e.g. /v1)",
                    opts.profile_name
                ),
            ));
            return finish(steps, listed_models, "not run: the endpoint is unreachable");
        }
        Err(e) => {
            steps.push(failed(
                StepId::Reachable,
                format!("the model listing failed: {}", err_text(&e)),
                format!(
                    "check that the base URL of profile {} is an OpenAI-compatible API root (e.g. http://127.0.0.1:8000/v1)",
                    opts.profile_name
                ),
            ));
            return finish(steps, listed_models, "not run: an earlier step failed");
        }
    }
    if steps.iter().any(|s| s.status == StepStatus::Failed) {
        let contract = contract_step(profile);
        steps.push(contract);
        return finish(steps, listed_models, "not run: an earlier step failed");
    }
    if !opts.deep {
        let contract = contract_step(profile);
        steps.push(contract);
        return finish(steps, listed_models, "not run (deep check only)");
    }

    // 4. Vision.
    let req = ChatRequest {
        messages: vec![
            ChatMessage::system(format!(
                "[phoneagent-role: {}]\nThis is a connectivity check. Answer with one word.",
                opts.role.as_str()
            )),
            ChatMessage::user_parts(vec![
                ContentPart::text("Is the top half of this image white or black?"),
                ContentPart::image(format!("data:image/png;base64,{PROBE_PNG_B64}")),
            ]),
        ],
        tools: vec![],
        tool_choice: None,
        temperature: Some(0.0),
        max_tokens: Some(16),
        stream: None,
    };
    match client.chat(req, cancel).await {
        Ok(resp) => steps.push(ConnectionStep {
            sample: Some(sample(&resp.content)),
            ..step(
                StepId::VisionAnswered,
                StepStatus::Ok,
                format!("answered in {} ms", resp.latency_ms),
            )
        }),
        Err(e) => {
            let fix = match &e {
                LlmError::Http {
                    status: 401 | 403, ..
                } => key_fix(profile),
                LlmError::Http { status: 404, .. } if !listing => format!(
                    "the endpoint does not serve model {}: set the model of profile {} to one it serves",
                    sample(&profile.model),
                    opts.profile_name
                ),
                _ => "PhoneAgent needs a vision model: use one that accepts images, and check that the server is not overloaded".into(),
            };
            steps.push(failed(
                StepId::VisionAnswered,
                format!("the vision request failed: {}", err_text(&e)),
                fix,
            ));
            steps.push(contract_step(profile));
            return finish(steps, listed_models, "not run: the vision request failed");
        }
    }

    // 5. Family grammar.
    match (opts.role, profile.family_adapter()) {
        (Role::Actor, Some(ad)) => steps.push(family_step(&client, cancel, &ad).await),
        (Role::Actor, None) => steps.push(step(
            StepId::FamilyGrammar,
            StepStatus::Skipped,
            "generic family: PhoneAgent's own prompt and action format, no family grammar",
        )),
        _ => steps.push(step(
            StepId::FamilyGrammar,
            StepStatus::Skipped,
            "only the actor (planner) answers in a family grammar",
        )),
    }

    // 6. Coordinate contract.
    let calibrate = opts.calibrate
        && opts.role == Role::Actor
        && profile.family_adapter().is_none()
        && profile.coordinate_space == CoordinateSpace::Auto;
    steps.push(if calibrate {
        calibration_step(profile, &client, cancel).await
    } else {
        contract_step(profile)
    });
    finish(steps, listed_models, "not run")
}

/// The contract step without calibration probes: what the family or the profile fixes.
fn contract_step(profile: &Profile) -> ConnectionStep {
    if let Some(ad) = profile.family_adapter() {
        return step(
            StepId::CoordinateContract,
            StepStatus::Ok,
            format!(
                "family {} answers in its own convention ({}), read as {}: no calibration needed",
                ad.family,
                ad.coords.as_str(),
                ad.frozen_space()
            ),
        );
    }
    let space = profile.coordinate_space;
    if space != CoordinateSpace::Auto {
        return step(
            StepId::CoordinateContract,
            StepStatus::Ok,
            format!("coordinate space {space}, set by the profile"),
        );
    }
    step(
        StepId::CoordinateContract,
        StepStatus::Skipped,
        "coordinate space auto: negotiated with synthetic probes at the first run, then cached",
    )
}

/// Calibration probes (SPEC M4) on a synthetic 1080×2400 portrait screen.
async fn calibration_step(
    profile: &Profile,
    client: &ChatClient,
    cancel: &CancellationToken,
) -> ConnectionStep {
    let ledger = TokenLedger::new(Budgets::default());
    let cache = MemoryCalibrationCache::default();
    let ctx = CalibrationContext {
        client,
        profile,
        role: Role::Actor,
        geometry: ScreenGeometry {
            width_px: 1080,
            height_px: 2400,
            density_dpi: None,
            rotation: Rotation::R0,
        },
        ledger: &ledger,
        cache: &cache,
        cancel,
        settings: CalibrationSettings::default(),
    };
    match negotiate(&ctx).await {
        Ok(r) => {
            let answers: Vec<String> = r
                .candidates
                .iter()
                .flat_map(|c| c.probes.iter())
                .take(4)
                .map(|p| match (p.answer, &p.problem) {
                    (Some(a), _) => format!("[{}, {}]", a.x, a.y),
                    (None, Some(problem)) => sample(problem),
                    (None, None) => "?".into(),
                })
                .collect();
            let sample_text = (!answers.is_empty()).then(|| sample(&answers.join(" ")));
            match (r.method, r.space) {
                (CalibrationMethod::Rejected, _) | (_, None) => ConnectionStep {
                    sample: sample_text,
                    ..failed(
                        StepId::CoordinateContract,
                        format!(
                            "coordinate space auto: the calibration probes did not agree on a space ({})",
                            sample(&r.detail)
                        ),
                        "set the profile's coordinate space explicitly (relative 0–999 or image pixels) if you know the model's convention, or set the family the model was trained on",
                    )
                },
                (_, Some(space)) => ConnectionStep {
                    sample: sample_text,
                    ..step(
                        StepId::CoordinateContract,
                        StepStatus::Ok,
                        format!(
                            "coordinate space auto: the calibration probes negotiated {space} in {} model calls",
                            r.calls
                        ),
                    )
                },
            }
        }
        Err(e) => failed(
            StepId::CoordinateContract,
            format!("the calibration probes failed: {}", err_text(&e)),
            "try again; if it keeps failing, set the profile's coordinate space explicitly",
        ),
    }
}

/// The family step (SPEC M7): one action on the synthetic image with the family's own prompt,
/// parsed with the family's grammar.
async fn family_step(
    client: &ChatClient,
    cancel: &CancellationToken,
    ad: &FamilyAdapter,
) -> ConnectionStep {
    let image = (32, 32);
    let system = ad.system_prompt(&FamilyPromptInput {
        task: "Connection check: tap the black bottom half of the image.",
        chinese: false,
        image_size: image,
        app_launcher: false,
        wait_max_secs: 5.0,
        extra_sections: vec![],
    });
    let req = ChatRequest {
        messages: vec![
            ChatMessage::system(format!("[phoneagent-role: connection_check]\n{system}")),
            ChatMessage::user_parts(vec![
                ContentPart::text("Current screenshot (image 32x32 px). Reply with one action."),
                ContentPart::image(format!("data:image/png;base64,{PROBE_PNG_B64}")),
            ]),
        ],
        tools: vec![],
        tool_choice: None,
        temperature: Some(0.0),
        max_tokens: Some(512),
        stream: None,
    };
    let resp = match client.chat(req, cancel).await {
        Ok(r) => r,
        Err(e) => {
            return failed(
                StepId::FamilyGrammar,
                format!("the family check request failed: {}", err_text(&e)),
                "try again, or check the endpoint",
            );
        }
    };
    let opts = ParseOptions::default();
    let parsed = match resp.tool_calls.first() {
        Some(c) => ad.parse_tool_call(&c.name, &c.arguments, image, &opts),
        None => ad.parse(&resp.content, image, &opts),
    };
    let shown = match resp.tool_calls.first() {
        Some(c) => format!("{}({})", c.name, c.arguments),
        None => resp.content.clone(),
    };
    match parsed {
        Ok(a) => ConnectionStep {
            sample: Some(sample(&shown)),
            ..step(
                StepId::FamilyGrammar,
                StepStatus::Ok,
                format!(
                    "the {} grammar parsed a real answer on a synthetic image ({})",
                    ad.family,
                    a.kind.name()
                ),
            )
        },
        Err(e) => ConnectionStep {
            sample: Some(sample(&shown)),
            ..failed(
                StepId::FamilyGrammar,
                format!(
                    "the answer is not in the {} grammar ({})",
                    ad.family,
                    sample(&e.to_string())
                ),
                "set the profile's family to the family the model was trained on (generic for general models), or use the model the family expects",
            )
        },
    }
}
