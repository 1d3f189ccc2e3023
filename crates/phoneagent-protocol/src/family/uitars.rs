//! UI-TARS (1.0 / 1.5 / 2, Doubao UI-TARS): `Thought: … Action: call(...)` (SPEC M7, A2).
//!
//! ```text
//! answer := [thinking] [prose] ["Thought:" text] "Action:" call tail      ("Action：" too)
//!         | [thinking] call tail                                        (a bare call)
//! call   := NAME "(" [ kwarg ("," kwarg)* [","] ] ")"
//! kwarg  := IDENT "=" value
//! value  := '…' | "…" (Python escapes \\ \' \" \n \t \r) | True | False | true | false | NUMBER
//! point  := a string holding "<point>x y</point>", "<|box_start|>(x,y)<|box_end|>", "(x,y)",
//!           "[x,y]", "<bbox>x1 y1 x2 y2</bbox>" or a 4-number box (its centre);
//!           full-width （，） are read as ( , ); a closing tag the tokenizer dropped is fine
//! tail   := whitespace and special tokens only
//! ```
//!
//! Actions: `click`, `left_double`, `long_press` (`point` or `start_box`; `long_press` also takes
//! `time` in seconds, `''` = default), `type(content)`,
//! `scroll(direction[, point])` (the direction the *view* scrolls, as the `scroll` tool:
//! `down` moves the finger up), `drag` / `swipe` (`start_point`/`start_box`,
//! `end_point`/`end_box`), `press_home()`, `press_back()`, `hotkey(key='home'|'back')`,
//! `open_app(app_name)`, `wait()` (5 s, or the run's maximum when lower), `call_user()` (take
//! over), `finished(content)`. PhoneAgent's additions: `confirm_irreversible=True` and
//! `sensitive=True` on click / left_double / long_press / type / open_app, `confirm=True` on
//! `finished` (two-stage finish). The `Thought` text becomes `reason`.
//!
//! Rejected with a precise error: no call, two `Action:` lines or two calls, an unknown action
//! or keyword, a duplicate keyword, a positional argument, a point with the wrong number of
//! values or outside the native range, an unclosed string or call, text after the call, a call
//! in a Markdown fence.
//!
//! Size (about 900 lines): one family's whole grammar — answer layout, its Python-like call
//! syntax, the point/box notations of each UI-TARS version, the action table and the renderer
//! back into that grammar; the parser and renderer must agree token for token, so they stay in
//! one file.

use super::{Ctx, FamilyAdapter, strip_special_tokens, strip_thinking};
use crate::action::{Action, ActionKind, MAX_META_CHARS};
use crate::geometry::ModelPoint;
use crate::parse_error::{ParseError, ParseErrorKind as K, ParseResult};

const ACTIONS: &str = "click, left_double, long_press, type, scroll, drag, press_home, press_back, hotkey, open_app, wait, call_user, finished";

#[derive(Debug, Clone, PartialEq)]
enum V {
    Str(String),
    Bool(bool),
    Num(f64),
}

struct KwArg {
    key: String,
    val: V,
    at: usize,
}

