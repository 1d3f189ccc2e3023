//! Integration tests of phoneagent-llm against real servers on loopback (wiremock, raw TCP),
//! the real OS keyring (gnome-keyring under a private D-Bus session) and property tests of the
//! coordinate mapper.

// Test helpers outside #[test] fns (responders, fixtures) may panic on bad fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod calibration;
mod client;
mod connection;
mod keyring;
mod mapper_props;
