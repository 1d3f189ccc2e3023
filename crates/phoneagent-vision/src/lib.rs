//! # phoneagent-vision
//!
//! The safety gate's own eyes (SPEC S10, S11, P6): for a gated action it reads the pixels the
//! action touches in the planning frame — the element under the tap point, the dialog it sits
//! in, the page title, the sibling buttons of its row, the label of the focused field — with a
//! real OCR engine (Tesseract 5, LSTM, `chi_sim+eng`, unsure lines again with `chi_tra`), and returns a
//! [`phoneagent_protocol::ScreenReading`]. The gate treats every text in it as one more
//! classification source that can only raise a tier; nothing here is shown to the planning
//! model.
//!
//! ```no_run
//! use phoneagent_vision::{ReadPurpose, ReaderConfig, ScreenReader};
//! # fn demo(frame: &image::RgbaImage) -> Result<(), phoneagent_vision::VisionError> {
//! let reader = ScreenReader::new(ReaderConfig::default())?; // loads the models once (~0.5 s)
//! let reading = reader.read(frame, (540, 2250), ReadPurpose::Tap); // one gated action
//! println!("{:?} in {} ms", reading.target_text, reading.elapsed_ms);
//! # Ok(()) }
//! ```
//!
//! How it reads: the uniform region around the point (flood fill on a 2 px grid) is the
//! element (a button, a row, a field); its ink components merged into text lines are its
//! label; a card of one colour over a darker screen around it is a dialog; only those crops are
//! OCR'd, each scaled to ~32 px glyphs and turned into dark-on-white whatever its colours
//! (white on red, dark mode). [`mark_point`] and [`crop_around`] make the two images the
//! isolated visual reviewer sees.
//!
//! [`ScreenReader`] is `Send + Sync`; a read is synchronous CPU work of tens of ms: call it
//! from `spawn_blocking` in async code. Readings are serialized on one engine instance.

pub mod geometry;
mod mark;
pub mod ocr;
mod read;

use std::path::PathBuf;
use std::time::Instant;

use image::RgbaImage;
use phoneagent_protocol::ScreenReading;
use serde::Serialize;

pub use mark::{crop_around, mark_point};

/// The languages every line is read with by default: Simplified Chinese and English.
pub const DEFAULT_LANGUAGES: &[&str] = &["chi_sim", "eng"];
/// The languages a line is read again with when the first reading is unsure (confidence below
/// [`FALLBACK_BELOW_CONF`]) and Chinese (at least [`FALLBACK_MIN_HAN`] Han characters):
/// Traditional Chinese. Their engine is loaded the first time a line needs it (about 40 MB
/// that a phone in Simplified Chinese or English never uses, issue #14). Reading every line
/// with all three at once is slower and turns Simplified labels into Traditional look-alikes.
pub const DEFAULT_FALLBACK_LANGUAGES: &[&str] = &["chi_tra"];
/// Mean word confidence (0..=100) under which a line is read again with the fallback languages.
pub const FALLBACK_BELOW_CONF: i32 = 80;
/// Han characters the first reading must hold for the fallback to be tried: a line of
/// Traditional Chinese read by the Simplified model still comes out as Han characters, while
/// an icon read as `|` or `《一` is noise no language reads better.
pub const FALLBACK_MIN_HAN: usize = 2;

/// True when `text` is Chinese enough to be read again with the fallback languages
/// ([`FALLBACK_MIN_HAN`] Han characters or more).
pub fn wants_fallback(text: &str) -> bool {
    text.chars()
        .filter(|c| phoneagent_protocol::text::is_han(*c))
        .count()
        >= FALLBACK_MIN_HAN
}
/// Readings under this mean confidence (0..=100) are dropped as noise (an icon read as a letter).
pub const MIN_CONF: i32 = 30;

/// The fix for a machine without the OCR engine or its language data, per platform.
pub const INSTALL_FIX: &str = "install Tesseract 5 with Chinese and English language data: \
Debian/Ubuntu: `sudo apt-get install tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-chi-tra tesseract-ocr-eng` \
(or run scripts/install-deps.sh); macOS: `brew install tesseract tesseract-lang`; \
Windows: install Tesseract 5 (UB Mannheim installer) with the chi_sim and chi_tra languages selected, \
and set TESSDATA_PREFIX to its tessdata folder";

