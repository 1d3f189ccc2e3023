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

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use base64::Engine;
use serde_json::Value;
use uuid::Uuid;

use super::trajectory::{RunView, ShotRef, StepView};
use crate::error::Result;
use crate::store::Store;
use crate::types::RunStatus;

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

struct Images {
    thumbs: HashMap<String, Option<(String, u32, u32)>>,
    full: HashMap<String, String>,
}

/// Builds a JPEG thumbnail data URL; `None` when the screenshot is missing or undecodable.
fn thumbnail(store: &Store, hash: &str, opts: &HtmlOptions) -> Result<Thumb> {
    let width = opts.thumbnail_width;
    let Some(shot) = store.screenshot(hash)? else {
        return Ok(None);
    };
    let as_stored = || {
        format!(
            "data:{};base64,{}",
            shot.mime,
            base64::engine::general_purpose::STANDARD.encode(&shot.bytes)
        )
    };
    // The full-size data URL is built only when the lightbox wants it.
    let full = if opts.full_size {
        as_stored()
    } else {
        String::new()
    };
    let img = match image::load_from_memory(&shot.bytes) {
        Ok(i) => i,
        Err(err) => {
            tracing::warn!(hash, %err, "screenshot could not be decoded for the report; embedding it as stored");
            return Ok(Some((as_stored(), shot.width, shot.height, full)));
        }
    };
    let (w, h) = (img.width().max(1), img.height().max(1));
    let tw = width.min(w).max(1);
    let th = u32::try_from(u64::from(h) * u64::from(tw) / u64::from(w))
        .unwrap_or(1)
        .max(1);
    let small = img.thumbnail_exact(tw, th).to_rgb8();
    let mut buf = Vec::new();
    let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut buf, 78);
    if let Err(err) = small.write_with_encoder(enc) {
        tracing::warn!(hash, %err, "thumbnail encoding failed; embedding the screenshot as stored");
        return Ok(Some((as_stored(), w, h, full)));
    }
    let thumb = format!(
        "data:image/jpeg;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&buf)
    );
    Ok(Some((thumb, w, h, full)))
}

type Thumb = Option<(String, u32, u32, String)>;

