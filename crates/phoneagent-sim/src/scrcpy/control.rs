//! scrcpy's control socket on the virtual phone (SPEC V7): messages are a type byte then
//! big-endian fields, as scrcpy's `ControlMessageReader` reads them. They act on the phone
//! exactly as `input` and ADB Keyboard do, so ground truth records them the same way:
//!
//! | type | message | effect |
//! |---|---|---|
//! | 0 | inject keycode: action u8, keycode u32, repeat u32, meta u32 | key on `UP` |
//! | 1 | inject text: len u32 + UTF-8 | ASCII typed (like `input text`) |
//! | 2 | inject touch: action u8, pointer u64, x i32, y i32, w u16, h u16, pressure u16, action button u32, buttons u32 | `DOWN`…`UP` becomes a tap, long press or swipe |
//! | 3 | inject scroll: position (12), h i16, v i16, buttons u32 | ignored |
//! | 4 | back or screen on: action u8 | BACK on `UP` |
//! | 8 | get clipboard: copy key u8 | device message `CLIPBOARD` |
//! | 9 | set clipboard: sequence u64, paste u8, len u32 + UTF-8 | clip set; `paste` types it into the focused field (any Unicode, no IME switch); `ACK_CLIPBOARD` when sequence ≠ 0 |
//! | 10 | set display power: u8 | ignored |
//! | 5–7, 11, 15, 17 | panels / rotate / keyboard settings / reset video | reset video forces a key frame |
//! | 12–14, 16 | UHID create/input/destroy, start app | read and ignored |
//!
//! A touch whose screen size is not the current frame size is ignored, as scrcpy's server
//! ignores events generated for another size (e.g. just after a rotation). An unknown type
//! ends the control session (scrcpy's `ControlProtocolException`).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::devfs::BoxConn;
use crate::server::Slot;

/// Android `MotionEvent` / `KeyEvent` actions.
const ACTION_DOWN: u8 = 0;
const ACTION_UP: u8 = 1;
const ACTION_MOVE: u8 = 2;
/// Device message types.
const DEVICE_MSG_CLIPBOARD: u8 = 0;
const DEVICE_MSG_ACK_CLIPBOARD: u8 = 1;
/// Longest text a message may carry (scrcpy limits clipboard text to 256 KiB).
const TEXT_MAX: usize = 1 << 18;

/// A gesture in progress.
struct Touch {
    x: i32,
    y: i32,
    at: Instant,
    last: (i32, i32),
}

async fn u8_<R: AsyncRead + Unpin>(r: &mut R) -> io::Result<u8> {
    r.read_u8().await
}

async fn string<R: AsyncRead + Unpin>(r: &mut R, len_bytes: usize) -> io::Result<String> {
    let mut n = 0usize;
    for _ in 0..len_bytes {
        n = (n << 8) | usize::from(r.read_u8().await?);
    }
    if n > TEXT_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("control message text of {n} bytes is too long"),
        ));
    }
    let mut b = vec![0u8; n];
    r.read_exact(&mut b).await?;
    Ok(String::from_utf8_lossy(&b).into_owned())
}

/// Apply a finished input to the phone through the same checks `input` makes (permission
/// fault, dropped-input fault), counting it as one received command.
fn deliver(slot: &Slot, f: impl FnOnce(&mut crate::phone::Phone, Instant)) {
    let now = Instant::now();
    let mut p = slot.lock();
    p.tick(now);
    p.commands_received += 1;
    if p.faults.inject_events_denied {
        p.rejected_inputs += 1;
        return;
    }
    if p.faults.drop_input {
        p.dropped_inputs += 1;
        return;
    }
    f(&mut p, now);
}

fn key(slot: &Slot, code: u32) {
    let Some((name, key, ch)) = crate::shell::keycode(&code.to_string()) else {
        return;
    };
    deliver(slot, |p, now| {
        if let Some(ch) = ch {
            p.type_text(&ch.to_string());
            p.keys.push(name);
        } else {
            p.key(&name, key, now);
        }
    });
}

