//! The `do(...)` text grammar of AutoGLM-Phone-style models (SPEC A1, A2, A3, A5).
//!
//! A hand-written scanner and recursive-descent parser over a closed grammar. The answer must
//! contain exactly one call:
//!
//! ```text
//! answer   := envelope* call clean-tail
//! call     := ("do" | "finish") "(" [ kwarg ("," kwarg)* [","] ] ")"
//! kwarg    := IDENT "=" value
//! value    := STRING | NUMBER | BOOL | "[" [ value ("," value)* [","] ] "]"
//! STRING   := '"' … '"' | "'" … "'"         (escapes: \\ \" \' \n \t \r \0 \xHH \uXXXX \UXXXXXXXX)
//! NUMBER   := DIGITS [ "." DIGITS ]          (no sign, no exponent)
//! BOOL     := True | False | true | false
//! ```
//!
//! **Around the call** the parser accepts what real models emit: a `<think>…</think>` block
//! (or a lone `</think>` whose opening tag was in the prompt), any prose before the call
//! (reasoning, `Action:`), `<answer>` / `</answer>` tags (inline or on their own lines, also a
//! trailing `</answer>` alone) and special tokens such as `<|begin_of_box|>…<|end_of_box|>`.
//! After the call only whitespace, `</answer>` and special tokens may follow.
//!
//! **Rejected:** no call; a call inside a Markdown fence or inline code, inside JSON or quotes;
//! a second call; text after the call; an unclosed call, string, list or `<think>` block;
//! positional arguments; expressions (`1+2`, `f(x)`, bare names, `-5`); placeholders copied from
//! the instructions (`element=[x,y]`, `"xxx"`); and everything the closed per-action schema
//! rejects (unknown action or keyword, the legacy `description`, duplicates, wrong types or
//! list lengths, coordinates outside the frozen space, too long texts, a wait over the bound,
//! `Launch` while the app launcher is off, swipes contradicting their direction).
//!
//! # Inner quotes in strings
//!
//! Models write `text="他说"你好"然后走了"` and `text="line 1\nline 2"` with raw newlines. A
//! string therefore does **not** end at the first unescaped quote. An unescaped closing quote
//! ends the string only when what follows it is structure:
//!
//! * `,` then a keyword and `=` (the next argument), or `,` / nothing then a closing `)`
//!   as below;
//! * `)` followed by the end of the answer, by `</answer>` or a special token, by a line
//!   break, or by another `do(`/`finish(` further on (so that a second call is reported, never
//!   swallowed into the text);
//! * inside a list: `,` or `]`.
//!
//! Any other unescaped quote is part of the text. If no quote qualifies, the first quote
//! followed by `,`, `)` or the end of input closes the string, so that the real error (text
//! after the call, a positional argument, an unclosed call) is reported. Escaped quotes (`\"`)
//! are always text. Newlines, CJK and emoji are kept exactly; escapes are decoded as in Python.
//!
//! Size (over 800 lines, about 1,000 of code then unit tests): one closed grammar — its scanner,
//! parser and the positions of their errors share one token type and one cursor; split apart they
//! would only hand that state across a module boundary.

use std::ops::Range;

use crate::action::{Action, ActionKind};
use crate::options::ParseOptions;
use crate::parse_error::{ParseError, ParseErrorKind as K, ParseResult, Position};
use crate::schema::{
    Arg, Args, Front, Loc, Node, Val, build_do, build_finish, is_placeholder_name,
};
use crate::swipe::check_swipe;

/// Answers longer than this (bytes) are rejected without parsing.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;
/// Deepest list nesting the grammar parses.
const MAX_DEPTH: usize = 8;

/// A parsed `do`/`finish` answer with where the call was.
#[derive(Debug, Clone, PartialEq)]
pub struct DoOutput {
    /// The validated action.
    pub action: Action,
    /// Byte range of the call (`do(` … `)`) in the answer.
    pub call: Range<usize>,
    /// The thinking / prose before the call with `<think>`, `<answer>` tags and special tokens
    /// removed; `None` when there was none.
    pub reasoning: Option<String>,
}

/// Parses one model answer in the `do` grammar into a validated [`Action`] (SPEC A2).
///
/// Coordinates are checked against `opts.coord_max_x/y` and kept in model space; swipes are
/// checked for direction consistency with their `reason` and `opts.task` (SPEC A5).
///
/// # Errors
/// A [`ParseError`] with a stable kind, a message naming what was wrong and how to write it,
/// and the position in `text`. See the module docs for what is rejected.
pub fn parse_do(text: &str, opts: &ParseOptions) -> ParseResult<Action> {
    parse_do_output(text, opts).map(|o| o.action)
}

