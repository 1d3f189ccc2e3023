//! Screenshots in the report (SPEC T2, U6): JPEG thumbnails as data URLs (prefetched on a few
//! threads), the optional full-size lightbox, and the action drawn over the thumbnail in SVG
//! at its device coordinates.

use std::collections::HashMap;
use std::fmt::Write as _;

use base64::Engine;

use super::{HtmlOptions, e};
use crate::error::Result;
use crate::export::trajectory::{RunView, ShotRef, StepView};
use crate::store::Store;

pub(super) struct Images {
    pub(super) thumbs: HashMap<String, Option<(String, u32, u32)>>,
    pub(super) full: HashMap<String, String>,
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
    pub(super) fn prefetch(
        &mut self,
        store: &Store,
        view: &RunView,
        opts: &HtmlOptions,
    ) -> Result<()> {
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

pub(super) fn shot_html(
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
