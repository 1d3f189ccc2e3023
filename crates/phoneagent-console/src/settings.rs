//! App settings (SPEC U5): model profiles per role, default access mode, finish-verify mode and
//! budgets, persisted in SQLite through the store's settings table under [`SETTINGS_KEY`].
//! API keys are not settings: they live in the OS keyring under each profile's `key_entry`
//! (SPEC P5); [`AppSettings`] never carries a key, only the entry name.

use phoneagent_llm::{ActionProtocol, ModelsConfig, Price, Profile, Role};
use phoneagent_protocol::family::FamilySetting;
use phoneagent_protocol::{AccessMode, CoordinateSpace};
use phoneagent_review::auto::AutoReviewConfig;
use phoneagent_runtime::FinishVerifyMode;
use phoneagent_store::Store;
use serde::{Deserialize, Serialize};
use std::path::Path;
use ts_rs::TS;

use crate::error::{AppError, AppResult};

/// Key of the settings row in the store.
pub const SETTINGS_KEY: &str = "app.settings";

/// Key of the approve-for-me policy (SPEC AR2–AR7) in the store's settings table.
pub const APPROVAL_POLICY_KEY: &str = "app.approval_policy";

/// The approve-for-me policy the Settings page edits (SPEC AR2–AR7, issue 7): routing rules,
/// the per-tool table, the default policy and the gate options, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ApprovalPolicySettings {
    /// The whole configuration (every option; the page edits the common ones and keeps the
    /// rest as loaded).
    pub config: AutoReviewConfig,
    /// `settings` (saved from the app), the path of `approval-policy.toml`/`.json` next to the
    /// database (used until the app saves a policy), or `defaults`.
    pub source: String,
    /// The tools an approval request can be about, i.e. the keys the per-tool table accepts
    /// (`phoneagent_protocol::action::GATED_TOOLS`).
    pub tools: Vec<String>,
}

fn gated_tools() -> Vec<String> {
    phoneagent_protocol::action::GATED_TOOLS
        .iter()
        .map(|t| (*t).to_string())
        .collect()
}

impl ApprovalPolicySettings {
    /// The policy runs use: the one saved in the app's settings, else
    /// `approval-policy.toml`/`.json` in `dir` (next to the database), else the defaults.
    ///
    /// # Errors
    /// `invalid_input` when the file is invalid (the message names the file and the problem);
    /// store errors.
    pub fn load(store: &Store, dir: &Path) -> AppResult<Self> {
        if let Some(config) = store.setting::<AutoReviewConfig>(APPROVAL_POLICY_KEY)? {
            return Ok(Self {
                config,
                source: "settings".into(),
                tools: gated_tools(),
            });
        }
        let (config, file) =
            AutoReviewConfig::load_from_dir(dir).map_err(|e| AppError::invalid(e.to_string()))?;
        Ok(Self {
            config,
            source: file.map_or_else(|| "defaults".into(), |f| f.display().to_string()),
            tools: gated_tools(),
        })
    }

    /// What the Settings page edits: as [`Self::load`], but an invalid policy file does not
    /// lock the user out of fixing it: the defaults are shown, and `source` says what is wrong
    /// with the file (saving from the app replaces it; runs refuse the invalid file until then).
    ///
    /// # Errors
    /// Store errors.
    pub fn load_for_editing(store: &Store, dir: &Path) -> AppResult<Self> {
        match Self::load(store, dir) {
            Err(e) if e.code == "invalid_input" => Ok(Self {
                config: AutoReviewConfig::default(),
                source: format!("defaults (the file is invalid: {})", e.message),
                tools: gated_tools(),
            }),
            other => other,
        }
    }

    /// Validate (every rule's regex compiles, the breaker window is consistent) and save in the
    /// store; from then on runs use it instead of a policy file.
    ///
    /// # Errors
    /// `invalid_input` naming the rule or option that is wrong; store errors.
    pub fn save(store: &Store, config: &AutoReviewConfig) -> AppResult<()> {
        config
            .validate(Path::new("app settings"))
            .map_err(|e| AppError::invalid(e.to_string()))?;
        store.set_setting(APPROVAL_POLICY_KEY, config)?;
        Ok(())
    }
}

