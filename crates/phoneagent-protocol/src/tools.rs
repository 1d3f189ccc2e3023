//! The OpenAI function-calling front end (SPEC A1, A3, A5, A6, F1).
//!
//! [`tool_schemas`] lists the tools of source 000 with JSON schemas (`additionalProperties:
//! false`); [`parse_tool_call`] validates one call's arguments against the same closed schema
//! the `do` grammar uses, and turns it into an [`Action`]. Argument JSON is read preserving key
//! order and duplicates, so a duplicated key is rejected rather than silently overwritten.
//!
//! Deviation from source 000: `double_tap` also carries `confirm_irreversible`, `sensitive`
//! and `target_description`, because the gate treats a double tap like a tap (SPEC S2) and a
//! gated call without `confirm_irreversible` could never be confirmed after a warning receipt.

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::action::{Action, ActionKind, MAX_META_CHARS};
use crate::options::{ParseOptions, ToolOptions, fmt_num};
use crate::parse_error::{ParseError, ParseErrorKind as K, ParseResult, Position};
use crate::schema::{Arg, Args, Front, Loc, Node, TOOL_NAMES, Val, build_tool};
use crate::swipe::check_swipe;

/// One tool call of an assistant answer, as OpenAI-compatible servers send it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id (`call_…`), echoed in the tool result.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments: a JSON object, as a string (as sent; empty means `{}`).
    pub arguments: String,
}

/// An ordered JSON value that keeps duplicate object keys.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum J {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

struct JVisitor;

