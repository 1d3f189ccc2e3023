//! Approve-for-me configuration (SPEC AR2–AR5, AR7, AR8): routing policy, gate options,
//! breaker, budgets, override and cache, as one serde struct loadable from JSON or TOML.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use phoneagent_protocol::{ApprovalPolicy, ReviewRisk};
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::AutoReviewError;

/// File names looked up in the config dir by [`AutoReviewConfig::load_from_dir`], in order.
pub const POLICY_FILE_NAMES: [&str; 2] = ["approval-policy.toml", "approval-policy.json"];

/// What happens when an allow exceeds `max_auto_allow_risk` (SPEC AR3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum OnRiskExceeded {
    /// Hand the request to the human (default).
    #[default]
    Delegate,
    /// Deny it.
    Deny,
    /// Allow it anyway (the critical and high-risk gates still apply).
    Allow,
}

/// Fallback for uncertain verdicts, reviewer failures and exhausted budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum Fallback {
    /// Hand the request to the human (default).
    #[default]
    Delegate,
    /// Deny it.
    Deny,
}

/// What a tripped circuit breaker does (SPEC AR4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum BreakerAction {
    /// End the run after the denial that tripped it is returned to the model (default).
    #[default]
    Stop,
    /// Send every later `ai` request of the run to the human.
    Delegate,
    /// Deny every later `ai` request of the run without a review.
    Deny,
}

/// Which text a rule's regex is matched against (SPEC AR2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum RuleField {
    /// The model's reason for the action (default).
    #[default]
    Reason,
    /// The tool name (`tap`, `type`, `long_press`, …).
    #[serde(alias = "tool_name", alias = "toolName")]
    Tool,
    /// The arguments as compact JSON (unredacted: rules run locally and are never sent).
    Arguments,
}

impl RuleField {
    fn as_str(self) -> &'static str {
        match self {
            Self::Reason => "reason",
            Self::Tool => "tool",
            Self::Arguments => "arguments",
        }
    }
}

/// One ordered routing rule: the first rule whose `pattern` matches decides the policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct PolicyRule {
    /// A regex (Rust `regex` syntax; `(?i)` for case-insensitive).
    pub pattern: String,
    /// The policy when it matches.
    pub policy: ApprovalPolicy,
    /// What it is matched against (default `reason`).
    #[serde(default)]
    pub field: RuleField,
    /// A note shown in the ledger's policy source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Per-run review budget (SPEC AR4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct ReviewBudget {
    /// Reviewer calls allowed per run (default 20).
    pub max_reviews: u32,
    /// When they are used up (default delegate).
    pub on_exhausted: Fallback,
}

impl Default for ReviewBudget {
    fn default() -> Self {
        Self {
            max_reviews: 20,
            on_exhausted: Fallback::Delegate,
        }
    }
}

/// Circuit breaker (SPEC AR4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct BreakerConfig {
    /// Consecutive reviewer denials that trip it (default 3; 0 turns the rule off).
    pub consecutive_denials: u32,
    /// Denials within the window that trip it (default 10; 0 turns the rule off).
    pub window_denials: u32,
    /// Window size in reviews (default 50).
    pub window_size: u32,
    /// What it does (default stop).
    pub action: BreakerAction,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            consecutive_denials: 3,
            window_denials: 10,
            window_size: 50,
            action: BreakerAction::Stop,
        }
    }
}

/// One-time override (SPEC AR7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct OverrideConfig {
    /// How long a grant waits to be used, ms (default 300000 = 5 min; 0 = no expiry).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub ttl_ms: u64,
    /// How many recent denials a grant can point at (default 10).
    pub max_pending: usize,
}

impl Default for OverrideConfig {
    fn default() -> Self {
        Self {
            ttl_ms: 300_000,
            max_pending: 10,
        }
    }
}

/// Verdict cache (SPEC AR8): off by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct CacheConfig {
    /// On/off (default off).
    pub enabled: bool,
    /// Entry lifetime, ms (default 60000).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub ttl_ms: u64,
    /// Size bound; the oldest entry is evicted beyond it (default 256).
    pub max_entries: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            ttl_ms: 60_000,
            max_entries: 256,
        }
    }
}

