//! The live screen stream and fast input (SPEC D8, D9): scrcpy's server (video socket decoded
//! on the host, control socket for touches, keys and clipboard-paste text) or, without it,
//! Android's own `screenrecord --output-format=h264 -` (restarted at its time limit).
//!
//! * [`locate`] — finding `scrcpy-server` and its version.
//! * `sync` — pushing it with adb's `sync:` protocol.
//! * `decode` — OpenH264 decoding; the newest frame with its decode time.
//! * `scrcpy` — starting the server (`app_process`), its sockets and control messages.
//! * `screenrecord` — the fallback stream.
//!
//! A [`StreamSession`] that dies (socket closed, server exited) says so through
//! [`StreamSession::dead_reason`]; the device then falls back to `screencap` without losing
//! the run. An input whose control write fails is reported as lost, never replayed.

mod decode;
pub(crate) mod hook;
pub mod locate;
mod scrcpy;
mod screenrecord;
mod sync;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

pub use decode::LiveFrame;
pub(crate) use scrcpy::start as start_scrcpy;
pub(crate) use screenrecord::start as start_screenrecord;

use decode::FrameStore;

/// How screenshots are taken right now (for `doctor` and the run record, SPEC D8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapturePath {
    /// scrcpy's video stream; the server version.
    Scrcpy(String),
    /// `screenrecord --output-format=h264`.
    Screenrecord,
    /// `exec:screencap` (raw RGBA).
    Raw,
    /// `exec:screencap -p`.
    Png,
}

impl std::fmt::Display for CapturePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Scrcpy(v) => write!(f, "scrcpy {v}"),
            Self::Screenrecord => f.write_str("screenrecord"),
            Self::Raw => f.write_str("raw"),
            Self::Png => f.write_str("png"),
        }
    }
}

/// How input events are sent right now (SPEC D9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputPath {
    /// scrcpy's control socket (touch/key events, clipboard paste).
    ScrcpyControl,
    /// `adb shell input …` (one process per event) and ADB Keyboard for text.
    ShellInput,
}

impl std::fmt::Display for InputPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::ScrcpyControl => "scrcpy control",
            Self::ShellInput => "shell input",
        })
    }
}

/// Why a stream could not start.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StreamError {
    /// No `scrcpy-server` on this computer.
    #[error(
        "scrcpy-server not found: install scrcpy (apt install scrcpy / brew install scrcpy) or set SCRCPY_SERVER_PATH"
    )]
    ServerNotFound,
    /// The pushed server is of another version than the client announced.
    #[error(
        "scrcpy-server version {server} does not match the client's {client}: set the scrcpy version in Settings to {server}, or point SCRCPY_SERVER_PATH at a scrcpy-server {client}"
    )]
    VersionMismatch {
        /// The server's version.
        server: String,
        /// The version we announced.
        client: String,
    },
    /// The stream needs an adb server connection (not direct USB/TCP).
    #[error("the live stream needs the adb server link (direct USB/TCP has no stream yet)")]
    NeedsAdbServer,
    /// Anything else: what failed.
    #[error("{0}")]
    Failed(String),
}

/// Why [`StreamSession::wait_frame`] returned no frame.
enum Waited {
    /// No accepted frame within the wait.
    Timeout,
    /// The stream died or was stopped.
    Ended,
}

/// A running stream: the newest decoded frame, and (scrcpy) the control socket.
pub struct StreamSession {
    path: CapturePath,
    pub(crate) frames: Arc<FrameStore>,
    /// Fired when the stream died; the reason is in `death`.
    pub(crate) dead: CancellationToken,
    death: Arc<std::sync::Mutex<Option<String>>>,
    /// Fired to stop it (drop).
    stop: CancellationToken,
    control: Option<scrcpy::Control>,
    started: Instant,
}

impl std::fmt::Debug for StreamSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSession")
            .field("path", &self.path)
            .field("alive", &self.is_alive())
            .finish()
    }
}

impl Drop for StreamSession {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// True when two decoded frames show different screens — not just H.264 noise: a repeated
/// frame of an unchanged screen decodes to slightly different pixels. Compares every 7th
/// pixel; a screen differs when more than 0.05% of them move by more than 48 in a channel.
pub fn differs(a: &image::RgbaImage, b: &image::RgbaImage) -> bool {
    if a.dimensions() != b.dimensions() {
        return true;
    }
    let (pa, pb) = (a.as_raw(), b.as_raw());
    let mut sampled = 0usize;
    let mut moved = 0usize;
    let mut i = 0;
    while i + 3 < pa.len() {
        sampled += 1;
        if (0..3).any(|c| pa[i + c].abs_diff(pb[i + c]) > 48) {
            moved += 1;
        }
        i += 4 * 7;
    }
    moved * 2000 > sampled
}

/// Mark a stream dead with `why` (first reason wins).
pub(crate) fn mark_dead(
    dead: &CancellationToken,
    death: &std::sync::Mutex<Option<String>>,
    why: String,
) {
    if let Ok(mut g) = death.lock()
        && g.is_none()
    {
        tracing::info!("screen stream ended: {why}");
        *g = Some(why);
    }
    dead.cancel();
}

impl StreamSession {
    /// The capture path this stream is.
    pub fn capture_path(&self) -> CapturePath {
        self.path.clone()
    }

