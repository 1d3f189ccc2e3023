//! Integration tests of the safety gate: the labelled corpus, the decision matrix of every
//! access mode, raise-only properties, user lexicons, and receipt snapshots.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod corpus;
mod decide;
mod lexicon_file;
mod receipts;
mod screen_task;

use std::sync::OnceLock;

/// One gate over the built-in lexicons for every test (compiling them takes a moment).
pub fn gate() -> &'static phoneagent_safety::Gate {
    static GATE: OnceLock<phoneagent_safety::Gate> = OnceLock::new();
    GATE.get_or_init(|| phoneagent_safety::Gate::builtin().unwrap())
}
