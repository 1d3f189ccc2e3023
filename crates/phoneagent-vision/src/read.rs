//! Building a [`ScreenReading`] from the pixels: which boxes to read (target, dialog, top bar,
//! row, field label) and in what order, with the OCR call passed in as a closure so the
//! layout logic is the same for every engine.

use image::RgbaImage;
use phoneagent_protocol::{DialogReading, PxRect, ScreenReading, TargetStyle};

use crate::ReadPurpose;
use crate::geometry::{
    Item, Region, Rgb, background_at, clamp_rect, dist_to_rect, dominant_color, find_items,
    flood_region, grid_step, is_card_over_dim, is_red, is_saturated, overlap_area,
    parent_background, rect_around, region_at,
};

/// Reads the text in box `r` drawn on background `bg` (px of the frame); `None` when nothing
/// readable is there.
pub(crate) type LineReader<'a> = dyn FnMut(PxRect, Rgb) -> Option<String> + 'a;

/// Limits of one reading.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_screen_lines: usize,
    pub max_row: usize,
}

/// At most this many nearby elements are read for a near-miss (`nearby_texts`).
const NEARBY_MAX: usize = 3;

/// What was found under the point before any OCR.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The uniform region the point is on.
    pub region: PxRect,
    pub region_color: Rgb,
    /// True when the region is a bounded control (a button, a row, a field), not the page.
    pub bounded: bool,
    /// The ink item under / nearest the point inside the region (the label, or an icon).
    pub item: Option<Item>,
    /// Every text item of the region (a row's several texts), top to bottom.
    pub items: Vec<Item>,
    /// Every item found around the point, before the open page's items are narrowed to the
    /// one under / nearest it: what a near-miss may hit (`nearby_texts`).
    pub candidates: Vec<Item>,
}

/// Find the element under `p`: the uniform region around it and the ink item it points at.
pub(crate) fn locate(img: &RgbaImage, p: (u32, u32)) -> Target {
    let (w, h) = (img.width(), img.height());
    let step = grid_step(img);
    let short = w.min(h);
    let (bg, seeds) = background_at(img, p, (short / 40).max(8), step);
    // Smaller than ~ (short/36)² px is a glyph's counter, not a control.
    let min_cells = ((short / 36) / step).max(2).pow(2);
    let reg = region_at(img, &seeds, bg, step, min_cells).unwrap_or(Region {
        bounds: rect_around(img, p, 1, 1),
        color: bg,
        cells: 0,
    });
    let r = reg.bounds;
    // A control is a box well short of the screen: not more than a third of its height and
    // not the page background that runs around everything.
    let bounded = reg.cells > 0
        && r.height() * 3 <= h
        && u64::from(r.width()) * u64::from(r.height()) * 5 <= u64::from(w) * u64::from(h);
    let window = if bounded {
        r
    } else {
        // The page itself: look at a band around the point.
        rect_around(img, p, w, (short / 12).max(16))
    };
    let items = find_items(img, window, bg, step, bounded);
    let slack = (short / 30).max(6);
    // Under the point, else near it; on the open page also the nearest text on the point's
    // own row (a list row tapped in its empty middle).
    let item = items
        .iter()
        .filter(|i| {
            bounded
                || dist_to_rect(i.bounds, p) <= slack
                || (i.bounds.top <= p.1 + slack / 2 && i.bounds.bottom + slack / 2 > p.1)
        })
        .min_by_key(|i| dist_to_rect(i.bounds, p))
        .copied();
    let candidates = items.clone();
    let (region, items) = if bounded {
        (r, items)
    } else {
        (
            item.map_or(window, |i| i.bounds),
            item.into_iter().collect(),
        )
    };
    Target {
        region,
        region_color: bg,
        bounded,
        item,
        items,
        candidates,
    }
}

