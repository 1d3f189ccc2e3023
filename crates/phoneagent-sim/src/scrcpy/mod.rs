//! The virtual phone's scrcpy server (SPEC V7): what
//! `CLASSPATH=/data/local/tmp/scrcpy-server.jar app_process / com.genymobile.scrcpy.Server
//! VERSION key=value…` starts on a phone, speaking scrcpy 3.x's wire protocol (learned from
//! scrcpy's `doc/develop.md` and its server/client sources):
//!
//! * the first argument must equal the server's version, else it fails like the real one:
//!   `[server] ERROR: The server version (V) does not match the client (C)` on stderr, exit 1;
//! * with `tunnel_forward=true` it listens on the abstract socket `scrcpy_<scid as %08x>`
//!   (`scrcpy` when `scid=-1`) and accepts the video, audio and control sockets in that
//!   order; the first gets one dummy byte (`send_dummy_byte`), then 64 bytes of device name
//!   (`send_device_meta`);
//! * video: `codec id u32 BE ('h264') + width u32 + height u32` (`send_codec_meta`), then
//!   packets `pts_and_flags u64 BE (bit 63 config, bit 62 key frame) + size u32 + H.264 Annex
//!   B` (`send_frame_meta`); a size change (rotation) starts a new config packet + key frame;
//! * audio (when asked): disabled with code 0, as a phone that cannot capture audio;
//! * control: the messages of [`control`], applied to the phone as `input` would.

mod control;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::devfs::BoxConn;
use crate::procout::ProcOut;
use crate::server::Slot;
use crate::videoenc::{self, EncodeOpts};

/// The scrcpy server version the virtual phone runs, whatever file was pushed.
pub const SCRCPY_SERVER_VERSION: &str = "3.3.4";
/// The main class a scrcpy client starts.
const MAIN_CLASS: &str = "com.genymobile.scrcpy.Server";
/// `h264` as scrcpy's codec id.
const CODEC_H264: u32 = 0x6832_3634;
/// Device name field of the device meta.
const DEVICE_NAME_LEN: usize = 64;
/// How long the server waits for its sockets before giving up (the real one waits forever;
/// a bound keeps a crashed client from leaving a server behind).
const ACCEPT_TIMEOUT: Duration = Duration::from_secs(15);

/// A parsed `app_process` launch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Launch {
    pub classpath: String,
    pub class: String,
    pub args: Vec<String>,
}

/// Recognise `CLASSPATH=JAR app_process [DIR] CLASS ARGS…`.
pub(crate) fn parse(words: &[String]) -> Option<Launch> {
    let (first, rest) = words.split_first()?;
    let classpath = first.strip_prefix("CLASSPATH=")?.to_owned();
    let (ap, rest) = rest.split_first()?;
    if ap != "app_process" && ap != "/system/bin/app_process" {
        return None;
    }
    let rest: Vec<&String> = rest.iter().skip_while(|a| a.starts_with('/')).collect();
    let (class, args) = rest.split_first()?;
    Some(Launch {
        classpath,
        class: (*class).clone(),
        args: args.iter().map(|s| (*s).clone()).collect(),
    })
}

/// Server options that change what we do.
#[derive(Debug, Clone)]
struct Options {
    scid: i64,
    tunnel_forward: bool,
    video: bool,
    audio: bool,
    control: bool,
    max_fps: f32,
    bit_rate: u32,
    send_device_meta: bool,
    send_frame_meta: bool,
    send_dummy_byte: bool,
    send_codec_meta: bool,
}

fn java_error(msg: &str) -> String {
    format!(
        "[server] ERROR: {msg}\njava.lang.IllegalArgumentException: {msg}\n\tat com.genymobile.scrcpy.Options.parse(Options.java:284)\n\tat com.genymobile.scrcpy.Server.internalMain(Server.java:239)\n\tat com.genymobile.scrcpy.Server.main(Server.java:215)\n\tat com.android.internal.os.RuntimeInit.nativeFinishInit(Native Method)\n"
    )
}

