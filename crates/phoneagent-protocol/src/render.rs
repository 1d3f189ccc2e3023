//! The canonical `do(...)` form of an [`Action`] (used in prompts and history; SPEC A1, R6).
//!
//! [`render_do`] writes exactly what [`crate::parse_do`] reads back to the same action (a
//! property test checks the round trip with hostile text): keywords in a fixed order, optional
//! keywords only when set, flags only when true, strings in double quotes with `\\`, `\"`,
//! `\n`, `\r`, `\t` and other control characters escaped, integers without a fraction.

use crate::action::{Action, ActionKind, TaskItem};
use crate::geometry::ModelPoint;
use crate::options::fmt_num;

/// Quotes and escapes `s` as a `do` grammar string.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn point(p: ModelPoint) -> String {
    format!("[{},{}]", fmt_num(p.x), fmt_num(p.y))
}

fn task_item(t: &TaskItem) -> String {
    quote(&format!("[{}] {}", if t.done { "x" } else { " " }, t.text))
}

/// Renders `action` in the canonical `do(...)` / `finish(...)` form.
///
/// `Type` renders as `"Type"`, `AskUser` as `"Interact"`, `LaunchApp` as `"Launch"` with `app`,
/// `TakeOver` as `"Take_over"`. Durations: `Wait` as `duration="N seconds"`, gestures as
/// `duration_ms=N`.
pub fn render_do(action: &Action) -> String {
    let mut args: Vec<(&str, String)> = Vec::new();
    let name = match &action.kind {
        ActionKind::Finish { message, confirm } => {
            let mut s = format!("finish(message={}", quote(message));
            if *confirm {
                s.push_str(", confirm=True");
            }
            push_meta(&mut s, action);
            s.push(')');
            return s;
        }
        ActionKind::Tap { element } => {
            args.push(("element", point(*element)));
            "Tap"
        }
        ActionKind::DoubleTap { element } => {
            args.push(("element", point(*element)));
            "Double Tap"
        }
        ActionKind::LongPress {
            element,
            duration_ms,
        } => {
            args.push(("element", point(*element)));
            if let Some(ms) = duration_ms {
                args.push(("duration_ms", ms.to_string()));
            }
            "Long Press"
        }
        ActionKind::Swipe {
            start,
            end,
            duration_ms,
        } => {
            args.push(("start", point(*start)));
            args.push(("end", point(*end)));
            if let Some(ms) = duration_ms {
                args.push(("duration_ms", ms.to_string()));
            }
            "Swipe"
        }
        ActionKind::Type { text } => {
            args.push(("text", quote(text)));
            "Type"
        }
        ActionKind::Back => "Back",
        ActionKind::Home => "Home",
        ActionKind::Wait { seconds } => {
            args.push(("duration", quote(&format!("{} seconds", fmt_num(*seconds)))));
            "Wait"
        }
        ActionKind::TakeOver { message } => {
            args.push(("message", quote(message)));
            "Take_over"
        }
        ActionKind::AskUser { question } => {
            args.push(("message", quote(question)));
            "Interact"
        }
        ActionKind::Note {
            message,
            task_board,
        } => {
            args.push(("message", quote(message)));
            if let Some(tb) = task_board {
                let items: Vec<String> = tb.iter().map(task_item).collect();
                args.push(("task_board", format!("[{}]", items.join(", "))));
            }
            "Note"
        }
        ActionKind::LaunchApp { name } => {
            args.push(("app", quote(name)));
            "Launch"
        }
    };
    let mut s = format!("do(action={}", quote(name));
    for (k, v) in args {
        s.push_str(", ");
        s.push_str(k);
        s.push('=');
        s.push_str(&v);
    }
    if let Some(t) = &action.target_description {
        s.push_str(", target_description=");
        s.push_str(&quote(t));
    }
    if action.confirm_irreversible {
        s.push_str(", confirm_irreversible=True");
    }
    if action.sensitive {
        s.push_str(", sensitive=True");
    }
    push_meta(&mut s, action);
    s.push(')');
    s
}

fn push_meta(s: &mut String, action: &Action) {
    if let Some(d) = &action.screen_description {
        s.push_str(", screen_description=");
        s.push_str(&quote(d));
    }
    if let Some(r) = &action.reason {
        s.push_str(", reason=");
        s.push_str(&quote(r));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_canonical_forms() {
        let mut a = Action::new(ActionKind::Tap {
            element: ModelPoint { x: 500.0, y: 300.0 },
        });
        a.reason = Some("open \"Settings\"".into());
        a.confirm_irreversible = true;
        assert_eq!(
            render_do(&a),
            r#"do(action="Tap", element=[500,300], confirm_irreversible=True, reason="open \"Settings\"")"#
        );
        let a = Action::new(ActionKind::Wait { seconds: 2.5 });
        assert_eq!(
            render_do(&a),
            r#"do(action="Wait", duration="2.5 seconds")"#
        );
        let a = Action::new(ActionKind::Finish {
            message: "line1\nline2".into(),
            confirm: true,
        });
        assert_eq!(
            render_do(&a),
            r#"finish(message="line1\nline2", confirm=True)"#
        );
    }

    #[test]
    fn quote_escapes_controls() {
        assert_eq!(quote("a\\b\u{7}"), r#""a\\b\u0007""#);
    }
}
