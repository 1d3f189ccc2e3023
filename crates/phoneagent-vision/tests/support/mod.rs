//! Test and bench support: frames of the virtual phone (rendered by `phoneagent-sim` with its
//! real CJK font, driven over the ADB protocol on loopback) and real-app-like renders made
//! here with real fonts, each with the point to read and the label it must give.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod synth;

use anyhow::{Context, Result, anyhow};
use image::RgbaImage;
use phoneagent_sim::{Element, SimConfig, SimPhoneHandle, SimServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One frame of the virtual phone.
pub struct SimFrame {
    pub image: RgbaImage,
    pub elements: Vec<Element>,
}

impl SimFrame {
    /// The visible element `id`.
    pub fn element(&self, id: &str) -> &Element {
        self.elements
            .iter()
            .find(|e| e.id == id)
            .unwrap_or_else(|| {
                panic!(
                    "element {id} is not on screen; visible: {:?}",
                    self.elements.iter().map(|e| &e.id).collect::<Vec<_>>()
                )
            })
    }

    /// Centre of the element `id`, px.
    pub fn center(&self, id: &str) -> (u32, u32) {
        let b = self.element(id).bounds;
        (((b[0] + b[2]) / 2) as u32, ((b[1] + b[3]) / 2) as u32)
    }
}

/// A virtual phone on loopback.
pub struct Phone {
    pub sim: SimServer,
    pub handle: SimPhoneHandle,
}

impl Phone {
    pub async fn start() -> Result<Phone> {
        let cfg = SimConfig::default();
        let serial = cfg.devices[0].serial.clone();
        let sim = SimServer::start(cfg, 0).await?;
        let handle = sim.phone(&serial).context("the configured device")?;
        Ok(Phone { sim, handle })
    }

    /// Reset to `scenario`, then tap the elements `taps` in order (over ADB), and return the
    /// frame.
    pub async fn frame_after(&self, scenario: &str, taps: &[&str]) -> Result<SimFrame> {
        self.handle.reset(scenario)?;
        for id in taps {
            let f = self.frame()?;
            let (x, y) = f.center(id);
            self.shell(&format!("input tap {x} {y}")).await?;
        }
        self.frame()
    }

    /// The current frame.
    pub fn frame(&self) -> Result<SimFrame> {
        let png = self.handle.screenshot_png()?;
        let image = image::load_from_memory_with_format(&png, image::ImageFormat::Png)?.to_rgba8();
        Ok(SimFrame {
            image,
            elements: self.handle.ground_truth().elements,
        })
    }

    /// `shell:CMD` on the device through the ADB server protocol.
    pub async fn shell(&self, cmd: &str) -> Result<Vec<u8>> {
        let mut s = TcpStream::connect(("127.0.0.1", self.sim.port())).await?;
        for req in [
            format!("host:transport:{}", self.handle.serial()),
            format!("shell:{cmd}"),
        ] {
            s.write_all(format!("{:04x}{req}", req.len()).as_bytes())
                .await?;
            let mut st = [0u8; 4];
            s.read_exact(&mut st).await?;
            if &st != b"OKAY" {
                return Err(anyhow!("`{req}` refused: {}", String::from_utf8_lossy(&st)));
            }
        }
        let mut out = Vec::new();
        tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut out))
            .await
            .context("shell service closes in time")??;
        Ok(out)
    }
}

/// One labelled reading case: a frame, the point, and the text the target must read as.
pub struct Case {
    pub name: String,
    pub image: RgbaImage,
    pub point: (u32, u32),
    pub expect: String,
}

/// Elements whose label is not drawn as text (an arrow, a cross, an icon's caption elsewhere):
/// left out of the accuracy set.
pub fn drawn_as_icon(e: &Element) -> bool {
    matches!(e.id.as_str(), "nav.back" | "pay.cancel")
        || e.kind == "app_icon"
        || e.kind == "toggle"
        || e.kind.ends_with("field")
}

/// Every labelled element of every scenario (plus the delete dialog), read at its centre.
pub async fn sim_cases(phone: &Phone) -> Result<Vec<Case>> {
    let mut frames = Vec::new();
    for s in phoneagent_sim::SCENARIOS {
        frames.push((s.to_string(), phone.frame_after(s, &[]).await?));
    }
    frames.push((
        "settings+delete_dialog".into(),
        phone
            .frame_after("settings", &["settings.delete_account"])
            .await?,
    ));
    let mut cases = Vec::new();
    for (scenario, f) in &frames {
        for e in &f.elements {
            if drawn_as_icon(e) || e.label.trim().is_empty() {
                continue;
            }
            cases.push(Case {
                name: format!("{scenario}/{}", e.id),
                image: f.image.clone(),
                point: f.center(&e.id),
                expect: e.label.clone(),
            });
        }
    }
    Ok(cases)
}

/// True when `got` (whitespace removed) equals one of the `|`-separated alternatives of `want`.
pub fn matches(want: &str, got: &str) -> bool {
    want.split('|').any(|w| squash(w) == squash(got))
}

/// The best character accuracy over the `|`-separated alternatives of `want`.
pub fn best_accuracy(want: &str, got: &str) -> f64 {
    want.split('|')
        .map(|w| char_accuracy(w, got))
        .fold(0.0, f64::max)
}

/// Whitespace removed, for comparing labels.
pub fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Character accuracy of `got` against `want`: 1 − edit distance / len(want), at least 0.
pub fn char_accuracy(want: &str, got: &str) -> f64 {
    let a: Vec<char> = squash(want).chars().collect();
    let b: Vec<char> = squash(got).chars().collect();
    if a.is_empty() {
        return if b.is_empty() { 1.0 } else { 0.0 };
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    (1.0 - prev[b.len()] as f64 / a.len() as f64).max(0.0)
}