/// Parse the server arguments the way `Options.parse` does (errors are the stderr text).
fn options(args: &[String]) -> Result<(Options, Vec<String>), String> {
    let Some((client, rest)) = args.split_first() else {
        return Err(java_error("Missing client version"));
    };
    if client != SCRCPY_SERVER_VERSION {
        return Err(java_error(&format!(
            "The server version ({SCRCPY_SERVER_VERSION}) does not match the client ({client})"
        )));
    }
    let mut o = Options {
        scid: -1,
        tunnel_forward: false,
        video: true,
        audio: true,
        control: true,
        max_fps: 60.0,
        bit_rate: 8_000_000,
        send_device_meta: true,
        send_frame_meta: true,
        send_dummy_byte: true,
        send_codec_meta: true,
    };
    let mut warnings = Vec::new();
    let flag = |v: &str| v.eq_ignore_ascii_case("true");
    for a in rest {
        let Some((k, v)) = a.split_once('=') else {
            return Err(java_error(&format!("Invalid key=value pair: \"{a}\"")));
        };
        match k {
            "scid" => {
                o.scid = match i64::from_str_radix(v, 16).or_else(|_| v.parse::<i64>()) {
                    Ok(x) if x >= -1 => x,
                    _ => {
                        return Err(java_error(&format!(
                            "scid may not be negative (except -1 for 'none'): {v}"
                        )));
                    }
                }
            }
            "tunnel_forward" => o.tunnel_forward = flag(v),
            "video" => o.video = flag(v),
            "audio" => o.audio = flag(v),
            "control" => o.control = flag(v),
            "video_codec" if v != "h264" => {
                return Err(java_error(&format!("Video codec {v} not supported")));
            }
            "max_fps" => o.max_fps = v.parse::<f32>().ok().filter(|f| *f > 0.0).unwrap_or(60.0),
            "video_bit_rate" => o.bit_rate = v.parse().unwrap_or(o.bit_rate),
            "send_device_meta" => o.send_device_meta = flag(v),
            "send_frame_meta" => o.send_frame_meta = flag(v),
            "send_dummy_byte" => o.send_dummy_byte = flag(v),
            "send_codec_meta" => o.send_codec_meta = flag(v),
            "raw_stream" if flag(v) => {
                o.send_device_meta = false;
                o.send_frame_meta = false;
                o.send_dummy_byte = false;
                o.send_codec_meta = false;
            }
            "max_size" if v != "0" => warnings.push(format!(
                "[server] WARN: max_size={v} is not emulated: the virtual phone streams at its full size\n"
            )),
            "video_codec" | "log_level" | "audio_codec" | "max_size" | "cleanup"
            | "power_off_on_close" | "clipboard_autosync" | "downsize_on_error"
            | "stay_awake" | "show_touches" | "power_on" | "raw_stream" | "video_source"
            | "audio_source" | "audio_dup" | "list_encoders" | "list_displays" | "display_id"
            | "video_encoder" | "video_codec_options" | "lock_video_orientation"
            | "capture_orientation" | "angle" | "crop" | "tunnel_reverse" | "min_size_alignment"
            | "vd_system_decorations" | "audio_bit_rate" => {}
            other => warnings.push(format!("[server] WARN: Unknown server option: {other}\n")),
        }
    }
    if !o.tunnel_forward {
        return Err(java_error(
            "the virtual phone's scrcpy server supports only tunnel_forward=true (the client connects to localabstract:scrcpy_<scid>)",
        ));
    }
    if !o.video && !o.control && !o.audio {
        return Err(java_error(
            "No video, no audio, no control, no list, no UHID: nothing to do",
        ));
    }
    Ok((o, warnings))
}

fn socket_name(scid: i64) -> String {
    if scid == -1 {
        "scrcpy".to_owned()
    } else {
        format!("scrcpy_{scid:08x}")
    }
}

