//! Parse time per action for typical model outputs (SPEC A2; issue "a benchmark reports parse
//! time per action"). Prints a table; run with
//! `cargo bench -p phoneagent-protocol --bench parse`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use phoneagent_protocol::{
    Action, ActionKind, ModelPoint, ParseOptions, parse_do, parse_tool_call, render_do,
};

/// Runs `f` in batches for about `budget`; returns the median ns per call over the batches.
fn measure(budget: Duration, mut f: impl FnMut()) -> f64 {
    // Warm up and size a batch to ~1/20 of the budget.
    let start = Instant::now();
    let mut n: u64 = 0;
    while start.elapsed() < budget / 20 {
        f();
        n += 1;
    }
    let batch = n.max(1);
    let mut per_call = Vec::new();
    let all = Instant::now();
    while all.elapsed() < budget || per_call.len() < 5 {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        #[allow(clippy::cast_precision_loss)]
        per_call.push(t.elapsed().as_nanos() as f64 / batch as f64);
    }
    per_call.sort_by(f64::total_cmp);
    per_call[per_call.len() / 2]
}

fn main() {
    let opts = ParseOptions::default().with_app_launcher(true);
    let recipe: String = (1..=40)
        .map(|i| format!("第{i}天：早餐 全麦面包+牛奶，午餐 糙米饭+番茄牛肉，晚餐 \"清蒸鱼\"\n"))
        .collect();
    let cases: Vec<(&str, String)> = vec![
        (
            "tap, AutoGLM think+answer",
            "<think>用户想打开设置。当前在桌面，我看到了设置图标，位于屏幕中间偏下的位置。</think>\n<answer>do(action=\"Tap\", element=[499,684])</answer>".to_string(),
        ),
        (
            "tap with screen_description+reason",
            "Thought: the search box is at the top.\nAction: do(action=\"Tap\", element=[540, 95], screen_description=\"Mail inbox with a search box at the top and 12 messages, no dialog\", reason=\"focus the search box so the query can be typed next; expect the keyboard to appear\")".to_string(),
        ),
        (
            "swipe with zh reason (A5 check)",
            "<think>需要向上滑动查看更多联系人。</think>\n<answer>do(action=\"Swipe\", start=[500,800], end=[500,300], reason=\"向上滑动查看更多联系人\")</answer>".to_string(),
        ),
        (
            "type, 2 KB multi-line with quotes",
            format!("do(action=\"Type\", text=\"{recipe}\")"),
        ),
        (
            "finish",
            "<think>任务完成。</think>\n<answer>finish(message=\"已为您打开设置页面。\")</answer>".to_string(),
        ),
        (
            "rejected: markdown fence",
            "```python\ndo(action=\"Tap\", element=[500,300])\n```".to_string(),
        ),
        (
            "rejected: out of range",
            "do(action=\"Tap\", element=[1200, 500])".to_string(),
        ),
    ];

    let budget = Duration::from_millis(400);
    println!(
        "{:<38} {:>8} {:>12} {:>14}",
        "case", "bytes", "ns/parse", "parses/s"
    );
    println!("{}", "-".repeat(75));
    for (name, text) in &cases {
        let ns = measure(budget, || {
            let _ = black_box(parse_do(black_box(text), &opts));
        });
        println!(
            "{:<38} {:>8} {:>12.0} {:>14.0}",
            name,
            text.len(),
            ns,
            1e9 / ns
        );
    }

    let args = r#"{"element": [512, 88], "target_description": "Search", "screen_description": "Shop home page", "reason": "open search"}"#;
    let ns = measure(budget, || {
        let _ = black_box(parse_tool_call("tap", black_box(args), &opts));
    });
    println!(
        "{:<38} {:>8} {:>12.0} {:>14.0}",
        "tool call: tap (JSON arguments)",
        args.len(),
        ns,
        1e9 / ns
    );

    let mut a = Action::new(ActionKind::Tap {
        element: ModelPoint { x: 500.0, y: 300.0 },
    });
    a.reason = Some("open \"Settings\" from the home screen".into());
    let rendered = render_do(&a);
    let ns = measure(budget, || {
        let _ = black_box(render_do(black_box(&a)));
    });
    println!(
        "{:<38} {:>8} {:>12.0} {:>14.0}",
        "render_do: tap with reason",
        rendered.len(),
        ns,
        1e9 / ns
    );
}
