//! Pixels: an RGBA canvas with rectangles, rounded rectangles, circles and text drawn with a
//! real TrueType font that has CJK glyphs, and a fast PNG encoder.
//!
//! Everything here is integer-positioned and deterministic: the same scene gives the same bytes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use ab_glyph::{Font as _, FontVec, GlyphId, PxScale, ScaleFont as _};

use crate::error::{Result, SimError};

/// An RGBA colour.
pub(crate) type Rgba = [u8; 4];

/// Axis-aligned rectangle in px, exclusive right/bottom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Rect {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
}

impl Rect {
    pub(crate) const fn new(x0: i32, y0: i32, x1: i32, y1: i32) -> Self {
        Self { x0, y0, x1, y1 }
    }
    pub(crate) fn xywh(x: i32, y: i32, w: i32, h: i32) -> Self {
        Self::new(x, y, x + w, y + h)
    }
    pub(crate) fn w(&self) -> i32 {
        self.x1 - self.x0
    }
    pub(crate) fn h(&self) -> i32 {
        self.y1 - self.y0
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.x1 <= self.x0 || self.y1 <= self.y0
    }
    pub(crate) fn intersect(&self, o: &Rect) -> Rect {
        Rect::new(
            self.x0.max(o.x0),
            self.y0.max(o.y0),
            self.x1.min(o.x1),
            self.y1.min(o.y1),
        )
    }
    pub(crate) fn contains(&self, x: i32, y: i32) -> bool {
        x >= self.x0 && x < self.x1 && y >= self.y0 && y < self.y1
    }
    pub(crate) fn inset(&self, dx: i32, dy: i32) -> Rect {
        Rect::new(self.x0 + dx, self.y0 + dy, self.x1 - dx, self.y1 - dy)
    }
    pub(crate) fn cy(&self) -> i32 {
        (self.y0 + self.y1) / 2
    }
}

/// Horizontal alignment of text in its box.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Center,
    Right,
}

// ---------------------------------------------------------------------------------------------
// Font
// ---------------------------------------------------------------------------------------------

/// The loaded font and the path it came from.
pub(crate) struct LoadedFont {
    pub font: FontVec,
    pub path: PathBuf,
}

/// Where fonts with CJK glyphs live on Debian/Ubuntu/Fedora (first usable wins).
const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJKsc-Regular.otf",
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/google-noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/wqy-microhei/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
];

fn try_load(path: &Path) -> std::result::Result<FontVec, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let font = FontVec::try_from_vec_and_index(data, 0)
        .map_err(|e| format!("not a TrueType/OpenType font: {e}"))?;
    if font.glyph_id('商').0 == 0 || font.glyph_id('A').0 == 0 {
        return Err("it has no glyph for 商 or A".to_owned());
    }
    Ok(font)
}

fn load_font_uncached() -> Result<LoadedFont> {
    if let Some(p) = std::env::var_os("PHONEAGENT_SIM_FONT") {
        let path = PathBuf::from(p);
        return match try_load(&path) {
            Ok(font) => Ok(LoadedFont { font, path }),
            Err(reason) => Err(SimError::FontUnusable { path, reason }),
        };
    }
    for c in FONT_CANDIDATES {
        let path = PathBuf::from(c);
        if path.is_file()
            && let Ok(font) = try_load(&path)
        {
            return Ok(LoadedFont { font, path });
        }
    }
    Err(SimError::FontNotFound {
        searched: FONT_CANDIDATES.join(", "),
    })
}

static FONT: OnceLock<std::result::Result<Arc<LoadedFont>, String>> = OnceLock::new();

/// The process-wide CJK font, loaded once. Fails with [`SimError::FontNotFound`] naming the
/// package to install.
pub(crate) fn font() -> Result<Arc<LoadedFont>> {
    match FONT.get_or_init(|| {
        load_font_uncached()
            .map(Arc::new)
            .map_err(|e| e.to_string())
    }) {
        Ok(f) => Ok(f.clone()),
        Err(msg) => {
            // Re-run to return the typed error (cheap: it failed fast the first time).
            match load_font_uncached() {
                Ok(f) => Ok(Arc::new(f)),
                Err(e) => {
                    tracing::debug!("font load failed: {msg}");
                    Err(e)
                }
            }
        }
    }
}

