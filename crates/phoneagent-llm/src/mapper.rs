//! The coordinate contract's mapper (SPEC M5).
//!
//! ```text
//! model point (frozen space) ──► canonical [0,1]² ──► runtime 0..=999 ──► device px
//! ```
//!
//! * **Model space** (untrusted): `relative_0_999` (integers or decimals in `0..=999` on each
//!   axis), `image_pixels` (pixels of the image actually *sent*, `0..=sent_w-1`), or
//!   `display_pixels` (pixels of the display the screenshot showed, `0..=W-1`).
//! * **Canonical**: `u = v / (extent - 1)` per axis, so the first pixel/grid cell is 0 and the
//!   last is 1 (extent = 1000, sent size or display size).
//! * **Runtime**: `round(u · 999)` per axis — the runtime's invariant action format.
//! * **Device**: `round(r / 999 · (W - 1))` per axis with the *current* display size — what
//!   `input tap X Y` takes. [`runtime_to_device`] is the same function the executor uses, so the
//!   recorded device point is exactly the one dispatched.
//!
//! Values outside the space (or NaN/∞) are errors ([`LlmError::CoordinateOutOfRange`], code
//! `coordinate_out_of_range`), never clamped.
//!
//! **Rotation.** Android's `screencap` and `input` both work in the display's *current*
//! orientation, so no rotation transform is applied: a landscape screenshot (2400×1080 at
//! rotation 90) maps onto landscape input coordinates. Rotation enters as a consistency check:
//! a mapper is made for the geometry at observation time, and mapping against a current
//! geometry with a different rotation or size fails with [`LlmError::GeometryChanged`]
//! (code `stale_action`) so the runtime re-observes instead of tapping a rotated screen.

use phoneagent_protocol::{
    CoordinateSpace, DevicePoint, ModelPoint, Rotation, RuntimePoint, ScreenGeometry,
};
use serde::{Deserialize, Serialize};

use crate::error::{LlmError, Result};

/// A point in canonical `[0,1]²` (top-left origin).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CanonicalPoint {
    /// `0.0..=1.0`, left → right.
    pub x: f64,
    /// `0.0..=1.0`, top → bottom.
    pub y: f64,
}

/// All four representations of one mapped point, kept for events (SPEC M5, T2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MappedPoint {
    /// The frozen space the model answered in.
    pub space: CoordinateSpace,
    /// What the model emitted.
    pub model: ModelPoint,
    /// Canonical `[0,1]²`.
    pub canonical: CanonicalPoint,
    /// Runtime `0..=999`.
    pub runtime: RuntimePoint,
    /// Device px in the current orientation.
    pub device: DevicePoint,
    /// Size of the image the model saw, px `(w, h)`.
    pub sent_size: (u32, u32),
    /// Display size the point was mapped onto, px `(w, h)`.
    pub display_size: (u32, u32),
    /// Display rotation at observation and dispatch (they must be equal).
    pub rotation: Rotation,
}

impl From<MappedPoint> for phoneagent_protocol::event::MappedPoint {
    /// The event's shape (model, canonical, runtime, device) of a mapped point.
    fn from(p: MappedPoint) -> Self {
        Self {
            model: p.model,
            canonical: [p.canonical.x, p.canonical.y],
            runtime: p.runtime,
            device: p.device,
        }
    }
}

/// Maps model coordinates for one observation (one screenshot as sent).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoordinateMapper {
    space: CoordinateSpace,
    sent: (u32, u32),
    observed: ScreenGeometry,
}

impl CoordinateMapper {
    /// A mapper for a screenshot shown to the model at `sent` px, taken while the display was
    /// `observed`. `space` must be frozen (not `auto`). The screenshot's aspect must match the
    /// display's (within 2 %): a screenshot in another orientation than the display cannot be
    /// mapped (error [`LlmError::GeometryChanged`]).
    pub fn new(
        space: CoordinateSpace,
        original: (u32, u32),
        sent: (u32, u32),
        observed: ScreenGeometry,
    ) -> Result<Self> {
        if space == CoordinateSpace::Auto {
            return Err(LlmError::config(
                "the coordinate space is still `auto`: negotiate the contract (calibration) before mapping model coordinates",
            ));
        }
        for (what, (w, h)) in [
            ("sent image", sent),
            ("screenshot", original),
            ("display", (observed.width_px, observed.height_px)),
        ] {
            if w < 2 || h < 2 {
                return Err(LlmError::Image(format!(
                    "{what} size {w}x{h} px is too small to map coordinates"
                )));
            }
        }
        let shot_aspect = f64::from(original.0) / f64::from(original.1);
        let disp_aspect = f64::from(observed.width_px) / f64::from(observed.height_px);
        if (shot_aspect / disp_aspect - 1.0).abs() > 0.02 {
            return Err(LlmError::GeometryChanged(format!(
                "the screenshot is {}x{} px but the display is {}x{} px (rotation {:?}): they are not the same orientation; re-observe the screen",
                original.0, original.1, observed.width_px, observed.height_px, observed.rotation
            )));
        }
        Ok(Self {
            space,
            sent,
            observed,
        })
    }

