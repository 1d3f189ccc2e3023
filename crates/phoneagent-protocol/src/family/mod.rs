//! Model families as data-driven adapters (SPEC M7, with A1–A6, S5–S6, F1).
//!
//! GUI-agent models were each trained on their own prompt, action grammar and coordinate
//! convention. A [`FamilyAdapter`] holds, for one [`ModelFamily`]:
//!
//! * the **system prompt** the family expects ([`FamilyAdapter::system_prompt`]), written in
//!   our own words with the family's action vocabulary and output layout;
//! * a **parser** into PhoneAgent's one [`Action`] ([`FamilyAdapter::parse`]), over a closed
//!   grammar with the same strictness and precise [`ParseError`]s as the `do` parser (A2);
//! * its **coordinate convention** ([`FamilyCoords`], smart-resize math included), converted
//!   into the frozen space the mapper takes;
//! * its way of **flagging sensitive actions** (AutoGLM's `Tap` with `message=`);
//! * how an action is **rendered back** in history ([`FamilyAdapter::render`]) and how a gate
//!   receipt tells the model to **re-send with confirmation** in its own grammar
//!   ([`FamilyAdapter::confirm_instruction`]).
//!
//! Families without a confirmation argument of their own get one extra keyword our parsers
//! accept (`confirm_irreversible=True` for UI-TARS, `"confirm_irreversible": true` in Qwen's
//! `mobile_use` arguments) and a `confirm` flag on their finish call for the two-stage finish.
//! A parser never sets `confirm_irreversible` or `confirm` unless the model wrote it; model text
//! (thoughts) goes to `reason`, which can only raise a risk tier.
//!
//! | family | grammar | coordinates |
//! |---|---|---|
//! | `generic` | PhoneAgent's `do(...)` / tool calls | negotiated (M4) |
//! | `autoglm` | `<think>…</think><answer>do(...)</answer>` | `0..=999` |
//! | `ui_tars` | `Thought: … Action: click(point='<point>x y</point>')` | smart-resize px (1.5) or `0..=1000` |
//! | `qwen_vl` | `<tool_call>{"name": "mobile_use", …}</tool_call>` | smart-resize px (2.5-VL) or `0..=999` (3-VL) |

mod autoglm;
mod coords;
mod prompt;
mod qwen;
mod uitars;

use serde::{Deserialize, Serialize};

pub use coords::{FamilyCoords, SmartResize, smart_resize};
pub use prompt::FamilyPromptInput;

use crate::action::{Action, ActionKind};
use crate::geometry::{CoordinateSpace, ModelPoint};
use crate::options::ParseOptions;
use crate::parse_error::{ParseError, ParseErrorKind as K, ParseResult};

/// A family of GUI-agent models sharing a trained prompt, grammar and coordinate convention
/// (SPEC M7). Serialized as `generic`, `autoglm`, `ui_tars`, `qwen_vl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ModelFamily {
    /// Any tool-calling or instruction-following model: PhoneAgent's own prompt, `do` grammar
    /// or tool calls, coordinate space negotiated (M4).
    #[default]
    Generic,
    /// AutoGLM-Phone (Zhipu / z.ai): `do(...)` / `finish(...)`, `0..=999`.
    Autoglm,
    /// UI-TARS 1.0 / 1.5 / 2 and Doubao UI-TARS (ByteDance): `Thought:` / `Action:`.
    UiTars,
    /// Qwen2.5-VL / Qwen3-VL `mobile_use` and models built on it (MAI-UI, GUI-Owl).
    QwenVl,
}

impl ModelFamily {
    /// Every family, in a stable order.
    pub const ALL: [Self; 4] = [Self::Generic, Self::Autoglm, Self::UiTars, Self::QwenVl];

