//! Errors of the safety crate.

use std::path::PathBuf;

/// Everything that can go wrong in the safety crate. Classification itself never fails; only
/// loading lexicons (built-in or a user's file) and parsing inputs do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A lexicon file is not valid TOML or does not follow the lexicon schema.
    #[error(
        "lexicon {origin}: not a valid lexicon file: {message} (see docs/safety.md § Lexicons for the format)"
    )]
    LexiconSyntax {
        /// File name or path the text came from.
        origin: String,
        /// The TOML parser's message (with line and column).
        message: String,
    },
    /// An entry's `pattern` is not a valid regular expression.
    #[error(
        "lexicon {origin}: entry {id:?}: pattern {pattern:?} is not a valid regular expression: {message}"
    )]
    LexiconPattern {
        /// File name or path.
        origin: String,
        /// The entry's id.
        id: String,
        /// The pattern as written.
        pattern: String,
        /// The regex compiler's message.
        message: String,
    },
    /// An entry's example does not match its own pattern, or a counter-example does.
    #[error("lexicon {origin}: entry {id:?}: {problem}; fix the pattern or the example")]
    LexiconExample {
        /// File name or path.
        origin: String,
        /// The entry's id.
        id: String,
        /// What is wrong, naming the example and the pattern.
        problem: String,
    },
    /// An entry is incomplete or inconsistent (missing examples, missing `kind`, duplicate id…).
    #[error("lexicon {origin}: entry {id:?}: {problem}")]
    LexiconEntry {
        /// File name or path.
        origin: String,
        /// The entry's id.
        id: String,
        /// What is wrong and what to write instead.
        problem: String,
    },
    /// A user lexicon file could not be read.
    #[error("cannot read lexicon file {path}: {source}; check the path (it must be a TOML file)")]
    LexiconRead {
        /// The path given.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A tool name the gate does not know.
    #[error(
        "unknown tool {0:?}: use tap, double_tap, long_press, type_text, launch_app, swipe, scroll, back, home, wait, ask_user, take_over, note or finish"
    )]
    UnknownTool(String),
    /// A language code the receipts do not know.
    #[error("unknown language {0:?}: use zh or en")]
    UnknownLang(String),
}

/// Result alias of the safety crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
