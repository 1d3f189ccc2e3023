//! Qwen2.5-VL / Qwen3-VL `mobile_use` and GUI models built on it (MAI-UI, GUI-Owl): one
//! function call in `<tool_call>` tags, or a native tool call (SPEC M7, A2).
//!
//! ```text
//! answer := [thinking] [prose] "<tool_call>" object "</tool_call>" tail
//! object := {"name": "mobile_use", "arguments": {"action": NAME, …}}     (arguments may be a JSON string)
//! tail   := whitespace and special tokens only; a missing </tool_call> at the very end is fine
//! ```
//!
//! Actions and their arguments (closed: any other key is `unknown_keyword`, a repeated key
//! `duplicate_keyword`):
//!
//! | action | arguments | → |
//! |---|---|---|
//! | `click` | `coordinate` | tap |
//! | `long_press` | `coordinate`, optional `time` (s) | long press |
//! | `double_click` | `coordinate` | double tap |
//! | `swipe` | `coordinate`, `coordinate2` (or `direction` = finger motion, `coordinate` then optional) | swipe |
//! | `drag` | `start_coordinate`, `end_coordinate` (MAI-UI) | swipe |
//! | `type` | `text` | type |
//! | `key` / `system_button` | `text` / `button`: `Back` or `Home` | back / home |
//! | `open` | `text` (app name; launcher capability) | launch app |
//! | `wait` | `time` or `duration` (s) | wait |
//! | `answer` | `text` | note |
//! | `ask_user` | `text` (MAI-UI) | ask the user |
//! | `terminate` | `status`: `success` (finish) or `failure` / `fail` (ask the user to take over) | finish / take over |
//!
//! A point is `[x, y]`; a 4-number box `[x1, y1, x2, y2]` stands for its centre (both corners
//! must be in range).
//!
//! PhoneAgent's additions: `"confirm_irreversible": true` and `"sensitive": true` on click,
//! long_press, type and open; `"confirm": true` on `terminate` (two-stage finish). The prose
//! and thinking before the call become `reason`.

use serde::Deserialize;

use super::{Ctx, FamilyAdapter, strip_special_tokens, strip_thinking};
use crate::action::{Action, ActionKind, MAX_META_CHARS};
use crate::geometry::ModelPoint;
use crate::parse_error::{ParseError, ParseErrorKind as K, ParseResult, Position};
use crate::tools::J;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";
const ACTIONS: &str = "click, double_click, long_press, swipe, drag, type, key, system_button, open, wait, answer, ask_user, terminate";

pub(crate) fn parse(text: &str, ctx: &Ctx<'_>) -> ParseResult<Action> {
    let (thinking, body) = strip_thinking(text)?;
    let rest = &text[body..];
    if strip_special_tokens(rest).trim().is_empty() {
        return Err(ParseError::new(
            K::Empty,
            format!(
                "the answer has no action: end it with one call, e.g. {}",
                example()
            ),
        ));
    }
    let opens: Vec<usize> = rest.match_indices(OPEN).map(|(i, _)| body + i).collect();
    let Some(&open) = opens.first() else {
        let t = rest.trim_start();
        let (kind, what) = if t.contains("```") {
            (K::MarkdownWrapped, "a Markdown code block")
        } else if t.contains("\"mobile_use\"") || t.contains("\"action\"") {
            (K::JsonWrapped, "bare JSON")
        } else {
            (K::NoCall, "no <tool_call>")
        };
        return Err(ParseError::at(
            kind,
            format!(
                "the answer has {what}: put exactly one call in <tool_call></tool_call> tags, e.g. {}",
                example()
            ),
            text,
            body,
        ));
    };
    if opens.len() > 1 {
        return Err(ParseError::at(
            K::MultipleCalls,
            "the answer has more than one <tool_call>: send exactly one action per turn",
            text,
            opens[1],
        ));
    }
    let inner_start = open + OPEN.len();
    let (inner_end, after) = match text[inner_start..].find(CLOSE) {
        Some(c) => (inner_start + c, inner_start + c + CLOSE.len()),
        None => (text.len(), text.len()),
    };
    let inner = &text[inner_start..inner_end];
    let lead = inner.len() - inner.trim_start().len();
    if inner.trim_start().starts_with('`') {
        return Err(ParseError::at(
            K::MarkdownWrapped,
            "the JSON inside <tool_call> is wrapped in a Markdown fence: write the bare JSON object",
            text,
            inner_start + lead,
        ));
    }
    let mut de = serde_json::Deserializer::from_str(inner);
    let j = J::deserialize(&mut de).map_err(|e| json_error(text, inner_start, inner, &e))?;
    if let Err(e) = de.end() {
        let missing_close = inner_end == text.len();
        return Err(ParseError::new(
            if missing_close { K::TrailingText } else { K::Syntax },
            format!(
                "text follows the JSON object inside <tool_call> ({e}): write one object and close the tag"
            ),
        )
        .with_position(Position::from_line_column(inner, e.line(), e.column())));
    }
    let tail = strip_special_tokens(&text[after..]);
    if !tail.trim().is_empty() {
        let off = after
            + text[after..]
                .find(|c: char| !c.is_whitespace())
                .unwrap_or(0);
        return Err(ParseError::at(
            K::TrailingText,
            "text follows </tool_call>: end the answer with the call",
            text,
            off,
        ));
    }
    let prose = strip_special_tokens(&text[body..open]);
    let reason = reason_text(thinking.as_deref(), prose.trim());
    let (name, args) = envelope(j)?;
    if name != "mobile_use" {
        return Err(unknown_tool(&name));
    }
    build(args, reason, ctx)
}

