//! The desktop mirror (SPEC U1, issue #12 item 5): live video from the phone's screen stream
//! (scrcpy or `screenrecord`, the same stream the run observes), else screenshot polling.
//!
//! Frames reach the webview as downscaled JPEGs through the app's `pa:` URI scheme
//! (`pa://localhost/mirror/<seq>`, see [`serve`]), never as base64 in an event: the channel
//! carries only a [`MirrorMessage`] with the frame's number, size and timing. Only frames that
//! show a different screen are sent (an unchanged screen's repeats are dropped), at most
//! [`MAX_FPS`] per second.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use phoneagent_device::{AdbDevice, Device, DeviceError, frame, stream};
use tokio_util::sync::CancellationToken;

use crate::console::lock;
use crate::dto::{MirrorFrame, MirrorMessage};
use crate::error::AppResult;

/// Longest side of a mirror frame sent to the webview, px (issue #14: a full 1080×2400 PNG as
/// base64 per frame kept the webview's main thread busy; the device size still goes along, so
/// clicks map to device px).
pub const MIRROR_THUMB_MAX_SIDE: u32 = 960;
/// JPEG quality of mirror frames (1..=100).
pub const MIRROR_JPEG_QUALITY: u8 = 80;
/// Frame-rate ceiling of the mirror, frames/s.
pub const MAX_FPS: u32 = 60;
/// Minimum time between polled screenshots when no stream runs (10 fps ceiling).
pub const POLL_MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The newest mirror frame as JPEG bytes, served at `pa://localhost/mirror/<seq>`.
#[derive(Debug, Default)]
pub struct MirrorSlot {
    newest: Mutex<Option<(u64, Arc<Vec<u8>>)>>,
}

impl MirrorSlot {
    fn put(&self, seq: u64, jpeg: Vec<u8>) {
        *self.newest.lock().unwrap_or_else(|p| p.into_inner()) = Some((seq, Arc::new(jpeg)));
    }

