//! The closed per-action schemas shared by both front ends (SPEC A3, A6).
//!
//! Both parsers reduce their input to the same shape — a list of keyword arguments whose values
//! are strings, numbers, booleans, lists (and, for tool calls, objects and `null`) with their
//! location — and the functions here turn that into an [`Action`] or a precise rejection.
//! Unknown keywords are reported before missing ones, so the model learns about a misspelt
//! keyword first.
//!
//! Size (about 1,180 lines of code then tests): one closed schema per action kind, kept side by
//! side so every kind is checked with the same helpers and in the same order (unknown keywords
//! before missing ones).

use crate::action::{Action, ActionKind, MAX_META_CHARS, TaskItem};
use crate::geometry::ModelPoint;
use crate::options::{ParseOptions, fmt_num};
use crate::parse_error::{ParseError, ParseErrorKind as K, ParseResult, Position};

/// Where a value is: a byte span in the `do` text, or a JSON path in tool-call arguments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Loc {
    /// Byte offsets `[start, end)` into the parsed text.
    Span(usize, usize),
    /// A JSON path such as `element[0]` (tool calls).
    Path(String),
}

/// A literal value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Str(String),
    Num(f64),
    Bool(bool),
    List(Vec<Node>),
    /// Tool calls only.
    Obj(Vec<(String, Node)>),
    /// Tool calls only; treated as "absent" for optional arguments.
    Null,
}

impl Val {
    fn type_name(&self) -> &'static str {
        match self {
            Val::Str(_) => "a string",
            Val::Num(_) => "a number",
            Val::Bool(_) => "a boolean",
            Val::List(_) => "a list",
            Val::Obj(_) => "an object",
            Val::Null => "null",
        }
    }
}

/// A value with its location.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub val: Val,
    pub loc: Loc,
}

/// One keyword argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Arg {
    pub key: String,
    pub key_loc: Loc,
    pub node: Node,
}

/// Which front end the arguments came from: changes wording ("keyword" / "argument") and
/// examples in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Front {
    Do,
    Tool,
}

/// The keyword arguments of one call, consumed field by field.
pub(crate) struct Args<'a> {
    src: &'a str,
    items: Vec<Arg>,
    /// Where missing-field errors point (the call / the arguments object).
    call_loc: Loc,
    front: Front,
    /// Action name as the model wrote it (`Tap`, `type_text`), for messages.
    what: String,
}

const META_KEYS: [&str; 2] = ["screen_description", "reason"];
const EXEC_KEYS: [&str; 3] = ["target_description", "confirm_irreversible", "sensitive"];

impl<'a> Args<'a> {
    pub(crate) fn new(
        src: &'a str,
        items: Vec<Arg>,
        call_loc: Loc,
        front: Front,
        what: impl Into<String>,
    ) -> Self {
        Self {
            src,
            items,
            call_loc,
            front,
            what: what.into(),
        }
    }

