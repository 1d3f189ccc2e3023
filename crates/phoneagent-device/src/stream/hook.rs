//! How an [`crate::AdbDevice`] uses the stream (SPEC D8, D9): started lazily on the first
//! screenshot or input in a stream [`ScreenshotMode`]; a screenshot is the first frame decoded
//! after the last action (waiting up to `stream_fresh_wait`); inputs go through scrcpy's
//! control socket when it runs. A stream that cannot start or dies is dropped and noted, and
//! the device goes on with `screencap` / `input` (a later call tries to start it again after
//! a back-off). An input whose control write fails is reported, never replayed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{CapturePath, InputPath, StreamError, StreamSession, locate};
use crate::adb_device::{AdbDeviceOptions, ScreenshotMode};
use crate::link::AdbLink;
use crate::types::Screenshot;

/// Wait this long before trying to start a stream again after a failure.
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// An input to send through the control socket.
#[derive(Debug, Clone)]
pub(crate) enum Gesture {
    /// Tap, long press (`ms` > 0, in place) or swipe.
    Touch {
        from: (u32, u32),
        to: (u32, u32),
        ms: u32,
    },
    /// A key press.
    Key(u32),
    /// Text by clipboard paste.
    Text(String),
}

#[derive(Default)]
struct Slot {
    session: Option<Arc<StreamSession>>,
    /// Why the preferred stream is not running (for `doctor`).
    note: Option<String>,
    failed_at: Option<Instant>,
}

/// The last action as the stream sees it.
#[derive(Clone)]
struct LastAction {
    /// When it was sent (updated again once delivered).
    at: Instant,
    /// The newest frame when it was sent: frames still showing it are not its result.
    baseline: Option<super::LiveFrame>,
    /// Its result has been seen (a frame that differs, or a settle that found the screen
    /// still): from now on the newest frame is the current screen, no waiting.
    caught_up: bool,
}

/// A frame already turned into a [`Screenshot`] (PNG encoded once per distinct frame). The
/// frame itself is held weakly: once the stream and the runtime let go of it this cache must
/// not keep its 10 MB alive (a 1080×2400 RGBA frame; issue #14), and a frame nobody holds can
/// never be handed out again.
struct Encoded {
    image: std::sync::Weak<image::RgbaImage>,
    png: bytes::Bytes,
    blocked: bool,
}

/// Per-device stream state.
pub(crate) struct StreamState {
    slot: tokio::sync::Mutex<Slot>,
    last_action: std::sync::Mutex<LastAction>,
    /// The running session without locking `slot` (for [`StreamState::note_action`]).
    running: std::sync::Mutex<Option<Arc<StreamSession>>>,
    /// The last frame handed out, with its PNG.
    encoded: std::sync::Mutex<Option<Encoded>>,
}

impl Default for StreamState {
    fn default() -> Self {
        Self {
            slot: tokio::sync::Mutex::new(Slot::default()),
            last_action: std::sync::Mutex::new(LastAction {
                at: Instant::now(),
                baseline: None,
                caught_up: true,
            }),
            running: std::sync::Mutex::new(None),
            encoded: std::sync::Mutex::new(None),
        }
    }
}

fn wants_stream(mode: ScreenshotMode) -> bool {
    matches!(
        mode,
        ScreenshotMode::Scrcpy | ScreenshotMode::Screenrecord | ScreenshotMode::Auto
    )
}