/// Read control messages until the client closes, a bad message, or `session` ends.
pub(crate) async fn serve(
    slot: Arc<Slot>,
    conn: BoxConn,
    session: CancellationToken,
    want_key: Arc<AtomicBool>,
) -> io::Result<()> {
    let (mut r, mut w) = tokio::io::split(conn);
    let mut touch: Option<Touch> = None;
    loop {
        let ty = tokio::select! {
            t = r.read_u8() => match t {
                Ok(t) => t,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(e),
            },
            () = session.cancelled() => return Ok(()),
        };
        // SPEC V6: the message's cost on the phone (an event injected by a running process).
        let cost = slot.timing().control();
        if !cost.is_zero() {
            tokio::time::sleep(cost).await;
        }
        match ty {
            0 => {
                let action = u8_(&mut r).await?;
                let code = r.read_u32().await?;
                let _repeat = r.read_u32().await?;
                let _meta = r.read_u32().await?;
                if action == ACTION_UP {
                    key(&slot, code);
                }
            }
            1 => {
                let text = string(&mut r, 4).await?;
                // Like `input text`: only what the key character map can type.
                let ascii: String = text
                    .chars()
                    .filter(|c| c.is_ascii() && !c.is_ascii_control())
                    .collect();
                deliver(&slot, |p, _| p.type_text(&ascii));
            }
            2 => {
                let action = u8_(&mut r).await?;
                let pointer = r.read_u64().await?;
                let x = r.read_i32().await?;
                let y = r.read_i32().await?;
                let sw = u32::from(r.read_u16().await?);
                let sh = u32::from(r.read_u16().await?);
                let _pressure = r.read_u16().await?;
                let _action_button = r.read_u32().await?;
                let _buttons = r.read_u32().await?;
                let size = slot.lock().frame_size();
                if (sw, sh) != size {
                    tracing::info!(
                        "scrcpy: ignoring a touch made for {sw}x{sh} (the screen is {}x{})",
                        size.0,
                        size.1
                    );
                    touch = None;
                    continue;
                }
                // Only the first finger makes gestures; the mouse pointer ids are negative.
                if pointer > 0 && pointer < u64::MAX - 4 {
                    continue;
                }
                match action {
                    ACTION_DOWN => {
                        touch = Some(Touch {
                            x,
                            y,
                            at: Instant::now(),
                            last: (x, y),
                        });
                    }
                    ACTION_MOVE => {
                        if let Some(t) = touch.as_mut() {
                            t.last = (x, y);
                        }
                    }
                    ACTION_UP => {
                        if let Some(t) = touch.take() {
                            let ms = t.at.elapsed().as_millis() as u64;
                            let (x2, y2) = (x, y);
                            let _ = t.last;
                            deliver(&slot, |p, now| {
                                let dist = (x2 - t.x).abs().max((y2 - t.y).abs());
                                if dist < 16 && ms < 500 {
                                    p.tap(t.x, t.y, now);
                                } else {
                                    p.swipe(t.x, t.y, x2, y2, ms, now);
                                }
                            });
                        }
                    }
                    _ => {}
                }
            }
            3 => {
                let mut b = [0u8; 12 + 2 + 2 + 4];
                r.read_exact(&mut b).await?;
            }
            4 => {
                if u8_(&mut r).await? == ACTION_UP {
                    key(&slot, 4);
                }
            }
            8 => {
                let _copy_key = u8_(&mut r).await?;
                let text = slot.lock().dev.clipboard.clone();
                let mut m = vec![DEVICE_MSG_CLIPBOARD];
                m.extend_from_slice(&(text.len() as u32).to_be_bytes());
                m.extend_from_slice(text.as_bytes());
                w.write_all(&m).await?;
                w.flush().await?;
            }
            9 => {
                let seq = r.read_u64().await?;
                let paste = u8_(&mut r).await? != 0;
                let text = string(&mut r, 4).await?;
                slot.lock().dev.clipboard = text.clone();
                if paste {
                    deliver(&slot, |p, _| p.type_text(&text));
                }
                if seq != 0 {
                    let mut m = vec![DEVICE_MSG_ACK_CLIPBOARD];
                    m.extend_from_slice(&seq.to_be_bytes());
                    w.write_all(&m).await?;
                    w.flush().await?;
                }
            }
            10 => {
                let _on = u8_(&mut r).await?;
            }
            17 => want_key.store(true, Ordering::Relaxed),
            5..=7 | 11 | 15 => {}
            12 => {
                let mut b = [0u8; 6];
                r.read_exact(&mut b).await?;
                let _name = string(&mut r, 1).await?;
                let _data = string(&mut r, 2).await?;
            }
            13 => {
                let _id = r.read_u16().await?;
                let _data = string(&mut r, 2).await?;
            }
            14 => {
                let _id = r.read_u16().await?;
            }
            16 => {
                let _name = string(&mut r, 1).await?;
            }
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("Unknown event type: {other}"),
                ));
            }
        }
    }
}