    fn word(&self) -> &'static str {
        match self.front {
            Front::Do => "keyword",
            Front::Tool => "argument",
        }
    }

    /// An error located at `loc`.
    pub(crate) fn err(
        &self,
        kind: K,
        msg: impl Into<String>,
        loc: &Loc,
        field: &str,
    ) -> ParseError {
        located(self.src, kind, msg, loc, field)
    }

    /// Rejects every keyword not in `allowed` (the legacy `description` with its own kind).
    fn check_keys(&self, allowed: &[&str]) -> ParseResult<()> {
        for a in &self.items {
            if allowed.contains(&a.key.as_str()) {
                continue;
            }
            if a.key == "description" {
                return Err(self.err(
                    K::LegacyDescription,
                    format!(
                        "the `description` {} is no longer accepted: describe the current screen in \
                         `screen_description` and explain why you chose this action in `reason`",
                        self.word()
                    ),
                    &a.key_loc,
                    &a.key,
                ));
            }
            return Err(self.err(
                K::UnknownKeyword,
                format!(
                    "unknown {} `{}` for {}: allowed {}s are {}",
                    self.word(),
                    a.key,
                    self.what,
                    self.word(),
                    allowed.join(", ")
                ),
                &a.key_loc,
                &a.key,
            ));
        }
        Ok(())
    }

    /// Removes and returns the value of `key`; a JSON `null` counts as absent.
    fn take(&mut self, key: &str) -> Option<Node> {
        let i = self.items.iter().position(|a| a.key == key)?;
        let node = self.items.remove(i).node;
        if node.val == Val::Null {
            None
        } else {
            Some(node)
        }
    }

    fn require(&mut self, key: &str, example: &str) -> ParseResult<Node> {
        match self.take(key) {
            Some(n) => Ok(n),
            None => Err(self.err(
                K::MissingField,
                format!(
                    "{} needs the {} `{key}` ({example})",
                    self.what,
                    self.word()
                ),
                &self.call_loc.clone(),
                key,
            )),
        }
    }

    fn string(&self, node: Node, key: &str, max_chars: usize) -> ParseResult<String> {
        match node.val {
            Val::Str(s) => {
                if s == "xxx" {
                    return Err(self.err(
                        K::Placeholder,
                        format!(
                            "`{key}` is the placeholder \"xxx\" from the instructions: write the real value"
                        ),
                        &node.loc,
                        key,
                    ));
                }
                let n = s.chars().count();
                if n > max_chars {
                    return Err(self.err(
                        K::TooLong,
                        format!("`{key}` is {n} chars long; at most {max_chars} are allowed"),
                        &node.loc,
                        key,
                    ));
                }
                Ok(s)
            }
            other => Err(self.err(
                K::TypeMismatch,
                format!(
                    "`{key}` must be a string in double quotes, not {}",
                    other.type_name()
                ),
                &node.loc,
                key,
            )),
        }
    }

    fn opt_string(&mut self, key: &str, max_chars: usize) -> ParseResult<Option<String>> {
        match self.take(key) {
            Some(n) => self.string(n, key, max_chars).map(Some),
            None => Ok(None),
        }
    }

    fn req_string(&mut self, key: &str, max_chars: usize, example: &str) -> ParseResult<String> {
        let n = self.require(key, example)?;
        self.string(n, key, max_chars)
    }

    fn opt_bool(&mut self, key: &str) -> ParseResult<bool> {
        match self.take(key) {
            None => Ok(false),
            Some(Node {
                val: Val::Bool(b), ..
            }) => Ok(b),
            Some(n) => {
                let hint = match self.front {
                    Front::Do => "True or False, without quotes",
                    Front::Tool => "true or false",
                };
                Err(self.err(
                    K::TypeMismatch,
                    format!("`{key}` must be {hint}, not {}", n.val.type_name()),
                    &n.loc,
                    key,
                ))
            }
        }
    }

    fn number(&self, node: &Node, key: &str) -> ParseResult<f64> {
        match &node.val {
            Val::Num(v) if *v < 0.0 => Err(self.err(
                K::NegativeNumber,
                format!(
                    "`{key}` is negative ({}); no value of this protocol is negative",
                    fmt_num(*v)
                ),
                &node.loc,
                key,
            )),
            Val::Num(v) => Ok(*v),
            other => Err(self.err(
                K::TypeMismatch,
                format!("`{key}` must be a number, not {}", other.type_name()),
                &node.loc,
                key,
            )),
        }
    }

    /// `[x, y]` inside the frozen coordinate space; never clamped (SPEC M5).
    fn point(&self, node: Node, key: &str, opts: &ParseOptions) -> ParseResult<ModelPoint> {
        let items = match node.val {
            Val::List(items) => items,
            other => {
                return Err(self.err(
                    K::TypeMismatch,
                    format!(
                        "`{key}` must be a list [x, y] of two numbers, not {}",
                        other.type_name()
                    ),
                    &node.loc,
                    key,
                ));
            }
        };
        if items.len() != 2 {
            return Err(self.err(
                K::WrongLength,
                format!(
                    "`{key}` has {} item{}; a point is exactly two numbers [x, y]",
                    items.len(),
                    if items.len() == 1 { "" } else { "s" }
                ),
                &node.loc,
                key,
            ));
        }
        let mut xy = [0.0; 2];
        for (i, (item, (axis, max))) in items
            .iter()
            .zip([("x", opts.coord_max_x), ("y", opts.coord_max_y)])
            .enumerate()
        {
            let field = format!("{key}[{i}]");
            if let Val::Str(s) = &item.val
                && is_placeholder_name(s)
            {
                return Err(self.err(
                    K::Placeholder,
                    format!(
                        "`{key}` contains the placeholder \"{s}\": write real coordinates, e.g. [500, 300]"
                    ),
                    &item.loc,
                    &field,
                ));
            }
            let v = self.number(item, &field)?;
            if v > max {
                return Err(self.err(
                    K::OutOfRange,
                    format!(
                        "{axis}={} in `{key}` is outside the coordinate space: x is 0..={} \
                         (left to right) and y is 0..={} (top to bottom); coordinates are never clamped",
                        fmt_num(v),
                        fmt_num(opts.coord_max_x),
                        fmt_num(opts.coord_max_y)
                    ),
                    &item.loc,
                    &field,
                ));
            }
            xy[i] = v;
        }
        Ok(ModelPoint { x: xy[0], y: xy[1] })
    }

    fn opt_ms(&mut self, key: &str, max_ms: u32) -> ParseResult<Option<u32>> {
        let Some(node) = self.take(key) else {
            return Ok(None);
        };
        let v = self.number(&node, key)?;
        if v.fract() != 0.0 {
            return Err(self.err(
                K::TypeMismatch,
                format!(
                    "`{key}` must be a whole number of milliseconds, not {}",
                    fmt_num(v)
                ),
                &node.loc,
                key,
            ));
        }
        if v < 1.0 || v > f64::from(max_ms) {
            return Err(self.err(
                K::OutOfRange,
                format!(
                    "`{key}`={} is out of range: use 1..={max_ms} milliseconds",
                    fmt_num(v)
                ),
                &node.loc,
                key,
            ));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(Some(v as u32))
    }

    /// `screen_description` and `reason` (optional, ≤ 4000 chars; SPEC A3).
    fn meta(&mut self, action: &mut Action) -> ParseResult<()> {
        action.screen_description = self.opt_string("screen_description", MAX_META_CHARS)?;
        action.reason = self.opt_string("reason", MAX_META_CHARS)?;
        Ok(())
    }

    /// `target_description`, `confirm_irreversible`, `sensitive` of executing actions (SPEC A6).
    fn exec_flags(&mut self, action: &mut Action) -> ParseResult<()> {
        action.target_description = self.opt_string("target_description", MAX_META_CHARS)?;
        action.confirm_irreversible = self.opt_bool("confirm_irreversible")?;
        action.sensitive = self.opt_bool("sensitive")?;
        Ok(())
    }
}

