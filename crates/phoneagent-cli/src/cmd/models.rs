//! Model routes for the runtime from models.json, the environment and flags (SPEC M2).

use anyhow::Context;
use phoneagent_device::ReadinessCheck;
use phoneagent_llm::KeyStore;
use phoneagent_llm::config::{ActionProtocol, EnvOverrides, ModelsConfig, Role, RoleResolution};
use phoneagent_llm::connection_test::{
    self, ConnectionStep, ConnectionTestOptions, StepId, StepStatus,
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
        // SPEC M7: the family decides prompt, grammar and (unless generic) the coordinates.
        detail.push_str(&format!("; family {}", p.family_summary()));
        if p.family_adapter().is_none() {
            detail.push_str(&format!("; coordinates {}", p.coordinate_space));
            if p.coordinate_space == CoordinateSpace::Auto {
                detail.push_str(" (negotiated at the first run, then cached)");
            }
        }
    }
    let fail = |detail: String, fix: String| ReadinessCheck {
        name: role.as_str().into(),
        ok: false,
        detail,
        fix: Some(fix),
    };
    // The shared connection test (phoneagent_llm::connection_test); the CLI words its result
    // as one line per role and adds where to fix things on the command line.
    let mut opts = ConnectionTestOptions::deep(m.profile_name.clone(), role);
    opts.calibrate = false;
    opts.deep = deep;
    opts.timeout_ms = if deep { 60_000 } else { 10_000 };
    let report = connection_test::run(p, m.client_config(), &opts, &CancellationToken::new()).await;
    let step = |id| report.step(id).cloned();
    let core_fix = |s: &ConnectionStep| s.fix.clone().unwrap_or_default();
    if let Some(s) = step(StepId::Reachable).filter(|s| s.status == StepStatus::Failed) {
        return if s.detail.contains("unreachable") {
            fail(
                format!("{detail}: unreachable"),
                format!("{}. {} ({})", s.detail, core_fix(&s), m.source),
            )
        } else {
            fail(
                format!("{detail}: the model listing failed"),
                format!("{}. {}", s.detail, core_fix(&s)),
            )
        };
    }
    if let Some(s) = step(StepId::KeyAccepted).filter(|s| s.status == StepStatus::Failed) {
        return fail(
            format!("{detail}: {}", s.detail),
            match &p.keyring_entry {
                Some(entry) => format!(
                    "store a valid API key in the OS keyring under service \"phoneagent\", account {entry:?} (or set PHONE_AGENT_API_KEY for one process)"
                ),
                None => "this endpoint needs an API key: add keyring_entry to the profile and store the key in the OS keyring, or set PHONE_AGENT_API_KEY".into(),
            },
        );
    }
    match step(StepId::ModelListed) {
        Some(s) if s.status == StepStatus::Failed => {
            return fail(
                format!("{detail}: {}", s.detail),
                format!("{} (or PHONE_AGENT_MODEL / --model)", core_fix(&s)),
            );
        }
        Some(s) if s.status == StepStatus::Ok => {
            detail.push_str(": reachable, key accepted, model listed")
        }
        _ => detail.push_str(": reachable (the endpoint offers no model listing)"),
    }
    if deep {
        match step(StepId::VisionAnswered) {
            Some(s) if s.status == StepStatus::Failed => {
                return fail(
                    format!("{detail}; the vision request failed"),
                    format!("{}. {}", s.detail, core_fix(&s)),
                );
            }
            Some(s) => detail.push_str(&format!("; vision request {}", s.detail)),
            None => {}
        }
        match step(StepId::FamilyGrammar) {
            Some(s) if s.status == StepStatus::Failed => {
                return fail(
                    format!(
                        "{detail}; {}; the model answered: {:?}",
                        s.detail,
                        s.sample.as_deref().unwrap_or_default()
                    ),
                    core_fix(&s),
                );
            }
            Some(s) if s.status == StepStatus::Ok => {
                detail.push_str("; the family's grammar parsed a real answer on a synthetic image")
            }
            _ => {}
        }
    }
    ReadinessCheck {
        name: role.as_str().into(),
        ok: true,
        detail,
        fix: None,
    }
}

/// `phoneagent models …` (SPEC M2, M7, M8).
#[derive(Debug, clap::Subcommand)]
pub enum ModelsCommand {
    /// List the profiles of models.json with their endpoint, model, family (auto-detected or
    /// set), coordinate convention and key entry (never the key), and the role bindings.
    List,
    /// List the provider presets: base URL, example model ids, family, image policy.
    Presets,
    /// Add (or replace) a profile from a provider preset and save models.json. The API key,
    /// if the provider needs one, is read from stdin with --key-stdin and stored only in the
    /// OS keyring under the preset's entry.
    Add {
        /// Profile name.
        name: String,
        /// Preset id (see `phoneagent models presets`).
        #[arg(long)]
        preset: String,
        /// Model id (default: the preset's first example).
        #[arg(long)]
        model: Option<String>,
        /// Base URL instead of the preset's (e.g. another port).
        #[arg(long)]
        base_url: Option<String>,
        /// Family: auto, generic, autoglm, ui_tars or qwen_vl (default: the preset's).
        #[arg(long)]
        family: Option<String>,
        /// Bind the profile to the actor role.
        #[arg(long)]
        actor: bool,
        /// Read the API key from stdin and store it in the OS keyring.
        #[arg(long)]
        key_stdin: bool,
    },
}

