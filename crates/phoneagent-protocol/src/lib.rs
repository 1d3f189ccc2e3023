//! # phoneagent-protocol
//!
//! Plain, serde-serializable types shared by every PhoneAgent crate, and nothing that does I/O.
//!
//! * [`action`]: the one internal [`Action`] type both model front ends parse into (SPEC A1, A3, A6).
//! * [`geometry`]: screen geometry, the three coordinate systems (model-raw, runtime 0..999,
//!   device pixels) and the coordinate-space names of the contract (SPEC M4, M5).
//! * [`safety`]: access modes and risk tiers (SPEC S1, S3).
//! * [`error`]: stable error codes that reach the UI (`{code, message}`), never matched as strings.
//!
//! Dependencies point one way: this crate depends on no other PhoneAgent crate.

pub mod action;
pub mod error;
pub mod geometry;
pub mod safety;

pub use action::{Action, ActionKind, TaskItem};
pub use error::ErrorCode;
pub use geometry::{
    CoordinateSpace, DevicePoint, ModelPoint, Rotation, RuntimePoint, ScreenGeometry,
};
pub use safety::{AccessMode, RiskTier};