/// Like [`parse_do`], also returning the call's span and the reasoning before it.
///
/// # Errors
/// As [`parse_do`].
pub fn parse_do_output(text: &str, opts: &ParseOptions) -> ParseResult<DoOutput> {
    if text.len() > MAX_ANSWER_BYTES {
        return Err(ParseError::new(
            K::TooLong,
            format!(
                "the answer is {} bytes long; at most {MAX_ANSWER_BYTES} are parsed",
                text.len()
            ),
        ));
    }
    let first_call = find_call_start(text, 0);
    if skip_clean(text, 0) == text.len() {
        return Err(ParseError::new(
            K::Empty,
            "the answer is empty: write exactly one do(...) or finish(...) call",
        ));
    }
    let body_start = think_end(text, first_call)?;
    let Some(cs) = find_call_start(text, body_start) else {
        return Err(no_call(text, body_start));
    };
    check_prefix(text, body_start, cs)?;

    let mut p = Parser {
        src: text,
        b: text.as_bytes(),
        pos: cs,
        last_call: last_call_start(text, cs + 1),
        depth: 0,
    };
    let call = p.call()?;
    check_tail(text, call.end)?;

    let action = build(text, call.clone(), opts)?;
    if let ActionKind::Swipe { start, end, .. } = &action.kind {
        check_swipe(*start, *end, action.reason.as_deref(), opts.task.as_deref())
            .map_err(|e| e.with_position(Position::in_text(text, cs)))?;
    }
    Ok(DoOutput {
        action,
        call: cs..call.end,
        reasoning: reasoning(&text[..cs]),
    })
}

/// One parsed call before schema validation.
#[derive(Debug, Clone)]
struct RawCall {
    is_finish: bool,
    start: usize,
    end: usize,
    args: Vec<Arg>,
}

fn build(text: &str, call: RawCall, opts: &ParseOptions) -> ParseResult<Action> {
    let loc = Loc::Span(call.start, call.end);
    if call.is_finish {
        let args = Args::new(text, call.args, loc, Front::Do, "finish");
        return build_finish(args, opts);
    }
    let mut items = call.args;
    let Some(i) = items.iter().position(|a| a.key == "action") else {
        return Err(ParseError::at(
            K::MissingField,
            "do(...) needs the keyword `action`, e.g. do(action=\"Tap\", element=[500, 300])",
            text,
            call.start,
        )
        .with_field("action"));
    };
    let action_node = items.remove(i).node;
    let args = Args::new(text, items, loc, Front::Do, "do");
    build_do(args, action_node, opts)
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Byte offset of the first `do(` / `finish(` at or after `from` that is not the tail of a
/// longer ASCII identifier or an attribute (`undo(`, `x.do(`). CJK text directly before the
/// call is fine (`点击do(`).
pub(crate) fn find_call_start(text: &str, from: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = from;
    while i < b.len() {
        let off = b[i..].iter().position(|&c| c == b'd' || c == b'f')?;
        let p = i + off;
        let boundary = p == 0 || !(is_ident_byte(b[p - 1]) || b[p - 1] == b'.');
        if boundary && (b[p..].starts_with(b"do(") || b[p..].starts_with(b"finish(")) {
            return Some(p);
        }
        i = p + 1;
    }
    None
}

/// The last call start at or after `from`.
fn last_call_start(text: &str, from: usize) -> Option<usize> {
    let mut last = None;
    let mut i = from;
    while let Some(p) = find_call_start(text, i) {
        last = Some(p);
        i = p + 1;
    }
    last
}

/// Length of a special token such as `<|begin_of_box|>` / `<|im_end|>` at the start of `s`.
fn special_token_len(s: &str) -> Option<usize> {
    let rest = s.strip_prefix("<|")?;
    let end = rest.find("|>")?;
    let inner = &rest[..end];
    (end <= 64
        && inner
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':')))
    .then_some(end + 4)
}

/// Skips whitespace, `</answer>` and special tokens from `i`.
fn skip_clean(text: &str, mut i: usize) -> usize {
    loop {
        let rest = &text[i..];
        let t = rest.trim_start();
        i += rest.len() - t.len();
        if t.starts_with("</answer>") {
            i += "</answer>".len();
        } else if let Some(n) = special_token_len(t) {
            i += n;
        } else {
            return i;
        }
    }
}

/// Where the body after the thinking block starts.
fn think_end(text: &str, first_call: Option<usize>) -> ParseResult<usize> {
    let before_call = |p: usize| first_call.is_none_or(|c| p < c);
    if let Some(t) = text.find("<think>").filter(|&t| before_call(t)) {
        return match text[t..].find("</think>") {
            Some(c) => Ok(t + c + "</think>".len()),
            None => Err(ParseError::at(
                K::Incomplete,
                "the <think> block is never closed: end your reasoning with </think> and then \
                 write exactly one call",
                text,
                t,
            )),
        };
    }
    if let Some(c) = text.find("</think>").filter(|&c| before_call(c)) {
        return Ok(c + "</think>".len());
    }
    Ok(0)
}

