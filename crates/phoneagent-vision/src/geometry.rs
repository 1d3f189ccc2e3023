//! Pixel geometry without OCR: colours, the uniform region under a point (flood fill), ink
//! items (connected components merged into text lines), dialog cards over a dimmed screen.
//!
//! Everything works on a sampling grid of `step` px (2 px on a 1080 px wide frame) so a full
//! 1080×2400 frame costs a few ms; boxes are returned in device px of the frame.
//!
//! Size: about 700 lines of code, then its unit tests: flood fill, connected components and
//! dialog cards share the sampling grid and its colour helpers.

use std::collections::{HashMap, VecDeque};

use image::RgbaImage;
use phoneagent_protocol::PxRect;

/// An RGB colour.
pub type Rgb = [u8; 3];

/// Two colours closer than this (max channel difference) are "the same background": tight
/// enough to tell a white card (255) from the usual light-grey page (245).
pub const BG_TOL: u8 = 6;
/// A pixel further than this from its background is ink (text, icon strokes, controls).
pub const INK_TOL: u8 = 40;

/// The pixel at `(x, y)` (clamped to the frame).
pub fn rgb(img: &RgbaImage, x: u32, y: u32) -> Rgb {
    let x = x.min(img.width().saturating_sub(1));
    let y = y.min(img.height().saturating_sub(1));
    let p = img.get_pixel(x, y).0;
    [p[0], p[1], p[2]]
}

/// Max channel difference of two colours (0..=255).
pub fn color_dist(a: Rgb, b: Rgb) -> u8 {
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| x.abs_diff(*y))
        .max()
        .unwrap_or(0)
}

/// Luma (Rec. 601), 0..=255.
pub fn luma(c: Rgb) -> f32 {
    0.299 * f32::from(c[0]) + 0.587 * f32::from(c[1]) + 0.114 * f32::from(c[2])
}

/// Hue in degrees (0..360), saturation and value (0..=1) of a colour.
pub fn hsv(c: Rgb) -> (f32, f32, f32) {
    let [r, g, b] = c.map(|v| f32::from(v) / 255.0);
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let d = max - min;
    let s = if max > 0.0 { d / max } else { 0.0 };
    let h = if d == 0.0 {
        0.0
    } else if max == r {
        60.0 * (((g - b) / d).rem_euclid(6.0))
    } else if max == g {
        60.0 * ((b - r) / d + 2.0)
    } else {
        60.0 * ((r - g) / d + 4.0)
    };
    (h, s, max)
}

/// A saturated colour (a filled call-to-action button, coloured text).
pub fn is_saturated(c: Rgb) -> bool {
    let (_, s, v) = hsv(c);
    s >= 0.45 && v >= 0.35
}

/// A red, destructive colour (hue within 12° of red, saturated; orange is not red).
pub fn is_red(c: Rgb) -> bool {
    let (h, s, v) = hsv(c);
    s >= 0.45 && v >= 0.35 && !(12.0..=345.0).contains(&h)
}

/// The sampling step for a frame: 1 px up to 600 px short side, 2 px at 1080, 3 px at 1440+.
pub fn grid_step(img: &RgbaImage) -> u32 {
    (img.width().min(img.height()) / 540).clamp(1, 3)
}

/// `r` clamped to the frame.
pub fn clamp_rect(img: &RgbaImage, r: PxRect) -> PxRect {
    PxRect {
        left: r.left.min(img.width()),
        top: r.top.min(img.height()),
        right: r.right.min(img.width()).max(r.left.min(img.width())),
        bottom: r.bottom.min(img.height()).max(r.top.min(img.height())),
    }
}

/// A box around `(x, y)` of half-width `hw` and half-height `hh`, clamped to the frame.
pub fn rect_around(img: &RgbaImage, (x, y): (u32, u32), hw: u32, hh: u32) -> PxRect {
    clamp_rect(
        img,
        PxRect {
            left: x.saturating_sub(hw),
            top: y.saturating_sub(hh),
            right: x.saturating_add(hw),
            bottom: y.saturating_add(hh),
        },
    )
}