impl Images {
    /// Decodes and scales every step screenshot up front on a few threads (PNG decoding of
    /// full-size screens dominates the report's cost). A worker that panics just leaves its
    /// screenshots to the sequential path.
    fn prefetch(&mut self, store: &Store, view: &RunView, opts: &HtmlOptions) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        let hashes: Vec<&str> = view
            .steps
            .iter()
            .filter_map(|s| s.observation.as_ref())
            .map(|o| o.sha256.as_str())
            .filter(|h| seen.insert(*h))
            .collect();
        if hashes.len() < 2 {
            return Ok(());
        }
        let workers = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .clamp(1, 4);
        let per = hashes.len().div_ceil(workers);
        let results: Vec<Vec<(String, Result<Thumb>)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = hashes
                .chunks(per)
                .map(|chunk| {
                    scope.spawn(move || {
                        chunk
                            .iter()
                            .map(|h| ((*h).to_owned(), thumbnail(store, h, opts)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        for (hash, res) in results.into_iter().flatten() {
            let v = res?.map(|(thumb, w, h, full)| {
                if opts.full_size {
                    self.full.insert(hash.clone(), full);
                }
                (thumb, w, h)
            });
            self.thumbs.insert(hash, v);
        }
        Ok(())
    }

    fn get(
        &mut self,
        store: &Store,
        hash: &str,
        opts: &HtmlOptions,
    ) -> Result<Option<(String, u32, u32)>> {
        if let Some(v) = self.thumbs.get(hash) {
            return Ok(v.clone());
        }
        let t = thumbnail(store, hash, opts)?;
        let v = t.map(|(thumb, w, h, full)| {
            if opts.full_size {
                self.full.insert(hash.to_owned(), full);
            }
            (thumb, w, h)
        });
        self.thumbs.insert(hash.to_owned(), v.clone());
        Ok(v)
    }
}

const CSS: &str = r#"
:root{--bg:#f6f7f9;--card:#fff;--fg:#1d2330;--muted:#5d6678;--line:#dde1e8;--accent:#2f6fde;
--ok:#1f8a4c;--warn:#b26a00;--bad:#c0392b;--info:#2f6fde;--chip:#eef1f6;--pre:#f2f4f8;--mark:#ff3b6b;--mark2:#ffd400}
@media (prefers-color-scheme: dark){:root{--bg:#12151b;--card:#1b1f27;--fg:#e4e8ef;--muted:#9aa3b2;--line:#2c323d;
--accent:#6fa0ff;--ok:#4cc38a;--warn:#f0a93b;--bad:#ff6b5e;--info:#6fa0ff;--chip:#262c37;--pre:#151920}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC","PingFang SC","Microsoft YaHei",sans-serif}
.wrap{max-width:1100px;margin:0 auto;padding:24px 16px 48px}
header.run{background:var(--card);border:1px solid var(--line);border-radius:14px;padding:20px 22px;margin-bottom:22px}
header.run h1{font-size:1.35rem;margin:.35rem 0 .8rem;word-break:break-word}
.demo{display:inline-block;margin-left:.5rem}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:10px 18px;margin:0}
dl.facts div{min-width:0}
dl.facts dt{font-size:.75rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
dl.facts dd{margin:0;font-weight:600;overflow-wrap:anywhere}
.final{margin:.9rem 0 0;padding:.6rem .8rem;border-left:3px solid var(--accent);background:var(--chip);border-radius:6px;white-space:pre-wrap;overflow-wrap:anywhere}
.policy{color:var(--muted);font-size:.85rem;margin:.8rem 0 0}
.badge,.chip{display:inline-block;border-radius:999px;padding:.05rem .6rem;font-size:.8rem;font-weight:600;background:var(--chip);color:var(--fg);margin:0 .25rem .25rem 0;white-space:nowrap}
.badge.ok,.chip.ok{background:color-mix(in srgb,var(--ok) 18%,transparent);color:var(--ok)}
.badge.warn,.chip.warn{background:color-mix(in srgb,var(--warn) 18%,transparent);color:var(--warn)}
.badge.bad,.chip.bad{background:color-mix(in srgb,var(--bad) 18%,transparent);color:var(--bad)}
.badge.info,.chip.info{background:color-mix(in srgb,var(--info) 18%,transparent);color:var(--info)}
article.step{display:grid;grid-template-columns:minmax(160px,var(--tw)) 1fr;gap:18px;background:var(--card);border:1px solid var(--line);border-radius:14px;padding:16px;margin-bottom:16px}
@media (max-width:720px){article.step{grid-template-columns:1fr}}
.shot{position:relative;align-self:start}
.shot figure{position:relative;margin:0;border-radius:10px;overflow:hidden;border:1px solid var(--line);background:#000;line-height:0}
.shot img{display:block;width:100%;height:auto}
.shot svg{position:absolute;inset:0;width:100%;height:100%;pointer-events:none}
.shot figcaption,.muted{color:var(--muted);font-size:.8rem}
.shot figcaption{margin-top:.35rem;line-height:1.3}
.noshot{display:flex;align-items:center;justify-content:center;aspect-ratio:9/20;border:1px dashed var(--line);border-radius:10px;color:var(--muted);font-size:.85rem;text-align:center;padding:1rem}
.blocked{position:absolute;left:8px;top:8px;line-height:1.4}
.key{position:absolute;left:50%;bottom:10px;transform:translateX(-50%);line-height:1.4;background:rgba(0,0,0,.7);color:#fff;border-radius:999px;padding:.1rem .7rem;font-weight:700;font-size:.85rem}
.step h2{font-size:1.05rem;margin:0 0 .5rem;display:flex;flex-wrap:wrap;align-items:baseline;gap:.5rem}
.step h2 .act{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92rem;background:var(--chip);border-radius:6px;padding:.05rem .45rem;overflow-wrap:anywhere}
.step h2 time{margin-left:auto;color:var(--muted);font-weight:400;font-size:.85rem}
.step h3{font-size:.75rem;text-transform:uppercase;letter-spacing:.05em;color:var(--muted);margin:.8rem 0 .2rem}
.step p{margin:.1rem 0;white-space:pre-wrap;overflow-wrap:anywhere}
.step ul{margin:.1rem 0;padding-left:1.1rem}
.step li{margin:.15rem 0;overflow-wrap:anywhere}
pre{background:var(--pre);border:1px solid var(--line);border-radius:8px;padding:.5rem .7rem;white-space:pre-wrap;overflow-wrap:anywhere;font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;margin:.3rem 0}
details summary{cursor:pointer;color:var(--muted);font-size:.85rem}
table{border-collapse:collapse;font-size:.85rem;margin:.4rem 0}
th,td{border-bottom:1px solid var(--line);padding:.2rem .7rem .2rem 0;text-align:left}
th{color:var(--muted);font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.lightbox{display:none;position:fixed;inset:0;background:rgba(0,0,0,.88);z-index:10;align-items:center;justify-content:center}
.lightbox:target{display:flex}
.lightbox img{max-width:96vw;max-height:96vh}
footer{color:var(--muted);font-size:.8rem;text-align:center;margin-top:28px}
"#;

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

/// Short text form of an action for the step title (`tap (540, 1200)`, `type "…"`).
fn action_label(s: &StepView) -> String {
    let Some(a) = &s.action else {
        return s.action_type.clone().unwrap_or_default();
    };
    let kind = fstr(a, "action");
    let num = |v: &Value| match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e9 => format!("{f:.0}"),
        Some(f) => format!("{f:.1}"),
        None => js(v),
    };
    let pt = |k: &str| {
        field(a, k)
            .map(|p| format!("({}, {})", num(&p["x"]), num(&p["y"])))
            .unwrap_or_default()
    };
    let dev = |i: usize| {
        s.device_points
            .get(i)
            .map(|p| format!(" → px {:.0},{:.0}", p[0], p[1]))
            .unwrap_or_default()
    };
    match kind.as_str() {
        "tap" | "double_tap" | "long_press" => format!("{kind} {}{}", pt("element"), dev(0)),
        "swipe" => format!("swipe {} → {}", pt("start"), pt("end")),
        "type" => format!("type \"{}\"", truncate(&fstr(a, "text"), 60)),
        "wait" => format!("wait {} s", fstr(a, "seconds")),
        "take_over" => format!("take_over: {}", truncate(&fstr(a, "message"), 80)),
        "ask_user" => format!("ask_user: {}", truncate(&fstr(a, "question"), 80)),
        "note" => "note".into(),
        "finish" => {
            if a.get("confirm").and_then(Value::as_bool).unwrap_or(false) {
                "finish (confirm)".into()
            } else {
                "finish".into()
            }
        }
        "launch_app" => format!("launch_app \"{}\"", fstr(a, "name")),
        other => other.to_owned(),
    }
}

/// SVG overlay for the step's action in the screenshot's pixel space.
fn overlay(s: &StepView, w: u32, h: u32) -> String {
    let Some(kind) = s.action_type.as_deref() else {
        return String::new();
    };
    let pts = &s.device_points;
    let wf = f64::from(w.max(1));
    let r = (wf * 0.05).max(6.0);
    let mut g = String::new();
    match kind {
        "tap" | "double_tap" | "long_press" => {
            if let Some(p) = pts.first() {
                let (x, y) = (p[0], p[1]);
                let sw = if kind == "long_press" { 8 } else { 4 };
                let _ = write!(
                    g,
                    r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r:.1}" fill="rgba(255,59,107,.22)" stroke="var(--mark)" stroke-width="{sw}" vector-effect="non-scaling-stroke"/><circle cx="{x:.1}" cy="{y:.1}" r="{:.1}" fill="var(--mark)"/>"#,
                    r * 0.18
                );
                if kind == "double_tap" {
                    let _ = write!(
                        g,
                        r#"<circle cx="{x:.1}" cy="{y:.1}" r="{:.1}" fill="none" stroke="var(--mark2)" stroke-width="3" vector-effect="non-scaling-stroke"/>"#,
                        r * 1.5
                    );
                }
            }
        }
        "swipe" | "scroll" => {
            if let (Some(a), Some(b)) = (pts.first(), pts.get(1)) {
                // The arrowhead is a polygon in device space (markers scale badly with
                // non-scaling strokes): length 9% and width 7% of the screen width.
                let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
                let len = dx.hypot(dy).max(1e-6);
                let (ux, uy) = (dx / len, dy / len);
                let head = (wf * 0.09).min(len * 0.6);
                let half = wf * 0.035;
                let (bx, by) = (b[0] - ux * head, b[1] - uy * head);
                let _ = write!(
                    g,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="{:.1}" fill="var(--mark)" fill-opacity=".85"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="var(--mark)" stroke-width="5" stroke-linecap="round" vector-effect="non-scaling-stroke"/><polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="var(--mark)"/>"#,
                    a[0],
                    a[1],
                    wf * 0.022,
                    a[0],
                    a[1],
                    bx,
                    by,
                    b[0],
                    b[1],
                    bx - uy * half,
                    by + ux * half,
                    bx + uy * half,
                    by - ux * half
                );
            }
        }
        _ => {}
    }
    if g.is_empty() {
        return String::new();
    }
    format!(r#"<svg viewBox="0 0 {w} {h}" preserveAspectRatio="none" aria-hidden="true">{g}</svg>"#)
}

fn shot_html(
    out: &mut String,
    store: &Store,
    images: &mut Images,
    s: &StepView,
    opts: &HtmlOptions,
) -> Result<()> {
    let Some(obs) = &s.observation else {
        out.push_str(
            r#"<div class="shot"><div class="noshot">no screenshot in this step</div></div>"#,
        );
        return Ok(());
    };
    let ShotRef {
        sha256,
        width,
        height,
        blocked,
        screen_seq,
        ..
    } = obs;
    out.push_str(r#"<div class="shot">"#);
    match images.get(store, sha256, opts)? {
        Some((url, iw, ih)) => {
            // Draw in the device pixel space of the observation (what the points are in).
            let (vw, vh) = if *width > 0 && *height > 0 {
                (*width, *height)
            } else {
                (iw, ih)
            };
            let img = format!(
                r#"<img src="{}" width="{iw}" height="{ih}" alt="screenshot of step {}" loading="lazy">"#,
                e(&url),
                s.step
            );
            let inner = format!("{img}{}", overlay(s, vw, vh));
            if opts.full_size && images.full.contains_key(sha256.as_str()) {
                let _ = write!(
                    out,
                    "<a href=\"#full-{}\"><figure>{inner}</figure></a>",
                    e(sha256)
                );
            } else {
                let _ = write!(out, "<figure>{inner}</figure>");
            }
            if *blocked {
                out.push_str(r#"<span class="chip bad blocked">screen blocked</span>"#);
            }
            match s.action_type.as_deref() {
                Some("back") => out.push_str(r#"<span class="key">◀ Back</span>"#),
                Some("home") => out.push_str(r#"<span class="key">● Home</span>"#),
                _ => {}
            }
        }
        None => {
            out.push_str(r#"<div class="noshot">screenshot not in the store</div>"#);
        }
    }
    let _ = write!(
        out,
        r#"<figcaption>screen #{screen_seq} · {width}×{height} px · <span title="sha256">{}</span></figcaption></div>"#,
        e(&sha256[..sha256.len().min(12)])
    );
    Ok(())
}

fn section(out: &mut String, title: &str, body: &str) {
    if !body.is_empty() {
        let _ = write!(out, "<h3>{}</h3>{body}", e(title));
    }
}

fn gate_html(s: &StepView) -> String {
    let mut b = String::new();
    if s.gate.is_empty() {
        return b;
    }
    b.push_str("<ul>");
    for g in &s.gate {
        let outcome = fstr(g, "outcome");
        let cls = match outcome.as_str() {
            "allow" | "approved" => "ok",
            "warned" | "needs_approval" => "warn",
            _ => "bad",
        };
        let tier = fstr(g, "tier");
        let tier_cls = match tier.as_str() {
            "hard" => "bad",
            "soft" | "reviewer" => "warn",
            _ => "",
        };
        let reasons: Vec<String> = g
            .get("reasons")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(js).collect())
            .unwrap_or_default();
        let _ = write!(
            b,
            r#"<li><span class="chip {cls}">{}</span><span class="chip {tier_cls}">tier {}</span> {} · mode {} · by {} · {} ms{}"#,
            e(&outcome),
            e(&tier),
            e(&fstr(g, "tool")),
            e(&fstr(g, "mode")),
            e(&fstr(g, "decided_by")),
            e(&fstr(g, "latency_ms")),
            if reasons.is_empty() {
                String::new()
            } else {
                format!(" · reasons: {}", e(&reasons.join(", ")))
            }
        );
        if let Some(r) = field(g, "receipt") {
            let _ = write!(b, "<pre>{}</pre>", e(&js(r)));
        }
        b.push_str("</li>");
    }
    b.push_str("</ul>");
    b
}

fn human_html(s: &StepView) -> String {
    let mut b = String::new();
    if s.human.is_empty() {
        return b;
    }
    b.push_str("<ul>");
    for h in &s.human {
        let kind = fstr(h, "kind");
        if kind == "human_requested" {
            let req = h.get("request").cloned().unwrap_or_default();
            let t = fstr(&req, "type");
            let what = match t.as_str() {
                "approval" => format!(
                    "approval asked for {} on “{}” (tier {})",
                    fstr(&req, "tool"),
                    fstr(&req, "target"),
                    fstr(&req, "tier")
                ),
                "ask_user" => format!("question: {}", fstr(&req, "question")),
                "take_over" => format!("take over asked: {}", fstr(&req, "message")),
                other => other.to_owned(),
            };
            let _ = write!(
                b,
                r#"<li><span class="chip info">asked</span> {}</li>"#,
                e(&what)
            );
        } else {
            let resp = h.get("response").cloned().unwrap_or_default();
            let t = fstr(&resp, "type");
            let cls = match t.as_str() {
                "approve" | "hand_back" => "ok",
                "reject" => "bad",
                _ => "info",
            };
            let detail = match t.as_str() {
                "answer" => format!(": {}", fstr(&resp, "text")),
                "reject" => field(&resp, "note")
                    .map(|n| format!(": {}", js(n)))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            let _ = write!(
                b,
                r#"<li><span class="chip {cls}">{}</span>{} by {} after {}</li>"#,
                e(&t),
                e(&detail),
                e(&fstr(h, "decided_by")),
                e(&human_duration(
                    h.get("latency_ms").and_then(Value::as_i64).unwrap_or(0)
                ))
            );
        }
    }
    b.push_str("</ul>");
    b
}

fn execution_html(s: &StepView) -> String {
    let mut b = String::new();
    let f = &s.facts;
    if !s.freshness.is_empty() {
        b.push_str("<p>");
        for fr in &s.freshness {
            let o = fstr(fr, "outcome");
            let cls = if o == "stale" { "warn" } else { "ok" };
            let _ = write!(b, r#"<span class="chip {cls}">freshness: {}</span>"#, e(&o));
        }
        b.push_str("</p>");
    }
    if let Some(d) = &s.dispatch {
        let ok = f.command_ok.unwrap_or(false);
        let _ = write!(
            b,
            r#"<p><span class="chip {}">command {}</span> {} in {} ms{}</p>"#,
            if ok { "ok" } else { "bad" },
            if ok { "ok" } else { "failed" },
            e(&fstr(d, "action_type")),
            e(&fstr(d, "duration_ms")),
            field(d, "message")
                .map(|m| format!(" — {}", e(&js(m))))
                .unwrap_or_default()
        );
    } else if s.action.is_some() {
        b.push_str(r#"<p><span class="chip">not dispatched</span></p>"#);
    }
    if let Some(v) = &s.verification {
        let eff = f.observable_effect.unwrap_or(false);
        let frac = v
            .get("changed_fraction")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let _ = write!(
            b,
            r#"<p><span class="chip {}">{}</span> {:.1}% of the screen changed</p>"#,
            if eff { "ok" } else { "warn" },
            if eff {
                "visible effect"
            } else {
                "no visible effect"
            },
            frac * 100.0
        );
    }
    if !f.warnings.is_empty() {
        b.push_str("<p>");
        for w in &f.warnings {
            let _ = write!(b, r#"<span class="chip warn">{}</span>"#, e(w));
        }
        b.push_str("</p>");
    }
    for r in &s.recovery {
        let _ = write!(
            b,
            r#"<p><span class="chip warn">recovery: {}</span> {} — {} (hard {}, soft {})</p>"#,
            e(&fstr(r, "outcome")),
            e(&fstr(r, "code")),
            e(&fstr(r, "detail")),
            e(&fstr(r, "hard_failures")),
            e(&fstr(r, "soft_replans"))
        );
    }
    for p in &s.protocol_rejections {
        let _ = write!(
            b,
            r#"<p><span class="chip bad">answer rejected ({})</span> attempt {}</p><pre>{}</pre>"#,
            e(&fstr(p, "error_kind")),
            e(&fstr(p, "attempt")),
            e(&fstr(p, "message"))
        );
    }
    if let Some(root) = &f.root_error {
        let _ = write!(b, r#"<p class="muted">root error: {}</p>"#, e(root));
    }
    b
}

fn other_html(s: &StepView) -> String {
    let mut b = String::new();
    for o in &s.other {
        let kind = fstr(o, "kind");
        let line = match kind.as_str() {
            "note" => {
                let mut t = format!("note: {}", fstr(o, "message"));
                if let Some(items) = o.get("task_board").and_then(Value::as_array) {
                    for it in items {
                        let done = it.get("done").and_then(Value::as_bool).unwrap_or(false);
                        let _ = write!(
                            t,
                            "\n  {} {}",
                            if done { "☑" } else { "☐" },
                            fstr(it, "text")
                        );
                    }
                }
                t
            }
            "tool_result" => format!(
                "result to the model ({}, {}): {}",
                fstr(o, "tool"),
                fstr(o, "status"),
                fstr(o, "text")
            ),
            "finish_review" => format!("finish review package:\n{}", fstr(o, "package")),
            "finish_rejected" => format!(
                "finish rejected by {}: {}",
                fstr(o, "by"),
                fstr(o, "message")
            ),
            "finish_verifier" => format!(
                "finish verifier: {} — {}",
                fstr(o, "verdict"),
                fstr(o, "reason")
            ),
            "device_lost" => format!("device lost ({}): {}", fstr(o, "serial"), fstr(o, "detail")),
            "device_restored" => format!(
                "device back ({}) after {}",
                fstr(o, "serial"),
                human_duration(o.get("waited_ms").and_then(Value::as_i64).unwrap_or(0))
            ),
            "guard_active" => format!("guard active: {}", fstr(o, "guard")),
            "model_fallback" => format!(
                "model fallback for {}: {} ({})",
                fstr(o, "role"),
                fstr(o, "used"),
                fstr(o, "reason")
            ),
            "warning" => format!("warning {}: {}", fstr(o, "code"), fstr(o, "message")),
            other => other.to_owned(),
        };
        let _ = write!(b, "<pre>{}</pre>", e(&truncate(&line, 4000)));
    }
    b
}

fn step_html(
    out: &mut String,
    view: &RunView,
    store: &Store,
    images: &mut Images,
    s: &StepView,
    opts: &HtmlOptions,
) -> Result<()> {
    let _ = write!(out, r#"<article class="step" id="step-{}">"#, s.step);
    shot_html(out, store, images, s, opts)?;
    out.push_str("<div class=\"body\">");
    let offset = s.started_ms.saturating_sub(view.run.started_ms);
    let title = if s.step == 0 {
        "Before the first step".to_owned()
    } else {
        format!("Step {}", s.step)
    };
    let mut chips = String::new();
    let f = &s.facts;
    if f.dispatched {
        match f.command_ok {
            Some(true) => chips.push_str(r#"<span class="chip ok">ok</span>"#),
            _ => chips.push_str(r#"<span class="chip bad">command failed</span>"#),
        }
    }
    if f.recovery_needed {
        chips.push_str(r#"<span class="chip warn">recovery</span>"#);
    }
    let label = action_label(s);
    let _ = write!(
        out,
        r#"<h2>{}{}{}<time>+{}</time></h2>"#,
        e(&title),
        if label.is_empty() {
            String::new()
        } else {
            format!(r#" <span class="act">{}</span>"#, e(&label))
        },
        chips,
        e(&human_duration(offset))
    );
    if let Some(a) = &s.action {
        let desc = fstr(a, "screen_description");
        if !desc.is_empty() {
            section(out, "Screen", &format!("<p>{}</p>", e(&desc)));
        }
        let reason = fstr(a, "reason");
        if !reason.is_empty() {
            section(out, "Reason", &format!("<p>{}</p>", e(&reason)));
        }
        let target = fstr(a, "target_description");
        if !target.is_empty() {
            section(out, "Target", &format!("<p>{}</p>", e(&target)));
        }
        match fstr(a, "action").as_str() {
            "type" => section(out, "Text", &format!("<pre>{}</pre>", e(&fstr(a, "text")))),
            "finish" => section(
                out,
                "Finish message",
                &format!("<p>{}</p>", e(&fstr(a, "message"))),
            ),
            _ => {}
        }
    }
    section(out, "Safety gate", &gate_html(s));
    section(out, "Human", &human_html(s));
    section(out, "Execution", &execution_html(s));
    section(out, "Events", &other_html(s));
    if s.usage.calls > 0 {
        let u = &s.usage;
        section(
            out,
            "Model",
            &format!(
                r#"<p class="muted">{} call{} · {} prompt + {} completion tokens · {} · {}</p>"#,
                u.calls,
                if u.calls == 1 { "" } else { "s" },
                fmt_tokens(u.prompt_tokens),
                fmt_tokens(u.completion_tokens),
                e(&fmt_cost(u.cost_usd)),
                e(&human_duration(i64::try_from(u.latency_ms).unwrap_or(0)))
            ),
        );
    }
    if let Some(raw) = step_model_answer(view, s.step) {
        let _ = write!(
            out,
            "<details><summary>model answer</summary><pre>{}</pre></details>",
            e(&truncate(&raw, 8000))
        );
    }
    out.push_str("</div></article>");
    Ok(())
}

/// The last planning answer of the actor in this step (content, with reasoning when separate).
fn step_model_answer(view: &RunView, step: u32) -> Option<String> {
    view.events
        .iter()
        .rev()
        .filter(|ev| ev.kind == "model_call" && ev.step() == step)
        .find(|ev| fstr(&ev.payload, "role") == "actor")
        .map(|ev| {
            let content = fstr(&ev.payload, "content");
            match field(&ev.payload, "reasoning") {
                Some(r) => format!("<think>{}</think>\n{content}", js(r)),
                None => content,
            }
        })
        .filter(|s| !s.is_empty())
}

fn header_html(out: &mut String, v: &RunView) {
    let r = &v.run;
    let status = v.status();
    out.push_str(r#"<header class="run">"#);
    let _ = write!(
        out,
        r#"<span class="badge {}">{}</span>"#,
        status_class(status),
        e(status.as_str())
    );
    if v.started
        .as_ref()
        .and_then(|s| s.get("demo"))
        .and_then(Value::as_bool)
        == Some(true)
    {
        out.push_str(r#"<span class="badge info demo">demo on the virtual phone</span>"#);
    }
    let _ = write!(out, "<h1>{}</h1><dl class=\"facts\">", e(&r.task));
    fact(
        out,
        "Outcome",
        &format!(
            "{}{}",
            status.as_str(),
            v.termination_code
                .as_ref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default()
        ),
    );
    fact(
        out,
        "Duration",
        &r.duration_ms()
            .map(human_duration)
            .unwrap_or_else(|| "still running".into()),
    );
    fact(
        out,
        "Started",
        &super::rfc3339(r.started_ms).unwrap_or_else(|| r.started_ms.to_string()),
    );
    let device = r
        .device_serial
        .clone()
        .or_else(|| v.started_str("serial").map(str::to_owned))
        .unwrap_or_else(|| "—".into());
    fact(out, "Device", &device);
    let model = r
        .model
        .clone()
        .or_else(|| v.started_str("model").map(str::to_owned))
        .unwrap_or_else(|| "—".into());
    let profile = r
        .model_profile
        .clone()
        .or_else(|| v.started_str("profile").map(str::to_owned));
    fact(
        out,
        "Model",
        &match profile {
            Some(p) if p != model => format!("{model} ({p})"),
            _ => model,
        },
    );
    fact(out, "Access mode", r.access_mode.as_str());
    fact(
        out,
        "Steps",
        &v.steps.iter().filter(|s| s.step > 0).count().to_string(),
    );
    fact(
        out,
        "Tokens",
        &format!(
            "{} in · {} out",
            fmt_tokens(v.usage.prompt_tokens),
            fmt_tokens(v.usage.completion_tokens)
        ),
    );
    fact(out, "Cost", &fmt_cost(v.usage.cost_usd));
    fact(out, "Model calls", &v.usage.calls.to_string());
    fact(
        out,
        "Recoveries",
        &format!("{} hard · {} soft", v.hard_failures, v.soft_replans),
    );
    if let Some(root) = &v.root_error {
        fact(out, "Root error", root);
    }
    out.push_str("</dl>");
    if let Some(m) = v.final_message.as_ref().filter(|m| !m.is_empty()) {
        let _ = write!(out, r#"<p class="final">{}</p>"#, e(m));
    }
    let p = &v.policy;
    let _ = write!(
        out,
        r#"<p class="policy">Policy: observation {} · Android semantics visible to the model: {} · deterministic app launch: {} · external API actions: {} · run {}</p>"#,
        e(&p.policy_observation),
        yes_no(p.android_semantics_visible_to_model),
        yes_no(p.deterministic_app_launch),
        yes_no(p.external_api_action),
        e(&r.id.to_string())
    );
    if let Some(c) = v.calibrations.last() {
        let _ = write!(
            out,
            r#"<p class="policy">Coordinates: {} ({}) — {}</p>"#,
            e(&fstr(c, "space")),
            e(&fstr(c, "method")),
            e(&fstr(c, "detail"))
        );
    }
    if !v.usage_by_role.is_empty() {
        out.push_str("<details><summary>tokens by role</summary><table><tr><th>role</th><th>calls</th><th>prompt</th><th>completion</th><th>cost</th></tr>");
        for (role, u) in &v.usage_by_role {
            let _ = write!(
                out,
                r#"<tr><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td></tr>"#,
                e(role),
                u.calls,
                fmt_tokens(u.prompt_tokens),
                fmt_tokens(u.completion_tokens),
                e(&fmt_cost(u.cost_usd))
            );
        }
        out.push_str("</table></details>");
    }
    out.push_str("</header>");
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