/// The whole reading (SPEC S10, S11).
pub(crate) fn read_screen(
    img: &RgbaImage,
    p: (u32, u32),
    purpose: ReadPurpose,
    limits: Limits,
    ocr: &mut LineReader<'_>,
) -> ScreenReading {
    let mut out = ScreenReading::default();
    let (w, h) = (img.width(), img.height());
    if w == 0 || h == 0 || p.0 >= w || p.1 >= h {
        return out;
    }
    let step = grid_step(img);
    let t = locate(img, p);

    // --- target ---------------------------------------------------------------------------
    let read_items = |items: &[Item], bg: Rgb, ocr: &mut LineReader<'_>| -> Option<String> {
        let texts: Vec<String> = items
            .iter()
            .filter_map(|i| read_item(img, i, bg, step, ocr))
            .collect();
        (!texts.is_empty()).then(|| texts.join(" "))
    };
    // The label is the item under / nearest the point plus the items right next to it (a
    // two-line label, an icon beside its caption); the rest of a wide region (a top bar's title
    // next to its Send button) is not the target.
    let group: Vec<Item> = t.item.map_or_else(Vec::new, |it| {
        let near = it.bounds.height().max(8) * 6 / 5;
        t.items
            .iter()
            .filter(|o| box_gap(o.bounds, it.bounds) <= near)
            .take(3)
            .copied()
            .collect()
    });
    let whole = t.bounded && group.len() == t.items.len();
    out.target_bounds = if whole || (t.bounded && t.item.is_none()) {
        Some(t.region)
    } else {
        t.item.map(|i| pad(img, i.bounds, 8))
    };
    out.target_text = read_items(&group, t.region_color, ocr);
    // A near-miss: the point is on no item's ink, so the touch may land on any control whose
    // touch target (its ink plus padding) covers it — read them all and let the gate take the
    // riskiest (SPEC S10; attacker pass: a tap at the top edge of a top bar's Send button read
    // as the status bar).
    let on_ink = t.item.is_some_and(|i| dist_to_rect(i.bounds, p) == 0);
    if !on_ink && purpose == ReadPurpose::Tap {
        let touch = (w.min(h) / 12).max(12);
        let mut near: Vec<Item> = t
            .candidates
            .iter()
            .filter(|o| {
                !group.contains(o)
                    && !is_rule(o.bounds, w.min(h))
                    && within_touch(o.bounds, p, touch)
            })
            .copied()
            .collect();
        near.sort_by_key(|o| dist_to_rect(o.bounds, p));
        for o in near.iter().take(NEARBY_MAX) {
            match read_item(img, o, t.region_color, step, ocr) {
                Some(text) => out.nearby_texts.push(text),
                None => out.nearby_unreadable = true,
            }
        }
        // On the open page, a control's rounded corner or anti-aliased edge leaves the point on
        // the page colour although the control's touch area (its bounding box) covers it: look
        // for bounded controls a little way off in each direction (attacker pass: the corners
        // of a red 删除账号 row read as nothing).
        if !t.bounded {
            for u in controls_around(img, p, touch) {
                if out.nearby_texts.len() >= NEARBY_MAX {
                    break;
                }
                match read_items(&u.items, u.region_color, ocr) {
                    Some(text) => out.nearby_texts.push(text),
                    None if !u.items.is_empty() => out.nearby_unreadable = true,
                    None => {}
                }
            }
        }
    }
    // Something is drawn there but reads as no text: an icon. Also a small shape of its own
    // colour under the point with nothing on it (a filled glyph-less icon).
    let small = t.region.width() < w.min(h) / 5 && t.region.height() < w.min(h) / 5;
    out.target_unreadable = out.target_text.is_none()
        && (t.item.is_some() || (t.bounded && t.items.is_empty() && small));

    // --- style ------------------------------------------------------------------------------
    let ink = t.item.map(|i| i.ink_color);
    out.target_style = TargetStyle {
        filled: t.bounded && is_saturated(t.region_color),
        destructive: (t.bounded && is_red(t.region_color)) || ink.is_some_and(is_red),
    };

    // --- dialog -----------------------------------------------------------------------------
    let card = find_card(img, &t, step);
    if let Some((card, card_color)) = card {
        out.dialog = Some(read_dialog(
            img,
            card,
            card_color,
            &t,
            out.target_bounds,
            step,
            ocr,
        ));
    }

    // --- page title -------------------------------------------------------------------------
    // A dialog is the context; the page behind it is not read (one OCR call saved).
    if card.is_none() {
        out.page_title = read_top_bar(img, step, out.target_bounds, ocr);
    }

    // --- button row (siblings on the target's row) ---------------------------------------------
    if out.dialog.is_none()
        && let Some(tb) = out.target_bounds
        && purpose == ReadPurpose::Tap
    {
        out.button_row = read_row(img, tb, step, limits.max_row, ocr);
    }

    // --- field label (type_text) ------------------------------------------------------------
    if purpose == ReadPurpose::Type {
        out.field_label =
            read_field_label(img, &t, p, step, ocr).or_else(|| out.target_text.clone());
        if out.target_text.is_none() && !t.bounded {
            out.target_text = out.field_label.clone();
        }
    }

    // --- screen lines: context when the target has no text ---------------------------------
    if out.target_text.is_none() && limits.max_screen_lines > 0 {
        out.screen_lines = read_screen_lines(img, p, step, limits.max_screen_lines, ocr);
    }
    out
}