/// The union of two boxes.
pub fn union(a: PxRect, b: PxRect) -> PxRect {
    PxRect {
        left: a.left.min(b.left),
        top: a.top.min(b.top),
        right: a.right.max(b.right),
        bottom: a.bottom.max(b.bottom),
    }
}

/// Area of the overlap of two boxes, px².
pub fn overlap_area(a: PxRect, b: PxRect) -> u64 {
    let w = a.right.min(b.right).saturating_sub(a.left.max(b.left));
    let h = a.bottom.min(b.bottom).saturating_sub(a.top.max(b.top));
    u64::from(w) * u64::from(h)
}

/// Distance in px from a point to a box (0 inside).
pub fn dist_to_rect(r: PxRect, (x, y): (u32, u32)) -> u32 {
    let dx = if x < r.left {
        r.left - x
    } else if x >= r.right {
        x + 1 - r.right
    } else {
        0
    };
    let dy = if y < r.top {
        r.top - y
    } else if y >= r.bottom {
        y + 1 - r.bottom
    } else {
        0
    };
    dx.max(dy)
}

/// The most frequent colour inside `r` (sampled every `step` px, colours quantized to 5 bits
/// per channel; the bin's mean is returned). Black for an empty box.
pub fn dominant_color(img: &RgbaImage, r: PxRect, step: u32) -> Rgb {
    let r = clamp_rect(img, r);
    let step = step.max(1);
    let mut bins: HashMap<u16, (u32, [u32; 3])> = HashMap::new();
    let mut y = r.top;
    while y < r.bottom {
        let mut x = r.left;
        while x < r.right {
            let c = rgb(img, x, y);
            let key =
                (u16::from(c[0] >> 3) << 10) | (u16::from(c[1] >> 3) << 5) | u16::from(c[2] >> 3);
            let e = bins.entry(key).or_insert((0, [0; 3]));
            e.0 += 1;
            for (sum, v) in e.1.iter_mut().zip(c) {
                *sum += u32::from(v);
            }
            x += step;
        }
        y += step;
    }
    bins.values()
        .max_by_key(|(n, _)| *n)
        .map_or([0, 0, 0], |(n, s)| {
            [(s[0] / n) as u8, (s[1] / n) as u8, (s[2] / n) as u8]
        })
}

/// A region of uniform colour found by flood fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Its bounding box, px.
    pub bounds: PxRect,
    /// Its colour (the seed's).
    pub color: Rgb,
    /// Grid cells filled.
    pub cells: u32,
}

/// The background colour around `p` (dominant colour of a window of half-size `radius` px)
/// and the grid points of that colour in the window, nearest to `p` first (seed candidates
/// for [`flood_region`]; grid-aligned to `step`).
pub fn background_at(
    img: &RgbaImage,
    p: (u32, u32),
    radius: u32,
    step: u32,
) -> (Rgb, Vec<(u32, u32)>) {
    let step = step.max(1);
    let win = rect_around(img, p, radius, radius);
    let bg = dominant_color(img, win, step);
    let mut seeds = Vec::new();
    let mut y = win.top.div_ceil(step) * step;
    while y < win.bottom {
        let mut x = win.left.div_ceil(step) * step;
        while x < win.right {
            if color_dist(rgb(img, x, y), bg) <= BG_TOL {
                seeds.push((x, y));
            }
            x += step;
        }
        y += step;
    }
    seeds.sort_by_key(|(x, y)| {
        u64::from(x.abs_diff(p.0)).pow(2) + u64::from(y.abs_diff(p.1)).pow(2)
    });
    (bg, seeds)
}