    /// The newest frame's JPEG (whatever `seq` the webview asked for: an older one is gone, and
    /// the newest is what it should show).
    pub fn newest(&self) -> Option<(u64, Arc<Vec<u8>>)> {
        self.newest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Forget the frame (mirror stopped or the phone changed).
    pub fn clear(&self) {
        *self.newest.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// A frame as a downscaled JPEG (≤ [`MIRROR_THUMB_MAX_SIDE`] px); empty when encoding failed.
pub fn thumbnail_jpeg(img: &image::RgbaImage) -> Vec<u8> {
    frame::jpeg_thumbnail(img, MIRROR_THUMB_MAX_SIDE, MIRROR_JPEG_QUALITY).unwrap_or_default()
}

fn wall_ms_at(at: Instant) -> u64 {
    phoneagent_runtime::now_ms().saturating_sub(at.elapsed().as_millis() as u64)
}

/// Encode `img` as the next mirror frame's JPEG (on a blocking thread), put it in `slot` and
/// return its number; `None` when the encoding thread was lost.
async fn publish(slot: &MirrorSlot, seq: &mut u64, img: &Arc<image::RgbaImage>) -> Option<u64> {
    let img = img.clone();
    let jpeg = tokio::task::spawn_blocking(move || thumbnail_jpeg(&img))
        .await
        .ok()?;
    *seq += 1;
    slot.put(*seq, jpeg);
    Some(*seq)
}

/// Mirror `dev` until `cancel` fires or `send` returns `false`: first a
/// [`MirrorMessage::Paths`] (capture and input paths, and how to get a faster one), then
/// [`MirrorMessage::Frame`]s whose JPEG is in `slot`, and [`MirrorMessage::Error`]s when
/// capturing fails (the mirror retries every second).
pub async fn run_mirror<F>(
    dev: Arc<AdbDevice>,
    slot: Arc<MirrorSlot>,
    send: F,
    cancel: CancellationToken,
) where
    F: Fn(MirrorMessage) -> bool + Send + Sync + 'static,
{
    // Starts the stream in a stream capture mode (shared with runs on this phone).
    let paths = tokio::select! {
        p = dev.stream_paths() => p,
        () = cancel.cancelled() => return,
    };
    let (capture, input, note) = paths;
    let mut said_paths = (capture.to_string(), input.to_string());
    if !send(MirrorMessage::Paths {
        capture: said_paths.0.clone(),
        input: said_paths.1.clone(),
        note,
    }) {
        return;
    }
    let min_gap = Duration::from_millis(1000 / u64::from(MAX_FPS));
    let mut seq = 0u64;
    let mut stream_seq = 0u64;
    let mut last_shown: Option<Arc<image::RgbaImage>> = None;
    let mut last_sent = Instant::now() - min_gap;
    let mut last_png_hash: Option<u64> = None;
    while !cancel.is_cancelled() {
        let live = dev.stream().await.filter(|s| s.is_alive());
        if let Some(s) = live {
            let (c, i) = (s.capture_path().to_string(), s.input_path().to_string());
            if (c.as_str(), i.as_str()) != (said_paths.0.as_str(), said_paths.1.as_str()) {
                said_paths = (c.clone(), i.clone());
                if !send(MirrorMessage::Paths {
                    capture: c,
                    input: i,
                    note: None,
                }) {
                    return;
                }
            }
            let next = tokio::select! {
                f = s.next_frame(stream_seq, Duration::from_millis(500)) => f,
                () = cancel.cancelled() => break,
            };
            let Some(f) = next else { continue };
            stream_seq = f.seq;
            if last_shown
                .as_ref()
                .is_some_and(|l| !stream::differs(l, &f.image))
            {
                continue;
            }
            let Some(seq) = publish(&slot, &mut seq, &f.image).await else {
                break;
            };
            let msg = MirrorMessage::Frame {
                frame: MirrorFrame {
                    seq,
                    width: f.image.width(),
                    height: f.image.height(),
                    capture_ms: 0,
                    blocked: frame::is_blank(&f.image),
                    ts_ms: wall_ms_at(f.at),
                    host_ms: f.at.elapsed().as_millis() as u32,
                    live: true,
                },
            };
            last_shown = Some(f.image);
            if !send(msg) {
                break;
            }
            let gap = last_sent.elapsed();
            last_sent = Instant::now();
            if gap < min_gap {
                tokio::select! {
                    () = tokio::time::sleep(min_gap - gap) => {}
                    () = cancel.cancelled() => break,
                }
            }
            continue;
        }
        // No stream: poll screenshots (SPEC U1's floor).
        let started = Instant::now();
        let msg = match dev.screenshot(&cancel).await {
            Ok(shot) => {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                shot.png.hash(&mut h);
                let hash = h.finish();
                if last_png_hash == Some(hash) {
                    None
                } else {
                    last_png_hash = Some(hash);
                    let img = shot.image;
                    let Some(seq) = publish(&slot, &mut seq, &img).await else {
                        break;
                    };
                    last_shown = Some(img.clone());
                    Some(MirrorMessage::Frame {
                        frame: MirrorFrame {
                            seq,
                            width: img.width(),
                            height: img.height(),
                            capture_ms: shot.capture_ms,
                            blocked: shot.blocked,
                            ts_ms: wall_ms_at(started),
                            host_ms: started.elapsed().as_millis() as u32,
                            live: false,
                        },
                    })
                }
            }
            Err(DeviceError::Cancelled) => break,
            Err(e) => Some(MirrorMessage::Error {
                code: e.code().as_str().into(),
                message: e.to_string(),
            }),
        };
        let failed = matches!(msg, Some(MirrorMessage::Error { .. }));
        if let Some(m) = msg
            && !send(m)
        {
            break;
        }
        let floor = if failed {
            Duration::from_secs(1)
        } else {
            POLL_MIN_INTERVAL
        };
        let elapsed = started.elapsed();
        if elapsed < floor {
            tokio::select! {
                () = tokio::time::sleep(floor - elapsed) => {}
                () = cancel.cancelled() => break,
            }
        }
    }
}

/// Long side of a timeline thumbnail served at `/thumb/<sha256>`, px (84 CSS px wide at 2×).
pub const THUMB_LONG_SIDE: u32 = 360;
/// Long side of a step picture served at `/view/<sha256>` (History's large view), px.
pub const VIEW_LONG_SIDE: u32 = MIRROR_THUMB_MAX_SIDE;

/// (sha256, long side px) → JPEG bytes.
type ThumbMap = std::collections::HashMap<(String, u32), Arc<Vec<u8>>>;

/// Downscaled stored screenshots already served (content-addressed, so never stale), bounded.
#[derive(Debug, Default)]
pub struct ThumbCache {
    map: Mutex<ThumbMap>,
}

/// Entries kept by [`ThumbCache`] (about 20–60 KB each).
const THUMB_CACHE_ENTRIES: usize = 256;

impl ThumbCache {
    fn get_or(
        &self,
        hash: &str,
        side: u32,
        make: impl FnOnce() -> Option<Vec<u8>>,
    ) -> Option<Arc<Vec<u8>>> {
        let key = (hash.to_string(), side);
        if let Some(b) = self.map.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Some(b.clone());
        }
        let b = Arc::new(make()?);
        let mut m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= THUMB_CACHE_ENTRIES {
            m.clear();
        }
        m.insert(key, b.clone());
        Some(b)
    }
}

fn downscaled(bytes: &[u8], side: u32) -> Option<Vec<u8>> {
    let img = image::load_from_memory(bytes).ok()?.into_rgba8();
    frame::jpeg_thumbnail(&img, side, MIRROR_JPEG_QUALITY).ok()
}

/// The answer to a picture request ([`serve`], [`crate::Console::picture`]): what an HTTP
/// response carries, for any front end to wrap (the desktop app's `pa:` scheme, `phoneagent
/// web`'s routes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PictureResponse {
    /// 200, or 404 for anything not found or not a picture path.
    pub status: u16,
    /// `image/jpeg`, the stored screenshot's MIME type, or `text/plain` with a 404.
    pub content_type: String,
    /// `Cache-Control`: `no-store` for the mirror's frame, immutable for content-addressed
    /// screenshots.
    pub cache_control: &'static str,
    /// The body.
    pub bytes: Vec<u8>,
}

/// `%XX` escapes of `s` decoded (a serial in a picture path: `127.0.0.1%3A5555`); a malformed
/// escape is kept as it is.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Answer a picture request (issue #14: pictures are URLs, not base64 in events):
/// `/mirror/<seq>` → the newest mirror JPEG of the selected phone (`mirror(None)`),
/// `/mirror/<serial>/<seq>` → phone `serial`'s (`mirror(Some(serial))`, several phones mirror
/// at once); `/shot/<sha256>` → a stored screenshot as
/// `store_shot` finds it (original bytes and MIME, the "full frame on demand");
/// `/thumb/<sha256>` and `/view/<sha256>` → the same as a JPEG of [`THUMB_LONG_SIDE`] /
/// [`VIEW_LONG_SIDE`] px, cached in `thumbs`. Anything else is 404. Decoding can take tens of
/// ms: call it off a UI thread (a blocking thread).
pub fn serve(
    path: &str,
    mirror: &dyn Fn(Option<&str>) -> Option<Arc<MirrorSlot>>,
    thumbs: &ThumbCache,
    store_shot: impl Fn(&str) -> Option<(String, Vec<u8>)>,
) -> PictureResponse {
    // convertFileSrc percent-encodes the path's slashes.
    let path = path.trim_start_matches('/').replace("%2F", "/");
    let is_hash = |h: &str| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit());
    let (kind, rest) = path.split_once('/').unwrap_or((path.as_str(), ""));
    let found = match kind {
        "mirror" => {
            // `mirror/<seq>`: the selected phone's; `mirror/<serial>/<seq>`: that phone's.
            let serial = rest.rsplit_once('/').map(|(s, _)| percent_decode(s));
            mirror(serial.as_deref())
                .and_then(|slot| slot.newest())
                .map(|(_, b)| ("image/jpeg".to_string(), b.as_ref().clone()))
        }
        "shot" if is_hash(rest) => store_shot(rest),
        "thumb" | "view" if is_hash(rest) => {
            let side = if kind == "thumb" {
                THUMB_LONG_SIDE
            } else {
                VIEW_LONG_SIDE
            };
            thumbs
                .get_or(rest, side, || downscaled(&store_shot(rest)?.1, side))
                .map(|b| ("image/jpeg".to_string(), b.as_ref().clone()))
        }
        _ => None,
    };
    let cache_control = if kind == "mirror" {
        "no-store"
    } else {
        "max-age=31536000, immutable"
    };
    match found {
        Some((content_type, bytes)) => PictureResponse {
            status: 200,
            content_type,
            cache_control,
            bytes,
        },
        None => PictureResponse {
            status: 404,
            content_type: "text/plain".into(),
            cache_control,
            bytes: b"not found".to_vec(),
        },
    }
}