/// Why screen reading is not available.
#[derive(Debug, thiserror::Error)]
pub enum VisionError {
    /// This build has no OCR engine (the `tesseract` feature of `phoneagent-vision` is off).
    #[error(
        "screen reading is off: this build has no OCR engine (build phoneagent-vision with its default `tesseract` feature); {INSTALL_FIX}"
    )]
    NotBuilt,
    /// Language data (`<lang>.traineddata`) not found.
    #[error("OCR language data missing for {}: searched {searched}; {INSTALL_FIX}", missing.join(", "))]
    LanguageDataMissing {
        /// The languages without a `.traineddata` file.
        missing: Vec<String>,
        /// The directories searched, comma-separated.
        searched: String,
    },
    /// The engine failed to start with the data it found.
    #[error("OCR engine failed to start: {0}; reinstall the language data ({INSTALL_FIX})")]
    EngineInit(String),
    /// The configuration is unusable.
    #[error("bad screen-reader config: {0}")]
    Config(String),
}

/// What the gate reads the frame for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadPurpose {
    /// A tap, double tap or long press at the point.
    Tap,
    /// `type_text` into the field focused at the point (the last tap's point): also reads the
    /// field's label (SPEC P6, S3 password-field rule).
    Type,
}

/// Settings of a [`ScreenReader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderConfig {
    /// Tesseract language codes every line is read with, together (default
    /// [`DEFAULT_LANGUAGES`]).
    pub languages: Vec<String>,
    /// Language codes an unsure line is read again with; the more confident reading wins
    /// (default [`DEFAULT_FALLBACK_LANGUAGES`]; empty: none).
    pub fallback_languages: Vec<String>,
    /// Where `<lang>.traineddata` live; `None` searches `$TESSDATA_PREFIX` and the usual
    /// install dirs (see [`ocr::tessdata_candidates`]).
    pub tessdata_dir: Option<PathBuf>,
    /// At most this many other screen lines are read, and only when the target has no text
    /// (default 4).
    pub max_screen_lines: usize,
    /// At most this many sibling labels of the target's row are read (default 3).
    pub max_row: usize,
}

impl Default for ReaderConfig {
    fn default() -> Self {
        Self {
            languages: DEFAULT_LANGUAGES.iter().map(|s| (*s).to_owned()).collect(),
            fallback_languages: DEFAULT_FALLBACK_LANGUAGES
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            tessdata_dir: None,
            max_screen_lines: 4,
            max_row: 3,
        }
    }
}

/// Whether screen reading is on, for `phoneagent doctor` and the app's readiness list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VisionStatus {
    /// True when the engine and every configured language are there.
    pub available: bool,
    /// `tesseract 5.3.0`, or `none` when this build has no engine.
    pub engine: String,
    /// The languages that were found (`chi_sim`, …).
    pub languages: Vec<String>,
    /// The directory the language data was found in.
    pub tessdata: Option<String>,
    /// What is wrong, when not available.
    pub problem: Option<String>,
    /// What to do about it, when not available.
    pub fix: Option<String>,
}

/// Screen reading status for the default config, without loading the models (cheap: checks
/// the engine build and the language files).
pub fn vision_status() -> VisionStatus {
    status_for(&ReaderConfig::default())
}

fn status_for(cfg: &ReaderConfig) -> VisionStatus {
    let engine = engine_version();
    let fail = |e: VisionError, langs: Vec<String>| VisionStatus {
        available: false,
        engine: engine.clone(),
        languages: langs,
        tessdata: None,
        problem: Some(e.to_string()),
        fix: Some(INSTALL_FIX.to_owned()),
    };
    if !cfg!(feature = "tesseract") {
        return fail(VisionError::NotBuilt, Vec::new());
    }
    let all = all_languages(cfg);
    match ocr::find_tessdata(cfg.tessdata_dir.as_deref(), &all) {
        Ok(dir) => VisionStatus {
            available: true,
            engine,
            languages: all,
            tessdata: Some(dir.display().to_string()),
            problem: None,
            fix: None,
        },
        Err(e) => {
            let found = match &e {
                VisionError::LanguageDataMissing { missing, .. } => all
                    .iter()
                    .filter(|l| !missing.contains(l))
                    .cloned()
                    .collect(),
                _ => Vec::new(),
            };
            fail(e, found)
        }
    }
}