    /// The stable name: `generic`, `autoglm`, `ui_tars`, `qwen_vl`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Generic => "generic",
            Self::Autoglm => "autoglm",
            Self::UiTars => "ui_tars",
            Self::QwenVl => "qwen_vl",
        }
    }

    /// One line for people: which models the family covers.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Generic => {
                "general tool-calling models (GPT, Claude, Gemini, GLM-V, …): PhoneAgent's own prompt"
            }
            Self::Autoglm => "AutoGLM-Phone: do(...)/finish(...) with 0..999 coordinates",
            Self::UiTars => {
                "UI-TARS 1.0/1.5/2, Doubao UI-TARS: Thought/Action with click(point=...)"
            }
            Self::QwenVl => "Qwen2.5-VL/Qwen3-VL mobile_use, MAI-UI, GUI-Owl: <tool_call> JSON",
        }
    }

    /// The family a model name unambiguously belongs to (case-insensitive), `None` when the
    /// name matches no pattern: `autoglm-phone*`, `ui-tars*`, `*doubao*ui-tars*`, `qwen2.5-vl*`,
    /// `qwen3-vl*`, `mai-ui*`, `gui-owl*` (an `org/` prefix is ignored; `_` counts as `-`).
    pub fn detect(model: &str) -> Option<Self> {
        let n = normalize_model(model);
        if n.starts_with("autoglm-phone") {
            Some(Self::Autoglm)
        } else if n.starts_with("ui-tars") || (n.contains("doubao") && n.contains("ui-tars")) {
            Some(Self::UiTars)
        } else if ["qwen2.5-vl", "qwen3-vl", "mai-ui", "gui-owl"]
            .iter()
            .any(|p| n.starts_with(p))
        {
            Some(Self::QwenVl)
        } else {
            None
        }
    }

    /// The family's coordinate convention for `model` (SPEC M7): AutoGLM `0..=999`; UI-TARS-1.5
    /// (`ui-tars-1.5*`) smart-resize px (min 100·28², max 16 384·28²), other UI-TARS and Doubao
    /// UI-TARS `0..=1000`;
    /// Qwen3-VL and MAI-UI `0..=999`, Qwen2.5-VL / GUI-Owl smart-resize px. `None` for
    /// `generic` (negotiated instead).
    pub fn default_coords(self, model: &str) -> Option<FamilyCoords> {
        let n = normalize_model(model);
        match self {
            Self::Generic => None,
            Self::Autoglm => Some(FamilyCoords::Relative999),
            Self::UiTars if n.starts_with("ui-tars-1.5") => {
                Some(FamilyCoords::SmartResize(SmartResize::UI_TARS_15))
            }
            Self::UiTars => Some(FamilyCoords::Relative1000),
            Self::QwenVl if n.starts_with("qwen3") || n.starts_with("mai-ui") => {
                Some(FamilyCoords::Relative999)
            }
            Self::QwenVl => Some(FamilyCoords::SmartResize(SmartResize::QWEN25_VL)),
        }
    }
}

fn normalize_model(model: &str) -> String {
    let lower = model.trim().to_lowercase().replace('_', "-");
    lower.rsplit('/').next().unwrap_or("").to_string()
}

impl std::fmt::Display for ModelFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ModelFamily {
    type Err = String;
    /// Accepts the stable names and a few spellings (`ui-tars`, `qwen`, `auto-glm`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_lowercase().replace('-', "_").as_str() {
            "generic" => Ok(Self::Generic),
            "autoglm" | "auto_glm" | "autoglm_phone" => Ok(Self::Autoglm),
            "ui_tars" | "uitars" | "doubao" => Ok(Self::UiTars),
            "qwen_vl" | "qwen" | "qwenvl" | "mobile_use" => Ok(Self::QwenVl),
            other => Err(format!(
                "unknown model family {other:?}: use generic, autoglm, ui_tars or qwen_vl (or auto in a profile)"
            )),
        }
    }
}

/// A profile's family setting (SPEC M7): `auto` (from the model name) or one family.
/// Serialized as `"auto"` or a family name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FamilySetting {
    /// Detect from the model name ([`ModelFamily::detect`]), `generic` when ambiguous.
    #[default]
    Auto,
    /// This family, whatever the model name.
    Fixed(ModelFamily),
}

impl FamilySetting {
    /// The family in force for `model`, and whether it was detected (`true`) or set.
    pub fn resolve(self, model: &str) -> (ModelFamily, bool) {
        match self {
            Self::Auto => (ModelFamily::detect(model).unwrap_or_default(), true),
            Self::Fixed(f) => (f, false),
        }
    }

