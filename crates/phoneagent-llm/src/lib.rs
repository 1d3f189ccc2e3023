//! # phoneagent-llm
//!
//! PhoneAgent's model layer: OpenAI-compatible vision client, roles and models.json, token ledger, screenshot sizing, coordinate contract and mapper (SPEC M1-M6).