async fn start(
    link: &AdbLink,
    serial: &str,
    opts: &AdbDeviceOptions,
) -> Result<(StreamSession, Option<StreamError>), (StreamError, Option<StreamError>)> {
    let AdbLink::Server(server) = link else {
        return Err((StreamError::NeedsAdbServer, None));
    };
    let mut scrcpy_err = None;
    if matches!(
        opts.screenshot_mode,
        ScreenshotMode::Scrcpy | ScreenshotMode::Auto
    ) {
        match locate::find_scrcpy_server(opts.scrcpy_server.as_deref()) {
            Some(jar) => {
                let version = locate::scrcpy_version(opts.scrcpy_version.as_deref()).await;
                match super::start_scrcpy(server, serial, &jar, &version, opts.stream_start_timeout)
                    .await
                {
                    Ok(s) => return Ok((s, None)),
                    Err(e) => {
                        tracing::warn!(serial, "scrcpy stream did not start: {e}");
                        scrcpy_err = Some(e);
                    }
                }
            }
            None => scrcpy_err = Some(StreamError::ServerNotFound),
        }
        if opts.screenshot_mode == ScreenshotMode::Scrcpy {
            return Err((scrcpy_err.unwrap_or(StreamError::ServerNotFound), None));
        }
    }
    match super::start_screenrecord(
        server,
        serial,
        opts.screenrecord_time_limit,
        opts.stream_start_timeout,
    )
    .await
    {
        // Keep why scrcpy is not used, for doctor.
        Ok(s) => Ok((s, scrcpy_err)),
        Err(e) => Err((e, scrcpy_err)),
    }
}

impl StreamState {
    /// Remember that an action was just sent: the next screenshot must be newer.
    pub(crate) fn note_action(&self) {
        let baseline = self
            .running
            .lock()
            .ok()
            .and_then(|g| g.as_ref().and_then(|s| s.newest()));
        if let Ok(mut g) = self.last_action.lock() {
            *g = LastAction {
                at: Instant::now(),
                baseline,
                caught_up: false,
            };
        }
    }

    /// The action just sent has been delivered: frames must be decoded after now.
    pub(crate) fn note_action_sent(&self) {
        if let Ok(mut g) = self.last_action.lock() {
            g.at = Instant::now();
        }
    }

    fn last_action(&self) -> LastAction {
        self.last_action
            .lock()
            .map(|g| g.clone())
            .unwrap_or_else(|_| LastAction {
                at: Instant::now(),
                baseline: None,
                caught_up: false,
            })
    }

    /// The result of the action sent at `at` has been seen (unless another action followed).
    fn caught_up(&self, at: Instant) {
        if let Ok(mut g) = self.last_action.lock()
            && g.at == at
        {
            g.caught_up = true;
            g.baseline = None;
        }
    }

    /// `f` as a [`Screenshot`], its PNG encoded once (the same frame handed out again — the
    /// planning frame after a verification frame, a freshness frame of an unchanged screen —
    /// reuses it; host CPU, off the async threads).
    async fn to_screenshot(&self, f: super::LiveFrame, t0: Instant) -> Option<Screenshot> {
        let capture_ms = t0.elapsed().as_millis().min(u128::from(u32::MAX)) as u32;
        if let Some((png, blocked)) = self.encoded.lock().ok().and_then(|g| {
            g.as_ref()
                .filter(|e| e.image.upgrade().is_some_and(|i| Arc::ptr_eq(&i, &f.image)))
                .map(|e| (e.png.clone(), e.blocked))
        }) {
            return Some(Screenshot {
                png,
                image: f.image,
                blocked,
                capture_ms,
            });
        }
        let image = f.image.clone();
        let (png, blocked) = tokio::task::spawn_blocking(move || {
            let _phase = tracing::trace_span!(target: "phoneagent::phase", "png_encode").entered();
            crate::frame::encode_png(&image).map(|p| (p, crate::frame::is_blank(&image)))
        })
        .await
        .ok()?
        .ok()?;
        let shot = Screenshot {
            png: bytes::Bytes::from(png),
            image: f.image.clone(),
            blocked,
            capture_ms: t0.elapsed().as_millis().min(u128::from(u32::MAX)) as u32,
        };
        if let Ok(mut g) = self.encoded.lock() {
            *g = Some(Encoded {
                image: Arc::downgrade(&f.image),
                png: shot.png.clone(),
                blocked,
            });
        }
        Some(shot)
    }

