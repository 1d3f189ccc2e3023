//! One task per model family on the virtual phone (SPEC M7): the scripted model answers in the
//! family's grammar and coordinate convention (`{{x@CONV:LABEL}}` placeholders), the taps land
//! on the intended elements (ground truth: the order placed and paid), the gate's warning
//! receipts are answered in the family's grammar and the finish is two-stage.

use phoneagent_protocol::event::GateOutcome;
use phoneagent_protocol::{AgentEvent, CalibrationMethod, RiskTier, RunStatus, VerifierVerdict};

use crate::harness::{Harness, Opts, gate_decisions};

/// The steps of the "buy the first product" demo, per family: (label or step, answer).
struct Grammar {
    tap: fn(&str, &str, bool) -> String,
    back: &'static str,
    finish: fn(&str, bool) -> String,
}

fn json_line(content: &str) -> String {
    serde_json::json!({ "content": content }).to_string()
}

fn script(g: &Grammar) -> String {
    let tap = |label: &str, thought: &str| json_line(&(g.tap)(label, thought, false));
    let confirm = |label: &str, thought: &str| json_line(&(g.tap)(label, thought, true));
    let msg = "Bought 无线蓝牙耳机 for 199: the order is placed and paid.";
    [
        r#"{"on_exhausted": "error"}"#.to_string(),
        tap("home.app.shop", "The home screen shows the shop app 商城: open it."),
        tap("shop.product.0", "Open the first product, 无线蓝牙耳机."),
        tap("关闭", "A coupon dialog covers the page: close it."),
        tap("加入购物车", "Add the product to the cart."),
        json_line(g.back),
        tap("shop.cart", "Open the cart."),
        tap("去结算", "Go to checkout."),
        tap("提交订单", "Submit the order the user wants."),
        confirm("提交订单", "The gate warned; the user asked to buy, so I confirm the order."),
        tap("确认支付", "Pay for the order."),
        confirm("确认支付", "Buying includes paying: confirm the payment."),
        json_line(&(g.finish)(msg, false)),
        json_line(&(g.finish)(msg, true)),
        r#"{"queue": "verifier", "content": "{\"verdict\": \"pass\", \"reason\": \"The last screenshot shows the payment success page.\"}"}"#
            .to_string(),
    ]
    .join("\n")
}

const AUTOGLM: Grammar = Grammar {
    tap: |l, t, c| {
        format!(
            "<think>{t}</think><answer>do(action=\"Tap\", element={{{{center@rel999:{l}}}}}{})</answer>",
            if c { ", confirm_irreversible=True" } else { "" }
        )
    },
    back: "<think>The product is in the cart: back to the list.</think><answer>do(action=\"Back\")</answer>",
    finish: |m, c| {
        format!(
            "<think>Done.</think><answer>finish(message=\"{m}\"{})</answer>",
            if c { ", confirm=True" } else { "" }
        )
    },
};

const UI_TARS: Grammar = Grammar {
    tap: |l, t, c| {
        format!(
            "Thought: {t}\nAction: click(start_box='<|box_start|>({{{{x@sr_tars:{l}}}}},{{{{y@sr_tars:{l}}}}})<|box_end|>'{})",
            if c { ", confirm_irreversible=True" } else { "" }
        )
    },
    back: "Thought: The product is in the cart: back to the list.\nAction: press_back()",
    finish: |m, c| {
        format!(
            "Thought: Done.\nAction: finished(content='{m}'{})",
            if c { ", confirm=True" } else { "" }
        )
    },
};

const QWEN25: Grammar = Grammar {
    tap: |l, t, c| {
        format!(
            "{t}\n<tool_call>\n{{\"name\": \"mobile_use\", \"arguments\": {{\"action\": \"click\", \"coordinate\": {{{{center@sr:{l}}}}}{}}}}}\n</tool_call>",
            if c {
                ", \"confirm_irreversible\": true"
            } else {
                ""
            }
        )
    },
    back: "<tool_call>\n{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"system_button\", \"button\": \"Back\"}}\n</tool_call>",
    finish: |m, c| {
        format!(
            "{m}\n<tool_call>\n{{\"name\": \"mobile_use\", \"arguments\": {{\"action\": \"terminate\", \"status\": \"success\"{}}}}}\n</tool_call>",
            if c { ", \"confirm\": true" } else { "" }
        )
    },
};

