//! Snapshots of every receipt kind in Chinese and English (SPEC S5, S7), and the receipt
//! target rules: redact, then truncate (type_text 32, target_description 24, launch_app 24).

use phoneagent_safety::receipt::receipt_target;
use phoneagent_safety::{AccessMode, Decision, GateInput, Lang, Tool, WarningReceipt, decide};

fn warn(input: &GateInput) -> WarningReceipt {
    let c = crate::gate().classify(input);
    match decide(AccessMode::Wary, input, &c).decision {
        Decision::Warn { receipt } | Decision::BlockedByTaskBoundary { receipt } => receipt,
        other => panic!("expected a receipt, got {other:?}"),
    }
}

fn both(name: &str, r: &WarningReceipt) {
    insta::assert_snapshot!(
        format!("{name}_zh"),
        format!("{}\n---\n{}", r.render(Lang::Zh), r.notice(Lang::Zh))
    );
    insta::assert_snapshot!(
        format!("{name}_en"),
        format!("{}\n---\n{}", r.render(Lang::En), r.notice(Lang::En))
    );
}

#[test]
fn tap_commit_receipt() {
    let r = warn(
        &GateInput::new(Tool::Tap)
            .target("确认支付")
            .with_reason("付款完成订单"),
    );
    // Exactly the shape of source 000 § 预警文案.
    assert_eq!(
        r.render(Lang::Zh),
        "⚠️ 已拦截（未执行）：tap → 「确认支付」\n\
         世界事实：该操作疑似『不可逆提交』（如支付/转账/下单/删除等确认动作）。\n\
         选项：\n  \
         1) 确认执行：带 confirm_irreversible=true 重新调用同一工具（其余参数不变）。\n  \
         2) 放弃：改做其它操作或重新观测。\n  \
         3) 交人工：调用 ask_user 询问，或 take_over 请求人工接管。"
    );
    both("tap_commit", &r);
}

#[test]
fn tap_commit_receipt_english_target() {
    both(
        "tap_place_order",
        &warn(&GateInput::new(Tool::Tap).target("Place your order · $42.10 total, arrives Friday")),
    );
}

#[test]
fn type_text_credential_receipt_redacts_then_truncates() {
    let input = GateInput::new(Tool::TypeText)
        .with_text("我的手机号是13800138000，邮箱 li.lei@example.com，请联系")
        .target("联系方式输入框");
    let r = warn(&input);
    let t = r.target.clone().unwrap();
    assert!(!t.contains("13800138000"), "{t}");
    assert!(t.chars().count() <= 33, "{t}");
    both("type_text_credential", &r);
}

/// A password typed into a password field never appears in the receipt (which the model, the
/// console, the store and exports see): before, the receipt repeated "hunter2".
#[test]
fn text_typed_into_a_password_field_is_masked_in_the_receipt() {
    for input in [
        GateInput::new(Tool::TypeText)
            .with_text("hunter2")
            .target("password"),
        GateInput::new(Tool::TypeText)
            .with_text("hunter2")
            .target("登录密码输入框"),
    ] {
        let r = warn(&input);
        assert_eq!(r.target.as_deref(), Some("[secret]"));
        for lang in [Lang::En, Lang::Zh] {
            assert!(!r.render(lang).contains("hunter2"), "{}", r.render(lang));
            assert!(!r.notice(lang).contains("hunter2"));
        }
    }
}

#[test]
fn long_press_otp_target_receipt() {
    both(
        "long_press_otp",
        &warn(&GateInput::new(Tool::LongPress).target("验证码 482913 的短信，长按复制验证码")),
    );
}

#[test]
fn launch_app_sensitive_receipt_truncates_only() {
    let mut input = GateInput::new(Tool::LaunchApp)
        .with_text("中国工商银行手机银行（企业版）——安全支付与转账服务中心");
    input.sensitive = true;
    let r = warn(&input);
    assert_eq!(r.target.as_deref().map(|t| t.chars().count()), Some(25));
    both("launch_app_sensitive", &r);
}

#[test]
fn reviewer_receipts() {
    let input = GateInput::new(Tool::Tap).target("删除");
    both("reviewer_irreversible", &WarningReceipt::reviewer(&input));
    both(
        "reviewer_unavailable",
        &WarningReceipt::reviewer_fail_closed(&input, "reviewer_unavailable_failclosed"),
    );
}

#[test]
fn task_boundary_receipt_has_no_confirm_option() {
    let input = GateInput::new(Tool::Tap)
        .target("发送")
        .with_task("给张三写邮件，保存草稿，不要发送");
    let r = warn(&input);
    assert!(
        !r.render(Lang::Zh)
            .contains("confirm_irreversible=true 重新调用")
    );
    both("task_boundary_send", &r);
    let en = warn(
        &GateInput::new(Tool::Tap)
            .target("Pay now")
            .with_task("Add the book to the cart, do not pay"),
    );
    both("task_boundary_pay", &en);
}

#[test]
fn tap_without_target_description_says_so() {
    let mut input = GateInput::new(Tool::Tap);
    input.sensitive = true;
    both("tap_self_declared_no_target", &warn(&input));
}

#[test]
fn receipt_target_rules() {
    let long = "一二三四五六七八九十一二三四五六七八九十一二三四五六七八九十一二三四五";
    let tap = GateInput::new(Tool::Tap).target(long);
    assert_eq!(receipt_target(&tap).unwrap().chars().count(), 24 + 1);
    let typed = GateInput::new(Tool::TypeText).with_text(long);
    assert_eq!(receipt_target(&typed).unwrap().chars().count(), 32 + 1);
    let short = GateInput::new(Tool::Tap).target("  确认支付  ");
    assert_eq!(receipt_target(&short).as_deref(), Some("确认支付"));
    // Redaction happens before truncation: a phone number cut in half would leak digits.
    let phone = GateInput::new(Tool::Tap).target("联系人卡片：客服电话 138 0013 8000 拨打");
    let t = receipt_target(&phone).unwrap();
    assert!(t.contains("[phone]") && !t.contains("138"), "{t}");
    // App names are only truncated.
    let app = GateInput::new(Tool::LaunchApp).with_text("13800138000");
    assert_eq!(receipt_target(&app).as_deref(), Some("13800138000"));
}

#[test]
fn reviewer_summary_is_redacted_bounded_and_has_no_reason() {
    use phoneagent_safety::receipt::reviewer_summary;
    let mut input = GateInput::new(Tool::TypeText)
        .target("收件人输入框")
        .with_text("li.lei@example.com")
        .with_reason("the user asked me to mail Li Lei; secret plan");
    input.ocr_text = Some("收件人".repeat(60));
    let s = reviewer_summary(&input);
    assert!(s.starts_with("收件人输入框 | [email] | 收件人"), "{s}");
    assert_eq!(s.chars().count(), 121);
    assert!(!s.contains("secret plan"));
}