/// The bounded controls (buttons, rows, fields: see [`locate`]) whose bounding box lies within
/// `touch / 6` px of `p` although `p` itself is on the page: found from probes `touch / 3` px
/// away in the eight directions; each control once, nearest first.
fn controls_around(img: &RgbaImage, p: (u32, u32), touch: u32) -> Vec<Target> {
    let d = (touch / 3).max(4) as i64;
    let margin = (touch / 6).max(2);
    let (w, h) = (i64::from(img.width()), i64::from(img.height()));
    let mut found: Vec<Target> = Vec::new();
    for (dx, dy) in [
        (-1, -1),
        (0, -1),
        (1, -1),
        (-1, 0),
        (1, 0),
        (-1, 1),
        (0, 1),
        (1, 1),
    ] {
        let q = (i64::from(p.0) + dx * d, i64::from(p.1) + dy * d);
        if q.0 < 0 || q.1 < 0 || q.0 >= w || q.1 >= h {
            continue;
        }
        let u = locate(img, (q.0 as u32, q.1 as u32));
        if !u.bounded
            || dist_to_rect(u.region, p) > margin
            || found.iter().any(|f| f.region == u.region)
        {
            continue;
        }
        found.push(u);
    }
    found.sort_by_key(|u| dist_to_rect(u.region, p));
    found
}

/// True when a touch at `p` may land on the control whose ink is `r`: at most `touch` px above
/// or below its ink and at most twice that to its side (a text button's padding is wider than
/// it is tall: a top bar's Send is tappable well left of its label).
fn within_touch(r: PxRect, p: (u32, u32), touch: u32) -> bool {
    let dx = r.left.saturating_sub(p.0).max(p.0.saturating_sub(r.right));
    let dy = r.top.saturating_sub(p.1).max(p.1.saturating_sub(r.bottom));
    dy <= touch && dx <= 2 * touch
}

/// A rule, not a control: a line at most `short / 120` px thick and at least `short / 6` px
/// long (a divider, a field's border or focus stroke, an underline), where `short` is the
/// frame's short side in px. No glyph or icon has that shape, and a touch beside it lands on
/// the box it borders, which is read on its own (regression: the focused recipient field's
/// blue bottom stroke made a tap into the subject field "next to an unreadable icon").
fn is_rule(r: PxRect, short: u32) -> bool {
    let (thin, long) = (r.width().min(r.height()), r.width().max(r.height()));
    thin <= (short / 120).max(2) && long >= short / 6
}

/// The gap between two boxes, px (0 when they overlap).
fn box_gap(a: PxRect, b: PxRect) -> u32 {
    let dx = b
        .left
        .saturating_sub(a.right)
        .max(a.left.saturating_sub(b.right));
    let dy = b
        .top
        .saturating_sub(a.bottom)
        .max(a.top.saturating_sub(b.bottom));
    dx.max(dy)
}

fn pad(img: &RgbaImage, r: PxRect, by: u32) -> PxRect {
    clamp_rect(
        img,
        PxRect {
            left: r.left.saturating_sub(by),
            top: r.top.saturating_sub(by),
            right: r.right + by,
            bottom: r.bottom + by,
        },
    )
}

/// OCR one item: a text line on `bg`, or a solid control read on its own fill colour.
fn read_item(
    img: &RgbaImage,
    i: &Item,
    bg: Rgb,
    step: u32,
    ocr: &mut LineReader<'_>,
) -> Option<String> {
    if i.bounds.height() < 8 {
        return None;
    }
    if i.is_solid() {
        let fill = dominant_color(img, i.bounds, step);
        let inner = find_items(img, i.bounds, fill, step, true);
        let texts: Vec<String> = inner
            .iter()
            .filter(|t| !t.is_solid())
            .filter_map(|t| ocr(pad(img, t.bounds, t.bounds.height() / 4 + 2), fill))
            .collect();
        return (!texts.is_empty()).then(|| texts.join(" "));
    }
    ocr(pad(img, i.bounds, i.bounds.height() / 4 + 2), bg)
}