/// Path of the font in use (for logs and the README).
pub fn font_path() -> Result<PathBuf> {
    Ok(font()?.path.clone())
}

struct GlyphBitmap {
    w: usize,
    h: usize,
    left: i32,
    top: i32,
    cov: Vec<u8>,
}

/// Rasterized glyphs by (glyph, px size).
#[derive(Default)]
pub(crate) struct GlyphCache {
    map: HashMap<(u16, u32), Option<Arc<GlyphBitmap>>>,
}

// ---------------------------------------------------------------------------------------------
// Canvas
// ---------------------------------------------------------------------------------------------

/// An RGBA8 frame.
pub(crate) struct Canvas<'a> {
    pub w: i32,
    pub h: i32,
    pub px: Vec<u8>,
    clip: Rect,
    /// Modal backdrop: every colour drawn is first blended with this colour at this alpha.
    dim: Option<Rgba>,
    font: &'a LoadedFont,
    cache: &'a mut GlyphCache,
}

/// `c` seen through a translucent `over` (alpha = `over[3]`).
pub(crate) fn dim_color(c: Rgba, over: Rgba) -> Rgba {
    let a = u32::from(over[3]);
    [
        blend(c[0], over[0], a),
        blend(c[1], over[1], a),
        blend(c[2], over[2], a),
        c[3],
    ]
}

impl<'a> Canvas<'a> {
    pub(crate) fn new(
        w: u32,
        h: u32,
        bg: Rgba,
        font: &'a LoadedFont,
        cache: &'a mut GlyphCache,
    ) -> Self {
        let (wi, hi) = (w as i32, h as i32);
        let px = bg.repeat(w as usize * h as usize);
        Self {
            w: wi,
            h: hi,
            px,
            clip: Rect::new(0, 0, wi, hi),
            dim: None,
            font,
            cache,
        }
    }

    pub(crate) fn set_dim(&mut self, d: Option<Rgba>) {
        self.dim = d;
    }

    fn col(&self, c: Rgba) -> Rgba {
        match self.dim {
            Some(d) => dim_color(c, d),
            None => c,
        }
    }

    pub(crate) fn set_clip(&mut self, r: Option<Rect>) {
        let full = Rect::new(0, 0, self.w, self.h);
        self.clip = r.map_or(full, |r| r.intersect(&full));
    }

    /// Opaque fill (alpha 255) or blended fill (alpha < 255).
    pub(crate) fn fill_rect(&mut self, r: Rect, c: Rgba) {
        let c = self.col(c);
        self.fill_rect_raw(r, c);
    }

    fn fill_rect_raw(&mut self, r: Rect, c: Rgba) {
        let r = r.intersect(&self.clip);
        if r.is_empty() {
            return;
        }
        let stride = self.w as usize * 4;
        if c[3] == 255 {
            let n = r.w() as usize;
            let row = c.repeat(n);
            for y in r.y0..r.y1 {
                let off = y as usize * stride + r.x0 as usize * 4;
                self.px[off..off + n * 4].copy_from_slice(&row);
            }
        } else {
            let a = u32::from(c[3]);
            for y in r.y0..r.y1 {
                let off = y as usize * stride + r.x0 as usize * 4;
                let line = &mut self.px[off..off + r.w() as usize * 4];
                for p in line.chunks_exact_mut(4) {
                    p[0] = blend(p[0], c[0], a);
                    p[1] = blend(p[1], c[1], a);
                    p[2] = blend(p[2], c[2], a);
                }
            }
        }
    }

