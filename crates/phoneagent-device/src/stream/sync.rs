//! The host side of adb's `sync:` service (SPEC D8): `STAT` and `SEND` to push
//! `scrcpy-server` to the phone, as `adb push` does.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::Result;
use crate::server::AdbServer;
use crate::types::DeviceError;

const DATA_MAX: usize = 64 * 1024;

fn req(id: &[u8; 4], arg: &[u8]) -> Vec<u8> {
    let mut v = id.to_vec();
    v.extend_from_slice(&(arg.len() as u32).to_le_bytes());
    v.extend_from_slice(arg);
    v
}

/// `STAT path` → `(mode, size)`; mode 0 when it does not exist.
///
/// # Errors
/// Server refusals and I/O errors.
pub(crate) async fn stat(server: &AdbServer, serial: &str, path: &str) -> Result<(u32, u32)> {
    let mut s = server.open(serial, "sync:").await?;
    s.write_all(&req(b"STAT", path.as_bytes())).await?;
    let mut r = [0u8; 16];
    s.read_exact(&mut r).await?;
    if &r[..4] != b"STAT" {
        return Err(DeviceError::Protocol(format!(
            "sync STAT answered {:?}",
            String::from_utf8_lossy(&r[..4])
        )));
    }
    let mode = u32::from_le_bytes([r[4], r[5], r[6], r[7]]);
    let size = u32::from_le_bytes([r[8], r[9], r[10], r[11]]);
    let _ = s.write_all(&req(b"QUIT", b"")).await;
    Ok((mode, size))
}

/// Push `data` to `path` (mode 0644) unless a file of the same size is already there.
///
/// # Errors
/// The phone's `FAIL` message as [`DeviceError::CommandFailed`]; I/O errors.
pub(crate) async fn push_if_changed(
    server: &AdbServer,
    serial: &str,
    path: &str,
    data: &[u8],
) -> Result<bool> {
    let (mode, size) = stat(server, serial, path).await?;
    if mode & 0o170_000 == 0o100_000 && size as usize == data.len() {
        return Ok(false);
    }
    let mut s = server.open(serial, "sync:").await?;
    let mut buf = req(b"SEND", format!("{path},420").as_bytes());
    for chunk in data.chunks(DATA_MAX) {
        buf.extend(req(b"DATA", chunk));
    }
    let mtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(0);
    buf.extend_from_slice(b"DONE");
    buf.extend_from_slice(&mtime.to_le_bytes());
    s.write_all(&buf).await?;
    let mut r = [0u8; 8];
    s.read_exact(&mut r).await?;
    match &r[..4] {
        b"OKAY" => {
            let _ = s.write_all(&req(b"QUIT", b"")).await;
            Ok(true)
        }
        b"FAIL" => {
            let n = u32::from_le_bytes([r[4], r[5], r[6], r[7]]) as usize;
            let mut m = vec![0u8; n.min(4096)];
            s.read_exact(&mut m).await?;
            Err(DeviceError::CommandFailed {
                command: format!("adb push {path}"),
                detail: String::from_utf8_lossy(&m).into_owned(),
            })
        }
        other => Err(DeviceError::Protocol(format!(
            "sync SEND answered {:?}",
            String::from_utf8_lossy(other)
        ))),
    }
}
