//! scrcpy's server as our stream (SPEC D8, D9), speaking its wire protocol (learned from
//! scrcpy's `doc/develop.md` and sources): push `scrcpy-server` to
//! `/data/local/tmp/scrcpy-server.jar`, start it with `app_process` on `shell,v2` (its logs and
//! exit status come back there), connect `localabstract:scrcpy_<scid>` twice (video, then
//! control) through the adb server, read the dummy byte, the 64-byte device name and the codec
//! meta (`h264`, width, height), then 12-byte-headed packets (PTS with config/key-frame flags,
//! size) of H.264 Annex B. Control messages are big-endian: touch (type 2), keycode (0),
//! back (4), set clipboard with paste (9, acknowledged with device message 1).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::decode::{FrameStore, spawn_decoder};
use super::{CapturePath, StreamError, StreamSession, mark_dead};
use crate::server::AdbServer;

/// Where the server is pushed (scrcpy's own choice).
pub(crate) const REMOTE_JAR: &str = "/data/local/tmp/scrcpy-server.jar";
const CODEC_H264: u32 = 0x6832_3634;
const FLAG_CONFIG: u64 = 1 << 63;
const POINTER_FINGER: u64 = u64::MAX - 1; // scrcpy's POINTER_ID_GENERIC_FINGER (-2)
/// Android actions.
const DOWN: u8 = 0;
const UP: u8 = 1;
const MOVE: u8 = 2;

/// The control socket of a running scrcpy server.
pub(crate) struct Control {
    w: tokio::sync::Mutex<OwnedWriteHalf>,
    seq: std::sync::atomic::AtomicU64,
    acks: watch::Receiver<u64>,
    frames: Arc<FrameStore>,
}

fn io_err(e: std::io::Error) -> String {
    format!("the scrcpy control socket broke: {e}")
}

impl Control {
    async fn send(&self, msg: &[u8]) -> Result<(), String> {
        let mut w = self.w.lock().await;
        w.write_all(msg).await.map_err(io_err)?;
        w.flush().await.map_err(io_err)
    }

    /// The size touches are expressed in: the current video frame's.
    fn screen(&self) -> (u16, u16) {
        self.frames
            .newest()
            .map(|f| {
                let (w, h) = f.image.dimensions();
                (w.min(65535) as u16, h.min(65535) as u16)
            })
            .unwrap_or((0, 0))
    }

    fn touch_msg(&self, action: u8, x: i32, y: i32) -> Vec<u8> {
        let (w, h) = self.screen();
        let mut m = Vec::with_capacity(32);
        m.push(2);
        m.push(action);
        m.extend_from_slice(&POINTER_FINGER.to_be_bytes());
        m.extend_from_slice(&x.to_be_bytes());
        m.extend_from_slice(&y.to_be_bytes());
        m.extend_from_slice(&w.to_be_bytes());
        m.extend_from_slice(&h.to_be_bytes());
        let pressure: u16 = if action == UP { 0 } else { 0xffff };
        m.extend_from_slice(&pressure.to_be_bytes());
        m.extend_from_slice(&0u32.to_be_bytes()); // action button
        m.extend_from_slice(&0u32.to_be_bytes()); // buttons
        m
    }

    /// A touch gesture: down at `from`, moves every ~16 ms towards `to` over `ms`, up at `to`.
    /// A tap is `from == to`, `ms == 0`; a long press holds in place.
    pub(crate) async fn gesture(
        &self,
        from: (i32, i32),
        to: (i32, i32),
        ms: u32,
    ) -> Result<(), String> {
        self.send(&self.touch_msg(DOWN, from.0, from.1)).await?;
        if ms > 0 {
            let t0 = Instant::now();
            let total = Duration::from_millis(u64::from(ms));
            loop {
                tokio::time::sleep(Duration::from_millis(16)).await;
                let f = (t0.elapsed().as_secs_f64() / total.as_secs_f64()).min(1.0);
                let x = from.0 + ((to.0 - from.0) as f64 * f).round() as i32;
                let y = from.1 + ((to.1 - from.1) as f64 * f).round() as i32;
                self.send(&self.touch_msg(MOVE, x, y)).await?;
                if f >= 1.0 {
                    break;
                }
            }
        }
        self.send(&self.touch_msg(UP, to.0, to.1)).await
    }

