//! Oracle mode: answer coordinate-calibration probes by locating the target in the image the
//! request carried (SPEC M4, V5).
//!
//! # Probe contract
//!
//! A calibration probe is a chat request whose **last image** shows **one saturated red disc**
//! (pure-ish red: `R ≥ 140` and `R − max(G, B) ≥ 70`; diameter at least 6 px; a symmetric
//! crosshair of another colour across it, up to about 6 px wide, is fine — that is what
//! `phoneagent_llm::calibration::render_probe` draws) on a plain background (at least 60 % of
//! the non-red pixels share one colour, quantized to 16 levels per channel). "Disc" is checked:
//! its bounding box is roughly square (aspect 0.8–1.25) and under 4 % of its red pixels lie
//! outside the inscribed ellipse — so red buttons, rounded-square app icons and red text on a
//! real screenshot are not mistaken for probes. Any other red blob must be smaller than a tenth
//! of the disc. The correct answer is a tap at the disc's centre, which the oracle finds as the
//! redness-weighted centroid of the red pixels of the largest red cluster. A request routed to
//! the `calibration` queue (marker `[phoneagent-role: calibration]`) is treated as a probe even
//! if the background is busy.
//!
//! The answer is given in the configured space:
//! * `relative_0_999`: `round(1000 · (c + 0.5) / size)` per axis (clamped to 0..=999), where `c`
//!   is the centre's pixel index — so `v / 1000 · size` maps back to within one pixel;
//! * `image_pixels`: `round(c)` in pixels of the image that was sent.
//!
//! Form: with a non-empty `tools` array in the request, one tool call to the tap tool (the tool
//! named `tap`, else the first whose name contains `tap`), with arguments shaped after that
//! tool's JSON schema: `{"element": [x, y]}` when it has an `element` property (the default),
//! `{"x": x, "y": y}` when it has `x` and `y`, `{"coordinate": [x, y]}` / `{"point": [x, y]}`
//! likewise. Without tools: the text `do(action="Tap", element=[x,y])`.
//!
//! `error_px` shifts the answer right by that many image pixels before conversion; `bad`
//! answers a point a third of the image away on both axes (wrapping), wrong in every
//! interpretation, so fail-closed calibration can be tested.

use base64::Engine as _;
use image::RgbaImage;
use phoneagent_protocol::CoordinateSpace;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{Error, Result};

/// Oracle settings.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct OracleConfig {
    /// Deliberate error added to every answer, in image pixels (shifts x to the right).
    pub error_px: f64,
    /// Answer wrong on purpose (a third of the image away on both axes).
    pub bad: bool,
}

/// A target found in a probe image.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// Centre x, pixel index space (column), fractional.
    pub cx: f64,
    /// Centre y, pixel index space (row), fractional.
    pub cy: f64,
    /// Pixels in the target component.
    pub area: usize,
    /// Pixels in the second-largest red component (0 when there is none).
    pub second_area: usize,
    /// Fraction (0..1) of non-red pixels that have the dominant background colour.
    pub plain_fraction: f64,
    /// Width / height of the target's bounding box (≈ 1 for a disc).
    pub aspect: f64,
    /// Fraction (0..1) of the target's red pixels outside the ellipse inscribed in its
    /// bounding box (≈ 0 for a disc; large for squares, rounded squares, text).
    pub outside_fraction: f64,
    /// Image width in px.
    pub width: u32,
    /// Image height in px.
    pub height: u32,
}

impl Target {
    /// Whether the target is round (a disc, not a button, an icon or text).
    pub fn is_disc(&self) -> bool {
        (0.8..=1.25).contains(&self.aspect) && self.outside_fraction < 0.04
    }

    /// Whether this looks like a probe per the contract: one distinct disc, on a plain
    /// background unless `forced` (the request is known to be a probe).
    pub fn is_probe(&self, forced: bool) -> bool {
        let distinct = self.area >= 9 && self.second_area * 10 < self.area;
        distinct && self.is_disc() && (forced || self.plain_fraction >= 0.6)
    }
}

/// Decode a `data:image/...;base64,` URL into its bytes.
///
/// Errors: [`Error::Image`] when the URL is not a base64 data URL.
pub fn decode_data_url(url: &str) -> Result<Vec<u8>> {
    let rest = url.strip_prefix("data:").ok_or_else(|| {
        Error::Image(format!(
            "image URL is not a data URL (starts with {:?}); the scripted model only reads inline base64 images",
            url.chars().take(24).collect::<String>()
        ))
    })?;
    let (meta, data) = rest
        .split_once(',')
        .ok_or_else(|| Error::Image("data URL has no ',' before the data".into()))?;
    if !meta.ends_with(";base64") {
        return Err(Error::Image(format!(
            "data URL {meta:?} is not base64-encoded"
        )));
    }
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| Error::Image(format!("data URL base64 is invalid: {e}")))
}