/// The region of colour `bg` the point sits on: flood fill from the nearest seed, skipping
/// seeds that only fill a glyph's counter (the hole of "e", "口"): a region under
/// `min_cells` grid cells is retried from the next seed outside it (at most 6 tries); the
/// largest region found is returned.
pub fn region_at(
    img: &RgbaImage,
    seeds: &[(u32, u32)],
    bg: Rgb,
    step: u32,
    min_cells: u32,
) -> Option<Region> {
    let full = PxRect {
        left: 0,
        top: 0,
        right: img.width(),
        bottom: img.height(),
    };
    let mut best: Option<Region> = None;
    let mut tried: Vec<PxRect> = Vec::new();
    for &s in seeds {
        if tried.len() >= 6 {
            break;
        }
        if tried.iter().any(|r| r.contains(s.0, s.1)) {
            continue;
        }
        let reg = flood_region(img, s, bg, step, full);
        if reg.cells == 0 {
            continue;
        }
        tried.push(reg.bounds);
        if best.is_none_or(|b| reg.cells > b.cells) {
            best = Some(reg);
        }
        if reg.cells >= min_cells {
            break;
        }
    }
    best
}

/// Flood fill from `seed` over grid cells whose colour is within [`BG_TOL`] of `color`,
/// limited to `limit`. Returns the filled region's box (px) and size.
pub fn flood_region(
    img: &RgbaImage,
    seed: (u32, u32),
    color: Rgb,
    step: u32,
    limit: PxRect,
) -> Region {
    let limit = clamp_rect(img, limit);
    let step = step.max(1);
    let gx0 = limit.left / step;
    let gy0 = limit.top / step;
    let gw = limit.right.div_ceil(step).saturating_sub(gx0) as usize;
    let gh = limit.bottom.div_ceil(step).saturating_sub(gy0) as usize;
    let empty = Region {
        bounds: PxRect {
            left: seed.0,
            top: seed.1,
            right: seed.0 + 1,
            bottom: seed.1 + 1,
        },
        color,
        cells: 0,
    };
    if gw == 0 || gh == 0 || !limit.contains(seed.0, seed.1) {
        return empty;
    }
    let idx = |gx: usize, gy: usize| gy * gw + gx;
    let at = |gx: usize, gy: usize| {
        rgb(
            img,
            (gx0 as usize + gx) as u32 * step,
            (gy0 as usize + gy) as u32 * step,
        )
    };
    let sx = (seed.0 / step - gx0) as usize;
    let sy = (seed.1 / step - gy0) as usize;
    if sx >= gw || sy >= gh || color_dist(at(sx, sy), color) > BG_TOL {
        return empty;
    }
    let mut seen = vec![false; gw * gh];
    let mut q = VecDeque::new();
    seen[idx(sx, sy)] = true;
    q.push_back((sx, sy));
    let (mut x0, mut y0, mut x1, mut y1) = (sx, sy, sx, sy);
    let mut cells = 0u32;
    while let Some((x, y)) = q.pop_front() {
        cells += 1;
        x0 = x0.min(x);
        y0 = y0.min(y);
        x1 = x1.max(x);
        y1 = y1.max(y);
        let mut push = |nx: usize, ny: usize| {
            let i = idx(nx, ny);
            if !seen[i] {
                seen[i] = true;
                if color_dist(at(nx, ny), color) <= BG_TOL {
                    q.push_back((nx, ny));
                }
            }
        };
        if x > 0 {
            push(x - 1, y);
        }
        if x + 1 < gw {
            push(x + 1, y);
        }
        if y > 0 {
            push(x, y - 1);
        }
        if y + 1 < gh {
            push(x, y + 1);
        }
    }
    let to_px = |g: usize, g0: u32| (g as u32 + g0) * step;
    Region {
        bounds: clamp_rect(
            img,
            PxRect {
                left: to_px(x0, gx0),
                top: to_px(y0, gy0),
                right: to_px(x1 + 1, gx0),
                bottom: to_px(y1 + 1, gy0),
            },
        ),
        color,
        cells,
    }
}