impl<'de> Visitor<'de> for JVisitor {
    type Value = J;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<J, E> {
        Ok(J::Null)
    }
    fn visit_none<E>(self) -> Result<J, E> {
        Ok(J::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<J, D::Error> {
        J::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<J, E> {
        Ok(J::Bool(v))
    }
    #[allow(clippy::cast_precision_loss)]
    fn visit_i64<E>(self, v: i64) -> Result<J, E> {
        Ok(J::Num(v as f64))
    }
    #[allow(clippy::cast_precision_loss)]
    fn visit_u64<E>(self, v: u64) -> Result<J, E> {
        Ok(J::Num(v as f64))
    }
    fn visit_f64<E>(self, v: f64) -> Result<J, E> {
        Ok(J::Num(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<J, E> {
        Ok(J::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<J, E> {
        Ok(J::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<J, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element()? {
            v.push(x);
        }
        Ok(J::Arr(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<J, A::Error> {
        let mut v = Vec::new();
        while let Some((k, x)) = map.next_entry::<String, J>()? {
            v.push((k, x));
        }
        Ok(J::Obj(v))
    }
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JVisitor)
    }
}

fn node(j: J, path: String) -> Node {
    let val = match j {
        J::Null => Val::Null,
        J::Bool(b) => Val::Bool(b),
        J::Num(n) => Val::Num(n),
        J::Str(s) => Val::Str(s),
        J::Arr(items) => Val::List(
            items
                .into_iter()
                .enumerate()
                .map(|(i, x)| node(x, format!("{path}[{i}]")))
                .collect(),
        ),
        J::Obj(pairs) => Val::Obj(
            pairs
                .into_iter()
                .map(|(k, x)| {
                    let p = format!("{path}.{k}");
                    (k, node(x, p))
                })
                .collect(),
        ),
    };
    Node {
        val,
        loc: Loc::Path(path),
    }
}

/// Parses one tool call into a validated [`Action`] (SPEC A1, A3).
///
/// `arguments` is the JSON object text the server sent (empty = `{}`). `null` for an optional
/// argument counts as absent. A `swipe` is checked like a `do` swipe (SPEC A5); a `scroll`
/// becomes a swipe whose finger motion is opposite to the scroll direction (see the `scroll`
/// schema) and is not checked against direction words, which would describe the scroll.
///
/// # Errors
/// [`ParseError`] with kind `unknown_tool`, `launcher_disabled`, `invalid_json` (with the
/// position in `arguments`), `duplicate_keyword`, or any schema kind, with `field` naming the
/// argument.
pub fn parse_tool_call(name: &str, arguments: &str, opts: &ParseOptions) -> ParseResult<Action> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let j: J = serde_json::from_str(text).map_err(|e| {
        ParseError::new(
            K::InvalidJson,
            format!("the arguments of `{name}` are not valid JSON ({e}): send one JSON object"),
        )
        .with_position(Position::from_line_column(text, e.line(), e.column()))
    })?;
    let J::Obj(pairs) = j else {
        return Err(ParseError::new(
            K::TypeMismatch,
            format!(
                "the arguments of `{name}` must be a JSON object such as {{\"element\": [500, 300]}}"
            ),
        ));
    };
    let mut items: Vec<Arg> = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        if items.iter().any(|a| a.key == k) {
            return Err(ParseError::new(
                K::DuplicateKeyword,
                format!("the argument `{k}` is given twice: give each argument once"),
            )
            .with_field(k));
        }
        items.push(Arg {
            key_loc: Loc::Path(k.clone()),
            node: node(v, k.clone()),
            key: k,
        });
    }
    let args = Args::new(text, items, Loc::Path(String::new()), Front::Tool, name);
    let action = build_tool(args, name, opts)?;
    if name == "swipe"
        && let ActionKind::Swipe { start, end, .. } = &action.kind
    {
        check_swipe(*start, *end, action.reason.as_deref(), opts.task.as_deref())?;
    }
    Ok(action)
}

/// Parses every tool call of one answer, in order (SPEC F1: the runtime answers siblings after
/// an accepted `finish` with `skipped` receipts; this function does not drop them).
pub fn parse_tool_calls(calls: &[ToolCall], opts: &ParseOptions) -> Vec<ParseResult<Action>> {
    calls
        .iter()
        .map(|c| parse_tool_call(&c.name, &c.arguments, opts))
        .collect()
}

/// Finds the tool calls in a JSON document of one of these shapes: a single call
/// `{"name", "arguments"}`; an OpenAI tool call `{"id", "type": "function", "function":
/// {"name", "arguments"}}`; an array of either; an assistant message `{"role": "assistant",
/// "tool_calls": [...]}`; or a whole chat-completion response `{"choices": [{"message": …}]}`.
/// `arguments` may be a JSON string (as OpenAI sends it) or an object. Missing ids become
/// `call_<index>`.
///
/// # Errors
/// `no_call` when the document holds no tool call, `type_mismatch` for a malformed call.
pub fn extract_tool_calls(doc: &Value) -> ParseResult<Vec<ToolCall>> {
    if let Some(choices) = doc.get("choices").and_then(Value::as_array) {
        let Some(message) = choices.first().and_then(|c| c.get("message")) else {
            return Err(ParseError::new(
                K::NoCall,
                "the response has no choices[0].message",
            ));
        };
        return extract_tool_calls(message);
    }
    let items: Vec<&Value> = match doc {
        Value::Array(a) => a.iter().collect(),
        Value::Object(o) if o.contains_key("tool_calls") || o.contains_key("role") => {
            match o.get("tool_calls").and_then(Value::as_array) {
                Some(a) if !a.is_empty() => a.iter().collect(),
                _ => {
                    let content = o.get("content").and_then(Value::as_str).unwrap_or("");
                    let snippet: String = content.chars().take(60).collect();
                    return Err(ParseError::new(
                        K::NoCall,
                        format!(
                            "the assistant message has no tool calls (content: {snippet:?}): call exactly one tool"
                        ),
                    ));
                }
            }
        }
        Value::Object(_) => vec![doc],
        _ => {
            return Err(ParseError::new(
                K::NoCall,
                "expected a tool call object, an array of them or an assistant message",
            ));
        }
    };
    if items.is_empty() {
        return Err(ParseError::new(
            K::NoCall,
            "the list of tool calls is empty",
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| one_call(v, i))
        .collect()
}

fn one_call(v: &Value, index: usize) -> ParseResult<ToolCall> {
    let f = v.get("function").unwrap_or(v);
    let Some(name) = f.get("name").and_then(Value::as_str) else {
        return Err(ParseError::new(
            K::TypeMismatch,
            format!("tool call {index} has no function name"),
        )
        .with_field(format!("[{index}].name")));
    };
    let arguments = match f.get("arguments") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let id = v
        .get("id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("call_{index}"), str::to_string);
    Ok(ToolCall {
        id,
        name: name.to_string(),
        arguments,
    })
}

fn meta_props(props: &mut serde_json::Map<String, Value>) {
    props.insert(
        "screen_description".into(),
        json!({
            "type": "string",
            "maxLength": MAX_META_CHARS,
            "description": "What the current screenshot shows that matters for the task: which page, \
                            relevant controls and values, loading or dialog state."
        }),
    );
    props.insert(
        "reason".into(),
        json!({
            "type": "string",
            "maxLength": MAX_META_CHARS,
            "description": "Why this action: its target, how it follows from the task and the last \
                            result, the expected effect on the screen, and any uncertainty."
        }),
    );
}

fn exec_props(props: &mut serde_json::Map<String, Value>) {
    props.insert(
        "target_description".into(),
        json!({
            "type": "string",
            "maxLength": MAX_META_CHARS,
            "description": "The visible text or a short description of what this action acts on \
                            (e.g. the button's label)."
        }),
    );
    props.insert(
        "confirm_irreversible".into(),
        json!({
            "type": "boolean",
            "description": "Set to true only when re-sending a call that a safety warning blocked, \
                            to confirm that the irreversible action is really intended."
        }),
    );
    props.insert(
        "sensitive".into(),
        json!({
            "type": "boolean",
            "description": "Set to true when this action may be irreversible or touches payment, \
                            credentials or private data."
        }),
    );
}

fn point_schema(what: &str, o: &ToolOptions) -> Value {
    json!({
        "type": "array",
        "items": {"type": "number", "minimum": 0},
        "minItems": 2,
        "maxItems": 2,
        "description": format!(
            "{what} as [x, y] on the screenshot: x in 0..={} from left to right, y in 0..={} from top to bottom.",
            fmt_num(o.coord_max_x),
            fmt_num(o.coord_max_y)
        )
    })
}

fn tool(
    name: &str,
    description: &str,
    specific: Vec<(&str, Value)>,
    required: &[&str],
    executing: bool,
) -> Value {
    let mut props = serde_json::Map::new();
    for (k, v) in specific {
        props.insert(k.to_string(), v);
    }
    if executing {
        exec_props(&mut props);
    }
    meta_props(&mut props);
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": Value::Object(props),
                "required": required,
                "additionalProperties": false
            }
        }
    })
}

/// The tool list for an OpenAI-compatible `tools` field (SPEC A1): tap, double_tap,
/// long_press, swipe, scroll, type_text, back, home, wait, ask_user, take_over, note, finish,
/// and launch_app only when `opts.app_launcher` is on. Each tool takes `screen_description` and
/// `reason`; the executing ones also `target_description`, `confirm_irreversible` and
/// `sensitive` (SPEC A6). Every `parameters` object has `additionalProperties: false`.
pub fn tool_schemas(opts: &ToolOptions) -> Value {
    let duration = json!({
        "type": "integer",
        "minimum": 1,
        "maximum": opts.max_gesture_ms,
        "description": "Gesture time in milliseconds; omit for the default."
    });
    let text = |d: &str| json!({"type": "string", "description": d});
    let mut tools = vec![
        tool(
            "tap",
            "Tap once at a point of the screen: buttons, list items, app icons, input fields.",
            vec![("element", point_schema("The point to tap", opts))],
            &["element"],
            true,
        ),
        tool(
            "double_tap",
            "Tap twice in quick succession at a point (zoom, select a word, like a post).",
            vec![("element", point_schema("The point to double-tap", opts))],
            &["element"],
            true,
        ),
        tool(
            "long_press",
            "Press and hold at a point (context menus, text selection, drag handles).",
            vec![
                ("element", point_schema("The point to press", opts)),
                ("duration_ms", duration.clone()),
            ],
            &["element"],
            true,
        ),
        tool(
            "swipe",
            "Move one finger from start to end. The direction is the finger's motion on the \
             screenshot: swipe left = x decreases, right = x increases, up = y decreases, down = y \
             increases, and that axis must change the most. A direction named in reason, or by the \
             user in the task, must match start and end.",
            vec![
                ("start", point_schema("Where the finger starts", opts)),
                ("end", point_schema("Where the finger lifts", opts)),
                ("duration_ms", duration),
            ],
            &["start", "end"],
            false,
        ),
        tool(
            "scroll",
            "Scroll the content: direction is where the view travels, so scrolling down reveals \
             what is further down (the finger moves up) and scrolling right reveals what is to the \
             right (the finger moves left). Runs as a swipe centred on element (default: the screen \
             centre) over 20 %, 40 % or 60 % of the screen for short, medium or long.",
            vec![
                (
                    "direction",
                    json!({"type": "string", "enum": ["up", "down", "left", "right"],
                           "description": "Where the view travels."}),
                ),
                (
                    "element",
                    point_schema("The point to scroll around (default: screen centre)", opts),
                ),
                (
                    "distance",
                    json!({"type": "string", "enum": ["short", "medium", "long"],
                           "description": "How far; default medium."}),
                ),
            ],
            &["direction"],
            false,
        ),
        tool(
            "type_text",
            "Type text into the focused input field (tap the field first). Text already in the \
             field is replaced. Any Unicode, newlines included.",
            vec![("text", text("The exact text to type."))],
            &["text"],
            true,
        ),
        tool(
            "back",
            "Press the Android Back key: previous screen, close a dialog or the keyboard.",
            vec![],
            &[],
            false,
        ),
        tool(
            "home",
            "Press the Android Home key: go to the launcher.",
            vec![],
            &[],
            false,
        ),
        tool(
            "wait",
            "Wait for the screen to finish loading or animating, then observe again.",
            vec![(
                "seconds",
                json!({"type": "number", "exclusiveMinimum": 0, "maximum": opts.max_wait_secs,
                       "description": format!("Seconds to wait, more than 0 and at most {}.",
                                              fmt_num(opts.max_wait_secs))}),
            )],
            &["seconds"],
            false,
        ),
        tool(
            "ask_user",
            "Ask the user a question and wait for the answer, e.g. when several options match \
             the task. The answer comes back verbatim.",
            vec![("question", text("The question for the user."))],
            &["question"],
            false,
        ),
        tool(
            "take_over",
            "Ask the user to operate the phone themselves (login, captcha, verification) and hand \
             back when done.",
            vec![("message", text("What the user should do on the phone."))],
            &["message"],
            false,
        ),
        tool(
            "note",
            "Record something you read or decided, and keep your task board (a short checklist of \
             sub-goals). Does not touch the phone.",
            vec![
                ("message", text("The note.")),
                (
                    "task_board",
                    json!({
                        "type": "array",
                        "description": "The whole checklist of sub-goals, in order.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "text": {"type": "string", "description": "The sub-goal."},
                                "done": {"type": "boolean", "description": "Whether it is done."}
                            },
                            "required": ["text", "done"],
                            "additionalProperties": false
                        }
                    }),
                ),
            ],
            &["message"],
            false,
        ),
        tool(
            "finish",
            "Claim the task is complete. The first call returns a review package of what the \
             screen shows; call finish again with confirm=true to finalize.",
            vec![
                ("message", text("The result or answer for the user.")),
                (
                    "confirm",
                    json!({"type": "boolean",
                           "description": "true in the second call, after reading the review package."}),
                ),
            ],
            &["message"],
            false,
        ),
    ];
    if opts.app_launcher {
        tools.push(tool(
            "launch_app",
            "Launch an app by the name shown under its icon.",
            vec![("name", text("The app's visible name."))],
            &["name"],
            true,
        ));
    }
    debug_assert_eq!(
        tools.len(),
        TOOL_NAMES.len() - usize::from(!opts.app_launcher)
    );
    Value::Array(tools)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::ModelPoint;

    fn opts() -> ParseOptions {
        ParseOptions::default()
    }

    #[test]
    fn tap_with_flags() {
        let a = parse_tool_call(
            "tap",
            r#"{"element": [500, 300], "target_description": "Pay now", "confirm_irreversible": true, "reason": null}"#,
            &opts(),
        )
        .unwrap();
        assert_eq!(
            a.kind,
            ActionKind::Tap {
                element: ModelPoint { x: 500.0, y: 300.0 }
            }
        );
        assert!(a.confirm_irreversible);
        assert_eq!(a.reason, None);
        assert_eq!(a.target_description.as_deref(), Some("Pay now"));
    }

    #[test]
    fn empty_arguments_mean_empty_object() {
        assert_eq!(
            parse_tool_call("back", "", &opts()).unwrap().kind,
            ActionKind::Back
        );
        assert_eq!(
            parse_tool_call("home", " ", &opts()).unwrap().kind,
            ActionKind::Home
        );
    }

    #[test]
    fn strict_rejections() {
        let k = |n: &str, a: &str| parse_tool_call(n, a, &opts()).unwrap_err().kind;
        assert_eq!(k("fly", "{}"), K::UnknownTool);
        assert_eq!(k("launch_app", r#"{"name":"x"}"#), K::LauncherDisabled);
        assert_eq!(
            k("tap", r#"{"element": [1, 2], "extra": 1}"#),
            K::UnknownKeyword
        );
        assert_eq!(
            k("tap", r#"{"element": [1, 2], "description": "x"}"#),
            K::LegacyDescription
        );
        assert_eq!(
            k("tap", r#"{"element": [1, 2], "element": [3, 4]}"#),
            K::DuplicateKeyword
        );
        assert_eq!(k("tap", r#"{"element": [1, 2"#), K::InvalidJson);
        assert_eq!(k("tap", r#"[1, 2]"#), K::TypeMismatch);
        assert_eq!(k("tap", r#"{"element": [-1, 2]}"#), K::NegativeNumber);
        assert_eq!(k("tap", r#"{"element": [1200, 2]}"#), K::OutOfRange);
        assert_eq!(k("tap", r#"{"element": [1]}"#), K::WrongLength);
        assert_eq!(k("tap", r#"{"element": ["x", "y"]}"#), K::Placeholder);
        assert_eq!(k("tap", r#"{}"#), K::MissingField);
        assert_eq!(k("tap", r#"{"element": null}"#), K::MissingField);
        assert_eq!(
            k("tap", r#"{"element": [1, 2], "sensitive": "yes"}"#),
            K::TypeMismatch
        );
        assert_eq!(k("wait", r#"{"seconds": 0}"#), K::OutOfRange);
        assert_eq!(k("wait", r#"{"seconds": 31}"#), K::OutOfRange);
        assert_eq!(
            k(
                "swipe",
                r#"{"start": [500, 800], "end": [500, 200], "reason": "swipe down"}"#
            ),
            K::SwipeDirection
        );
        assert_eq!(k("scroll", r#"{"direction": "sideways"}"#), K::TypeMismatch);
        assert_eq!(k("back", r#"{"reason": 5}"#), K::TypeMismatch);
    }

    #[test]
    fn invalid_json_has_a_position() {
        let e = parse_tool_call("tap", "{\n  \"element\": [1, 2,]\n}", &opts()).unwrap_err();
        let p = e.position.unwrap();
        assert_eq!(p.line, 2);
    }

    #[test]
    fn scroll_down_moves_the_finger_up() {
        let a = parse_tool_call("scroll", r#"{"direction": "down"}"#, &opts()).unwrap();
        let ActionKind::Swipe { start, end, .. } = a.kind else {
            panic!("{a:?}")
        };
        assert_eq!(start.x, end.x);
        assert!(start.y > end.y, "{start:?} {end:?}");
        assert!((start.y - end.y - 400.0).abs() < 1.0);
        // Near the edge the gesture is shifted to fit, never outside the space.
        let a = parse_tool_call(
            "scroll",
            r#"{"direction": "right", "element": [990, 100], "distance": "long"}"#,
            &opts(),
        )
        .unwrap();
        let ActionKind::Swipe { start, end, .. } = a.kind else {
            panic!()
        };
        assert!(
            start.x > end.x && start.x <= 999.0 && end.x >= 0.0,
            "{start:?} {end:?}"
        );
        assert_eq!(start.y, 100.0);
    }

    #[test]
    fn note_task_board_objects() {
        let a = parse_tool_call(
            "note",
            r#"{"message": "m", "task_board": [{"text": "open", "done": true}, {"text": "send", "done": false}]}"#,
            &opts(),
        )
        .unwrap();
        let ActionKind::Note { task_board, .. } = a.kind else {
            panic!()
        };
        assert_eq!(task_board.unwrap()[0].text, "open");
        let e = parse_tool_call(
            "note",
            r#"{"message": "m", "task_board": [{"txt": "x"}]}"#,
            &opts(),
        )
        .unwrap_err();
        assert_eq!(e.kind, K::UnknownKeyword);
        assert_eq!(e.field.as_deref(), Some("task_board[0].txt"));
    }

    #[test]
    fn calls_keep_order_and_extract_from_message_shapes() {
        let doc: Value = serde_json::from_str(
            r#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
                {"id":"call_a","type":"function","function":{"name":"finish","arguments":"{\"message\":\"done\"}"}},
                {"id":"call_b","type":"function","function":{"name":"tap","arguments":{"element":[1,2]}}}
            ]}}]}"#,
        )
        .unwrap();
        let calls = extract_tool_calls(&doc).unwrap();
        assert_eq!(calls[0].id, "call_a");
        assert_eq!(calls[1].arguments, r#"{"element":[1,2]}"#);
        let parsed = parse_tool_calls(&calls, &opts());
        assert!(matches!(
            parsed[0].as_ref().unwrap().kind,
            ActionKind::Finish { .. }
        ));
        assert!(matches!(
            parsed[1].as_ref().unwrap().kind,
            ActionKind::Tap { .. }
        ));
        let e =
            extract_tool_calls(&json!({"role": "assistant", "content": "I will tap"})).unwrap_err();
        assert_eq!(e.kind, K::NoCall);
    }

    #[test]
    fn schemas_are_closed_and_complete() {
        let s = tool_schemas(&ToolOptions::default());
        let names: Vec<&str> = s
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, TOOL_NAMES[..13].to_vec());
        for t in s.as_array().unwrap() {
            let p = &t["function"]["parameters"];
            assert_eq!(p["additionalProperties"], false);
            assert!(p["properties"]["screen_description"].is_object());
            assert!(p["properties"]["reason"].is_object());
        }
        let with = tool_schemas(&ToolOptions {
            app_launcher: true,
            ..ToolOptions::default()
        });
        assert_eq!(with.as_array().unwrap().len(), 14);
        for t in with.as_array().unwrap() {
            let name = t["function"]["name"].as_str().unwrap();
            let props = &t["function"]["parameters"]["properties"];
            let exec = matches!(
                name,
                "tap" | "double_tap" | "long_press" | "type_text" | "launch_app"
            );
            assert_eq!(props["confirm_irreversible"].is_object(), exec, "{name}");
            assert_eq!(props["sensitive"].is_object(), exec, "{name}");
            assert_eq!(props["target_description"].is_object(), exec, "{name}");
        }
    }
}