/// Size (width, height) in px of an encoded image (PNG or JPEG), read from its header.
pub fn image_size(bytes: &[u8]) -> Result<(u32, u32)> {
    image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| Error::Image(format!("cannot read image: {e}")))?
        .into_dimensions()
        .map_err(|e| {
            Error::Image(format!(
                "cannot read image size (PNG or JPEG expected): {e}"
            ))
        })
}

/// Decode an encoded image (PNG or JPEG) to RGBA.
pub fn decode_image(bytes: &[u8]) -> Result<RgbaImage> {
    Ok(image::load_from_memory(bytes)
        .map_err(|e| Error::Image(format!("cannot decode image (PNG or JPEG expected): {e}")))?
        .to_rgba8())
}

/// Redness weight of a pixel: `R − max(G, B)` for saturated red pixels, 0 otherwise.
fn redness(r: u8, g: u8, b: u8) -> u16 {
    let m = g.max(b);
    if r >= 140 && i32::from(r) - i32::from(m) >= 70 {
        u16::from(r - m)
    } else {
        0
    }
}

/// Sampling stride of the coarse pass, px.
const STRIDE: usize = 3;

/// Red sample cells closer than this (in cells, per axis) belong to the same target, so a
/// crosshair or ring up to about `2 · STRIDE` px wide does not split the disc.
const LINK_CELLS: usize = 3;

/// Locate the red target: the largest cluster of saturated red pixels.
/// `None` when the image has no red pixel on the sampling grid.
///
/// Two passes keep this fast on full-size screenshots: a coarse pass on every third pixel of
/// every third row finds the red clusters (samples less than `LINK_CELLS` cells apart are
/// joined, bridging a crosshair) and the background histogram; the centroid of the largest
/// cluster is then computed at full resolution over its bounding box, weighted by redness.
/// Targets need a diameter of at least 6 px to be seen.
pub fn find_target(img: &RgbaImage) -> Option<Target> {
    let (w, h) = img.dimensions();
    let (wu, hu) = (w as usize, h as usize);
    let raw = img.as_raw();
    // Coarse grid.
    let (gw, gh) = (wu.div_ceil(STRIDE), hu.div_ceil(STRIDE));
    let mut red = vec![false; gw * gh];
    let mut hist = vec![0usize; 4096];
    let mut non_red = 0usize;
    for gy in 0..gh {
        let row = gy * STRIDE * wu;
        for gx in 0..gw {
            let i = (row + gx * STRIDE) * 4;
            let (r, g, b) = (raw[i], raw[i + 1], raw[i + 2]);
            if redness(r, g, b) > 0 {
                red[gy * gw + gx] = true;
            } else {
                non_red += 1;
                hist[(usize::from(r >> 4) << 8)
                    | (usize::from(g >> 4) << 4)
                    | usize::from(b >> 4)] += 1;
            }
        }
    }
    let plain_fraction = if non_red == 0 {
        0.0
    } else {
        hist.iter().copied().max().unwrap_or(0) as f64 / non_red as f64
    };
    let clusters = clusters(&mut red, gw, gh);
    let best = clusters.first()?;
    let second = clusters.get(1).map_or(0, |c| c.cells);
    // Fine pass over the cluster's bounding box (+ one stride of margin).
    let x0 = (best.min.0 * STRIDE).saturating_sub(STRIDE);
    let y0 = (best.min.1 * STRIDE).saturating_sub(STRIDE);
    let x1 = ((best.max.0 + 1) * STRIDE + STRIDE).min(wu);
    let y1 = ((best.max.1 + 1) * STRIDE + STRIDE).min(hu);
    let (mut area, mut ws, mut wx, mut wy) = (0usize, 0f64, 0f64, 0f64);
    let (mut bx0, mut by0, mut bx1, mut by1) = (usize::MAX, usize::MAX, 0usize, 0usize);
    for y in y0..y1 {
        for x in x0..x1 {
            let i = (y * wu + x) * 4;
            let wgt = redness(raw[i], raw[i + 1], raw[i + 2]);
            if wgt > 0 {
                let wgt = f64::from(wgt);
                area += 1;
                ws += wgt;
                wx += wgt * x as f64;
                wy += wgt * y as f64;
                (bx0, by0, bx1, by1) = (bx0.min(x), by0.min(y), bx1.max(x), by1.max(y));
            }
        }
    }
    if ws == 0.0 {
        return None;
    }
    // Shape: a disc fills its bounding box's inscribed ellipse and nothing outside it.
    let (bw, bh) = ((bx1 - bx0 + 1) as f64, (by1 - by0 + 1) as f64);
    let (ecx, ecy) = ((bx0 + bx1) as f64 / 2.0, (by0 + by1) as f64 / 2.0);
    let (ra, rb) = (bw / 2.0 + 1.0, bh / 2.0 + 1.0);
    let mut outside = 0usize;
    for y in by0..=by1 {
        for x in bx0..=bx1 {
            let i = (y * wu + x) * 4;
            if redness(raw[i], raw[i + 1], raw[i + 2]) > 0 {
                let (dx, dy) = ((x as f64 - ecx) / ra, (y as f64 - ecy) / rb);
                if dx * dx + dy * dy > 1.0 {
                    outside += 1;
                }
            }
        }
    }
    Some(Target {
        cx: wx / ws,
        cy: wy / ws,
        area,
        second_area: second * STRIDE * STRIDE,
        plain_fraction,
        aspect: bw / bh,
        outside_fraction: outside as f64 / area as f64,
        width: w,
        height: h,
    })
}