pub(crate) fn parse(text: &str, ctx: &Ctx<'_>) -> ParseResult<Action> {
    let (thinking, body) = strip_thinking(text)?;
    let rest = &text[body..];
    if strip_special_tokens(rest).trim().is_empty() {
        return Err(ParseError::new(
            K::Empty,
            "the answer has no action: end it with `Action: ` and one call, e.g. Action: click(point='<point>500 300</point>')",
        ));
    }
    // "Action:" markers at the start of a line (ASCII or full-width colon).
    let mut markers: Vec<(usize, usize)> = Vec::new();
    let mut line_start = 0;
    for line in rest.split_inclusive('\n') {
        let lead = line.len() - line.trim_start().len();
        let t = line.trim_start();
        for m in ["Action:", "Action：", "action:"] {
            if t.starts_with(m) {
                markers.push((line_start + lead, line_start + lead + m.len()));
            }
        }
        line_start += line.len();
    }
    let (prose, call_at) = match markers.len() {
        0 => (String::new(), 0),
        1 => (rest[..markers[0].0].to_string(), markers[0].1),
        _ => {
            return Err(ParseError::at(
                K::MultipleCalls,
                "the answer has more than one `Action:` line: send exactly one action per turn",
                text,
                body + markers[1].0,
            ));
        }
    };
    if markers.is_empty() {
        let t = strip_special_tokens(rest);
        let t = t.trim_start();
        let word: String = t
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if word.is_empty() || !t[word.len()..].starts_with('(') {
            let kind = if t.starts_with("```") {
                K::MarkdownWrapped
            } else {
                K::NoCall
            };
            return Err(ParseError::at(
                kind,
                "the answer has no `Action:` line: write `Thought: …` and then `Action: ` with one call, e.g. Action: click(point='<point>500 300</point>')",
                text,
                body,
            ));
        }
    }
    let mut i = body + call_at;
    let b = text.as_bytes();
    skip_ws(text, &mut i);
    if text[i..].starts_with("```") || text[i..].starts_with('`') {
        return Err(ParseError::at(
            K::MarkdownWrapped,
            "the action is wrapped in Markdown code: write the call itself after `Action: `, without backticks",
            text,
            i,
        ));
    }
    let name_start = i;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    let name = &text[name_start..i];
    if name.is_empty() {
        return Err(ParseError::at(
            K::NoCall,
            format!(
                "no action call found: after `Action: ` write one call such as click(point='<point>500 300</point>'); actions: {ACTIONS}"
            ),
            text,
            name_start,
        ));
    }
    skip_inline_ws(text, &mut i);
    if i >= b.len() || b[i] != b'(' {
        let kind = if text[i..].starts_with('（') {
            K::Syntax
        } else {
            K::NoCall
        };
        return Err(ParseError::at(
            kind,
            format!("`{name}` must be followed by `(`: write {name}(…) with ASCII parentheses"),
            text,
            i,
        ));
    }
    i += 1;
    let args = parse_args(text, &mut i, name)?;
    check_tail(text, i)?;
    let thought = thought_text(thinking.as_deref(), &prose);
    build(name, args, thought, text, name_start, ctx)
}

fn thought_text(thinking: Option<&str>, prose: &str) -> Option<String> {
    let p = strip_special_tokens(prose);
    let p = p.trim();
    let p = p
        .find("Thought:")
        .map(|i| &p[i + "Thought:".len()..])
        .or_else(|| p.find("Thought：").map(|i| &p[i + "Thought：".len()..]))
        .unwrap_or(p)
        .trim();
    let mut parts = Vec::new();
    if let Some(t) = thinking.filter(|t| !t.is_empty()) {
        parts.push(t.to_string());
    }
    if !p.is_empty() {
        parts.push(p.to_string());
    }
    (!parts.is_empty()).then(|| parts.join("\n").chars().take(MAX_META_CHARS).collect())
}

fn skip_ws(text: &str, i: &mut usize) {
    while let Some(c) = text[*i..].chars().next() {
        if c.is_whitespace() {
            *i += c.len_utf8();
        } else {
            break;
        }
    }
}

fn skip_inline_ws(text: &str, i: &mut usize) {
    let b = text.as_bytes();
    while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t') {
        *i += 1;
    }
}

fn check_tail(text: &str, end: usize) -> ParseResult<()> {
    let tail = strip_special_tokens(&text[end..]);
    let t = tail.trim();
    if t.is_empty() || t == "```" {
        if t == "```" {
            return Err(ParseError::at(
                K::MarkdownWrapped,
                "the action is inside a Markdown code fence: write `Action: call(...)` as plain text",
                text,
                end,
            ));
        }
        return Ok(());
    }
    let looks_like_call = t
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .is_some_and(|w| !w.is_empty() && t[w.len()..].trim_start().starts_with('('));
    let kind = if looks_like_call || t.starts_with("Action") {
        K::MultipleCalls
    } else {
        K::TrailingText
    };
    let off = end + text[end..].find(|c: char| !c.is_whitespace()).unwrap_or(0);
    Err(ParseError::at(
        kind,
        if kind == K::MultipleCalls {
            "a second action follows the first: send exactly one action per turn".to_string()
        } else {
            "text follows the action call: end the answer with the call".to_string()
        },
        text,
        off,
    ))
}

