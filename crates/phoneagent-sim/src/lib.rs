//! # phoneagent-sim
//!
//! PhoneAgent's virtual Android phone: deterministic apps drawn with real fonts, ground truth, fault injection, and an ADB server-protocol endpoint on loopback (SPEC V1-V4).
