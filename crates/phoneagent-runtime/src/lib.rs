//! # phoneagent-runtime
//!
//! PhoneAgent's agent runtime: the loop, AgentState, freshness, verification, recovery, memory, guards, finish acceptance, approvals (SPEC R*, F*, S8).