    /// Wait after an action until the stream shows a still screen (SPEC R4, issue #12 item
    /// 3): first the action's result (a frame decoded `margin` after the action that differs
    /// from the one shown when it was sent, waiting up to `react`), then no frame that
    /// [`super::differs`] from the one before for `quiet`; at most `max` in all. `None` when no stream runs (the
    /// caller falls back to the screenshot settle) or it died while waiting; else the newest
    /// frame, the verification frame.
    pub(crate) async fn settle(
        &self,
        quiet: Duration,
        max: Duration,
        react: Duration,
        margin: Duration,
        t0: Instant,
    ) -> Option<Screenshot> {
        let s = self.running.lock().ok().and_then(|g| g.clone())?;
        if !s.is_alive() {
            return None;
        }
        let la = self.last_action();
        let mut rx = s.frames.subscribe();
        let deadline = tokio::time::Instant::now() + max;
        // First the action's result: a frame decoded after it that differs from the screen
        // shown when it was sent (frames in flight then still show the old screen; a loaded
        // host or a slow phone may take longer than `quiet` to show it). An action that
        // changes nothing shows none: after `react` the newest frame stands.
        let react = react.min(max);
        let mut shown = s
            .frame_after(la.at + margin, la.baseline.as_ref(), react)
            .await;
        if !s.is_alive() {
            return None;
        }
        // Then the quiet: no frame that changes the screen for `quiet` after the last change.
        let mut changed_at = shown.as_ref().map_or(la.at, |f| f.at.max(la.at));
        loop {
            if !s.is_alive() {
                return None;
            }
            if let Some(f) = s.newest()
                && shown.as_ref().is_none_or(|p| p.seq != f.seq)
            {
                if shown
                    .as_ref()
                    .is_none_or(|p| super::differs(&p.image, &f.image))
                {
                    changed_at = f.at.max(la.at);
                }
                shown = Some(f);
            }
            let quiet_until = tokio::time::Instant::from_std(changed_at + quiet);
            let now = tokio::time::Instant::now();
            if now >= quiet_until || now >= deadline {
                break;
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return None },
                () = tokio::time::sleep_until(quiet_until.min(deadline)) => {}
                () = s.dead.cancelled() => return None,
            }
        }
        let f = s.newest()?;
        self.caught_up(la.at);
        self.to_screenshot(f, t0).await
    }

    fn set_running(&self, s: Option<Arc<StreamSession>>) {
        if let Ok(mut g) = self.running.lock() {
            *g = s;
        }
    }

    /// The running session, starting it when the mode asks for a stream (`None`: use the
    /// screencap / shell path).
    pub(crate) async fn session(
        &self,
        link: &AdbLink,
        serial: &str,
        opts: &AdbDeviceOptions,
    ) -> Option<Arc<StreamSession>> {
        if !wants_stream(opts.screenshot_mode) {
            return None;
        }
        let mut slot = self.slot.lock().await;
        if let Some(s) = &slot.session {
            if s.is_alive() {
                return Some(s.clone());
            }
            let why = s.dead_reason().unwrap_or_else(|| "stopped".into());
            tracing::warn!(
                serial,
                "the screen stream died ({why}); using screencap until it restarts"
            );
            slot.note = Some(format!("the {} stream died: {why}", s.capture_path()));
            slot.session = None;
            self.set_running(None);
            slot.failed_at = Some(Instant::now());
            return None;
        }
        if slot.failed_at.is_some_and(|t| t.elapsed() < RETRY_AFTER) {
            return None;
        }
        match start(link, serial, opts).await {
            Ok((s, why_not_scrcpy)) => {
                tracing::info!(serial, path = %s.capture_path(), "screen stream running");
                slot.note = why_not_scrcpy.map(|e| format!("scrcpy is not used: {e}"));
                let s = Arc::new(s);
                slot.session = Some(s.clone());
                self.set_running(Some(s.clone()));
                slot.failed_at = None;
                Some(s)
            }
            Err((e, earlier)) => {
                let note = match earlier {
                    Some(first) => format!("{first}; screenrecord: {e}"),
                    None => e.to_string(),
                };
                slot.note = Some(note);
                slot.failed_at = Some(Instant::now());
                None
            }
        }
    }

    /// A screenshot from the stream: the first frame decoded after the last action.
    pub(crate) async fn screenshot(
        &self,
        link: &AdbLink,
        serial: &str,
        opts: &AdbDeviceOptions,
    ) -> Option<Screenshot> {
        let t0 = Instant::now();
        let s = self.session(link, serial, opts).await?;
        let la = self.last_action();
        let f = if la.caught_up {
            // The action's result was seen: the newest frame is the screen now.
            s.newest().filter(|_| s.is_alive())?
        } else {
            let after = la.at + opts.stream_fresh_margin;
            let f = s
                .frame_after(after, la.baseline.as_ref(), opts.stream_fresh_wait)
                .await?;
            self.caught_up(la.at);
            f
        };
        self.to_screenshot(f, t0).await
    }

    /// Send `g` through scrcpy's control socket. `None`: no control socket (use `input`).
    /// `Some(Err)`: the write failed — the action may or may not have happened.
    pub(crate) async fn input(
        &self,
        link: &AdbLink,
        serial: &str,
        opts: &AdbDeviceOptions,
        g: &Gesture,
    ) -> Option<Result<(), String>> {
        let s = self.session(link, serial, opts).await?;
        let c = s.control()?;
        self.note_action();
        let r = match g {
            Gesture::Touch { from, to, ms } => {
                let p = |v: (u32, u32)| {
                    (
                        i32::try_from(v.0).unwrap_or(i32::MAX),
                        i32::try_from(v.1).unwrap_or(i32::MAX),
                    )
                };
                c.gesture(p(*from), p(*to), *ms).await
            }
            Gesture::Key(k) => c.key(*k).await,
            Gesture::Text(t) => c.paste(t, opts.command_timeout).await,
        };
        self.note_action_sent();
        if let Err(e) = &r {
            s.kill(e.clone());
        }
        Some(r)
    }

    /// `(capture, input, note)` as they are now (starting the stream when the mode asks).
    pub(crate) async fn paths(
        &self,
        link: &AdbLink,
        serial: &str,
        opts: &AdbDeviceOptions,
    ) -> (CapturePath, InputPath, Option<String>) {
        let s = self.session(link, serial, opts).await;
        let note = self.slot.lock().await.note.clone();
        match s {
            Some(s) => (s.capture_path(), s.input_path(), note),
            None => {
                let capture = match opts.screenshot_mode {
                    ScreenshotMode::Png => CapturePath::Png,
                    _ => CapturePath::Raw,
                };
                (capture, InputPath::ShellInput, note)
            }
        }
    }

    /// The running session, if any (no start attempt).
    pub(crate) async fn current(&self) -> Option<Arc<StreamSession>> {
        self.slot
            .lock()
            .await
            .session
            .clone()
            .filter(|s| s.is_alive())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn frame(seq: u64, shade: u8) -> super::super::LiveFrame {
        super::super::LiveFrame {
            image: Arc::new(image::RgbaImage::from_pixel(
                64,
                48,
                image::Rgba([shade, shade, shade, 255]),
            )),
            at: Instant::now(),
            seq,
        }
    }

    #[tokio::test]
    async fn the_same_frame_reuses_its_png_and_a_replaced_frame_is_not_kept_alive() {
        let state = StreamState::default();
        let a = frame(1, 200);
        let first = state
            .to_screenshot(a.clone(), Instant::now())
            .await
            .unwrap();
        let again = state
            .to_screenshot(a.clone(), Instant::now())
            .await
            .unwrap();
        assert_eq!(first.png.as_ptr(), again.png.as_ptr(), "encoded once");
        assert!(Arc::ptr_eq(&first.image, &a.image));
        // The stream moved on: once everybody else let go of frame 1, the cache must not hold
        // its pixels.
        let weak = Arc::downgrade(&a.image);
        drop((first, again, a));
        assert!(
            weak.upgrade().is_none(),
            "the screenshot cache kept a replaced frame alive"
        );
        let b = frame(2, 30);
        let shot = state
            .to_screenshot(b.clone(), Instant::now())
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&shot.image, &b.image));
        assert!(!shot.blocked || crate::frame::is_blank(&b.image));
    }
}
