//! The decision matrix of SPEC S1, S4, S6 and AR1 over every access mode.

use phoneagent_safety::{
    AccessMode, AllowBasis, ApprovalRoute, Decision, GateInput, ReasonCode, RiskTier, Tool, decide,
};

use crate::gate;

fn hard_tap() -> GateInput {
    GateInput::new(Tool::Tap).target("确认支付")
}

fn soft_tap() -> GateInput {
    GateInput::new(Tool::Tap).target("支付方式")
}

fn none_tap() -> GateInput {
    GateInput::new(Tool::Tap).target("搜索框")
}

fn run(mode: AccessMode, input: &GateInput) -> phoneagent_safety::GateDecision {
    let c = gate().classify(input);
    decide(mode, input, &c)
}

#[test]
fn off_allows_everything_but_task_boundaries() {
    for input in [hard_tap(), soft_tap(), none_tap()] {
        let d = run(AccessMode::Off, &input);
        assert_eq!(
            d.decision,
            Decision::Allow {
                basis: AllowBasis::ModeOff
            }
        );
    }
    let blocked = GateInput::new(Tool::Tap)
        .target("Send")
        .with_task("draft it, don't send");
    assert!(matches!(
        run(AccessMode::Off, &blocked).decision,
        Decision::BlockedByTaskBoundary { .. }
    ));
}

#[test]
fn wary_warns_on_hard_only_and_confirm_runs_first_even_when_sensitive() {
    let d = run(AccessMode::Wary, &hard_tap());
    let Decision::Warn { receipt } = &d.decision else {
        panic!("expected warn, got {:?}", d.decision)
    };
    assert_eq!(receipt.status, "error");
    assert_eq!(receipt.reason_code, "commit_irreversible");
    assert!(!d.executes());
    assert_eq!(
        run(AccessMode::Wary, &soft_tap()).decision,
        Decision::Allow {
            basis: AllowBasis::BelowThreshold
        }
    );
    assert_eq!(
        run(AccessMode::Wary, &none_tap()).decision,
        Decision::Allow {
            basis: AllowBasis::BelowThreshold
        }
    );
    // S6 + S12: confirm_irreversible runs a hard call the task asked for, even with
    // sensitive=true.
    let mut confirmed = hard_tap().with_task("买一个充电器并付款");
    confirmed.sensitive = true;
    confirmed.confirm_irreversible = true;
    let d = run(AccessMode::Wary, &confirmed);
    assert_eq!(
        d.decision,
        Decision::Allow {
            basis: AllowBasis::ConfirmedIrreversible
        }
    );
    assert_eq!(
        d.classified_tier,
        RiskTier::Hard,
        "the audit still records the tier"
    );
    assert!(d.executes());
}

#[test]
fn reviewer_sends_soft_to_the_reviewer_and_warns_on_hard() {
    let d = run(AccessMode::Reviewer, &soft_tap());
    assert_eq!(d.decision, Decision::Review);
    assert_eq!(d.tier, RiskTier::Reviewer);
    assert_eq!(d.classified_tier, RiskTier::Soft);
    assert!(matches!(
        run(AccessMode::Reviewer, &hard_tap()).decision,
        Decision::Warn { .. }
    ));
    assert_eq!(
        run(AccessMode::Reviewer, &none_tap()).decision,
        Decision::Allow {
            basis: AllowBasis::BelowThreshold
        }
    );
    // confirm_irreversible does not skip the reviewer on a soft call.
    let mut confirmed = soft_tap();
    confirmed.confirm_irreversible = true;
    assert_eq!(
        run(AccessMode::Reviewer, &confirmed).decision,
        Decision::Review
    );
}

#[test]
fn hard_mode_ignores_confirm_and_asks_the_human() {
    let mut input = hard_tap();
    input.confirm_irreversible = true;
    assert_eq!(
        run(AccessMode::Hard, &input).decision,
        Decision::NeedsApproval {
            route: ApprovalRoute::Human
        }
    );
    assert_eq!(
        run(AccessMode::Hard, &soft_tap()).decision,
        Decision::Allow {
            basis: AllowBasis::BelowThreshold
        }
    );
}

#[test]
fn approve_for_me_routes_to_the_auto_reviewer_only_what_the_task_asked_for() {
    let mut input = hard_tap().with_task("Buy the cheapest phone charger");
    input.confirm_irreversible = true;
    assert_eq!(
        run(AccessMode::ApproveForMe, &input).decision,
        Decision::NeedsApproval {
            route: ApprovalRoute::AutoReviewer
        }
    );
    // A payment the task never asked for goes to the person, not the auto-reviewer.
    let mut input = hard_tap().with_task("Check my notifications");
    input.confirm_irreversible = true;
    assert_eq!(
        run(AccessMode::ApproveForMe, &input).decision,
        Decision::NeedsApproval {
            route: ApprovalRoute::Human
        }
    );
}