    /// A key press (down + up) of Android key code `code`.
    pub(crate) async fn key(&self, code: u32) -> Result<(), String> {
        let mut m = Vec::with_capacity(28);
        for action in [DOWN, UP] {
            m.push(0);
            m.push(action);
            m.extend_from_slice(&code.to_be_bytes());
            m.extend_from_slice(&0u32.to_be_bytes());
            m.extend_from_slice(&0u32.to_be_bytes());
        }
        self.send(&m).await
    }

    /// Type `text` (any Unicode) by setting the clipboard with `paste`; waits (bounded) for
    /// the server's acknowledgement, so the text is in before this returns.
    pub(crate) async fn paste(&self, text: &str, wait: Duration) -> Result<(), String> {
        let seq = self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let mut m = Vec::with_capacity(14 + text.len());
        m.push(9);
        m.extend_from_slice(&seq.to_be_bytes());
        m.push(1);
        m.extend_from_slice(&(text.len() as u32).to_be_bytes());
        m.extend_from_slice(text.as_bytes());
        let mut acks = self.acks.clone();
        self.send(&m).await?;
        let r = tokio::time::timeout(wait, acks.wait_for(|a| *a >= seq)).await;
        match r {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => {
                Err("the scrcpy control socket closed before the paste was acknowledged".into())
            }
            Err(_) => Err(format!(
                "scrcpy did not acknowledge the clipboard paste within {} ms",
                wait.as_millis()
            )),
        }
    }
}

fn scid() -> u32 {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
        .unwrap_or(1);
    (n ^ std::process::id().rotate_left(16)) & 0x7fff_ffff
}

/// Read shell-protocol packets of the server's `shell,v2`: stderr/stdout into `log`, the exit
/// code into `exit`.
async fn read_logs(
    mut s: TcpStream,
    log: Arc<Mutex<String>>,
    exit: watch::Sender<Option<Option<u8>>>,
    stop: CancellationToken,
) {
    let code = loop {
        let mut head = [0u8; 5];
        let r = tokio::select! {
            r = s.read_exact(&mut head) => r,
            () = stop.cancelled() => return,
        };
        if r.is_err() {
            break None;
        }
        let n = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut d = vec![0u8; n.min(1 << 20)];
        if s.read_exact(&mut d).await.is_err() {
            break None;
        }
        match head[0] {
            1 | 2 => {
                if let Ok(mut g) = log.lock()
                    && g.len() < 64 * 1024
                {
                    g.push_str(&String::from_utf8_lossy(&d));
                }
            }
            3 => break d.first().copied(),
            _ => {}
        }
    };
    exit.send_replace(Some(code));
}

/// `The server version (A) does not match the client (B)` → (A, B).
pub(crate) fn parse_mismatch(log: &str) -> Option<(String, String)> {
    let rest = log.split("The server version (").nth(1)?;
    let (server, rest) = rest.split_once(')')?;
    let client = rest.split("the client (").nth(1)?.split(')').next()?;
    Some((server.to_owned(), client.to_owned()))
}

fn failure(log: &str, code: Option<u8>) -> StreamError {
    if let Some((server, client)) = parse_mismatch(log) {
        return StreamError::VersionMismatch { server, client };
    }
    let tail: Vec<&str> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(4)
        .collect();
    StreamError::Failed(format!(
        "the scrcpy server exited{}: {}",
        code.map(|c| format!(" with status {c}"))
            .unwrap_or_default(),
        if tail.is_empty() {
            "(no output)".to_owned()
        } else {
            tail.join(" | ")
        }
    ))
}

