//! Model profiles and roles (SPEC M2): `models.json` plus environment overrides, and role
//! resolution with the one-hop fallback chain.
//!
//! ## `models.json`
//! In the config dir: `$PHONEAGENT_HOME` if set, else the platform config dir
//! (`~/.config/phoneagent` on Linux).
//! ```json
//! {
//!   "profiles": {
//!     "autoglm": {"base_url": "http://127.0.0.1:8000/v1", "model": "autoglm-phone-9b",
//!                 "protocol": "do", "coordinate_space": "relative_0_999"},
//!     "gpt": {"base_url": "https://api.openai.com/v1", "model": "gpt-4.1-mini",
//!             "protocol": "tools", "coordinate_space": "auto", "stream": true,
//!             "keyring_entry": "openai",
//!             "image": {"max_long_side": 1568, "max_pixels": 1003520, "format": "jpeg", "quality": 85},
//!             "price": {"prompt_per_mtok": 0.4, "completion_per_mtok": 1.6}}
//!   },
//!   "roles": {"actor": {"model": "autoglm"}, "verifier": {"model": "gpt"}}
//! }
//! ```
//! A profile's optional `family` (`auto` by default, or `generic`, `autoglm`, `ui_tars`,
//! `qwen_vl`) and `family_coordinates` choose the model family's prompt, grammar and
//! coordinate convention (SPEC M7; see [`Profile::family_adapter`]). `phoneagent models add
//! --preset ID` writes a profile from a provider preset ([`crate::presets`], SPEC M8).
//! Unknown fields are errors (typos must not be silently ignored). API keys are never in this
//! file: a profile names its OS-keyring entry (`keyring_entry`); a local endpoint needs none.
//!
//! ## Environment overrides
//! * `PHONE_AGENT_BASE_URL`, `PHONE_AGENT_MODEL`, `MODEL_COORDINATE_SPACE`,
//!   `PHONE_AGENT_API_KEY`: override the actor's profile. The result is a derived profile named
//!   `env:actor` (the file's profile is left untouched for other roles). With no actor profile
//!   at all the defaults are `http://localhost:8000/v1`, `autoglm-phone-9b`, protocol `do`,
//!   coordinate space `auto`. `PHONE_AGENT_API_KEY` lives only in this process's memory and is
//!   never written anywhere.
//! * `PHONE_AGENT_VERIFIER_MODEL`, `PHONE_AGENT_SAFETY_REVIEWER_MODEL`,
//!   `PHONE_AGENT_AUTO_REVIEWER_MODEL`: a profile name from the file, or else a model name served
//!   by the actor's endpoint (derived profile `env:<role>`, sharing the actor's key).
//!   Environment beats `roles.<role>.model`.
//!
//! ## Role resolution and fallback (one hop, audited as `model_fallback`)
//! | role | not configured | configured but unusable |
//! |---|---|---|
//! | `actor` | error | error |
//! | `verifier` | → actor | → actor |
//! | `safety_reviewer` | → verifier if configured, else unavailable (never the actor: SPEC S7 fails closed) | → verifier if configured, else actor |
//! | `auto_reviewer` | same as `safety_reviewer` | same as `safety_reviewer` |
//!
//! "Unusable" = unknown profile, invalid profile, or a `keyring_entry` with no key stored (or a
//! keyring failure). The hop is never followed further: if the next role is unusable too, the
//! role is [`RoleResolution::Unavailable`] with both reasons.
//!
//! Size: about 780 lines of code, then the unit tests of `models.json` parsing and role
//! resolution.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use phoneagent_protocol::CoordinateSpace;
use phoneagent_protocol::family::{FamilyAdapter, FamilyCoords, FamilySetting, ModelFamily};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::client::{ChatClient, ClientConfig, RetryPolicy};
use crate::error::{LlmError, Result};
use crate::image::ImagePolicy;
use crate::keystore::{ApiKey, KeyLookup, validate_entry_name};

/// File name of the profiles file in the config dir.
pub const MODELS_FILE: &str = "models.json";

/// Which action front end a profile's model speaks (SPEC A1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ActionProtocol {
    /// OpenAI function calling.
    Tools,
    /// The `do(...)` text grammar (AutoGLM-Phone style).
    #[default]
    Do,
}

impl ActionProtocol {
    /// `tools` or `do`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Do => "do",
        }
    }
}

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// USD per 1 000 000 prompt tokens.
    pub prompt_per_mtok: f64,
    /// USD per 1 000 000 completion tokens.
    pub completion_per_mtok: f64,
}

