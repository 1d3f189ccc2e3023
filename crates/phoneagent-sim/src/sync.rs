//! The `sync:` service (SPEC V7): adb's file transfer protocol over one stream, as stock
//! `adb push` / `adb pull` / `adb ls` speak it against the phone's in-memory file system.
//!
//! Every request is `id (4 ASCII bytes) + u32 LE length + payload`:
//! * `STAT path` → `STAT mode size mtime` (all zero when the path does not exist);
//! * `LIST dir` → `DENT mode size mtime namelen name`… then `DONE` + 16 zero bytes;
//! * `SEND path,mode` then `DATA len bytes`… `DONE mtime` → `OKAY 0` or `FAIL len msg`;
//! * `RECV path` → `DATA len bytes`… `DONE 0`, or `FAIL len msg`;
//! * `QUIT` ends the service.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::devfs::{MODE_DIR, Stat};
use crate::server::Slot;

/// Largest `DATA` chunk (adb's `SYNC_DATA_MAX`).
const DATA_MAX: usize = 64 * 1024;
/// Largest path a request may carry (adb's limit is 1024).
const PATH_MAX: usize = 1024;
/// Largest file we accept on the phone (the in-memory file system is small).
const FILE_MAX: usize = 256 * 1024 * 1024;

async fn read_header<S: AsyncRead + Unpin>(s: &mut S) -> io::Result<Option<([u8; 4], u32)>> {
    let mut h = [0u8; 8];
    match s.read_exact(&mut h).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let id = [h[0], h[1], h[2], h[3]];
    Ok(Some((id, u32::from_le_bytes([h[4], h[5], h[6], h[7]]))))
}

fn msg(id: &[u8; 4], vals: &[u32]) -> Vec<u8> {
    let mut v = id.to_vec();
    for x in vals {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v
}

async fn fail<S: AsyncWrite + Unpin>(s: &mut S, text: &str) -> io::Result<()> {
    let mut v = msg(b"FAIL", &[text.len() as u32]);
    v.extend_from_slice(text.as_bytes());
    s.write_all(&v).await?;
    s.flush().await
}

fn bad(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// Serve `sync:` on `s` until `QUIT` or the client closes.
pub(crate) async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    slot: &Slot,
) -> io::Result<()> {
    loop {
        let Some((id, len)) = read_header(s).await? else {
            return Ok(());
        };
        if &id == b"QUIT" {
            return Ok(());
        }
        let len = len as usize;
        if len > PATH_MAX {
            fail(s, &format!("path too long: {len} bytes")).await?;
            return Ok(());
        }
        let mut path = vec![0u8; len];
        s.read_exact(&mut path).await?;
        let path = String::from_utf8_lossy(&path).into_owned();
        tracing::debug!(id = %String::from_utf8_lossy(&id), %path, "sync request");
        // SPEC V6: one round trip per request (the bytes are charged where they move).
        let timing = slot.timing();
        if !timing.is_instant() {
            tokio::time::sleep(timing.sync_request(0)).await;
        }
        match &id {
            b"STAT" => {
                let st = slot.lock().dev.stat(&path);
                let v = match st {
                    Stat::Missing => msg(b"STAT", &[0, 0, 0]),
                    Stat::File { mode, size, mtime } => msg(b"STAT", &[mode, size, mtime]),
                    Stat::Dir { mtime } => msg(b"STAT", &[MODE_DIR, 4096, mtime]),
                };
                s.write_all(&v).await?;
            }
            b"LIST" => {
                let entries = slot.lock().dev.list(&path);
                let mut v = Vec::new();
                for (name, st) in entries {
                    let (mode, size, mtime) = match st {
                        Stat::File { mode, size, mtime } => (mode, size, mtime),
                        Stat::Dir { mtime } => (MODE_DIR, 4096, mtime),
                        Stat::Missing => continue,
                    };
                    v.extend(msg(b"DENT", &[mode, size, mtime, name.len() as u32]));
                    v.extend_from_slice(name.as_bytes());
                }
                v.extend(msg(b"DONE", &[0, 0, 0, 0]));
                s.write_all(&v).await?;
            }
            b"SEND" => {
                let (target, mode) = match path.rsplit_once(',') {
                    Some((p, m)) => (p.to_owned(), m.parse::<u32>().unwrap_or(0o644)),
                    None => (path.clone(), 0o644),
                };
                let mut data = Vec::new();
                let mtime = loop {
                    let Some((cid, n)) = read_header(s).await? else {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "sync: the client closed in the middle of SEND",
                        ));
                    };
                    match &cid {
                        b"DATA" => {
                            let n = n as usize;
                            if n > DATA_MAX || data.len() + n > FILE_MAX {
                                fail(s, &format!("DATA chunk of {n} bytes is too large")).await?;
                                return Ok(());
                            }
                            let start = data.len();
                            data.resize(start + n, 0);
                            s.read_exact(&mut data[start..]).await?;
                        }
                        b"DONE" => break n,
                        other => {
                            return Err(bad(format!(
                                "sync: expected DATA or DONE in SEND, got {:?}",
                                String::from_utf8_lossy(other)
                            )));
                        }
                    }
                };
                if !timing.is_instant() {
                    tokio::time::sleep(timing.transfer(data.len())).await;
                }
                let r = slot.lock().dev.write(&target, data, mode, mtime);
                match r {
                    Ok(()) => s.write_all(&msg(b"OKAY", &[0])).await?,
                    Err(e) => fail(s, &format!("couldn't create file: {e}")).await?,
                }
            }
            b"RECV" => {
                let r = slot.lock().dev.read(&path);
                match r {
                    Ok(data) => {
                        if !timing.is_instant() {
                            tokio::time::sleep(timing.transfer(data.len())).await;
                        }
                        for chunk in data.chunks(DATA_MAX) {
                            s.write_all(&msg(b"DATA", &[chunk.len() as u32])).await?;
                            s.write_all(chunk).await?;
                        }
                        s.write_all(&msg(b"DONE", &[0])).await?;
                    }
                    Err(e) => fail(s, &e).await?,
                }
            }
            other => {
                fail(
                    s,
                    &format!(
                        "unknown sync request {:?} (the virtual phone speaks STAT, LIST, SEND, RECV, QUIT)",
                        String::from_utf8_lossy(other)
                    ),
                )
                .await?;
                return Ok(());
            }
        }
        s.flush().await?;
    }
}