fn no_call(text: &str, body_start: usize) -> ParseError {
    let body = &text[body_start..];
    let start = skip_noise(text, body_start);
    let rest = text[start..].trim_end();
    let mut chars = rest.chars();
    let (first, second) = (chars.next(), chars.next());
    let looks_json = match first {
        Some('{') => true,
        // `[{…}]`, `["…"]`, but not prose such as "[Step 2] …".
        Some('[') => {
            matches!(second, Some('{' | '"' | '\'' | '['))
                || (rest.ends_with(']') && !rest[..rest.len() - 1].contains(']'))
        }
        _ => false,
    };
    if looks_json {
        return ParseError::at(
            K::JsonWrapped,
            "the answer is JSON; write the action as a call instead, e.g. \
             do(action=\"Tap\", element=[500, 300]) or finish(message=\"…\")",
            text,
            start,
        );
    }
    let hint = if let Some(p) = body
        .find("do (action")
        .or_else(|| body.find("finish (message"))
    {
        return ParseError::at(
            K::NoCall,
            "write the call without a space before the parenthesis: do(action=…) or finish(message=…)",
            text,
            body_start + p,
        );
    } else if ["Do(", "DO(", "Finish(", "FINISH("]
        .iter()
        .any(|n| body.contains(n))
    {
        " (the call names are lowercase: do(...) and finish(...))"
    } else if skip_clean(text, body_start) == text.len() {
        " after the thinking block"
    } else {
        ""
    };
    ParseError::at(
        K::NoCall,
        format!(
            "no do(...) or finish(...) call found{hint}: write exactly one, e.g. \
             do(action=\"Tap\", element=[500, 300])"
        ),
        text,
        start.min(text.len()),
    )
}

/// Skips whitespace, special tokens and `<answer>` tags.
fn skip_noise(text: &str, mut i: usize) -> usize {
    loop {
        let j = skip_clean(text, i);
        let t = &text[j..];
        if t.starts_with("<answer>") {
            i = j + "<answer>".len();
        } else {
            return j;
        }
    }
}

/// Rejects calls inside Markdown fences / inline code, JSON or quotes.
fn check_prefix(text: &str, body_start: usize, cs: usize) -> ParseResult<()> {
    let prefix = &text[body_start..cs];
    if let Some(f) = prefix.find("```") {
        return Err(ParseError::at(
            K::MarkdownWrapped,
            "the call is inside a Markdown code block: write the bare call, without ``` fences",
            text,
            body_start + f,
        ));
    }
    let trimmed = prefix.trim_end();
    let last = trimmed.chars().next_back();
    let at = body_start + trimmed.len().saturating_sub(1);
    match last {
        Some('`') => Err(ParseError::at(
            K::MarkdownWrapped,
            "the call is inside Markdown inline code: write the bare call, without backticks",
            text,
            at,
        )),
        Some('"' | '\'') => Err(ParseError::at(
            K::JsonWrapped,
            "the call is inside a quoted string: write the bare call, not a string containing it",
            text,
            at,
        )),
        Some('{' | '[') => Err(ParseError::at(
            K::JsonWrapped,
            "the call is inside JSON: write the bare call, not a JSON object or array",
            text,
            at,
        )),
        Some(':') if trimmed[..trimmed.len() - 1].trim_end().ends_with('"') => Err(ParseError::at(
            K::JsonWrapped,
            "the call is a JSON value: write the bare call, not a JSON object",
            text,
            at,
        )),
        _ => {
            let s = skip_noise(text, body_start);
            if s < cs && text[s..].starts_with('{') {
                return Err(ParseError::at(
                    K::JsonWrapped,
                    "the call is inside JSON: write the bare call, not a JSON object",
                    text,
                    s,
                ));
            }
            Ok(())
        }
    }
}

/// After the call only whitespace, `</answer>` and special tokens may follow.
fn check_tail(text: &str, end: usize) -> ParseResult<()> {
    let k = skip_clean(text, end);
    if k == text.len() {
        return Ok(());
    }
    if let Some(second) = find_call_start(text, end) {
        return Err(ParseError::at(
            K::MultipleCalls,
            "a second call follows the first: answer with exactly one do(...) or finish(...) call per turn",
            text,
            second,
        ));
    }
    if text[k..].starts_with("```") || text[k..].starts_with('`') {
        return Err(ParseError::at(
            K::MarkdownWrapped,
            "the call is followed by a Markdown fence or backtick: write the bare call, without Markdown",
            text,
            k,
        ));
    }
    let snippet: String = text[k..].chars().take(40).collect();
    Err(ParseError::at(
        K::TrailingText,
        format!(
            "unexpected text after the call: {snippet:?}; the answer must end with the call \
             (put reasoning before it)"
        ),
        text,
        k,
    ))
}

