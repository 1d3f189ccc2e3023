//! # phoneagent-protocol
//!
//! Plain, serde-serializable types shared by every PhoneAgent crate, and nothing that does I/O.
//!
//! * [`action`]: the one internal [`Action`] type both model front ends parse into (SPEC A1, A3, A6).
//! * [`geometry`]: screen geometry, the three coordinate systems (model-raw, runtime 0..999,
//!   device pixels) and the coordinate-space names of the contract (SPEC M4, M5).
//! * [`safety`]: access modes and risk tiers (SPEC S1, S3).
//! * [`screen`]: the gate's own reading of the pixels around a gated action ([`ScreenReading`],
//!   SPEC S10, S11).
//! * [`approval`]: the approve-for-me vocabulary and ledger record (SPEC AR1–AR8).
//! * [`error`]: stable error codes that reach the UI (`{code, message}`), never matched as strings.
//! * [`do_grammar`]: the `do(...)` text grammar parser ([`parse_do`], SPEC A2), with
//!   [`render`] ([`render_do`], its canonical form) and [`prompt`] ([`do_grammar_prompt`]).
//! * [`tools`]: the OpenAI function-calling front end ([`tool_schemas`], [`parse_tool_call`]).
//! * [`text`]: [`inert_line`](text::inert_line) / [`inert_block`](text::inert_block) make
//!   untrusted text safe to print (no control characters or escape sequences, SPEC S14).
//! * [`swipe`]: swipe direction semantics ([`check_swipe`], SPEC A5).
//! * [`parse_error`]: [`ParseError`] — why an answer was rejected, with a stable kind and position.
//! * [`family`]: model families as adapters ([`ModelFamily`], [`FamilyAdapter`]: trained prompt,
//!   grammar, coordinate convention with Qwen's smart-resize, history and receipts; SPEC M7).
//! * [`op`]: the commands a front end submits to a runtime session ([`Op`], SPEC A7).
//! * [`outcome`]: closed vocabularies of the event stream ([`TerminationCode`],
//!   [`ObservationPurpose`], [`VerifierVerdict`], …; issue #13).
//! * [`options`]: per-run bounds and capabilities of both front ends ([`ParseOptions`]).
//!
//! Dependencies point one way: this crate depends on no other PhoneAgent crate.

pub mod action;
pub mod approval;
pub mod do_grammar;
pub mod error;
pub mod event;
pub mod family;
pub mod geometry;
pub mod op;
pub mod options;
pub mod outcome;
pub mod parse_error;
pub mod prompt;
pub mod render;
pub mod safety;
mod schema;
pub mod screen;
pub mod swipe;
pub mod text;
pub mod tools;

pub use action::{Action, ActionKind, TaskItem};
pub use approval::{
    ApprovalOutcome, ApprovalPolicy, ApprovalReview, BreakerState, ReviewDecision, ReviewRisk,
    UserAuthorization,
};
pub use do_grammar::{DoOutput, parse_do, parse_do_output};
pub use error::ErrorCode;
pub use event::{AgentEvent, EventEnvelope, Phase, RunStatus};
pub use family::{
    FamilyAdapter, FamilyCoords, FamilySetting, ModelFamily, SmartResize, smart_resize,
};
pub use geometry::{
    CoordinateSpace, DevicePoint, ModelPoint, Rotation, RuntimePoint, ScreenGeometry,
};
pub use op::{Op, TaskOptions};
pub use options::{ParseOptions, ToolOptions};
pub use outcome::{
    CalibrationMethod, EndReason, FreshnessOutcome, ObservationPurpose, TerminationCode,
    ToolStatus, VerifierVerdict,
};
pub use parse_error::{ParseError, ParseErrorKind, ParseResult, Position};
pub use prompt::do_grammar_prompt;
pub use render::render_do;
pub use safety::{AccessMode, RiskTier};
pub use schema::{DEFAULT_INTERACT_QUESTION, TOOL_NAMES};
pub use screen::{DialogReading, PxRect, ScreenField, ScreenReading, TargetStyle};
pub use swipe::{SwipeDirection, check_swipe};
pub use tools::{ToolCall, extract_tool_calls, parse_tool_call, parse_tool_calls, tool_schemas};