/// The modal card the target sits in: the target's own region (a text-only button on the
/// card makes the region the card) or the region around it.
fn find_card(img: &RgbaImage, t: &Target, step: u32) -> Option<(PxRect, Rgb)> {
    let (w, h) = (img.width(), img.height());
    // A card is a panel, not a button: at least a third of the width and 1/12 of the height.
    let big_enough = |r: PxRect| r.width() >= w / 3 && r.height() >= h / 12;
    if t.bounded && big_enough(t.region) && is_card_over_dim(img, t.region, t.region_color) {
        return Some((t.region, t.region_color));
    }
    let full = PxRect {
        left: 0,
        top: 0,
        right: w,
        bottom: h,
    };
    let (pc, seed) = parent_background(img, t.region, step)?;
    let reg = flood_region(img, seed, pc, step, full);
    let r = reg.bounds;
    let contains = r.left <= t.region.left
        && r.top <= t.region.top
        && r.right >= t.region.right
        && r.bottom >= t.region.bottom;
    (contains && big_enough(r) && r.height() < h * 9 / 10 && is_card_over_dim(img, r, pc))
        .then_some((r, pc))
}

fn v_center(r: PxRect) -> u32 {
    (r.top + r.bottom) / 2
}

fn same_row(a: PxRect, b: PxRect) -> bool {
    let c = v_center(a);
    c >= b.top && c < b.bottom || (v_center(b) >= a.top && v_center(b) < a.bottom)
}

fn read_dialog(
    img: &RgbaImage,
    card: PxRect,
    card_color: Rgb,
    t: &Target,
    target_bounds: Option<PxRect>,
    step: u32,
    ocr: &mut LineReader<'_>,
) -> DialogReading {
    let items = find_items(img, card, card_color, step, true);
    // The button row: the target's row when the target is in the card, else the bottom row.
    let anchor = target_bounds
        .filter(|b| overlap_area(*b, card) > 0)
        .or_else(|| items.last().map(|i| i.bounds));
    let (row, rest): (Vec<Item>, Vec<Item>) = items
        .iter()
        .partition(|i| anchor.is_some_and(|a| same_row(i.bounds, a)));
    let mut row = row;
    row.sort_by_key(|i| i.bounds.left);
    let mut buttons = Vec::new();
    let mut target_idx = None;
    let mut filled = Vec::new();
    for i in &row {
        if let Some(text) = read_item(img, i, card_color, step, ocr) {
            if target_bounds.is_some_and(|b| overlap_area(b, i.bounds) > 0) {
                target_idx = Some(buttons.len());
            }
            filled.push(i.is_solid() && is_saturated(dominant_color(img, i.bounds, step)));
            buttons.push(text);
        }
    }
    // A text-only target on the card is a row item too.
    if target_idx.is_none()
        && let Some(tb) = target_bounds
        && !t.bounded
    {
        target_idx = row
            .iter()
            .position(|i| overlap_area(tb, i.bounds) > 0)
            .filter(|p| *p < buttons.len());
    }
    let mut lines = rest
        .iter()
        .filter(|i| !i.is_solid() && i.bounds.bottom <= anchor.map_or(u32::MAX, |a| a.bottom));
    let title = lines
        .next()
        .and_then(|i| read_item(img, i, card_color, step, ocr));
    let body: Vec<String> = lines
        .take(4)
        .filter_map(|i| read_item(img, i, card_color, step, ocr))
        .collect();
    let target_is_primary = target_idx.is_some_and(|ti| {
        let any_filled = filled.iter().any(|f| *f);
        if any_filled {
            filled.get(ti).copied().unwrap_or(false)
        } else {
            ti + 1 == buttons.len()
        }
    });
    DialogReading {
        bounds: card,
        title,
        body: (!body.is_empty()).then(|| body.join("")),
        buttons,
        target_is_primary,
    }
}

/// The top bar under the status bar (3–12 % of the height): its tallest text line, nearest the
/// centre on ties.
fn read_top_bar(
    img: &RgbaImage,
    step: u32,
    target: Option<PxRect>,
    ocr: &mut LineReader<'_>,
) -> Option<String> {
    let (w, h) = (img.width(), img.height());
    let band = PxRect {
        left: 0,
        top: h * 3 / 100,
        right: w,
        bottom: h * 12 / 100,
    };
    let bg = dominant_color(img, band, step);
    let items = find_items(img, band, bg, step, false);
    let min_h = (w.min(h) / 40).max(8);
    let mut cands: Vec<&Item> = items
        .iter()
        .filter(|i| !i.is_solid() && i.bounds.height() >= min_h && i.bounds.width() >= min_h)
        .filter(|i| target.is_none_or(|t| overlap_area(t, i.bounds) == 0))
        .collect();
    cands.sort_by_key(|i| {
        let cx = (i.bounds.left + i.bounds.right) / 2;
        (u32::MAX - i.bounds.height() / 4, cx.abs_diff(w / 2))
    });
    // The tallest line nearest the centre; an icon there reads as nothing, then the next.
    cands
        .iter()
        .take(2)
        .find_map(|i| read_item(img, i, bg, step, ocr))
}