fn parse_args(text: &str, i: &mut usize, name: &str) -> ParseResult<Vec<KwArg>> {
    let b = text.as_bytes();
    let mut args: Vec<KwArg> = Vec::new();
    loop {
        skip_ws(text, i);
        if *i >= b.len() {
            return Err(ParseError::at(
                K::Incomplete,
                format!("the call {name}( is never closed: end it with `)`"),
                text,
                *i,
            ));
        }
        if b[*i] == b')' {
            *i += 1;
            return Ok(args);
        }
        let key_start = *i;
        while *i < b.len() && (b[*i].is_ascii_alphanumeric() || b[*i] == b'_') {
            *i += 1;
        }
        let key = text[key_start..*i].to_string();
        skip_inline_ws(text, i);
        if key.is_empty() || *i >= b.len() || b[*i] != b'=' {
            if *i >= b.len() {
                return Err(ParseError::at(
                    K::Incomplete,
                    format!("the call {name}( is never closed: end it with `)`"),
                    text,
                    *i,
                ));
            }
            return Err(ParseError::at(
                K::PositionalArgument,
                format!(
                    "arguments of {name}(…) are keyword=value only, e.g. {name}(point='<point>500 300</point>')"
                ),
                text,
                key_start,
            ));
        }
        *i += 1;
        skip_inline_ws(text, i);
        let val = value(text, i, &key)?;
        if args.iter().any(|a| a.key == key) {
            return Err(ParseError::at(
                K::DuplicateKeyword,
                format!("the keyword `{key}` is given twice: give each keyword once"),
                text,
                key_start,
            )
            .with_field(key));
        }
        args.push(KwArg {
            key,
            val,
            at: key_start,
        });
        skip_ws(text, i);
        if *i < b.len() && b[*i] == b',' {
            *i += 1;
        } else if *i < b.len() && b[*i] != b')' {
            return Err(ParseError::at(
                K::Syntax,
                format!("expected `,` or `)` in {name}(…)"),
                text,
                *i,
            ));
        }
    }
}

