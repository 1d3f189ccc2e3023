//! H.264 decoding of the screen stream on the host (SPEC D8): the `openh264` crate (Cisco's
//! OpenH264, built from its bundled C source; SIMD when `nasm` is installed), one decoder
//! thread per stream, the newest picture kept as RGBA with the time it was decoded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use image::RgbaImage;
use openh264::decoder::Decoder;
use openh264::formats::YUVSource;
use tokio::sync::watch;

/// One decoded frame of the stream.
#[derive(Debug, Clone)]
pub struct LiveFrame {
    /// The picture (RGBA, the phone's current orientation).
    pub image: Arc<RgbaImage>,
    /// When it was decoded on this computer.
    pub at: Instant,
    /// 1, 2, … in decoding order.
    pub seq: u64,
}

/// The newest frame and a counter that ticks with each one.
#[derive(Debug)]
pub(crate) struct FrameStore {
    newest: Mutex<Option<LiveFrame>>,
    tick: watch::Sender<u64>,
    /// Total decode + colour conversion time, µs, and frames decoded.
    pub decode_us: AtomicU64,
    pub decoded: AtomicU64,
}

impl FrameStore {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            newest: Mutex::new(None),
            tick: watch::channel(0).0,
            decode_us: AtomicU64::new(0),
            decoded: AtomicU64::new(0),
        })
    }

    pub(crate) fn newest(&self) -> Option<LiveFrame> {
        self.newest.lock().ok().and_then(|g| g.clone())
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.tick.subscribe()
    }

    /// Make `image` the newest frame; the frame it replaces comes back when nobody else holds
    /// it, so the decoder can reuse its buffer.
    fn put(&self, image: RgbaImage) -> Option<RgbaImage> {
        let seq = *self.tick.borrow() + 1;
        let old = self.newest.lock().ok().and_then(|mut g| {
            g.replace(LiveFrame {
                image: Arc::new(image),
                at: Instant::now(),
                seq,
            })
        });
        self.tick.send_replace(seq);
        old.and_then(|f| Arc::try_unwrap(f.image).ok())
    }
}

/// Start a decoder thread fed with access units (Annex B: SPS/PPS and/or slices). It ends when
/// the sender is dropped. Errors of single units are logged and skipped (the next key frame
/// recovers).
pub(crate) fn spawn_decoder(
    store: Arc<FrameStore>,
) -> Result<std::sync::mpsc::SyncSender<Vec<u8>>, String> {
    let mut dec = Decoder::new().map_err(|e| format!("H.264 decoder: {e}"))?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(16);
    std::thread::Builder::new()
        .name("h264-decode".into())
        .spawn(move || {
            // The buffer of a frame nobody holds any more: a 1080×2400 frame is 10 MB, and a
            // fresh allocation per frame (mapped, faulted in and zeroed by the kernel) cost
            // more than a millisecond of each frame's decode.
            let mut spare: Option<Vec<u8>> = None;
            while let Ok(au) = rx.recv() {
                let t0 = Instant::now();
                match dec.decode(&au) {
                    Ok(Some(yuv)) => {
                        let (w, h) = yuv.dimensions();
                        let mut px = spare.take().unwrap_or_default();
                        // Every byte is written by the conversion: the resize only allocates
                        // when the size changed.
                        px.resize(w * h * 4, 0);
                        yuv.write_rgba8(&mut px);
                        if let Some(img) = RgbaImage::from_raw(w as u32, h as u32, px) {
                            store
                                .decode_us
                                .fetch_add(t0.elapsed().as_micros() as u64, Ordering::Relaxed);
                            store.decoded.fetch_add(1, Ordering::Relaxed);
                            spare = store.put(img).map(RgbaImage::into_raw);
                        }
                    }
                    Ok(None) => {}
                    Err(e) => tracing::debug!("H.264 decode error (waiting for a key frame): {e}"),
                }
            }
        })
        .map_err(|e| format!("cannot start the decoder thread: {e}"))?;
    Ok(tx)
}
