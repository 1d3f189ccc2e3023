//! Coordinate conventions of the model families (SPEC M7, M4, M5) and Qwen's smart-resize.
//!
//! A family's parser reads points in the family's *native* convention, checks them against the
//! native bounds (out of range is an error, never clamped) and converts them into the frozen
//! [`CoordinateSpace`] the runtime's `CoordinateMapper` takes ([`FamilyCoords::frozen_space`]):
//!
//! | convention | native range | frozen space | conversion |
//! |---|---|---|---|
//! | [`FamilyCoords::Relative999`] | `0..=999` | `relative_0_999` | identity |
//! | [`FamilyCoords::Relative1000`] | `0..=1000` | `relative_0_999` | `v · 999 / 1000` |
//! | [`FamilyCoords::SmartResize`] | `0..=W'-1`, `0..=H'-1` px of the smart-resized image | `image_pixels` | `v · (w-1) / (W'-1)` |
//!
//! `w × h` is the image actually sent; `W' × H'` = [`smart_resize`] of it (what the Qwen2.5-VL
//! vision encoder really sees, so the pixels the model answers in).

use serde::{Deserialize, Serialize};

use crate::geometry::{CoordinateSpace, ModelPoint};

/// Parameters of Qwen2.5-VL's `smart_resize` (`qwen_vl_utils`): both sides are rounded to a
/// multiple of `factor` px and the area is kept in `min_pixels..=max_pixels` (px²), keeping the
/// aspect ratio as far as possible (SPEC M7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SmartResize {
    /// Side multiple, px (28 = patch 14 × merge 2).
    pub factor: u32,
    /// Smallest area, px².
    pub min_pixels: u64,
    /// Largest area, px².
    pub max_pixels: u64,
    /// Largest `long side / short side` ratio accepted (200 in `qwen_vl_utils`).
    pub max_ratio: u32,
}

impl SmartResize {
    /// Qwen2.5-VL's published defaults: factor 28, `min_pixels` 4·28·28 = 3 136,
    /// `max_pixels` 16 384·28·28 = 12 845 056, ratio 200.
    pub const QWEN25_VL: Self = Self {
        factor: 28,
        min_pixels: 4 * 28 * 28,
        max_pixels: 16_384 * 28 * 28,
        max_ratio: 200,
    };

    /// UI-TARS-1.5's published values: factor 28, `min_pixels` 100·28·28 = 78 400,
    /// `max_pixels` 16 384·28·28.
    pub const UI_TARS_15: Self = Self {
        factor: 28,
        min_pixels: 100 * 28 * 28,
        max_pixels: 16_384 * 28 * 28,
        max_ratio: 200,
    };
}

impl Default for SmartResize {
    /// [`SmartResize::QWEN25_VL`].
    fn default() -> Self {
        Self::QWEN25_VL
    }
}

/// Python's `round()`: to the nearest integer, ties to even (as `qwen_vl_utils` computes).
fn py_round(v: f64) -> f64 {
    v.round_ties_even()
}