/// Something drawn on a background: a text line, an icon, a filled control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    /// Its box, px.
    pub bounds: PxRect,
    /// Ink cells (grid cells that differ from the background).
    pub ink: u32,
    /// Grid cells of its box.
    pub area: u32,
    /// The colour of its ink furthest from the background (the text or fill colour).
    pub ink_color: Rgb,
    /// How far that colour is from the background.
    ink_dist: u8,
}

impl Item {
    /// Ink cells per box cell (0..=1).
    pub fn density(&self) -> f32 {
        self.ink as f32 / self.area.max(1) as f32
    }

    /// A solid shape (a filled button, a thumbnail, a switch track) rather than glyph strokes:
    /// at least 24 px on both sides and denser than glyphs get (> 0.85), or > 0.6 dense and
    /// taller and wider than body text (≥ 64 px).
    pub fn is_solid(&self) -> bool {
        let (w, h) = (self.bounds.width(), self.bounds.height());
        let d = self.density();
        (d > 0.85 && w >= 24 && h >= 24) || (d > 0.6 && w >= 64 && h >= 64)
    }

    /// A text caret or a thin accent bar: ≤ 6 px wide, ≥ 6× as tall, in a saturated colour.
    pub fn is_caret(&self) -> bool {
        let (w, h) = (self.bounds.width(), self.bounds.height());
        w <= 6 && h >= 6 * w.max(1) && is_saturated(self.ink_color)
    }

    fn merge(&mut self, o: &Item, step: u32) {
        self.bounds = union(self.bounds, o.bounds);
        self.ink += o.ink;
        self.area = cells_of(self.bounds, step);
        if o.ink_dist > self.ink_dist {
            self.ink_color = o.ink_color;
            self.ink_dist = o.ink_dist;
        }
    }
}

fn cells_of(r: PxRect, step: u32) -> u32 {
    (r.width().div_ceil(step) * r.height().div_ceil(step)).max(1)
}

/// The ink items inside `r` on background `bg`: connected ink components (8-connected on the
/// grid) merged into text lines (see [`merge_lines`]). With `drop_border`, components that
/// touch `r`'s edge (rounded corners, neighbours' edges, dividers) are dropped. Sorted top to
/// bottom, then left to right.
pub fn find_items(img: &RgbaImage, r: PxRect, bg: Rgb, step: u32, drop_border: bool) -> Vec<Item> {
    let r = clamp_rect(img, r);
    let step = step.max(1);
    let gw = r.width().div_ceil(step) as usize;
    let gh = r.height().div_ceil(step) as usize;
    if gw == 0 || gh == 0 {
        return Vec::new();
    }
    let mut ink = vec![0u8; gw * gh];
    for gy in 0..gh {
        for gx in 0..gw {
            let c = rgb(img, r.left + gx as u32 * step, r.top + gy as u32 * step);
            let d = color_dist(c, bg);
            if d > INK_TOL {
                ink[gy * gw + gx] = d;
            }
        }
    }
    if !is_saturated(bg) {
        clear_carets(img, r, step, gw, gh, &mut ink);
    }
    let mut seen = vec![false; gw * gh];
    let mut comps = Vec::new();
    let mut q = VecDeque::new();
    for start in 0..gw * gh {
        if ink[start] == 0 || seen[start] {
            continue;
        }
        seen[start] = true;
        q.push_back(start);
        let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
        let mut n = 0u32;
        let mut best = (0u8, 0usize);
        while let Some(i) = q.pop_front() {
            let (x, y) = (i % gw, i / gw);
            n += 1;
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
            if ink[i] > best.0 {
                best = (ink[i], i);
            }
            for dy in -1i32..=1 {
                for dx in -1i32..=1 {
                    let (nx, ny) = (x as i32 + dx, y as i32 + dy);
                    if nx < 0 || ny < 0 || nx >= gw as i32 || ny >= gh as i32 {
                        continue;
                    }
                    let j = ny as usize * gw + nx as usize;
                    if ink[j] != 0 && !seen[j] {
                        seen[j] = true;
                        q.push_back(j);
                    }
                }
            }
        }
        let touches = x0 == 0 || y0 == 0 || x1 + 1 == gw || y1 + 1 == gh;
        if (drop_border && touches) || n < 2 {
            continue;
        }
        let bounds = PxRect {
            left: r.left + x0 as u32 * step,
            top: r.top + y0 as u32 * step,
            right: (r.left + (x1 as u32 + 1) * step).min(r.right),
            bottom: (r.top + (y1 as u32 + 1) * step).min(r.bottom),
        };
        let (bx, by) = (best.1 % gw, best.1 / gw);
        comps.push(Item {
            bounds,
            ink: n,
            area: cells_of(bounds, step),
            ink_color: rgb(img, r.left + bx as u32 * step, r.top + by as u32 * step),
            ink_dist: best.0,
        });
    }
    comps.retain(|c| !c.is_caret());
    let mut items = merge_lines(comps, step);
    // Specks inside a solid shape (anti-aliased edges of its label) belong to it.
    let solids: Vec<PxRect> = items
        .iter()
        .filter(|i| i.is_solid())
        .map(|i| i.bounds)
        .collect();
    items.retain(|i| {
        i.is_solid()
            || !solids.iter().any(|s| {
                s.left <= i.bounds.left
                    && s.top <= i.bounds.top
                    && s.right >= i.bounds.right
                    && s.bottom >= i.bounds.bottom
            })
    });
    items.sort_by_key(|i| (i.bounds.top, i.bounds.left));
    items
}

