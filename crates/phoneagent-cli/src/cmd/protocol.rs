//! `protocol parse`, `protocol schemas`, `protocol prompt` (SPEC C2, A1-A5).

use std::io::{Read, Write};

use anyhow::Context;
use phoneagent_protocol::family::{FamilyAdapter, ModelFamily};
use phoneagent_protocol::{
    ParseError, ParseOptions, ToolOptions, do_grammar_prompt, extract_tool_calls, parse_do,
    parse_tool_calls, tool_schemas,
};
use serde_json::{Value, json};

use super::Global;

/// Which action front end reads the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The `do(...)` / `finish(...)` text grammar (AutoGLM-Phone style), thinking text allowed.
    Do,
    /// OpenAI tool calls as JSON: `{"name", "arguments"}`, a `tool_calls` array, an assistant
    /// message or a whole chat-completion response.
    Tools,
}

/// Bounds and capabilities the parse validates against.
#[derive(Debug, clap::Args)]
pub struct Bounds {
    /// Largest valid x in the model coordinate space (inclusive); also y unless --coord-max-y.
    #[arg(long, default_value_t = 999.0, value_name = "N")]
    pub coord_max: f64,
    /// Largest valid y (inclusive), when it differs from x (e.g. image_pixels of a tall screen).
    #[arg(long, value_name = "N")]
    pub coord_max_y: Option<f64>,
    /// Accept Launch / launch_app (the opt-in app-launcher capability, SPEC D5).
    #[arg(long)]
    pub app_launcher: bool,
    /// Longest accepted Wait, in seconds.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub max_wait: f64,
    /// The user's task: a swipe direction named in it must agree with every swipe (SPEC A5).
    #[arg(long)]
    pub task: Option<String>,
}

impl Bounds {
    fn options(&self) -> ParseOptions {
        ParseOptions {
            coord_max_x: self.coord_max,
            coord_max_y: self.coord_max_y.unwrap_or(self.coord_max),
            max_wait_secs: self.max_wait,
            app_launcher: self.app_launcher,
            task: self.task.clone(),
            ..ParseOptions::default()
        }
    }
}

/// Protocol subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ProtocolCommand {
    /// Read one model output on stdin; print the parsed action as JSON (exit 0) or the
    /// rejection `{"error": {kind, message, position, field}}` (exit 1).
    ///
    /// With --format do the output is one action object; with --format tools it is an array
    /// with one action per tool call, in order (the first rejected call is reported with its
    /// `index`).
    ///
    /// With --family (autoglm, ui_tars, qwen_vl) the family's own grammar reads the input
    /// (SPEC M7) and the points are printed in the frozen space the runtime maps
    /// (relative_0_999, or image_pixels of the --image size); --coord-max is then ignored.
    Parse {
        /// Which front end reads the input (PhoneAgent's own front ends; see --family).
        #[arg(long, value_enum, default_value_t = Format::Do)]
        format: Format,
        /// A model family's grammar instead: generic, autoglm, ui_tars or qwen_vl.
        #[arg(long, value_name = "NAME")]
        family: Option<String>,
        /// The model name, which picks the family's coordinate convention (e.g. UI-TARS-1.5
        /// answers in smart-resized pixels, Doubao UI-TARS in 0..1000, Qwen3-VL in 0..999).
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// Size of the screenshot the model saw, WIDTHxHEIGHT px (for pixel conventions).
        #[arg(long, default_value = "1080x2400", value_name = "WxH")]
        image: String,
        #[command(flatten)]
        bounds: Bounds,
    },
    /// Print the tool schemas offered to tool-calling models (OpenAI `tools` array).
    Schemas {
        #[command(flatten)]
        bounds: Bounds,
    },
    /// Print the action-grammar section of the system prompt for `do` models.
    Prompt {
        #[command(flatten)]
        bounds: Bounds,
    },
}

fn error_json(e: &ParseError, index: Option<usize>) -> Value {
    let mut err = json!({
        "kind": e.kind,
        "message": e.message,
        "position": e.position,
        "field": e.field,
    });
    if let (Some(i), Some(obj)) = (index, err.as_object_mut()) {
        obj.insert("index".into(), json!(i));
    }
    json!({ "error": err })
}

fn print_json(v: &Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v).context("cannot write to stdout")?;
    writeln!(out).context("cannot write to stdout")?;
    Ok(())
}

/// Parses `input` with the chosen front end: `(exit code, JSON to print)`.
pub fn parse_input(format: Format, input: &str, opts: &ParseOptions) -> (u8, Value) {
    match format {
        Format::Do => match parse_do(input, opts) {
            Ok(action) => (0, json!(action)),
            Err(e) => (1, error_json(&e, None)),
        },
        Format::Tools => {
            let doc: Value = match serde_json::from_str(input) {
                Ok(d) => d,
                Err(e) => {
                    let err = ParseError::new(
                        phoneagent_protocol::ParseErrorKind::InvalidJson,
                        format!(
                            "the input is not JSON ({e}): --format tools reads a tool call, a tool_calls array or an assistant message"
                        ),
                    )
                    .with_position(phoneagent_protocol::Position::from_line_column(
                        input,
                        e.line(),
                        e.column(),
                    ));
                    return (1, error_json(&err, None));
                }
            };
            let calls = match extract_tool_calls(&doc) {
                Ok(c) => c,
                Err(e) => return (1, error_json(&e, None)),
            };
            let mut actions = Vec::with_capacity(calls.len());
            for (i, r) in parse_tool_calls(&calls, opts).into_iter().enumerate() {
                match r {
                    Ok(a) => actions.push(json!(a)),
                    Err(e) => return (1, error_json(&e, Some(i))),
                }
            }
            (0, Value::Array(actions))
        }
    }
}

