//! The demo scenarios (SPEC C1): a task, its access mode and the scripted model's answers for
//! the virtual phone. `phoneagent demo` and the desktop app's "Try a demo" run them the same way:
//! the virtual phone and [`crate::ScriptedModel`] reached over their real protocols.

use phoneagent_protocol::AccessMode;

/// A demo scenario.
#[derive(Debug, Clone, Copy)]
pub struct DemoScenario {
    /// Short name (`buy`, `draft-mail`); with [`DemoScenario::mode`] it is unique.
    pub name: &'static str,
    /// The task given to the agent.
    pub task: &'static str,
    /// The access mode the script is written for.
    pub mode: AccessMode,
    /// The scripted model's answers (JSON lines, see [`crate::Script::parse_jsonl`]).
    pub script: &'static str,
    /// One line on what it shows.
    pub about: &'static str,
    /// The virtual phone's screen it starts on.
    pub start_screen: &'static str,
}

/// Every scenario, in the order `phoneagent demo --list` shows them.
pub const SCENARIOS: &[DemoScenario] = &[
    DemoScenario {
        name: "buy",
        task: "Buy the first product in the shop",
        mode: AccessMode::Wary,
        script: include_str!("../demo/buy.jsonl"),
        about: "shop → product → cart → checkout; 提交订单 and 确认支付 are stopped by the safety gate until the model confirms",
        start_screen: "home",
    },
    DemoScenario {
        name: "buy",
        task: "Buy the first product in the shop",
        mode: AccessMode::ApproveForMe,
        script: include_str!("../demo/buy-approve-for-me.jsonl"),
        about: "the same purchase in approve-for-me mode: the auto-reviewer model allows 提交订单 and 确认支付 and the approval ledger shows why",
        start_screen: "home",
    },
    DemoScenario {
        name: "draft-mail",
        task: "Draft an email to bob@example.com about lunch on Friday, but don't send it",
        mode: AccessMode::Wary,
        script: include_str!("../demo/draft-mail.jsonl"),
        about: "mail compose with CJK-safe typing; the compose guard blocks Send and leaves a visible draft",
        start_screen: "home",
    },
];

/// The scenario named `name`, in `mode` when given (else the first with that name).
pub fn find(name: &str, mode: Option<AccessMode>) -> Option<&'static DemoScenario> {
    SCENARIOS
        .iter()
        .find(|s| s.name == name && mode.is_none_or(|m| m == s.mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_parses_and_names_are_unique_per_mode() {
        for s in SCENARIOS {
            crate::Script::parse_jsonl(s.script)
                .unwrap_or_else(|e| panic!("{} {}: {e}", s.name, s.mode));
            assert_eq!(
                SCENARIOS
                    .iter()
                    .filter(|o| o.name == s.name && o.mode == s.mode)
                    .count(),
                1
            );
        }
        assert_eq!(find("buy", None).unwrap().mode, AccessMode::Wary);
        assert_eq!(
            find("buy", Some(AccessMode::ApproveForMe)).unwrap().mode,
            AccessMode::ApproveForMe
        );
        assert!(find("buy", Some(AccessMode::Hard)).is_none());
    }
}
