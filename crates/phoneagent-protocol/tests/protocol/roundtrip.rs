//! `render_do` → `parse_do` gives back the original action, including hostile text: quotes,
//! backslashes, `")`, `", reason="`, newlines, control characters, CJK, emoji, `do(` and tags.

use phoneagent_protocol::{
    Action, ActionKind, DEFAULT_INTERACT_QUESTION, ModelPoint, ParseOptions, TaskItem, check_swipe,
    parse_do, render_do,
};
use proptest::prelude::*;

fn hostile_text(max: usize) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("\\\"".to_string()),
        Just("\")".to_string()),
        Just("\", reason=\"".to_string()),
        Just("', x='".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("\t".to_string()),
        Just("\u{0}\u{7}\u{1b}\u{7f}\u{85}".to_string()),
        Just("do(action=\"Back\")".to_string()),
        Just("finish(".to_string()),
        Just("</answer>".to_string()),
        Just("<think>".to_string()),
        Just("<|end_of_box|>".to_string()),
        Just("```".to_string()),
        Just("去哪里\"吃饭\"呀？".to_string()),
        Just("😀🎉".to_string()),
        Just("\\u4e2d\\n".to_string()),
        "\\PC{0,12}",
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..8)
        .prop_map(move |v| v.concat().chars().take(max).collect::<String>())
        .prop_filter("\"xxx\" is the rejected placeholder", |s| s != "xxx")
}

fn coord() -> impl Strategy<Value = f64> {
    prop_oneof![
        (0u32..=999).prop_map(f64::from),
        (0.0f64..=999.0),
        Just(0.0),
        Just(999.0),
    ]
}

fn point() -> impl Strategy<Value = ModelPoint> {
    (coord(), coord()).prop_map(|(x, y)| ModelPoint { x, y })
}

fn kind() -> impl Strategy<Value = ActionKind> {
    let ms = prop::option::of(1u32..=10_000);
    prop_oneof![
        point().prop_map(|element| ActionKind::Tap { element }),
        point().prop_map(|element| ActionKind::DoubleTap { element }),
        (point(), ms.clone()).prop_map(|(element, duration_ms)| ActionKind::LongPress {
            element,
            duration_ms
        }),
        (point(), point(), ms).prop_map(|(start, end, duration_ms)| ActionKind::Swipe {
            start,
            end,
            duration_ms
        }),
        hostile_text(300).prop_map(|text| ActionKind::Type { text }),
        Just(ActionKind::Back),
        Just(ActionKind::Home),
        prop_oneof![
            (1u32..=30_000).prop_map(|ms| f64::from(ms) / 1000.0),
            (0.001f64..=30.0)
        ]
        .prop_map(|seconds| ActionKind::Wait { seconds }),
        hostile_text(200).prop_map(|message| ActionKind::TakeOver { message }),
        hostile_text(200).prop_map(|question| ActionKind::AskUser { question }),
        (
            hostile_text(200),
            prop::option::of(prop::collection::vec(
                (hostile_text(60), any::<bool>()).prop_map(|(text, done)| TaskItem { text, done }),
                0..5,
            )),
        )
            .prop_map(|(message, task_board)| ActionKind::Note {
                message,
                task_board
            }),
        (hostile_text(200), any::<bool>())
            .prop_map(|(message, confirm)| ActionKind::Finish { message, confirm }),
        hostile_text(40).prop_map(|name| ActionKind::LaunchApp { name }),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    (
        kind(),
        prop::option::of(hostile_text(400)),
        prop::option::of(hostile_text(400)),
        prop::option::of(hostile_text(100)),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(kind, sd, reason, target, confirm, sensitive)| {
            let executing = matches!(
                kind,
                ActionKind::Tap { .. }
                    | ActionKind::DoubleTap { .. }
                    | ActionKind::LongPress { .. }
                    | ActionKind::Type { .. }
                    | ActionKind::LaunchApp { .. }
            );
            let mut a = Action::new(kind);
            a.screen_description = sd;
            a.reason = reason;
            if executing {
                a.target_description = target;
                a.confirm_irreversible = confirm;
                a.sensitive = sensitive;
            }
            a
        })
}

fn opts() -> ParseOptions {
    ParseOptions::default().with_app_launcher(true)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn render_then_parse_is_identity(a in action()) {
        if let ActionKind::Swipe { start, end, .. } = &a.kind {
            prop_assume!(check_swipe(*start, *end, a.reason.as_deref(), None).is_ok());
        }
        let rendered = render_do(&a);
        let parsed = parse_do(&rendered, &opts());
        prop_assert_eq!(parsed.as_ref().ok(), Some(&a), "rendered: {} -> {:?}", rendered, parsed);
    }

    #[test]
    fn round_trip_inside_a_model_envelope(a in action(), think in "[^<]{0,80}") {
        if let ActionKind::Swipe { start, end, .. } = &a.kind {
            prop_assume!(check_swipe(*start, *end, a.reason.as_deref(), None).is_ok());
        }
        let wrapped = format!("<think>{think}</think>\n<answer>{}</answer>\n", render_do(&a));
        let parsed = parse_do(&wrapped, &opts());
        prop_assert_eq!(parsed.as_ref().ok(), Some(&a), "wrapped: {} -> {:?}", wrapped, parsed);
    }
}

#[test]
fn interact_default_question_round_trips() {
    let a = parse_do("do(action=\"Interact\")", &opts()).expect("bare Interact is accepted");
    assert_eq!(
        a.kind,
        ActionKind::AskUser {
            question: DEFAULT_INTERACT_QUESTION.to_string()
        }
    );
    assert_eq!(parse_do(&render_do(&a), &opts()).ok(), Some(a));
}