fn all_languages(cfg: &ReaderConfig) -> Vec<String> {
    let mut v = cfg.languages.clone();
    for l in &cfg.fallback_languages {
        if !v.contains(l) {
            v.push(l.clone());
        }
    }
    v
}

fn engine_version() -> String {
    #[cfg(feature = "tesseract")]
    {
        ocr::version()
    }
    #[cfg(not(feature = "tesseract"))]
    {
        "none".to_owned()
    }
}

/// Reads the planning frame around gated actions (SPEC S10, S11). Build one per process and
/// share it (`Send + Sync`).
pub struct ScreenReader {
    #[cfg(feature = "tesseract")]
    engine: ocr::Engine,
    /// The fallback languages' engine, loaded when a line first needs it (`None` inside: it
    /// failed to load, logged once).
    #[cfg(feature = "tesseract")]
    fallback: std::sync::OnceLock<Option<ocr::Engine>>,
    #[cfg(feature = "tesseract")]
    tessdata: PathBuf,
    status: VisionStatus,
    cfg: ReaderConfig,
    label: String,
}

impl std::fmt::Debug for ScreenReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScreenReader")
            .field("engine", &self.label)
            .finish_non_exhaustive()
    }
}

impl ScreenReader {
    /// Load the OCR engine and its language models (once; ~0.3–1 s).
    ///
    /// Errors: [`VisionError::NotBuilt`] without the engine, [`VisionError::LanguageDataMissing`]
    /// when a language's `.traineddata` is not found (the message names the fix),
    /// [`VisionError::EngineInit`] when the engine rejects the data, [`VisionError::Config`] for
    /// an empty or malformed language list.
    pub fn new(cfg: ReaderConfig) -> Result<ScreenReader, VisionError> {
        if cfg.languages.is_empty()
            || all_languages(&cfg)
                .iter()
                .any(|l| l.is_empty() || !l.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            return Err(VisionError::Config(format!(
                "languages must be Tesseract codes like chi_sim, eng (got {:?})",
                cfg.languages
            )));
        }
        #[cfg(not(feature = "tesseract"))]
        {
            Err(VisionError::NotBuilt)
        }
        #[cfg(feature = "tesseract")]
        {
            let dir = ocr::find_tessdata(cfg.tessdata_dir.as_deref(), &all_languages(&cfg))?;
            let langs = cfg.languages.join("+");
            let engine = ocr::Engine::new(&dir, &langs)?;
            let status = status_for(&ReaderConfig {
                tessdata_dir: Some(dir.clone()),
                ..cfg.clone()
            });
            let label = if cfg.fallback_languages.is_empty() {
                format!("{} ({langs})", ocr::version())
            } else {
                format!(
                    "{} ({langs}, unsure lines again with {})",
                    ocr::version(),
                    cfg.fallback_languages.join("+")
                )
            };
            Ok(ScreenReader {
                engine,
                fallback: std::sync::OnceLock::new(),
                tessdata: dir,
                status,
                cfg,
                label,
            })
        }
    }

    /// The status of this reader (always available: it loaded).
    pub fn status(&self) -> &VisionStatus {
        &self.status
    }

    /// The engine label stored in every reading
    /// (`tesseract 5.3.0 (chi_sim+eng, unsure lines again with chi_tra)`).
    pub fn engine(&self) -> &str {
        &self.label
    }

    /// Read the frame around `point` (px of `img`) for a gated action. Never fails: what could
    /// not be read is left empty (`target_unreadable` says when something is drawn at the point
    /// but holds no readable text). Only crops are OCR'd; typical cost 20–120 ms on one core.
    pub fn read(&self, img: &RgbaImage, point: (u32, u32), purpose: ReadPurpose) -> ScreenReading {
        let t0 = Instant::now();
        let limits = read::Limits {
            max_screen_lines: self.cfg.max_screen_lines,
            max_row: self.cfg.max_row,
        };
        let mut ocr = |r: phoneagent_protocol::PxRect, bg: geometry::Rgb| self.ocr_line(img, r, bg);
        let mut reading = read::read_screen(img, point, purpose, limits, &mut ocr);
        reading.engine = self.label.clone();
        reading.elapsed_ms = u32::try_from(t0.elapsed().as_millis()).unwrap_or(u32::MAX);
        reading
    }

