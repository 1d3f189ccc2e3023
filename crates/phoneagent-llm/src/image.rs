//! Screenshot sizing for the model (SPEC M6).
//!
//! [`prepare_image`] downscales a screenshot to the profile's [`ImagePolicy`] (long side and
//! pixel budget, optionally rounded to a multiple of a patch size) with `fast_image_resize`
//! (Lanczos3), encodes it as JPEG or PNG and records the original size, the size actually sent
//! and the scale per axis. Coordinates the model emits in image pixels are always mapped back
//! from the *sent* size ([`crate::mapper`]).
//!
//! Provider limits that motivate the defaults (documented by the providers):
//! * Anthropic resizes images whose long side exceeds 1568 px (and ~1.15 MP), silently
//!   shifting pixel coordinates; OpenAI `detail: high` scales to fit 2048 px then 768 px on the
//!   short side; Qwen2-VL-style processors (vLLM/SGLang) resize to multiples of 28 px within
//!   `max_pixels` (default 12 845 056 in the processor, often configured to ~1 M).
//! * The default policy therefore sends at most 1568 px on the long side and at most
//!   1 003 520 px (1280·28·28) in total, which no common provider resizes further; a
//!   1080×2400 phone screenshot goes out as 672×1493 JPEG q85.
//!
//! Never upscales: a screenshot already inside the budget is sent at its own size.

use std::io::Cursor;

use base64::Engine;
use fast_image_resize as fr;
use image::{ExtendedColorType, ImageEncoder, RgbaImage};
use serde::{Deserialize, Serialize};

use crate::error::{LlmError, Result};

/// Encoding of the image sent to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    /// JPEG with [`ImagePolicy::quality`]; small, the default.
    #[default]
    Jpeg,
    /// PNG, lossless; larger.
    Png,
}

impl ImageFormat {
    /// MIME type.
    pub fn mime(self) -> &'static str {
        match self {
            Self::Jpeg => "image/jpeg",
            Self::Png => "image/png",
        }
    }
}

/// How screenshots are sized and encoded for one model profile (the `image` object of a
/// profile in `models.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImagePolicy {
    /// Maximum long side of the sent image, px (default 1568).
    pub max_long_side: u32,
    /// Maximum width·height of the sent image, px (default 1 003 520).
    pub max_pixels: u64,
    /// JPEG or PNG (default JPEG).
    pub format: ImageFormat,
    /// JPEG quality 1..=100 (default 85; ignored for PNG).
    pub quality: u8,
    /// When set (e.g. 28 for Qwen-VL processors), each sent side is rounded *down* to a multiple
    /// of this many px so the server's processor does not resize again; the aspect ratio may
    /// then change slightly, which is why scales are recorded per axis. `None` = no rounding.
    pub multiple_of: Option<u32>,
}

impl Default for ImagePolicy {
    fn default() -> Self {
        Self {
            max_long_side: 1568,
            max_pixels: 1_003_520,
            format: ImageFormat::Jpeg,
            quality: 85,
            multiple_of: None,
        }
    }
}

impl ImagePolicy {
    /// Checks the bounds; the error names the field and the allowed range.
    pub fn validate(&self) -> Result<()> {
        if self.max_long_side < 28 {
            return Err(LlmError::config(format!(
                "image.max_long_side {} is too small: use at least 28 px (1568 is a good default)",
                self.max_long_side
            )));
        }
        if self.max_pixels < 28 * 28 {
            return Err(LlmError::config(format!(
                "image.max_pixels {} is too small: use at least 784 px",
                self.max_pixels
            )));
        }
        if !(1..=100).contains(&self.quality) {
            return Err(LlmError::config(format!(
                "image.quality {} is out of range: use 1..=100",
                self.quality
            )));
        }
        if let Some(m) = self.multiple_of
            && !(1..=256).contains(&m)
        {
            return Err(LlmError::config(format!(
                "image.multiple_of {m} is out of range: use 1..=256 (28 for Qwen-VL)"
            )));
        }
        Ok(())
    }

    /// The size `(w, h)` a `width`×`height` screenshot is sent at: scaled uniformly to fit both
    /// limits (never up), then rounded down to `multiple_of` (but at least one multiple).
    pub fn target_size(&self, width: u32, height: u32) -> (u32, u32) {
        let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
        let long = w.max(h);
        let mut s = (f64::from(self.max_long_side) / long).min(1.0);
        let px = w * h * s * s;
        if px > self.max_pixels as f64 {
            s *= (self.max_pixels as f64 / px).sqrt();
        }
        // The epsilon keeps exact ratios (e.g. 28/45) from flooring one px short.
        let mut tw = ((w * s + 1e-9).floor() as u32).max(1);
        let mut th = ((h * s + 1e-9).floor() as u32).max(1);
        if let Some(m) = self.multiple_of.filter(|m| *m > 1) {
            tw = (tw / m).max(1) * m;
            th = (th / m).max(1) * m;
            // Rounding up to one multiple can exceed the original: never upscale.
            tw = tw.min(width.max(1));
            th = th.min(height.max(1));
        }
        (tw, th)
    }

