//! AutoGLM-Phone: the `do(...)` / `finish(...)` grammar (SPEC A2, M7) inside the family's
//! `<think>…</think><answer>…</answer>` layout, coordinates `0..=999`.
//!
//! The grammar is PhoneAgent's `do` parser itself ([`crate::parse_do_output`]), which already
//! accepts AutoGLM's layout, its `Tap` with `message=` (a sensitive tap: kept as the target
//! description, `sensitive` raised) and its action names; the thinking text becomes `reason`
//! when the call has none (it can only raise a risk tier).

use super::Ctx;
use crate::action::Action;
use crate::parse_error::ParseResult;

pub(crate) fn parse(text: &str, ctx: &Ctx<'_>) -> ParseResult<Action> {
    let out = crate::parse_do_output(text, &ctx.frozen)?;
    let mut a = out.action;
    if a.reason.is_none() {
        a.reason = out
            .reasoning
            .map(|r| r.chars().take(crate::action::MAX_META_CHARS).collect());
    }
    Ok(a)
}
