//! # phoneagent-testkit
//!
//! PhoneAgent's test kit: the scripted OpenAI-compatible model server (SPEC V5) and shared fixtures.