    /// One row from `left` to `right` (fractional px): full pixels copied, the two edge pixels
    /// blended by their coverage. `c` is already dimmed.
    fn span_aa(&mut self, y: i32, left: f32, right: f32, c: Rgba) {
        if right <= left {
            return;
        }
        let l = left.ceil() as i32;
        let r = right.floor() as i32;
        if r > l {
            self.fill_rect_raw(Rect::new(l, y, r, y + 1), c);
        }
        let alpha = f32::from(c[3]);
        let cl = l as f32 - left;
        if cl > 0.0 {
            self.blend_px_raw(l - 1, y, c, (cl.min(right - left) * alpha) as u32);
        }
        let cr = right - r as f32;
        if cr > 0.0 && r >= l {
            self.blend_px_raw(r, y, c, (cr * alpha) as u32);
        }
    }

    /// Filled rounded rectangle (corner radius `rad` px), anti-aliased corner edges.
    pub(crate) fn fill_rrect(&mut self, r: Rect, rad: i32, c: Rgba) {
        let rad = rad.min(r.w() / 2).min(r.h() / 2).max(0);
        let c = self.col(c);
        if rad == 0 {
            self.fill_rect_raw(r, c);
            return;
        }
        self.fill_rect_raw(Rect::new(r.x0, r.y0 + rad, r.x1, r.y1 - rad), c);
        let radf = rad as f32;
        for i in 0..rad {
            // Distance from the corner circles' centre row to this pixel row's centre.
            let dy = radf - (i as f32 + 0.5);
            let span = (radf * radf - dy * dy).max(0.0).sqrt();
            let left = (r.x0 + rad) as f32 - span;
            let right = (r.x1 - rad) as f32 + span;
            self.span_aa(r.y0 + i, left, right, c);
            self.span_aa(r.y1 - 1 - i, left, right, c);
        }
    }

    /// Filled circle, anti-aliased left/right edges.
    pub(crate) fn fill_circle(&mut self, cx: i32, cy: i32, rad: i32, c: Rgba) {
        let c = self.col(c);
        let radf = rad as f32;
        for y in cy - rad..cy + rad {
            let dy = y as f32 + 0.5 - cy as f32;
            let span = (radf * radf - dy * dy).max(0.0).sqrt();
            self.span_aa(y, cx as f32 - span, cx as f32 + span, c);
        }
    }

    /// Outline of width `t` px.
    pub(crate) fn stroke_rect(&mut self, r: Rect, t: i32, c: Rgba) {
        self.fill_rect(Rect::new(r.x0, r.y0, r.x1, r.y0 + t), c);
        self.fill_rect(Rect::new(r.x0, r.y1 - t, r.x1, r.y1), c);
        self.fill_rect(Rect::new(r.x0, r.y0, r.x0 + t, r.y1), c);
        self.fill_rect(Rect::new(r.x1 - t, r.y0, r.x1, r.y1), c);
    }

    fn blend_px_raw(&mut self, x: i32, y: i32, c: Rgba, a: u32) {
        if !self.clip.contains(x, y) || a == 0 {
            return;
        }
        let off = (y as usize * self.w as usize + x as usize) * 4;
        let p = &mut self.px[off..off + 4];
        p[0] = blend(p[0], c[0], a);
        p[1] = blend(p[1], c[1], a);
        p[2] = blend(p[2], c[2], a);
    }

    fn glyph(&mut self, id: GlyphId, size: u32) -> Option<Arc<GlyphBitmap>> {
        if let Some(g) = self.cache.map.get(&(id.0, size)) {
            return g.clone();
        }
        let glyph =
            id.with_scale_and_position(PxScale::from(size as f32), ab_glyph::point(0.0, 0.0));
        let bm = self.font.font.outline_glyph(glyph).map(|o| {
            let b = o.px_bounds();
            let w = b.width().max(0.0) as usize;
            let h = b.height().max(0.0) as usize;
            let mut cov = vec![0u8; w * h];
            o.draw(|x, y, c| {
                let (x, y) = (x as usize, y as usize);
                if x < w && y < h {
                    cov[y * w + x] = (c.clamp(0.0, 1.0) * 255.0).round() as u8;
                }
            });
            Arc::new(GlyphBitmap {
                w,
                h,
                left: b.min.x as i32,
                top: b.min.y as i32,
                cov,
            })
        });
        self.cache.map.insert((id.0, size), bm.clone());
        bm
    }