/// A native tool call: `name` must be `mobile_use`, `arguments` its JSON object.
pub(crate) fn parse_tool_call(name: &str, arguments: &str, ctx: &Ctx<'_>) -> ParseResult<Action> {
    if name != "mobile_use" {
        return Err(unknown_tool(name));
    }
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let j: J = serde_json::from_str(text).map_err(|e| json_error(text, 0, text, &e))?;
    let J::Obj(args) = j else {
        return Err(ParseError::new(
            K::TypeMismatch,
            "the arguments of mobile_use must be a JSON object such as {\"action\": \"click\", \"coordinate\": [500, 300]}",
        ));
    };
    build(args, None, ctx)
}

fn unknown_tool(name: &str) -> ParseError {
    ParseError::new(
        K::UnknownTool,
        format!("`{name}` is not a function here: the only function is mobile_use"),
    )
}

fn example() -> &'static str {
    "<tool_call>{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"click\", \"coordinate\": [500, 300]}}</tool_call>"
}

fn json_error(text: &str, base: usize, inner: &str, e: &serde_json::Error) -> ParseError {
    let p = Position::from_line_column(inner, e.line(), e.column());
    let kind = if e.is_eof() {
        K::Incomplete
    } else {
        K::InvalidJson
    };
    let msg = if e.is_eof() {
        "the JSON of the call stops before it is complete: send the whole object and close </tool_call>".to_string()
    } else {
        format!(
            "the call is not valid JSON ({e}): write one JSON object with double-quoted keys and ASCII punctuation"
        )
    };
    ParseError::at(kind, msg, text, base + p.byte)
}

fn reason_text(thinking: Option<&str>, prose: &str) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(t) = thinking.filter(|t| !t.is_empty()) {
        parts.push(t.to_string());
    }
    if !prose.is_empty() {
        parts.push(prose.to_string());
    }
    (!parts.is_empty()).then(|| parts.join("\n").chars().take(MAX_META_CHARS).collect())
}

