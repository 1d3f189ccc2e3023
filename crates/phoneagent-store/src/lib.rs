//! # phoneagent-store
//!
//! PhoneAgent's run store: SQLite runs, events, screenshots by hash, approval ledger, settings, calibration cache; trajectory export (SPEC T1-T2).
