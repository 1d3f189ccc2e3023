//! Commands in: the [`Op`]s a front end submits to a runtime session (SPEC A7, issue #13).
//!
//! A front end (the CLI, the desktop app, `phoneagent mcp`, a web console) drives one phone's
//! session with these ops and follows its [`crate::AgentEvent`] stream: commands in, events out.
//! Every op is answered at once with an acknowledgement or a typed refusal; what the op causes
//! (a run starting, a pause taking effect, an answered request resuming the run) arrives as
//! events. The catalogue and the approval sequence are in `docs/protocol.md`.

use serde::{Deserialize, Serialize};

use crate::event::HumanResponse;
use crate::safety::AccessMode;

/// Limits of one task started with [`Op::StartTask`]; `None` keeps the session's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct TaskOptions {
    /// Most steps (observe → plan → act → verify turns), 1..=500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Wall-time limit of the run in milliseconds (paused time does not count, SPEC R7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub max_duration_ms: Option<u64>,
    /// Token budget of the run, all roles together (SPEC M3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub token_budget: Option<u64>,
}

/// A command to one phone's session (SPEC A7). Serialized with an `op` tag in snake_case,
/// e.g. `{"op":"answer","request_id":"…","response":{"type":"approve"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum Op {
    /// Start `task` on the session's phone in access `mode` (SPEC S1). Refused while a run is
    /// active (one run per phone, R2); the run's events follow on the session's stream.
    StartTask {
        /// The task in plain words (at most 4000 characters).
        task: String,
        /// The access mode of this run: who confirms an irreversible action.
        mode: AccessMode,
        /// Limits; absent fields keep the session's defaults.
        #[serde(default)]
        options: TaskOptions,
    },
    /// Cancel the active run (SPEC R7): the model call in flight is aborted, no further device
    /// command is sent, pending requests are withdrawn, the run ends `cancelled`.
    Cancel,
    /// Pause the active run before its next device command (SPEC R2, U2).
    Pause,
    /// Resume a paused run.
    Resume,
    /// Answer the pending human request `request_id` (SPEC S8). Validated against the pending
    /// id, its expiry and the request's `allowed_responses`; the first valid answer wins.
    Answer {
        /// The `request_id` of the `human_requested` event.
        request_id: String,
        /// The answer; its kind must be among the request's `allowed_responses`.
        response: HumanResponse,
    },
    /// Approve-for-me (SPEC AR7): a one-time override of the recent denial `request_id`; the
    /// identical call may pass once within the TTL and the reviewer still decides.
    GrantOverride {
        /// The request id of the denial (from its `approval_review` event).
        request_id: String,
    },
    /// Approve-for-me (SPEC AR8): switch the reviewer off (`true`: what it would review goes to
    /// the person) or back on.
    SetAutoReviewSuspended {
        /// `true` to suspend the reviewer, `false` to resume it.
        suspended: bool,
    },
}

impl Op {
    /// The `op` tag of this command (`start_task`, `cancel`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Self::StartTask { .. } => "start_task",
            Self::Cancel => "cancel",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Answer { .. } => "answer",
            Self::GrantOverride { .. } => "grant_override",
            Self::SetAutoReviewSuspended { .. } => "set_auto_review_suspended",
        }
    }

    /// True for ops that raise what may happen on the phone without the person: answering a
    /// request (an approval lets a gated call run) and granting an override. A front end acting
    /// for the user (an MCP client) may submit these only where the user delegated them
    /// (SPEC C4); stopping ops (cancel, pause) and suspending the reviewer never raise authority.
    pub fn raises_authority(&self) -> bool {
        match self {
            Self::Answer { .. } | Self::GrantOverride { .. } => true,
            Self::SetAutoReviewSuspended { suspended } => !suspended,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn op_tag_matches_name_and_round_trips() {
        let ops = [
            Op::StartTask {
                task: "Buy the first product".into(),
                mode: AccessMode::Hard,
                options: TaskOptions {
                    max_steps: Some(20),
                    ..TaskOptions::default()
                },
            },
            Op::Cancel,
            Op::Pause,
            Op::Resume,
            Op::Answer {
                request_id: "r1".into(),
                response: HumanResponse::Reject { note: None },
            },
            Op::GrantOverride {
                request_id: "r2".into(),
            },
            Op::SetAutoReviewSuspended { suspended: true },
        ];
        for op in ops {
            let v = serde_json::to_value(&op).unwrap();
            assert_eq!(v["op"], op.name(), "{v}");
            let back: Op = serde_json::from_value(v).unwrap();
            assert_eq!(back, op);
        }
        let wire: Op = serde_json::from_str(
            r#"{"op":"answer","request_id":"x","response":{"type":"answer","text":"42"}}"#,
        )
        .unwrap();
        assert!(wire.raises_authority());
        let start: Op =
            serde_json::from_str(r#"{"op":"start_task","task":"t","mode":"wary"}"#).unwrap();
        assert_eq!(
            start,
            Op::StartTask {
                task: "t".into(),
                mode: AccessMode::Wary,
                options: TaskOptions::default()
            }
        );
        assert!(!Op::Cancel.raises_authority());
        assert!(!Op::SetAutoReviewSuspended { suspended: true }.raises_authority());
        assert!(Op::SetAutoReviewSuspended { suspended: false }.raises_authority());
    }
}
