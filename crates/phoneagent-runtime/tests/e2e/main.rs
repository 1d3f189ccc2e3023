//! End-to-end tests of the runtime: the virtual phone over the ADB protocol and the scripted
//! model over OpenAI-compatible HTTP, both on loopback, with the real SQLite store. One test
//! binary; the shared setup is in `harness`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approve_for_me;
mod attacks;
#[allow(dead_code)] // the table parts are used by benches/attacks.rs
mod attacks_cases;
mod calibration;
mod families;
mod harness;
mod loose_ends;
mod review;
mod run;
mod secrets;
mod session;
mod steps;
mod stream;