/// The whole approve-for-me configuration. Every field has a default; a file only names what it
/// changes. Unknown keys are errors (a typo must not silently fall back to a default).
///
/// TOML example (`approval-policy.toml` in the config dir, or `--approval-policy FILE`):
/// ```toml
/// default_policy = "ai"
/// max_auto_allow_risk = "medium"
/// on_risk_exceeded = "delegate"
/// [tools]
/// launch_app = "human"
/// [[rules]]
/// pattern = "(?i)删除|delete"
/// policy = "never"
/// note = "no deletions unattended"
/// [circuit_breaker]
/// consecutive_denials = 2
/// action = "delegate"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct AutoReviewConfig {
    /// Policy when no rule and no tool entry matches (default `ai`).
    pub default_policy: ApprovalPolicy,
    /// Per-tool policy table, by tool name.
    pub tools: BTreeMap<String, ApprovalPolicy>,
    /// Ordered regex rules, evaluated before the tool table.
    pub rules: Vec<PolicyRule>,
    /// Highest risk an allow may have to run without the human (default `high`; `high` still
    /// needs medium/high authorization and a bounded scope; `critical` is always denied).
    pub max_auto_allow_risk: ReviewRisk,
    /// Allow above `max_auto_allow_risk` (default delegate).
    pub on_risk_exceeded: OnRiskExceeded,
    /// Reviewer says uncertain, or the evidence is too thin for an allow (default delegate).
    pub on_uncertain: Fallback,
    /// Reviewer timeout, error, truncated or invalid answer, or no reviewer (default delegate).
    pub on_reviewer_failure: Fallback,
    /// Hard timeout of one reviewer call, ms (default 120000).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub timeout_ms: u64,
    /// Output token cap of the reviewer (default 600).
    pub max_tokens: u32,
    /// Replaces the built-in review policy text. The untrusted-evidence rule and the answer
    /// format are appended in code and cannot be removed by it.
    pub policy_text: Option<String>,
    /// Deployment guidance appended after the policy text.
    pub guidance: Option<String>,
    /// Max chars of one argument value (default 4000).
    pub argument_max_chars: usize,
    /// Max chars of the whole argument document (default 16000; 0 = no limit).
    pub arguments_budget_chars: usize,
    /// Recent steps shown as evidence (default 6).
    pub context_steps: usize,
    /// Max chars of the recent-steps evidence (default 6000).
    pub context_max_chars: usize,
    /// Review budget.
    pub budget: ReviewBudget,
    /// Reviewer failures allowed per run before requests go straight to `on_reviewer_failure`
    /// (default 10).
    pub max_failures: u32,
    /// Circuit breaker.
    pub circuit_breaker: BreakerConfig,
    /// One-time override.
    #[serde(rename = "override")]
    pub override_grant: OverrideConfig,
    /// Verdict cache.
    pub verdict_cache: CacheConfig,
    /// Feed denial reasons back to the actor in the tool result (default true).
    pub feed_reason_to_model: bool,
    /// Also feed allow reasons back (default true).
    pub record_allowed_verdicts: bool,
    /// Max chars of a reason or suggestion (default 2000).
    pub reason_max_chars: usize,
}

impl Default for AutoReviewConfig {
    fn default() -> Self {
        Self {
            default_policy: ApprovalPolicy::Ai,
            tools: BTreeMap::new(),
            rules: Vec::new(),
            max_auto_allow_risk: ReviewRisk::High,
            on_risk_exceeded: OnRiskExceeded::Delegate,
            on_uncertain: Fallback::Delegate,
            on_reviewer_failure: Fallback::Delegate,
            timeout_ms: 120_000,
            max_tokens: 600,
            policy_text: None,
            guidance: None,
            argument_max_chars: 4000,
            arguments_budget_chars: 16_000,
            context_steps: 6,
            context_max_chars: 6000,
            budget: ReviewBudget::default(),
            max_failures: 10,
            circuit_breaker: BreakerConfig::default(),
            override_grant: OverrideConfig::default(),
            verdict_cache: CacheConfig::default(),
            feed_reason_to_model: true,
            record_allowed_verdicts: true,
            reason_max_chars: 2000,
        }
    }
}

impl AutoReviewConfig {
    /// Parse a JSON document.
    ///
    /// # Errors
    /// [`AutoReviewError::Config`] naming `origin` and the serde message (unknown key, bad value).
    pub fn from_json(text: &str, origin: &Path) -> Result<Self, AutoReviewError> {
        let cfg: Self = serde_json::from_str(text).map_err(|e| AutoReviewError::Config {
            path: origin.to_path_buf(),
            message: e.to_string(),
        })?;
        cfg.validate(origin)?;
        Ok(cfg)
    }