    /// A stable string naming this policy, part of the calibration cache key (SPEC M4).
    pub fn fingerprint(&self) -> String {
        format!(
            "long{}-px{}-{}-q{}-m{}",
            self.max_long_side,
            self.max_pixels,
            self.format.mime(),
            self.quality,
            self.multiple_of.unwrap_or(1)
        )
    }
}

/// A screenshot ready to send, with the geometry needed to map coordinates back.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct PreparedImage {
    /// Encoded bytes (JPEG or PNG).
    #[serde(skip)]
    pub bytes: Vec<u8>,
    /// `image/jpeg` or `image/png`.
    pub mime: String,
    /// Size of the screenshot as taken, px `(w, h)`.
    pub original: (u32, u32),
    /// Size actually sent to the model, px `(w, h)`.
    pub sent: (u32, u32),
    /// `sent / original` per axis `(sx, sy)`; equal unless `multiple_of` rounding applied.
    pub scale: (f64, f64),
}

impl std::fmt::Debug for PreparedImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedImage")
            .field("bytes", &self.bytes.len())
            .field("mime", &self.mime)
            .field("original", &self.original)
            .field("sent", &self.sent)
            .field("scale", &self.scale)
            .finish()
    }
}

impl PreparedImage {
    /// `data:<mime>;base64,<…>` for an `image_url` content part.
    pub fn data_url(&self) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(&self.bytes);
        format!("data:{};base64,{b64}", self.mime)
    }
}

/// Downscales and encodes `img` per `policy` (SPEC M6). Errors only for an empty image, an
/// invalid policy or an encoder failure.
pub fn prepare_image(img: &RgbaImage, policy: &ImagePolicy) -> Result<PreparedImage> {
    policy.validate()?;
    let (w, h) = img.dimensions();
    if w == 0 || h == 0 {
        return Err(LlmError::Image(format!(
            "the screenshot is empty ({w}x{h} px)"
        )));
    }
    let (tw, th) = policy.target_size(w, h);
    let resized;
    let pixels: &[u8] = if (tw, th) == (w, h) {
        img.as_raw()
    } else {
        let _phase = tracing::trace_span!(target: "phoneagent::phase", "image_resize").entered();
        resized = resize_rgba(img, tw, th)?;
        &resized
    };
    let _phase = tracing::trace_span!(target: "phoneagent::phase", "image_encode").entered();
    let mut bytes = Vec::with_capacity((tw * th) as usize / 4);
    match policy.format {
        ImageFormat::Jpeg => {
            // `jpeg-encoder` (SIMD when the CPU has it) takes RGBA and drops the alpha
            // (screenshots are opaque); the `image` crate's encoder was 3–4x slower here.
            let (w16, h16) = match (u16::try_from(tw), u16::try_from(th)) {
                (Ok(w), Ok(h)) => (w, h),
                _ => {
                    return Err(LlmError::Image(format!(
                        "{tw}x{th} px is too large for JPEG (max 65535 px a side): use a smaller image policy"
                    )));
                }
            };
            jpeg_encoder::Encoder::new(&mut bytes, policy.quality)
                .encode(pixels, w16, h16, jpeg_encoder::ColorType::Rgba)
                .map_err(|e| LlmError::Image(format!("JPEG encoding failed: {e}")))?;
        }
        ImageFormat::Png => {
            image::codecs::png::PngEncoder::new_with_quality(
                Cursor::new(&mut bytes),
                image::codecs::png::CompressionType::Fast,
                image::codecs::png::FilterType::Adaptive,
            )
            .write_image(pixels, tw, th, ExtendedColorType::Rgba8)
            .map_err(|e| LlmError::Image(format!("PNG encoding failed: {e}")))?;
        }
    }
    Ok(PreparedImage {
        bytes,
        mime: policy.format.mime().to_string(),
        original: (w, h),
        sent: (tw, th),
        scale: (f64::from(tw) / f64::from(w), f64::from(th) / f64::from(h)),
    })
}