    /// The frozen space.
    pub fn space(&self) -> CoordinateSpace {
        self.space
    }

    /// The size of the image the model saw, px.
    pub fn sent_size(&self) -> (u32, u32) {
        self.sent
    }

    /// Extent per axis of the model space (the valid range is `0..=extent-1`).
    fn extent(&self) -> (f64, f64) {
        match self.space {
            CoordinateSpace::Relative0999 | CoordinateSpace::Auto => (1000.0, 1000.0),
            CoordinateSpace::ImagePixels => (f64::from(self.sent.0), f64::from(self.sent.1)),
            CoordinateSpace::DisplayPixels => (
                f64::from(self.observed.width_px),
                f64::from(self.observed.height_px),
            ),
        }
    }

    /// Model point → canonical, validating the range (never clamping).
    pub fn to_canonical(&self, p: ModelPoint) -> Result<CanonicalPoint> {
        let (ex, ey) = self.extent();
        let check = |axis: &str, v: f64, extent: f64| -> Result<f64> {
            let max = extent - 1.0;
            if !v.is_finite() || v < 0.0 || v > max {
                return Err(LlmError::CoordinateOutOfRange(format!(
                    "model coordinate {axis}={v} is outside the frozen coordinate space {} (0..={max}): rejected, not clamped; answer with a point inside the screenshot",
                    self.space
                )));
            }
            Ok(v / max)
        };
        Ok(CanonicalPoint {
            x: check("x", p.x, ex)?,
            y: check("y", p.y, ey)?,
        })
    }

    /// Canonical → model point in this space (the inverse of [`Self::to_canonical`]); used by
    /// calibration to express a known target and by tests.
    pub fn from_canonical(&self, c: CanonicalPoint) -> ModelPoint {
        let (ex, ey) = self.extent();
        ModelPoint {
            x: c.x * (ex - 1.0),
            y: c.y * (ey - 1.0),
        }
    }

    /// Maps a model point onto the `current` display. Errors: out of range
    /// ([`LlmError::CoordinateOutOfRange`]), or the display changed size/rotation since the
    /// observation ([`LlmError::GeometryChanged`]).
    pub fn map(&self, p: ModelPoint, current: &ScreenGeometry) -> Result<MappedPoint> {
        if (current.width_px, current.height_px, current.rotation)
            != (
                self.observed.width_px,
                self.observed.height_px,
                self.observed.rotation,
            )
        {
            return Err(LlmError::GeometryChanged(format!(
                "the display changed from {}x{} px (rotation {:?}) to {}x{} px (rotation {:?}) since the screenshot the model saw; the action is stale, re-observe and re-plan",
                self.observed.width_px,
                self.observed.height_px,
                self.observed.rotation,
                current.width_px,
                current.height_px,
                current.rotation
            )));
        }
        let canonical = self.to_canonical(p)?;
        let runtime = canonical_to_runtime(canonical);
        let device = runtime_to_device(runtime, current);
        Ok(MappedPoint {
            space: self.space,
            model: p,
            canonical,
            runtime,
            device,
            sent_size: self.sent,
            display_size: (current.width_px, current.height_px),
            rotation: current.rotation,
        })
    }
}

/// Canonical → runtime `0..=999` (round to nearest). Input must be in `[0,1]`.
pub fn canonical_to_runtime(c: CanonicalPoint) -> RuntimePoint {
    let q = |v: f64| (v.clamp(0.0, 1.0) * 999.0).round() as u16;
    RuntimePoint {
        x: q(c.x),
        y: q(c.y),
    }
}

/// Runtime `0..=999` → device px on `geometry` (current orientation):
/// `round(r / 999 · (size - 1))`. Runtime values above 999 are treated as 999 (they cannot be
/// produced by [`canonical_to_runtime`]).
pub fn runtime_to_device(r: RuntimePoint, geometry: &ScreenGeometry) -> DevicePoint {
    let d = |v: u16, size: u32| -> u32 {
        let max = f64::from(size.saturating_sub(1));
        ((f64::from(v.min(999)) / 999.0) * max).round() as u32
    };
    DevicePoint {
        x: d(r.x, geometry.width_px),
        y: d(r.y, geometry.height_px),
    }
}