    /// Advance widths of each char of `text` at `size` px.
    pub(crate) fn advances(&self, text: &str, size: u32) -> Vec<(char, f32)> {
        let scaled = self.font.font.as_scaled(PxScale::from(size as f32));
        text.chars()
            .map(|ch| {
                let id = self.font.font.glyph_id(ch);
                let adv = if id.0 == 0 && !ch.is_whitespace() {
                    size as f32 * 0.9
                } else {
                    scaled.h_advance(id)
                };
                (ch, adv)
            })
            .collect()
    }

    /// Width of `text` in px.
    pub(crate) fn text_width(&self, text: &str, size: u32) -> i32 {
        self.advances(text, size)
            .iter()
            .map(|(_, a)| a)
            .sum::<f32>()
            .round() as i32
    }

    /// Draw one line with its baseline at `base_y`, starting at `x`.
    fn draw_line(&mut self, text: &str, x: i32, base_y: i32, size: u32, c: Rgba) {
        let adv = self.advances(text, size);
        let mut pen = x as f32;
        for (ch, a) in adv {
            let id = self.font.font.glyph_id(ch);
            let gx = pen.round() as i32;
            if id.0 == 0 && !ch.is_whitespace() {
                // No glyph (e.g. emoji in a CJK font): draw a visible "tofu" box.
                let s = size as i32;
                let r = Rect::new(gx + s / 10, base_y - s * 3 / 4, gx + s * 8 / 10, base_y);
                let t = (s / 14).max(1);
                self.stroke_rect(r, t, c);
            } else if let Some(g) = self.glyph(id, size) {
                self.blit(&g, gx + g.left, base_y + g.top, c);
            }
            pen += a;
        }
    }

    /// Blend a glyph's coverage at (ox, oy) in colour `c` (hot path: written to stay fast in
    /// unoptimized builds).
    fn blit(&mut self, g: &GlyphBitmap, ox: i32, oy: i32, c: Rgba) {
        let c = self.col(c);
        let (c0, c1, c2) = (u32::from(c[0]), u32::from(c[1]), u32::from(c[2]));
        let ca = u32::from(c[3]);
        let x_start = ox.max(self.clip.x0);
        let x_end = (ox + g.w as i32).min(self.clip.x1);
        if x_start >= x_end {
            return;
        }
        let stride = self.w as usize * 4;
        for gy in 0..g.h {
            let py = oy + gy as i32;
            if py < self.clip.y0 || py >= self.clip.y1 {
                continue;
            }
            let cov_row =
                &g.cov[gy * g.w + (x_start - ox) as usize..gy * g.w + (x_end - ox) as usize];
            let off = py as usize * stride;
            let dst = &mut self.px[off + x_start as usize * 4..off + x_end as usize * 4];
            for (d, &cv) in dst.chunks_exact_mut(4).zip(cov_row) {
                if cv == 0 {
                    continue;
                }
                let a = u32::from(cv) * ca / 255;
                if a >= 255 {
                    d[0] = c[0];
                    d[1] = c[1];
                    d[2] = c[2];
                } else {
                    let inv = 255 - a;
                    d[0] = ((c0 * a + u32::from(d[0]) * inv + 127) / 255) as u8;
                    d[1] = ((c1 * a + u32::from(d[1]) * inv + 127) / 255) as u8;
                    d[2] = ((c2 * a + u32::from(d[2]) * inv + 127) / 255) as u8;
                }
            }
        }
    }

    fn metrics(&self, size: u32) -> (f32, f32) {
        let scaled = self.font.font.as_scaled(PxScale::from(size as f32));
        (scaled.ascent(), scaled.descent())
    }

