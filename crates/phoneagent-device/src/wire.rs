//! The adb smart-socket wire format (host side), apart from any connection logic.
//!
//! A request is `hex4(len) + payload`; the server answers `OKAY` or `FAIL` + `hex4(len)` +
//! message. Some host services then send a `hex4`-prefixed payload; transport services stream.
//! After a `shell,v2` service the stream is made of shell-protocol packets:
//! `id: u8, len: u32 LE, data` with ids 0 stdin, 1 stdout, 2 stderr, 3 exit, 4 close-stdin,
//! 5 window-size.

use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest request the 4-hex-digit length prefix can carry.
pub(crate) const MAX_REQUEST_LEN: usize = 0xffff;

/// Reply status of a smart-socket request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    /// `OKAY`.
    Okay,
    /// `FAIL` with the server's message.
    Fail(String),
}

/// Encode a request as `hex4(len) + payload`.
pub(crate) fn encode_request(req: &str) -> io::Result<Vec<u8>> {
    if req.len() > MAX_REQUEST_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "adb request of {} bytes is longer than the protocol's {MAX_REQUEST_LEN}",
                req.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(req.len() + 4);
    out.extend_from_slice(format!("{:04x}", req.len()).as_bytes());
    out.extend_from_slice(req.as_bytes());
    Ok(out)
}

/// Send one request.
pub(crate) async fn send_request<S: AsyncWrite + Unpin>(s: &mut S, req: &str) -> io::Result<()> {
    let buf = encode_request(req)?;
    s.write_all(&buf).await?;
    s.flush().await
}

/// Parse a 4-hex-digit length.
pub(crate) fn parse_hex4(b: &[u8; 4]) -> io::Result<usize> {
    let s = std::str::from_utf8(b).map_err(|_| bad_data(format!("bad length prefix {b:?}")))?;
    usize::from_str_radix(s, 16).map_err(|_| bad_data(format!("bad length prefix {s:?}")))
}

/// Read a `hex4`-prefixed payload.
pub(crate) async fn read_hex4_payload<S: AsyncRead + Unpin>(s: &mut S) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await?;
    let n = parse_hex4(&len)?;
    let mut buf = vec![0u8; n];
    s.read_exact(&mut buf).await?;
    Ok(buf)
}

/// Read `OKAY` / `FAIL`+message.
pub(crate) async fn read_status<S: AsyncRead + Unpin>(s: &mut S) -> io::Result<Status> {
    let mut st = [0u8; 4];
    s.read_exact(&mut st).await?;
    match &st {
        b"OKAY" => Ok(Status::Okay),
        b"FAIL" => {
            let msg = read_hex4_payload(s).await?;
            Ok(Status::Fail(String::from_utf8_lossy(&msg).into_owned()))
        }
        other => Err(bad_data(format!(
            "expected OKAY or FAIL from the adb server, got {:?}",
            String::from_utf8_lossy(other)
        ))),
    }
}

pub(crate) fn bad_data(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Output of a shell command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellOutput {
    /// Bytes written to stdout (shell v1: stdout and stderr interleaved).
    pub stdout: Vec<u8>,
    /// Bytes written to stderr (always empty with shell v1).
    pub stderr: Vec<u8>,
    /// Exit status; `None` with shell v1, which does not report it.
    pub exit_code: Option<u8>,
}

impl ShellOutput {
    /// stdout as (lossy) UTF-8.
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// stderr as (lossy) UTF-8.
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// stdout and stderr together, for error messages and pattern checks.
    pub fn combined(&self) -> String {
        let mut s = self.stdout_str();
        let e = self.stderr_str();
        if !e.is_empty() {
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&e);
        }
        s
    }

    /// True when the command is known to have failed (non-zero exit under shell v2).
    pub fn failed(&self) -> bool {
        matches!(self.exit_code, Some(c) if c != 0)
    }
}

/// Shell-protocol packet ids.
pub(crate) const ID_STDOUT: u8 = 1;
pub(crate) const ID_STDERR: u8 = 2;
pub(crate) const ID_EXIT: u8 = 3;

