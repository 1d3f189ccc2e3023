//! # phoneagent-safety
//!
//! PhoneAgent's safety gate: pure, synchronous classification into risk tiers, warning receipts, redaction, lexicons as data (SPEC S1-S6, S9).