/// Start scrcpy's server from `jar` announcing `version`, connect, and wait for the first
/// frame (within `timeout`).
pub(crate) async fn start(
    server: &AdbServer,
    serial: &str,
    jar: &Path,
    version: &str,
    timeout: Duration,
) -> Result<StreamSession, StreamError> {
    let fail = |e: crate::types::DeviceError| StreamError::Failed(e.to_string());
    let bytes = tokio::fs::read(jar)
        .await
        .map_err(|e| StreamError::Failed(format!("cannot read {}: {e}", jar.display())))?;
    super::sync::push_if_changed(server, serial, REMOTE_JAR, &bytes)
        .await
        .map_err(fail)?;
    let id = scid();
    let cmd = format!(
        "CLASSPATH={REMOTE_JAR} app_process / com.genymobile.scrcpy.Server {version} scid={id:08x} log_level=info audio=false tunnel_forward=true control=true video_codec=h264 max_size=0 max_fps=60 cleanup=false power_off_on_close=false clipboard_autosync=false"
    );
    let logs = server
        .open(serial, &format!("shell,v2,raw:{cmd}"))
        .await
        .map_err(fail)?;
    let stop = CancellationToken::new();
    let log = Arc::new(Mutex::new(String::new()));
    let (exit_tx, mut exit_rx) = watch::channel(None);
    tokio::spawn(read_logs(logs, log.clone(), exit_tx, stop.clone()));
    let name = format!("localabstract:scrcpy_{id:08x}");
    let deadline = tokio::time::Instant::now() + timeout;
    let log_text = |log: &Arc<Mutex<String>>| log.lock().map(|g| g.clone()).unwrap_or_default();
    // Connect once the server listens; stop early when it exits (e.g. a version mismatch).
    let connect = |what: &'static str| {
        let name = name.clone();
        let log = log.clone();
        let stop = stop.clone();
        let mut exit_rx = exit_rx.clone();
        async move {
            loop {
                if let Some(code) = *exit_rx.borrow_and_update() {
                    stop.cancel();
                    return Err(failure(&log_text(&log), code));
                }
                match server.open(serial, &name).await {
                    Ok(s) => return Ok(s),
                    Err(e) if tokio::time::Instant::now() >= deadline => {
                        stop.cancel();
                        return Err(StreamError::Failed(format!(
                            "could not connect the scrcpy {what} socket: {e}; server log: {}",
                            log_text(&log)
                        )));
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
        }
    };
    let mut video = connect("video").await?;
    let mut dummy = [0u8; 1];
    let io = |e: std::io::Error| StreamError::Failed(format!("scrcpy video socket: {e}"));
    // A server that exits right after accepting (version mismatch) closes the socket: the
    // dummy byte read fails, and the log says why.
    if video.read_exact(&mut dummy).await.is_err() {
        let _ =
            tokio::time::timeout(Duration::from_secs(2), exit_rx.wait_for(Option::is_some)).await;
        stop.cancel();
        let code = exit_rx.borrow().flatten();
        return Err(failure(&log_text(&log), code));
    }
    let control = connect("control").await?;
    let mut meta = [0u8; 64 + 12];
    video.read_exact(&mut meta).await.map_err(io)?;
    let codec = u32::from_be_bytes([meta[64], meta[65], meta[66], meta[67]]);
    if codec != CODEC_H264 {
        stop.cancel();
        return Err(StreamError::Failed(format!(
            "scrcpy sent codec id {codec:#010x}, not h264{}",
            if codec <= 1 {
                " (the server disabled the video stream)"
            } else {
                ""
            }
        )));
    }
    let frames = FrameStore::new();
    let decoder = spawn_decoder(frames.clone()).map_err(StreamError::Failed)?;
    let dead = CancellationToken::new();
    let death = Arc::new(Mutex::new(None));
    // Video reader.
    {
        let (dead, death, stop) = (dead.clone(), death.clone(), stop.clone());
        tokio::spawn(async move {
            let mut config: Vec<u8> = Vec::new();
            let why = loop {
                let mut h = [0u8; 12];
                let r = tokio::select! {
                    r = video.read_exact(&mut h) => r,
                    () = stop.cancelled() => return,
                };
                if let Err(e) = r {
                    break format!("the scrcpy video socket closed ({e})");
                }
                let flags = u64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
                let n = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
                if n > 64 << 20 {
                    break format!("implausible scrcpy packet of {n} bytes");
                }
                let mut d = vec![0u8; n];
                if let Err(e) = video.read_exact(&mut d).await {
                    break format!("the scrcpy video socket closed mid-packet ({e})");
                }
                if flags & FLAG_CONFIG != 0 {
                    config = d;
                    continue;
                }
                let mut au = std::mem::take(&mut config);
                au.extend_from_slice(&d);
                let tx = decoder.clone();
                // The decoder thread applies back-pressure; never block the runtime.
                if tokio::task::spawn_blocking(move || tx.send(au))
                    .await
                    .map_or(true, |r| r.is_err())
                {
                    break "the H.264 decoder stopped".to_owned();
                }
            };
            mark_dead(&dead, &death, why);
        });
    }
    // Server exit ends the session.
    {
        let (dead, death, stop, log) = (dead.clone(), death.clone(), stop.clone(), log.clone());
        let mut exit_rx = exit_rx.clone();
        tokio::spawn(async move {
            tokio::select! {
                r = exit_rx.wait_for(Option::is_some) => {
                    let code = r.ok().and_then(|v| v.flatten());
                    mark_dead(&dead, &death, failure(&log_text(&log), code).to_string());
                }
                () = stop.cancelled() => {}
            }
        });
    }
    // Control: device messages (clipboard acks) in, our messages out.
    let (mut cr, cw) = control.into_split();
    let (ack_tx, ack_rx) = watch::channel(0u64);
    {
        let (dead, death, stop) = (dead.clone(), death.clone(), stop.clone());
        tokio::spawn(async move {
            let why = loop {
                let t = tokio::select! {
                    t = cr.read_u8() => t,
                    () = stop.cancelled() => return,
                };
                let r: std::io::Result<()> = async {
                    match t? {
                        0 => {
                            let n = cr.read_u32().await? as usize;
                            let mut b = vec![0u8; n.min(1 << 20)];
                            cr.read_exact(&mut b).await?;
                        }
                        1 => {
                            let seq = cr.read_u64().await?;
                            ack_tx.send_replace(seq);
                        }
                        2 => {
                            let _id = cr.read_u16().await?;
                            let n = cr.read_u16().await? as usize;
                            let mut b = vec![0u8; n];
                            cr.read_exact(&mut b).await?;
                        }
                        other => {
                            return Err(std::io::Error::other(format!(
                                "unknown scrcpy device message {other}"
                            )));
                        }
                    }
                    Ok(())
                }
                .await;
                if let Err(e) = r {
                    break format!("the scrcpy control socket closed ({e})");
                }
            };
            mark_dead(&dead, &death, why);
        });
    }
    let session = StreamSession {
        path: CapturePath::Scrcpy(version.to_owned()),
        frames: frames.clone(),
        dead,
        death,
        stop,
        control: Some(Control {
            w: tokio::sync::Mutex::new(cw),
            seq: std::sync::atomic::AtomicU64::new(0),
            acks: ack_rx,
            frames,
        }),
        started: Instant::now(),
    };
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    session
        .first_frame(left.max(Duration::from_secs(1)))
        .await?;
    Ok(session)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatch_message() {
        let log = "[server] ERROR: The server version (3.3.4) does not match the client (2.7)\njava.lang.IllegalArgumentException: …";
        assert_eq!(parse_mismatch(log), Some(("3.3.4".into(), "2.7".into())));
        let e = failure(log, Some(1)).to_string();
        assert!(e.contains("3.3.4") && e.contains("2.7"), "{e}");
        assert!(parse_mismatch("[server] ERROR: other").is_none());
        assert!(
            failure("boom", Some(1))
                .to_string()
                .contains("status 1: boom")
        );
    }
}