#[test]
fn non_executing_tools_are_never_gated() {
    for tool in [
        Tool::Swipe,
        Tool::Scroll,
        Tool::Back,
        Tool::Home,
        Tool::Wait,
        Tool::Note,
        Tool::Finish,
        Tool::AskUser,
        Tool::TakeOver,
    ] {
        let mut input = GateInput::new(tool)
            .target("确认支付")
            .with_task("不要付款");
        input.sensitive = true;
        let c = gate().classify(&input);
        assert_eq!(c.tier, RiskTier::None, "{tool}");
        assert!(c.reasons.is_empty());
        for mode in [AccessMode::Wary, AccessMode::Hard, AccessMode::Reviewer] {
            assert_eq!(
                decide(mode, &input, &c).decision,
                Decision::Allow {
                    basis: AllowBasis::NotGated
                }
            );
        }
    }
}

#[test]
fn task_boundary_blocks_in_every_mode_even_when_confirmed() {
    let mut input = GateInput::new(Tool::Tap)
        .target("发送")
        .with_task("给李雷写一封邮件，写好草稿即可，不要发送");
    input.confirm_irreversible = true;
    let c = gate().classify(&input);
    let r = c.reason(ReasonCode::NegatedTaskBoundary).unwrap();
    assert_eq!(r.kind, Some(phoneagent_safety::EffectKind::Send));
    for mode in [
        AccessMode::Off,
        AccessMode::Wary,
        AccessMode::Hard,
        AccessMode::Reviewer,
        AccessMode::ApproveForMe,
    ] {
        let d = decide(mode, &input, &c);
        assert!(
            matches!(d.decision, Decision::BlockedByTaskBoundary { .. }),
            "{mode}: {:?}",
            d.decision
        );
        assert!(!d.executes());
    }
}

#[test]
fn boundaries_parse_in_both_languages() {
    use phoneagent_safety::EffectKind::*;
    let g = gate();
    let cases: [(&str, &[phoneagent_safety::EffectKind]); 10] = [
        ("写一封邮件给张三，不要发送", &[Send]),
        ("只加购物车，不要下单", &[Order]),
        ("看看价格就行，别付款", &[Payment]),
        ("Draft a reply but don't send it", &[Send]),
        ("Add it to the cart, do not place the order", &[Order]),
        ("Find the cheapest flight without paying", &[Payment]),
        (
            "Clean up the inbox but never delete anything, and don't pay",
            &[Delete, Payment],
        ),
        ("打开设置，查看特别推荐的订单", &[]),
        ("写好邮件，别忘了发送", &[]),
        ("Reply to Bob and don't forget to send it", &[]),
    ];
    for (task, kinds) in cases {
        let got: Vec<_> = g.boundaries(task).kinds().collect();
        assert_eq!(got, kinds, "{task}");
    }
}

#[test]
fn gate_evaluate_matches_classify_then_decide() {
    let g = gate();
    let input = hard_tap();
    let (c, d) = g.evaluate(AccessMode::Hard, &input);
    assert_eq!(c, g.classify(&input));
    assert_eq!(d, decide(AccessMode::Hard, &input, &c));
}

#[test]
fn from_action_carries_the_model_fields() {
    use phoneagent_protocol::{Action, ActionKind};
    let mut a = Action::new(ActionKind::Type {
        text: "13800138000".into(),
    });
    a.reason = Some("enter phone".into());
    a.confirm_irreversible = true;
    let input = GateInput::from_action(&a, Some("登录"));
    assert_eq!(input.tool, Tool::TypeText);
    assert_eq!(input.text.as_deref(), Some("13800138000"));
    assert!(input.confirm_irreversible);
    assert_eq!(gate().classify(&input).tier, RiskTier::Hard);
}

#[test]
fn classify_free_function_uses_the_builtin_lexicons() {
    let c = phoneagent_safety::classify(&hard_tap());
    assert_eq!(c.tier, RiskTier::Hard);
    assert_eq!(c.reasons[0].code, ReasonCode::CommitIrreversible);
    assert_eq!(c.reasons[0].evidence, "确认支付");
}

#[test]
fn evidence_is_redacted() {
    let input = GateInput::new(Tool::TypeText).with_text("我的手机 13800138000");
    let c = gate().classify(&input);
    assert_eq!(c.tier, RiskTier::Hard);
    let json = serde_json::to_string(&c).unwrap();
    assert!(!json.contains("13800138000"), "{json}");
    assert!(json.contains("[phone]"), "{json}");
}
