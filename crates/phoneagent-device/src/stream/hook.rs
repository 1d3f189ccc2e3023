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

/// Per-device stream state.
pub(crate) struct StreamState {
    slot: tokio::sync::Mutex<Slot>,
    /// When the last action was sent, and the newest frame at that moment.
    last_action: std::sync::Mutex<(Instant, Option<super::LiveFrame>)>,
    /// The running session without locking `slot` (for [`StreamState::note_action`]).
    running: std::sync::Mutex<Option<Arc<StreamSession>>>,
}

impl Default for StreamState {
    fn default() -> Self {
        Self {
            slot: tokio::sync::Mutex::new(Slot::default()),
            last_action: std::sync::Mutex::new((Instant::now(), None)),
            running: std::sync::Mutex::new(None),
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
            *g = (Instant::now(), baseline);
        }
    }

    /// The action just sent has been delivered: frames must be decoded after now.
    pub(crate) fn note_action_sent(&self) {
        if let Ok(mut g) = self.last_action.lock() {
            g.0 = Instant::now();
        }
    }

    fn last_action(&self) -> (Instant, Option<super::LiveFrame>) {
        self.last_action
            .lock()
            .map(|g| g.clone())
            .unwrap_or_else(|_| (Instant::now(), None))
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
        let (at, baseline) = self.last_action();
        let after = at + opts.stream_fresh_margin;
        let f = s
            .frame_after(after, baseline.as_ref(), opts.stream_fresh_wait)
            .await?;
        let image = f.image.clone();
        let png = tokio::task::spawn_blocking(move || crate::frame::encode_png(&image))
            .await
            .ok()?
            .ok()?;
        let blocked = crate::frame::is_blank(&f.image);
        Some(Screenshot {
            png: bytes::Bytes::from(png),
            image: f.image,
            blocked,
            capture_ms: t0.elapsed().as_millis().min(u128::from(u32::MAX)) as u32,
        })
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