    /// Parse a TOML document.
    ///
    /// # Errors
    /// [`AutoReviewError::Config`] naming `origin` and the TOML message.
    pub fn from_toml(text: &str, origin: &Path) -> Result<Self, AutoReviewError> {
        let cfg: Self = toml::from_str(text).map_err(|e| AutoReviewError::Config {
            path: origin.to_path_buf(),
            message: e.to_string(),
        })?;
        cfg.validate(origin)?;
        Ok(cfg)
    }

    /// Load a file: `.toml` as TOML, anything else as JSON.
    ///
    /// # Errors
    /// [`AutoReviewError::Config`] when it cannot be read or parsed, or a rule's regex is invalid.
    pub fn load(path: &Path) -> Result<Self, AutoReviewError> {
        let text = std::fs::read_to_string(path).map_err(|e| AutoReviewError::Config {
            path: path.to_path_buf(),
            message: format!("cannot read the approval policy file: {e}"),
        })?;
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
        {
            Self::from_toml(&text, path)
        } else {
            Self::from_json(&text, path)
        }
    }

    /// Load `approval-policy.toml` or `approval-policy.json` from `dir` (the config dir);
    /// defaults when neither exists. Returns the file used.
    ///
    /// # Errors
    /// As [`AutoReviewConfig::load`] for the file found.
    pub fn load_from_dir(dir: &Path) -> Result<(Self, Option<PathBuf>), AutoReviewError> {
        for name in POLICY_FILE_NAMES {
            let p = dir.join(name);
            if p.is_file() {
                return Ok((Self::load(&p)?, Some(p)));
            }
        }
        Ok((Self::default(), None))
    }

    /// Check what serde cannot: every rule's regex compiles, the breaker window is consistent.
    /// `origin` names where the configuration came from in the error (a file, or a label such as
    /// `app settings`).
    ///
    /// # Errors
    /// [`AutoReviewError::Config`] naming `origin` and the problem.
    pub fn validate(&self, origin: &Path) -> Result<(), AutoReviewError> {
        CompiledPolicy::new(self).map_err(|e| match e {
            AutoReviewError::Rule {
                index,
                pattern,
                message,
            } => AutoReviewError::Config {
                path: origin.to_path_buf(),
                message: format!("rule {index} has an invalid pattern {pattern:?}: {message}"),
            },
            other => other,
        })?;
        // A tool entry that can never match (a typo, or a tool that never asks for approval,
        // such as `swipe`) would silently leave that tool on the default policy.
        if let Some(bad) = self
            .tools
            .keys()
            .find(|t| !phoneagent_protocol::action::GATED_TOOLS.contains(&t.as_str()))
        {
            return Err(AutoReviewError::Config {
                path: origin.to_path_buf(),
                message: format!(
                    "tools.{bad}: no approval request is ever about {bad:?}; the tools that can ask are {}",
                    phoneagent_protocol::action::GATED_TOOLS.join(", ")
                ),
            });
        }
        if self.circuit_breaker.window_denials > self.circuit_breaker.window_size
            && self.circuit_breaker.window_denials > 0
        {
            return Err(AutoReviewError::Config {
                path: origin.to_path_buf(),
                message: format!(
                    "circuit_breaker.window_denials ({}) is larger than window_size ({}): it could never trip",
                    self.circuit_breaker.window_denials, self.circuit_breaker.window_size
                ),
            });
        }
        Ok(())
    }
}

/// The routing policy with its regexes compiled (SPEC AR2).
#[derive(Debug, Clone)]
pub struct CompiledPolicy {
    rules: Vec<(Regex, PolicyRule)>,
    tools: BTreeMap<String, ApprovalPolicy>,
    default: ApprovalPolicy,
}

/// Result of routing one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    /// The policy.
    pub policy: ApprovalPolicy,
    /// `rule:<n>` (1-based, with ` (<note>)` and the field), `tool:<name>` or `default`.
    pub source: String,
}