fn envelope(j: J) -> ParseResult<(String, Vec<(String, J)>)> {
    let J::Obj(top) = j else {
        return Err(ParseError::new(
            K::TypeMismatch,
            format!(
                "the <tool_call> must hold a JSON object, e.g. {}",
                example()
            ),
        ));
    };
    let mut name = None;
    let mut args = None;
    for (k, v) in top {
        let dup = match k.as_str() {
            "name" => name.is_some(),
            "arguments" => args.is_some(),
            other => {
                return Err(ParseError::new(
                    K::UnknownKeyword,
                    format!(
                        "the call has a key `{other}`: it takes only \"name\" and \"arguments\""
                    ),
                )
                .with_field(other));
            }
        };
        if dup {
            return Err(ParseError::new(
                K::DuplicateKeyword,
                format!("the key `{k}` is given twice: give each key once"),
            )
            .with_field(k));
        }
        match (k.as_str(), v) {
            ("name", J::Str(s)) => name = Some(s),
            ("arguments", J::Obj(o)) => args = Some(o),
            ("arguments", J::Str(s)) => match serde_json::from_str::<J>(&s) {
                Ok(J::Obj(o)) => args = Some(o),
                _ => {
                    return Err(ParseError::new(
                        K::InvalidJson,
                        "\"arguments\" is a string that is not a JSON object: send the object itself",
                    )
                    .with_field("arguments"));
                }
            },
            (k, _) => {
                return Err(ParseError::new(
                    K::TypeMismatch,
                    format!(
                        "`{k}` has the wrong type: \"name\" is a string, \"arguments\" an object"
                    ),
                )
                .with_field(k));
            }
        }
    }
    let name = name.ok_or_else(|| {
        ParseError::new(
            K::MissingField,
            "the call has no \"name\": use \"name\": \"mobile_use\"",
        )
        .with_field("name")
    })?;
    let args = args.ok_or_else(|| {
        ParseError::new(
            K::MissingField,
            "the call has no \"arguments\" object with the action",
        )
        .with_field("arguments")
    })?;
    Ok((name, args))
}

struct Args {
    items: Vec<(String, J)>,
    action: String,
}

impl Args {
    fn check(&self, allowed: &[&str]) -> ParseResult<()> {
        let mut seen: Vec<&str> = Vec::new();
        for (k, _) in &self.items {
            if seen.contains(&k.as_str()) {
                return Err(ParseError::new(
                    K::DuplicateKeyword,
                    format!("the argument `{k}` is given twice: give each argument once"),
                )
                .with_field(k.clone()));
            }
            seen.push(k);
            if !allowed.contains(&k.as_str()) {
                return Err(ParseError::new(
                    K::UnknownKeyword,
                    format!(
                        "the action `{}` has no argument `{k}`: it takes {}",
                        self.action,
                        allowed.join(", ")
                    ),
                )
                .with_field(k.clone()));
            }
        }
        Ok(())
    }

    fn take(&mut self, key: &str) -> Option<J> {
        let i = self.items.iter().position(|(k, _)| k == key)?;
        let (_, v) = self.items.remove(i);
        (v != J::Null).then_some(v)
    }

    fn string(&mut self, key: &str) -> ParseResult<Option<String>> {
        match self.take(key) {
            None => Ok(None),
            Some(J::Str(s)) => Ok(Some(s)),
            Some(_) => Err(ParseError::new(
                K::TypeMismatch,
                format!("`{key}` of `{}` must be a string", self.action),
            )
            .with_field(key)),
        }
    }

    fn req_string(&mut self, key: &str) -> ParseResult<String> {
        self.string(key)?.ok_or_else(|| {
            ParseError::new(
                K::MissingField,
                format!("the action `{}` needs \"{key}\": \"…\"", self.action),
            )
            .with_field(key)
        })
    }

    fn flag(&mut self, key: &str) -> ParseResult<bool> {
        match self.take(key) {
            None => Ok(false),
            Some(J::Bool(b)) => Ok(b),
            Some(_) => Err(ParseError::new(
                K::TypeMismatch,
                format!("`{key}` must be true or false (a JSON boolean)"),
            )
            .with_field(key)),
        }
    }

    fn number(&mut self, key: &str) -> ParseResult<Option<f64>> {
        match self.take(key) {
            None => Ok(None),
            Some(J::Num(n)) if n < 0.0 => Err(ParseError::new(
                K::NegativeNumber,
                format!("`{key}` is negative ({n}): no value here is negative"),
            )
            .with_field(key)),
            Some(J::Num(n)) => Ok(Some(n)),
            Some(J::Str(s)) => s.trim().parse::<f64>().map(Some).map_err(|_| {
                ParseError::new(
                    K::TypeMismatch,
                    format!("`{key}` must be a number of seconds"),
                )
                .with_field(key)
            }),
            Some(_) => Err(
                ParseError::new(K::TypeMismatch, format!("`{key}` must be a number"))
                    .with_field(key),
            ),
        }
    }