    /// `auto` or the family name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Fixed(f) => f.as_str(),
        }
    }
}

impl std::str::FromStr for FamilySetting {
    type Err = String;
    /// `auto` or any name [`ModelFamily`] accepts.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().eq_ignore_ascii_case("auto") {
            Ok(Self::Auto)
        } else {
            s.parse().map(Self::Fixed)
        }
    }
}

impl Serialize for FamilySetting {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FamilySetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One family with its coordinate convention: everything the runtime needs to talk to a model
/// of that family (SPEC M7). `generic` has no adapter (PhoneAgent's own front ends apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FamilyAdapter {
    /// The family (never `generic`).
    pub family: ModelFamily,
    /// Its coordinate convention.
    pub coords: FamilyCoords,
}

impl FamilyAdapter {
    /// The adapter for `family` and `model` with the family's default convention
    /// ([`ModelFamily::default_coords`]); `None` for `generic`.
    pub fn for_model(family: ModelFamily, model: &str) -> Option<Self> {
        family
            .default_coords(model)
            .map(|coords| Self { family, coords })
    }

    /// The frozen coordinate space of the parsed actions' points (SPEC M4, M5): the runtime
    /// freezes this instead of negotiating.
    pub fn frozen_space(&self) -> CoordinateSpace {
        self.coords.frozen_space()
    }

    /// Parse options for the frozen space: `opts` with its coordinate bounds set for the image
    /// `image` = `(w, h)` px sent (the bounds the converted points must keep).
    pub fn frozen_options(&self, opts: &ParseOptions, image: (u32, u32)) -> ParseOptions {
        let mut o = opts.clone();
        match self.frozen_space() {
            CoordinateSpace::ImagePixels | CoordinateSpace::DisplayPixels => {
                o.coord_max_x = f64::from(image.0.saturating_sub(1));
                o.coord_max_y = f64::from(image.1.saturating_sub(1));
            }
            _ => {
                o.coord_max_x = 999.0;
                o.coord_max_y = 999.0;
            }
        }
        o
    }

    /// The family's system prompt: its role text, action space with the run's bounds, output
    /// layout, safety protocol (how to confirm in its grammar) and two-stage finish.
    pub fn system_prompt(&self, p: &FamilyPromptInput<'_>) -> String {
        prompt::system_prompt(self, p)
    }

    /// Parses one answer text of the family into a validated [`Action`] whose points are in
    /// [`Self::frozen_space`] for the image `image` = `(w, h)` px that was sent. `opts` gives
    /// the bounds (waits, texts, launcher, task); its coordinate bounds are ignored — native
    /// bounds come from the family's convention.
    ///
    /// # Errors
    /// A [`ParseError`] naming what was wrong and how to write it in the family's grammar:
    /// empty answer, no call, several calls, unknown action or argument, wrong types, a point
    /// outside the native range (never clamped), text after the call, an unclosed tag, string
    /// or call, Markdown-wrapped calls, and everything the bounds reject.
    pub fn parse(&self, text: &str, image: (u32, u32), opts: &ParseOptions) -> ParseResult<Action> {
        if text.len() > crate::do_grammar::MAX_ANSWER_BYTES {
            return Err(ParseError::new(
                K::TooLong,
                format!(
                    "the answer is {} bytes long; at most {} are parsed",
                    text.len(),
                    crate::do_grammar::MAX_ANSWER_BYTES
                ),
            ));
        }
        let ctx = Ctx::new(self, image, opts)?;
        match self.family {
            ModelFamily::Autoglm => autoglm::parse(text, &ctx),
            ModelFamily::UiTars => uitars::parse(text, &ctx),
            ModelFamily::QwenVl => qwen::parse(text, &ctx),
            ModelFamily::Generic => crate::parse_do(text, &ctx.frozen),
        }
    }