impl crate::Console {
    /// Start mirroring the selected phone (SPEC U1): live video from its screen stream when
    /// one runs, else polled screenshots; messages go to `send` until it fails or the mirror is
    /// stopped / restarted (see [`crate::mirror::run_mirror`]).
    pub async fn start_mirror<F>(&self, send: F) -> AppResult<()>
    where
        F: Fn(MirrorMessage) -> bool + Send + Sync + 'static,
    {
        self.start_mirror_of(None, send).await
    }

    /// Start mirroring phone `serial` (`None`: the selected phone), replacing that phone's
    /// mirror if one is going; other phones' mirrors go on (one mirror per phone, issue #13).
    /// Its frames are served at `mirror/<serial>/<seq>` (and at `mirror/<seq>` while it is the
    /// selected phone).
    ///
    /// # Errors
    /// `no_device`; errors opening the phone.
    pub async fn start_mirror_of<F>(&self, serial: Option<&str>, send: F) -> AppResult<()>
    where
        F: Fn(MirrorMessage) -> bool + Send + Sync + 'static,
    {
        let sel = self.phone(serial)?;
        let dev = self.open_device(&sel).await?;
        let cancel = CancellationToken::new();
        let slot = Arc::new(MirrorSlot::default());
        let old = lock(&self.mirrors).insert(
            sel.serial.clone(),
            crate::console::PhoneMirror {
                cancel: cancel.clone(),
                slot: slot.clone(),
            },
        );
        if let Some(old) = old {
            old.cancel.cancel();
        }
        tokio::spawn(crate::mirror::run_mirror(dev, slot, send, cancel));
        Ok(())
    }

