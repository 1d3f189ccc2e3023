//! Model routes for the runtime from models.json, the environment and flags (SPEC M2).

use anyhow::Context;
use phoneagent_device::ReadinessCheck;
use phoneagent_llm::config::{ActionProtocol, EnvOverrides, ModelsConfig, Role, RoleResolution};
use phoneagent_llm::{
    ChatClient, ChatMessage, ChatRequest, ContentPart, KeyStore, LlmError, ModelClient,
};
use phoneagent_protocol::CoordinateSpace;
use phoneagent_runtime::ModelRoute;
use tokio_util::sync::CancellationToken;

use super::run::ModelArgs;

/// The routes of one run.
pub struct Routes {
    /// Planner.
    pub actor: ModelRoute,
    /// Finish verifier, if any model serves it.
    pub verifier: Option<ModelRoute>,
    /// Reversibility reviewer, if any model serves it.
    pub safety_reviewer: Option<ModelRoute>,
    /// Approve-for-me reviewer (SPEC AR1), if any model serves it.
    pub auto_reviewer: Option<ModelRoute>,
    /// Why a role has no model (for the user).
    pub unavailable: Vec<String>,
}

/// Parse `do` / `tools`.
pub fn parse_protocol(s: &str) -> anyhow::Result<ActionProtocol> {
    match s {
        "do" => Ok(ActionProtocol::Do),
        "tools" => Ok(ActionProtocol::Tools),
        o => anyhow::bail!("unknown protocol {o:?}: use do or tools"),
    }
}

/// The model configuration: models.json, then the environment, then the flags.
pub fn load_config(a: &ModelArgs) -> anyhow::Result<ModelsConfig> {
    let mut env = EnvOverrides::from_env();
    if let Some(u) = &a.base_url {
        env.base_url = Some(u.clone());
    }
    if let Some(m) = &a.model {
        env.model = Some(m.clone());
    }
    if let Some(s) = a.coord_space {
        env.coordinate_space = Some(s.to_string());
    }
    let mut cfg =
        ModelsConfig::load_with_env(&env).context("cannot load the model configuration")?;
    if let Some(p) = &a.profile
        && a.base_url.is_none()
        && a.model.is_none()
    {
        cfg.set_role(Role::Actor, p.clone());
    }
    Ok(cfg)
}

/// Resolve every role: flags override the environment, which overrides models.json.
pub fn resolve_routes(a: &ModelArgs) -> anyhow::Result<Routes> {
    let cfg = load_config(a)?;
    let keys = KeyStore::new();
    let actor = match cfg.resolve(Role::Actor, &keys)? {
        RoleResolution::Resolved(m) => m,
        RoleResolution::Unavailable { reason, .. } => anyhow::bail!(reason),
    };
    let mut actor = ModelRoute::from_resolved(&actor)?;
    if let Some(p) = &a.protocol {
        actor.profile.protocol = parse_protocol(p)?;
    }
    if let Some(s) = a.coord_space {
        actor.profile.coordinate_space = s;
    }
    let mut unavailable = Vec::new();
    let mut other = |role: Role| -> anyhow::Result<Option<ModelRoute>> {
        Ok(match cfg.resolve(role, &keys)? {
            RoleResolution::Resolved(m) => Some(ModelRoute::from_resolved(&m)?),
            RoleResolution::Unavailable { reason, .. } => {
                unavailable.push(reason);
                None
            }
        })
    };
    let verifier = other(Role::Verifier)?;
    let safety_reviewer = other(Role::SafetyReviewer)?;
    let auto_reviewer = other(Role::AutoReviewer)?;
    Ok(Routes {
        auto_reviewer,
        actor,
        verifier,
        safety_reviewer,
        unavailable,
    })
}

/// A 32×32 PNG (white top half, black bottom half) for the `--deep` vision probe.
const PROBE_PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAAAI0lEQVR4nO3NMQ0AAAgDsPk3DTPBQdIaaOZYBAKBQPAiAIBaq4T6TKHsTNsAAAAASUVORK5CYII=";

