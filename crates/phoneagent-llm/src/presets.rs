//! Provider presets (SPEC M8): the common ways to reach the models PhoneAgent supports, as
//! data — base URL, example model ids, model family, action protocol and screenshot policy.
//!
//! A preset fills a new [`Profile`] ([`ProviderPreset::profile`]); the API key never is part
//! of it: presets that need one name the OS-keyring entry the key goes to
//! ([`ProviderPreset::keyring_entry`]), and `phoneagent models add` stores it there.
//! Model ids are examples: providers rename and retire models, so check the provider's list.

use phoneagent_protocol::CoordinateSpace;
use phoneagent_protocol::family::{FamilySetting, ModelFamily};
use serde::Serialize;

use crate::config::{ActionProtocol, Profile};
use crate::error::{LlmError, Result};
use crate::image::{ImageFormat, ImagePolicy};

/// One provider preset (SPEC M8).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ProviderPreset {
    /// Stable id (`vllm`, `openrouter`, …), what `--preset` takes.
    pub id: &'static str,
    /// Name for people.
    pub name: &'static str,
    /// API root including the version path (`/v1`, `/api/paas/v4`, `/api/v3`).
    pub base_url: &'static str,
    /// Example model ids, the first is the default.
    pub models: &'static [&'static str],
    /// The family set on the profile (`auto` = from the model name, SPEC M7).
    pub family: FamilySetting,
    /// Front end for the `generic` family (`tools` for function-calling APIs).
    pub protocol: ActionProtocol,
    /// Screenshot policy: long side, pixel budget (px²) and side multiple (28 for Qwen-VL
    /// based servers, so the server's smart-resize keeps the image as sent).
    pub image: ImagePolicy,
    /// The keyring entry for its API key; `None` for local servers without a key.
    pub keyring_entry: Option<&'static str>,
    /// One line on how to point PhoneAgent at it.
    pub hint: &'static str,
}

const DEFAULT_IMAGE: ImagePolicy = ImagePolicy {
    max_long_side: 1568,
    max_pixels: 1_003_520,
    format: ImageFormat::Jpeg,
    quality: 85,
    multiple_of: None,
};

/// Qwen-VL processors resize to multiples of 28 px: send that size so nothing is resized again.
const QWEN_IMAGE: ImagePolicy = ImagePolicy {
    max_long_side: 1568,
    max_pixels: 1_003_520,
    format: ImageFormat::Jpeg,
    quality: 85,
    multiple_of: Some(28),
};