/// An error at `loc` in `src`.
pub(crate) fn located(
    src: &str,
    kind: K,
    msg: impl Into<String>,
    loc: &Loc,
    field: &str,
) -> ParseError {
    match loc {
        Loc::Span(start, _) => ParseError::new(kind, msg)
            .with_position(Position::in_text(src, *start))
            .with_field(field),
        Loc::Path(p) => ParseError::new(kind, msg).with_field(if p.is_empty() {
            field.to_string()
        } else {
            p.clone()
        }),
    }
}

/// `x`, `y`, `x1`, `y2`, … — the placeholders of the AutoGLM-style instructions.
pub(crate) fn is_placeholder_name(s: &str) -> bool {
    matches!(
        s,
        "x" | "y" | "x1" | "y1" | "x2" | "y2" | "X" | "Y" | "x0" | "y0"
    )
}

fn keys(specific: &[&'static str], exec: bool) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = specific.to_vec();
    if exec {
        v.extend(EXEC_KEYS);
    }
    v.extend(META_KEYS);
    v
}

/// The actions of the `do` grammar, as the model writes them.
pub(crate) const DO_ACTIONS: [&str; 13] = [
    "Tap",
    "Double Tap",
    "Long Press",
    "Swipe",
    "Type",
    "Type_Name",
    "Back",
    "Home",
    "Wait",
    "Take_over",
    "Interact",
    "Note",
    "Launch",
];

/// Suggests the right spelling for an unknown action name.
fn suggest_do_action(name: &str) -> Option<&'static str> {
    let norm: String = name
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect();
    Some(match norm.as_str() {
        "tap" | "click" | "press" | "touch" => "Tap",
        "doubletap" | "doubleclick" => "Double Tap",
        "longpress" | "longclick" | "hold" | "presshold" => "Long Press",
        "swipe" | "scroll" | "slide" | "drag" | "fling" => "Swipe",
        "type" | "typetext" | "input" | "inputtext" | "typename" | "write" => "Type",
        "back" | "goback" | "pressback" => "Back",
        "home" | "gohome" | "presshome" => "Home",
        "wait" | "sleep" => "Wait",
        "takeover" => "Take_over",
        "interact" | "askuser" | "ask" => "Interact",
        "note" | "memo" | "record" => "Note",
        "launch" | "launchapp" | "open" | "openapp" | "start" | "startapp" => "Launch",
        "finish" | "done" | "complete" | "stop" | "end" => "finish",
        _ => return None,
    })
}