/// Clear text carets (and thin accent bars) from the ink mask: runs of saturated ink at most
/// 6 px wide and at least 24 px tall. A caret drawn against a hint's first glyph would
/// otherwise join it and spoil the reading.
fn clear_carets(img: &RgbaImage, r: PxRect, step: u32, gw: usize, gh: usize, ink: &mut [u8]) {
    let sat: Vec<bool> = (0..gw * gh)
        .map(|i| {
            ink[i] != 0
                && is_saturated(rgb(
                    img,
                    r.left + (i % gw) as u32 * step,
                    r.top + (i / gw) as u32 * step,
                ))
        })
        .collect();
    if !sat.iter().any(|s| *s) {
        return;
    }
    let max_w = (6 / step).max(1) as usize;
    let min_h = (24 / step).max(3) as usize;
    for gx in 0..gw {
        let mut gy = 0;
        while gy < gh {
            if !sat[gy * gw + gx] {
                gy += 1;
                continue;
            }
            let start = gy;
            while gy < gh && sat[gy * gw + gx] {
                gy += 1;
            }
            if gy - start < min_h {
                continue;
            }
            for y in start..gy {
                // Horizontal extent of saturated ink through this cell.
                let row = y * gw;
                let mut l = gx;
                while l > 0 && sat[row + l - 1] {
                    l -= 1;
                }
                let mut rr = gx;
                while rr + 1 < gw && sat[row + rr + 1] {
                    rr += 1;
                }
                if rr - l < max_w {
                    ink[row + gx] = 0;
                }
            }
        }
    }
}

/// Merge glyph components into text lines: two items merge when they sit on one line
/// (vertical overlap ≥ half the smaller height) with a gap of at most 0.9 × the taller height,
/// or when they are stacked parts of one glyph (horizontal overlap ≥ half the narrower width,
/// gap ≤ 0.25 × the taller height, together no taller than 1.5 × the taller). Solid shapes
/// never merge with anything.
pub fn merge_lines(mut items: Vec<Item>, step: u32) -> Vec<Item> {
    // Passes until nothing merges; an item that grew is compared with the rest again.
    // O(n²) per pass, a few passes: a full frame's few hundred components cost < 1 ms.
    loop {
        let mut merged = false;
        let mut i = 0;
        while i < items.len() {
            let mut j = i + 1;
            while j < items.len() {
                if should_merge(&items[i], &items[j]) {
                    let o = items.swap_remove(j);
                    items[i].merge(&o, step);
                    merged = true;
                    j = i + 1;
                } else {
                    j += 1;
                }
            }
            i += 1;
        }
        if !merged {
            return items;
        }
    }
}

