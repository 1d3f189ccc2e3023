//! Stand-in for the fuzz target on stable Rust: the parsers never panic, positions are valid,
//! and whatever `parse_do` accepts renders to a form it parses back to the same action.

use phoneagent_protocol::{ParseOptions, parse_do, parse_tool_call, render_do};
use proptest::prelude::*;

/// Pieces of the grammar and of its envelope, so random inputs reach deep into the parser.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("do(".to_string()),
        Just("finish(".to_string()),
        Just("action=".to_string()),
        Just("\"Tap\"".to_string()),
        Just("\"Type\"".to_string()),
        Just("\"Swipe\"".to_string()),
        Just("\"Wait\"".to_string()),
        Just("\"Note\"".to_string()),
        Just("element=".to_string()),
        Just("text=".to_string()),
        Just("start=".to_string()),
        Just("end=".to_string()),
        Just("reason=".to_string()),
        Just("duration=".to_string()),
        Just("task_board=".to_string()),
        Just("message=".to_string()),
        Just("confirm=True".to_string()),
        Just("[500, 300]".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just(",".to_string()),
        Just(", ".to_string()),
        Just(")".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("\\".to_string()),
        Just("\\u".to_string()),
        Just("\\ud83d".to_string()),
        Just("\n".to_string()),
        Just("<think>".to_string()),
        Just("</think>".to_string()),
        Just("<answer>".to_string()),
        Just("</answer>".to_string()),
        Just("<|begin_of_box|>".to_string()),
        Just("```".to_string()),
        Just("-".to_string()),
        Just("1e3".to_string()),
        Just("x".to_string()),
        Just("向上滑".to_string()),
        Just("swipe left".to_string()),
        "[0-9]{1,5}",
        "\\PC{0,6}",
        any::<char>().prop_map(String::from),
    ]
}

fn grammarish() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..40).prop_map(|v| v.concat())
}

fn check_one(s: &str, opts: &ParseOptions) -> Result<(), TestCaseError> {
    match parse_do(s, opts) {
        Ok(action) => {
            let rendered = render_do(&action);
            let again = parse_do(&rendered, opts);
            prop_assert_eq!(again.as_ref().ok(), Some(&action), "rendered: {}", rendered);
        }
        Err(e) => {
            prop_assert!(!e.message.is_empty());
            if let Some(p) = e.position {
                prop_assert!(p.byte <= s.len());
                prop_assert!(s.is_char_boundary(p.byte));
                prop_assert!(p.line >= 1 && p.column >= 1);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parse_do_never_panics_on_arbitrary_text(s in "\\PC{0,200}") {
        check_one(&s, &ParseOptions::default())?;
    }

    #[test]
    fn parse_do_never_panics_on_grammar_fragments(s in grammarish()) {
        check_one(&s, &ParseOptions::default().with_app_launcher(true))?;
    }

    #[test]
    fn parse_tool_call_never_panics(
        name in prop_oneof![
            Just("tap".to_string()), Just("swipe".to_string()), Just("scroll".to_string()),
            Just("note".to_string()), Just("wait".to_string()), "[a-z_]{0,10}",
        ],
        args in prop_oneof![
            "\\PC{0,80}",
            prop::collection::vec(prop_oneof![
                Just("{"), Just("}"), Just("\"element\""), Just(":"), Just("[1, 2]"), Just(","),
                Just("\"direction\""), Just("\"down\""), Just("null"), Just("-1"), Just("\"task_board\""),
                Just("[{\"text\": \"a\", \"done\": true}]"), Just("\"seconds\""), Just("1e400"),
            ], 0..20).prop_map(|v| v.concat()),
        ],
    ) {
        let _ = parse_tool_call(&name, &args, &ParseOptions::default());
    }
}
