//! Why a model answer was rejected (SPEC A2–A5): a stable [`ParseErrorKind`], a message that
//! names what was wrong and how to write it instead, and where in the answer it happened.
//!
//! The message is written for two readers: the model, which gets it verbatim in the one
//! same-step protocol retry (SPEC A4), and the user reading the run timeline. The kind is what
//! code matches on; the message is never matched as a string.

use serde::{Deserialize, Serialize};

use crate::error::ErrorCode;

/// Result alias of the parsers in this crate.
pub type ParseResult<T> = std::result::Result<T, ParseError>;

/// Stable category of a rejection. Serialized in `snake_case`; new kinds may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The answer is empty (or only whitespace / special tokens).
    Empty,
    /// No `do(...)` / `finish(...)` call (or, for tools, no tool call) in the answer.
    NoCall,
    /// The call is wrapped in a Markdown code fence or inline code.
    MarkdownWrapped,
    /// The call is wrapped in JSON or quoted as a string.
    JsonWrapped,
    /// More than one call in one answer.
    MultipleCalls,
    /// Text after the call.
    TrailingText,
    /// The answer stops before the call (or a string, list or `<think>` block) is closed.
    Incomplete,
    /// Malformed syntax: an unexpected character or token.
    Syntax,
    /// An argument without a keyword (`do("Tap", …)`).
    PositionalArgument,
    /// An expression where a literal is required (`1+2`, a function call, a bare name).
    Expression,
    /// A placeholder from the instructions was copied literally (`element=[x,y]`, `"xxx"`).
    Placeholder,
    /// The `action` names no action of the grammar.
    UnknownAction,
    /// A keyword (or tool argument) the action's closed schema does not have.
    UnknownKeyword,
    /// The removed `description` keyword: use `screen_description` / `reason`.
    LegacyDescription,
    /// The same keyword twice.
    DuplicateKeyword,
    /// A required keyword is missing.
    MissingField,
    /// A value of the wrong type (a string where a number is needed, …).
    TypeMismatch,
    /// A number outside its bounds (coordinates outside the frozen space, a too long wait, …).
    OutOfRange,
    /// A negative number (no field of the grammar takes one).
    NegativeNumber,
    /// A list with the wrong number of items (`element=[500]`).
    WrongLength,
    /// A string longer than its bound (`reason` over 4000 chars, …).
    TooLong,
    /// `Launch` / `launch_app` while the app-launcher capability is off (SPEC D5).
    LauncherDisabled,
    /// A swipe whose start/end contradict its stated or requested direction (SPEC A5).
    SwipeDirection,
    /// Tool-call arguments that are not valid JSON.
    InvalidJson,
    /// A tool name that is not one of the tools offered.
    UnknownTool,
}

impl ParseErrorKind {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Empty => "empty",
            Self::NoCall => "no_call",
            Self::MarkdownWrapped => "markdown_wrapped",
            Self::JsonWrapped => "json_wrapped",
            Self::MultipleCalls => "multiple_calls",
            Self::TrailingText => "trailing_text",
            Self::Incomplete => "incomplete",
            Self::Syntax => "syntax",
            Self::PositionalArgument => "positional_argument",
            Self::Expression => "expression",
            Self::Placeholder => "placeholder",
            Self::UnknownAction => "unknown_action",
            Self::UnknownKeyword => "unknown_keyword",
            Self::LegacyDescription => "legacy_description",
            Self::DuplicateKeyword => "duplicate_keyword",
            Self::MissingField => "missing_field",
            Self::TypeMismatch => "type_mismatch",
            Self::OutOfRange => "out_of_range",
            Self::NegativeNumber => "negative_number",
            Self::WrongLength => "wrong_length",
            Self::TooLong => "too_long",
            Self::LauncherDisabled => "launcher_disabled",
            Self::SwipeDirection => "swipe_direction",
            Self::InvalidJson => "invalid_json",
            Self::UnknownTool => "unknown_tool",
        }
    }
}

impl std::fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where in the model's answer (or in a tool call's `arguments` JSON) an error is.
///
/// `byte` is a UTF-8 byte offset, `char` a Unicode scalar offset; `line` and `column` are
/// 1-based, the column counted in chars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Position {
    /// Byte offset from the start of the text.
    pub byte: usize,
    /// Char offset from the start of the text.
    pub char: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in chars.
    pub column: usize,
}