fn should_merge(a: &Item, b: &Item) -> bool {
    if a.is_solid() || b.is_solid() {
        return false;
    }
    let (ra, rb) = (a.bounds, b.bounds);
    let (ha, hb) = (ra.height(), rb.height());
    let (hmin, hmax) = (ha.min(hb), ha.max(hb));
    let v_overlap = ra.bottom.min(rb.bottom).saturating_sub(ra.top.max(rb.top));
    let h_gap = rb
        .left
        .saturating_sub(ra.right)
        .max(ra.left.saturating_sub(rb.right));
    if v_overlap * 2 >= hmin && h_gap * 10 <= hmax * 9 {
        return true;
    }
    let (wa, wb) = (ra.width(), rb.width());
    let h_overlap = ra.right.min(rb.right).saturating_sub(ra.left.max(rb.left));
    let v_gap = rb
        .top
        .saturating_sub(ra.bottom)
        .max(ra.top.saturating_sub(rb.bottom));
    let joined = ra.bottom.max(rb.bottom) - ra.top.min(rb.top);
    h_overlap * 2 >= wa.min(wb) && v_gap * 4 <= hmax && joined * 2 <= hmax * 3
}

/// Whether the region `card` (colour `card_color`) is a modal card over a dimmed screen: every
/// side of it that has room outside (≥ 8 px) is clearly darker than the card (luma ≤ 0.7 × the
/// card's and at least 20 lower), and at least one side has room.
pub fn is_card_over_dim(img: &RgbaImage, card: PxRect, card_color: Rgb) -> bool {
    let (w, h) = (img.width(), img.height());
    if card.width() >= w && card.height() >= h {
        return false;
    }
    let card_l = luma(card_color);
    let band = 6u32;
    let gap = 4u32;
    let mut sides = 0;
    let mut check = |r: PxRect| -> bool {
        let r = clamp_rect(img, r);
        if r.width() == 0 || r.height() == 0 {
            return true;
        }
        sides += 1;
        let c = dominant_color(img, r, 2);
        let l = luma(c);
        l <= card_l * 0.7 && l + 20.0 <= card_l
    };
    let mid_x = card.left + card.width() / 4;
    let mid_w = card.width() / 2;
    let mid_y = card.top + card.height() / 4;
    let mid_h = card.height() / 2;
    let mut ok = true;
    if card.top >= band + gap + 4 {
        ok &= check(PxRect {
            left: mid_x,
            top: card.top - gap - band,
            right: mid_x + mid_w,
            bottom: card.top - gap,
        });
    }
    if card.bottom + band + gap + 4 <= h {
        ok &= check(PxRect {
            left: mid_x,
            top: card.bottom + gap,
            right: mid_x + mid_w,
            bottom: card.bottom + gap + band,
        });
    }
    if card.left >= band + gap + 4 {
        ok &= check(PxRect {
            left: card.left - gap - band,
            top: mid_y,
            right: card.left - gap,
            bottom: mid_y + mid_h,
        });
    }
    if card.right + band + gap + 4 <= w {
        ok &= check(PxRect {
            left: card.right + gap,
            top: mid_y,
            right: card.right + gap + band,
            bottom: mid_y + mid_h,
        });
    }
    ok && sides > 0
}