impl Price {
    /// Cost in USD of one call.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        (prompt_tokens as f64 * self.prompt_per_mtok
            + completion_tokens as f64 * self.completion_per_mtok)
            / 1_000_000.0
    }
}

fn default_timeout_ms() -> u64 {
    120_000
}
fn default_connect_timeout_ms() -> u64 {
    10_000
}
fn default_max_retries() -> u32 {
    3
}

/// One model profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// API root including `/v1`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// `tools` or `do` (default `do`).
    #[serde(default)]
    pub protocol: ActionProtocol,
    /// Coordinate contract (default `auto` = negotiate, SPEC M4).
    #[serde(default)]
    pub coordinate_space: CoordinateSpace,
    /// Screenshot sizing (SPEC M6).
    #[serde(default)]
    pub image: ImagePolicy,
    /// Use SSE streaming (default false).
    #[serde(default)]
    pub stream: bool,
    /// Whole-call timeout per attempt, ms (default 120 000).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Connect timeout, ms (default 10 000).
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// Retries on 429/5xx/connection errors (default 3).
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// OS keyring entry (service `phoneagent`) holding the API key; `None` = no key.
    #[serde(default)]
    pub keyring_entry: Option<String>,
    /// Prices for the token ledger's cost column.
    #[serde(default)]
    pub price: Option<Price>,
    /// Extra top-level request fields (e.g. `{"chat_template_kwargs": {"enable_thinking":
    /// false}}`). Also the "thinking mode" part of the calibration cache key.
    #[serde(default)]
    pub extra_body: Map<String, Value>,
    /// Model family (SPEC M7): `auto` (default: from the model name when unambiguous, else
    /// `generic`), or `generic`, `autoglm`, `ui_tars`, `qwen_vl`. A non-generic family brings
    /// its own prompt, grammar and coordinate convention; `protocol` and `coordinate_space`
    /// then apply only to `generic`.
    #[serde(default, skip_serializing_if = "is_auto_family")]
    pub family: FamilySetting,
    /// Overrides the family's coordinate convention (`relative_0_999`, `relative_0_1000` or
    /// `{"smart_resize": {"factor": 28, "min_pixels": 3136, "max_pixels": 12845056,
    /// "max_ratio": 200}}`), e.g. for a fine-tune whose name does not tell the base model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family_coordinates: Option<FamilyCoords>,
}

fn is_auto_family(f: &FamilySetting) -> bool {
    *f == FamilySetting::Auto
}

