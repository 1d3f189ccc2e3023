//! Fuzzes `parse_tool_call`: arbitrary tool names and argument text must never panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use phoneagent_protocol::{ParseOptions, TOOL_NAMES, parse_tool_call};

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Ok(args) = std::str::from_utf8(rest) else {
        return;
    };
    let name = TOOL_NAMES[usize::from(first) % TOOL_NAMES.len()];
    let opts = ParseOptions::default().with_app_launcher(first & 1 == 0);
    let _ = parse_tool_call(name, args, &opts);
});
