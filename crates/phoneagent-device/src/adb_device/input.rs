//! Gestures and keys (SPEC D4, D9): scrcpy's control socket when a stream with one runs, else
//! `input …` with its stderr and exit status checked; and the [`Device`] impl of [`AdbDevice`],
//! which runs every call under its cancellation token.

use super::{AdbDevice, Inner, first_lines};
use crate::parse;
use crate::stream::hook::Gesture;
use crate::types::{DeviceError, KeyCode, Readiness, Screenshot};
use crate::{Device, Result, Settle};
use async_trait::async_trait;
use phoneagent_protocol::{DevicePoint, ScreenGeometry};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

impl Inner {
    /// Send `g` through scrcpy's control socket when a stream with one runs (SPEC D9):
    /// `Ok(None)` — no control socket, use `input`; a failed write is
    /// [`DeviceError::DeviceLost`] (it may have happened: the runtime re-observes, never
    /// replays it).
    pub(super) async fn fast_input(&self, what: &str, g: &Gesture) -> Result<Option<()>> {
        match self
            .stream
            .input(&self.server, &self.serial, &self.opts, g)
            .await
        {
            None => Ok(None),
            Some(Ok(())) => Ok(Some(())),
            Some(Err(detail)) => Err(DeviceError::DeviceLost {
                serial: self.serial.clone(),
                command: format!("scrcpy control: {what}"),
                detail,
            }),
        }
    }

