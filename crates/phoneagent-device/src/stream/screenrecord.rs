//! The stream without installing anything (SPEC D8): Android's own
//! `screenrecord --output-format=h264 --time-limit S -` on `exec:`, raw H.264 Annex B on
//! stdout, restarted as soon as it stops at its time limit (the decoder carries on; the new
//! recording starts with SPS/PPS and a key frame). NAL units are cut at start codes; the last
//! one is taken as complete once the stream pauses (screenrecord writes whole frames).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::decode::{FrameStore, spawn_decoder};
use super::{CapturePath, StreamError, StreamSession, mark_dead};
use crate::server::AdbServer;

/// A pause this long after data means the last NAL unit is complete.
const IDLE_FLUSH: Duration = Duration::from_millis(8);
/// Recordings that end this soon after starting, several times in a row, mean it is broken.
const QUICK_END: Duration = Duration::from_secs(1);

/// Offsets of Annex B start codes (`00 00 01`, the byte before counted for `00 00 00 01`).
fn start_codes(b: &[u8]) -> Vec<usize> {
    let mut v = Vec::new();
    let mut i = 0;
    while i + 3 <= b.len() {
        if b[i] == 0 && b[i + 1] == 0 && b[i + 2] == 1 {
            v.push(if i > 0 && b[i - 1] == 0 { i - 1 } else { i });
            i += 3;
        } else {
            i += 1;
        }
    }
    v
}

/// Start recording and wait for the first frame (within `timeout`).
pub(crate) async fn start(
    server: &AdbServer,
    serial: &str,
    time_limit: Duration,
    timeout: Duration,
) -> Result<StreamSession, StreamError> {
    let limit = time_limit.as_secs().clamp(1, 180);
    let cmd = format!("exec:screenrecord --output-format=h264 --time-limit {limit} -");
    // The first connection is made here, so a phone without screenrecord fails now.
    let first = server
        .open(serial, &cmd)
        .await
        .map_err(|e| StreamError::Failed(e.to_string()))?;
    let frames = FrameStore::new();
    let decoder = spawn_decoder(frames.clone()).map_err(StreamError::Failed)?;
    let dead = CancellationToken::new();
    let death = Arc::new(Mutex::new(None));
    let stop = CancellationToken::new();
    let restarts = Arc::new(std::sync::atomic::AtomicU64::new(0));
    {
        let (server, serial) = (server.clone(), serial.to_owned());
        let (dead, death, stop) = (dead.clone(), death.clone(), stop.clone());
        let restarts = restarts.clone();
        tokio::spawn(async move {
            let mut conn = Some(first);
            let mut quick = 0;
            let why = loop {
                let mut s = match conn.take() {
                    Some(s) => s,
                    None => match server.open(&serial, &cmd).await {
                        Ok(s) => {
                            restarts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            s
                        }
                        Err(e) => break format!("screenrecord could not restart: {e}"),
                    },
                };
                let t0 = Instant::now();
                let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
                let mut chunk = vec![0u8; 256 * 1024];
                let mut got_any = false;
                let ended = loop {
                    let read = tokio::select! {
                        r = s.read(&mut chunk) => Some(r),
                        () = tokio::time::sleep(IDLE_FLUSH), if !buf.is_empty() => None,
                        () = stop.cancelled() => return,
                    };
                    match read {
                        Some(Ok(0)) => break Ok(()),
                        Some(Ok(n)) => {
                            got_any = true;
                            buf.extend_from_slice(&chunk[..n]);
                            // Every NAL unit followed by another start code is complete.
                            let marks = start_codes(&buf);
                            if marks.len() >= 2 {
                                let cut = marks[marks.len() - 1];
                                let au: Vec<u8> = buf.drain(..cut).collect();
                                if send(&decoder, au).await.is_err() {
                                    return;
                                }
                            }
                        }
                        Some(Err(e)) => break Err(e),
                        None => {
                            // The phone paused: the tail is a whole NAL unit.
                            let au = std::mem::take(&mut buf);
                            if send(&decoder, au).await.is_err() {
                                return;
                            }
                        }
                    }
                };
                if !buf.is_empty() {
                    let _ = send(&decoder, std::mem::take(&mut buf)).await;
                }
                match ended {
                    Err(e) => break format!("the screenrecord stream broke: {e}"),
                    Ok(()) if t0.elapsed() < QUICK_END && !got_any => {
                        quick += 1;
                        if quick >= 3 {
                            break "screenrecord keeps ending without output".to_owned();
                        }
                    }
                    Ok(()) => quick = 0,
                }
                tracing::debug!("screenrecord reached its time limit; restarting");
            };
            mark_dead(&dead, &death, why);
        });
    }
    let session = StreamSession {
        path: CapturePath::Screenrecord,
        frames,
        dead,
        death,
        stop,
        control: None,
        started: Instant::now(),
    };
    session.first_frame(timeout).await?;
    Ok(session)
}

async fn send(tx: &std::sync::mpsc::SyncSender<Vec<u8>>, au: Vec<u8>) -> Result<(), ()> {
    let tx = tx.clone();
    match tokio::task::spawn_blocking(move || tx.send(au)).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_start_codes() {
        let b = [0, 0, 0, 1, 0x67, 9, 0, 0, 1, 0x68, 7, 0, 0, 0, 1, 0x65];
        assert_eq!(start_codes(&b), vec![0, 6, 11]);
        assert!(start_codes(&[1, 2, 3]).is_empty());
    }
}
