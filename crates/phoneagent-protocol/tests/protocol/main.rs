//! Integration tests of the action protocol: the corpus of real-shaped model outputs, the
//! render → parse round trip, robustness on arbitrary input, and snapshots of the tool schemas
//! and the prompt text.

// Test code: a failed expectation is a test failure (clippy.toml allows this in tests).
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod corpus;
mod families;
mod robustness;
mod roundtrip;
mod snapshots;
