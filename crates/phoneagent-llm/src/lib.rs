//! # phoneagent-llm
//!
//! PhoneAgent's model layer (SPEC M1–M6).
//!
//! * [`client`]: the OpenAI-compatible chat-completions client ([`ChatClient`]) behind the
//!   [`ModelClient`] trait the runtime and reviewers call: images as data URLs, function
//!   calling, `reasoning_content`/`<think>` split, SSE streaming, timeouts, retries with
//!   backoff + jitter honouring `Retry-After`, cancellation (M1).
//! * [`types`]: request/response types ([`ChatRequest`], [`ChatMessage`], [`ContentPart`],
//!   [`ChatResponse`], [`ToolCall`], [`Usage`]).
//! * [`keystore`]: API keys in the OS keyring ([`KeyStore`], [`ApiKey`]) (P5).
//! * [`config`]: profiles and roles from `models.json` + environment, one-hop role fallback
//!   ([`ModelsConfig`], [`RoleResolution`], [`ModelFallback`]) (M2).
//! * [`ledger`]: the per-run token ledger and budgets ([`TokenLedger`]) (M3).
//! * [`image`]: screenshot sizing and encoding ([`prepare_image`], [`ImagePolicy`]) (M6).
//! * [`mapper`]: model space → canonical → runtime 0..999 → device px ([`CoordinateMapper`],
//!   [`MappedPoint`]) (M5).
//! * [`calibration`]: `auto` coordinate-contract negotiation with synthetic probes and its cache
//!   ([`negotiate`], [`CalibrationCache`], [`CalibrationReport`]) (M4).
//! * [`presets`]: provider presets ([`presets::PRESETS`]: base URL, model ids, family, image
//!   policy; SPEC M8).
//! * [`connection_test`]: the step-by-step connection test of a profile (reachable, key, model
//!   listed, vision, family grammar, coordinate contract) that `doctor --deep` and the app's
//!   Settings share ([`connection_test::run`]; SPEC M1, M4, M7, M8).
//! * [`error`]: [`LlmError`] with stable [`phoneagent_protocol::ErrorCode`]s.
//!
//! Invariant: no API key ever appears in a message, log line, event or file written by this
//! crate.

pub mod calibration;
pub mod client;
pub mod config;
pub mod connection_test;
pub mod error;
pub mod image;
pub mod keystore;
pub mod ledger;
pub mod mapper;
pub mod presets;
pub mod types;

pub use calibration::{
    CachedContract, CalibrationCache, CalibrationContext, CalibrationKey, CalibrationMethod,
    CalibrationReport, CalibrationSettings, MemoryCalibrationCache, negotiate,
};
pub use config::{
    ActionProtocol, EnvOverrides, ModelFallback, ModelsConfig, Price, Profile, ResolvedModel, Role,
    RoleResolution,
};
pub use image::{ImageFormat, ImagePolicy, PreparedImage, prepare_image};
pub use ledger::{BudgetExceeded, Budgets, CallKind, CallRecord, LedgerSummary, TokenLedger};
pub use mapper::{CanonicalPoint, CoordinateMapper, MappedPoint};

pub use client::{ChatClient, ClientConfig, ModelClient, RetryPolicy};
pub use error::{LlmError, Result, TimeoutPhase};
pub use keystore::{ApiKey, KeyLookup, KeyStore};
pub use types::{
    ChatMessage, ChatRequest, ChatResponse, ContentPart, MessageRole, ToolCall, ToolChoice,
    ToolSpec, Usage, split_think,
};
