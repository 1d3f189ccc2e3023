//! # phoneagent-safety
//!
//! PhoneAgent's safety gate: a pure, synchronous function from one executing tool call to a risk
//! tier with reasons, and from (access mode, call, tier) to a decision — plus the warning receipts
//! the model sees, and the redaction every receipt, reviewer prompt and ledger entry goes through.
//! No I/O except reading a user's lexicon file, no async, no model calls (SPEC S1–S6, S9).
//!
//! * [`Gate`] holds the compiled [lexicons](lexicon) and classifies a [`GateInput`] into a
//!   [`Classification`] (tier `none`/`soft`/`hard` and a list of [`Reason`]s with stable codes,
//!   SPEC S3) and evaluates negated task boundaries (SPEC S4, [`boundary`]).
//! * [`decide`] turns the access mode, the call and its classification into a [`GateDecision`]
//!   (allow / warning receipt / send to the reviewer / needs approval / blocked by the task
//!   boundary), reading `confirm_irreversible` first in wary and reviewer modes (SPEC S6).
//! * [`receipt`] renders the warning receipts of source 000 § 预警文案 in Chinese and English and
//!   the one-line console notice (SPEC S5, S7).
//! * [`redact`] masks phone numbers, e-mail addresses, card numbers, one-time codes and key/token
//!   shapes in text, and secret-named keys in JSON arguments (SPEC S5, S7, AR6, P5).
//!
//! Rules of the house: nothing the model says can lower a tier — every text source (the model's
//! `target_description`, its `reason`, OCR text around the target) is classified on its own and
//! the results are merged by maximum; only the executing tools (tap, double tap, long press,
//! type_text, launch_app) are gated (SPEC S2). See `docs/safety.md` for the full description.

pub mod boundary;
mod classify;
mod decide;
mod effect;
mod error;
mod input;
pub mod lexicon;
mod normalize;
pub mod receipt;
pub mod redact;
mod request;
mod screen;
mod task;

pub use boundary::{Boundary, BoundarySet};
pub use classify::{
    Authorization, Classification, EffectKind, Gate, Layers, Reason, ReasonCode, Source, classify,
};
pub use decide::{
    AllowBasis, ApprovalRoute, Decision, GateDecision, GateOptions, decide, decide_with,
};
pub use error::{Error, Result};
pub use input::{GateInput, Lang, Tool};
pub use lexicon::{Category, Lexicon};
pub use normalize::normalize;
pub use receipt::{ReceiptKind, WarningReceipt, console_notice};
pub use redact::{redact_json, redact_json_text, redact_text};
pub use task::{TASK_MAX_CHARS, TaskAnalysis, TaskRequest};

pub use phoneagent_protocol::{AccessMode, RiskTier, ScreenReading};

/// Build the process-wide built-in gate (its lexicons) and the redaction rules now, on the
/// calling thread, instead of inside the first gated action (issue #14: that first build took
/// about 280 ms in a debug build on the async worker that runs the task, and every event behind
/// it waited). Idempotent and cheap once done; call it from a blocking thread at a run's start.
pub fn warm_up() {
    let _ = classify::builtin();
    redact::warm_up();
}