fn value(text: &str, i: &mut usize, key: &str) -> ParseResult<V> {
    let b = text.as_bytes();
    let start = *i;
    if *i >= b.len() {
        return Err(ParseError::at(
            K::Incomplete,
            format!("`{key}=` has no value"),
            text,
            *i,
        ));
    }
    let q = b[*i];
    if q == b'\'' || q == b'"' {
        *i += 1;
        let mut s = String::new();
        loop {
            let Some(c) = text[*i..].chars().next() else {
                return Err(ParseError::at(
                    K::Incomplete,
                    format!(
                        "the string of `{key}` is never closed: end it with {}",
                        q as char
                    ),
                    text,
                    start,
                ));
            };
            *i += c.len_utf8();
            match c {
                '\\' => {
                    let Some(e) = text[*i..].chars().next() else {
                        continue;
                    };
                    *i += e.len_utf8();
                    match e {
                        'n' => s.push('\n'),
                        't' => s.push('\t'),
                        'r' => s.push('\r'),
                        '\\' | '\'' | '"' => s.push(e),
                        other => {
                            s.push('\\');
                            s.push(other);
                        }
                    }
                }
                c if c == q as char => return Ok(V::Str(s)),
                c => s.push(c),
            }
        }
    }
    let word_end = text[*i..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-'))
        .map_or(text.len(), |n| *i + n);
    let word = &text[*i..word_end];
    let v = match word {
        "True" | "true" => V::Bool(true),
        "False" | "false" => V::Bool(false),
        w if !w.is_empty() && w.bytes().all(|c| c.is_ascii_digit() || c == b'.') => {
            match w.parse::<f64>() {
                Ok(n) => V::Num(n),
                Err(_) => {
                    return Err(ParseError::at(
                        K::Syntax,
                        format!("`{key}` = {w} is not a number"),
                        text,
                        start,
                    ));
                }
            }
        }
        w if w.starts_with('-') => {
            return Err(ParseError::at(
                K::NegativeNumber,
                format!("`{key}` is negative: no value of this grammar is negative"),
                text,
                start,
            ));
        }
        _ => {
            return Err(ParseError::at(
                K::Expression,
                format!("`{key}` must be a quoted string, a number or True/False, e.g. {key}='…'"),
                text,
                start,
            )
            .with_field(key));
        }
    };
    *i = word_end;
    Ok(v)
}

/// Reads the numbers of a point string: see the module docs.
fn point_numbers(s: &str, key: &str) -> ParseResult<Vec<f64>> {
    let mut t = s.to_string();
    for (from, to) in [
        ('（', "("),
        ('）', ")"),
        ('，', ","),
        ('【', "["),
        ('】', "]"),
    ] {
        t = t.replace(from, to);
    }
    for tag in [
        "<|box_start|>",
        "<|box_end|>",
        "<point>",
        "</point>",
        "<bbox>",
        "</bbox>",
        "<|point_start|>",
        "<|point_end|>",
    ] {
        t = t.replace(tag, " ");
    }
    let t = t.trim();
    let inner = t
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| t.strip_prefix('[').and_then(|r| r.strip_suffix(']')))
        .unwrap_or(t);
    let parts: Vec<&str> = inner
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    let mut nums = Vec::with_capacity(parts.len());
    for p in &parts {
        if p.starts_with('-') {
            return Err(ParseError::new(
                K::NegativeNumber,
                format!("`{key}` has a negative coordinate ({p}): points are never negative"),
            )
            .with_field(key));
        }
        match p.parse::<f64>() {
            Ok(n) if n.is_finite() => nums.push(n),
            _ => {
                let kind = if *p == "x" || *p == "y" || p.starts_with('x') || p.starts_with('y') {
                    K::Placeholder
                } else {
                    K::Syntax
                };
                return Err(ParseError::new(
                    kind,
                    format!(
                        "`{key}` = {s:?} is not a point: write two numbers, e.g. {key}='<point>500 300</point>'"
                    ),
                )
                .with_field(key));
            }
        }
    }
    if nums.len() != 2 && nums.len() != 4 {
        return Err(ParseError::new(
            K::WrongLength,
            format!(
                "`{key}` = {s:?} has {} numbers: a point has 2 (x y), a box 4 (x1 y1 x2 y2)",
                nums.len()
            ),
        )
        .with_field(key));
    }
    Ok(nums)
}

struct Args<'a> {
    items: Vec<KwArg>,
    name: &'a str,
    text: &'a str,
    at: usize,
}