/// One model endpoint the user configured (SPEC M1, M4, M6, U5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ModelProfile {
    /// Unique name, 1..=64 chars of `A-Za-z0-9._-`.
    pub name: String,
    /// API root including `/v1`, e.g. `http://127.0.0.1:8000/v1`.
    pub base_url: String,
    /// Model id sent in requests.
    pub model: String,
    /// Action protocol: `do` or `tools` (SPEC A1).
    pub protocol: String,
    /// Coordinate space: `relative_0_999`, `image_pixels`, `display_pixels` or `auto` (SPEC M4).
    pub coordinate_space: String,
    /// Long side in px of the screenshot sent to the model (SPEC M6), 256..=4096.
    pub image_max_long_side: u32,
    /// Side multiple in px the sent screenshot is cut to (28 for Qwen-VL servers, SPEC M6,
    /// M8); 0 = none. Older saved settings have none.
    #[serde(default)]
    pub image_multiple_of: u32,
    /// Model family (SPEC M7): `auto` (detected from the model name) or `generic`, `autoglm`,
    /// `ui_tars`, `qwen_vl`. Older saved settings are `auto`.
    #[serde(default = "auto_family")]
    pub family: String,
    /// OS keyring entry that holds this profile's API key (service `phoneagent`); empty = no key.
    pub key_entry: String,
    /// USD per million prompt tokens (0 = unknown).
    pub prompt_price_per_mtok: f64,
    /// USD per million completion tokens (0 = unknown).
    pub completion_price_per_mtok: f64,
}

fn auto_family() -> String {
    "auto".into()
}

impl ModelProfile {
    /// The family setting as the protocol type.
    ///
    /// # Errors
    /// `invalid_input` naming the accepted families.
    pub fn family_setting(&self) -> AppResult<FamilySetting> {
        self.family
            .parse::<FamilySetting>()
            .map_err(|e| AppError::invalid(format!("profile {}: model family: {e}", self.name)))
    }

    /// The protocol as the runtime type.
    pub fn action_protocol(&self) -> AppResult<ActionProtocol> {
        match self.protocol.as_str() {
            "do" => Ok(ActionProtocol::Do),
            "tools" => Ok(ActionProtocol::Tools),
            other => Err(AppError::invalid(format!(
                "profile {}: unknown protocol {other:?}: use do or tools",
                self.name
            ))),
        }
    }

    /// The model layer's profile (SPEC M1-M6): what the runtime and the client use.
    pub fn to_profile(&self) -> AppResult<Profile> {
        let mut p = Profile::new(self.base_url.trim(), self.model.trim());
        p.protocol = self.action_protocol()?;
        p.coordinate_space = self.space()?;
        p.image.max_long_side = self.image_max_long_side;
        p.image.multiple_of = (self.image_multiple_of > 1).then_some(self.image_multiple_of);
        p.family = self.family_setting()?;
        p.keyring_entry = (!self.key_entry.is_empty()).then(|| self.key_entry.clone());
        if self.prompt_price_per_mtok > 0.0 || self.completion_price_per_mtok > 0.0 {
            p.price = Some(Price {
                prompt_per_mtok: self.prompt_price_per_mtok,
                completion_per_mtok: self.completion_price_per_mtok,
            });
        }
        p.validate(&self.name)?;
        Ok(p)
    }

    /// The coordinate space as the protocol type.
    pub fn space(&self) -> AppResult<CoordinateSpace> {
        parse_space(&self.coordinate_space)
            .ok_or_else(|| AppError::invalid(format!(
                "profile {}: unknown coordinate space {:?}: use relative_0_999, image_pixels, display_pixels or auto",
                self.name, self.coordinate_space
            )))
    }
}

