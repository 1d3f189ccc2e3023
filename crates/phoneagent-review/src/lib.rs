//! # phoneagent-review
//!
//! PhoneAgent's model-backed judges: reversibility reviewer (S7), finish verifier (F2), approve-for-me reviewer (AR*).