/// `smart_resize(height, width)` of `qwen_vl_utils`, exactly: returns `(h', w')` in px.
///
/// ```text
/// h' = max(f, round(h / f) · f), w' = max(f, round(w / f) · f)      (round: ties to even)
/// if h'·w' > max_pixels: β = sqrt(h·w / max_pixels); h' = floor(h / β / f)·f, w' = floor(w / β / f)·f
/// elif h'·w' < min_pixels: β = sqrt(min_pixels / (h·w)); h' = ceil(h·β / f)·f, w' = ceil(w·β / f)·f
/// ```
///
/// # Errors
/// A message naming the size when a side is 0 or the aspect ratio exceeds `max_ratio`.
pub fn smart_resize(height: u32, width: u32, p: &SmartResize) -> Result<(u32, u32), String> {
    if height == 0 || width == 0 || p.factor == 0 {
        return Err(format!(
            "smart_resize needs a non-empty image and factor, got {width}x{height} px (factor {})",
            p.factor
        ));
    }
    let (h, w, f) = (f64::from(height), f64::from(width), f64::from(p.factor));
    if h.max(w) / h.min(w) > f64::from(p.max_ratio) {
        return Err(format!(
            "the image {width}x{height} px has an aspect ratio over {}: Qwen's smart_resize refuses it",
            p.max_ratio
        ));
    }
    let mut hb = f.max(py_round(h / f) * f);
    let mut wb = f.max(py_round(w / f) * f);
    #[allow(clippy::cast_precision_loss)]
    let (minp, maxp) = (p.min_pixels as f64, p.max_pixels as f64);
    if hb * wb > maxp {
        let beta = (h * w / maxp).sqrt();
        hb = f.max((h / beta / f).floor() * f);
        wb = f.max((w / beta / f).floor() * f);
    } else if hb * wb < minp {
        let beta = (minp / (h * w)).sqrt();
        hb = (h * beta / f).ceil() * f;
        wb = (w * beta / f).ceil() * f;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok((hb as u32, wb as u32))
}

/// How a family writes a point (SPEC M7). Serialized as `relative_0_999`, `relative_0_1000`
/// or `{"smart_resize": {…}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FamilyCoords {
    /// Integers `0..=999` relative to the image (AutoGLM-Phone, Qwen3-VL, MAI-UI).
    #[serde(rename = "relative_0_999")]
    Relative999,
    /// `0..=1000` relative to the image (UI-TARS 1.0 / UI-TARS-2, Doubao UI-TARS).
    #[serde(rename = "relative_0_1000")]
    Relative1000,
    /// Absolute px of the image after [`smart_resize`] (Qwen2.5-VL, GUI-Owl, UI-TARS-1.5).
    SmartResize(SmartResize),
}

