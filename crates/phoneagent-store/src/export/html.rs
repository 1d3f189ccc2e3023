//! The self-contained HTML report of a run (SPEC T2, U6).
//!
//! One file, no external resources (a CSP meta tag forbids any), readable in light and dark
//! mode: a header with the task, outcome, duration, device, model, tokens and cost; then one
//! card per step with the planning screenshot as an inline thumbnail (JPEG data URL) and the
//! action drawn over it in SVG at its device coordinates (a ring for a tap, two for a double
//! tap, a thick ring for a long press, an arrow for a swipe), the model's screen description
//! and reason, gate decisions and receipts, human requests, freshness, dispatch, verification,
//! recovery and tokens. Every piece of text is HTML-escaped: model output and task text are
//! untrusted.
//!
//! This file holds the options, the text helpers and [`render`]; `css` is the stylesheet,
//! `images` the thumbnails and the action overlay, `steps` the per-step cards, `header` the
//! run's header.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;
use uuid::Uuid;

use super::trajectory::RunView;
use crate::error::Result;
use crate::store::Store;
use crate::types::RunStatus;

mod css;
mod header;
mod images;
mod steps;

use css::CSS;
use header::header_html;
use images::Images;
use steps::step_html;

/// Options of the HTML report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HtmlOptions {
    /// Width in px of the inline screenshot thumbnails (default 360).
    pub thumbnail_width: u32,
    /// Also embed each screenshot at full size, shown when its thumbnail is clicked
    /// (a CSS `:target` lightbox; makes the file several MB larger per step). Default false.
    pub full_size: bool,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        Self {
            thumbnail_width: 360,
            full_size: false,
        }
    }
}

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn e(s: &str) -> String {
    escape(s)
}

fn js(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn field<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.get(k).filter(|x| !x.is_null())
}

fn fstr(v: &Value, k: &str) -> String {
    field(v, k).map(js).unwrap_or_default()
}

fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max_chars).collect();
        t.push('…');
        t
    }
}

/// Human duration: `850 ms`, `12.4 s`, `3 min 05 s`, `1 h 02 min`.
pub fn human_duration(ms: i64) -> String {
    if ms < 1000 {
        return format!("{ms} ms");
    }
    let secs = ms / 1000;
    if secs < 60 {
        #[allow(clippy::cast_precision_loss)]
        return format!("{:.1} s", ms as f64 / 1000.0);
    }
    if secs < 3600 {
        return format!("{} min {:02} s", secs / 60, secs % 60);
    }
    format!("{} h {:02} min", secs / 3600, (secs % 3600) / 60)
}

fn status_class(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Succeeded => "ok",
        RunStatus::Running => "info",
        RunStatus::Cancelled | RunStatus::TakenOver | RunStatus::Interrupted => "warn",
        RunStatus::Failed => "bad",
    }
}

fn fmt_tokens(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push('\u{202f}');
        }
        out.push(c);
    }
    out
}

fn fmt_cost(c: f64) -> String {
    if c <= 0.0 {
        "—".into()
    } else if c < 0.01 {
        format!("${c:.4}")
    } else {
        format!("${c:.2}")
    }
}

fn fact(out: &mut String, label: &str, value: &str) {
    let _ = write!(out, "<div><dt>{}</dt><dd>{}</dd></div>", e(label), e(value));
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn section(out: &mut String, title: &str, body: &str) {
    if !body.is_empty() {
        let _ = write!(out, "<h3>{}</h3>{body}", e(title));
    }
}

/// Renders the HTML report of a loaded run.
pub fn render(view: &RunView, store: &Store, opts: &HtmlOptions) -> Result<String> {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'"><meta name="generator" content="phoneagent-store {}"><title>PhoneAgent run — {}</title><style>{CSS}</style></head><body><div class="wrap" style="--tw:{}px">"#,
        env!("CARGO_PKG_VERSION"),
        e(&truncate(&view.run.task, 80)),
        opts.thumbnail_width
    );
    header_html(&mut out, view);
    let mut images = Images {
        thumbs: HashMap::new(),
        full: HashMap::new(),
    };
    images.prefetch(store, view, opts)?;
    out.push_str("<main>");
    if view.steps.is_empty() {
        out.push_str(r#"<p class="muted">No steps were recorded for this run.</p>"#);
    }
    for s in &view.steps {
        step_html(&mut out, view, store, &mut images, s, opts)?;
    }
    out.push_str("</main>");
    let mut full: Vec<_> = images.full.iter().collect();
    full.sort();
    for (hash, url) in full {
        let _ = write!(
            out,
            r##"<a class="lightbox" id="full-{}" href="#_"><img src="{}" alt="full-size screenshot"></a>"##,
            e(hash),
            e(url)
        );
    }
    let _ = write!(
        out,
        "<footer>PhoneAgent trajectory schema {} · {} events · generated {}</footer></div></body></html>",
        phoneagent_protocol::event::TRAJECTORY_SCHEMA_VERSION,
        view.events.len(),
        e(&super::rfc3339(crate::types::now_ms()).unwrap_or_default())
    );
    Ok(out)
}

/// The HTML report of run `id`. Errors: [`crate::StoreError::UnknownRun`].
pub fn html_report(store: &Store, id: Uuid, opts: &HtmlOptions) -> Result<String> {
    let view = RunView::load(store, id)?;
    render(&view, store, opts)
}

/// Writes the HTML report of run `id` to `path` (atomically).
pub fn write_html_report(store: &Store, id: Uuid, opts: &HtmlOptions, path: &Path) -> Result<()> {
    let html = html_report(store, id, opts)?;
    super::write_file(path, html.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(850), "850 ms");
        assert_eq!(human_duration(12_400), "12.4 s");
        assert_eq!(human_duration(185_000), "3 min 05 s");
        assert_eq!(human_duration(3_720_000), "1 h 02 min");
    }

    #[test]
    fn token_grouping() {
        assert_eq!(fmt_tokens(1234567), "1\u{202f}234\u{202f}567");
        assert_eq!(fmt_tokens(12), "12");
    }
}