    /// The text lines of the whole frame nearest `point` (px of `img`), at most `max_lines`,
    /// in reading order. For a `type_text` whose focused field is not known (focus moved by a
    /// key, not a touch): the runtime looks for a credential field anywhere on the screen (SPEC
    /// P6). Costs one OCR call per line (≈10–40 ms each on one core).
    pub fn screen_text(&self, img: &RgbaImage, point: (u32, u32), max_lines: usize) -> Vec<String> {
        let mut ocr = |r: phoneagent_protocol::PxRect, bg: geometry::Rgb| self.ocr_line(img, r, bg);
        read::screen_text(img, point, max_lines, &mut ocr)
    }

    /// The fallback languages' engine, loaded on first use (~0.3 s).
    #[cfg(feature = "tesseract")]
    fn fallback_engine(&self) -> Option<&ocr::Engine> {
        self.fallback
            .get_or_init(|| {
                let langs = self.cfg.fallback_languages.join("+");
                match ocr::Engine::new(&self.tessdata, &langs) {
                    Ok(e) => Some(e),
                    Err(e) => {
                        tracing::warn!("unsure lines are not read again with {langs}: {e}");
                        None
                    }
                }
            })
            .as_ref()
    }

    /// Whether the fallback languages' engine has been loaded (it is loaded on first need).
    pub fn fallback_loaded(&self) -> bool {
        #[cfg(feature = "tesseract")]
        {
            self.fallback.get().is_some_and(Option::is_some)
        }
        #[cfg(not(feature = "tesseract"))]
        {
            false
        }
    }

    /// OCR one line in box `r` (px) drawn on background `bg`; `None` when it holds no text.
    pub fn ocr_line(
        &self,
        img: &RgbaImage,
        r: phoneagent_protocol::PxRect,
        bg: geometry::Rgb,
    ) -> Option<String> {
        #[cfg(feature = "tesseract")]
        {
            let g = ocr::prepare_crop(img, r, bg);
            let mut best = self.engine.read_line(&g).map(|(t, c)| (ocr::tidy(&t), c));
            if !self.cfg.fallback_languages.is_empty()
                && best
                    .as_ref()
                    .is_some_and(|(t, c)| *c < FALLBACK_BELOW_CONF && wants_fallback(t))
                && let Some(fb) = self.fallback_engine()
                && let Some((t, c)) = fb.read_line(&g)
                && best.as_ref().is_none_or(|(_, bc)| c > *bc)
            {
                best = Some((ocr::tidy(&t), c));
            }
            let (text, conf) = best?;
            (conf >= MIN_CONF && ocr::looks_like_text(&text)).then_some(text)
        }
        #[cfg(not(feature = "tesseract"))]
        {
            let _ = (img, r, bg);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_chinese_lines_are_read_again() {
        assert!(wants_fallback("確認付款"));
        assert!(wants_fallback("#25/月立即开通"));
        assert!(wants_fallback("付款"));
        assert!(!wants_fallback("《一"));
        assert!(!wants_fallback("|"));
        assert!(!wants_fallback(""));
        assert!(!wants_fallback("Place order"));
        assert!(wants_fallback("𠀀𠀁"), "Han extension B counts");
    }

    #[test]
    fn a_bad_language_list_is_a_config_error() {
        let e = ScreenReader::new(ReaderConfig {
            languages: vec!["chi sim".into()],
            ..ReaderConfig::default()
        })
        .unwrap_err();
        assert!(matches!(e, VisionError::Config(_)), "{e}");
    }

    #[test]
    fn missing_language_data_names_the_language_and_the_fix() {
        let dir = std::env::temp_dir().join("phoneagent-vision-empty-tessdata");
        let _ = std::fs::create_dir_all(&dir);
        let cfg = ReaderConfig {
            languages: vec!["zz_nonexistent".into()],
            tessdata_dir: Some(dir),
            ..ReaderConfig::default()
        };
        let s = status_for(&cfg);
        assert!(!s.available);
        let problem = s.problem.unwrap_or_default();
        assert!(problem.contains("zz_nonexistent"), "{problem}");
        assert!(s.fix.unwrap_or_default().contains("tesseract-ocr-chi-sim"));
        let e = ScreenReader::new(cfg).unwrap_err();
        assert!(e.to_string().contains("zz_nonexistent"), "{e}");
    }
}