impl FamilyCoords {
    /// Stable name: `relative_0_999`, `relative_0_1000` or `smart_resize`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Relative999 => "relative_0_999",
            Self::Relative1000 => "relative_0_1000",
            Self::SmartResize(_) => "smart_resize",
        }
    }

    /// The frozen space the converted points are in: `relative_0_999` or `image_pixels`.
    pub fn frozen_space(&self) -> CoordinateSpace {
        match self {
            Self::Relative999 | Self::Relative1000 => CoordinateSpace::Relative0999,
            Self::SmartResize(_) => CoordinateSpace::ImagePixels,
        }
    }

    /// The native extent `(W', H')` for an image of `image` = `(w, h)` px: the valid native
    /// range is `0..=extent-1` for pixels, `0..=999` / `0..=1000` for the relative spaces.
    ///
    /// # Errors
    /// As [`smart_resize`].
    pub fn native_max(&self, image: (u32, u32)) -> Result<(f64, f64), String> {
        Ok(match self {
            Self::Relative999 => (999.0, 999.0),
            Self::Relative1000 => (1000.0, 1000.0),
            Self::SmartResize(p) => {
                let (h, w) = smart_resize(image.1, image.0, p)?;
                (f64::from(w - 1), f64::from(h - 1))
            }
        })
    }

    /// Converts a native point (already bounds-checked) into the frozen space for an image of
    /// `image` px.
    ///
    /// # Errors
    /// As [`smart_resize`].
    pub fn to_frozen(&self, p: ModelPoint, image: (u32, u32)) -> Result<ModelPoint, String> {
        Ok(match self {
            Self::Relative999 => p,
            Self::Relative1000 => ModelPoint {
                x: p.x * 999.0 / 1000.0,
                y: p.y * 999.0 / 1000.0,
            },
            Self::SmartResize(_) => {
                let (mx, my) = self.native_max(image)?;
                let sx = f64::from(image.0.saturating_sub(1));
                let sy = f64::from(image.1.saturating_sub(1));
                ModelPoint {
                    x: if mx > 0.0 { p.x * sx / mx } else { 0.0 },
                    y: if my > 0.0 { p.y * sy / my } else { 0.0 },
                }
            }
        })
    }

    /// The inverse of [`Self::to_frozen`]: a frozen-space point back into native numbers,
    /// rounded to integers (history rendering, receipts).
    ///
    /// # Errors
    /// As [`smart_resize`].
    pub fn from_frozen(&self, p: ModelPoint, image: (u32, u32)) -> Result<(i64, i64), String> {
        let (x, y) = match self {
            Self::Relative999 => (p.x, p.y),
            Self::Relative1000 => (p.x * 1000.0 / 999.0, p.y * 1000.0 / 999.0),
            Self::SmartResize(_) => {
                let (mx, my) = self.native_max(image)?;
                let sx = f64::from(image.0.saturating_sub(1)).max(1.0);
                let sy = f64::from(image.1.saturating_sub(1)).max(1.0);
                (p.x * mx / sx, p.y * my / sy)
            }
        };
        #[allow(clippy::cast_possible_truncation)]
        Ok((x.round() as i64, y.round() as i64))
    }

    /// A canonical point `u, v ∈ [0, 1]` (0 = first pixel, 1 = last) in native integers: what a
    /// scripted model answers for an element centre.
    ///
    /// # Errors
    /// As [`smart_resize`].
    pub fn from_canonical(&self, u: f64, v: f64, image: (u32, u32)) -> Result<(i64, i64), String> {
        let (mx, my) = self.native_max(image)?;
        #[allow(clippy::cast_possible_truncation)]
        Ok(((u * mx).round() as i64, (v * my).round() as i64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smart_resize_matches_qwen_vl_utils() {
        let p = SmartResize::QWEN25_VL;
        // Values computed with qwen_vl_utils.smart_resize (Python).
        assert_eq!(smart_resize(2400, 1080, &p).unwrap(), (2408, 1092));
        assert_eq!(smart_resize(1000, 1000, &p).unwrap(), (1008, 1008));
        assert_eq!(smart_resize(28, 28, &p).unwrap(), (56, 56));
        // Ties to even: 42/28 = 1.5 → 2, 70/28 = 2.5 → 2.
        assert_eq!(smart_resize(42, 70, &p).unwrap(), (56, 56));
        // Over max_pixels: scaled down, floored to multiples of 28.
        let (h, w) = smart_resize(8000, 4000, &p).unwrap();
        assert!(u64::from(h) * u64::from(w) <= p.max_pixels);
        assert_eq!((h % 28, w % 28), (0, 0));
        assert_eq!((h, w), (5068, 2520));
        assert!(smart_resize(10, 3000, &p).is_err());
        assert!(smart_resize(0, 3, &p).is_err());
        // UI-TARS-1.5's larger min_pixels scales small images up.
        assert_eq!(
            smart_resize(100, 100, &SmartResize::UI_TARS_15).unwrap(),
            (280, 280)
        );
    }

    #[test]
    fn conversions_round_trip() {
        let c = FamilyCoords::SmartResize(SmartResize::QWEN25_VL);
        let img = (1080, 2400);
        assert_eq!(c.native_max(img).unwrap(), (1091.0, 2407.0));
        let f = c.to_frozen(ModelPoint { x: 1091.0, y: 0.0 }, img).unwrap();
        assert!((f.x - 1079.0).abs() < 1e-9 && f.y == 0.0);
        assert_eq!(c.from_frozen(f, img).unwrap(), (1091, 0));
        let r = FamilyCoords::Relative1000;
        let f = r
            .to_frozen(
                ModelPoint {
                    x: 1000.0,
                    y: 500.0,
                },
                img,
            )
            .unwrap();
        assert_eq!(f.x, 999.0);
        assert_eq!(r.from_frozen(f, img).unwrap(), (1000, 500));
        assert_eq!(
            FamilyCoords::Relative999
                .from_canonical(1.0, 0.5, img)
                .unwrap(),
            (999, 500)
        );
    }
}