    /// Parses a native tool call (`name`, JSON `arguments`) of the family — Qwen models served
    /// with a tool parser answer `mobile_use` as an OpenAI tool call. Families without native
    /// tool calls reject every call (`unknown_tool`).
    ///
    /// # Errors
    /// As [`Self::parse`]; `unknown_tool` for a name other than `mobile_use`.
    pub fn parse_tool_call(
        &self,
        name: &str,
        arguments: &str,
        image: (u32, u32),
        opts: &ParseOptions,
    ) -> ParseResult<Action> {
        let ctx = Ctx::new(self, image, opts)?;
        match self.family {
            ModelFamily::QwenVl => qwen::parse_tool_call(name, arguments, &ctx),
            f => Err(ParseError::new(
                K::UnknownTool,
                format!(
                    "the {f} family answers in text, not tool calls: write the action as text ({})",
                    self.example()
                ),
            )),
        }
    }

    /// A short example of a valid answer in the family's grammar (for messages).
    pub fn example(&self) -> &'static str {
        match self.family {
            ModelFamily::Autoglm | ModelFamily::Generic => {
                "<answer>do(action=\"Tap\", element=[500, 300])</answer>"
            }
            ModelFamily::UiTars => "Thought: …\nAction: click(point='<point>500 300</point>')",
            ModelFamily::QwenVl => {
                "<tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [500, 300]}}</tool_call>"
            }
        }
    }

    /// Renders `action` (points in the frozen space of an image of `image` px) in the family's
    /// grammar and native coordinates, as the family's history shows a past turn. Flags are
    /// written only when set. Falls back to the `do` form when a point cannot be converted.
    pub fn render(&self, action: &Action, image: (u32, u32)) -> String {
        match self.family {
            ModelFamily::Autoglm | ModelFamily::Generic => crate::render_do(action),
            ModelFamily::UiTars => uitars::render(self, action, image),
            ModelFamily::QwenVl => qwen::render(self, action, image),
        }
    }

    /// The sentence a warning receipt ends with (SPEC S5, S6): how to re-send `action` with
    /// confirmation in the family's grammar — the exact call with the confirmation argument.
    pub fn confirm_instruction(&self, action: &Action, image: (u32, u32)) -> String {
        let mut a = action.clone();
        a.confirm_irreversible = true;
        a.screen_description = None;
        a.reason = None;
        let call = match self.family {
            ModelFamily::Autoglm | ModelFamily::Generic => crate::render_do(&a),
            ModelFamily::UiTars => format!("Action: {}", uitars::render_call(self, &a, image)),
            ModelFamily::QwenVl => qwen::render(self, &a, image),
        };
        format!(
            "In your answer format, confirming means re-sending the same action with the confirmation argument: {call}"
        )
    }

    /// How the two-stage finish is confirmed in the family's grammar (SPEC F1).
    pub fn finish_confirm_example(&self) -> &'static str {
        match self.family {
            ModelFamily::Autoglm | ModelFamily::Generic => "finish(message=\"…\", confirm=True)",
            ModelFamily::UiTars => "finished(content='…', confirm=True)",
            ModelFamily::QwenVl => {
                "<tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"terminate\", \"status\": \"success\", \"confirm\": true}}</tool_call>"
            }
        }
    }
}

/// What every family parser needs.
pub(crate) struct Ctx<'a> {
    pub adapter: &'a FamilyAdapter,
    pub image: (u32, u32),
    /// Native bounds (inclusive).
    pub max: (f64, f64),
    /// Options with the frozen bounds (what the converted points must keep).
    pub frozen: ParseOptions,
    pub opts: &'a ParseOptions,
}

impl<'a> Ctx<'a> {
    fn new(
        adapter: &'a FamilyAdapter,
        image: (u32, u32),
        opts: &'a ParseOptions,
    ) -> ParseResult<Self> {
        let max = adapter
            .coords
            .native_max(image)
            .map_err(|e| ParseError::new(K::OutOfRange, e))?;
        Ok(Self {
            adapter,
            image,
            max,
            frozen: adapter.frozen_options(opts, image),
            opts,
        })
    }