/// Builds an action of the `do` grammar (`do(action="…", …)`).
pub(crate) fn build_do(
    mut args: Args<'_>,
    action_node: Node,
    opts: &ParseOptions,
) -> ParseResult<Action> {
    let name = match &action_node.val {
        Val::Str(s) => s.clone(),
        other => {
            return Err(args.err(
                K::TypeMismatch,
                format!(
                    "`action` must be a string such as \"Tap\", not {}",
                    other.type_name()
                ),
                &action_node.loc,
                "action",
            ));
        }
    };
    args.what = name.clone();
    let exec = |s: &[&'static str]| keys(s, true);
    let plain = |s: &[&'static str]| keys(s, false);
    let kind_and_keys: (&str, Vec<&'static str>) = match name.as_str() {
        "Tap" => ("tap", exec(&["element", "message"])),
        "Double Tap" => ("double_tap", exec(&["element"])),
        "Long Press" => ("long_press", exec(&["element", "duration_ms"])),
        "Swipe" => ("swipe", plain(&["start", "end", "duration_ms"])),
        "Type" | "Type_Name" => ("type", exec(&["text"])),
        "Back" => ("back", plain(&[])),
        "Home" => ("home", plain(&[])),
        "Wait" => ("wait", plain(&["duration"])),
        "Take_over" => ("take_over", plain(&["message"])),
        "Interact" => ("interact", plain(&["message"])),
        "Note" => ("note", plain(&["message", "task_board"])),
        "Launch" => ("launch", exec(&["app"])),
        "Call_API" => {
            return Err(args.err(
                K::UnknownAction,
                "the action \"Call_API\" does not exist in this runtime: record what you read with \
                 do(action=\"Note\", message=\"…\") and report results with finish(message=\"…\")",
                &action_node.loc,
                "action",
            ));
        }
        other => {
            let hint = match suggest_do_action(other) {
                Some("finish") => {
                    " (to end the task, write finish(message=\"…\") instead of do(...))".to_string()
                }
                Some(s) => format!(" (did you mean \"{s}\"?)"),
                None => String::new(),
            };
            return Err(args.err(
                K::UnknownAction,
                format!(
                    "unknown action \"{other}\"{hint}: the actions are {}",
                    available_actions(opts)
                ),
                &action_node.loc,
                "action",
            ));
        }
    };
    let (kind, allowed) = kind_and_keys;
    if kind == "launch" && !opts.app_launcher {
        return Err(args.err(
            K::LauncherDisabled,
            "Launch is not available: the app launcher is off. Open apps through the screen \
             instead, e.g. do(action=\"Home\") and then tap the app's icon",
            &action_node.loc,
            "action",
        ));
    }
    args.check_keys(&allowed)?;
    let mut action = Action::new(ActionKind::Back);
    action.kind = match kind {
        "tap" => {
            let n = args.require("element", "element=[x, y]")?;
            let element = args.point(n, "element", opts)?;
            // AutoGLM-style `message="…"` marks a sensitive tap (payment, privacy): it is kept
            // as the target description and raises `sensitive` (SPEC S3: → hard tier).
            let message = args.opt_string("message", MAX_META_CHARS)?;
            args.exec_flags(&mut action)?;
            if let Some(m) = message {
                action.sensitive = true;
                if action.target_description.is_none() {
                    action.target_description = Some(m);
                }
            }
            ActionKind::Tap { element }
        }
        "double_tap" => {
            let n = args.require("element", "element=[x, y]")?;
            let element = args.point(n, "element", opts)?;
            args.exec_flags(&mut action)?;
            ActionKind::DoubleTap { element }
        }
        "long_press" => {
            let n = args.require("element", "element=[x, y]")?;
            let element = args.point(n, "element", opts)?;
            let duration_ms = args.opt_ms("duration_ms", opts.max_gesture_ms)?;
            args.exec_flags(&mut action)?;
            ActionKind::LongPress {
                element,
                duration_ms,
            }
        }
        "swipe" => {
            let n = args.require("start", "start=[x1, y1]")?;
            let start = args.point(n, "start", opts)?;
            let n = args.require("end", "end=[x2, y2]")?;
            let end = args.point(n, "end", opts)?;
            let duration_ms = args.opt_ms("duration_ms", opts.max_gesture_ms)?;
            ActionKind::Swipe {
                start,
                end,
                duration_ms,
            }
        }
        "type" => {
            let text = args.req_string("text", opts.max_text_chars, "text=\"…\"")?;
            args.exec_flags(&mut action)?;
            ActionKind::Type { text }
        }
        "back" => ActionKind::Back,
        "home" => ActionKind::Home,
        "wait" => {
            let n = args.require("duration", "duration=\"2 seconds\"")?;
            let seconds = wait_seconds(&args, n, "duration", opts)?;
            ActionKind::Wait { seconds }
        }
        "take_over" => {
            let message = args.req_string(
                "message",
                opts.max_message_chars,
                "message=\"what the user should do\"",
            )?;
            ActionKind::TakeOver { message }
        }
        "interact" => {
            let question = args
                .opt_string("message", opts.max_message_chars)?
                .unwrap_or_else(|| DEFAULT_INTERACT_QUESTION.to_string());
            ActionKind::AskUser { question }
        }
        "note" => {
            let message = args.req_string("message", opts.max_message_chars, "message=\"…\"")?;
            let task_board = match args.take("task_board") {
                Some(n) => Some(do_task_board(&args, n)?),
                None => None,
            };
            ActionKind::Note {
                message,
                task_board,
            }
        }
        "launch" => {
            let name = args.req_string("app", opts.max_message_chars, "app=\"Settings\"")?;
            args.exec_flags(&mut action)?;
            ActionKind::LaunchApp { name }
        }
        _ => {
            return Err(args.err(
                K::UnknownAction,
                format!("unknown action \"{name}\""),
                &action_node.loc,
                "action",
            ));
        }
    };
    args.meta(&mut action)?;
    Ok(action)
}

/// The question an `Interact` without `message` asks (AutoGLM emits a bare
/// `do(action="Interact")` when several options match).
pub const DEFAULT_INTERACT_QUESTION: &str =
    "Several options match the task. Which one should I choose?";

/// Builds `finish(message="…", confirm=True)`.
pub(crate) fn build_finish(mut args: Args<'_>, opts: &ParseOptions) -> ParseResult<Action> {
    args.check_keys(&keys(&["message", "confirm"], false))?;
    let message = args.req_string(
        "message",
        opts.max_message_chars,
        "message=\"what was done\"",
    )?;
    let confirm = args.opt_bool("confirm")?;
    let mut action = Action::new(ActionKind::Finish { message, confirm });
    args.meta(&mut action)?;
    Ok(action)
}

/// Names of the available `do` actions, for messages.
pub(crate) fn available_actions(opts: &ParseOptions) -> String {
    let mut v: Vec<String> = DO_ACTIONS
        .iter()
        .filter(|a| **a != "Type_Name" && (opts.app_launcher || **a != "Launch"))
        .map(|a| format!("\"{a}\""))
        .collect();
    v.push("and finish(message=…)".to_string());
    v.join(", ")
}

/// `"2 seconds"`, `"2s"`, `"1.5 秒"`, `2` → seconds, bounded `(0, max_wait_secs]`.
fn wait_seconds(args: &Args<'_>, node: Node, key: &str, opts: &ParseOptions) -> ParseResult<f64> {
    let v = match &node.val {
        Val::Num(_) => args.number(&node, key)?,
        Val::Str(s) => {
            let t = s.trim();
            if t == "x seconds" || t == "x" {
                return Err(args.err(
                    K::Placeholder,
                    format!("`{key}` is the placeholder \"{t}\": write a number of seconds such as \"2 seconds\""),
                    &node.loc,
                    key,
                ));
            }
            match parse_seconds(t) {
                Some(v) if v < 0.0 => {
                    return Err(args.err(
                        K::NegativeNumber,
                        format!(
                            "`{key}` is negative (\"{t}\"): write a positive number of seconds"
                        ),
                        &node.loc,
                        key,
                    ));
                }
                Some(v) => v,
                None => {
                    return Err(args.err(
                        K::TypeMismatch,
                        format!(
                            "`{key}`=\"{t}\" is not a duration: write a number of seconds such as \"2 seconds\" or 2"
                        ),
                        &node.loc,
                        key,
                    ));
                }
            }
        }
        other => {
            return Err(args.err(
                K::TypeMismatch,
                format!(
                    "`{key}` must be a number of seconds such as \"2 seconds\" or 2, not {}",
                    other.type_name()
                ),
                &node.loc,
                key,
            ));
        }
    };
    if !(v > 0.0 && v <= opts.max_wait_secs) {
        return Err(args.err(
            K::OutOfRange,
            format!(
                "a wait of {} seconds is out of range: wait more than 0 and at most {} seconds",
                fmt_num(v),
                fmt_num(opts.max_wait_secs)
            ),
            &node.loc,
            key,
        ));
    }
    Ok(v)
}

/// Parses `"2"`, `"2.5 seconds"`, `"3s"`, `"1 sec"`, `"2秒"`, `"-1 seconds"` (returned as −1).
pub(crate) fn parse_seconds(t: &str) -> Option<f64> {
    let (neg, rest) = match t.strip_prefix('-') {
        Some(r) => (true, r.trim_start()),
        None => (false, t),
    };
    let num_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (num, unit) = rest.split_at(num_end);
    if num.is_empty() || num.starts_with('.') || num.matches('.').count() > 1 {
        return None;
    }
    let unit = unit.trim().to_ascii_lowercase();
    if !matches!(
        unit.as_str(),
        "" | "s" | "sec" | "secs" | "second" | "seconds" | "秒" | "秒钟"
    ) {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    Some(if neg { -v } else { v })
}

const MAX_TASK_ITEMS: usize = 100;
const MAX_TASK_ITEM_CHARS: usize = 1000;

/// `task_board=["[x] open the mail app", "[ ] write the draft"]`.
fn do_task_board(args: &Args<'_>, node: Node) -> ParseResult<Vec<TaskItem>> {
    let items = match node.val {
        Val::List(items) => items,
        other => {
            return Err(args.err(
                K::TypeMismatch,
                format!(
                    "`task_board` must be a list of strings such as [\"[x] open the app\", \"[ ] search\"], not {}",
                    other.type_name()
                ),
                &node.loc,
                "task_board",
            ));
        }
    };
    if items.len() > MAX_TASK_ITEMS {
        return Err(args.err(
            K::TooLong,
            format!(
                "`task_board` has {} items; at most {MAX_TASK_ITEMS} are allowed",
                items.len()
            ),
            &node.loc,
            "task_board",
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let field = format!("task_board[{i}]");
        let Val::Str(s) = &item.val else {
            return Err(args.err(
                K::TypeMismatch,
                format!(
                    "`{field}` must be a string such as \"[ ] search\", not {}",
                    item.val.type_name()
                ),
                &item.loc,
                &field,
            ));
        };
        let (done, rest) = if let Some(r) = s.strip_prefix("[ ]") {
            (false, r)
        } else if let Some(r) = s.strip_prefix("[x]").or_else(|| s.strip_prefix("[X]")) {
            (true, r)
        } else {
            return Err(args.err(
                K::TypeMismatch,
                format!(
                    "`{field}` must start with \"[ ] \" (open) or \"[x] \" (done), e.g. \"[x] open the app\""
                ),
                &item.loc,
                &field,
            ));
        };
        let text = rest.strip_prefix(' ').unwrap_or(rest).to_string();
        if text.chars().count() > MAX_TASK_ITEM_CHARS {
            return Err(args.err(
                K::TooLong,
                format!("`{field}` is longer than {MAX_TASK_ITEM_CHARS} chars"),
                &item.loc,
                &field,
            ));
        }
        out.push(TaskItem { text, done });
    }
    Ok(out)
}

/// The tool names (SPEC A1), `launch_app` last.
pub const TOOL_NAMES: [&str; 14] = [
    "tap",
    "double_tap",
    "long_press",
    "swipe",
    "scroll",
    "type_text",
    "back",
    "home",
    "wait",
    "ask_user",
    "take_over",
    "note",
    "finish",
    "launch_app",
];

/// How far a `scroll` moves, as a fraction of the screen along its axis.
fn scroll_fraction(distance: &str) -> Option<f64> {
    match distance {
        "short" => Some(0.2),
        "medium" => Some(0.4),
        "long" => Some(0.6),
        _ => None,
    }
}

/// Builds an action from a tool call's arguments (SPEC A1, A3, A6).
pub(crate) fn build_tool(
    mut args: Args<'_>,
    name: &str,
    opts: &ParseOptions,
) -> ParseResult<Action> {
    let exec = |s: &[&'static str]| keys(s, true);
    let plain = |s: &[&'static str]| keys(s, false);
    let allowed = match name {
        "tap" | "double_tap" => exec(&["element"]),
        "long_press" => exec(&["element", "duration_ms"]),
        "swipe" => plain(&["start", "end", "duration_ms"]),
        "scroll" => plain(&["direction", "element", "distance"]),
        "type_text" => exec(&["text"]),
        "back" | "home" => plain(&[]),
        "wait" => plain(&["seconds"]),
        "ask_user" => plain(&["question"]),
        "take_over" => plain(&["message"]),
        "note" => plain(&["message", "task_board"]),
        "finish" => plain(&["message", "confirm"]),
        "launch_app" => {
            if !opts.app_launcher {
                return Err(ParseError::new(
                    K::LauncherDisabled,
                    "launch_app is not available: the app launcher is off. Open apps through the \
                     screen instead (home, then tap the app's icon)",
                )
                .with_field("name"));
            }
            exec(&["name"])
        }
        other => {
            let offered: Vec<&str> = TOOL_NAMES
                .iter()
                .copied()
                .filter(|t| opts.app_launcher || *t != "launch_app")
                .collect();
            return Err(ParseError::new(
                K::UnknownTool,
                format!(
                    "unknown tool `{other}`: the tools are {}",
                    offered.join(", ")
                ),
            ));
        }
    };
    args.check_keys(&allowed)?;
    let mut action = Action::new(ActionKind::Back);
    action.kind = match name {
        "tap" | "double_tap" => {
            let n = args.require("element", "\"element\": [x, y]")?;
            let element = args.point(n, "element", opts)?;
            args.exec_flags(&mut action)?;
            if name == "tap" {
                ActionKind::Tap { element }
            } else {
                ActionKind::DoubleTap { element }
            }
        }
        "long_press" => {
            let n = args.require("element", "\"element\": [x, y]")?;
            let element = args.point(n, "element", opts)?;
            let duration_ms = args.opt_ms("duration_ms", opts.max_gesture_ms)?;
            args.exec_flags(&mut action)?;
            ActionKind::LongPress {
                element,
                duration_ms,
            }
        }
        "swipe" => {
            let n = args.require("start", "\"start\": [x1, y1]")?;
            let start = args.point(n, "start", opts)?;
            let n = args.require("end", "\"end\": [x2, y2]")?;
            let end = args.point(n, "end", opts)?;
            let duration_ms = args.opt_ms("duration_ms", opts.max_gesture_ms)?;
            ActionKind::Swipe {
                start,
                end,
                duration_ms,
            }
        }
        "scroll" => scroll_to_swipe(&mut args, opts)?,
        "type_text" => {
            let text = args.req_string("text", opts.max_text_chars, "\"text\": \"…\"")?;
            args.exec_flags(&mut action)?;
            ActionKind::Type { text }
        }
        "back" => ActionKind::Back,
        "home" => ActionKind::Home,
        "wait" => {
            let n = args.require("seconds", "\"seconds\": 2")?;
            let seconds = wait_seconds(&args, n, "seconds", opts)?;
            ActionKind::Wait { seconds }
        }
        "ask_user" => {
            let question =
                args.req_string("question", opts.max_message_chars, "\"question\": \"…\"")?;
            ActionKind::AskUser { question }
        }
        "take_over" => {
            let message =
                args.req_string("message", opts.max_message_chars, "\"message\": \"…\"")?;
            ActionKind::TakeOver { message }
        }
        "note" => {
            let message =
                args.req_string("message", opts.max_message_chars, "\"message\": \"…\"")?;
            let task_board = match args.take("task_board") {
                Some(n) => Some(tool_task_board(&args, n)?),
                None => None,
            };
            ActionKind::Note {
                message,
                task_board,
            }
        }
        "finish" => {
            let message =
                args.req_string("message", opts.max_message_chars, "\"message\": \"…\"")?;
            let confirm = args.opt_bool("confirm")?;
            ActionKind::Finish { message, confirm }
        }
        "launch_app" => {
            let name = args.req_string("name", opts.max_message_chars, "\"name\": \"Settings\"")?;
            args.exec_flags(&mut action)?;
            ActionKind::LaunchApp { name }
        }
        other => {
            return Err(ParseError::new(
                K::UnknownTool,
                format!("unknown tool `{other}`"),
            ));
        }
    };
    args.meta(&mut action)?;
    Ok(action)
}

/// `scroll(direction, element?, distance?)` as a swipe. Scroll direction is the direction the
/// *content view* moves towards: scrolling `down` reveals what is below, so the content moves up
/// and the finger moves **up** (start below end). `left`/`right` likewise: scrolling `right`
/// reveals what is to the right, so the finger moves left. The gesture is centred on `element`
/// (default: the screen centre), covers 20/40/60 % of the axis for `short`/`medium`/`long`
/// (default `medium`), and is shifted along its axis so that it fits on the screen.
fn scroll_to_swipe(args: &mut Args<'_>, opts: &ParseOptions) -> ParseResult<ActionKind> {
    let n = args.require("direction", "\"direction\": \"down\"")?;
    let loc = n.loc.clone();
    let dir = args.string(n, "direction", 16)?;
    let center = match args.take("element") {
        Some(n) => args.point(n, "element", opts)?,
        None => ModelPoint {
            x: (opts.coord_max_x / 2.0).round(),
            y: (opts.coord_max_y / 2.0).round(),
        },
    };
    let fraction = match args.take("distance") {
        None => 0.4,
        Some(n) => {
            let l = n.loc.clone();
            let d = args.string(n, "distance", 16)?;
            scroll_fraction(&d).ok_or_else(|| {
                args.err(
                    K::TypeMismatch,
                    format!("`distance` must be \"short\", \"medium\" or \"long\", not \"{d}\""),
                    &l,
                    "distance",
                )
            })?
        }
    };
    // (axis is vertical, finger moves towards smaller values)
    let (vertical, finger_to_smaller) = match dir.as_str() {
        "down" => (true, true),
        "up" => (true, false),
        "right" => (false, true),
        "left" => (false, false),
        other => {
            return Err(args.err(
                K::TypeMismatch,
                format!(
                    "`direction` must be \"up\", \"down\", \"left\" or \"right\", not \"{other}\""
                ),
                &loc,
                "direction",
            ));
        }
    };
    let extent = if vertical {
        opts.coord_max_y
    } else {
        opts.coord_max_x
    };
    let half = (extent * fraction / 2.0).round();
    let c = if vertical { center.y } else { center.x };
    let c = c.clamp(half, (extent - half).max(half));
    let (hi, lo) = ((c + half).min(extent), (c - half).max(0.0));
    let (from, to) = if finger_to_smaller {
        (hi, lo)
    } else {
        (lo, hi)
    };
    let (start, end) = if vertical {
        (
            ModelPoint {
                x: center.x,
                y: from,
            },
            ModelPoint { x: center.x, y: to },
        )
    } else {
        (
            ModelPoint {
                x: from,
                y: center.y,
            },
            ModelPoint { x: to, y: center.y },
        )
    };
    Ok(ActionKind::Swipe {
        start,
        end,
        duration_ms: None,
    })
}

/// `"task_board": [{"text": "open the app", "done": true}, …]`.
fn tool_task_board(args: &Args<'_>, node: Node) -> ParseResult<Vec<TaskItem>> {
    let items = match node.val {
        Val::List(items) => items,
        other => {
            return Err(args.err(
                K::TypeMismatch,
                format!(
                    "`task_board` must be an array of {{\"text\", \"done\"}} objects, not {}",
                    other.type_name()
                ),
                &node.loc,
                "task_board",
            ));
        }
    };
    if items.len() > MAX_TASK_ITEMS {
        return Err(args.err(
            K::TooLong,
            format!("`task_board` has more than {MAX_TASK_ITEMS} items"),
            &node.loc,
            "task_board",
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let field = format!("task_board[{i}]");
        let Val::Obj(pairs) = item.val else {
            return Err(args.err(
                K::TypeMismatch,
                format!(
                    "`{field}` must be an object {{\"text\": \"…\", \"done\": false}}, not {}",
                    item.val.type_name()
                ),
                &item.loc,
                &field,
            ));
        };
        let mut text = None;
        let mut done = None;
        for (k, v) in pairs {
            let f = format!("{field}.{k}");
            match (k.as_str(), v.val) {
                ("text", Val::Str(s)) => {
                    if s.chars().count() > MAX_TASK_ITEM_CHARS {
                        return Err(args.err(
                            K::TooLong,
                            format!("`{f}` is longer than {MAX_TASK_ITEM_CHARS} chars"),
                            &v.loc,
                            &f,
                        ));
                    }
                    text = Some(s);
                }
                ("done", Val::Bool(b)) => done = Some(b),
                ("text" | "done", other) => {
                    return Err(args.err(
                        K::TypeMismatch,
                        format!(
                            "`{f}` has the wrong type ({}): text is a string, done a boolean",
                            other.type_name()
                        ),
                        &v.loc,
                        &f,
                    ));
                }
                (other, _) => {
                    return Err(args.err(
                        K::UnknownKeyword,
                        format!(
                            "unknown key `{other}` in `{field}`: a task item has only text and done"
                        ),
                        &v.loc,
                        &f,
                    ));
                }
            }
        }
        let Some(text) = text else {
            return Err(args.err(
                K::MissingField,
                format!("`{field}` needs \"text\""),
                &item.loc,
                &field,
            ));
        };
        out.push(TaskItem {
            text,
            done: done.unwrap_or(false),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_seconds_accepts_model_spellings() {
        assert_eq!(parse_seconds("2 seconds"), Some(2.0));
        assert_eq!(parse_seconds("2.5s"), Some(2.5));
        assert_eq!(parse_seconds("3 秒"), Some(3.0));
        assert_eq!(parse_seconds("1 Second"), Some(1.0));
        assert_eq!(parse_seconds("4"), Some(4.0));
        assert_eq!(parse_seconds("-1 seconds"), Some(-1.0));
        assert_eq!(parse_seconds("two seconds"), None);
        assert_eq!(parse_seconds("2 minutes"), None);
        assert_eq!(parse_seconds("1.2.3"), None);
        assert_eq!(parse_seconds(".5"), None);
    }

    #[test]
    fn suggestions_cover_common_misspellings() {
        assert_eq!(suggest_do_action("DoubleTap"), Some("Double Tap"));
        assert_eq!(suggest_do_action("long_press"), Some("Long Press"));
        assert_eq!(suggest_do_action("Click"), Some("Tap"));
        assert_eq!(suggest_do_action("Frobnicate"), None);
    }
}
