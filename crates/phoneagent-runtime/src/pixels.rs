//! Pixel comparison for freshness (SPEC R3) and verification (SPEC R4).
//!
//! Comparisons sample a grid (every [`SAMPLE_STRIDE`] px on each axis) and count a sample as
//! changed when any RGB channel differs by more than [`CHANNEL_THRESHOLD`]. Results are fractions
//! `0.0..=1.0` of the sampled pixels.

use image::RgbaImage;

/// Sampling stride in px on each axis (1/16 of the pixels at 4).
pub const SAMPLE_STRIDE: u32 = 4;
/// Per-channel difference (0..255) above which a pixel counts as changed.
pub const CHANNEL_THRESHOLD: u8 = 24;

/// An axis-aligned rectangle in device px, `x0..x1` × `y0..y1` (end exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    /// Left.
    pub x0: u32,
    /// Top.
    pub y0: u32,
    /// Right (exclusive).
    pub x1: u32,
    /// Bottom (exclusive).
    pub y1: u32,
}

impl Rect {
    /// A square of half-side `half` px around `(x, y)`, clipped to `w`×`h`.
    pub fn around(x: u32, y: u32, half: u32, w: u32, h: u32) -> Self {
        Self {
            x0: x.saturating_sub(half),
            y0: y.saturating_sub(half),
            x1: (x + half + 1).min(w),
            y1: (y + half + 1).min(h),
        }
    }
}

/// Fraction of sampled pixels that differ between `a` and `b` inside `region` (whole image when
/// `None`). Images of different sizes are entirely different (`1.0`); the same image (one
/// shared decoded frame) is unchanged (`0.0`) without a scan.
pub fn changed_fraction(a: &RgbaImage, b: &RgbaImage, region: Option<Rect>) -> f64 {
    // The device layer hands out the same decoded frame for byte-identical screenshots.
    if std::ptr::eq(a, b) {
        return 0.0;
    }
    if a.dimensions() != b.dimensions() {
        return 1.0;
    }
    let (w, h) = a.dimensions();
    let r = region.unwrap_or(Rect {
        x0: 0,
        y0: 0,
        x1: w,
        y1: h,
    });
    let (x1, y1) = (r.x1.min(w), r.y1.min(h));
    let mut total = 0u64;
    let mut changed = 0u64;
    let (ra, rb) = (a.as_raw(), b.as_raw());
    let mut y = r.y0;
    while y < y1 {
        let mut x = r.x0;
        while x < x1 {
            let i = ((y as usize) * (w as usize) + x as usize) * 4;
            total += 1;
            let differs = (0..3).any(|c| ra[i + c].abs_diff(rb[i + c]) > CHANNEL_THRESHOLD);
            if differs {
                changed += 1;
            }
            x += SAMPLE_STRIDE;
        }
        y += SAMPLE_STRIDE;
    }
    if total == 0 {
        0.0
    } else {
        changed as f64 / total as f64
    }
}

/// The rows (device px, multiples of [`SAMPLE_STRIDE`], ascending) where a sampled pixel
/// differs between `a` and `b`, by the same rule as [`changed_fraction`]. Images of different
/// sizes differ in every sampled row of `b`; the same frame in none. For the search guard
/// (SPEC F4), which asks *where* the screen changed, not how much.
pub fn changed_rows(a: &RgbaImage, b: &RgbaImage) -> Vec<u32> {
    if std::ptr::eq(a, b) {
        return Vec::new();
    }
    let (w, h) = b.dimensions();
    if a.dimensions() != b.dimensions() {
        return (0..h).step_by(SAMPLE_STRIDE as usize).collect();
    }
    let (ra, rb) = (a.as_raw(), b.as_raw());
    (0..h)
        .step_by(SAMPLE_STRIDE as usize)
        .filter(|&y| {
            (0..w).step_by(SAMPLE_STRIDE as usize).any(|x| {
                let i = ((y as usize) * (w as usize) + x as usize) * 4;
                (0..3).any(|c| ra[i + c].abs_diff(rb[i + c]) > CHANNEL_THRESHOLD)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solid(w: u32, h: u32, v: u8) -> RgbaImage {
        RgbaImage::from_pixel(w, h, image::Rgba([v, v, v, 255]))
    }

    #[test]
    fn identical_images_do_not_differ() {
        let a = solid(100, 200, 10);
        assert_eq!(changed_fraction(&a, &a.clone(), None), 0.0);
    }

    #[test]
    fn size_change_is_total_change() {
        assert_eq!(
            changed_fraction(&solid(10, 20, 0), &solid(20, 10, 0), None),
            1.0
        );
    }

    #[test]
    fn region_change_is_localised() {
        let a = solid(400, 400, 0);
        let mut b = a.clone();
        for y in 0..100 {
            for x in 0..100 {
                b.put_pixel(x, y, image::Rgba([255, 255, 255, 255]));
            }
        }
        let whole = changed_fraction(&a, &b, None);
        assert!((whole - 0.0625).abs() < 0.01, "whole {whole}");
        let inside = changed_fraction(&a, &b, Some(Rect::around(50, 50, 20, 400, 400)));
        assert_eq!(inside, 1.0);
        let outside = changed_fraction(&a, &b, Some(Rect::around(300, 300, 20, 400, 400)));
        assert_eq!(outside, 0.0);
    }

    #[test]
    fn one_shared_frame_is_unchanged_and_equal_copies_agree() {
        let mut a = solid(300, 300, 0);
        for y in 0..60 {
            for x in 0..60 {
                a.put_pixel(x, y, image::Rgba([200, 10, 10, 255]));
            }
        }
        // The same frame (the device shares one decode for identical bytes) short-cuts to 0…
        assert_eq!(changed_fraction(&a, &a, None), 0.0);
        // …exactly what the scan gives for an equal copy.
        assert_eq!(changed_fraction(&a, &a.clone(), None), 0.0);
        let r = Some(Rect::around(30, 30, 10, 300, 300));
        assert_eq!(
            changed_fraction(&a, &a, r),
            changed_fraction(&a, &a.clone(), r)
        );
        // A different frame still scans.
        let b = solid(300, 300, 0);
        assert!(changed_fraction(&a, &b, None) > 0.03);
    }

    #[test]
    fn changed_rows_name_where_the_screen_changed() {
        let a = solid(40, 80, 0);
        let mut b = a.clone();
        for y in 20..30 {
            b.put_pixel(5, y, image::Rgba([255, 255, 255, 255]));
        }
        // Column 5 is not sampled (stride 4): nothing changed as far as the sampler sees.
        assert!(changed_rows(&a, &b).is_empty());
        for y in 20..30 {
            b.put_pixel(8, y, image::Rgba([255, 255, 255, 255]));
        }
        assert_eq!(changed_rows(&a, &b), vec![20, 24, 28]);
        assert!(changed_rows(&b, &b).is_empty());
        assert_eq!(changed_rows(&solid(4, 4, 0), &b).len(), 20);
    }

    #[test]
    fn small_noise_is_ignored() {
        let a = solid(64, 64, 100);
        let b = solid(64, 64, 110);
        assert_eq!(changed_fraction(&a, &b, None), 0.0);
    }
}