    /// The input path it offers.
    pub fn input_path(&self) -> InputPath {
        if self.control.is_some() && self.is_alive() {
            InputPath::ScrcpyControl
        } else {
            InputPath::ShellInput
        }
    }

    /// True until the stream dies or is stopped.
    pub fn is_alive(&self) -> bool {
        !self.dead.is_cancelled() && !self.stop.is_cancelled()
    }

    /// Why it died, once it has.
    pub fn dead_reason(&self) -> Option<String> {
        self.death.lock().ok().and_then(|g| g.clone())
    }

    /// The newest decoded frame.
    pub fn newest(&self) -> Option<LiveFrame> {
        self.frames.newest()
    }

    /// Frames decoded so far and their mean decode + colour conversion time in ms.
    pub fn decode_stats(&self) -> (u64, f64) {
        let n = self.frames.decoded.load(Ordering::Relaxed);
        let us = self.frames.decode_us.load(Ordering::Relaxed);
        (
            n,
            if n == 0 {
                0.0
            } else {
                us as f64 / n as f64 / 1000.0
            },
        )
    }

    /// How long it has been running.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// The result of an action sent at `after`: the first frame decoded after `after` that
    /// differs from `baseline` (the newest frame when the action was sent — frames already in
    /// flight then still show the old screen), waiting up to `wait`; after that the newest
    /// frame (the action did not change the screen). Without a baseline, the first frame
    /// decoded after `after`. `None` when the stream died or never produced a frame.
    pub async fn frame_after(
        &self,
        after: Instant,
        baseline: Option<&LiveFrame>,
        wait: Duration,
    ) -> Option<LiveFrame> {
        match self
            .wait_frame(wait, |f| {
                f.at > after
                    && baseline.is_none_or(|b| b.seq != f.seq && differs(&b.image, &f.image))
            })
            .await
        {
            Ok(f) => Some(f),
            // Waited long enough: the action did not change the screen.
            Err(Waited::Timeout) => self.frames.newest().filter(|_| self.is_alive()),
            Err(Waited::Ended) => None,
        }
    }

    /// The next decoded frame newer than `after_seq` (a [`LiveFrame::seq`]; 0 = any), waiting up
    /// to `wait`, for viewers that follow the stream (the app's mirror, SPEC U1). Frames decoded
    /// while the caller was busy are skipped: the newest one is returned. `None` on timeout or
    /// when the stream died (see [`StreamSession::is_alive`]).
    pub async fn next_frame(&self, after_seq: u64, wait: Duration) -> Option<LiveFrame> {
        self.wait_frame(wait, |f| f.seq > after_seq).await.ok()
    }

    /// The newest frame once it satisfies `accept`, waiting up to `wait` for new frames.
    async fn wait_frame(
        &self,
        wait: Duration,
        accept: impl Fn(&LiveFrame) -> bool,
    ) -> Result<LiveFrame, Waited> {
        let mut rx = self.frames.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if !self.is_alive() {
                return Err(Waited::Ended);
            }
            if let Some(f) = self.frames.newest()
                && accept(&f)
            {
                return Ok(f);
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return Err(Waited::Ended) },
                () = tokio::time::sleep_until(deadline) => return Err(Waited::Timeout),
                () = self.dead.cancelled() => return Err(Waited::Ended),
            }
        }
    }

    /// Wait for the first frame (bounded); `Err` names why the stream gave none.
    pub(crate) async fn first_frame(&self, wait: Duration) -> Result<(), StreamError> {
        let mut rx = self.frames.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if self.frames.newest().is_some() {
                return Ok(());
            }
            tokio::select! {
                _ = rx.changed() => {}
                () = self.dead.cancelled() => {
                    return Err(StreamError::Failed(self.dead_reason().unwrap_or_else(|| "the stream ended".into())));
                }
                () = tokio::time::sleep_until(deadline) => {
                    return Err(StreamError::Failed(format!("no frame within {} ms", wait.as_millis())));
                }
            }
        }
    }

    /// The control socket, when this is a live scrcpy stream.
    pub(crate) fn control(&self) -> Option<&scrcpy::Control> {
        self.control.as_ref().filter(|_| self.is_alive())
    }

    /// Mark dead (a control write failed).
    pub(crate) fn kill(&self, why: String) {
        mark_dead(&self.dead, &self.death, why);
    }
}