/// Device px → runtime `0..=999` (for overlays and the take-over mirror).
pub fn device_to_runtime(p: DevicePoint, geometry: &ScreenGeometry) -> RuntimePoint {
    let r = |v: u32, size: u32| -> u16 {
        let max = f64::from(size.saturating_sub(1)).max(1.0);
        ((f64::from(v) / max).clamp(0.0, 1.0) * 999.0).round() as u16
    };
    RuntimePoint {
        x: r(p.x, geometry.width_px),
        y: r(p.y, geometry.height_px),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo(w: u32, h: u32, rotation: Rotation) -> ScreenGeometry {
        ScreenGeometry {
            width_px: w,
            height_px: h,
            density_dpi: Some(420),
            rotation,
        }
    }

    #[test]
    fn relative_corners_and_center() {
        let g = geo(1080, 2400, Rotation::R0);
        let m = CoordinateMapper::new(CoordinateSpace::Relative0999, (1080, 2400), (672, 1493), g)
            .unwrap();
        let p = m.map(ModelPoint { x: 0.0, y: 0.0 }, &g).unwrap();
        assert_eq!((p.device.x, p.device.y), (0, 0));
        let p = m.map(ModelPoint { x: 999.0, y: 999.0 }, &g).unwrap();
        assert_eq!((p.device.x, p.device.y), (1079, 2399));
        let p = m.map(ModelPoint { x: 500.0, y: 500.0 }, &g).unwrap();
        assert_eq!((p.runtime.x, p.runtime.y), (500, 500));
        assert_eq!((p.device.x, p.device.y), (540, 1201));
        let ev: phoneagent_protocol::event::MappedPoint = p.into();
        assert_eq!(ev.canonical, [p.canonical.x, p.canonical.y]);
        assert_eq!(ev.device, p.device);
    }

    #[test]
    fn image_pixels_use_sent_size() {
        let g = geo(1080, 2400, Rotation::R0);
        let m = CoordinateMapper::new(CoordinateSpace::ImagePixels, (1080, 2400), (672, 1493), g)
            .unwrap();
        let p = m
            .map(
                ModelPoint {
                    x: 671.0,
                    y: 1492.0,
                },
                &g,
            )
            .unwrap();
        assert_eq!((p.device.x, p.device.y), (1079, 2399));
        let e = m.map(ModelPoint { x: 672.0, y: 10.0 }, &g).unwrap_err();
        assert_eq!(
            e.code(),
            phoneagent_protocol::ErrorCode::CoordinateOutOfRange
        );
        assert!(e.to_string().contains("x=672"), "{e}");
        assert!(e.to_string().contains("not clamped"), "{e}");
    }

    #[test]
    fn out_of_range_and_nan_rejected() {
        let g = geo(1080, 2400, Rotation::R0);
        let m = CoordinateMapper::new(CoordinateSpace::Relative0999, (1080, 2400), (672, 1493), g)
            .unwrap();
        for p in [
            ModelPoint { x: 1200.0, y: 5.0 },
            ModelPoint { x: -1.0, y: 5.0 },
            ModelPoint {
                x: 5.0,
                y: f64::NAN,
            },
            ModelPoint {
                x: f64::INFINITY,
                y: 5.0,
            },
        ] {
            assert!(m.map(p, &g).is_err(), "{p:?}");
        }
    }

    #[test]
    fn rotation_change_is_stale() {
        let portrait = geo(1080, 2400, Rotation::R0);
        let landscape = geo(2400, 1080, Rotation::R90);
        let m = CoordinateMapper::new(
            CoordinateSpace::Relative0999,
            (1080, 2400),
            (672, 1493),
            portrait,
        )
        .unwrap();
        let e = m
            .map(ModelPoint { x: 1.0, y: 1.0 }, &landscape)
            .unwrap_err();
        assert_eq!(e.code(), phoneagent_protocol::ErrorCode::StaleAction);
        // A screenshot in the other orientation than the display is refused up front.
        let e = CoordinateMapper::new(
            CoordinateSpace::Relative0999,
            (2400, 1080),
            (1493, 672),
            portrait,
        )
        .unwrap_err();
        assert!(e.to_string().contains("orientation"), "{e}");
        // Landscape maps onto landscape input coordinates directly.
        let m = CoordinateMapper::new(
            CoordinateSpace::Relative0999,
            (2400, 1080),
            (1493, 672),
            landscape,
        )
        .unwrap();
        let p = m.map(ModelPoint { x: 999.0, y: 0.0 }, &landscape).unwrap();
        assert_eq!((p.device.x, p.device.y), (2399, 0));
    }

    #[test]
    fn auto_is_not_mappable() {
        let g = geo(1080, 2400, Rotation::R0);
        assert!(
            CoordinateMapper::new(CoordinateSpace::Auto, (1080, 2400), (672, 1493), g).is_err()
        );
    }
}