impl Args<'_> {
    fn check(&self, allowed: &[&str]) -> ParseResult<()> {
        for a in &self.items {
            if !allowed.contains(&a.key.as_str()) {
                let list = if allowed.is_empty() {
                    "it takes no arguments".to_string()
                } else {
                    format!("it takes {}", allowed.join(", "))
                };
                return Err(ParseError::at(
                    K::UnknownKeyword,
                    format!("{}(…) has no keyword `{}`: {list}", self.name, a.key),
                    self.text,
                    a.at,
                )
                .with_field(a.key.clone()));
            }
        }
        Ok(())
    }

    fn take(&mut self, key: &str) -> Option<KwArg> {
        let i = self.items.iter().position(|a| a.key == key)?;
        Some(self.items.remove(i))
    }

    fn string(&mut self, key: &str) -> ParseResult<Option<String>> {
        match self.take(key) {
            None => Ok(None),
            Some(KwArg { val: V::Str(s), .. }) => Ok(Some(s)),
            Some(a) => Err(ParseError::at(
                K::TypeMismatch,
                format!("`{key}` must be a quoted string, e.g. {key}='…'"),
                self.text,
                a.at,
            )
            .with_field(key)),
        }
    }

    fn flag(&mut self, key: &str) -> ParseResult<bool> {
        match self.take(key) {
            None => Ok(false),
            Some(KwArg {
                val: V::Bool(b), ..
            }) => Ok(b),
            Some(a) => Err(ParseError::at(
                K::TypeMismatch,
                format!("`{key}` must be True or False, without quotes"),
                self.text,
                a.at,
            )
            .with_field(key)),
        }
    }

    /// One of several point keywords (exactly one must be given when `required`).
    fn point(
        &mut self,
        keys: &[&str],
        ctx: &Ctx<'_>,
        required: bool,
    ) -> ParseResult<Option<ModelPoint>> {
        let given: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|k| self.items.iter().any(|a| a.key == *k))
            .collect();
        if given.len() > 1 {
            return Err(ParseError::at(
                K::DuplicateKeyword,
                format!(
                    "{}(…) got both `{}` and `{}`: give the point once",
                    self.name, given[0], given[1]
                ),
                self.text,
                self.at,
            ));
        }
        let Some(key) = given.first().copied() else {
            if !required {
                return Ok(None);
            }
            return Err(ParseError::at(
                K::MissingField,
                format!(
                    "{}(…) needs a point: {}(point='<point>x y</point>') with real numbers",
                    self.name, self.name
                ),
                self.text,
                self.at,
            )
            .with_field(keys[0]));
        };
        let s = self.string(key)?.unwrap_or_default();
        let n = point_numbers(&s, key)?;
        let (x, y) = if n.len() == 4 {
            ((n[0] + n[2]) / 2.0, (n[1] + n[3]) / 2.0)
        } else {
            (n[0], n[1])
        };
        ctx.point(x, y, key).map(Some)
    }
}

fn build(
    name: &str,
    items: Vec<KwArg>,
    thought: Option<String>,
    text: &str,
    at: usize,
    ctx: &Ctx<'_>,
) -> ParseResult<Action> {
    let mut a = Args {
        items,
        name,
        text,
        at,
    };
    const EXEC: [&str; 2] = ["confirm_irreversible", "sensitive"];
    let with_exec = |specific: &[&'static str]| -> Vec<&'static str> {
        specific.iter().copied().chain(EXEC).collect()
    };
    let mut exec = false;
    let mut reason_checked_swipe = false;
    let kind = match name {
        "click" | "left_single" | "tap" | "left_double" | "double_click" | "long_press" => {
            if name == "long_press" {
                a.check(&with_exec(&["point", "start_box", "time"]))?;
            } else {
                a.check(&with_exec(&["point", "start_box"]))?;
            }
            exec = true;
            let element = a
                .point(&["point", "start_box"], ctx, true)?
                .ok_or_else(|| ParseError::new(K::MissingField, "a point is required"))?;
            match name {
                "left_double" | "double_click" => ActionKind::DoubleTap { element },
                "long_press" => ActionKind::LongPress {
                    element,
                    duration_ms: hold_ms(&mut a, ctx)?,
                },
                _ => ActionKind::Tap { element },
            }
        }
        "type" => {
            a.check(&with_exec(&["content"]))?;
            exec = true;
            let content = a.string("content")?.ok_or_else(|| {
                ParseError::at(
                    K::MissingField,
                    "type(…) needs content='…' (the text to type)",
                    text,
                    at,
                )
                .with_field("content")
            })?;
            ActionKind::Type {
                text: ctx.text(content, "content", ctx.opts.max_text_chars)?,
            }
        }
        "scroll" => {
            a.check(&["point", "start_box", "direction"])?;
            let center = a.point(&["point", "start_box"], ctx, false)?;
            let dir = a.string("direction")?.ok_or_else(|| {
                ParseError::at(
                    K::MissingField,
                    "scroll(…) needs direction='up', 'down', 'left' or 'right'",
                    text,
                    at,
                )
                .with_field("direction")
            })?;
            scroll(ctx, center, dir.trim())?
        }
        "drag" | "swipe" | "select" => {
            a.check(&["start_point", "start_box", "end_point", "end_box"])?;
            reason_checked_swipe = true;
            let start = a
                .point(&["start_point", "start_box"], ctx, true)?
                .ok_or_else(|| ParseError::new(K::MissingField, "a point is required"))?;
            let end = a
                .point(&["end_point", "end_box"], ctx, true)?
                .ok_or_else(|| ParseError::new(K::MissingField, "a point is required"))?;
            ActionKind::Swipe {
                start,
                end,
                duration_ms: None,
            }
        }
        "press_home" | "home" => {
            a.check(&[])?;
            ActionKind::Home
        }
        "press_back" | "back" => {
            a.check(&[])?;
            ActionKind::Back
        }
        "hotkey" | "press" => {
            a.check(&["key"])?;
            let key = a.string("key")?.unwrap_or_default();
            match key.trim().to_lowercase().as_str() {
                "home" => ActionKind::Home,
                "back" => ActionKind::Back,
                other => {
                    return Err(ParseError::at(
                        K::UnknownAction,
                        format!(
                            "hotkey(key='{other}') is not available on the phone: use press_home() or press_back()"
                        ),
                        text,
                        at,
                    ));
                }
            }
        }
        "open_app" => {
            a.check(&with_exec(&["app_name"]))?;
            exec = true;
            let app = a.string("app_name")?.unwrap_or_default();
            ctx.launch(app, "app_name")?
        }
        "wait" => {
            a.check(&[])?;
            ctx.wait(5.0_f64.min(ctx.opts.max_wait_secs), "wait")?
        }
        "call_user" => {
            a.check(&["content"])?;
            let message = a
                .string("content")?
                .filter(|s| !s.trim().is_empty())
                .or_else(|| thought.clone())
                .unwrap_or_else(|| "The model asks you to take over the phone.".into());
            ActionKind::TakeOver {
                message: ctx.text(message, "content", ctx.opts.max_message_chars)?,
            }
        }
        "finished" | "finish" => {
            a.check(&["content", "confirm"])?;
            let confirm = a.flag("confirm")?;
            let message = a
                .string("content")?
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| "The task is complete.".into());
            ActionKind::Finish {
                message: ctx.text(message, "content", ctx.opts.max_message_chars)?,
                confirm,
            }
        }
        other => {
            return Err(ParseError::at(
                K::UnknownAction,
                format!("`{other}` is not an action of this grammar: use one of {ACTIONS}"),
                text,
                at,
            ));
        }
    };
    let mut action = Action::new(kind);
    action.reason = thought;
    if exec {
        action.confirm_irreversible = a.flag("confirm_irreversible")?;
        action.sensitive = a.flag("sensitive")?;
    }
    if reason_checked_swipe {
        ctx.check_swipe(&action)?;
    }
    Ok(action)
}