    /// The newest-frame slot of phone `serial`'s mirror (`None`: the selected phone's, else
    /// the only mirror going), for the `pa:` URI scheme.
    pub fn mirror_slot(&self, serial: Option<&str>) -> Option<Arc<MirrorSlot>> {
        let mirrors = lock(&self.mirrors);
        match serial.filter(|s| !s.is_empty()) {
            Some(s) => mirrors.get(s).map(|m| m.slot.clone()),
            None => {
                let selected = lock(&self.selected).clone().map(|s| s.serial);
                selected
                    .and_then(|s| mirrors.get(&s))
                    .or_else(|| {
                        (mirrors.len() == 1)
                            .then(|| mirrors.values().next())
                            .flatten()
                    })
                    .map(|m| m.slot.clone())
            }
        }
    }

    /// Downscaled stored screenshots (for the `pa:` URI scheme).
    pub fn thumb_cache(&self) -> &ThumbCache {
        &self.thumbs
    }

    /// Answer a picture path (`mirror/<seq>`, `mirror/<serial>/<seq>`, `thumb/<sha256>`,
    /// `view/<sha256>`, `shot/<sha256>`; a leading `/` and `%2F` for `/` are accepted), see
    /// [`crate::mirror::serve`]. Decodes and scales stored screenshots: call it on a blocking
    /// thread.
    pub fn picture(&self, path: &str) -> PictureResponse {
        crate::mirror::serve(
            path,
            &|serial| self.mirror_slot(serial),
            &self.thumbs,
            |h| self.screenshot_bytes(h),
        )
    }