/// Parse a coordinate space name.
pub fn parse_space(s: &str) -> Option<CoordinateSpace> {
    match s {
        "relative_0_999" => Some(CoordinateSpace::Relative0999),
        "image_pixels" => Some(CoordinateSpace::ImagePixels),
        "display_pixels" => Some(CoordinateSpace::DisplayPixels),
        "auto" => Some(CoordinateSpace::Auto),
        _ => None,
    }
}

/// Which profile serves which role (SPEC M2). Empty string = not configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, Default)]
#[ts(export)]
pub struct RoleProfiles {
    /// The planner.
    pub actor: String,
    /// The finish verifier (F2); empty → falls back to the actor.
    pub verifier: String,
    /// The reversibility reviewer (S7); empty → falls back to the verifier, then the actor.
    pub safety_reviewer: String,
    /// The approve-for-me reviewer (AR1); empty → falls back like the safety reviewer.
    pub auto_reviewer: String,
}

/// Everything on the Settings page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct AppSettings {
    /// Model profiles.
    pub profiles: Vec<ModelProfile>,
    /// Role → profile name.
    pub roles: RoleProfiles,
    /// Default access mode: `off`, `wary`, `hard`, `reviewer` (SPEC S1).
    pub default_mode: String,
    /// Finish verifier: `auto`, `always`, `off` (SPEC F2).
    pub finish_verify: String,
    /// Default step limit (R7), 1..=500.
    pub max_steps: u32,
    /// Wall-time limit in seconds (R7), 10..=86400.
    #[ts(type = "number")]
    pub max_duration_secs: u64,
    /// Run token budget, all roles (M3); 0 = none.
    #[ts(type = "number")]
    pub token_budget: u64,
    /// Show desktop notifications for approvals (U4).
    pub notifications: bool,
    /// Language of receipts: `en` or `zh`.
    pub lang: String,
    /// How the screen is captured and input sent (SPEC D8, D9): `auto` (scrcpy's stream and
    /// control socket when `scrcpy-server` is installed, else Android's `screenrecord` stream,
    /// else raw `screencap`), `scrcpy`, `screenrecord`, `raw` or `png`. Runs and the mirror
    /// share one stream per phone.
    #[serde(default = "default_capture")]
    pub capture: String,
}

fn default_capture() -> String {
    "auto".into()
}