    fn point(&mut self, key: &str, ctx: &Ctx<'_>) -> ParseResult<Option<ModelPoint>> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        let J::Arr(items) = v else {
            return Err(ParseError::new(
                K::TypeMismatch,
                format!("`{key}` must be a list [x, y] of two numbers"),
            )
            .with_field(key));
        };
        if items.len() != 2 && items.len() != 4 {
            return Err(ParseError::new(
                K::WrongLength,
                format!(
                    "`{key}` has {} values: a point is [x, y] (a box [x1, y1, x2, y2] stands for its centre)",
                    items.len()
                ),
            )
            .with_field(key));
        }
        let mut n = [0.0; 4];
        for (i, it) in items.iter().enumerate() {
            n[i] = match it {
                J::Num(v) => *v,
                J::Str(s) if s == "x" || s == "y" => {
                    return Err(ParseError::new(
                        K::Placeholder,
                        format!("`{key}` holds the placeholder \"{s}\": write real numbers"),
                    )
                    .with_field(key));
                }
                _ => {
                    return Err(ParseError::new(
                        K::TypeMismatch,
                        format!("`{key}` must hold two numbers, e.g. [500, 300]"),
                    )
                    .with_field(key));
                }
            };
        }
        if items.len() == 4 {
            for (i, axis) in [(0, "x"), (1, "y")] {
                if n[i + 2] < n[i] {
                    return Err(ParseError::new(
                        K::TypeMismatch,
                        format!("the box `{key}` ends left of / above where it starts on {axis}: write [x1, y1, x2, y2] with x1 <= x2 and y1 <= y2"),
                    )
                    .with_field(key));
                }
            }
            ctx.point(n[0], n[1], key)?;
            ctx.point(n[2], n[3], key)?;
            return ctx
                .point((n[0] + n[2]) / 2.0, (n[1] + n[3]) / 2.0, key)
                .map(Some);
        }
        ctx.point(n[0], n[1], key).map(Some)
    }

    fn req_point(&mut self, key: &str, ctx: &Ctx<'_>) -> ParseResult<ModelPoint> {
        self.point(key, ctx)?.ok_or_else(|| {
            ParseError::new(
                K::MissingField,
                format!("the action `{}` needs \"{key}\": [x, y]", self.action),
            )
            .with_field(key)
        })
    }
}