    /// Checks a native point against the native bounds and converts it; `what` names the
    /// argument in messages.
    pub fn point(&self, x: f64, y: f64, what: &str) -> ParseResult<ModelPoint> {
        for (v, axis, max) in [(x, "x", self.max.0), (y, "y", self.max.1)] {
            if !v.is_finite() {
                return Err(ParseError::new(
                    K::TypeMismatch,
                    format!("`{what}` {axis} is not a number"),
                )
                .with_field(what));
            }
            if v < 0.0 {
                return Err(ParseError::new(
                    K::NegativeNumber,
                    format!(
                        "`{what}` {axis} is negative ({v}); points run from 0 to {}",
                        crate::options::fmt_num(max)
                    ),
                )
                .with_field(what));
            }
            if v > max {
                return Err(ParseError::new(
                    K::OutOfRange,
                    format!(
                        "`{what}` {axis} = {} is outside the screenshot: {} runs from 0 to {} ({}); values are never clamped",
                        crate::options::fmt_num(v),
                        axis,
                        crate::options::fmt_num(max),
                        self.convention()
                    ),
                )
                .with_field(what));
            }
        }
        self.adapter
            .coords
            .to_frozen(ModelPoint { x, y }, self.image)
            .map_err(|e| ParseError::new(K::OutOfRange, e))
    }

    /// The coordinate convention in words.
    pub fn convention(&self) -> String {
        match self.adapter.coords {
            FamilyCoords::Relative999 => "relative coordinates 0..999".into(),
            FamilyCoords::Relative1000 => "relative coordinates 0..1000".into(),
            FamilyCoords::SmartResize(_) => format!(
                "pixels of the {}x{} image",
                crate::options::fmt_num(self.max.0 + 1.0),
                crate::options::fmt_num(self.max.1 + 1.0)
            ),
        }
    }

    /// Text bound checks (SPEC A3).
    pub fn text(&self, s: String, what: &str, max: usize) -> ParseResult<String> {
        let n = s.chars().count();
        if n > max {
            return Err(ParseError::new(
                K::TooLong,
                format!("`{what}` is {n} chars long; at most {max} are allowed"),
            )
            .with_field(what));
        }
        Ok(s)
    }

    /// Wait bound check (SPEC A3).
    pub fn wait(&self, seconds: f64, what: &str) -> ParseResult<ActionKind> {
        let max = self.opts.max_wait_secs;
        if !(seconds > 0.0 && seconds <= max) {
            return Err(ParseError::new(
                K::OutOfRange,
                format!(
                    "`{what}` = {} s: a wait must be more than 0 and at most {} seconds",
                    crate::options::fmt_num(seconds),
                    crate::options::fmt_num(max)
                ),
            )
            .with_field(what));
        }
        Ok(ActionKind::Wait { seconds })
    }

    /// Launcher capability check (SPEC D5).
    pub fn launch(&self, name: String, what: &str) -> ParseResult<ActionKind> {
        if !self.opts.app_launcher {
            return Err(ParseError::new(
                K::LauncherDisabled,
                format!(
                    "opening apps by name (`{what}`) is switched off in this run: go Home and tap the app's icon instead"
                ),
            )
            .with_field(what));
        }
        let name = self.text(name, what, self.opts.max_message_chars)?;
        if name.trim().is_empty() {
            return Err(ParseError::new(
                K::MissingField,
                format!("`{what}` is empty: write the app's name as shown under its icon"),
            )
            .with_field(what));
        }
        Ok(ActionKind::LaunchApp { name })
    }

    /// A swipe's direction checks (SPEC A5) in the frozen space.
    pub fn check_swipe(&self, a: &Action) -> ParseResult<()> {
        if let ActionKind::Swipe { start, end, .. } = &a.kind {
            crate::check_swipe(*start, *end, a.reason.as_deref(), self.opts.task.as_deref())?;
        }
        Ok(())
    }
}

/// Strips a leading `<think>…</think>` / `<thinking>…</thinking>` block (or a lone closing tag
/// whose opening tag was in the prompt). Returns `(thinking, rest offset)`.
///
/// # Errors
/// `incomplete` when a thinking block is opened and never closed.
pub(crate) fn strip_thinking(text: &str) -> ParseResult<(Option<String>, usize)> {
    for (open, close) in [("<think>", "</think>"), ("<thinking>", "</thinking>")] {
        if let Some(o) = text.find(open)
            && text[..o].trim().is_empty()
        {
            let body = o + open.len();
            return match text[body..].find(close) {
                Some(c) => Ok((
                    Some(text[body..body + c].trim().to_string()),
                    body + c + close.len(),
                )),
                None => Err(ParseError::at(
                    K::Incomplete,
                    format!(
                        "the {open} block is never closed: close it with {close} before the action"
                    ),
                    text,
                    o,
                )),
            };
        }
        if let Some(c) = text.find(close)
            && !text[..c].contains(open)
        {
            return Ok((Some(text[..c].trim().to_string()), c + close.len()));
        }
    }
    Ok((None, 0))
}