impl Default for AppSettings {
    fn default() -> Self {
        Self {
            profiles: vec![ModelProfile {
                name: "local".into(),
                base_url: "http://127.0.0.1:8000/v1".into(),
                model: "autoglm-phone-9b".into(),
                protocol: "do".into(),
                coordinate_space: "relative_0_999".into(),
                image_max_long_side: 1568,
                image_multiple_of: 0,
                family: auto_family(),
                key_entry: "local".into(),
                prompt_price_per_mtok: 0.0,
                completion_price_per_mtok: 0.0,
            }],
            roles: RoleProfiles {
                actor: "local".into(),
                ..RoleProfiles::default()
            },
            default_mode: "wary".into(),
            finish_verify: "auto".into(),
            max_steps: 30,
            max_duration_secs: 900,
            token_budget: 0,
            notifications: true,
            lang: "en".into(),
            capture: default_capture(),
        }
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

impl AppSettings {
    /// Check every field; the error names the field and the allowed values.
    pub fn validate(&self) -> AppResult<()> {
        if self.profiles.is_empty() {
            return Err(AppError::invalid("add at least one model profile"));
        }
        let mut names = std::collections::HashSet::new();
        for p in &self.profiles {
            if !valid_name(&p.name) {
                return Err(AppError::invalid(format!(
                    "profile name {:?}: use 1-64 letters, digits, '.', '_' or '-'",
                    p.name
                )));
            }
            if !names.insert(p.name.as_str()) {
                return Err(AppError::invalid(format!(
                    "two profiles are named {:?}: rename one",
                    p.name
                )));
            }
            let url = p.base_url.trim();
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(AppError::invalid(format!(
                    "profile {}: base URL must start with http:// or https:// (e.g. http://127.0.0.1:8000/v1)",
                    p.name
                )));
            }
            if p.model.trim().is_empty() {
                return Err(AppError::invalid(format!(
                    "profile {}: enter the model name",
                    p.name
                )));
            }
            p.to_profile()?;
            if !(256..=4096).contains(&p.image_max_long_side) {
                return Err(AppError::invalid(format!(
                    "profile {}: image size must be between 256 and 4096 px",
                    p.name
                )));
            }
            if !p.key_entry.is_empty() {
                phoneagent_llm::keystore::validate_entry_name(&p.key_entry)?;
            }
            if p.prompt_price_per_mtok < 0.0 || p.completion_price_per_mtok < 0.0 {
                return Err(AppError::invalid(format!(
                    "profile {}: prices cannot be negative",
                    p.name
                )));
            }
        }
        for (role, name) in [
            ("actor", &self.roles.actor),
            ("verifier", &self.roles.verifier),
            ("safety_reviewer", &self.roles.safety_reviewer),
            ("auto_reviewer", &self.roles.auto_reviewer),
        ] {
            if (role == "actor" || !name.is_empty()) && !names.contains(name.as_str()) {
                return Err(AppError::invalid(format!(
                    "role {role}: no profile named {name:?}; pick one of the profiles"
                )));
            }
        }
        parse_mode(&self.default_mode)?;
        self.finish_verify_mode()?;
        if !(1..=500).contains(&self.max_steps) {
            return Err(AppError::invalid("max steps must be between 1 and 500"));
        }
        if !(10..=86_400).contains(&self.max_duration_secs) {
            return Err(AppError::invalid(
                "max duration must be between 10 s and 24 h",
            ));
        }
        if self
            .capture
            .parse::<phoneagent_device::ScreenshotMode>()
            .is_err()
        {
            return Err(AppError::invalid(format!(
                "screen capture {:?} is not one of {}",
                self.capture,
                phoneagent_device::ScreenshotMode::NAMES.join(", ")
            )));
        }
        if !matches!(self.lang.as_str(), "en" | "zh") {
            return Err(AppError::invalid("language must be en or zh"));
        }
        Ok(())
    }

    /// The finish-verify mode as the runtime type.
    pub fn finish_verify_mode(&self) -> AppResult<FinishVerifyMode> {
        self.finish_verify.parse().map_err(AppError::invalid)
    }

    /// The model layer's configuration: every profile, and the roles bound as in Settings with
    /// the actor bound to `actor` (the run's choice). Role resolution and its one-hop fallback
    /// chain (SPEC M2) are the llm crate's.
    pub fn models_config(&self, actor: &str) -> AppResult<ModelsConfig> {
        let mut cfg = ModelsConfig::default();
        for p in &self.profiles {
            cfg.profiles.insert(p.name.clone(), p.to_profile()?);
        }
        cfg.set_role(Role::Actor, actor);
        for (role, name) in [
            (Role::Verifier, &self.roles.verifier),
            (Role::SafetyReviewer, &self.roles.safety_reviewer),
            (Role::AutoReviewer, &self.roles.auto_reviewer),
        ] {
            if !name.is_empty() {
                cfg.set_role(role, name.clone());
            }
        }
        Ok(cfg)
    }

    /// Profile by name.
    pub fn profile(&self, name: &str) -> Option<&ModelProfile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    /// Load from the store, or the defaults when none were saved.
    pub fn load(store: &Store) -> AppResult<Self> {
        Ok(store.setting::<Self>(SETTINGS_KEY)?.unwrap_or_default())
    }

    /// Validate and save.
    pub fn save(&self, store: &Store) -> AppResult<()> {
        self.validate()?;
        store.set_setting(SETTINGS_KEY, self)?;
        Ok(())
    }
}

/// Parse an access mode the picker offers (SPEC S1, AR1): `off`, `wary`, `hard`, `reviewer`,
/// `approve-for-me`.
///
/// # Errors
/// `invalid_input` naming the accepted values.
pub fn parse_mode(s: &str) -> AppResult<AccessMode> {
    s.parse::<AccessMode>().map_err(AppError::invalid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use phoneagent_protocol::ApprovalPolicy;

    #[test]
    fn defaults_are_valid_and_round_trip_through_sqlite() {
        let store = Store::open_in_memory().unwrap();
        assert_eq!(AppSettings::load(&store).unwrap(), AppSettings::default());
        let mut s = AppSettings {
            max_steps: 12,
            ..AppSettings::default()
        };
        s.profiles[0].coordinate_space = "image_pixels".into();
        s.save(&store).unwrap();
        assert_eq!(AppSettings::load(&store).unwrap(), s);
    }

    #[test]
    fn invalid_settings_name_the_field() {
        let mut s = AppSettings::default();
        s.profiles[0].base_url = "ftp://x".into();
        assert!(s.validate().unwrap_err().message.contains("base URL"));
        let mut s = AppSettings::default();
        s.roles.verifier = "nope".into();
        assert!(s.validate().unwrap_err().message.contains("verifier"));
        let mut s = AppSettings::default();
        s.profiles[0].key_entry = "bad name".into();
        assert!(s.validate().is_err());
        assert_eq!(
            parse_mode("approve-for-me").unwrap(),
            AccessMode::ApproveForMe
        );
        assert!(parse_mode("yolo").is_err());
        assert_eq!(parse_mode("hard").unwrap(), AccessMode::Hard);
    }

    #[test]
    fn approval_policy_comes_from_settings_then_the_file_then_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in_memory().unwrap();
        let p = ApprovalPolicySettings::load(&store, dir.path()).unwrap();
        assert_eq!(p.source, "defaults");
        assert_eq!(
            p.tools,
            ["tap", "double_tap", "long_press", "type_text", "launch_app"],
            "the editor offers exactly the tools that can ask"
        );
        assert_eq!(p.config, AutoReviewConfig::default());
        std::fs::write(
            dir.path().join("approval-policy.toml"),
            "default_policy = \"human\"\n",
        )
        .unwrap();
        let p = ApprovalPolicySettings::load(&store, dir.path()).unwrap();
        assert!(p.source.ends_with("approval-policy.toml"), "{}", p.source);
        assert_eq!(p.config.default_policy, ApprovalPolicy::Human);
        let mut cfg = p.config;
        cfg.tools.insert("type_text".into(), ApprovalPolicy::Never);
        ApprovalPolicySettings::save(&store, &cfg).unwrap();
        let p = ApprovalPolicySettings::load(&store, dir.path()).unwrap();
        assert_eq!(p.source, "settings");
        assert_eq!(p.config, cfg);
    }

    #[test]
    fn an_invalid_policy_file_still_opens_the_editor_and_names_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in_memory().unwrap();
        std::fs::write(
            dir.path().join("approval-policy.toml"),
            "defualt_policy = 1\n",
        )
        .unwrap();
        assert!(ApprovalPolicySettings::load(&store, dir.path()).is_err());
        let p = ApprovalPolicySettings::load_for_editing(&store, dir.path()).unwrap();
        assert_eq!(p.config, AutoReviewConfig::default());
        assert!(p.source.contains("defualt_policy"), "{}", p.source);
    }

    #[test]
    fn an_invalid_rule_is_refused_with_its_number_and_nothing_is_saved() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in_memory().unwrap();
        let mut cfg = AutoReviewConfig::default();
        cfg.rules.push(phoneagent_review::auto::PolicyRule {
            pattern: "(unclosed".into(),
            policy: ApprovalPolicy::Never,
            field: phoneagent_review::auto::RuleField::Reason,
            note: None,
        });
        let err = ApprovalPolicySettings::save(&store, &cfg).unwrap_err();
        assert_eq!(err.code, "invalid_input");
        assert!(err.message.contains("rule 1"), "{}", err.message);
        assert!(err.message.contains("app settings"), "{}", err.message);
        assert_eq!(
            ApprovalPolicySettings::load(&store, dir.path())
                .unwrap()
                .source,
            "defaults"
        );
    }
}