/// The colour just outside `r` (dominant colour of a thin ring around it) and a point of it.
pub fn parent_background(img: &RgbaImage, r: PxRect, step: u32) -> Option<(Rgb, (u32, u32))> {
    let ring = 6u32;
    let outer = clamp_rect(
        img,
        PxRect {
            left: r.left.saturating_sub(ring),
            top: r.top.saturating_sub(ring),
            right: r.right + ring,
            bottom: r.bottom + ring,
        },
    );
    let mut bins: HashMap<u16, (u32, (u32, u32), Rgb)> = HashMap::new();
    let mut y = outer.top;
    while y < outer.bottom {
        let mut x = outer.left;
        while x < outer.right {
            let inside = x >= r.left && x < r.right && y >= r.top && y < r.bottom;
            if !inside {
                let c = rgb(img, x, y);
                let key = (u16::from(c[0] >> 3) << 10)
                    | (u16::from(c[1] >> 3) << 5)
                    | u16::from(c[2] >> 3);
                let e = bins.entry(key).or_insert((0, (x, y), c));
                e.0 += 1;
            }
            x += step;
        }
        y += step;
    }
    bins.values()
        .max_by_key(|(n, _, _)| *n)
        .map(|(_, p, c)| (*c, *p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::Rgba;

    fn canvas(w: u32, h: u32, c: Rgb) -> RgbaImage {
        RgbaImage::from_pixel(w, h, Rgba([c[0], c[1], c[2], 255]))
    }

    fn fill(img: &mut RgbaImage, r: PxRect, c: Rgb) {
        for y in r.top..r.bottom {
            for x in r.left..r.right {
                img.put_pixel(x, y, Rgba([c[0], c[1], c[2], 255]));
            }
        }
    }

    fn rect(left: u32, top: u32, right: u32, bottom: u32) -> PxRect {
        PxRect {
            left,
            top,
            right,
            bottom,
        }
    }

    /// Fake glyphs: `n` small dark squares in a row.
    fn glyphs(img: &mut RgbaImage, x: u32, y: u32, n: u32, size: u32, c: Rgb) {
        for i in 0..n {
            let gx = x + i * (size + size / 5);
            fill(img, rect(gx, y, gx + size * 3 / 4, y + size / 3), c);
            fill(
                img,
                rect(gx, y + size * 2 / 3, gx + size * 3 / 4, y + size),
                c,
            );
            fill(img, rect(gx + size / 3, y, gx + size / 3 + 4, y + size), c);
        }
    }

    #[test]
    fn flood_finds_the_button_box_around_its_label() {
        let mut img = canvas(540, 1200, [245, 246, 248]);
        let button = rect(100, 900, 440, 980);
        fill(&mut img, button, [255, 80, 0]);
        glyphs(&mut img, 200, 925, 4, 30, [255, 255, 255]);
        let step = grid_step(&img);
        // The point is on a glyph: the background search finds the button colour anyway.
        let (bg, seeds) = background_at(&img, (210, 930), 24, step);
        assert_eq!(bg, [255, 80, 0]);
        let reg = region_at(&img, &seeds, bg, step, 64).unwrap();
        assert_eq!(reg.bounds, button);
        let items = find_items(&img, reg.bounds, bg, step, true);
        assert_eq!(items.len(), 1, "{items:?}");
        assert!(items[0].bounds.contains(210, 930));
        assert_eq!(items[0].ink_color, [255, 255, 255]);
        assert!(is_saturated(bg) && !is_red(bg));
    }

    #[test]
    fn a_seed_in_a_glyph_counter_is_skipped_for_the_region_around_the_glyph() {
        let mut img = canvas(540, 400, [255, 255, 255]);
        // A ring glyph ("o") whose white counter is nearest to the point.
        fill(&mut img, rect(200, 200, 240, 240), [20, 20, 20]);
        fill(&mut img, rect(217, 217, 223, 223), [255, 255, 255]);
        let (bg, seeds) = background_at(&img, (220, 220), 30, 1);
        assert_eq!(seeds[0], (220, 220), "the counter is the nearest seed");
        let reg = region_at(&img, &seeds, bg, 1, 64).unwrap();
        assert_eq!(reg.bounds, rect(0, 0, 540, 400));
    }

    #[test]
    fn words_far_apart_stay_separate_and_solid_shapes_never_merge() {
        let mut img = canvas(540, 200, [255, 255, 255]);
        glyphs(&mut img, 20, 80, 2, 30, [31, 31, 31]); // "←"-like item at the left
        glyphs(&mut img, 200, 80, 3, 30, [31, 31, 31]); // title in the middle
        fill(&mut img, rect(420, 70, 520, 120), [22, 119, 255]); // a filled chip
        let items = find_items(&img, rect(0, 0, 540, 200), [255, 255, 255], 1, false);
        assert_eq!(items.len(), 3, "{items:?}");
        assert!(items.iter().any(|i| i.is_solid()));
        assert_eq!(items.iter().filter(|i| !i.is_solid()).count(), 2);
    }

    #[test]
    fn two_text_lines_stay_two_lines() {
        let mut img = canvas(400, 200, [255, 255, 255]);
        glyphs(&mut img, 20, 20, 6, 30, [31, 31, 31]);
        glyphs(&mut img, 20, 65, 6, 30, [31, 31, 31]);
        let items = find_items(&img, rect(0, 0, 400, 200), [255, 255, 255], 1, false);
        assert_eq!(items.len(), 2, "{items:?}");
        assert!(items[0].bounds.bottom <= items[1].bounds.top);
    }

    #[test]
    fn a_card_over_a_dimmed_screen_is_a_dialog_and_a_card_on_a_page_is_not() {
        // Dimmed page with a white card.
        let mut img = canvas(540, 1200, [122, 123, 124]);
        let card = rect(40, 450, 500, 730);
        fill(&mut img, card, [255, 255, 255]);
        assert!(is_card_over_dim(&img, card, [255, 255, 255]));
        // The same card on a light page.
        let mut page = canvas(540, 1200, [245, 246, 248]);
        fill(&mut page, card, [255, 255, 255]);
        assert!(!is_card_over_dim(&page, card, [255, 255, 255]));
        // A bottom sheet (full width, to the bottom) over a dimmed page.
        let mut sheet = canvas(540, 1200, [122, 123, 124]);
        let s = rect(0, 800, 540, 1200);
        fill(&mut sheet, s, [255, 255, 255]);
        assert!(is_card_over_dim(&sheet, s, [255, 255, 255]));
        // Dark mode: a dark grey card over a darker scrim.
        let mut dark = canvas(540, 1200, [12, 12, 14]);
        fill(&mut dark, card, [44, 44, 48]);
        assert!(is_card_over_dim(&dark, card, [44, 44, 48]));
    }

    #[test]
    fn parent_background_of_a_button_in_a_card_is_the_card() {
        let mut img = canvas(540, 1200, [122, 123, 124]);
        let card = rect(40, 450, 500, 730);
        fill(&mut img, card, [255, 255, 255]);
        let b = rect(280, 640, 480, 710);
        fill(&mut img, b, [230, 40, 40]);
        let (c, p) = parent_background(&img, b, 2).unwrap();
        assert_eq!(c, [255, 255, 255]);
        let reg = flood_region(&img, p, c, 2, rect(0, 0, 540, 1200));
        assert_eq!(reg.bounds, card);
        assert!(is_red([230, 40, 40]));
    }

    #[test]
    fn colour_helpers() {
        assert_eq!(color_dist([10, 20, 30], [15, 10, 30]), 10);
        assert!(is_red([230, 40, 40]) && !is_red([22, 119, 255]));
        assert!(!is_saturated([245, 246, 248]));
        assert_eq!(dist_to_rect(rect(10, 10, 20, 20), (15, 15)), 0);
        assert_eq!(dist_to_rect(rect(10, 10, 20, 20), (25, 15)), 6);
    }
}