    /// An `input …` command, its stderr and exit status checked (SPEC D4).
    pub(super) async fn input(&self, cmd: &str, extra: Duration) -> Result<()> {
        // A stream frame must be newer than this action (and differ from the frame shown when
        // it was sent) to count as its result.
        self.stream.note_action();
        let out = self.shell(cmd, self.opts.command_timeout + extra).await;
        self.stream.note_action_sent();
        let out = out?;
        let all = out.combined();
        if parse::is_inject_events_denied(&all) {
            return Err(DeviceError::InjectEventsDenied);
        }
        let failed = match out.exit_code {
            Some(c) => c != 0,
            None => parse::input_output_shows_error(&all),
        };
        if failed {
            return Err(DeviceError::CommandFailed {
                command: cmd.to_string(),
                detail: first_lines(&all, 3),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl Device for AdbDevice {
    fn serial(&self) -> &str {
        &self.inner.serial
    }

    async fn geometry(&self, cancel: &CancellationToken) -> Result<ScreenGeometry> {
        self.with_cancel(cancel, self.inner.geometry()).await
    }

    async fn screenshot(&self, cancel: &CancellationToken) -> Result<Screenshot> {
        self.with_cancel(cancel, self.inner.screenshot()).await
    }

    async fn tap(&self, p: DevicePoint, cancel: &CancellationToken) -> Result<()> {
        let g = Gesture::Touch {
            from: (p.x, p.y),
            to: (p.x, p.y),
            ms: 0,
        };
        if let Some(r) = self
            .with_cancel(cancel, self.inner.fast_input("tap", &g))
            .await?
        {
            return Ok(r);
        }
        let cmd = format!("input tap {} {}", p.x, p.y);
        self.with_cancel(cancel, self.inner.input(&cmd, Duration::ZERO))
            .await
    }

    async fn double_tap(&self, p: DevicePoint, cancel: &CancellationToken) -> Result<()> {
        let g = Gesture::Touch {
            from: (p.x, p.y),
            to: (p.x, p.y),
            ms: 0,
        };
        let i = &self.inner;
        let fast = self
            .with_cancel(cancel, async {
                if i.fast_input("double tap", &g).await?.is_none() {
                    return Ok(None);
                }
                if !i.opts.double_tap_gap.is_zero() {
                    tokio::time::sleep(i.opts.double_tap_gap).await;
                }
                i.fast_input("double tap", &g).await
            })
            .await?;
        if fast.is_some() {
            return Ok(());
        }
        let cmd = format!("input tap {} {}", p.x, p.y);
        self.with_cancel(cancel, async {
            i.input(&cmd, Duration::ZERO).await?;
            if !i.opts.double_tap_gap.is_zero() {
                tokio::time::sleep(i.opts.double_tap_gap).await;
            }
            i.input(&cmd, Duration::ZERO).await
        })
        .await
    }

    async fn long_press(
        &self,
        p: DevicePoint,
        duration_ms: u32,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let g = Gesture::Touch {
            from: (p.x, p.y),
            to: (p.x, p.y),
            ms: duration_ms.max(1),
        };
        if let Some(r) = self
            .with_cancel(cancel, self.inner.fast_input("long press", &g))
            .await?
        {
            return Ok(r);
        }
        let cmd = format!("input swipe {} {} {} {} {duration_ms}", p.x, p.y, p.x, p.y);
        let extra = Duration::from_millis(u64::from(duration_ms));
        self.with_cancel(cancel, self.inner.input(&cmd, extra))
            .await
    }

    async fn swipe(
        &self,
        from: DevicePoint,
        to: DevicePoint,
        duration_ms: u32,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let g = Gesture::Touch {
            from: (from.x, from.y),
            to: (to.x, to.y),
            ms: duration_ms,
        };
        if let Some(r) = self
            .with_cancel(cancel, self.inner.fast_input("swipe", &g))
            .await?
        {
            return Ok(r);
        }
        let cmd = format!(
            "input swipe {} {} {} {} {duration_ms}",
            from.x, from.y, to.x, to.y
        );
        let extra = Duration::from_millis(u64::from(duration_ms));
        self.with_cancel(cancel, self.inner.input(&cmd, extra))
            .await
    }

    async fn key(&self, key: KeyCode, cancel: &CancellationToken) -> Result<()> {
        let g = Gesture::Key(key.code());
        if let Some(r) = self
            .with_cancel(cancel, self.inner.fast_input("key", &g))
            .await?
        {
            return Ok(r);
        }
        let cmd = format!("input keyevent {}", key.code());
        self.with_cancel(cancel, self.inner.input(&cmd, Duration::ZERO))
            .await
    }

    async fn type_text(&self, text: &str, cancel: &CancellationToken) -> Result<()> {
        self.with_cancel(cancel, self.inner.type_text(text)).await
    }

    async fn restore_ime(&self) -> Result<()> {
        self.inner.restore_ime().await
    }

    async fn readiness(&self, cancel: &CancellationToken) -> Result<Readiness> {
        self.with_cancel(cancel, self.inner.readiness(cancel)).await
    }

    /// With a live stream, [`Settle::UntilStill`] and [`Settle::Adaptive`] watch decoded frames
    /// (no device command) and return the newest as the verification frame; a stream that
    /// dies while waiting, or none, falls back to [`crate::settle_by_screenshots`].
    async fn settle(&self, how: Settle, cancel: &CancellationToken) -> Result<Option<Screenshot>> {
        let watch = match how {
            Settle::Fixed(_) => None,
            Settle::UntilStill { quiet, max, .. } | Settle::Adaptive { quiet, max, .. } => {
                Some((quiet, max))
            }
        };
        if let Some((quiet, max)) = watch {
            let t0 = Instant::now();
            let i = &self.inner;
            let shot = self
                .with_cancel(cancel, async {
                    Ok(i.stream
                        .settle(
                            quiet,
                            max,
                            i.opts.stream_fresh_wait,
                            i.opts.stream_fresh_margin,
                            t0,
                        )
                        .await)
                })
                .await?;
            if let Some(shot) = shot {
                if let Ok(mut g) = i.last_frame.lock() {
                    *g = Some(shot.image.dimensions());
                }
                return Ok(Some(shot));
            }
        }
        crate::settle_by_screenshots(self, how, cancel).await
    }

    async fn paths(&self) -> Option<(String, String, Option<String>)> {
        let (c, i, note) = self.stream_paths().await;
        Some((c.to_string(), i.to_string(), note))
    }
}