fn build(items: Vec<(String, J)>, reason: Option<String>, ctx: &Ctx<'_>) -> ParseResult<Action> {
    let mut a = Args {
        items,
        action: String::new(),
    };
    let action = match a.take("action") {
        Some(J::Str(s)) => s,
        Some(_) => {
            return Err(
                ParseError::new(K::TypeMismatch, "\"action\" must be a string")
                    .with_field("action"),
            );
        }
        None => {
            return Err(ParseError::new(
                K::MissingField,
                format!("the arguments have no \"action\": use one of {ACTIONS}"),
            )
            .with_field("action"));
        }
    };
    a.action.clone_from(&action);
    const EXEC: [&str; 2] = ["confirm_irreversible", "sensitive"];
    let exec_keys = |specific: &[&'static str]| -> Vec<&'static str> {
        specific.iter().copied().chain(EXEC).collect()
    };
    let mut exec = false;
    let mut check_swipe = false;
    let kind = match action.as_str() {
        "click" | "left_click" | "tap" => {
            a.check(&exec_keys(&["coordinate"]))?;
            exec = true;
            ActionKind::Tap {
                element: a.req_point("coordinate", ctx)?,
            }
        }
        "double_click" | "double_tap" => {
            a.check(&exec_keys(&["coordinate"]))?;
            exec = true;
            ActionKind::DoubleTap {
                element: a.req_point("coordinate", ctx)?,
            }
        }
        "long_press" => {
            a.check(&exec_keys(&["coordinate", "time"]))?;
            exec = true;
            let element = a.req_point("coordinate", ctx)?;
            let duration_ms = match a.number("time")? {
                None => None,
                Some(s) => {
                    let ms = s * 1000.0;
                    if !(ms > 0.0 && ms <= f64::from(ctx.opts.max_gesture_ms)) {
                        return Err(ParseError::new(
                            K::OutOfRange,
                            format!(
                                "`time` = {s} s: a long press lasts more than 0 and at most {} s",
                                f64::from(ctx.opts.max_gesture_ms) / 1000.0
                            ),
                        )
                        .with_field("time"));
                    }
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    Some(ms.round() as u32)
                }
            };
            ActionKind::LongPress {
                element,
                duration_ms,
            }
        }
        "drag" => {
            a.check(&["start_coordinate", "end_coordinate"])?;
            check_swipe = true;
            ActionKind::Swipe {
                start: a.req_point("start_coordinate", ctx)?,
                end: a.req_point("end_coordinate", ctx)?,
                duration_ms: None,
            }
        }
        "swipe" => {
            a.check(&["coordinate", "coordinate2", "direction"])?;
            let given = a.point("coordinate", ctx)?;
            let dir = a.string("direction")?;
            let start = match (given, &dir) {
                (Some(p), _) => p,
                // MAI-UI: the coordinate is optional with a direction (the screen centre).
                (None, Some(_)) => ModelPoint {
                    x: (ctx.frozen.coord_max_x / 2.0).round(),
                    y: (ctx.frozen.coord_max_y / 2.0).round(),
                },
                (None, None) => a.req_point("coordinate", ctx)?,
            };
            let end = match (a.point("coordinate2", ctx)?, dir) {
                (Some(e), None) => {
                    check_swipe = true;
                    e
                }
                (None, Some(d)) => finger_end(ctx, start, &d)?,
                (Some(_), Some(_)) => {
                    return Err(ParseError::new(
                        K::DuplicateKeyword,
                        "swipe got both \"coordinate2\" and \"direction\": give the end point or the direction, not both",
                    )
                    .with_field("direction"));
                }
                (None, None) => {
                    return Err(ParseError::new(
                        K::MissingField,
                        "swipe needs \"coordinate2\": [x, y] (where the finger ends)",
                    )
                    .with_field("coordinate2"));
                }
            };
            ActionKind::Swipe {
                start,
                end,
                duration_ms: None,
            }
        }
        "type" => {
            a.check(&exec_keys(&["text"]))?;
            exec = true;
            let t = a.req_string("text")?;
            ActionKind::Type {
                text: ctx.text(t, "text", ctx.opts.max_text_chars)?,
            }
        }
        "key" | "system_button" => {
            let key = if action == "key" { "text" } else { "button" };
            a.check(&[key])?;
            let b = a.req_string(key)?;
            match b.trim().to_lowercase().as_str() {
                "back" | "keycode_back" => ActionKind::Back,
                "home" | "keycode_home" => ActionKind::Home,
                other => {
                    return Err(ParseError::new(
                        K::UnknownAction,
                        format!(
                            "the button \"{other}\" is not available: use \"Back\" or \"Home\""
                        ),
                    )
                    .with_field(key));
                }
            }
        }
        "open" | "open_app" => {
            a.check(&exec_keys(&["text"]))?;
            exec = true;
            let t = a.req_string("text")?;
            ctx.launch(t, "text")?
        }
        "wait" => {
            a.check(&["time", "duration"])?;
            let s = match (a.number("time")?, a.number("duration")?) {
                (Some(t), None) | (None, Some(t)) => t,
                (None, None) => 2.0_f64.min(ctx.opts.max_wait_secs),
                (Some(_), Some(_)) => {
                    return Err(ParseError::new(
                        K::DuplicateKeyword,
                        "wait got both \"time\" and \"duration\": give the seconds once",
                    )
                    .with_field("duration"));
                }
            };
            ctx.wait(s, "time")?
        }
        "ask_user" => {
            a.check(&["text"])?;
            let t = a.req_string("text")?;
            ActionKind::AskUser {
                question: ctx.text(t, "text", ctx.opts.max_message_chars)?,
            }
        }
        "answer" => {
            a.check(&["text"])?;
            let t = a.req_string("text")?;
            ActionKind::Note {
                message: ctx.text(t, "text", ctx.opts.max_message_chars)?,
                task_board: None,
            }
        }
        "terminate" => {
            a.check(&["status", "confirm"])?;
            let status = a.req_string("status")?;
            let confirm = a.flag("confirm")?;
            match status.trim() {
                "success" => ActionKind::Finish {
                    message: reason
                        .clone()
                        .filter(|r| !r.trim().is_empty())
                        .map(|r| r.chars().take(ctx.opts.max_message_chars).collect())
                        .unwrap_or_else(|| "The task is complete.".into()),
                    confirm,
                },
                "failure" | "fail" => ActionKind::TakeOver {
                    message: "The model could not complete the task (terminate with status failure): please take over.".into(),
                },
                other => {
                    return Err(ParseError::new(
                        K::TypeMismatch,
                        format!("\"status\" must be \"success\" or \"failure\" (\"fail\"), not \"{other}\""),
                    )
                    .with_field("status"));
                }
            }
        }
        other => {
            return Err(ParseError::new(
                K::UnknownAction,
                format!("`{other}` is not an action of mobile_use: use one of {ACTIONS}"),
            )
            .with_field("action"));
        }
    };
    let mut out = Action::new(kind);
    out.reason = reason;
    if exec {
        out.confirm_irreversible = a.flag("confirm_irreversible")?;
        out.sensitive = a.flag("sensitive")?;
    }
    if check_swipe {
        ctx.check_swipe(&out)?;
    }
    Ok(out)
}

/// `swipe` with `direction`: the finger moves 40 % of the screen that way (SPEC A5 words).
fn finger_end(ctx: &Ctx<'_>, s: ModelPoint, dir: &str) -> ParseResult<ModelPoint> {
    let (mx, my) = (ctx.frozen.coord_max_x, ctx.frozen.coord_max_y);
    let (dx, dy) = match dir.trim().to_lowercase().as_str() {
        "up" => (0.0, -0.4 * my),
        "down" => (0.0, 0.4 * my),
        "left" => (-0.4 * mx, 0.0),
        "right" => (0.4 * mx, 0.0),
        other => {
            return Err(ParseError::new(
                K::TypeMismatch,
                format!(
                    "\"direction\" must be \"up\", \"down\", \"left\" or \"right\", not \"{other}\""
                ),
            )
            .with_field("direction"));
        }
    };
    Ok(ModelPoint {
        x: (s.x + dx).round().clamp(0.0, mx),
        y: (s.y + dy).round().clamp(0.0, my),
    })
}

/// The turn as a Qwen model writes it: `<tool_call>{…}</tool_call>`, native coordinates.
pub(crate) fn render(ad: &FamilyAdapter, a: &Action, image: (u32, u32)) -> String {
    use serde_json::{Map, Value, json};
    let pt = |p: ModelPoint| {
        let (x, y) = ad
            .coords
            .from_frozen(p, image)
            .unwrap_or((p.x.round() as i64, p.y.round() as i64));
        json!([x, y])
    };
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    match &a.kind {
        ActionKind::Tap { element } => {
            put("action", json!("click"));
            put("coordinate", pt(*element));
        }
        ActionKind::DoubleTap { element } => {
            put("action", json!("double_click"));
            put("coordinate", pt(*element));
        }
        ActionKind::LongPress {
            element,
            duration_ms,
        } => {
            put("action", json!("long_press"));
            put("coordinate", pt(*element));
            if let Some(ms) = duration_ms {
                put("time", json!(f64::from(*ms) / 1000.0));
            }
        }
        ActionKind::Swipe { start, end, .. } => {
            put("action", json!("swipe"));
            put("coordinate", pt(*start));
            put("coordinate2", pt(*end));
        }
        ActionKind::Type { text } => {
            put("action", json!("type"));
            put("text", json!(text));
        }
        ActionKind::Back => {
            put("action", json!("system_button"));
            put("button", json!("Back"));
        }
        ActionKind::Home => {
            put("action", json!("system_button"));
            put("button", json!("Home"));
        }
        ActionKind::Wait { seconds } => {
            put("action", json!("wait"));
            put("time", json!(seconds));
        }
        ActionKind::TakeOver { .. } | ActionKind::AskUser { .. } => {
            put("action", json!("terminate"));
            put("status", json!("failure"));
        }
        ActionKind::Note { message, .. } => {
            put("action", json!("answer"));
            put("text", json!(message));
        }
        ActionKind::Finish { confirm, .. } => {
            put("action", json!("terminate"));
            put("status", json!("success"));
            if *confirm {
                put("confirm", json!(true));
            }
        }
        ActionKind::LaunchApp { name } => {
            put("action", json!("open"));
            put("text", json!(name));
        }
    }
    if a.kind.is_gated() {
        if a.confirm_irreversible {
            put("confirm_irreversible", json!(true));
        }
        if a.sensitive {
            put("sensitive", json!(true));
        }
    }
    let call = json!({"name": "mobile_use", "arguments": Value::Object(m)});
    format!("{OPEN}\n{call}\n{CLOSE}")
}
