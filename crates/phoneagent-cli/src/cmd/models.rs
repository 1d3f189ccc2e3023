//! Model routes for the runtime from models.json, the environment and flags (SPEC M2).

use anyhow::Context;
use phoneagent_llm::KeyStore;
use phoneagent_llm::config::{ActionProtocol, EnvOverrides, ModelsConfig, Role, RoleResolution};
use phoneagent_runtime::ModelRoute;

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

/// Resolve every role: flags override the environment, which overrides models.json.
pub fn resolve_routes(a: &ModelArgs) -> anyhow::Result<Routes> {
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