/// Read shell-v2 packets until the exit packet. A stream that ends before the exit packet is an
/// `UnexpectedEof` error: the device (or the server) went away mid-command.
pub(crate) async fn read_shell_v2<S: AsyncRead + Unpin>(s: &mut S) -> io::Result<ShellOutput> {
    let mut out = ShellOutput::default();
    loop {
        let mut hdr = [0u8; 5];
        if let Err(e) = s.read_exact(&mut hdr).await {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the shell stream closed before the command's exit status arrived",
                ));
            }
            return Err(e);
        }
        let id = hdr[0];
        let len = u32::from_le_bytes([hdr[1], hdr[2], hdr[3], hdr[4]]) as usize;
        if len > 64 * 1024 * 1024 {
            return Err(bad_data(format!(
                "shell packet of {len} bytes is implausible"
            )));
        }
        let mut data = vec![0u8; len];
        s.read_exact(&mut data).await?;
        match id {
            ID_STDOUT => out.stdout.extend_from_slice(&data),
            ID_STDERR => out.stderr.extend_from_slice(&data),
            ID_EXIT => {
                out.exit_code = Some(data.first().copied().unwrap_or(0));
                return Ok(out);
            }
            // stdin echo / close-stdin / window-size are not sent by the device; ignore them.
            _ => {}
        }
    }
}

/// Encode one shell-protocol packet (tests).
#[cfg(test)]
pub(crate) fn encode_shell_packet(id: u8, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(5 + data.len());
    v.push(id);
    v.extend_from_slice(&(data.len() as u32).to_le_bytes());
    v.extend_from_slice(data);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_encoding() {
        assert_eq!(encode_request("host:version").unwrap(), b"000chost:version");
        assert!(encode_request(&"x".repeat(70_000)).is_err());
    }

    #[tokio::test]
    async fn status_okay_and_fail() {
        let mut r: &[u8] = b"OKAY";
        assert_eq!(read_status(&mut r).await.unwrap(), Status::Okay);
        let mut r: &[u8] = b"FAIL0016device 'abc' not found";
        assert_eq!(
            read_status(&mut r).await.unwrap(),
            Status::Fail("device 'abc' not found".into())
        );
        let mut r: &[u8] = b"WHAT";
        assert!(read_status(&mut r).await.is_err());
        let mut r: &[u8] = b"OK";
        assert_eq!(
            read_status(&mut r).await.unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }

    #[tokio::test]
    async fn hex4_payload() {
        let mut r: &[u8] = b"00040029";
        assert_eq!(read_hex4_payload(&mut r).await.unwrap(), b"0029");
        let mut r: &[u8] = b"zz010029";
        assert!(read_hex4_payload(&mut r).await.is_err());
    }

    #[tokio::test]
    async fn shell_v2_packets() {
        let mut buf = Vec::new();
        buf.extend(encode_shell_packet(ID_STDOUT, b"hello "));
        buf.extend(encode_shell_packet(ID_STDERR, b"oops\n"));
        buf.extend(encode_shell_packet(ID_STDOUT, b"world"));
        buf.extend(encode_shell_packet(ID_EXIT, &[1]));
        buf.extend(encode_shell_packet(ID_STDOUT, b"ignored after exit"));
        let mut r: &[u8] = &buf;
        let out = read_shell_v2(&mut r).await.unwrap();
        assert_eq!(out.stdout, b"hello world");
        assert_eq!(out.stderr, b"oops\n");
        assert_eq!(out.exit_code, Some(1));
        assert!(out.failed());
        assert_eq!(out.combined(), "hello world\noops\n");
    }

    #[tokio::test]
    async fn shell_v2_truncated_is_eof() {
        let mut buf = encode_shell_packet(ID_STDOUT, b"partial");
        buf.extend_from_slice(&[ID_STDOUT, 10, 0]);
        let mut r: &[u8] = &buf;
        let e = read_shell_v2(&mut r).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        let mut r: &[u8] = &encode_shell_packet(ID_STDOUT, b"no exit")[..];
        assert_eq!(
            read_shell_v2(&mut r).await.unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }
}