    /// Stop every mirror.
    pub fn stop_mirror(&self) {
        let all: Vec<_> = lock(&self.mirrors).drain().collect();
        for (_, m) in all {
            m.cancel.cancel();
        }
    }

    /// Stop phone `serial`'s mirror (`None` or empty: every mirror).
    pub fn stop_mirror_of(&self, serial: Option<&str>) {
        match serial.filter(|s| !s.is_empty()) {
            None => self.stop_mirror(),
            Some(s) => {
                if let Some(m) = lock(&self.mirrors).remove(s) {
                    m.cancel.cancel();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_answers_mirror_and_stored_shots_and_refuses_the_rest() {
        let slot = Arc::new(MirrorSlot::default());
        let other = Arc::new(MirrorSlot::default());
        other.put(7, vec![0xff, 0xd8, 7]);
        let thumbs = ThumbCache::default();
        type Store<'a> = &'a dyn Fn(&str) -> Option<(String, Vec<u8>)>;
        let serve = |p: &str, slot: &Arc<MirrorSlot>, f: Store<'_>| {
            let mirror = |serial: Option<&str>| match serial {
                None => Some(slot.clone()),
                Some("127.0.0.1:5555") => Some(other.clone()),
                Some(_) => None,
            };
            super::serve(p, &mirror, &thumbs, f)
        };
        assert_eq!(serve("/mirror/1", &slot, &|_| None).status, 404);
        slot.put(3, vec![0xff, 0xd8, 1]);
        let r = serve("/mirror%2F2", &slot, &|_| None);
        assert_eq!(r.status, 200);
        assert_eq!(r.bytes, vec![0xff, 0xd8, 1]);
        assert_eq!(r.content_type, "image/jpeg");
        let hash = "a".repeat(64);
        let r = serve(&format!("/shot/{hash}"), &slot, &|h| {
            (h == hash).then(|| ("image/png".into(), vec![9]))
        });
        assert_eq!((r.status, r.bytes.clone()), (200, vec![9]));
        // Not a hash: never reaches the store.
        let r = serve("/shot/../../etc/passwd", &slot, &|_| {
            panic!("asked the store")
        });
        assert_eq!(r.status, 404);
        assert_eq!(serve("/other", &slot, &|_| None).status, 404);
        // Another phone's mirror by its serial (escaped or not); an unknown phone has none.
        for p in ["/mirror/127.0.0.1:5555/7", "mirror%2F127.0.0.1%3A5555%2F7"] {
            let r = serve(p, &slot, &|_| None);
            assert_eq!((r.status, r.bytes), (200, vec![0xff, 0xd8, 7]), "{p}");
        }
        assert_eq!(
            serve("/mirror/emulator-5554/7", &slot, &|_| None).status,
            404
        );
        slot.clear();
        assert_eq!(serve("/mirror/3", &slot, &|_| None).status, 404);
        // A stored 1080×2400 PNG served as a small JPEG thumbnail and a 960 px view.
        let png = frame::encode_png(&image::RgbaImage::from_pixel(
            1080,
            2400,
            image::Rgba([9, 99, 200, 255]),
        ))
        .unwrap();
        let store = |h: &str| (h == hash).then(|| ("image/png".to_string(), png.clone()));
        for (kind, side) in [("thumb", THUMB_LONG_SIDE), ("view", VIEW_LONG_SIDE)] {
            let r = serve(&format!("/{kind}/{hash}"), &slot, &store);
            assert_eq!(r.status, 200, "{kind}");
            assert_eq!(r.content_type, "image/jpeg");
            let img = image::load_from_memory(r.bytes.as_slice()).unwrap();
            assert_eq!(img.height(), side, "{kind}");
        }
        // Cached: the second answer does not ask the store again.
        let r = serve(&format!("/thumb/{hash}"), &slot, &|_| panic!("not cached"));
        assert_eq!(r.status, 200);
    }
}
