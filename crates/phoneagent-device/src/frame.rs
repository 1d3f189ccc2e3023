//! Screen frames (SPEC D3): PNG and raw `screencap` decoding, blank-frame detection, and the
//! downscale to the model's image size. Pure CPU work; callers run it off the async runtime.

use crate::Result;
use crate::types::DeviceError;
use image::RgbaImage;

/// The PNG signature.
const PNG_MAGIC: &[u8; 8] = b"\x89PNG\r\n\x1a\n";

/// Largest channel spread (max − min, per channel) for a frame to count as uniform/blank.
pub const BLANK_TOLERANCE: u8 = 4;

/// Decode `screencap -p` output.
///
/// # Errors
/// [`DeviceError::Protocol`] when the bytes are not a complete PNG (names what came instead,
/// e.g. an error message printed by `screencap`).
pub fn decode_png(bytes: &[u8]) -> Result<RgbaImage> {
    if bytes.len() < 8 || &bytes[..8] != PNG_MAGIC {
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(120)]).into_owned();
        return Err(DeviceError::Protocol(format!(
            "screencap returned {} bytes that are not a PNG: {head:?}",
            bytes.len()
        )));
    }
    let img = image::load_from_memory_with_format(bytes, image::ImageFormat::Png)
        .map_err(|e| DeviceError::Protocol(format!("screencap PNG does not decode: {e}")))?;
    Ok(img.into_rgba8())
}