impl CompiledPolicy {
    /// Compile the rules of `cfg`.
    ///
    /// # Errors
    /// [`AutoReviewError::Rule`] naming the first invalid pattern (1-based index).
    pub fn new(cfg: &AutoReviewConfig) -> Result<Self, AutoReviewError> {
        let mut rules = Vec::with_capacity(cfg.rules.len());
        for (i, r) in cfg.rules.iter().enumerate() {
            let re = regex::RegexBuilder::new(&r.pattern)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| AutoReviewError::Rule {
                    index: i + 1,
                    pattern: r.pattern.clone(),
                    message: e.to_string(),
                })?;
            rules.push((re, r.clone()));
        }
        Ok(Self {
            rules,
            tools: cfg.tools.clone(),
            default: cfg.default_policy,
        })
    }

    /// The tool table and default of `cfg`, ignoring its rules (infallible).
    pub fn without_rules(cfg: &AutoReviewConfig) -> Self {
        Self {
            rules: Vec::new(),
            tools: cfg.tools.clone(),
            default: cfg.default_policy,
        }
    }

    /// Route a request: ordered rules on `reason` / `tool` / `arguments` (compact JSON) → the
    /// per-tool table → the default.
    pub fn route(&self, tool: &str, reason: &str, arguments: &str) -> Routed {
        for (i, (re, rule)) in self.rules.iter().enumerate() {
            let text = match rule.field {
                RuleField::Reason => reason,
                RuleField::Tool => tool,
                RuleField::Arguments => arguments,
            };
            if re.is_match(text) {
                let note = rule
                    .note
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                return Routed {
                    policy: rule.policy,
                    source: format!("rule:{}:{}{note}", i + 1, rule.field.as_str()),
                };
            }
        }
        if let Some(p) = self.tools.get(tool) {
            return Routed {
                policy: *p,
                source: format!("tool:{tool}"),
            };
        }
        Routed {
            policy: self.default,
            source: "default".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_json_load_with_defaults_and_reject_typos() {
        let t = r#"
default_policy = "human"
max_auto_allow_risk = "medium"
[tools]
launch_app = "never"
[[rules]]
pattern = "(?i)delete|删除"
policy = "never"
note = "no deletions"
[[rules]]
pattern = "^type$"
field = "tool"
policy = "ai"
[circuit_breaker]
consecutive_denials = 2
action = "delegate"
[override]
ttl_ms = 1000
"#;
        let c = AutoReviewConfig::from_toml(t, Path::new("p.toml")).unwrap();
        assert_eq!(c.default_policy, ApprovalPolicy::Human);
        assert_eq!(c.circuit_breaker.consecutive_denials, 2);
        assert_eq!(c.circuit_breaker.window_size, 50, "default kept");
        assert_eq!(c.override_grant.ttl_ms, 1000);
        assert!(!c.verdict_cache.enabled);
        let p = CompiledPolicy::new(&c).unwrap();
        assert_eq!(
            p.route("tap", "Delete the account", "{}").policy,
            ApprovalPolicy::Never
        );
        assert_eq!(
            p.route("tap", "Delete the account", "{}").source,
            "rule:1:reason (no deletions)"
        );
        assert_eq!(p.route("type", "fill in", "{}").source, "rule:2:tool");
        assert_eq!(
            p.route("launch_app", "x", "{}").policy,
            ApprovalPolicy::Never
        );
        let typo = AutoReviewConfig::from_toml("[tools]\nswipe = \"never\"\n", Path::new("p.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            typo.contains("tools.swipe") && typo.contains("type_text"),
            "{typo}"
        );
        assert_eq!(p.route("tap", "x", "{}").source, "default");

        let j = r#"{"default_policy": "never", "rules": [{"pattern": "x", "policy": "ai", "field": "arguments"}]}"#;
        let c = AutoReviewConfig::from_json(j, Path::new("p.json")).unwrap();
        let p = CompiledPolicy::new(&c).unwrap();
        assert_eq!(
            p.route("tap", "", r#"{"text":"x"}"#).policy,
            ApprovalPolicy::Ai
        );
        assert_eq!(p.route("tap", "", "{}").policy, ApprovalPolicy::Never);

        let e =
            AutoReviewConfig::from_json(r#"{"max_auto_alow_risk": "low"}"#, Path::new("p.json"))
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("p.json") && e.contains("max_auto_alow_risk"),
            "{e}"
        );
        let e = AutoReviewConfig::from_json(
            r#"{"rules": [{"pattern": "(", "policy": "never"}]}"#,
            Path::new("p.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("rule 1") && e.contains("invalid pattern"), "{e}");
    }

    #[test]
    fn load_from_dir_finds_the_file_or_defaults() {
        let d = tempfile::tempdir().unwrap();
        let (c, p) = AutoReviewConfig::load_from_dir(d.path()).unwrap();
        assert_eq!(c, AutoReviewConfig::default());
        assert!(p.is_none());
        std::fs::write(
            d.path().join("approval-policy.json"),
            r#"{"on_reviewer_failure": "deny"}"#,
        )
        .unwrap();
        let (c, p) = AutoReviewConfig::load_from_dir(d.path()).unwrap();
        assert_eq!(c.on_reviewer_failure, Fallback::Deny);
        assert!(p.unwrap().ends_with("approval-policy.json"));
    }
}