/// `long_press(time='…')`: seconds as a string or number; `''` means the default hold.
fn hold_ms(a: &mut Args<'_>, ctx: &Ctx<'_>) -> ParseResult<Option<u32>> {
    let secs = match a.take("time") {
        None => return Ok(None),
        Some(KwArg { val: V::Str(s), .. }) if s.trim().is_empty() => return Ok(None),
        Some(KwArg {
            val: V::Str(s), at, ..
        }) => s.trim().parse::<f64>().map_err(|_| {
            ParseError::at(
                K::TypeMismatch,
                format!("`time` = '{s}' is not a number of seconds"),
                a.text,
                at,
            )
            .with_field("time")
        })?,
        Some(KwArg { val: V::Num(n), .. }) => n,
        Some(KwArg { at, .. }) => {
            return Err(ParseError::at(
                K::TypeMismatch,
                "`time` must be a number of seconds",
                a.text,
                at,
            )
            .with_field("time"));
        }
    };
    let ms = secs * 1000.0;
    let max = f64::from(ctx.opts.max_gesture_ms);
    if !(ms > 0.0 && ms <= max) {
        return Err(ParseError::new(
            K::OutOfRange,
            format!(
                "`time` = {secs} s: a long press lasts more than 0 and at most {} s",
                max / 1000.0
            ),
        )
        .with_field("time"));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(Some(ms.round() as u32))
}

/// `scroll(direction)`: the view's direction, as the `scroll` tool (down → finger up), 40 % of
/// the screen around the point (the centre when none).
fn scroll(ctx: &Ctx<'_>, center: Option<ModelPoint>, dir: &str) -> ParseResult<ActionKind> {
    let (mx, my) = (ctx.frozen.coord_max_x, ctx.frozen.coord_max_y);
    let c = center.unwrap_or(ModelPoint {
        x: (mx / 2.0).round(),
        y: (my / 2.0).round(),
    });
    let (vertical, finger_to_smaller) = match dir.to_lowercase().as_str() {
        "down" => (true, true),
        "up" => (true, false),
        "right" => (false, true),
        "left" => (false, false),
        other => {
            return Err(ParseError::new(
                K::TypeMismatch,
                format!("scroll direction must be 'up', 'down', 'left' or 'right', not '{other}'"),
            )
            .with_field("direction"));
        }
    };
    let extent = if vertical { my } else { mx };
    let half = (extent * 0.2).round();
    let v = if vertical { c.y } else { c.x };
    let v = v.clamp(half, (extent - half).max(half));
    let (hi, lo) = ((v + half).min(extent), (v - half).max(0.0));
    let (from, to) = if finger_to_smaller {
        (hi, lo)
    } else {
        (lo, hi)
    };
    let (start, end) = if vertical {
        (ModelPoint { x: c.x, y: from }, ModelPoint { x: c.x, y: to })
    } else {
        (ModelPoint { x: from, y: c.y }, ModelPoint { x: to, y: c.y })
    };
    Ok(ActionKind::Swipe {
        start,
        end,
        duration_ms: None,
    })
}

fn quote(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

fn pt(ad: &FamilyAdapter, p: ModelPoint, image: (u32, u32)) -> String {
    let (x, y) = ad
        .coords
        .from_frozen(p, image)
        .unwrap_or((p.x.round() as i64, p.y.round() as i64));
    format!("'<point>{x} {y}</point>'")
}

/// The call alone (`click(point='<point>x y</point>')`), native coordinates.
pub(crate) fn render_call(ad: &FamilyAdapter, a: &Action, image: (u32, u32)) -> String {
    let mut args: Vec<String> = Vec::new();
    let name = match &a.kind {
        ActionKind::Tap { element } => {
            args.push(format!("point={}", pt(ad, *element, image)));
            "click"
        }
        ActionKind::DoubleTap { element } => {
            args.push(format!("point={}", pt(ad, *element, image)));
            "left_double"
        }
        ActionKind::LongPress { element, .. } => {
            args.push(format!("point={}", pt(ad, *element, image)));
            "long_press"
        }
        ActionKind::Swipe { start, end, .. } => {
            args.push(format!("start_point={}", pt(ad, *start, image)));
            args.push(format!("end_point={}", pt(ad, *end, image)));
            "drag"
        }
        ActionKind::Type { text } => {
            args.push(format!("content={}", quote(text)));
            "type"
        }
        ActionKind::Back => "press_back",
        ActionKind::Home => "press_home",
        ActionKind::Wait { .. } => "wait",
        ActionKind::TakeOver { .. } | ActionKind::AskUser { .. } => "call_user",
        ActionKind::Note { message, .. } => {
            return format!("note({})", quote(message));
        }
        ActionKind::Finish { message, confirm } => {
            args.push(format!("content={}", quote(message)));
            if *confirm {
                args.push("confirm=True".into());
            }
            "finished"
        }
        ActionKind::LaunchApp { name } => {
            args.push(format!("app_name={}", quote(name)));
            "open_app"
        }
    };
    if a.kind.is_gated() {
        if a.confirm_irreversible {
            args.push("confirm_irreversible=True".into());
        }
        if a.sensitive {
            args.push("sensitive=True".into());
        }
    }
    format!("{name}({})", args.join(", "))
}

/// `Thought: …\nAction: …` as UI-TARS writes a turn.
pub(crate) fn render(ad: &FamilyAdapter, a: &Action, image: (u32, u32)) -> String {
    let thought = a.reason.as_deref().unwrap_or("").replace('\n', " ");
    format!("Thought: {thought}\nAction: {}", render_call(ad, a, image))
}
