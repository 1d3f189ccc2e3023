//! The images the isolated visual reviewer sees (SPEC S11): the frame with the tap point
//! marked, and a crop around it.

use image::{Rgba, RgbaImage, imageops};

/// Colour of the mark (magenta: rare in app UIs, visible on white, red, blue and dark).
const MARK: Rgba<u8> = Rgba([255, 0, 200, 255]);
/// Outline drawn around the mark so it stays visible on any background.
const HALO: Rgba<u8> = Rgba([255, 255, 255, 255]);

/// A copy of `img` with a ring and a crosshair drawn at `point` (px): ring radius 1/22 of the
/// short side (≥ 12 px), stroke 1/6 of the radius, white halo. A point outside the frame is
/// clamped to its edge.
pub fn mark_point(img: &RgbaImage, point: (u32, u32)) -> RgbaImage {
    let mut out = img.clone();
    let (w, h) = (img.width(), img.height());
    if w == 0 || h == 0 {
        return out;
    }
    let (cx, cy) = (point.0.min(w - 1) as i64, point.1.min(h - 1) as i64);
    let r = (i64::from(w.min(h)) / 22).max(12);
    let t = (r / 6).max(2);
    let arm = r * 2;
    let mut put = |x: i64, y: i64, c: Rgba<u8>| {
        if x >= 0 && y >= 0 && x < i64::from(w) && y < i64::from(h) {
            out.put_pixel(x as u32, y as u32, c);
        }
    };
    for pass in [(HALO, t + 2), (MARK, t)] {
        let (c, half) = (pass.0, pass.1);
        for y in cy - arm - half..=cy + arm + half {
            for x in cx - arm - half..=cx + arm + half {
                let (dx, dy) = (x - cx, y - cy);
                let d = ((dx * dx + dy * dy) as f64).sqrt();
                let ring = (d - r as f64).abs() <= half as f64 / 2.0 + 0.5;
                // Crosshair arms outside the ring (the control's label stays readable inside).
                let arm_h = dy.abs() <= half / 2 && dx.abs() > r && dx.abs() <= arm;
                let arm_v = dx.abs() <= half / 2 && dy.abs() > r && dy.abs() <= arm;
                if ring || arm_h || arm_v {
                    put(x, y, c);
                }
            }
        }
    }
    out
}

/// The part of `img` of `size` (w, h px) centred on `point`, shifted to stay inside the frame
/// (smaller when the frame is smaller).
pub fn crop_around(img: &RgbaImage, point: (u32, u32), size: (u32, u32)) -> RgbaImage {
    let (w, h) = (img.width(), img.height());
    let (cw, ch) = (size.0.min(w).max(1), size.1.min(h).max(1));
    let left = point.0.saturating_sub(cw / 2).min(w.saturating_sub(cw));
    let top = point.1.saturating_sub(ch / 2).min(h.saturating_sub(ch));
    imageops::crop_imm(img, left, top, cw.min(w), ch.min(h)).to_image()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_is_drawn_around_the_point_and_the_centre_is_left_alone() {
        let img = RgbaImage::from_pixel(1080, 2400, Rgba([255, 255, 255, 255]));
        let m = mark_point(&img, (540, 1200));
        let r = 1080 / 22;
        assert_eq!(
            *m.get_pixel(540 + r as u32, 1200),
            MARK,
            "ring right of the point"
        );
        assert_eq!(
            *m.get_pixel(540, 1200 - r as u32),
            MARK,
            "ring above the point"
        );
        assert_eq!(
            *m.get_pixel(540, 1200),
            Rgba([255, 255, 255, 255]),
            "centre untouched"
        );
        assert_eq!(*m.get_pixel(10, 10), Rgba([255, 255, 255, 255]));
        // Near a corner: no panic, still drawn.
        let m = mark_point(&img, (5000, 5000));
        assert_eq!(*m.get_pixel(1079, 2399 - r as u32), MARK);
    }

    #[test]
    fn crop_is_centred_and_kept_inside() {
        let mut img = RgbaImage::from_pixel(100, 200, Rgba([0, 0, 0, 255]));
        img.put_pixel(50, 100, Rgba([9, 9, 9, 255]));
        let c = crop_around(&img, (50, 100), (20, 20));
        assert_eq!((c.width(), c.height()), (20, 20));
        assert_eq!(*c.get_pixel(10, 10), Rgba([9, 9, 9, 255]));
        let c = crop_around(&img, (0, 0), (40, 400));
        assert_eq!((c.width(), c.height()), (40, 200));
    }
}
