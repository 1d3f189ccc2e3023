//! The phone's video encoder loop (SPEC V7): watches the rendered screen and encodes a frame
//! whenever it changes (at most `max_fps`), plus — like scrcpy's MediaCodec setting
//! `repeat-previous-frame-after` — a repeat of an unchanged screen every `repeat_after`, so a
//! client sees a fresh frame soon after any action. Runs on its own thread (encoding is CPU
//! work) and hands packets to the async writer through a bounded channel.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::h264::H264Encoder;
use crate::server::Slot;

/// One packet as MediaCodec hands it out.
#[derive(Debug, Clone)]
pub(crate) struct Packet {
    /// Presentation time in µs since the encoder started.
    pub pts_us: u64,
    /// SPS/PPS (no picture).
    pub config: bool,
    /// An IDR frame.
    pub key: bool,
    /// Annex B bytes.
    pub data: Vec<u8>,
    /// Frame size the packet belongs to.
    pub size: (u32, u32),
    /// When the screen it shows was captured (the writer holds it back until
    /// `made + stream_frame_latency`, SPEC V6).
    pub made: Instant,
}

/// Encoder settings.
#[derive(Debug, Clone)]
pub(crate) struct EncodeOpts {
    pub max_fps: f32,
    pub bit_rate: u32,
    /// Re-send an unchanged screen after this long (`None`: only on change, as screenrecord).
    pub repeat_after: Option<Duration>,
    /// A key frame at least this often.
    pub key_every: Duration,
}

/// Hold a packet back until its frame latency has passed (SPEC V6: capture on the phone →
/// bytes on the host); nothing on the instant profile.
pub(crate) async fn latency(slot: &Slot, p: &Packet) {
    let lat = slot.timing().stream_frame_latency();
    if !lat.is_zero() {
        tokio::time::sleep_until(tokio::time::Instant::from_std(p.made + lat)).await;
    }
}

/// Start the encoder thread. It stops when `stop` fires or the receiver is dropped. A request
/// for a key frame (scrcpy's RESET_VIDEO) is made by setting `want_key`.
pub(crate) fn spawn(
    slot: Arc<Slot>,
    opts: EncodeOpts,
    stop: CancellationToken,
    want_key: Arc<AtomicBool>,
) -> Result<mpsc::Receiver<Packet>, String> {
    let mut enc = H264Encoder::new(opts.max_fps, opts.bit_rate)?;
    let (tx, rx) = mpsc::channel::<Packet>(8);
    let period = Duration::from_secs_f32(1.0 / opts.max_fps.clamp(1.0, 120.0));
    std::thread::Builder::new()
        .name("sim-h264".to_owned())
        .spawn(move || {
            let t0 = Instant::now();
            let mut last: Option<Arc<Vec<u8>>> = None;
            let mut last_sent = Instant::now();
            let mut last_key = Instant::now();
            let mut size = (0, 0);
            while !stop.is_cancelled() && !tx.is_closed() {
                let tick = Instant::now();
                let frame = {
                    let mut p = slot.lock();
                    p.tick(tick);
                    p.frame()
                };
                let f = match frame {
                    Ok(f) => f,
                    Err(e) => {
                        tracing::warn!("sim encoder: cannot render: {e}");
                        break;
                    }
                };
                let changed = last.as_ref().is_none_or(|l| !Arc::ptr_eq(l, &f.rgba));
                let repeat = opts.repeat_after.is_some_and(|r| last_sent.elapsed() >= r);
                if changed || repeat {
                    let key = want_key.swap(false, Ordering::Relaxed)
                        || last_key.elapsed() >= opts.key_every
                        || (f.w, f.h) != size;
                    let pts_us = t0.elapsed().as_micros() as u64;
                    match enc.encode(&f.rgba, f.w, f.h, key) {
                        Ok(e) => {
                            if e.key {
                                last_key = Instant::now();
                            }
                            let sz = (f.w, f.h);
                            let mut ok = true;
                            if let Some(c) = e.config {
                                ok &= tx
                                    .blocking_send(Packet {
                                        pts_us,
                                        config: true,
                                        key: false,
                                        data: c,
                                        size: sz,
                                        made: tick,
                                    })
                                    .is_ok();
                            }
                            if !e.frame.is_empty() {
                                ok &= tx
                                    .blocking_send(Packet {
                                        pts_us,
                                        config: false,
                                        key: e.key,
                                        data: e.frame,
                                        size: sz,
                                        made: tick,
                                    })
                                    .is_ok();
                            }
                            if !ok {
                                break;
                            }
                            size = sz;
                        }
                        Err(e) => {
                            tracing::warn!("sim encoder: {e}");
                            break;
                        }
                    }
                    last = Some(f.rgba.clone());
                    last_sent = Instant::now();
                }
                let spent = tick.elapsed();
                if spent < period {
                    std::thread::sleep(period - spent);
                }
            }
        })
        .map_err(|e| format!("cannot start the encoder thread: {e}"))?;
    Ok(rx)
}