impl Position {
    /// The position of byte offset `byte` in `text` (clamped to the text's length and moved
    /// back to a char boundary).
    pub fn in_text(text: &str, byte: usize) -> Self {
        let mut byte = byte.min(text.len());
        while !text.is_char_boundary(byte) {
            byte -= 1;
        }
        let before = &text[..byte];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Self {
            byte,
            char: before.chars().count(),
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }

    /// The position of a 1-based `line`/`column` (column in chars), as serde_json reports them.
    pub fn from_line_column(text: &str, line: usize, column: usize) -> Self {
        let mut byte = 0;
        for (i, l) in text.split_inclusive('\n').enumerate() {
            if i + 1 == line {
                let col_bytes: usize = l
                    .chars()
                    .take(column.saturating_sub(1))
                    .map(char::len_utf8)
                    .sum();
                return Self::in_text(text, byte + col_bytes);
            }
            byte += l.len();
        }
        Self::in_text(text, text.len())
    }
}

/// A rejected model answer (SPEC A2–A5). Never a completion: it goes to the one bounded
/// protocol retry (SPEC A4), and the device is not touched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}{}", location_suffix(.position.as_ref(), .field.as_deref()))]
pub struct ParseError {
    /// Stable category.
    pub kind: ParseErrorKind,
    /// What was wrong and how to write it instead.
    pub message: String,
    /// Where in the text, when the error points at a place in it.
    pub position: Option<Position>,
    /// The argument concerned (`element`, `task_board[2].text`, …), when there is one.
    pub field: Option<String>,
}

fn location_suffix(position: Option<&Position>, field: Option<&str>) -> String {
    match (position, field) {
        (Some(p), _) => format!(" (at line {}, column {})", p.line, p.column),
        (None, Some(f)) => format!(" (argument `{f}`)"),
        (None, None) => String::new(),
    }
}

impl ParseError {
    /// An error with no position.
    pub fn new(kind: ParseErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            position: None,
            field: None,
        }
    }

    /// An error at byte offset `byte` of `text`.
    pub fn at(kind: ParseErrorKind, message: impl Into<String>, text: &str, byte: usize) -> Self {
        Self::new(kind, message).with_position(Position::in_text(text, byte))
    }

    /// Sets the position.
    pub fn with_position(mut self, position: Position) -> Self {
        self.position = Some(position);
        self
    }

    /// Sets the argument concerned.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// The stable error code for the runtime's recovery table: always
    /// [`ErrorCode::ProtocolError`].
    pub fn code(&self) -> ErrorCode {
        ErrorCode::ProtocolError
    }

    /// The correction message for the same-step protocol retry (SPEC A4): what was wrong and
    /// what a valid answer looks like. Contains no coordinates of the rejected call.
    pub fn retry_instruction(&self) -> String {
        format!(
            "Your previous answer was rejected and nothing was done on the phone: {self}. \
             Answer again with exactly one valid call and nothing after it."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_counts_chars_lines_and_columns() {
        let text = "ab\n点击do(x";
        let p = Position::in_text(text, text.find("do").unwrap());
        assert_eq!(p.line, 2);
        assert_eq!(p.column, 3);
        assert_eq!(p.char, 5);
        assert_eq!(p.byte, 9);
    }

    #[test]
    fn position_clamps_inside_a_char() {
        let text = "点";
        let p = Position::in_text(text, 1);
        assert_eq!(p.byte, 0);
        let p = Position::in_text(text, 99);
        assert_eq!(p.byte, 3);
        assert_eq!(p.char, 1);
    }

    #[test]
    fn from_line_column_round_trips() {
        let text = "{\n  \"a\": 点x\n}";
        let p = Position::from_line_column(text, 2, 9);
        assert_eq!(&text[p.byte..p.byte + 1], "x");
    }

    #[test]
    fn display_includes_location_and_kind_serializes_snake_case() {
        let e = ParseError::at(ParseErrorKind::TrailingText, "extra", "a\nbc", 3);
        assert_eq!(e.to_string(), "extra (at line 2, column 2)");
        let j = serde_json::to_value(&e).unwrap();
        assert_eq!(j["kind"], "trailing_text");
        assert_eq!(j["position"]["byte"], 3);
        let e = ParseError::new(ParseErrorKind::MissingField, "m").with_field("element");
        assert_eq!(e.to_string(), "m (argument `element`)");
        assert_eq!(e.code(), ErrorCode::ProtocolError);
    }
}
