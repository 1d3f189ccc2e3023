//! Settings' model helpers (SPEC M7, M8; issue #15, issue #14 item 3): the provider presets and
//! families the pickers offer, the family a profile talks in, the connection test (a thin
//! adapter over `phoneagent_llm::connection_test`, the one `phoneagent doctor --deep` uses) and
//! whether the actor profile can start a task (else the UI opens the first-start setup).

use phoneagent_llm::KeyLookup;
use phoneagent_llm::config::ResolvedModel;
use phoneagent_llm::connection_test::{self, ConnectionReport, ConnectionTestOptions, StepStatus};
use phoneagent_llm::presets::PRESETS;
use phoneagent_llm::{ApiKey, KeyStore, Role};
use phoneagent_protocol::family::ModelFamily;
use tokio_util::sync::CancellationToken;

use crate::dto::{
    ConnectionStepView, ConnectionTestView, FamilyOption, FamilyView, ModelCatalog,
    ProviderPresetView, SetupStatus,
};
use crate::error::{AppError, AppResult};
use crate::settings::{AppSettings, ModelProfile};

/// Every provider preset and model family, from the llm and protocol crates.
pub fn catalog() -> ModelCatalog {
    ModelCatalog {
        presets: PRESETS
            .iter()
            .map(|p| ProviderPresetView {
                id: p.id.into(),
                name: p.name.into(),
                base_url: p.base_url.into(),
                models: p.models.iter().map(|m| (*m).to_string()).collect(),
                family: p.family.as_str().into(),
                protocol: p.protocol.as_str().into(),
                image_max_long_side: p.image.max_long_side,
                image_multiple_of: p.image.multiple_of.unwrap_or(0),
                key_entry: p.keyring_entry.unwrap_or_default().into(),
                hint: p.hint.into(),
            })
            .collect(),
        families: ModelFamily::ALL
            .iter()
            .map(|f| FamilyOption {
                id: f.as_str().into(),
                about: f.describe().into(),
            })
            .collect(),
    }
}

/// The family `profile` talks in: as set, or detected from the model name for `auto`.
///
/// # Errors
/// `invalid_input` for an unknown family name.
pub fn family_of(profile: &ModelProfile) -> AppResult<FamilyView> {
    let mut p = phoneagent_llm::Profile::new("http://unused/v1", profile.model.trim());
    p.family = profile.family_setting()?;
    let (family, detected) = p.resolved_family();
    Ok(FamilyView {
        family: family.as_str().into(),
        detected,
        coordinates: p
            .family_adapter()
            .map(|a| a.coords.as_str().to_string())
            .unwrap_or_default(),
    })
}

/// The report as the webview sees it.
pub fn report_view(r: &ConnectionReport) -> ConnectionTestView {
    ConnectionTestView {
        ok: r.ok(),
        family: r.family.clone(),
        steps: r
            .steps
            .iter()
            .map(|s| ConnectionStepView {
                id: s.id.as_str().into(),
                status: match s.status {
                    StepStatus::Ok => "ok",
                    StepStatus::Failed => "failed",
                    StepStatus::Skipped => "skipped",
                }
                .into(),
                detail: s.detail.clone(),
                fix: s.fix.clone(),
                sample: s.sample.clone(),
            })
            .collect(),
    }
}

async fn lookup_key(keys: &KeyStore, entry: &str) -> AppResult<Option<ApiKey>> {
    let keys = keys.clone();
    let entry = entry.to_string();
    Ok(tokio::task::spawn_blocking(move || keys.lookup(&entry))
        .await
        .map_err(|e| AppError::internal(format!("keyring task failed: {e}")))??)
}

/// Tests `profile` (as edited, saved or not) with its key from the OS keyring: the shared
/// connection test on synthetic images, calibrating `auto` coordinates (SPEC M4). Never
/// touches the phone.
///
/// # Errors
/// `invalid_input` when the profile itself is invalid (the message names the field); keyring
/// errors.
pub async fn test_connection(
    keys: &KeyStore,
    profile: &ModelProfile,
) -> AppResult<ConnectionTestView> {
    let p = profile.to_profile()?;
    let mut opts = ConnectionTestOptions::deep(profile.name.clone(), Role::Actor);
    let api_key = match &p.keyring_entry {
        Some(entry) => {
            let k = lookup_key(keys, entry).await?;
            if k.is_none() {
                opts.missing_key_entry = Some(entry.clone());
            }
            k
        }
        None => None,
    };
    let resolved = ResolvedModel {
        role: Role::Actor,
        profile_name: profile.name.clone(),
        key_source: match &p.keyring_entry {
            Some(e) => format!("keyring entry {e:?}"),
            None => "no API key configured".into(),
        },
        profile: p,
        api_key,
        source: "app settings".into(),
        fallback: None,
    };
    let report = connection_test::run(
        &resolved.profile,
        resolved.client_config(),
        &opts,
        &CancellationToken::new(),
    )
    .await;
    Ok(report_view(&report))
}

/// Whether the profile `name` (the actor's when empty) can start a task: it exists, is valid,
/// and holds its key when it names a keyring entry (issue #14 item 3).
pub async fn setup_status(keys: &KeyStore, settings: &AppSettings, name: &str) -> SetupStatus {
    let name = if name.is_empty() {
        settings.roles.actor.clone()
    } else {
        name.to_string()
    };
    let status = |usable: bool, reason: &str, message: String| SetupStatus {
        profile: name.clone(),
        usable,
        reason: reason.into(),
        message,
    };
    let Some(p) = settings.profile(&name) else {
        return status(
            false,
            "no_profile",
            format!("no model profile named {name:?}"),
        );
    };
    if p.base_url.trim().is_empty() || p.model.trim().is_empty() {
        return status(
            false,
            "no_endpoint",
            format!("profile {name:?} has no base URL or model"),
        );
    }
    if let Err(e) = p.to_profile() {
        return status(false, "invalid", e.message);
    }
    if !p.key_entry.is_empty() {
        match lookup_key(keys, &p.key_entry).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                return status(
                    false,
                    "no_key",
                    format!(
                        "profile {name:?} names keyring entry {:?}, but no key is stored for it",
                        p.key_entry
                    ),
                );
            }
            Err(e) => return status(false, "no_key", e.message),
        }
    }
    status(true, "", String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_comes_from_the_presets_table_and_the_family_registry() {
        let c = catalog();
        assert_eq!(c.presets.len(), PRESETS.len());
        let ollama = c.presets.iter().find(|p| p.id == "ollama").unwrap();
        assert!(ollama.base_url.contains("11434"), "{ollama:?}");
        assert!(
            c.presets
                .iter()
                .any(|p| p.id == "openrouter" && !p.key_entry.is_empty())
        );
        assert_eq!(
            c.families.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(),
            ["generic", "autoglm", "ui_tars", "qwen_vl"]
        );
    }

    #[test]
    fn the_family_is_detected_from_the_model_name_unless_set() {
        let mut p = AppSettings::default().profiles.remove(0);
        p.model = "UI-TARS-1.5-7B".into();
        let f = family_of(&p).unwrap();
        assert_eq!((f.family.as_str(), f.detected), ("ui_tars", true));
        assert_eq!(f.coordinates, "smart_resize");
        p.family = "qwen_vl".into();
        let f = family_of(&p).unwrap();
        assert_eq!((f.family.as_str(), f.detected), ("qwen_vl", false));
        p.model = "gpt-4.1".into();
        p.family = "auto".into();
        assert_eq!(family_of(&p).unwrap().family, "generic");
        p.family = "llava".into();
        assert!(family_of(&p).is_err());
    }
}