fn reasoning(prefix: &str) -> Option<String> {
    let mut out = String::with_capacity(prefix.len());
    let mut i = 0;
    while i < prefix.len() {
        let rest = &prefix[i..];
        if let Some(tag) = ["<think>", "</think>", "<answer>", "</answer>"]
            .iter()
            .find(|t| rest.starts_with(**t))
        {
            i += tag.len();
        } else if let Some(n) = special_token_len(rest) {
            i += n;
        } else if let Some(c) = rest.chars().next() {
            out.push(c);
            i += c.len_utf8();
        } else {
            break;
        }
    }
    let t = out.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// How a candidate closing quote is judged (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    /// Definitely the end of the string.
    Strong,
    /// Only if no strong candidate follows.
    Weak,
    /// Part of the text.
    No,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StrCtx {
    /// A keyword argument's value.
    Top,
    /// A list item.
    List,
}

struct Parser<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    /// Start of the last `do(`/`finish(` after the current call's start.
    last_call: Option<usize>,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn err(&self, kind: K, msg: impl Into<String>, at: usize) -> ParseError {
        ParseError::at(kind, msg, self.src, at)
    }

    fn ws_from(&self, mut i: usize) -> usize {
        while let Some(c) = self.src[i..].chars().next() {
            if !c.is_whitespace() {
                break;
            }
            i += c.len_utf8();
        }
        i
    }

    fn skip_ws(&mut self) {
        self.pos = self.ws_from(self.pos);
    }

    fn ident_end(&self, mut i: usize) -> usize {
        while i < self.b.len() && is_ident_byte(self.b[i]) {
            i += 1;
        }
        i
    }

    fn call(&mut self) -> ParseResult<RawCall> {
        let start = self.pos;
        let is_finish = self.b[start..].starts_with(b"finish(");
        self.pos += if is_finish { "finish(" } else { "do(" }.len();
        let mut args: Vec<Arg> = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => {
                    return Err(self.err(
                        K::Incomplete,
                        "the call is not closed: it ends without `)`",
                        start,
                    ));
                }
                Some(b')') => {
                    self.pos += 1;
                    break;
                }
                Some(c) if is_ident_start(c) => {}
                Some(b'"' | b'\'' | b'[' | b'0'..=b'9' | b'-') => {
                    return Err(self.err(
                        K::PositionalArgument,
                        "an argument without a keyword: write every argument as keyword=value, \
                         e.g. do(action=\"Tap\", element=[500, 300])",
                        self.pos,
                    ));
                }
                Some(_) => {
                    if self.at_clean_end(self.pos) {
                        return Err(self.err(
                            K::Incomplete,
                            "the call is not closed: it ends without `)`",
                            start,
                        ));
                    }
                    return Err(self.err(
                        K::Syntax,
                        format!(
                            "unexpected {} in the argument list: expected a keyword argument such as action=\"Tap\"",
                            self.describe_here()
                        ),
                        self.pos,
                    ));
                }
            }
            let key_start = self.pos;
            let key_end = self.ident_end(key_start);
            let key = self.src[key_start..key_end].to_string();
            self.pos = key_end;
            self.skip_ws();
            match self.peek() {
                Some(b'=') if self.b.get(self.pos + 1) != Some(&b'=') => self.pos += 1,
                Some(b'=') => {
                    return Err(self.err(
                        K::Expression,
                        "comparisons (`==`) are not allowed: write keyword=value",
                        self.pos,
                    ));
                }
                Some(b'(') => {
                    return Err(self.err(
                        K::Expression,
                        format!("function calls such as `{key}(…)` are not allowed inside a call"),
                        key_start,
                    ));
                }
                Some(b',' | b')') => {
                    return Err(self.err(
                        K::PositionalArgument,
                        format!(
                            "`{key}` has no keyword: write every argument as keyword=value, e.g. action=\"{key}\""
                        ),
                        key_start,
                    ));
                }
                None => {
                    return Err(self.err(
                        K::Incomplete,
                        "the call is not closed: it ends without `)`",
                        start,
                    ));
                }
                Some(_) => {
                    return Err(self.err(
                        K::Syntax,
                        format!(
                            "expected `=` after the keyword `{key}`, found {}",
                            self.describe_here()
                        ),
                        self.pos,
                    ));
                }
            }
            self.skip_ws();
            let node = self.value(StrCtx::Top)?;
            if args.iter().any(|a| a.key == key) {
                return Err(self
                    .err(
                        K::DuplicateKeyword,
                        format!("the keyword `{key}` is given twice: give each keyword once"),
                        key_start,
                    )
                    .with_field(key));
            }
            args.push(Arg {
                key,
                key_loc: Loc::Span(key_start, key_end),
                node,
            });
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b')') => {
                    self.pos += 1;
                    break;
                }
                None => {
                    return Err(self.err(
                        K::Incomplete,
                        "the call is not closed: it ends without `)`",
                        start,
                    ));
                }
                Some(_) => return Err(self.after_value_error("`,` or `)`", start)),
            }
        }
        Ok(RawCall {
            is_finish,
            start,
            end: self.pos,
            args,
        })
    }

    /// True when only whitespace, `</answer>` and special tokens follow `i`.
    fn at_clean_end(&self, i: usize) -> bool {
        skip_clean(self.src, i) == self.src.len()
    }

    fn describe_here(&self) -> String {
        match self.src[self.pos..].chars().next() {
            Some(c) => format!("{c:?}"),
            None => "the end of the answer".to_string(),
        }
    }

    /// The error for an unexpected character after a value.
    fn after_value_error(&self, expected: &str, call_start: usize) -> ParseError {
        let c = self.b[self.pos];
        if matches!(
            c,
            b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'.' | b'@' | b'>' | b'='
        ) || (c == b'<' && !self.at_clean_end(self.pos))
        {
            return self.err(
                K::Expression,
                format!(
                    "expressions are not allowed (found {}): write a single literal value",
                    self.describe_here()
                ),
                self.pos,
            );
        }
        if self.at_clean_end(self.pos) {
            return self.err(
                K::Incomplete,
                "the call is not closed: it ends without `)`",
                call_start,
            );
        }
        self.err(
            K::Syntax,
            format!("expected {expected}, found {}", self.describe_here()),
            self.pos,
        )
    }

    fn value(&mut self, ctx: StrCtx) -> ParseResult<Node> {
        let start = self.pos;
        match self.peek() {
            None => Err(self.err(
                K::Incomplete,
                "the answer ends where a value was expected",
                start,
            )),
            Some(b'"' | b'\'') => self.string(ctx),
            Some(b'0'..=b'9') => self.number(),
            Some(b'-') if self.b.get(start + 1).is_some_and(u8::is_ascii_digit) => Err(self.err(
                K::NegativeNumber,
                "negative numbers are not allowed: coordinates and durations are 0 or more",
                start,
            )),
            Some(b'[') => self.list(),
            Some(b'(') => Err(self.err(
                K::Syntax,
                "tuples are not allowed: write a point as a list [x, y]",
                start,
            )),
            Some(b'{') => Err(self.err(
                K::Syntax,
                "objects are not allowed as values: use strings, numbers, True/False or lists",
                start,
            )),
            Some(c) if is_ident_start(c) => self.name_value(),
            Some(_) => Err(self.err(
                K::Expression,
                format!(
                    "expected a value (a string in quotes, a number, True/False or a list), found {}",
                    self.describe_here()
                ),
                start,
            )),
        }
    }

    /// `True`/`False`, or a rejected bare name / call / placeholder.
    fn name_value(&mut self) -> ParseResult<Node> {
        let start = self.pos;
        let end = self.ident_end(start);
        let word = &self.src[start..end];
        let loc = Loc::Span(start, end);
        let next = self.b.get(end).copied();
        if next == Some(b'(') {
            return Err(self.err(
                K::Expression,
                format!("function calls such as `{word}(…)` are not allowed as values"),
                start,
            ));
        }
        if next == Some(b'.') {
            return Err(self.err(
                K::Expression,
                format!("`{word}.…` is an expression: write a literal value"),
                start,
            ));
        }
        match word {
            "True" | "true" => {
                self.pos = end;
                Ok(Node {
                    val: Val::Bool(true),
                    loc,
                })
            }
            "False" | "false" => {
                self.pos = end;
                Ok(Node {
                    val: Val::Bool(false),
                    loc,
                })
            }
            "None" | "null" | "nil" => Err(self.err(
                K::TypeMismatch,
                format!("`{word}` is not a value: leave the keyword out instead"),
                start,
            )),
            w if is_placeholder_name(w) => Err(self.err(
                K::Placeholder,
                format!(
                    "`{w}` is the placeholder from the instructions: write real numbers, e.g. element=[500, 300]"
                ),
                start,
            )),
            w => Err(self.err(
                K::Expression,
                format!("the bare name `{w}` is not a value: put strings in double quotes"),
                start,
            )),
        }
    }

    fn number(&mut self) -> ParseResult<Node> {
        let start = self.pos;
        let mut i = start;
        while i < self.b.len() && self.b[i].is_ascii_digit() {
            i += 1;
        }
        if self.b.get(i) == Some(&b'.') {
            i += 1;
            while i < self.b.len() && self.b[i].is_ascii_digit() {
                i += 1;
            }
        }
        if self
            .b
            .get(i)
            .is_some_and(|&c| is_ident_byte(c) || c == b'.')
        {
            let bad_end = self.ident_end(i).max(i + 1).min(self.b.len());
            let bad_end = (bad_end..=self.b.len())
                .find(|&k| self.src.is_char_boundary(k))
                .unwrap_or(self.b.len());
            return Err(self.err(
                K::Syntax,
                format!(
                    "malformed number {:?}: write digits with an optional decimal point, e.g. 500 or 2.5",
                    &self.src[start..bad_end]
                ),
                start,
            ));
        }
        let raw = &self.src[start..i];
        let v: f64 = raw
            .parse()
            .map_err(|_| self.err(K::Syntax, format!("malformed number {raw:?}"), start))?;
        if !v.is_finite() {
            return Err(self.err(K::OutOfRange, "the number is too large", start));
        }
        self.pos = i;
        Ok(Node {
            val: Val::Num(v),
            loc: Loc::Span(start, i),
        })
    }

    fn list(&mut self) -> ParseResult<Node> {
        let start = self.pos;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(K::Syntax, "lists are nested too deeply", start));
        }
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => {
                    return Err(self.err(
                        K::Incomplete,
                        "the list is not closed: it ends without `]`",
                        start,
                    ));
                }
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => {}
            }
            items.push(self.value(StrCtx::List)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                None => {
                    return Err(self.err(
                        K::Incomplete,
                        "the list is not closed: it ends without `]`",
                        start,
                    ));
                }
                Some(b')') => {
                    return Err(self.err(
                        K::Syntax,
                        "the list is not closed: expected `]` before `)`",
                        self.pos,
                    ));
                }
                Some(_) => return Err(self.after_value_error("`,` or `]`", start)),
            }
        }
        self.depth -= 1;
        Ok(Node {
            val: Val::List(items),
            loc: Loc::Span(start, self.pos),
        })
    }

    /// Judges the unescaped quote at `i` (see the module docs).
    fn close_kind(&self, i: usize, ctx: StrCtx) -> Close {
        let j = self.ws_from(i + 1);
        match (ctx, self.b.get(j)) {
            (_, None) => Close::Weak,
            (StrCtx::List, Some(b',' | b']')) => Close::Strong,
            (StrCtx::List, _) => Close::No,
            (StrCtx::Top, Some(b')')) => self.paren_close(j),
            (StrCtx::Top, Some(b',')) => {
                let k = self.ws_from(j + 1);
                match self.b.get(k) {
                    Some(&c) if is_ident_start(c) => {
                        let e = self.ident_end(k);
                        let m = self.ws_from(e);
                        if self.b.get(m) == Some(&b'=') && self.b.get(m + 1) != Some(&b'=') {
                            Close::Strong
                        } else {
                            Close::Weak
                        }
                    }
                    Some(b')') => self.paren_close(k),
                    _ => Close::Weak,
                }
            }
            (StrCtx::Top, Some(_)) => Close::No,
        }
    }

    /// Judges a `)` at `j` that follows a candidate closing quote.
    fn paren_close(&self, j: usize) -> Close {
        let after = j + 1;
        if self.at_clean_end(after) {
            return Close::Strong;
        }
        // `)` then optional spaces/tabs and a line break, `</answer>` or a special token.
        let rest = &self.src[after..];
        let t = rest.trim_start_matches([' ', '\t']);
        if t.starts_with('\n')
            || t.starts_with("\r\n")
            || t.trim_start().starts_with("</answer>")
            || special_token_len(t.trim_start()).is_some()
        {
            return Close::Strong;
        }
        if self.last_call.is_some_and(|c| c > j) {
            return Close::Strong;
        }
        Close::Weak
    }

    fn string(&mut self, ctx: StrCtx) -> ParseResult<Node> {
        let start = self.pos;
        let q = self.b[start];
        let mut i = start + 1;
        let mut out = String::new();
        // (index of the quote, length of `out` there)
        let mut weak: Option<(usize, usize)> = None;
        while let Some(c) = self.src[i..].chars().next() {
            if c == '\\' {
                i = self.escape(i, &mut out);
                continue;
            }
            if c as u32 == u32::from(q) {
                match self.close_kind(i, ctx) {
                    Close::Strong => {
                        self.pos = i + 1;
                        return Ok(Node {
                            val: Val::Str(out),
                            loc: Loc::Span(start, i + 1),
                        });
                    }
                    Close::Weak if weak.is_none() => weak = Some((i, out.len())),
                    Close::Weak | Close::No => {}
                }
            }
            out.push(c);
            i += c.len_utf8();
        }
        if let Some((qi, len)) = weak {
            out.truncate(len);
            self.pos = qi + 1;
            return Ok(Node {
                val: Val::Str(out),
                loc: Loc::Span(start, qi + 1),
            });
        }
        Err(self.err(
            K::Incomplete,
            "the string is never closed: end it with a quote",
            start,
        ))
    }

    /// Decodes the escape at `i` (a backslash) into `out`; returns the index after it.
    fn escape(&self, i: usize, out: &mut String) -> usize {
        let rest = &self.src[i + 1..];
        let Some(c) = rest.chars().next() else {
            out.push('\\');
            return i + 1;
        };
        let simple = match c {
            '\\' => Some('\\'),
            '"' => Some('"'),
            '\'' => Some('\''),
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            '0' => Some('\0'),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            return i + 2;
        }
        let hex = |n: usize| -> Option<u32> {
            let h = rest.get(1..1 + n)?;
            if h.bytes().all(|b| b.is_ascii_hexdigit()) {
                u32::from_str_radix(h, 16).ok()
            } else {
                None
            }
        };
        let decoded = match c {
            'x' => hex(2).and_then(char::from_u32).map(|ch| (ch, 4)),
            'U' => hex(8).and_then(char::from_u32).map(|ch| (ch, 10)),
            'u' => match hex(4) {
                Some(hi @ 0xD800..=0xDBFF) => {
                    // A surrogate pair written as two \u escapes.
                    let lo = rest
                        .get(5..7)
                        .filter(|s| *s == "\\u")
                        .and_then(|_| rest.get(7..11))
                        .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .filter(|lo| (0xDC00..=0xDFFF).contains(lo));
                    lo.and_then(|lo| {
                        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                    })
                    .map(|ch| (ch, 12))
                }
                Some(v) => char::from_u32(v).map(|ch| (ch, 6)),
                None => None,
            },
            _ => None,
        };
        match decoded {
            Some((ch, len)) => {
                out.push(ch);
                i + len
            }
            None => {
                // Unknown or invalid escape: kept literally (backslash and the char).
                out.push('\\');
                out.push(c);
                i + 1 + c.len_utf8()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::ModelPoint;

    fn opts() -> ParseOptions {
        ParseOptions::default()
    }

    fn ok(s: &str) -> Action {
        match parse_do(s, &opts()) {
            Ok(a) => a,
            Err(e) => panic!("rejected {s:?}: {e:?}"),
        }
    }

    fn kind(s: &str) -> K {
        match parse_do(s, &opts()) {
            Ok(a) => panic!("accepted {s:?}: {a:?}"),
            Err(e) => e.kind,
        }
    }

    fn text_of(a: &Action) -> &str {
        match &a.kind {
            ActionKind::Type { text } => text,
            other => panic!("not a Type: {other:?}"),
        }
    }

    #[test]
    fn tap_with_metadata() {
        let a = ok(
            r#"do(action="Tap", element=[500, 300], screen_description="Home screen", reason="open Settings")"#,
        );
        assert_eq!(
            a.kind,
            ActionKind::Tap {
                element: ModelPoint { x: 500.0, y: 300.0 }
            }
        );
        assert_eq!(a.screen_description.as_deref(), Some("Home screen"));
        assert_eq!(a.reason.as_deref(), Some("open Settings"));
        assert!(!a.sensitive && !a.confirm_irreversible);
    }

    #[test]
    fn think_and_answer_envelope() {
        let a = ok("<think>I should go back.</think>\n<answer>do(action=\"Back\")</answer>");
        assert_eq!(a.kind, ActionKind::Back);
        let o = parse_do_output(
            "<think>I should go back.</think>\n<answer>do(action=\"Back\")</answer>",
            &opts(),
        )
        .unwrap();
        assert_eq!(o.reasoning.as_deref(), Some("I should go back."));
    }

    #[test]
    fn lone_closing_think_and_trailing_answer_tag() {
        assert_eq!(
            ok("reasoning here\n</think>\ndo(action=\"Home\")\n</answer>").kind,
            ActionKind::Home
        );
    }

    #[test]
    fn box_tokens_around_prose_and_call() {
        let s = "<|begin_of_box|>I can see the home screen.<|end_of_box|>\n<|begin_of_box|>do(action=\"Back\")<|end_of_box|>";
        assert_eq!(ok(s).kind, ActionKind::Back);
    }

    #[test]
    fn inner_quotes_and_newlines_in_type_text() {
        let a = ok(r#"do(action="Type", text="去哪里"吃饭"呀？")"#);
        assert_eq!(text_of(&a), "去哪里\"吃饭\"呀？");
        let a = ok("do(action=\"Type\", text=\"line 1\nline 2 \\\"q\\\" 😀\")");
        assert_eq!(text_of(&a), "line 1\nline 2 \"q\" 😀");
        let a = ok(r#"do(action="Type", text="he said ") and left")"#);
        assert_eq!(text_of(&a), "he said \") and left");
        let a = ok(r#"do(action="Type", text="a, b", reason="r")"#);
        assert_eq!(text_of(&a), "a, b");
        assert_eq!(a.reason.as_deref(), Some("r"));
    }

    #[test]
    fn escapes_decode_like_python() {
        let a = ok(r#"do(action="Type", text="\u4e2d\x41\U0001F600\ud83d\ude00\q\\")"#);
        assert_eq!(text_of(&a), "中A😀😀\\q\\");
    }

    #[test]
    fn second_call_is_not_swallowed_into_text() {
        assert_eq!(
            kind(r#"do(action="Type", text="abc") do(action="Tap", element=[5,5])"#),
            K::MultipleCalls
        );
        assert_eq!(
            kind("do(action=\"Type\", text=\"abc\")\nDone \"quoted\")"),
            K::TrailingText
        );
    }

    #[test]
    fn rejections_have_the_right_kind() {
        assert_eq!(kind(""), K::Empty);
        assert_eq!(kind("I will tap the icon."), K::NoCall);
        assert_eq!(
            kind("```python\ndo(action=\"Back\")\n```"),
            K::MarkdownWrapped
        );
        assert_eq!(kind("`do(action=\"Back\")`"), K::MarkdownWrapped);
        assert_eq!(kind(r#"{"action": "do(action=\"Back\")"}"#), K::JsonWrapped);
        assert_eq!(
            kind(r#"{"action": "Tap", "element": [1, 2]}"#),
            K::JsonWrapped
        );
        assert_eq!(kind(r#"do(action="Back") now"#), K::TrailingText);
        assert_eq!(
            kind(r#"do(action="Back")do(action="Home")"#),
            K::MultipleCalls
        );
        assert_eq!(
            kind(r#"do(action="Tap", element=[500, 300]"#),
            K::Incomplete
        );
        assert_eq!(kind(r#"do(action="Tap", element=[500, "#), K::Incomplete);
        assert_eq!(kind(r#"do(action="Type", text="abc"#), K::Incomplete);
        assert_eq!(kind("<think>no end"), K::Incomplete);
        assert_eq!(kind(r#"do("Tap", element=[1,2])"#), K::PositionalArgument);
        assert_eq!(kind(r#"do(action="Tap", element=[1+2, 3])"#), K::Expression);
        assert_eq!(kind(r#"do(action="Tap", element=foo(1))"#), K::Expression);
        assert_eq!(kind(r#"do(action="Tap", element=pos)"#), K::Expression);
        assert_eq!(kind(r#"do(action="Tap", element=[x,y])"#), K::Placeholder);
        assert_eq!(
            kind(r#"do(action="Tap", element=[-5, 3])"#),
            K::NegativeNumber
        );
        assert_eq!(
            kind(r#"do(action="Tap", element=[1200, 3])"#),
            K::OutOfRange
        );
        assert_eq!(
            kind(r#"do(action="Tap", element=[1, 2, 3])"#),
            K::WrongLength
        );
        assert_eq!(kind(r#"do(action="Fly")"#), K::UnknownAction);
        assert_eq!(kind(r#"do(action="Back", foo=1)"#), K::UnknownKeyword);
        assert_eq!(
            kind(r#"do(action="Back", description="x")"#),
            K::LegacyDescription
        );
        assert_eq!(
            kind(r#"do(action="Tap", element=[1,2], element=[3,4])"#),
            K::DuplicateKeyword
        );
        assert_eq!(kind(r#"do(action="Tap")"#), K::MissingField);
        assert_eq!(kind(r#"do(action="Tap", element="1,2")"#), K::TypeMismatch);
        assert_eq!(
            kind(r#"do(action="Wait", duration="99 seconds")"#),
            K::OutOfRange
        );
        assert_eq!(
            kind(r#"do(action="Launch", app="Settings")"#),
            K::LauncherDisabled
        );
        assert_eq!(kind(r#"do(action="Tap", element=[1e3, 2])"#), K::Syntax);
        assert_eq!(kind(r#"do(action="Tap", element=(1, 2))"#), K::Syntax);
        assert_eq!(kind(r#"do(element=[1, 2])"#), K::MissingField);
    }

    #[test]
    fn legacy_description_message_names_the_replacements() {
        let e = parse_do(r#"do(action="Back", description="x")"#, &opts()).unwrap_err();
        assert!(e.message.contains("screen_description") && e.message.contains("reason"));
        assert_eq!(e.position.unwrap().column, 19);
    }

    #[test]
    fn positions_point_at_the_problem() {
        let s = "<think>t</think>\ndo(action=\"Tap\", element=[500, 1200])";
        let e = parse_do(s, &opts()).unwrap_err();
        assert_eq!(e.kind, K::OutOfRange);
        let p = e.position.unwrap();
        assert_eq!(&s[p.byte..p.byte + 4], "1200");
        assert_eq!(p.line, 2);
        assert_eq!(e.field.as_deref(), Some("element[1]"));
    }

    #[test]
    fn wait_forms() {
        for s in [
            r#"do(action="Wait", duration="2 seconds")"#,
            r#"do(action="Wait", duration=2)"#,
            r#"do(action="Wait", duration="2s")"#,
        ] {
            assert_eq!(ok(s).kind, ActionKind::Wait { seconds: 2.0 });
        }
        assert_eq!(
            kind(r#"do(action="Wait", duration="x seconds")"#),
            K::Placeholder
        );
        assert_eq!(
            kind(r#"do(action="Wait", duration="0 seconds")"#),
            K::OutOfRange
        );
        assert_eq!(
            kind(r#"do(action="Wait", duration="-1 seconds")"#),
            K::NegativeNumber
        );
    }

    #[test]
    fn autoglm_sensitive_tap_message_marks_sensitive() {
        let a = ok(r#"do(action="Tap", element=[500, 900], message="确认支付")"#);
        assert!(a.sensitive);
        assert_eq!(a.target_description.as_deref(), Some("确认支付"));
    }

    #[test]
    fn finish_two_stage() {
        let a = ok(r#"finish(message="Done.", confirm=True)"#);
        assert_eq!(
            a.kind,
            ActionKind::Finish {
                message: "Done.".into(),
                confirm: true
            }
        );
        let a = ok(r#"finish(message="Done.")"#);
        assert_eq!(
            a.kind,
            ActionKind::Finish {
                message: "Done.".into(),
                confirm: false
            }
        );
    }

    #[test]
    fn note_task_board() {
        let a = ok(
            r#"do(action="Note", message="plan", task_board=["[x] open mail", "[ ] write draft"])"#,
        );
        let ActionKind::Note { task_board, .. } = a.kind else {
            panic!()
        };
        let tb = task_board.unwrap();
        assert_eq!(tb.len(), 2);
        assert!(tb[0].done && !tb[1].done);
        assert_eq!(tb[1].text, "write draft");
    }

    #[test]
    fn nesting_is_bounded() {
        let s = format!("do(action=\"Tap\", element={}", "[".repeat(100));
        assert_eq!(kind(&s), K::Syntax);
    }

    #[test]
    fn no_call_messages_give_the_right_hint() {
        let e = parse_do("[Step 2] I will tap the icon.", &opts()).unwrap_err();
        assert_eq!(e.kind, K::NoCall);
        let e = parse_do("do (action=\"Back\")", &opts()).unwrap_err();
        assert_eq!(e.kind, K::NoCall);
        assert!(e.message.contains("without a space"), "{}", e.message);
        let e = parse_do("Do(action=\"Back\")", &opts()).unwrap_err();
        assert!(e.message.contains("lowercase"), "{}", e.message);
        let e = parse_do("<think>hmm</think>", &opts()).unwrap_err();
        assert!(
            e.message.contains("after the thinking block"),
            "{}",
            e.message
        );
        assert_eq!(kind("[1, 2]"), K::JsonWrapped);
    }

    #[test]
    fn call_inside_think_is_ignored() {
        let a = ok("<think>maybe do(action=\"Back\")?</think>do(action=\"Home\")");
        assert_eq!(a.kind, ActionKind::Home);
    }
}