/// A cluster of red sample cells.
struct Cluster {
    cells: usize,
    min: (usize, usize),
    max: (usize, usize),
}

/// Clusters of `mask` cells (consumed) joined within `LINK_CELLS`, largest first.
fn clusters(mask: &mut [bool], w: usize, h: usize) -> Vec<Cluster> {
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for start in 0..w * h {
        if !mask[start] {
            continue;
        }
        mask[start] = false;
        stack.push(start);
        let mut c = Cluster {
            cells: 0,
            min: (usize::MAX, usize::MAX),
            max: (0, 0),
        };
        while let Some(i) = stack.pop() {
            let (x, y) = (i % w, i / w);
            c.cells += 1;
            c.min = (c.min.0.min(x), c.min.1.min(y));
            c.max = (c.max.0.max(x), c.max.1.max(y));
            for ny in y.saturating_sub(LINK_CELLS)..=(y + LINK_CELLS).min(h - 1) {
                for nx in x.saturating_sub(LINK_CELLS)..=(x + LINK_CELLS).min(w - 1) {
                    let j = ny * w + nx;
                    if mask[j] {
                        mask[j] = false;
                        stack.push(j);
                    }
                }
            }
        }
        out.push(c);
    }
    out.sort_by_key(|c| std::cmp::Reverse(c.cells));
    out
}

/// Convert a point in image pixel index space to the answer space (integers).
///
/// Errors: [`Error::Config`] for `display_pixels`/`auto` (the server answers only in
/// `relative_0_999` or `image_pixels`).
pub fn to_space(space: CoordinateSpace, x: f64, y: f64, w: u32, h: u32) -> Result<(i64, i64)> {
    match space {
        CoordinateSpace::Relative0999 => Ok((rel(x, w), rel(y, h))),
        CoordinateSpace::ImagePixels => Ok((x.round() as i64, y.round() as i64)),
        other => Err(Error::Config(format!(
            "coordinate space {other} is not one the scripted model answers in: use relative_0_999 or image_pixels"
        ))),
    }
}

fn rel(c: f64, size: u32) -> i64 {
    let v = (1000.0 * (c + 0.5) / f64::from(size.max(1))).round() as i64;
    v.clamp(0, 999)
}

/// The oracle's answer point for a target, in the answer space.
pub fn answer_point(
    target: &Target,
    space: CoordinateSpace,
    cfg: &OracleConfig,
) -> Result<(i64, i64)> {
    let (w, h) = (f64::from(target.width), f64::from(target.height));
    let (mut x, mut y) = (target.cx + cfg.error_px, target.cy);
    if cfg.bad {
        x = (x + w / 3.0) % w;
        y = (y + h / 3.0) % h;
    }
    to_space(space, x, y, target.width, target.height)
}

/// How to phrase a tap: the tool to call and the argument shape, from the request's `tools`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TapForm {
    /// `do(action="Tap", element=[x,y])` text.
    DoText,
    /// A tool call to `name` with arguments of `shape`.
    Tool {
        /// Function name.
        name: String,
        /// Argument shape.
        shape: ArgShape,
    },
}

/// Argument shape of a tap tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgShape {
    /// `{"element": [x, y]}`
    Element,
    /// `{"x": x, "y": y}`
    XY,
    /// `{"coordinate": [x, y]}`
    Coordinate,
    /// `{"point": [x, y]}`
    Point,
}