const QWEN3_MAI: Grammar = Grammar {
    tap: |l, t, c| {
        format!(
            "<thinking>\n{t}\n</thinking>\n<tool_call>\n{{\"name\": \"mobile_use\", \"arguments\": {{\"action\": \"click\", \"coordinate\": {{{{center@rel999:{l}}}}}{}}}}}\n</tool_call>",
            if c {
                ", \"confirm_irreversible\": true"
            } else {
                ""
            }
        )
    },
    back: "<thinking>back</thinking>\n<tool_call>\n{\"name\": \"mobile_use\", \"arguments\": {\"action\": \"system_button\", \"button\": \"back\"}}\n</tool_call>",
    finish: QWEN25.finish,
};

/// Runs the buy task with `model` answering in `g`; `confirm_hint` must appear in what the
/// model is told after a warning (the receipt in its own grammar).
async fn buy(
    model: &'static str,
    g: &Grammar,
    family: &str,
    confirm_hint: &str,
    prompt_mark: &str,
) {
    let mut h = Harness::new(
        &script(g),
        Opts {
            actor_model: Some(model),
            ..Opts::default()
        },
    )
    .await;
    let out = h.run("Buy the first product in the shop").await;
    let events = h.drain();
    assert_eq!(out.status, RunStatus::Succeeded, "{model}: {out:?}");
    // Ground truth: the taps landed on the intended buttons.
    let t = h.truth();
    assert_eq!(t.orders_placed, 1, "{model}");
    assert_eq!(t.payments_confirmed, 1, "{model}");
    // The family fixed the coordinates without probing.
    assert!(
        events.iter().any(
            |e| matches!(e, AgentEvent::CoordinateCalibration { method, detail, .. }
            if *method == CalibrationMethod::Family && detail.contains(family))
        ),
        "{model}: no family contract"
    );
    // Both irreversible taps were warned first, then confirmed in the family's grammar.
    let gates = gate_decisions(&events);
    let warned: Vec<_> = gates
        .iter()
        .filter(|g| g.2 == GateOutcome::Warned)
        .collect();
    assert_eq!(warned.len(), 2, "{model}: {gates:?}");
    assert!(warned.iter().all(|g| g.1 == RiskTier::Hard));
    // The receipts the model got tell it how to confirm in its grammar.
    let actor_texts: Vec<String> = h
        .model
        .chat_requests()
        .iter()
        .map(|r| r.body.to_string())
        .filter(|b| b.contains("[phoneagent-role: actor]"))
        .collect();
    let receipt_hints: Vec<String> = actor_texts
        .iter()
        .filter_map(|b| {
            b.find("In your answer format, confirming means")
                .map(|i| b[i..].chars().take(400).collect::<String>())
        })
        .collect();
    assert!(
        receipt_hints.iter().any(|r| r.contains(confirm_hint)),
        "{model}: no receipt in the family's grammar ({confirm_hint}): {}",
        receipt_hints.join(" | ")
    );
    // The system prompt is the family's.
    assert!(
        actor_texts[0].contains(prompt_mark),
        "{model}: not the family's prompt"
    );
    // Two-stage finish.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::FinishReview { .. }))
    );
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::FinishVerifier {
            verdict: VerifierVerdict::Pass,
            ..
        }
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autoglm_family_buys_with_confirmation() {
    buy(
        "autoglm-phone-9b",
        &AUTOGLM,
        "autoglm",
        "confirm_irreversible=True)",
        "<answer>one action</answer>",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_tars_family_buys_with_confirmation() {
    buy(
        "UI-TARS-1.5-7B",
        &UI_TARS,
        "ui_tars",
        "Action: click(point='<point>",
        "## Action Space",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen25_vl_family_buys_with_confirmation() {
    buy(
        "Qwen2.5-VL-7B-Instruct",
        &QWEN25,
        "qwen_vl",
        r#"\"confirm_irreversible\":true"#,
        "<tools>",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mai_ui_family_buys_with_confirmation() {
    buy(
        "MAI-UI-8B",
        &QWEN3_MAI,
        "qwen_vl",
        r#"\"confirm_irreversible\":true"#,
        "0 to 999",
    )
    .await;
}
