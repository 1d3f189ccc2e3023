//! The OCR engine: Tesseract 5 (LSTM) through libtesseract, one line at a time, and the crop
//! preparation every engine needs (polarity-free greyscale, scaled to a good glyph height).

use std::path::{Path, PathBuf};

use image::{GrayImage, Luma, RgbaImage, imageops};
use phoneagent_protocol::PxRect;

use crate::VisionError;
use crate::geometry::{INK_TOL, Rgb, clamp_rect, color_dist, is_saturated, rgb};

/// Glyph height (px) crops are scaled to before recognition: Tesseract's LSTM models read
/// best at roughly 25–40 px glyphs; smaller is faster.
pub const OCR_GLYPH_PX: f32 = 32.0;

/// A crop prepared for recognition: dark ink on white, whatever the colours were (white on red,
/// grey on a dark card, blue on white), scaled so glyphs are about [`OCR_GLYPH_PX`] tall,
/// with a white margin.
pub fn prepare_crop(img: &RgbaImage, r: PxRect, bg: Rgb) -> GrayImage {
    let r = clamp_rect(img, r);
    let (w, h) = (r.width().max(1), r.height().max(1));
    let mut dmax = 60u8;
    let (mut ink, mut sat_ink) = (0u32, 0u32);
    let mut sat = vec![false; (w * h) as usize];
    for y in r.top..r.top + h {
        for x in r.left..r.left + w {
            let c = rgb(img, x, y);
            let d = color_dist(c, bg);
            dmax = dmax.max(d);
            if d > INK_TOL {
                ink += 1;
                if is_saturated(c) {
                    sat_ink += 1;
                    sat[((y - r.top) * w + (x - r.left)) as usize] = true;
                }
            }
        }
    }
    // Grey or black text on a plain background: a thin tall bar in an accent colour is the
    // text caret, never part of the text; it is painted out.
    let caret_free = !is_saturated(bg) && sat_ink * 10 < ink * 3;
    let mut g = GrayImage::new(w, h);
    for y in 0..h {
        for x in 0..w {
            if caret_free && sat[(y * w + x) as usize] && in_thin_bar(&sat, w, h, x, y) {
                g.put_pixel(x, y, Luma([255]));
                continue;
            }
            let d = u32::from(color_dist(rgb(img, r.left + x, r.top + y), bg));
            let v = 255 - (d * 255 / u32::from(dmax)).min(255);
            g.put_pixel(x, y, Luma([v as u8]));
        }
    }
    let scale = (OCR_GLYPH_PX / h as f32).clamp(0.2, 3.0);
    let (sw, sh) = (
        ((w as f32 * scale).round() as u32).max(1),
        ((h as f32 * scale).round() as u32).max(1),
    );
    let g = if (scale - 1.0).abs() > 0.05 {
        imageops::resize(&g, sw, sh, imageops::FilterType::Triangle)
    } else {
        g
    };
    let pad = 12u32;
    let mut out = GrayImage::from_pixel(g.width() + 2 * pad, g.height() + 2 * pad, Luma([255]));
    imageops::overlay(&mut out, &g, i64::from(pad), i64::from(pad));
    out
}

/// True when (x, y) lies in a vertical run of `mask` ≥ 24 px tall whose row extent is ≤ 6 px.
fn in_thin_bar(mask: &[bool], w: u32, h: u32, x: u32, y: u32) -> bool {
    let at = |x: u32, y: u32| mask[(y * w + x) as usize];
    let (mut t, mut b) = (y, y);
    while t > 0 && at(x, t - 1) {
        t -= 1;
    }
    while b + 1 < h && at(x, b + 1) {
        b += 1;
    }
    if b - t + 1 < 24 {
        return false;
    }
    let (mut l, mut rr) = (x, x);
    while l > 0 && at(l - 1, y) {
        l -= 1;
    }
    while rr + 1 < w && at(rr + 1, y) {
        rr += 1;
    }
    rr - l < 6
}