/// A representative model per family, for its default coordinate convention.
fn default_model(f: ModelFamily) -> &'static str {
    match f {
        ModelFamily::Generic | ModelFamily::Autoglm => "autoglm-phone-9b",
        ModelFamily::UiTars => "UI-TARS-1.5-7B",
        ModelFamily::QwenVl => "Qwen2.5-VL-7B-Instruct",
    }
}

/// `WIDTHxHEIGHT` → `(w, h)`.
pub fn parse_size(s: &str) -> anyhow::Result<(u32, u32)> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .with_context(|| format!("--image {s:?} is not WIDTHxHEIGHT, e.g. 1080x2400"))?;
    let n = |v: &str| -> anyhow::Result<u32> {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| *n >= 2)
            .with_context(|| format!("--image {s:?}: {v:?} is not a size in px (at least 2)"))
    };
    Ok((n(w)?, n(h)?))
}

/// Parses `input` in a model family's grammar (SPEC M7): `(exit code, JSON to print)`.
pub fn parse_family_input(
    family: ModelFamily,
    model: Option<&str>,
    image: (u32, u32),
    input: &str,
    opts: &ParseOptions,
) -> (u8, Value) {
    let model = model.unwrap_or(default_model(family));
    let Some(ad) = FamilyAdapter::for_model(family, model) else {
        return parse_input(Format::Do, input, opts);
    };
    match ad.parse(input, image, opts) {
        Ok(a) => {
            let mut v = json!(a);
            if let Some(o) = v.as_object_mut() {
                o.insert("family".into(), json!(family));
                o.insert("coordinates".into(), json!(ad.coords.as_str()));
                o.insert("frozen_space".into(), json!(ad.frozen_space()));
            }
            (0, v)
        }
        Err(e) => (1, error_json(&e, None)),
    }
}

/// Run a protocol subcommand.
pub async fn run(_g: &Global, c: ProtocolCommand) -> anyhow::Result<u8> {
    match c {
        ProtocolCommand::Parse {
            format,
            family,
            model,
            image,
            bounds,
        } => {
            let family: Option<ModelFamily> = family
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e: String| anyhow::anyhow!("--family: {e}"))?;
            let image = parse_size(&image)?;
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .context("cannot read the model output from stdin (it must be UTF-8 text)")?;
            let (code, out) = match family {
                Some(f) if f != ModelFamily::Generic => {
                    parse_family_input(f, model.as_deref(), image, &input, &bounds.options())
                }
                _ => parse_input(format, &input, &bounds.options()),
            };
            print_json(&out)?;
            Ok(code)
        }
        ProtocolCommand::Schemas { bounds } => {
            print_json(&tool_schemas(&ToolOptions::from(&bounds.options())))?;
            Ok(0)
        }
        ProtocolCommand::Prompt { bounds } => {
            out!("{}", do_grammar_prompt(&bounds.options()));
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn do_input_prints_action_or_error() {
        let opts = ParseOptions::default();
        let (code, out) = parse_input(Format::Do, "do(action=\"Tap\", element=[5, 6])", &opts);
        assert_eq!(code, 0);
        assert_eq!(out["action"], "tap");
        assert_eq!(out["element"]["x"], 5.0);
        let (code, out) = parse_input(Format::Do, "do(action=\"Tap\", element=[5, 1200])", &opts);
        assert_eq!(code, 1);
        assert_eq!(out["error"]["kind"], "out_of_range");
        assert_eq!(out["error"]["position"]["column"], 30);
    }

    #[test]
    fn family_input_uses_the_family_grammar_and_convention() {
        let opts = ParseOptions::default();
        let (code, out) = parse_family_input(
            ModelFamily::UiTars,
            Some("doubao-1-5-ui-tars-250428"),
            (1080, 2400),
            "Thought: tap\nAction: click(point='<point>1000 500</point>')",
            &opts,
        );
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["action"], "tap");
        assert_eq!(out["element"]["x"], 999.0);
        assert_eq!(out["coordinates"], "relative_0_1000");
        let (code, out) = parse_family_input(
            ModelFamily::QwenVl,
            None,
            (1080, 2400),
            "<tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [1092, 5]}}</tool_call>",
            &opts,
        );
        assert_eq!(code, 1);
        assert_eq!(out["error"]["kind"], "out_of_range");
        assert!(parse_size("1080x2400").is_ok() && parse_size("1080").is_err());
    }

    #[test]
    fn tools_input_reports_first_rejected_call_with_index() {
        let opts = ParseOptions::default();
        let input = r#"[{"name": "back", "arguments": "{}"}, {"name": "tap", "arguments": "{}"}]"#;
        let (code, out) = parse_input(Format::Tools, input, &opts);
        assert_eq!(code, 1);
        assert_eq!(out["error"]["kind"], "missing_field");
        assert_eq!(out["error"]["index"], 1);
        let (code, out) = parse_input(Format::Tools, "not json", &opts);
        assert_eq!(code, 1);
        assert_eq!(out["error"]["kind"], "invalid_json");
        let (code, out) = parse_input(Format::Tools, r#"{"name": "home"}"#, &opts);
        assert_eq!(code, 0);
        assert_eq!(out[0]["action"], "home");
    }
}
