//! Integration tests of phoneagent-llm against real servers on loopback (wiremock, raw TCP),
//! the real OS keyring (gnome-keyring under a private D-Bus session) and property tests of the
//! coordinate mapper.

mod calibration;
mod client;
mod keyring;
mod mapper_props;