/// Tidy OCR output: trim, collapse whitespace, and drop the spaces Tesseract puts between
/// CJK characters ("确 认 支 付" → "确认支付"); spaces between Latin words stay.
pub fn tidy(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            let prev = out.chars().last();
            let next = w.chars().next();
            let cjk_join = prev.is_some_and(is_cjkish) || next.is_some_and(is_cjkish);
            if !cjk_join {
                out.push(' ');
            }
        }
        out.push_str(w);
    }
    out
}

/// CJK ideographs, kana, hangul, CJK and full-width punctuation.
fn is_cjkish(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFE30..=0xFE4F | 0xFF00..=0xFFEF
            | 0x20000..=0x2FFFF)
}

/// True when `text` reads as text: it has a letter, digit or ideograph, and is not a lone
/// symbol Tesseract makes up from an icon.
pub fn looks_like_text(text: &str) -> bool {
    let meaningful = text.chars().filter(|c| c.is_alphanumeric()).count();
    meaningful >= 1 && !(text.chars().count() == 1 && text.chars().all(|c| c.is_ascii_alphabetic()))
}

/// Where Tesseract's language data (`<lang>.traineddata`) is looked for, first existing wins:
/// the configured dir, `$TESSDATA_PREFIX` (and its `tessdata/`), then the usual install dirs of
/// Debian/Ubuntu, Homebrew (Apple silicon and Intel), MacPorts and the Windows installer.
pub fn tessdata_candidates(configured: Option<&Path>) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(p) = configured {
        v.push(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("TESSDATA_PREFIX") {
        let p = PathBuf::from(p);
        v.push(p.join("tessdata"));
        v.push(p);
    }
    for p in [
        "/usr/share/tesseract-ocr/5/tessdata",
        "/usr/share/tesseract-ocr/4.00/tessdata",
        "/usr/share/tessdata",
        "/usr/local/share/tessdata",
        "/opt/homebrew/share/tessdata",
        "/opt/local/share/tessdata",
        "C:\\Program Files\\Tesseract-OCR\\tessdata",
    ] {
        v.push(PathBuf::from(p));
    }
    v
}

/// The first candidate dir that holds `<lang>.traineddata` for every language, or the error
/// naming the missing languages and the fix.
pub fn find_tessdata(configured: Option<&Path>, langs: &[String]) -> Result<PathBuf, VisionError> {
    let cands = tessdata_candidates(configured);
    let mut best: Option<(usize, &PathBuf)> = None;
    for c in &cands {
        let have = langs
            .iter()
            .filter(|l| c.join(format!("{l}.traineddata")).is_file())
            .count();
        if have == langs.len() && !langs.is_empty() {
            return Ok(c.clone());
        }
        if have > 0 && best.is_none_or(|(n, _)| have > n) {
            best = Some((have, c));
        }
    }
    let missing: Vec<String> = match best {
        Some((_, dir)) => langs
            .iter()
            .filter(|l| !dir.join(format!("{l}.traineddata")).is_file())
            .cloned()
            .collect(),
        None => langs.to_vec(),
    };
    Err(VisionError::LanguageDataMissing {
        missing,
        searched: cands
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

#[cfg(feature = "tesseract")]
mod engine {
    use std::ffi::CString;
    use std::path::Path;
    use std::sync::Mutex;

    use image::GrayImage;
    use tesseract_plumbing::TessBaseApi;
    use tesseract_plumbing::tesseract_sys::{
        TessOcrEngineMode_OEM_LSTM_ONLY, TessPageSegMode_PSM_SINGLE_LINE,
    };

    use crate::VisionError;

    /// One initialised Tesseract (its models loaded once, ~0.3 s), used one line at a time.
    pub struct Engine {
        api: Mutex<TessBaseApi>,
    }

    impl Engine {
        /// Load `langs` (joined with `+`, e.g. `chi_sim+eng`) from `tessdata`.
        pub fn new(tessdata: &Path, langs: &str) -> Result<Engine, VisionError> {
            let init_failed = |why: &str| {
                VisionError::EngineInit(format!(
                    "Tesseract could not load \"{langs}\" from {}: {why}",
                    tessdata.display()
                ))
            };
            let dir = CString::new(tessdata.to_string_lossy().as_bytes())
                .map_err(|_| init_failed("the path has a NUL byte"))?;
            let lang = CString::new(langs).map_err(|_| init_failed("a language has a NUL byte"))?;
            let mut api = TessBaseApi::create();
            api.init_4(Some(&dir), Some(&lang), TessOcrEngineMode_OEM_LSTM_ONLY)
                .map_err(|_| init_failed("init failed (corrupt or incompatible .traineddata?)"))?;
            // No second pass on an inverted copy (crops are already dark on white): that pass
            // doubles the time of every unsure line.
            for (k, v) in [
                ("debug_file", "/dev/null"),
                ("user_defined_dpi", "300"),
                ("tessedit_do_invert", "0"),
            ] {
                if let (Ok(k), Ok(v)) = (CString::new(k), CString::new(v)) {
                    // Best effort: a missing variable only means more noise on stderr.
                    let _ = api.set_variable(&k, &v);
                }
            }
            api.set_page_seg_mode(TessPageSegMode_PSM_SINGLE_LINE);
            Ok(Engine {
                api: Mutex::new(api),
            })
        }

        /// Recognise one text line; returns the text and Tesseract's mean confidence (0..=100).
        pub fn read_line(&self, g: &GrayImage) -> Option<(String, i32)> {
            let mut api = self.api.lock().unwrap_or_else(|p| p.into_inner());
            let (w, h) = (g.width() as i32, g.height() as i32);
            api.set_image(g.as_raw(), w, h, 1, w).ok()?;
            api.set_source_resolution(300);
            let text = api.get_utf8_text().ok()?;
            let s = text.as_ref().to_string_lossy().into_owned();
            Some((s, api.mean_text_conf()))
        }
    }

    /// `tesseract 5.3.0`.
    pub fn version() -> String {
        format!(
            "tesseract {}",
            tesseract_plumbing::version().to_string_lossy()
        )
    }
}

#[cfg(feature = "tesseract")]
pub use engine::{Engine, version};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy_joins_cjk_and_keeps_latin_spaces() {
        assert_eq!(tidy(" 确 认 支 付 \n"), "确认支付");
        assert_eq!(tidy("Place  order"), "Place order");
        assert_eq!(tidy("实付款: ¥199"), "实付款: ¥199");
        assert_eq!(tidy("删除 Account"), "删除Account");
    }

    #[test]
    fn icon_noise_is_not_text() {
        assert!(!looks_like_text("@"));
        assert!(!looks_like_text("Q"));
        assert!(!looks_like_text(" — "));
        assert!(looks_like_text("发送"));
        assert!(looks_like_text("OK"));
        assert!(looks_like_text("5"));
    }

    #[test]
    fn prepared_crop_is_dark_on_white_for_white_on_red() {
        let mut img = RgbaImage::from_pixel(100, 40, image::Rgba([230, 40, 40, 255]));
        for x in 40..60 {
            for y in 10..30 {
                img.put_pixel(x, y, image::Rgba([255, 255, 255, 255]));
            }
        }
        let g = prepare_crop(
            &img,
            PxRect {
                left: 0,
                top: 0,
                right: 100,
                bottom: 40,
            },
            [230, 40, 40],
        );
        let (w, h) = (g.width(), g.height());
        assert!(g.get_pixel(2, 2).0[0] > 240, "background becomes white");
        assert!(
            g.get_pixel(w / 2, h / 2).0[0] < 30,
            "white ink becomes black"
        );
    }
}