/// The other labels on the target's row (a bottom bar, a toolbar), left to right.
fn read_row(
    img: &RgbaImage,
    target: PxRect,
    step: u32,
    max: usize,
    ocr: &mut LineReader<'_>,
) -> Vec<String> {
    let w = img.width();
    let band = PxRect {
        left: 0,
        top: target.top,
        right: w,
        bottom: target.bottom,
    };
    let bg = dominant_color(img, band, step);
    let mut items: Vec<Item> = find_items(img, band, bg, step, false)
        .into_iter()
        .filter(|i| overlap_area(i.bounds, target) == 0)
        .filter(|i| i.bounds.height() >= (w / 60).max(8))
        .collect();
    items.sort_by_key(|i| i.bounds.left);
    items
        .iter()
        .take(max)
        .filter_map(|i| read_item(img, i, bg, step, ocr))
        .collect()
}

/// For `type_text`: the label left of the field on its row, or just above it (within 0.6 of
/// its height), else the text inside it (the hint). A field drawn without its own box (the
/// point is on the page colour): the text nearest the point on its row.
fn read_field_label(
    img: &RgbaImage,
    t: &Target,
    p: (u32, u32),
    step: u32,
    ocr: &mut LineReader<'_>,
) -> Option<String> {
    let w = img.width();
    if !t.bounded {
        let fh = (w / 10).max(16);
        let band = rect_around(img, p, w, fh / 2);
        let bg = dominant_color(img, band, step);
        let best = find_items(img, band, bg, step, false)
            .into_iter()
            .filter(|i| !i.is_solid() && i.bounds.top <= p.1 && i.bounds.bottom > p.1)
            .min_by_key(|i| dist_to_rect(i.bounds, p))?;
        return read_item(img, &best, bg, step, ocr);
    }
    let f = t.region;
    let fh = f.height().max(8);
    let left = PxRect {
        left: 0,
        top: f.top,
        right: f.left.saturating_sub(8),
        bottom: f.bottom,
    };
    if left.width() > fh / 2 {
        let bg = dominant_color(img, left, step);
        if let Some(i) = find_items(img, left, bg, step, false)
            .into_iter()
            .filter(|i| !i.is_solid() && i.bounds.height() >= 6)
            .max_by_key(|i| i.bounds.right)
            && let Some(s) = read_item(img, &i, bg, step, ocr)
        {
            return Some(s);
        }
    }
    let above = clamp_rect(
        img,
        PxRect {
            left: f.left.saturating_sub(fh / 2),
            top: f.top.saturating_sub(fh * 3 / 5),
            right: f.right,
            bottom: f.top.saturating_sub(8),
        },
    );
    if above.height() > 8 {
        let bg = dominant_color(img, above, step);
        if let Some(i) = find_items(img, above, bg, step, true)
            .into_iter()
            .filter(|i| !i.is_solid() && i.bounds.height() >= 6)
            .max_by_key(|i| i.bounds.bottom)
            && let Some(s) = read_item(img, &i, bg, step, ocr)
        {
            return Some(s);
        }
    }
    None
}

/// Other text lines of the screen, nearest the point first, returned top to bottom.
/// [`read_screen_lines`] on the frame's own grid (for [`crate::ScreenReader::screen_text`]).
pub(crate) fn screen_text(
    img: &RgbaImage,
    p: (u32, u32),
    max: usize,
    ocr: &mut LineReader<'_>,
) -> Vec<String> {
    read_screen_lines(img, p, grid_step(img), max, ocr)
}

fn read_screen_lines(
    img: &RgbaImage,
    p: (u32, u32),
    step: u32,
    max: usize,
    ocr: &mut LineReader<'_>,
) -> Vec<String> {
    let (w, h) = (img.width(), img.height());
    let full = PxRect {
        left: 0,
        top: h * 3 / 100,
        right: w,
        bottom: h,
    };
    let coarse = (step * 2).max(2);
    let bg = dominant_color(img, full, coarse * 2);
    let min_h = (w.min(h) / 45).max(8);
    let mut items: Vec<Item> = find_items(img, full, bg, step, false)
        .into_iter()
        .filter(|i| !i.is_solid() && i.bounds.height() >= min_h && i.bounds.height() <= h / 10)
        .collect();
    items.sort_by_key(|i| dist_to_rect(i.bounds, p));
    items.truncate(max);
    items.sort_by_key(|i| (i.bounds.top, i.bounds.left));
    items
        .iter()
        .filter_map(|i| read_item(img, i, bg, step, ocr))
        .collect()
}