/// Run the scrcpy server: until its sockets close, the client goes away, or `stop` (the device
/// disconnects). Output (logs) goes to `out`.
pub(crate) async fn run<W: AsyncWrite + Unpin>(
    slot: Arc<Slot>,
    launch: Launch,
    mut out: ProcOut<W>,
    stop: CancellationToken,
) -> std::io::Result<W> {
    // The class must be loadable from the classpath.
    let jar = slot.lock().dev.stat(&launch.classpath);
    if !matches!(jar, crate::devfs::Stat::File { .. }) || launch.class != MAIN_CLASS {
        out.stderr(&format!(
            "Exception in thread \"main\" java.lang.ClassNotFoundException: Didn't find class \"{}\" on path: DexPathList[[zip file \"{}\"]]\n",
            launch.class, launch.classpath
        ))
        .await?;
        return out.exit(1).await;
    }
    let (o, warnings) = match options(&launch.args) {
        Ok(x) => x,
        Err(e) => {
            out.stderr(&e).await?;
            return out.exit(1).await;
        }
    };
    for w in warnings {
        out.stderr(&w).await?;
    }
    let name = socket_name(o.scid);
    let listener = slot.lock().dev.listen(&name);
    let mut rx = match listener {
        Ok(rx) => rx,
        Err(e) => {
            out.stderr(&format!("[server] ERROR: {e}\njava.io.IOException: {e}\n"))
                .await?;
            return out.exit(1).await;
        }
    };
    out.stderr("[server] INFO: Device: [PhoneAgent] PhoneAgent PhoneAgent_Virtual (Android 14)\n")
        .await?;
    let wanted = [o.video, o.audio, o.control];
    let mut socks: [Option<BoxConn>; 3] = [None, None, None];
    let mut dummy = o.send_dummy_byte;
    let mut accept_failed = None;
    for (i, want) in wanted.iter().enumerate() {
        if !want {
            continue;
        }
        let got = tokio::select! {
            c = rx.recv() => c,
            () = tokio::time::sleep(ACCEPT_TIMEOUT) => None,
            () = stop.cancelled() => None,
        };
        let Some(mut c) = got else {
            accept_failed = Some("no client connected");
            break;
        };
        if dummy {
            if c.write_all(&[0]).await.is_err() {
                accept_failed = Some("the client left");
                break;
            }
            dummy = false;
        }
        socks[i] = Some(c);
    }
    slot.lock().dev.unlisten(&name);
    drop(rx);
    if let Some(why) = accept_failed {
        out.stderr(&format!("[server] ERROR: {why} on {name}\n"))
            .await?;
        return out.exit(1).await;
    }
    let [video, audio, control] = socks;
    let mut video = video;
    let mut audio = audio;
    let mut control = control;
    if o.send_device_meta {
        let mut meta = [0u8; DEVICE_NAME_LEN];
        let model = b"PhoneAgent_Virtual";
        meta[..model.len()].copy_from_slice(model);
        let first = video.as_mut().or(audio.as_mut()).or(control.as_mut());
        if let Some(c) = first {
            c.write_all(&meta).await?;
        }
    }
    if let Some(a) = audio.as_mut() {
        // Code 0: audio explicitly disabled; the client goes on with video only.
        a.write_all(&[0, 0, 0, 0]).await?;
    }
    let session = stop.child_token();
    let want_key = Arc::new(AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    if let Some(v) = video.take() {
        let slot = slot.clone();
        let o = o.clone();
        let session = session.clone();
        let want_key = want_key.clone();
        tasks.spawn(async move {
            let r = stream_video(slot, v, &o, session.clone(), want_key).await;
            session.cancel();
            r.err().map(|e| format!("video: {e}"))
        });
    }
    if let Some(c) = control.take() {
        let slot = slot.clone();
        let session = session.clone();
        let want_key = want_key.clone();
        tasks.spawn(async move {
            let r = control::serve(slot, c, session.clone(), want_key).await;
            session.cancel();
            r.err().map(|e| format!("control: {e}"))
        });
    }
    // An audio socket the client closes ends the session too.
    if let Some(mut a) = audio.take() {
        let session = session.clone();
        tasks.spawn(async move {
            let mut b = [0u8; 64];
            loop {
                tokio::select! {
                    r = a.read(&mut b) => if matches!(r, Ok(0) | Err(_)) { break },
                    () = session.cancelled() => break,
                }
            }
            session.cancel();
            None
        });
    }
    let mut errors = Vec::new();
    while let Some(r) = tasks.join_next().await {
        if let Ok(Some(e)) = r {
            errors.push(e);
        }
    }
    for e in errors {
        tracing::debug!("scrcpy session ended: {e}");
    }
    if stop.is_cancelled() {
        // The device went away: the process dies with it, no exit status reaches anyone.
        return Err(std::io::Error::other("the device disconnected"));
    }
    out.exit(0).await
}

async fn stream_video(
    slot: Arc<Slot>,
    mut v: BoxConn,
    o: &Options,
    session: CancellationToken,
    want_key: Arc<AtomicBool>,
) -> std::io::Result<()> {
    let opts = EncodeOpts {
        max_fps: o.max_fps,
        bit_rate: o.bit_rate,
        repeat_after: Some(Duration::from_millis(100)),
        key_every: Duration::from_secs(10),
    };
    let mut rx = videoenc::spawn(slot.clone(), opts, session.clone(), want_key)
        .map_err(std::io::Error::other)?;
    let mut header_sent = !o.send_codec_meta;
    loop {
        let p = tokio::select! {
            p = rx.recv() => p,
            () = session.cancelled() => None,
        };
        let Some(p) = p else {
            return Ok(());
        };
        videoenc::latency(&slot, &p).await;
        if !header_sent {
            let mut h = Vec::with_capacity(12);
            h.extend_from_slice(&CODEC_H264.to_be_bytes());
            h.extend_from_slice(&p.size.0.to_be_bytes());
            h.extend_from_slice(&p.size.1.to_be_bytes());
            v.write_all(&h).await?;
            header_sent = true;
        }
        let mut buf = Vec::with_capacity(12 + p.data.len());
        if o.send_frame_meta {
            let flags = if p.config {
                1u64 << 63
            } else {
                p.pts_us | if p.key { 1u64 << 62 } else { 0 }
            };
            buf.extend_from_slice(&flags.to_be_bytes());
            buf.extend_from_slice(&(p.data.len() as u32).to_be_bytes());
        }
        buf.extend_from_slice(&p.data);
        v.write_all(&buf).await?;
        v.flush().await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn launch_and_options() {
        let l = parse(&w(
            "CLASSPATH=/data/local/tmp/scrcpy-server.jar app_process / com.genymobile.scrcpy.Server 3.3.4 scid=0000002a tunnel_forward=true audio=false",
        ))
        .unwrap();
        assert_eq!(l.classpath, "/data/local/tmp/scrcpy-server.jar");
        assert_eq!(l.class, MAIN_CLASS);
        let (o, warn) = options(&l.args).unwrap();
        assert_eq!(socket_name(o.scid), "scrcpy_0000002a");
        assert!(!o.audio && o.video && o.control && o.tunnel_forward);
        assert!(warn.is_empty());
        let e = options(&w("2.7 tunnel_forward=true")).unwrap_err();
        assert!(
            e.contains("The server version (3.3.4) does not match the client (2.7)"),
            "{e}"
        );
        assert!(options(&[]).unwrap_err().contains("Missing client version"));
        assert!(
            options(&w("3.3.4 bogus"))
                .unwrap_err()
                .contains("Invalid key=value")
        );
        assert!(options(&w("3.3.4 tunnel_forward=false")).is_err());
        assert_eq!(socket_name(-1), "scrcpy");
        assert!(parse(&w("app_process / x")).is_none());
    }
}