fn resize_rgba(img: &RgbaImage, tw: u32, th: u32) -> Result<Vec<u8>> {
    let (w, h) = img.dimensions();
    let src = fr::images::ImageRef::new(w, h, img.as_raw(), fr::PixelType::U8x4)
        .map_err(|e| LlmError::Image(format!("bad source image {w}x{h}: {e}")))?;
    let mut dst = fr::images::Image::new(tw, th, fr::PixelType::U8x4);
    let mut resizer = fr::Resizer::new();
    // Screenshots are opaque: skipping the alpha premultiply/unpremultiply passes halves the
    // work and gives the same pixels for alpha = 255 (checked in the tests).
    let opts = fr::ResizeOptions::new()
        .resize_alg(fr::ResizeAlg::Convolution(fr::FilterType::Lanczos3))
        .use_alpha(false);
    resizer
        .resize(&src, &mut dst, &opts)
        .map_err(|e| LlmError::Image(format!("resizing {w}x{h} to {tw}x{th} failed: {e}")))?;
    Ok(dst.into_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Skipping the alpha passes must not change the pixels of an opaque screenshot: compare
    /// with fast_image_resize's alpha-aware path on a frame with edges, gradients and text-like
    /// stripes (max difference per channel ≤ 1 for rounding).
    #[test]
    fn resize_without_alpha_passes_matches_the_alpha_aware_resize_on_opaque_frames() {
        let (w, h) = (540u32, 1200u32);
        let img = RgbaImage::from_fn(w, h, |x, y| {
            let stripe = if (y / 9) % 4 == 0 && (x / 7) % 3 != 0 {
                40
            } else {
                245
            };
            let v = if (200..700).contains(&y) {
                (x * 255 / w) as u8
            } else {
                stripe
            };
            image::Rgba([v, (y % 251) as u8, v ^ (x as u8), 255])
        });
        let (tw, th) = ImagePolicy::default().target_size(1080, 2400);
        let (tw, th) = (tw / 2, th / 2);
        let fast = resize_rgba(&img, tw, th).unwrap();
        let src = fr::images::ImageRef::new(w, h, img.as_raw(), fr::PixelType::U8x4).unwrap();
        let mut dst = fr::images::Image::new(tw, th, fr::PixelType::U8x4);
        fr::Resizer::new()
            .resize(
                &src,
                &mut dst,
                &fr::ResizeOptions::new()
                    .resize_alg(fr::ResizeAlg::Convolution(fr::FilterType::Lanczos3))
                    .use_alpha(true),
            )
            .unwrap();
        let reference = dst.into_vec();
        assert_eq!(fast.len(), reference.len());
        let max = fast
            .iter()
            .zip(&reference)
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap();
        assert!(max <= 1, "max channel difference {max}");
        assert!(fast.chunks_exact(4).all(|p| p[3] == 255), "stays opaque");
    }

    #[test]
    fn default_policy_sizes() {
        let p = ImagePolicy::default();
        assert_eq!(p.target_size(1080, 2400), (672, 1493));
        // Landscape: same budget, swapped.
        assert_eq!(p.target_size(2400, 1080), (1493, 672));
        // Small images are never upscaled.
        assert_eq!(p.target_size(400, 800), (400, 800));
        for (w, h) in [(1080, 2400), (1216, 2688), (1440, 3200), (720, 1600)] {
            let (tw, th) = p.target_size(w, h);
            assert!(tw.max(th) <= p.max_long_side);
            assert!(u64::from(tw) * u64::from(th) <= p.max_pixels);
        }
    }

    #[test]
    fn long_side_limit_and_multiple_of() {
        let p = ImagePolicy {
            max_long_side: 1000,
            max_pixels: u64::MAX,
            multiple_of: Some(28),
            ..Default::default()
        };
        let (tw, th) = p.target_size(1080, 2400);
        assert_eq!((tw % 28, th % 28), (0, 0));
        assert!(th <= 1000);
        assert_eq!((tw, th), (448, 980));
    }

    #[test]
    fn prepare_records_geometry_and_decodes() {
        let img = RgbaImage::from_fn(1080, 2400, |x, y| {
            image::Rgba([(x % 256) as u8, (y % 256) as u8, 128, 255])
        });
        for format in [ImageFormat::Jpeg, ImageFormat::Png] {
            let p = ImagePolicy {
                format,
                ..Default::default()
            };
            let out = prepare_image(&img, &p).unwrap();
            assert_eq!(out.original, (1080, 2400));
            assert_eq!(out.sent, (672, 1493));
            assert!((out.scale.0 - 672.0 / 1080.0).abs() < 1e-12);
            let decoded = image::load_from_memory(&out.bytes).unwrap();
            assert_eq!((decoded.width(), decoded.height()), out.sent);
            assert!(
                out.data_url()
                    .starts_with(&format!("data:{};base64,", format.mime()))
            );
        }
    }

    #[test]
    fn invalid_policy_named() {
        let p = ImagePolicy {
            quality: 0,
            ..Default::default()
        };
        let e = prepare_image(&RgbaImage::new(10, 10), &p).unwrap_err();
        assert!(e.to_string().contains("image.quality"), "{e}");
        let e = prepare_image(&RgbaImage::new(0, 10), &ImagePolicy::default()).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
    }
}