/// `phoneagent doctor`'s model checks (SPEC C1, M1, M2, M4): one line per role with its profile,
/// endpoint and key source (never the key), whether the endpoint is reachable, accepts the key
/// and lists the model (GET /v1/models where offered), and with `deep` whether it answers a tiny
/// vision request. Each failure carries its fix.
pub async fn doctor_checks(a: &ModelArgs, deep: bool) -> Vec<ReadinessCheck> {
    let cfg = match load_config(a) {
        Ok(c) => c,
        Err(e) => {
            return vec![ReadinessCheck {
                name: "models".into(),
                ok: false,
                detail: "the model configuration cannot be loaded".into(),
                fix: Some(format!("{e:#}")),
            }];
        }
    };
    let keys = KeyStore::new();
    let mut out = Vec::new();
    for role in Role::ALL {
        let check = match cfg.resolve(role, &keys) {
            Err(e) => ReadinessCheck {
                name: role.as_str().into(),
                ok: false,
                detail: "cannot resolve the role's model".into(),
                fix: Some(e.to_string()),
            },
            Ok(RoleResolution::Unavailable { reason, .. }) => ReadinessCheck {
                name: role.as_str().into(),
                // Only the actor is required; the others fail closed/open as the SPEC says.
                ok: role != Role::Actor,
                detail: format!("not configured: {reason}"),
                fix: (role == Role::Actor).then(|| {
                    "set PHONE_AGENT_BASE_URL and PHONE_AGENT_MODEL, pass --base-url/--model, or bind roles.actor.model in models.json".to_string()
                }),
            },
            Ok(RoleResolution::Resolved(m)) => check_endpoint(role, &m, deep).await,
        };
        out.push(check);
    }
    out
}

async fn check_endpoint(
    role: Role,
    m: &phoneagent_llm::config::ResolvedModel,
    deep: bool,
) -> ReadinessCheck {
    let p = &m.profile;
    let mut detail = format!(
        "profile {} → model {} at {} (key: {}",
        m.profile_name, p.model, p.base_url, m.key_source
    );
    if let Some(fb) = &m.fallback {
        detail.push_str(&format!(
            "; fell back to the {} role's model",
            fb.to_role.as_str()
        ));
    }
    detail.push(')');
    if role == Role::Actor {
        detail.push_str(&format!("; coordinates {}", p.coordinate_space));
        if p.coordinate_space == CoordinateSpace::Auto {
            detail.push_str(" (negotiated at the first run, then cached)");
        }
    }
    let fail = |detail: String, fix: String| ReadinessCheck {
        name: role.as_str().into(),
        ok: false,
        detail,
        fix: Some(fix),
    };
    let mut cc = m.client_config();
    cc.connect_timeout_ms = cc.connect_timeout_ms.min(5_000);
    cc.timeout_ms = cc.timeout_ms.min(if deep { 60_000 } else { 10_000 });
    cc.retry.max_retries = 0;
    let client = match ChatClient::new(cc) {
        Ok(c) => c,
        Err(e) => return fail(detail, e.to_string()),
    };
    let cancel = CancellationToken::new();
    match client.list_models(&cancel).await {
        Ok(Some(ids)) if ids.contains(&p.model) => {
            detail.push_str(": reachable, key accepted, model listed")
        }
        Ok(Some(ids)) => {
            let shown: Vec<&str> = ids.iter().take(8).map(String::as_str).collect();
            return fail(
                format!("{detail}: the endpoint does not list model {}", p.model),
                format!(
                    "set `model` of profile {} (or PHONE_AGENT_MODEL / --model) to one the endpoint serves: {}{}",
                    m.profile_name,
                    shown.join(", "),
                    if ids.len() > shown.len() { ", …" } else { "" }
                ),
            );
        }
        Ok(None) => detail.push_str(": reachable (the endpoint offers no model listing)"),
        Err(LlmError::Http {
            status: status @ (401 | 403),
            ..
        }) => {
            return fail(
                format!("{detail}: the endpoint refused the API key (HTTP {status})"),
                match &p.keyring_entry {
                    Some(entry) => format!(
                        "store a valid API key in the OS keyring under service \"phoneagent\", account {entry:?} (or set PHONE_AGENT_API_KEY for one process)"
                    ),
                    None => "this endpoint needs an API key: add keyring_entry to the profile and store the key in the OS keyring, or set PHONE_AGENT_API_KEY".into(),
                },
            );
        }
        Err(e @ (LlmError::Connect { .. } | LlmError::Timeout { .. })) => {
            return fail(
                format!("{detail}: unreachable"),
                format!(
                    "{e}. Start the model server, or fix base_url of profile {} ({})",
                    m.profile_name, m.source
                ),
            );
        }
        Err(e) => return fail(format!("{detail}: the model listing failed"), e.to_string()),
    }
    if deep {
        let req = ChatRequest {
            messages: vec![
                ChatMessage::system(format!(
                    "[phoneagent-role: {}]\nThis is a connectivity check. Answer with one word.",
                    role.as_str()
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
        match client.chat(req, &cancel).await {
            Ok(resp) => detail.push_str(&format!(
                "; vision request answered in {} ms",
                resp.latency_ms
            )),
            Err(e) => {
                return fail(
                    format!("{detail}; the vision request failed"),
                    format!("{e}. PhoneAgent needs a vision model: use one that accepts images"),
                );
            }
        }
    }
    ReadinessCheck {
        name: role.as_str().into(),
        ok: true,
        detail,
        fix: None,
    }
}
