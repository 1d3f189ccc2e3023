//! Screenshots (SPEC D3): the live stream's frame when one runs (D8), else `screencap` (PNG or
//! raw) with retries, reusing the decoded frame when the bytes did not change; and screen
//! geometry (D2: `wm size`, `wm density`, `dumpsys input`), cached per issue #12.

use super::{CachedGeometry, DecodedFrame, Inner, ScreenshotMode, first_lines};
use crate::Result;
use crate::frame;
use crate::parse;
use crate::types::{DeviceError, Screenshot};
use phoneagent_protocol::{Rotation, ScreenGeometry};
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Inner {
    async fn capture_once(&self) -> Result<Screenshot> {
        let t0 = Instant::now();
        if let Some(shot) = self
            .stream
            .screenshot(&self.server, &self.serial, &self.opts)
            .await
        {
            if let Ok(mut g) = self.last_frame.lock() {
                *g = Some(shot.image.dimensions());
            }
            return Ok(shot);
        }
        // No stream (or it died): raw screencap, PNG only when asked for.
        let mode = match self.opts.screenshot_mode {
            ScreenshotMode::Png => ScreenshotMode::Png,
            _ => ScreenshotMode::Raw,
        };
        let cmd = match mode {
            ScreenshotMode::Png => "screencap -p",
            _ => "screencap",
        };
        let received = bytes::Bytes::from(self.exec(cmd, self.opts.screenshot_timeout).await?);
        let previous = self.last_decoded.lock().ok().and_then(|g| g.clone());
        let frame = tokio::task::spawn_blocking(move || -> Result<Arc<DecodedFrame>> {
            // Host CPU, not device time: the runtime's step benchmark counts it as overhead.
            let _phase = tracing::trace_span!(target: "phoneagent::phase", "png_decode").entered();
            if let Some(prev) = previous.filter(|p| p.received == received) {
                return Ok(prev);
            }
            let (png, image) = match mode {
                ScreenshotMode::Png => (received.clone(), frame::decode_png(&received)?),
                _ => {
                    let img = frame::decode_raw(&received)?;
                    (bytes::Bytes::from(frame::encode_png(&img)?), img)
                }
            };
            let blocked = frame::is_blank(&image);
            Ok(Arc::new(DecodedFrame {
                received,
                png,
                image: Arc::new(image),
                blocked,
            }))
        })
        .await
        .map_err(|e| DeviceError::Protocol(format!("screenshot decoder crashed: {e}")))??;
        if let Ok(mut g) = self.last_frame.lock() {
            *g = Some(frame.image.dimensions());
        }
        if let Ok(mut g) = self.last_decoded.lock() {
            *g = Some(frame.clone());
        }
        Ok(Screenshot {
            png: frame.png.clone(),
            image: frame.image.clone(),
            blocked: frame.blocked,
            capture_ms: t0.elapsed().as_millis().min(u128::from(u32::MAX)) as u32,
        })
    }

    pub(super) async fn screenshot(&self) -> Result<Screenshot> {
        let attempts = self.opts.screenshot_attempts.max(1);
        let mut last = String::new();
        for n in 1..=attempts {
            match self.capture_once().await {
                Ok(s) => {
                    if s.blocked {
                        tracing::info!(serial = %self.serial, "screenshot is blank: screenshot_blocked");
                    }
                    return Ok(s);
                }
                Err(e) if e.is_device_lost() => return Err(e),
                Err(e @ (DeviceError::Unauthorized { .. } | DeviceError::Cancelled)) => {
                    return Err(e);
                }
                Err(e) => {
                    tracing::warn!(serial = %self.serial, attempt = n, "screenshot failed: {e}");
                    last = e.to_string();
                    if n < attempts {
                        tokio::time::sleep(Duration::from_millis(100 * u64::from(n))).await;
                    }
                }
            }
        }
        Err(DeviceError::ScreenshotFailed {
            attempts,
            detail: last,
        })
    }

    pub(super) async fn wm_size(&self) -> Result<parse::WmSize> {
        let out = self.shell_ok("wm size").await?;
        parse::parse_wm_size(&out).ok_or_else(|| DeviceError::CommandFailed {
            command: "wm size".into(),
            detail: format!("no size in {:?}", first_lines(&out, 2)),
        })
    }

    pub(super) async fn density(&self) -> Result<Option<u32>> {
        Ok(parse::parse_wm_density(&self.shell_ok("wm density").await?))
    }

    pub(super) async fn rotation(&self) -> Result<Option<Rotation>> {
        Ok(parse::parse_orientation(
            &self.shell_ok("dumpsys input").await?,
        ))
    }

    pub(super) fn forget_geometry(&self) {
        if let Ok(mut g) = self.geometry_cache.lock() {
            *g = None;
        }
    }

    /// Geometry, from the cache while the frame size is the one it was read with and it is
    /// younger than [`AdbDeviceOptions::geometry_max_age`] (issue #12: not three commands
    /// before every screenshot); else read from the phone.
    pub(super) async fn geometry(&self) -> Result<ScreenGeometry> {
        let frame = self.last_frame.lock().ok().and_then(|g| *g);
        let cached = self.geometry_cache.lock().ok().and_then(|g| *g);
        if let Some(c) = cached
            && c.frame == frame
            && c.read_at.elapsed() < self.opts.geometry_max_age
        {
            return Ok(c.geometry);
        }
        let geometry = self.read_geometry().await?;
        if let Ok(mut g) = self.geometry_cache.lock() {
            *g = Some(CachedGeometry {
                geometry,
                frame,
                read_at: Instant::now(),
            });
        }
        Ok(geometry)
    }

    /// `wm size`, `wm density` and `dumpsys input` (three commands).
    async fn read_geometry(&self) -> Result<ScreenGeometry> {
        let size = self.wm_size().await?;
        let (nw, nh) = size.effective().ok_or_else(|| DeviceError::CommandFailed {
            command: "wm size".into(),
            detail: "no size".into(),
        })?;
        let density = self.density().await.unwrap_or(None);
        let rotation = self.rotation().await?.unwrap_or_else(|| {
            tracing::warn!(serial = %self.serial, "no SurfaceOrientation in dumpsys input: assuming 0°");
            Rotation::R0
        });
        let (mut w, mut h) = if rotation.is_landscape() {
            (nh, nw)
        } else {
            (nw, nh)
        };
        // The size of the screenshot actually taken wins when it has the same orientation.
        if let Some((sw, sh)) = self.last_frame.lock().ok().and_then(|g| *g)
            && (sw > sh) == (w > h)
            && (sw, sh) != (w, h)
        {
            tracing::debug!(serial = %self.serial, wm = ?(w, h), shot = ?(sw, sh), "screenshot size wins over wm size");
            (w, h) = (sw, sh);
        }
        Ok(ScreenGeometry {
            width_px: w,
            height_px: h,
            density_dpi: density,
            rotation,
        })
    }
}