/// Every preset, in a stable order.
pub const PRESETS: &[ProviderPreset] = &[
    ProviderPreset {
        id: "vllm",
        name: "Local vLLM server",
        base_url: "http://127.0.0.1:8000/v1",
        models: &[
            "autoglm-phone-9b",
            "ByteDance-Seed/UI-TARS-1.5-7B",
            "Qwen/Qwen2.5-VL-7B-Instruct",
            "Qwen/Qwen3-VL-8B-Instruct",
        ],
        family: FamilySetting::Auto,
        protocol: ActionProtocol::Do,
        image: QWEN_IMAGE,
        keyring_entry: None,
        hint: "vllm serve <model> --port 8000; the served model name picks the family",
    },
    ProviderPreset {
        id: "sglang",
        name: "Local SGLang server",
        base_url: "http://127.0.0.1:30000/v1",
        models: &["autoglm-phone-9b", "Qwen/Qwen2.5-VL-7B-Instruct"],
        family: FamilySetting::Auto,
        protocol: ActionProtocol::Do,
        image: QWEN_IMAGE,
        keyring_entry: None,
        hint: "python -m sglang.launch_server --model-path <model> (port 30000)",
    },
    ProviderPreset {
        id: "ollama",
        name: "Ollama",
        base_url: "http://127.0.0.1:11434/v1",
        models: &["qwen2.5vl:7b", "qwen3-vl:8b"],
        family: FamilySetting::Fixed(ModelFamily::QwenVl),
        protocol: ActionProtocol::Do,
        image: QWEN_IMAGE,
        keyring_entry: None,
        hint: "ollama pull qwen2.5vl:7b; Ollama's tags do not follow the Qwen names, so the family is set",
    },
    ProviderPreset {
        id: "lmstudio",
        name: "LM Studio",
        base_url: "http://127.0.0.1:1234/v1",
        models: &["qwen2.5-vl-7b-instruct", "ui-tars-1.5-7b"],
        family: FamilySetting::Auto,
        protocol: ActionProtocol::Do,
        image: QWEN_IMAGE,
        keyring_entry: None,
        hint: "load the model in LM Studio and start its local server (port 1234)",
    },
    ProviderPreset {
        id: "openrouter",
        name: "OpenRouter",
        base_url: "https://openrouter.ai/api/v1",
        models: &[
            "qwen/qwen2.5-vl-72b-instruct",
            "bytedance/ui-tars-1.5-7b",
            "openai/gpt-4.1",
            "z-ai/glm-4.5v",
        ],
        family: FamilySetting::Auto,
        protocol: ActionProtocol::Tools,
        image: DEFAULT_IMAGE,
        keyring_entry: Some("openrouter"),
        hint: "an OpenRouter key; the model id after the org/ prefix picks the family",
    },
    ProviderPreset {
        id: "openai",
        name: "OpenAI",
        base_url: "https://api.openai.com/v1",
        models: &["gpt-4.1", "gpt-5", "gpt-4.1-mini"],
        family: FamilySetting::Fixed(ModelFamily::Generic),
        protocol: ActionProtocol::Tools,
        image: DEFAULT_IMAGE,
        keyring_entry: Some("openai"),
        hint: "an OpenAI API key; PhoneAgent's own prompt and tool calls",
    },
    ProviderPreset {
        id: "bigmodel",
        name: "Zhipu BigModel (open.bigmodel.cn)",
        base_url: "https://open.bigmodel.cn/api/paas/v4",
        models: &["autoglm-phone", "glm-4.5v"],
        family: FamilySetting::Auto,
        protocol: ActionProtocol::Do,
        image: DEFAULT_IMAGE,
        keyring_entry: Some("bigmodel"),
        hint: "a BigModel API key; autoglm-phone speaks the AutoGLM family",
    },
    ProviderPreset {
        id: "zai",
        name: "z.ai",
        base_url: "https://api.z.ai/api/paas/v4",
        models: &["autoglm-phone-multilingual", "glm-4.5v"],
        family: FamilySetting::Auto,
        protocol: ActionProtocol::Do,
        image: DEFAULT_IMAGE,
        keyring_entry: Some("zai"),
        hint: "a z.ai API key; the multilingual AutoGLM-Phone",
    },
    ProviderPreset {
        id: "modelscope",
        name: "ModelScope API-Inference",
        base_url: "https://api-inference.modelscope.cn/v1",
        models: &["ZhipuAI/AutoGLM-Phone-9B", "Qwen/Qwen2.5-VL-72B-Instruct"],
        family: FamilySetting::Auto,
        protocol: ActionProtocol::Do,
        image: DEFAULT_IMAGE,
        keyring_entry: Some("modelscope"),
        hint: "a ModelScope access token",
    },
    ProviderPreset {
        id: "ark",
        name: "Volcengine Ark (Doubao UI-TARS)",
        base_url: "https://ark.cn-beijing.volces.com/api/v3",
        models: &["doubao-1-5-ui-tars-250428"],
        family: FamilySetting::Fixed(ModelFamily::UiTars),
        protocol: ActionProtocol::Do,
        image: DEFAULT_IMAGE,
        keyring_entry: Some("ark"),
        hint: "an Ark API key and an endpoint id or model id; Doubao UI-TARS answers in 0..1000",
    },
];