impl Profile {
    /// A profile with defaults for everything but URL and model.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            protocol: ActionProtocol::default(),
            coordinate_space: CoordinateSpace::default(),
            image: ImagePolicy::default(),
            stream: false,
            timeout_ms: default_timeout_ms(),
            connect_timeout_ms: default_connect_timeout_ms(),
            max_retries: default_max_retries(),
            keyring_entry: None,
            price: None,
            extra_body: Map::new(),
            family: FamilySetting::Auto,
            family_coordinates: None,
        }
    }

    /// The family in force (SPEC M7) and whether it was detected from the model name (`true`)
    /// or set in the profile.
    pub fn resolved_family(&self) -> (ModelFamily, bool) {
        self.family.resolve(&self.model)
    }

    /// The family adapter the runtime talks through, `None` for `generic` (PhoneAgent's own
    /// prompt, `do`/tools front end and negotiated coordinates apply).
    pub fn family_adapter(&self) -> Option<FamilyAdapter> {
        let (family, _) = self.resolved_family();
        let mut ad = FamilyAdapter::for_model(family, &self.model)?;
        if let Some(c) = self.family_coordinates {
            ad.coords = c;
        }
        Some(ad)
    }

    /// One line for `doctor` / `models`: `qwen_vl (auto from the model name; coordinates
    /// smart_resize)`.
    pub fn family_summary(&self) -> String {
        let (family, detected) = self.resolved_family();
        let how = if detected {
            "auto from the model name"
        } else {
            "set in the profile"
        };
        match self.family_adapter() {
            Some(ad) => format!("{family} ({how}; coordinates {})", ad.coords.as_str()),
            None => format!("{family} ({how})"),
        }
    }

    /// Checks fields; the error names the profile and the field.
    pub fn validate(&self, name: &str) -> Result<()> {
        let url = reqwest::Url::parse(self.base_url.trim()).map_err(|e| {
            LlmError::config(format!(
                "profile {name:?}: base_url {:?} is not a URL ({e}); use e.g. http://127.0.0.1:8000/v1",
                self.base_url
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(LlmError::config(format!(
                "profile {name:?}: base_url {:?} must start with http:// or https://",
                self.base_url
            )));
        }
        if self.model.trim().is_empty() {
            return Err(LlmError::config(format!(
                "profile {name:?}: model is empty"
            )));
        }
        if self.timeout_ms == 0 || self.connect_timeout_ms == 0 {
            return Err(LlmError::config(format!(
                "profile {name:?}: timeout_ms and connect_timeout_ms must be > 0"
            )));
        }
        if let Some(e) = &self.keyring_entry {
            validate_entry_name(e)
                .map_err(|err| LlmError::config(format!("profile {name:?}: {err}")))?;
        }
        self.image
            .validate()
            .map_err(|err| LlmError::config(format!("profile {name:?}: {err}")))
    }

    /// The "thinking mode" part of the calibration cache key: the canonical JSON of
    /// `extra_body` (keys sorted), `"default"` when empty.
    pub fn thinking_mode_key(&self) -> String {
        if self.extra_body.is_empty() {
            "default".into()
        } else {
            Value::Object(self.extra_body.clone()).to_string()
        }
    }

    /// True when the base URL's host is loopback (`localhost`, `127.0.0.0/8`, `::1`).
    pub fn is_local(&self) -> bool {
        reqwest::Url::parse(self.base_url.trim())
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .is_some_and(|h| {
                h == "localhost"
                    || h.trim_matches(|c| c == '[' || c == ']')
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
            })
    }
}

/// A model role (SPEC M2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The planner.
    Actor,
    /// The finish verifier (SPEC F2).
    Verifier,
    /// The reversibility reviewer (SPEC S7).
    SafetyReviewer,
    /// The approve-for-me reviewer (SPEC AR1).
    AutoReviewer,
}

impl Role {
    /// All roles.
    pub const ALL: [Role; 4] = [
        Role::Actor,
        Role::Verifier,
        Role::SafetyReviewer,
        Role::AutoReviewer,
    ];

    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Actor => "actor",
            Self::Verifier => "verifier",
            Self::SafetyReviewer => "safety_reviewer",
            Self::AutoReviewer => "auto_reviewer",
        }
    }

    /// The environment variable naming this role's model (none for the actor, whose model comes
    /// from `PHONE_AGENT_MODEL`).
    pub fn env_var(self) -> Option<&'static str> {
        match self {
            Self::Actor => None,
            Self::Verifier => Some("PHONE_AGENT_VERIFIER_MODEL"),
            Self::SafetyReviewer => Some("PHONE_AGENT_SAFETY_REVIEWER_MODEL"),
            Self::AutoReviewer => Some("PHONE_AGENT_AUTO_REVIEWER_MODEL"),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `roles.<role>` in `models.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleBinding {
    /// Profile name.
    pub model: String,
}

/// The environment variables of SPEC M2, captured once (tests build it from pairs).
#[derive(Debug, Clone, Default)]
pub struct EnvOverrides {
    /// `PHONEAGENT_HOME`.
    pub home: Option<PathBuf>,
    /// `PHONE_AGENT_BASE_URL`.
    pub base_url: Option<String>,
    /// `PHONE_AGENT_MODEL`.
    pub model: Option<String>,
    /// `PHONE_AGENT_API_KEY` (memory only).
    pub api_key: Option<ApiKey>,
    /// `MODEL_COORDINATE_SPACE` (raw; validated in [`ModelsConfig::apply_env`]).
    pub coordinate_space: Option<String>,
    /// `PHONE_AGENT_VERIFIER_MODEL`, `PHONE_AGENT_SAFETY_REVIEWER_MODEL`,
    /// `PHONE_AGENT_AUTO_REVIEWER_MODEL`.
    pub role_models: BTreeMap<Role, String>,
}

impl EnvOverrides {
    /// Reads the process environment. Empty values count as unset.
    pub fn from_env() -> Self {
        Self::from_pairs(std::env::vars())
    }

    /// Builds from `(name, value)` pairs; unrelated names are ignored.
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: Into<String>,
    {
        let mut out = Self::default();
        for (k, v) in pairs {
            let v: String = v.into();
            if v.trim().is_empty() {
                continue;
            }
            match k.as_ref() {
                "PHONEAGENT_HOME" => out.home = Some(PathBuf::from(v)),
                "PHONE_AGENT_BASE_URL" => out.base_url = Some(v.trim().to_string()),
                "PHONE_AGENT_MODEL" => out.model = Some(v.trim().to_string()),
                "PHONE_AGENT_API_KEY" => out.api_key = Some(ApiKey::new(v)),
                "MODEL_COORDINATE_SPACE" => out.coordinate_space = Some(v.trim().to_string()),
                other => {
                    for role in Role::ALL {
                        if role.env_var() == Some(other) {
                            out.role_models.insert(role, v.trim().to_string());
                        }
                    }
                }
            }
        }
        out
    }

    /// The config dir: `PHONEAGENT_HOME`, else the platform config dir.
    pub fn config_dir(&self) -> Result<PathBuf> {
        if let Some(h) = &self.home {
            return Ok(h.clone());
        }
        directories::ProjectDirs::from("", "", "phoneagent")
            .map(|d| d.config_dir().to_path_buf())
            .ok_or_else(|| {
                LlmError::config(
                    "cannot find a config directory (no HOME?): set PHONEAGENT_HOME to a writable directory",
                )
            })
    }
}

/// `models.json` plus applied environment overrides.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsConfig {
    /// Profiles by name.
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
    /// Role bindings.
    #[serde(default)]
    pub roles: BTreeMap<Role, RoleBinding>,
    /// Keys that came from the environment, by profile name. Memory only.
    #[serde(skip)]
    env_keys: BTreeMap<String, ApiKey>,
    /// Where each role binding came from (`models.json roles.verifier.model`, an env var).
    #[serde(skip)]
    sources: BTreeMap<Role, String>,
}

impl ModelsConfig {
    /// Parses `models.json` text; errors name `path`, line and column.
    pub fn from_json(text: &str, path: &Path) -> Result<Self> {
        let mut cfg: ModelsConfig = serde_json::from_str(text).map_err(|e| LlmError::ModelsFile {
            path: path.display().to_string(),
            message: format!(
                "invalid models.json at line {} column {}: {e}. Fix the file (see the profile format in the docs) or delete it to use environment variables only",
                e.line(),
                e.column()
            ),
        })?;
        for (name, p) in &cfg.profiles {
            p.validate(name).map_err(|e| LlmError::ModelsFile {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        }
        for role in cfg.roles.keys() {
            cfg.sources
                .insert(*role, format!("{} roles.{role}.model", path.display()));
        }
        Ok(cfg)
    }

    /// Loads `<dir>/models.json`; a missing file is an empty config.
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join(MODELS_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::from_json(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(LlmError::ModelsFile {
                path: path.display().to_string(),
                message: format!("cannot read it: {e}"),
            }),
        }
    }

    /// Loads from the config dir of `env` and applies `env`'s overrides.
    pub fn load_with_env(env: &EnvOverrides) -> Result<Self> {
        let mut cfg = Self::load(&env.config_dir()?)?;
        cfg.apply_env(env)?;
        Ok(cfg)
    }

    /// Writes `<dir>/models.json` (pretty JSON; env-derived profiles and keys are not written).
    pub fn save(&self, dir: &Path) -> Result<()> {
        let mut out = self.clone();
        out.profiles.retain(|k, _| !k.starts_with("env:"));
        out.roles.retain(|_, b| !b.model.starts_with("env:"));
        let text = serde_json::to_string_pretty(&out)
            .map_err(|e| LlmError::config(format!("cannot serialize models.json: {e}")))?;
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(dir.join(MODELS_FILE), text + "\n"))
            .map_err(|e| LlmError::ModelsFile {
                path: dir.join(MODELS_FILE).display().to_string(),
                message: format!("cannot write it: {e}"),
            })
    }

    /// Applies the environment overrides (see the module docs).
    pub fn apply_env(&mut self, env: &EnvOverrides) -> Result<()> {
        let space = env
            .coordinate_space
            .as_deref()
            .map(|s| {
                s.parse::<CoordinateSpace>()
                    .map_err(|e| LlmError::config(format!("MODEL_COORDINATE_SPACE: {e}")))
            })
            .transpose()?;
        let actor_touched = env.base_url.is_some()
            || env.model.is_some()
            || env.api_key.is_some()
            || space.is_some();
        if actor_touched {
            let mut p = self
                .roles
                .get(&Role::Actor)
                .and_then(|b| self.profiles.get(&b.model))
                .cloned()
                .unwrap_or_else(|| Profile::new("http://localhost:8000/v1", "autoglm-phone-9b"));
            if let Some(u) = &env.base_url {
                p.base_url = u.clone();
            }
            if let Some(m) = &env.model {
                p.model = m.clone();
            }
            if let Some(s) = space {
                p.coordinate_space = s;
            }
            p.validate("env:actor").map_err(|e| {
                LlmError::config(format!(
                    "{e} (from PHONE_AGENT_BASE_URL / PHONE_AGENT_MODEL / MODEL_COORDINATE_SPACE)"
                ))
            })?;
            self.profiles.insert("env:actor".into(), p);
            if let Some(k) = &env.api_key {
                self.env_keys.insert("env:actor".into(), k.clone());
            }
            self.roles.insert(
                Role::Actor,
                RoleBinding {
                    model: "env:actor".into(),
                },
            );
            self.sources.insert(
                Role::Actor,
                "environment (PHONE_AGENT_BASE_URL / PHONE_AGENT_MODEL / PHONE_AGENT_API_KEY / MODEL_COORDINATE_SPACE)".into(),
            );
        }
        for (role, value) in &env.role_models {
            let var = role.env_var().unwrap_or("?");
            let profile_name = if self.profiles.contains_key(value) {
                value.clone()
            } else {
                let actor = self
                    .roles
                    .get(&Role::Actor)
                    .and_then(|b| self.profiles.get(&b.model).map(|p| (b.model.clone(), p)));
                let Some((actor_name, actor_profile)) = actor else {
                    return Err(LlmError::config(format!(
                        "{var}={value:?} is neither a profile in models.json nor usable as a model name, because no actor endpoint is configured to serve it: define a profile or set PHONE_AGENT_BASE_URL"
                    )));
                };
                let mut p = actor_profile.clone();
                p.model = value.clone();
                let name = format!("env:{role}");
                if let Some(k) = self.env_keys.get(&actor_name).cloned() {
                    self.env_keys.insert(name.clone(), k);
                }
                self.profiles.insert(name.clone(), p);
                name
            };
            self.roles.insert(
                *role,
                RoleBinding {
                    model: profile_name,
                },
            );
            self.sources.insert(*role, format!("environment {var}"));
        }
        Ok(())
    }

    /// Binds `role` to a profile name (front ends, tests).
    pub fn set_role(&mut self, role: Role, profile: impl Into<String>) {
        self.roles.insert(
            role,
            RoleBinding {
                model: profile.into(),
            },
        );
        self.sources.insert(role, "set by the application".into());
    }

    /// Resolves one profile by name, with its key (env key, else keyring entry).
    pub fn profile(
        &self,
        name: &str,
        keys: &dyn KeyLookup,
    ) -> Result<(Profile, Option<ApiKey>, String)> {
        let p = self.profiles.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.profiles.keys().map(String::as_str).collect();
            LlmError::config(format!(
                "unknown model profile {name:?}; known profiles: {}. Add it to models.json or fix the role binding",
                if known.is_empty() { "(none)".to_string() } else { known.join(", ") }
            ))
        })?;
        p.validate(name)?;
        if let Some(k) = self.env_keys.get(name) {
            return Ok((p.clone(), Some(k.clone()), "PHONE_AGENT_API_KEY".into()));
        }
        match &p.keyring_entry {
            None => Ok((p.clone(), None, "no API key configured".into())),
            Some(entry) => match keys.lookup(entry)? {
                Some(k) => Ok((p.clone(), Some(k), format!("keyring entry {entry:?}"))),
                None => Err(LlmError::config(format!(
                    "profile {name:?} names keyring entry {entry:?}, but the OS keyring holds no key for it: store the API key under service \"phoneagent\", account {entry:?} (or set PHONE_AGENT_API_KEY for this process), or remove keyring_entry for a local endpoint without auth"
                ))),
            },
        }
    }

    fn direct(&self, role: Role, keys: &dyn KeyLookup) -> Option<Result<ResolvedModel>> {
        let binding = self.roles.get(&role)?;
        let source = self
            .sources
            .get(&role)
            .cloned()
            .unwrap_or_else(|| format!("roles.{role}.model"));
        Some(
            self.profile(&binding.model, keys)
                .map(|(profile, api_key, key_source)| ResolvedModel {
                    role,
                    profile_name: binding.model.clone(),
                    profile,
                    api_key,
                    key_source,
                    source: source.clone(),
                    fallback: None,
                })
                .map_err(|e| LlmError::config(format!("role {role} ({source}): {e}"))),
        )
    }

    /// Resolves `role` with the one-hop fallback described in the module docs. `Err` only for
    /// the actor; other roles come back [`RoleResolution::Unavailable`] instead.
    pub fn resolve(&self, role: Role, keys: &dyn KeyLookup) -> Result<RoleResolution> {
        let reviewer = matches!(role, Role::SafetyReviewer | Role::AutoReviewer);
        let (reason, next) = match self.direct(role, keys) {
            Some(Ok(m)) => return Ok(RoleResolution::Resolved(Box::new(m))),
            Some(Err(e)) if role == Role::Actor => return Err(e),
            None if role == Role::Actor => {
                return Err(LlmError::config(
                    "no actor model configured: set PHONE_AGENT_BASE_URL and PHONE_AGENT_MODEL, or add a profile to models.json and bind it with roles.actor.model",
                ));
            }
            Some(Err(e)) => {
                let next = if reviewer && self.roles.contains_key(&Role::Verifier) {
                    Role::Verifier
                } else {
                    Role::Actor
                };
                (e.to_string(), next)
            }
            None if !reviewer => (format!("no {role} model configured"), Role::Actor),
            None if self.roles.contains_key(&Role::Verifier) => {
                (format!("no {role} model configured"), Role::Verifier)
            }
            None => {
                return Ok(RoleResolution::Unavailable {
                    role,
                    reason: format!(
                        "no {role} model configured ({} / roles.{role}.model) and no verifier model to fall back to; the {role} is not built and its decisions fail closed (it never falls back to the actor)",
                        role.env_var().unwrap_or("")
                    ),
                });
            }
        };
        match self.direct(next, keys) {
            Some(Ok(mut m)) => {
                m.fallback = Some(ModelFallback {
                    role,
                    from_profile: self.roles.get(&role).map(|b| b.model.clone()),
                    to_role: next,
                    to_profile: m.profile_name.clone(),
                    reason,
                });
                m.role = role;
                Ok(RoleResolution::Resolved(Box::new(m)))
            }
            Some(Err(e)) => Ok(RoleResolution::Unavailable {
                role,
                reason: format!("{reason}; fallback to {next} failed too: {e}"),
            }),
            None => Ok(RoleResolution::Unavailable {
                role,
                reason: format!("{reason}; no {next} model configured to fall back to"),
            }),
        }
    }
}

/// One fallback along the role chain; the runtime records it as a `model_fallback` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFallback {
    /// The role that needed a model.
    pub role: Role,
    /// The profile it was bound to, when any.
    pub from_profile: Option<String>,
    /// The role whose model is used instead.
    pub to_role: Role,
    /// The profile used instead.
    pub to_profile: String,
    /// Why the role's own model was not used.
    pub reason: String,
}

/// A role bound to a usable profile (and key).
#[derive(Debug, Clone)]
pub struct ResolvedModel {
    /// The role asked for.
    pub role: Role,
    /// Profile name in use (`env:actor` for environment-derived ones).
    pub profile_name: String,
    /// The profile.
    pub profile: Profile,
    /// The key (never logged; `Debug` redacts).
    pub api_key: Option<ApiKey>,
    /// Where the key came from (no secret).
    pub key_source: String,
    /// Where the binding came from.
    pub source: String,
    /// Set when this is a fallback.
    pub fallback: Option<ModelFallback>,
}

impl ResolvedModel {
    /// The client configuration for this model.
    pub fn client_config(&self) -> ClientConfig {
        let p = &self.profile;
        ClientConfig {
            base_url: p.base_url.clone(),
            model: p.model.clone(),
            api_key: self.api_key.clone(),
            key_source: self.key_source.clone(),
            stream: p.stream,
            connect_timeout_ms: p.connect_timeout_ms,
            timeout_ms: p.timeout_ms,
            retry: RetryPolicy {
                max_retries: p.max_retries,
                ..RetryPolicy::default()
            },
            extra_body: p.extra_body.clone(),
        }
    }

    /// A ready HTTP client.
    pub fn client(&self) -> Result<ChatClient> {
        ChatClient::new(self.client_config())
    }
}

/// Outcome of [`ModelsConfig::resolve`].
#[derive(Debug, Clone)]
pub enum RoleResolution {
    /// A model to use (possibly a fallback: see [`ResolvedModel::fallback`]).
    Resolved(Box<ResolvedModel>),
    /// No usable model; reviewers fail closed, the verifier fails open (SPEC S7, F2).
    Unavailable {
        /// The role.
        role: Role,
        /// Why, for the audit event.
        reason: String,
    },
}

impl RoleResolution {
    /// The resolved model, if any.
    pub fn model(&self) -> Option<&ResolvedModel> {
        match self {
            Self::Resolved(m) => Some(m),
            Self::Unavailable { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Profiles in these tests name no keyring entry, so lookups never happen.
    struct NoKeys;
    impl KeyLookup for NoKeys {
        fn lookup(&self, entry: &str) -> Result<Option<ApiKey>> {
            panic!("unexpected keyring lookup of {entry}")
        }
    }

    fn cfg(json: &str) -> ModelsConfig {
        ModelsConfig::from_json(json, Path::new("/cfg/models.json")).unwrap()
    }

    const TWO: &str = r#"{
      "profiles": {
        "local": {"base_url": "http://127.0.0.1:8000/v1", "model": "autoglm-phone-9b", "coordinate_space": "relative_0_999"},
        "judge": {"base_url": "http://127.0.0.1:8001/v1", "model": "qwen-vl", "protocol": "tools",
                  "price": {"prompt_per_mtok": 1.0, "completion_per_mtok": 2.0}}
      },
      "roles": {"actor": {"model": "local"}, "verifier": {"model": "judge"}}
    }"#;

    #[test]
    fn parse_and_resolve_direct() {
        let c = cfg(TWO);
        let r = c.resolve(Role::Actor, &NoKeys).unwrap();
        let m = r.model().unwrap();
        assert_eq!(m.profile_name, "local");
        assert!(m.fallback.is_none());
        assert_eq!(m.profile.protocol, ActionProtocol::Do);
        assert_eq!(m.profile.coordinate_space, CoordinateSpace::Relative0999);
        assert!(m.profile.is_local());
        let v = c.resolve(Role::Verifier, &NoKeys).unwrap();
        assert_eq!(v.model().unwrap().profile.protocol, ActionProtocol::Tools);
    }

    #[test]
    fn reviewer_falls_back_to_verifier_not_actor() {
        let c = cfg(TWO);
        let r = c.resolve(Role::SafetyReviewer, &NoKeys).unwrap();
        let m = r.model().unwrap();
        assert_eq!(m.profile_name, "judge");
        let fb = m.fallback.as_ref().unwrap();
        assert_eq!(
            (fb.role, fb.to_role),
            (Role::SafetyReviewer, Role::Verifier)
        );
        assert!(fb.reason.contains("no safety_reviewer model configured"));

        // Without a verifier, the reviewer is unavailable (never the actor).
        let mut c2 = c.clone();
        c2.roles.remove(&Role::Verifier);
        match c2.resolve(Role::SafetyReviewer, &NoKeys).unwrap() {
            RoleResolution::Unavailable { reason, .. } => {
                assert!(reason.contains("never falls back to the actor"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        // Verifier → actor when not configured.
        let v = c2.resolve(Role::Verifier, &NoKeys).unwrap();
        let fb = v.model().unwrap().fallback.clone().unwrap();
        assert_eq!(fb.to_role, Role::Actor);
    }

    #[test]
    fn broken_binding_hops_once() {
        let mut c = cfg(TWO);
        c.set_role(Role::AutoReviewer, "nope");
        let r = c.resolve(Role::AutoReviewer, &NoKeys).unwrap();
        let fb = r.model().unwrap().fallback.clone().unwrap();
        assert_eq!(fb.to_role, Role::Verifier);
        assert!(
            fb.reason.contains("unknown model profile \"nope\""),
            "{}",
            fb.reason
        );
        assert!(
            fb.reason.contains("known profiles: judge, local"),
            "{}",
            fb.reason
        );
        // Broken verifier too: still one hop only → unavailable with both reasons.
        c.set_role(Role::Verifier, "gone");
        match c.resolve(Role::AutoReviewer, &NoKeys).unwrap() {
            RoleResolution::Unavailable { reason, .. } => {
                assert!(
                    reason.contains("\"nope\"") && reason.contains("\"gone\""),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
        // Broken actor is an error.
        c.set_role(Role::Actor, "missing");
        let e = c.resolve(Role::Actor, &NoKeys).unwrap_err();
        assert_eq!(e.code(), phoneagent_protocol::ErrorCode::ModelConfig);
    }

    #[test]
    fn json_errors_have_line_and_column() {
        let e = ModelsConfig::from_json("{\n  \"profiles\": {,}\n}", Path::new("/x/models.json"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/x/models.json") && e.contains("line 2 column"),
            "{e}"
        );
        let e = ModelsConfig::from_json(
            r#"{"profiles": {"a": {"base_url": "http://h/v1", "model": "m", "modle": 1}}}"#,
            Path::new("/x/models.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown field `modle`"), "{e}");
        let e = ModelsConfig::from_json(
            r#"{"profiles": {"a": {"base_url": "ftp://h", "model": "m"}}}"#,
            Path::new("/x/models.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("profile \"a\"") && e.contains("http://"), "{e}");
        let e =
            ModelsConfig::from_json(r#"{"roles": {"planner": {"model": "a"}}}"#, Path::new("m"))
                .unwrap_err()
                .to_string();
        assert!(e.contains("planner"), "{e}");
    }

    #[test]
    fn env_overrides() {
        let mut c = cfg(TWO);
        let env = EnvOverrides::from_pairs([
            ("PHONE_AGENT_MODEL", "autoglm-phone-9b-multilingual"),
            ("PHONE_AGENT_API_KEY", "sk-env-123"),
            ("MODEL_COORDINATE_SPACE", "image_pixels"),
            ("PHONE_AGENT_SAFETY_REVIEWER_MODEL", "small-judge"),
            ("PHONE_AGENT_VERIFIER_MODEL", "local"),
            ("UNRELATED", "x"),
        ]);
        c.apply_env(&env).unwrap();
        let a = c.resolve(Role::Actor, &NoKeys).unwrap();
        let a = a.model().unwrap();
        assert_eq!(a.profile_name, "env:actor");
        assert_eq!(a.profile.model, "autoglm-phone-9b-multilingual");
        assert_eq!(a.profile.base_url, "http://127.0.0.1:8000/v1");
        assert_eq!(a.profile.coordinate_space, CoordinateSpace::ImagePixels);
        assert_eq!(a.api_key.as_ref().unwrap().expose(), "sk-env-123");
        assert_eq!(a.key_source, "PHONE_AGENT_API_KEY");
        // The file's profile is untouched.
        assert_eq!(c.profiles["local"].model, "autoglm-phone-9b");
        let s = c.resolve(Role::SafetyReviewer, &NoKeys).unwrap();
        let s = s.model().unwrap();
        assert_eq!(s.profile_name, "env:safety_reviewer");
        assert_eq!(s.profile.model, "small-judge");
        assert_eq!(s.key_source, "PHONE_AGENT_API_KEY");
        assert!(s.source.contains("PHONE_AGENT_SAFETY_REVIEWER_MODEL"));
        let v = c.resolve(Role::Verifier, &NoKeys).unwrap();
        assert_eq!(v.model().unwrap().profile_name, "local");

        // The env key and env profiles are never written to the file.
        let dir = tempfile::tempdir().unwrap();
        c.save(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(MODELS_FILE)).unwrap();
        assert!(
            !text.contains("sk-env-123") && !text.contains("env:"),
            "{text}"
        );
        let back = ModelsConfig::load(dir.path()).unwrap();
        assert_eq!(back.profiles.len(), 2);

        let e = ModelsConfig::default()
            .apply_env(&EnvOverrides::from_pairs([(
                "MODEL_COORDINATE_SPACE",
                "pixels",
            )]))
            .unwrap_err();
        assert!(e.to_string().contains("MODEL_COORDINATE_SPACE"), "{e}");
    }

    #[test]
    fn env_only_and_missing() {
        let mut c = ModelsConfig::default();
        let e = c.resolve(Role::Actor, &NoKeys).unwrap_err();
        assert!(e.to_string().contains("PHONE_AGENT_BASE_URL"), "{e}");
        c.apply_env(&EnvOverrides::from_pairs([(
            "PHONE_AGENT_BASE_URL",
            "http://10.0.0.2:8000/v1",
        )]))
        .unwrap();
        let a = c.resolve(Role::Actor, &NoKeys).unwrap();
        let a = a.model().unwrap();
        assert_eq!(a.profile.model, "autoglm-phone-9b");
        assert!(!a.profile.is_local());
        assert!(a.client().is_ok());
        // Missing file = empty config.
        let dir = tempfile::tempdir().unwrap();
        assert!(ModelsConfig::load(dir.path()).unwrap().profiles.is_empty());
        let env = EnvOverrides::from_pairs([("PHONEAGENT_HOME", dir.path().to_str().unwrap())]);
        assert_eq!(env.config_dir().unwrap(), dir.path());
    }

    #[test]
    fn price_cost() {
        let p = Price {
            prompt_per_mtok: 2.0,
            completion_per_mtok: 8.0,
        };
        assert!((p.cost(1_000_000, 500_000) - 6.0).abs() < 1e-9);
    }
}