fn profile_row(name: &str, p: &phoneagent_llm::Profile) -> serde_json::Value {
    let (family, detected) = p.resolved_family();
    serde_json::json!({
        "name": name,
        "base_url": p.base_url,
        "model": p.model,
        "family": family,
        "family_setting": p.family.as_str(),
        "family_detected": detected,
        "coordinates": p.family_adapter().map_or_else(|| p.coordinate_space.to_string(), |a| a.coords.as_str().to_string()),
        "protocol": p.protocol.as_str(),
        "keyring_entry": p.keyring_entry,
    })
}

/// Run a models subcommand.
pub async fn run(_g: &super::Global, c: ModelsCommand) -> anyhow::Result<u8> {
    let env = EnvOverrides::from_env();
    let dir = env.config_dir().context("cannot find the config dir")?;
    match c {
        ModelsCommand::List => {
            let cfg =
                phoneagent_llm::ModelsConfig::load(&dir).context("cannot load models.json")?;
            if cfg.profiles.is_empty() {
                outln!(
                    "no profiles in {}: add one with `phoneagent models add NAME --preset ID` (see `phoneagent models presets`)",
                    dir.join(phoneagent_llm::config::MODELS_FILE).display()
                );
            }
            for (name, p) in &cfg.profiles {
                let coords = match p.family_adapter() {
                    Some(_) => String::new(),
                    None => format!(
                        " — coordinates {}, protocol {}",
                        p.coordinate_space,
                        p.protocol.as_str()
                    ),
                };
                outln!(
                    "{name}: {} at {} — family {}{coords} — key {}",
                    phoneagent_protocol::text::inert_line(&p.model),
                    phoneagent_protocol::text::inert_line(&p.base_url),
                    p.family_summary(),
                    p.keyring_entry
                        .as_deref()
                        .map_or("none".to_string(), |e| format!("keyring entry {e:?}")),
                );
            }
            for (role, b) in &cfg.roles {
                outln!("role {role} → {}", b.model);
            }
            Ok(0)
        }
        ModelsCommand::Presets => {
            for p in phoneagent_llm::presets::PRESETS {
                outln!(
                    "{:<11} {} — {} — models: {} — family {} — image ≤{} px long side{} — key: {}\n            {}",
                    p.id,
                    p.name,
                    p.base_url,
                    p.models.join(", "),
                    p.family.as_str(),
                    p.image.max_long_side,
                    p.image
                        .multiple_of
                        .map_or(String::new(), |m| format!(", sides a multiple of {m}")),
                    p.keyring_entry
                        .map_or("none (local)".to_string(), |e| format!(
                            "keyring entry {e:?}"
                        )),
                    p.hint
                );
            }
            Ok(0)
        }
        ModelsCommand::Add {
            name,
            preset,
            model,
            base_url,
            family,
            actor,
            key_stdin,
        } => {
            let pr = phoneagent_llm::presets::preset(&preset)?;
            let mut p = pr.profile(model.as_deref());
            if let Some(u) = base_url {
                p.base_url = u;
            }
            if let Some(f) = family {
                p.family = f
                    .parse()
                    .map_err(|e: String| anyhow::anyhow!("--family: {e}"))?;
            }
            p.validate(&name)?;
            if key_stdin {
                let Some(entry) = p.keyring_entry.clone() else {
                    anyhow::bail!(
                        "the preset {} needs no API key (a local server): drop --key-stdin",
                        pr.id
                    );
                };
                let mut key = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut key)
                    .context("cannot read the API key from stdin")?;
                let key = phoneagent_llm::ApiKey::new(key.trim().to_string());
                if key.is_empty() {
                    anyhow::bail!(
                        "stdin held no API key: pipe the key in, e.g. `printenv MY_KEY | phoneagent models add …`"
                    );
                }
                KeyStore::new()
                    .set(&entry, &key)
                    .context("cannot store the API key in the OS keyring")?;
            }
            let mut cfg =
                phoneagent_llm::ModelsConfig::load(&dir).context("cannot load models.json")?;
            let row = profile_row(&name, &p);
            cfg.profiles.insert(name.clone(), p);
            if actor {
                cfg.set_role(Role::Actor, name.clone());
            }
            cfg.save(&dir).context("cannot save models.json")?;
            outln!("saved profile {name}: {row}");
            Ok(0)
        }
    }
}
