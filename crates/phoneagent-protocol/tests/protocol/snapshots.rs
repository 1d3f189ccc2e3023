//! Snapshots of what models are shown: the tool schemas and the grammar prompt.

use phoneagent_protocol::{ParseOptions, ToolOptions, do_grammar_prompt, tool_schemas};

#[test]
fn tool_schemas_default() {
    insta::assert_json_snapshot!(tool_schemas(&ToolOptions::default()));
}

#[test]
fn tool_schemas_with_app_launcher_and_pixels() {
    let opts = ParseOptions::pixels(1080, 2400).with_app_launcher(true);
    insta::assert_json_snapshot!(tool_schemas(&ToolOptions::from(&opts)));
}

#[test]
fn do_grammar_prompt_default() {
    insta::assert_snapshot!(do_grammar_prompt(&ParseOptions::default()));
}

#[test]
fn do_grammar_prompt_with_app_launcher() {
    insta::assert_snapshot!(do_grammar_prompt(
        &ParseOptions::default().with_app_launcher(true)
    ));
}