/// Pick the tap form for a request body (see the module docs).
pub fn tap_form(body: &Value) -> TapForm {
    let Some(tools) = body
        .get("tools")
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty())
    else {
        return TapForm::DoText;
    };
    let name_of = |t: &Value| {
        t.pointer("/function/name")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let chosen = tools
        .iter()
        .find(|t| name_of(t).as_deref() == Some("tap"))
        .or_else(|| {
            tools
                .iter()
                .find(|t| name_of(t).is_some_and(|n| n.to_ascii_lowercase().contains("tap")))
        });
    let Some(tool) = chosen else {
        return TapForm::Tool {
            name: "tap".into(),
            shape: ArgShape::Element,
        };
    };
    let props = tool.pointer("/function/parameters/properties");
    let has = |k: &str| props.and_then(|p| p.get(k)).is_some();
    let shape = if has("element") {
        ArgShape::Element
    } else if has("x") && has("y") {
        ArgShape::XY
    } else if has("coordinate") {
        ArgShape::Coordinate
    } else if has("point") {
        ArgShape::Point
    } else {
        ArgShape::Element
    };
    TapForm::Tool {
        name: name_of(tool).unwrap_or_else(|| "tap".into()),
        shape,
    }
}

/// Tool-call arguments for a tap at (x, y) in `shape`.
pub fn tap_arguments(shape: ArgShape, x: i64, y: i64) -> Value {
    match shape {
        ArgShape::Element => json!({"element": [x, y]}),
        ArgShape::XY => json!({"x": x, "y": y}),
        ArgShape::Coordinate => json!({"coordinate": [x, y]}),
        ArgShape::Point => json!({"point": [x, y]}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disc(w: u32, h: u32, cx: f64, cy: f64, r: f64) -> RgbaImage {
        RgbaImage::from_fn(w, h, |x, y| {
            let d = ((x as f64 - cx).powi(2) + (y as f64 - cy).powi(2)).sqrt();
            if d <= r {
                image::Rgba([230, 20, 20, 255])
            } else {
                image::Rgba([240, 240, 240, 255])
            }
        })
    }

    #[test]
    fn finds_disc_centre() {
        let img = disc(300, 500, 120.0, 333.0, 14.0);
        let t = find_target(&img).unwrap();
        assert!(
            (t.cx - 120.0).abs() < 0.01 && (t.cy - 333.0).abs() < 0.01,
            "{t:?}"
        );
        assert!(t.is_probe(false));
        assert!(t.plain_fraction > 0.99);
    }

    #[test]
    fn no_red_no_target_and_busy_background_is_not_probe() {
        let img = RgbaImage::from_pixel(10, 10, image::Rgba([0, 0, 255, 255]));
        assert!(find_target(&img).is_none());
        let noisy = RgbaImage::from_fn(200, 200, |x, y| {
            if (x as f64 - 100.0).hypot(y as f64 - 100.0) < 10.0 {
                image::Rgba([255, 0, 0, 255])
            } else {
                image::Rgba([(x * 7 % 120) as u8, (y * 13 % 256) as u8, 90, 255])
            }
        });
        let t = find_target(&noisy).unwrap();
        assert!(!t.is_probe(false));
        assert!(t.is_probe(true));
    }

    #[test]
    fn spaces_and_bad_mode() {
        let t = Target {
            cx: 540.0,
            cy: 1200.0,
            area: 100,
            second_area: 0,
            plain_fraction: 1.0,
            aspect: 1.0,
            outside_fraction: 0.0,
            width: 1080,
            height: 2400,
        };
        let cfg = OracleConfig::default();
        assert_eq!(
            answer_point(&t, CoordinateSpace::ImagePixels, &cfg).unwrap(),
            (540, 1200)
        );
        assert_eq!(
            answer_point(&t, CoordinateSpace::Relative0999, &cfg).unwrap(),
            (500, 500)
        );
        let bad = OracleConfig { bad: true, ..cfg };
        let (x, y) = answer_point(&t, CoordinateSpace::ImagePixels, &bad).unwrap();
        assert!((x - 540).abs() >= 359 && (y - 1200).abs() >= 799);
        assert!(answer_point(&t, CoordinateSpace::Auto, &cfg).is_err());
    }

    #[test]
    fn tap_form_follows_tool_schema() {
        assert_eq!(tap_form(&json!({})), TapForm::DoText);
        let b = json!({"tools": [
            {"type": "function", "function": {"name": "finish"}},
            {"type": "function", "function": {"name": "tap", "parameters": {"properties": {"x": {}, "y": {}}}}}
        ]});
        assert_eq!(
            tap_form(&b),
            TapForm::Tool {
                name: "tap".into(),
                shape: ArgShape::XY
            }
        );
        assert_eq!(
            tap_arguments(ArgShape::Element, 1, 2),
            json!({"element": [1, 2]})
        );
    }

    #[test]
    fn data_url_decoding_errors_are_clear() {
        assert!(
            decode_data_url("http://x/y.png")
                .unwrap_err()
                .to_string()
                .contains("not a data URL")
        );
        assert!(
            decode_data_url("data:image/png,abc")
                .unwrap_err()
                .to_string()
                .contains("base64")
        );
        assert_eq!(
            decode_data_url("data:image/png;base64,AAEC").unwrap(),
            vec![0, 1, 2]
        );
    }
}
