//! The grammar section of the planner's system prompt for `do`-protocol models (SPEC A1–A6).
//!
//! The runtime's system prompt includes [`do_grammar_prompt`]; the text states exactly what
//! [`crate::parse_do`] accepts, with the bounds of the run filled in.

use crate::action::MAX_META_CHARS;
use crate::options::{ParseOptions, fmt_num};

/// The action grammar for the system prompt: answer format, each action with its keywords,
/// the coordinate space with the run's bounds, swipe semantics, the two-stage finish, and what
/// is rejected. `Launch` is listed only when the app launcher is on.
pub fn do_grammar_prompt(opts: &ParseOptions) -> String {
    let x = fmt_num(opts.coord_max_x);
    let y = fmt_num(opts.coord_max_y);
    let wait = fmt_num(opts.max_wait_secs);
    let meta = MAX_META_CHARS;
    let gesture = opts.max_gesture_ms;
    let mut s = format!(
        r#"## Answer format
Think first if you like (inside <think>…</think> or as plain text), then end your answer with
exactly ONE call and nothing after it:
  do(action="…", keyword=value, …)      or      finish(message="…")
Arguments are keyword=value only. Values are literals: strings in double quotes, numbers
(digits, optional decimal point, never negative), True/False, or lists [a, b]. No expressions,
no variables, no Markdown code fences, no JSON, no second call. A string may contain newlines;
write a double quote inside a string as \" and a backslash as \\.

## Coordinates
A point is [x, y] on the current screenshot: x from 0 (left edge) to {x} (right edge),
y from 0 (top edge) to {y} (bottom edge). Write real numbers, never the placeholders
[x, y]. Values outside this range are rejected, never clamped.

## Every action
Add screen_description="…" (what the current screenshot shows that matters for the task:
page, relevant controls and values, loading or dialog state) and reason="…" (why this action,
how it follows from the task and the last result, the expected effect). Each at most {meta}
characters. The old keyword description= is not accepted.

## Actions
- do(action="Tap", element=[x, y])
    Tap once: buttons, list items, app icons, input fields.
- do(action="Double Tap", element=[x, y])
    Tap twice quickly (zoom, select a word, like).
- do(action="Long Press", element=[x, y])        optional duration_ms=1..{gesture}
    Press and hold (context menus, text selection).
- do(action="Swipe", start=[x1, y1], end=[x2, y2])        optional duration_ms=1..{gesture}
    Move one finger from start to end. The direction is the FINGER's motion on the screenshot:
    swipe left = x decreases, swipe right = x increases, swipe up = y decreases,
    swipe down = y increases, and that axis must change the most. To see content further
    down a list, swipe up. The direction you name in reason must match start and end, and a
    direction the user asked for in the task must be kept even if another seems better.
- do(action="Type", text="…")
    Type into the focused input field (tap it first); existing text is replaced. Any text,
    newlines included (at most {text_max} characters).
- do(action="Back")
    The Android Back key.
- do(action="Home")
    The Android Home key.
- do(action="Wait", duration="2 seconds")
    Wait for loading or an animation; more than 0 and at most {wait} seconds.
- do(action="Take_over", message="…")
    Ask the user to operate the phone (login, captcha, verification), then continue.
- do(action="Interact", message="…")
    Ask the user a question (e.g. several options match); the answer comes back verbatim.
- do(action="Note", message="…")        optional task_board=["[x] done sub-goal", "[ ] open sub-goal"]
    Record what you read or decided, and keep your checklist of sub-goals. Touches nothing.
"#,
        text_max = opts.max_text_chars,
    );
    if opts.app_launcher {
        s.push_str(
            r#"- do(action="Launch", app="…")
    Open an app by the name shown under its icon.
"#,
        );
    }
    s.push_str(
        r#"- finish(message="…")
    Claim the task is complete: you get a review package of what the screen shows. If it
    confirms the result, answer finish(message="…", confirm=True) to finalize.

## Safety keywords
Tap, Double Tap, Long Press, Type"#,
    );
    if opts.app_launcher {
        s.push_str(" and Launch");
    }
    s.push_str(
        r#" also take target_description="…" (the label of what you act on),
sensitive=True (the action may be irreversible or touches payment, credentials or private data)
and confirm_irreversible=True (only when re-sending a call that a safety warning blocked).
"#,
    );
    if !opts.app_launcher {
        s.push_str(
            "\nThere is no action to launch an app: open apps through the screen (Home, then tap the icon).\n",
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_capabilities_are_filled_in() {
        let p = do_grammar_prompt(&ParseOptions::pixels(1080, 2400));
        assert!(p.contains("0 (left edge) to 1079"));
        assert!(p.contains("to 2399 (bottom edge)"));
        assert!(!p.contains("action=\"Launch\""));
        let p = do_grammar_prompt(&ParseOptions::default().with_app_launcher(true));
        assert!(p.contains("action=\"Launch\""));
    }
}