/// Special tokens models leave in their answers (`<|im_end|>`, `<|endoftext|>`, …).
pub(crate) fn strip_special_tokens(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("<|") {
        out.push_str(&rest[..i]);
        match rest[i..].find("|>") {
            Some(j) => rest = &rest[i + j + 2..],
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_is_by_unambiguous_prefixes() {
        let d = ModelFamily::detect;
        assert_eq!(d("autoglm-phone-9b"), Some(ModelFamily::Autoglm));
        assert_eq!(
            d("zai-org/AutoGLM-Phone-9B-Multilingual"),
            Some(ModelFamily::Autoglm)
        );
        assert_eq!(
            d("ByteDance-Seed/UI-TARS-1.5-7B"),
            Some(ModelFamily::UiTars)
        );
        assert_eq!(d("doubao-1-5-ui-tars-250428"), Some(ModelFamily::UiTars));
        assert_eq!(d("Qwen/Qwen2.5-VL-7B-Instruct"), Some(ModelFamily::QwenVl));
        assert_eq!(d("qwen3-vl-plus"), Some(ModelFamily::QwenVl));
        assert_eq!(d("Tongyi-MAI/MAI-UI-8B"), Some(ModelFamily::QwenVl));
        assert_eq!(d("mPLUG/GUI-Owl-7B"), Some(ModelFamily::QwenVl));
        assert_eq!(d("gpt-4.1"), None);
        assert_eq!(d("glm-4.5v"), None);
        assert_eq!(d("my-ui-tars-finetune"), None);
        assert_eq!(
            FamilySetting::Auto.resolve("gpt-5"),
            (ModelFamily::Generic, true)
        );
    }

    #[test]
    fn coords_follow_the_version() {
        let c = |f: ModelFamily, m| f.default_coords(m).unwrap();
        assert_eq!(
            c(ModelFamily::UiTars, "UI-TARS-1.5-7B"),
            FamilyCoords::SmartResize(SmartResize::UI_TARS_15)
        );
        assert_eq!(
            c(ModelFamily::UiTars, "doubao-1-5-ui-tars-250428"),
            FamilyCoords::Relative1000
        );
        assert_eq!(
            c(ModelFamily::UiTars, "UI-TARS-7B-SFT"),
            FamilyCoords::Relative1000
        );
        assert_eq!(
            c(ModelFamily::QwenVl, "Qwen3-VL-8B-Instruct"),
            FamilyCoords::Relative999
        );
        assert_eq!(
            c(ModelFamily::QwenVl, "qwen2.5-vl-72b-instruct"),
            FamilyCoords::SmartResize(SmartResize::QWEN25_VL)
        );
        assert!(ModelFamily::Generic.default_coords("x").is_none());
    }

    #[test]
    fn settings_serialize_as_names() {
        let s: FamilySetting = serde_json::from_str("\"ui_tars\"").unwrap();
        assert_eq!(s, FamilySetting::Fixed(ModelFamily::UiTars));
        assert_eq!(
            serde_json::to_string(&FamilySetting::Auto).unwrap(),
            "\"auto\""
        );
        let e = serde_json::from_str::<FamilySetting>("\"llama\"").unwrap_err();
        assert!(
            e.to_string()
                .contains("generic, autoglm, ui_tars or qwen_vl")
        );
    }

    #[test]
    fn thinking_is_stripped() {
        assert_eq!(
            strip_thinking("<think>a</think>x").unwrap(),
            (Some("a".into()), 16)
        );
        assert!(strip_thinking("<think>a").is_err());
        assert_eq!(strip_thinking("plain").unwrap(), (None, 0));
        assert_eq!(strip_special_tokens("a<|im_end|>b"), "ab");
    }
}