    /// One line of text, vertically centred in `r`, aligned horizontally, cut with "…" when it
    /// does not fit.
    pub(crate) fn text(&mut self, r: Rect, text: &str, size: u32, c: Rgba, align: Align) {
        let mut t = text.to_owned();
        if self.text_width(&t, size) > r.w() {
            let mut chars: Vec<char> = t.chars().collect();
            while !chars.is_empty() {
                chars.pop();
                let cand: String = chars.iter().collect::<String>() + "…";
                if self.text_width(&cand, size) <= r.w() {
                    break;
                }
            }
            t = chars.iter().collect::<String>() + "…";
        }
        let w = self.text_width(&t, size);
        let x = match align {
            Align::Left => r.x0,
            Align::Center => r.x0 + (r.w() - w) / 2,
            Align::Right => r.x1 - w,
        };
        let (asc, desc) = self.metrics(size);
        let base = r.cy() as f32 + (asc + desc) / 2.0;
        self.draw_line(&t, x, base.round() as i32, size, c);
    }

    /// Split `text` into lines no wider than `width` px (explicit `\n` respected; Latin words
    /// kept whole when possible, CJK broken anywhere).
    pub(crate) fn wrap(&self, text: &str, size: u32, width: i32) -> Vec<String> {
        let mut lines = Vec::new();
        for para in text.split('\n') {
            let adv = self.advances(para, size);
            let mut line = String::new();
            let mut lw = 0.0f32;
            let mut last_space: Option<usize> = None; // byte index in `line`
            for (ch, a) in adv {
                if lw + a > width as f32 && !line.is_empty() {
                    if let Some(sp) = last_space
                        .filter(|_| ch.is_ascii_alphanumeric() || ch.is_ascii_punctuation())
                    {
                        let rest = line[sp + 1..].to_owned();
                        line.truncate(sp);
                        lines.push(std::mem::take(&mut line));
                        line = rest;
                        lw = self.advances(&line, size).iter().map(|(_, a)| a).sum();
                    } else {
                        lines.push(std::mem::take(&mut line));
                        lw = 0.0;
                    }
                    last_space = None;
                    if ch.is_whitespace() {
                        continue;
                    }
                }
                if ch == ' ' {
                    last_space = Some(line.len());
                }
                line.push(ch);
                lw += a;
            }
            lines.push(line);
        }
        lines
    }

    /// Wrapped paragraph starting at the top of `r`; returns the height used.
    pub(crate) fn paragraph(
        &mut self,
        r: Rect,
        text: &str,
        size: u32,
        c: Rgba,
        line_h: i32,
    ) -> i32 {
        let lines = self.wrap(text, size, r.w());
        let (asc, _) = self.metrics(size);
        let mut y = r.y0;
        for l in &lines {
            let base = y + ((line_h as f32 - size as f32) / 2.0 + asc).round() as i32;
            self.draw_line(l, r.x0, base, size, c);
            y += line_h;
        }
        y - r.y0
    }
}

fn blend(dst: u8, src: u8, a: u32) -> u8 {
    let a = a.min(255);
    ((u32::from(src) * a + u32::from(dst) * (255 - a) + 127) / 255) as u8
}

/// Encode RGBA8 pixels as PNG with fast compression.
pub(crate) fn encode_png(w: u32, h: u32, rgba: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(rgba.len() / 8);
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        // Fast (fdeflate) + Sub measured best for these flat UI frames (see benches/render.rs).
        enc.set_compression(png::Compression::Fast);
        enc.set_filter(png::Filter::Sub);
        let mut wr = enc
            .write_header()
            .map_err(|e| SimError::Png(e.to_string()))?;
        wr.write_image_data(rgba)
            .map_err(|e| SimError::Png(e.to_string()))?;
        wr.finish().map_err(|e| SimError::Png(e.to_string()))?;
    }
    Ok(out)
}