/// The preset with this id (case-insensitive).
///
/// # Errors
/// [`LlmError::Config`] naming the id and listing the known ones.
pub fn preset(id: &str) -> Result<&'static ProviderPreset> {
    PRESETS
        .iter()
        .find(|p| p.id.eq_ignore_ascii_case(id.trim()))
        .ok_or_else(|| {
            LlmError::config(format!(
                "unknown provider preset {id:?}: use one of {} (phoneagent models presets lists them)",
                PRESETS.iter().map(|p| p.id).collect::<Vec<_>>().join(", ")
            ))
        })
}

impl ProviderPreset {
    /// A profile from this preset for `model` (the preset's first example when `None`):
    /// base URL, family, protocol, image policy and keyring entry filled in; the coordinate
    /// space stays `auto` (a family fixes its own, `generic` negotiates, SPEC M4).
    pub fn profile(&self, model: Option<&str>) -> Profile {
        let mut p = Profile::new(
            self.base_url,
            model.unwrap_or(self.models.first().copied().unwrap_or_default()),
        );
        p.family = self.family;
        p.protocol = self.protocol;
        p.coordinate_space = CoordinateSpace::Auto;
        p.image = self.image;
        p.keyring_entry = self.keyring_entry.map(str::to_string);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_makes_a_valid_profile_with_the_expected_family() {
        for p in PRESETS {
            let prof = p.profile(None);
            prof.validate(p.id).unwrap();
            assert!(prof.image.validate().is_ok());
        }
        let fam = |id, m| preset(id).unwrap().profile(Some(m)).resolved_family().0;
        assert_eq!(fam("vllm", "autoglm-phone-9b"), ModelFamily::Autoglm);
        assert_eq!(
            fam("openrouter", "bytedance/ui-tars-1.5-7b"),
            ModelFamily::UiTars
        );
        assert_eq!(fam("ollama", "qwen2.5vl:7b"), ModelFamily::QwenVl);
        assert_eq!(fam("bigmodel", "autoglm-phone"), ModelFamily::Autoglm);
        assert_eq!(fam("ark", "ep-20250101-abc"), ModelFamily::UiTars);
        assert_eq!(fam("openai", "gpt-4.1"), ModelFamily::Generic);
        let e = preset("nope").unwrap_err().to_string();
        assert!(e.contains("vllm") && e.contains("ark"), "{e}");
    }

    #[test]
    fn models_json_family_fields_parse_and_bad_names_are_explained() {
        use crate::config::ModelsConfig;
        use phoneagent_protocol::family::FamilyCoords;
        let path = std::path::Path::new("models.json");
        let cfg = ModelsConfig::from_json(
            r#"{"profiles": {"ft": {"base_url": "http://127.0.0.1:8000/v1", "model": "my-finetune",
                "family": "ui_tars", "family_coordinates": "relative_0_1000"},
                "plain": {"base_url": "http://127.0.0.1:8000/v1", "model": "Qwen3-VL-8B-Instruct"}}}"#,
            path,
        )
        .unwrap();
        let ft = &cfg.profiles["ft"];
        assert_eq!(ft.resolved_family(), (ModelFamily::UiTars, false));
        assert_eq!(
            ft.family_adapter().unwrap().coords,
            FamilyCoords::Relative1000
        );
        assert!(ft.family_summary().contains("set in the profile"));
        let plain = &cfg.profiles["plain"];
        assert_eq!(plain.resolved_family(), (ModelFamily::QwenVl, true));
        assert_eq!(
            plain.family_adapter().unwrap().coords,
            FamilyCoords::Relative999
        );
        // `auto` is not written back.
        assert!(!serde_json::to_string(plain).unwrap().contains("family"));
        let e = ModelsConfig::from_json(
            r#"{"profiles": {"x": {"base_url": "http://h/v1", "model": "m", "family": "llava"}}}"#,
            path,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("generic, autoglm, ui_tars or qwen_vl"), "{e}");
    }
}