/// Decode raw `screencap` output: a header of u32 LE width, height, format (1 = RGBA_8888,
/// 2 = RGBX_8888) and, since Android 8, a u32 colorspace; then width×height×4 bytes.
///
/// # Errors
/// [`DeviceError::Protocol`] for unknown formats or a short buffer.
pub fn decode_raw(bytes: &[u8]) -> Result<RgbaImage> {
    let u32_at = |i: usize| -> Option<u32> {
        bytes
            .get(i..i + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(w), Some(h), Some(fmt)) = (u32_at(0), u32_at(4), u32_at(8)) else {
        return Err(DeviceError::Protocol(format!(
            "raw screencap returned only {} bytes",
            bytes.len()
        )));
    };
    if !(fmt == 1 || fmt == 2) {
        return Err(DeviceError::Protocol(format!(
            "raw screencap pixel format {fmt} is not RGBA_8888/RGBX_8888: use the PNG path"
        )));
    }
    if w == 0 || h == 0 || w > 16384 || h > 16384 {
        return Err(DeviceError::Protocol(format!(
            "raw screencap size {w}x{h} is implausible"
        )));
    }
    let n = (w as usize) * (h as usize) * 4;
    // Android 8+ writes a 16-byte header (with colorspace); older ones 12 bytes.
    let hdr = if bytes.len() >= 16 + n { 16 } else { 12 };
    let Some(px) = bytes.get(hdr..hdr + n) else {
        return Err(DeviceError::Protocol(format!(
            "raw screencap {w}x{h} needs {n} pixel bytes, got {}",
            bytes.len().saturating_sub(hdr)
        )));
    };
    let mut v = px.to_vec();
    if fmt == 2 {
        for p in v.chunks_exact_mut(4) {
            p[3] = 255;
        }
    }
    RgbaImage::from_raw(w, h, v)
        .ok_or_else(|| DeviceError::Protocol("raw screencap buffer size mismatch".into()))
}

/// Encode a frame as PNG (fast compression) — used for the raw capture path.
///
/// # Errors
/// [`DeviceError::Protocol`] if the encoder fails.
pub fn encode_png(img: &RgbaImage) -> Result<Vec<u8>> {
    use image::ImageEncoder as _;
    let mut out = Vec::with_capacity(img.as_raw().len() / 8);
    image::codecs::png::PngEncoder::new_with_quality(
        &mut out,
        image::codecs::png::CompressionType::Fast,
        image::codecs::png::FilterType::Adaptive,
    )
    .write_image(
        img.as_raw(),
        img.width(),
        img.height(),
        image::ExtendedColorType::Rgba8,
    )
    .map_err(|e| DeviceError::Protocol(format!("PNG encode failed: {e}")))?;
    Ok(out)
}

/// True when every pixel has (nearly) the same colour: what a secure window (FLAG_SECURE) or a
/// screen that is off gives — `screenshot_blocked`, not a screen (SPEC D3). Alpha is ignored.
pub fn is_blank(img: &RgbaImage) -> bool {
    let raw = img.as_raw();
    if raw.len() < 4 {
        return true;
    }
    // Fast path: rows identical to a row of the first pixel (memcmp; the usual black frame).
    let row_len = img.width() as usize * 4;
    let first_row: Vec<u8> = raw[..4].repeat(img.width() as usize);
    if raw.chunks_exact(row_len).all(|r| r == first_row.as_slice()) {
        return true;
    }
    let (mut lo, mut hi) = ([raw[0], raw[1], raw[2]], [raw[0], raw[1], raw[2]]);
    // Tolerant scan with early exit on the first clearly different pixel.
    for p in raw.chunks_exact(4) {
        for c in 0..3 {
            lo[c] = lo[c].min(p[c]);
            hi[c] = hi[c].max(p[c]);
            if hi[c] - lo[c] > BLANK_TOLERANCE {
                return false;
            }
        }
    }
    true
}

/// Downscale so the long side is at most `long_side` px, keeping the aspect ratio (bilinear,
/// with fast_image_resize's SIMD paths). Frames already small enough are copied unchanged.
///
/// # Errors
/// [`DeviceError::Protocol`] if the resizer rejects the buffers (should not happen).
pub fn downscale_long_side(img: &RgbaImage, long_side: u32) -> Result<RgbaImage> {
    downscale_with(img, long_side, fast_image_resize::FilterType::Bilinear)
}

/// [`downscale_long_side`] with `filter`.
fn downscale_with(
    img: &RgbaImage,
    long_side: u32,
    filter: fast_image_resize::FilterType,
) -> Result<RgbaImage> {
    use fast_image_resize as fr;
    let (w, h) = img.dimensions();
    let long = w.max(h);
    if long <= long_side || long_side == 0 {
        return Ok(img.clone());
    }
    let scale = f64::from(long_side) / f64::from(long);
    let nw = ((f64::from(w) * scale).round() as u32).max(1);
    let nh = ((f64::from(h) * scale).round() as u32).max(1);
    let src = fr::images::ImageRef::new(w, h, img.as_raw(), fr::PixelType::U8x4)
        .map_err(|e| DeviceError::Protocol(format!("resize source: {e}")))?;
    let mut dst = fr::images::Image::new(nw, nh, fr::PixelType::U8x4);
    let opts = fr::ResizeOptions::new()
        .resize_alg(fr::ResizeAlg::Convolution(filter))
        .use_alpha(false);
    fr::Resizer::new()
        .resize(&src, &mut dst, &opts)
        .map_err(|e| DeviceError::Protocol(format!("resize: {e}")))?;
    RgbaImage::from_raw(nw, nh, dst.into_vec())
        .ok_or_else(|| DeviceError::Protocol("resize produced a wrong-sized buffer".into()))
}

/// A downscaled JPEG of `img` for a viewer (the app's mirror and timeline, SPEC U1): long side
/// at most `long_side` px (aspect kept; 0 = full size), `quality` 1..=100. About a tenth of the
/// PNG's bytes at 960 px / 80. Compiled with this crate's optimisation (a 1080×2400 frame takes
/// a few ms), which the app crate's debug build does not have.
///
/// # Errors
/// [`DeviceError::Protocol`] when resizing or encoding fails (should not happen).
pub fn jpeg_thumbnail(img: &RgbaImage, long_side: u32, quality: u8) -> Result<Vec<u8>> {
    // An area average (box filter): half the taps of bilinear at a 2.5× reduction, and the
    // usual filter for a viewer's thumbnail; this runs for every frame the mirror shows.
    let small = downscale_with(img, long_side, fast_image_resize::FilterType::Box)?;
    let (w, h) = small.dimensions();
    let (w16, h16) = (
        u16::try_from(w).map_err(|_| DeviceError::Protocol(format!("jpeg: width {w} > 65535")))?,
        u16::try_from(h).map_err(|_| DeviceError::Protocol(format!("jpeg: height {h} > 65535")))?,
    );
    // jpeg-encoder (SIMD) takes RGBA as it is and drops alpha: 3-4x faster than image's
    // encoder on a 960 px frame, which bounded the mirror's frame rate (issue #12).
    let mut out = Vec::with_capacity((w * h / 6) as usize);
    jpeg_encoder::Encoder::new(&mut out, quality.clamp(1, 100))
        .encode(small.as_raw(), w16, h16, jpeg_encoder::ColorType::Rgba)
        .map_err(|e| DeviceError::Protocol(format!("jpeg: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(w: u32, h: u32) -> RgbaImage {
        RgbaImage::from_fn(w, h, |x, y| {
            image::Rgba([(x % 256) as u8, (y % 256) as u8, 128, 255])
        })
    }

    #[test]
    fn jpeg_thumbnail_is_small_and_keeps_the_aspect() {
        let img = pattern(1080, 2400);
        let jpg = jpeg_thumbnail(&img, 960, 80).unwrap();
        let back = image::load_from_memory(&jpg).unwrap();
        assert_eq!((back.width(), back.height()), (432, 960));
        assert!(jpg.len() < 100_000, "{} bytes", jpg.len());
        let same = jpeg_thumbnail(&pattern(100, 50), 960, 80).unwrap();
        let back = image::load_from_memory(&same).unwrap();
        assert_eq!((back.width(), back.height()), (100, 50));
    }

    #[test]
    fn png_roundtrip_and_garbage() {
        let img = pattern(64, 32);
        let png = encode_png(&img).unwrap();
        assert_eq!(decode_png(&png).unwrap(), img);
        let e = decode_png(b"/system/bin/sh: screencap: inaccessible or not found\n").unwrap_err();
        assert!(e.to_string().contains("not a PNG"), "{e}");
        let e = decode_png(&png[..png.len() / 2]).unwrap_err();
        assert!(e.to_string().contains("does not decode"), "{e}");
        assert!(decode_png(b"").is_err());
    }

    #[test]
    fn raw_16_and_12_byte_headers() {
        let img = pattern(3, 2);
        let mut raw16 = Vec::new();
        for v in [3u32, 2, 1, 0] {
            raw16.extend_from_slice(&v.to_le_bytes());
        }
        raw16.extend_from_slice(img.as_raw());
        assert_eq!(decode_raw(&raw16).unwrap(), img);
        let mut raw12 = Vec::new();
        for v in [3u32, 2, 1] {
            raw12.extend_from_slice(&v.to_le_bytes());
        }
        raw12.extend_from_slice(img.as_raw());
        assert_eq!(decode_raw(&raw12).unwrap(), img);
        assert!(decode_raw(&raw16[..20]).is_err());
        let mut bad = raw16.clone();
        bad[8] = 4; // RGB_565
        assert!(
            decode_raw(&bad)
                .unwrap_err()
                .to_string()
                .contains("PNG path")
        );
    }

    #[test]
    fn blank_detection() {
        let black = RgbaImage::from_pixel(100, 200, image::Rgba([0, 0, 0, 255]));
        assert!(is_blank(&black));
        let mut noisy = RgbaImage::from_pixel(100, 200, image::Rgba([10, 10, 10, 255]));
        noisy.put_pixel(50, 50, image::Rgba([12, 11, 13, 255]));
        assert!(is_blank(&noisy), "compression noise stays blank");
        let mut one = black.clone();
        one.put_pixel(99, 199, image::Rgba([255, 255, 255, 255]));
        assert!(!is_blank(&one), "one real pixel makes it a screen");
        assert!(!is_blank(&pattern(10, 10)));
    }

    #[test]
    fn downscale_keeps_aspect() {
        let img = pattern(540, 1200);
        let s = downscale_long_side(&img, 640).unwrap();
        assert_eq!(s.dimensions(), (288, 640));
        let land = pattern(1200, 540);
        assert_eq!(
            downscale_long_side(&land, 640).unwrap().dimensions(),
            (640, 288)
        );
        let small = pattern(100, 50);
        assert_eq!(downscale_long_side(&small, 1280).unwrap(), small);
        // Content survives: a flat colour stays that colour.
        let flat = RgbaImage::from_pixel(400, 800, image::Rgba([200, 100, 50, 255]));
        let f = downscale_long_side(&flat, 100).unwrap();
        assert_eq!(f.dimensions(), (50, 100));
        assert!(f.pixels().all(|p| p.0 == [200, 100, 50, 255]));
    }
}
