//! Screen geometry and the three coordinate systems (SPEC M4, M5).
//!
//! * [`ModelPoint`]: what the model emitted, in the frozen [`CoordinateSpace`] (untrusted).
//! * [`RuntimePoint`]: the runtime's internal action protocol, integers in `0..=999` on each axis,
//!   relative to the screenshot as the model saw it (top-left origin).
//! * [`DevicePoint`]: physical pixels on the phone's current display orientation, what
//!   `input tap X Y` takes.

use serde::{Deserialize, Serialize};

/// Display rotation as reported by the device (`0`, `90`, `180`, `270` degrees clockwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Rotation {
    /// Natural orientation (portrait on phones).
    #[default]
    R0,
    /// Rotated 90° (landscape).
    R90,
    /// Upside down.
    R180,
    /// Rotated 270° (landscape, other side).
    R270,
}

impl Rotation {
    /// From the quarter-turn count Android reports (`0..=3`); other values are `None`.
    pub fn from_quarter_turns(n: u32) -> Option<Self> {
        match n {
            0 => Some(Self::R0),
            1 => Some(Self::R90),
            2 => Some(Self::R180),
            3 => Some(Self::R270),
            _ => None,
        }
    }

    /// Quarter turns `0..=3`.
    pub fn quarter_turns(self) -> u32 {
        match self {
            Self::R0 => 0,
            Self::R90 => 1,
            Self::R180 => 2,
            Self::R270 => 3,
        }
    }

    /// True for 90° and 270°: width and height of the natural display swap.
    pub fn is_landscape(self) -> bool {
        matches!(self, Self::R90 | Self::R270)
    }
}

/// The phone's display as the input system sees it right now (SPEC D2).
///
/// `width_px`/`height_px` are the size of the *current orientation* in physical pixels — the
/// space `input tap` uses and the size of a screenshot taken now. Source of truth order:
/// the screenshot actually taken, then `wm size` "Override size", then "Physical size".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ScreenGeometry {
    /// Width in px of the current orientation.
    pub width_px: u32,
    /// Height in px of the current orientation.
    pub height_px: u32,
    /// Density in dpi (`wm density`), `None` when unknown.
    pub density_dpi: Option<u32>,
    /// Current rotation.
    pub rotation: Rotation,
}

/// A point as emitted by the model, in the frozen [`CoordinateSpace`]. Untrusted: may be out of
/// range or fractional; the `CoordinateMapper` validates it and never clamps (SPEC M5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct ModelPoint {
    /// Horizontal coordinate (left → right).
    pub x: f64,
    /// Vertical coordinate (top → bottom).
    pub y: f64,
}

/// A point in the runtime's protocol space: `0..=999` on each axis, relative to the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct RuntimePoint {
    /// `0..=999`, left → right.
    pub x: u16,
    /// `0..=999`, top → bottom.
    pub y: u16,
}

/// A point in device pixels of the current orientation (what `input tap X Y` takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub struct DevicePoint {
    /// px from the left edge.
    pub x: u32,
    /// px from the top edge.
    pub y: u32,
}

/// `MODEL_COORDINATE_SPACE`: how the model's numbers are to be read (SPEC M4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export))]
pub enum CoordinateSpace {
    /// Integers `0..=999` relative to the image on each axis (AutoGLM-style).
    #[serde(rename = "relative_0_999")]
    Relative0999,
    /// Pixels of the image actually sent to the model (after downscaling).
    ImagePixels,
    /// Pixels of the device display.
    DisplayPixels,
    /// Negotiate before the first planning request with synthetic probes, then freeze.
    #[default]
    Auto,
}

impl CoordinateSpace {
    /// The stable name (`relative_0_999`, `image_pixels`, `display_pixels`, `auto`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Relative0999 => "relative_0_999",
            Self::ImagePixels => "image_pixels",
            Self::DisplayPixels => "display_pixels",
            Self::Auto => "auto",
        }
    }
}

impl std::str::FromStr for CoordinateSpace {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "relative_0_999" => Ok(Self::Relative0999),
            "image_pixels" => Ok(Self::ImagePixels),
            "display_pixels" => Ok(Self::DisplayPixels),
            "auto" => Ok(Self::Auto),
            other => Err(format!(
                "unknown coordinate space {other:?}: use relative_0_999, image_pixels, display_pixels or auto"
            )),
        }
    }
}

impl std::fmt::Display for CoordinateSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
