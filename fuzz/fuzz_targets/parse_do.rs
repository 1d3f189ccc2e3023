//! Fuzzes `parse_do`: it must never panic; error positions must be valid; whatever it accepts
//! must render to a form that parses back to the same action.

#![no_main]

use libfuzzer_sys::fuzz_target;
use phoneagent_protocol::{ParseOptions, parse_do, render_do};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let opts = ParseOptions::default().with_app_launcher(true);
    match parse_do(text, &opts) {
        Ok(action) => {
            let rendered = render_do(&action);
            let again = parse_do(&rendered, &opts);
            assert_eq!(again.as_ref().ok(), Some(&action), "rendered: {rendered}");
        }
        Err(e) => {
            assert!(!e.message.is_empty());
            if let Some(p) = e.position {
                assert!(p.byte <= text.len() && text.is_char_boundary(p.byte));
            }
        }
    }
});
