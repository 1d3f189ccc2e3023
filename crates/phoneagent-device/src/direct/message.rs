//! The device-side ADB message format ("adbd protocol"), the same over USB bulk endpoints and
//! TCP (`adb connect HOST:5555`): a 24-byte little-endian header
//! `command, arg0, arg1, data_length, data_check, magic` (magic = `command ^ 0xffff_ffff`,
//! data_check = byte sum of the payload) followed by `data_length` payload bytes.

use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// `CNXN`: connect, `arg0` = version, `arg1` = max payload, payload = banner.
pub(crate) const A_CNXN: u32 = 0x4e58_4e43;
/// `AUTH`: `arg0` = [`AUTH_TOKEN`] / [`AUTH_SIGNATURE`] / [`AUTH_RSAPUBLICKEY`].
pub(crate) const A_AUTH: u32 = 0x4854_5541;
/// `OPEN`: `arg0` = local id, payload = service name (NUL-terminated).
pub(crate) const A_OPEN: u32 = 0x4e45_504f;
/// `OKAY`: stream ready / write acknowledged, `arg0` = sender's id, `arg1` = receiver's id.
pub(crate) const A_OKAY: u32 = 0x5941_4b4f;
/// `CLSE`: stream closed.
pub(crate) const A_CLSE: u32 = 0x4553_4c43;
/// `WRTE`: stream data.
pub(crate) const A_WRTE: u32 = 0x4554_5257;
/// `STLS`: the device wants TLS (Android 11+ wireless debugging).
pub(crate) const A_STLS: u32 = 0x534c_5453;

/// AUTH subtypes.
pub(crate) const AUTH_TOKEN: u32 = 1;
pub(crate) const AUTH_SIGNATURE: u32 = 2;
pub(crate) const AUTH_RSAPUBLICKEY: u32 = 3;

/// Protocol version we announce (0x01000001: the receiver may skip checksums; we still send
/// them, so old devices that check them accept our messages).
pub(crate) const A_VERSION: u32 = 0x0100_0001;
/// Largest payload we accept (adb's MAX_PAYLOAD, 1 MiB); the device may announce less.
pub(crate) const MAX_PAYLOAD: u32 = 1024 * 1024;

/// One ADB message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Message {
    pub command: u32,
    pub arg0: u32,
    pub arg1: u32,
    pub data: Vec<u8>,
}

/// Byte sum of the payload (adb's `calculate_apacket_checksum`).
pub(crate) fn checksum(data: &[u8]) -> u32 {
    data.iter().fold(0u32, |a, b| a.wrapping_add(u32::from(*b)))
}

/// Four-letter name of a command, for errors and logs.
pub(crate) fn command_name(c: u32) -> String {
    let b = c.to_le_bytes();
    if b.iter().all(u8::is_ascii_uppercase) {
        String::from_utf8_lossy(&b).into_owned()
    } else {
        format!("0x{c:08x}")
    }
}

impl Message {
    /// A message with a payload.
    pub(crate) fn new(command: u32, arg0: u32, arg1: u32, data: impl Into<Vec<u8>>) -> Self {
        Self {
            command,
            arg0,
            arg1,
            data: data.into(),
        }
    }

    /// The 24-byte header.
    pub(crate) fn header(&self) -> [u8; 24] {
        let mut h = [0u8; 24];
        let len = self.data.len() as u32;
        for (i, v) in [
            self.command,
            self.arg0,
            self.arg1,
            len,
            checksum(&self.data),
            self.command ^ 0xffff_ffff,
        ]
        .into_iter()
        .enumerate()
        {
            h[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        h
    }

    /// Parse a header: `(command, arg0, arg1, data_length, data_check)`.
    ///
    /// # Errors
    /// `InvalidData` when the magic does not match the command or the length exceeds `max`.
    pub(crate) fn parse_header(h: &[u8; 24], max: u32) -> io::Result<(u32, u32, u32, u32, u32)> {
        let w = |i: usize| u32::from_le_bytes([h[i * 4], h[i * 4 + 1], h[i * 4 + 2], h[i * 4 + 3]]);
        let (command, arg0, arg1, len, check, magic) = (w(0), w(1), w(2), w(3), w(4), w(5));
        if magic != command ^ 0xffff_ffff {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "bad ADB message header (command {}, magic 0x{magic:08x})",
                    command_name(command)
                ),
            ));
        }
        if len > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "ADB message {} carries {len} bytes, more than the agreed maximum {max}",
                    command_name(command)
                ),
            ));
        }
        Ok((command, arg0, arg1, len, check))
    }

    /// Check a received payload against the header's checksum. A zero checksum is accepted
    /// (protocol version 0x01000001 and later no longer fill it in).
    pub(crate) fn verify(&self, check: u32) -> io::Result<()> {
        if check != 0 && check != checksum(&self.data) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "ADB message {} failed its checksum (got 0x{:08x}, header says 0x{check:08x})",
                    command_name(self.command),
                    checksum(&self.data)
                ),
            ));
        }
        Ok(())
    }
}

/// Read one message from a byte stream (TCP; USB bulk-in reads look the same).
///
/// # Errors
/// `UnexpectedEof` when the stream ends (the device went away), `InvalidData` for a corrupt
/// message.
pub(crate) async fn read_message<S: AsyncRead + Unpin>(s: &mut S, max: u32) -> io::Result<Message> {
    let mut h = [0u8; 24];
    s.read_exact(&mut h).await?;
    let (command, arg0, arg1, len, check) = Message::parse_header(&h, max)?;
    let mut data = vec![0u8; len as usize];
    s.read_exact(&mut data).await?;
    let m = Message {
        command,
        arg0,
        arg1,
        data,
    };
    m.verify(check)?;
    Ok(m)
}

/// Write one message (header and payload in one write on TCP).
///
/// # Errors
/// I/O errors.
pub(crate) async fn write_message<S: AsyncWrite + Unpin>(s: &mut S, m: &Message) -> io::Result<()> {
    let mut buf = Vec::with_capacity(24 + m.data.len());
    buf.extend_from_slice(&m.header());
    buf.extend_from_slice(&m.data);
    s.write_all(&buf).await?;
    s.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn round_trip_and_checks() {
        let m = Message::new(A_OPEN, 7, 0, b"shell,v2,raw:echo hi\0".to_vec());
        let mut buf = Vec::new();
        write_message(&mut buf, &m).await.unwrap();
        assert_eq!(&buf[0..4], b"OPEN");
        assert_eq!(buf.len(), 24 + m.data.len());
        let mut r: &[u8] = &buf;
        assert_eq!(read_message(&mut r, MAX_PAYLOAD).await.unwrap(), m);

        // Corrupt payload: the checksum catches it.
        let mut bad = buf.clone();
        bad[30] ^= 0x01;
        let mut r: &[u8] = &bad;
        let e = read_message(&mut r, MAX_PAYLOAD).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("checksum"), "{e}");

        // Zero checksum (version 0x01000001 peers) is accepted.
        let mut zero = buf.clone();
        zero[16..20].copy_from_slice(&[0, 0, 0, 0]);
        let mut r: &[u8] = &zero;
        assert_eq!(read_message(&mut r, MAX_PAYLOAD).await.unwrap(), m);

        // Bad magic.
        let mut bad = buf.clone();
        bad[20] ^= 0xff;
        let mut r: &[u8] = &bad;
        assert!(read_message(&mut r, MAX_PAYLOAD).await.is_err());

        // Over the agreed maximum.
        let mut r: &[u8] = &buf;
        assert!(read_message(&mut r, 4).await.is_err());

        // Truncated: EOF.
        let mut r: &[u8] = &buf[..30];
        assert_eq!(
            read_message(&mut r, MAX_PAYLOAD).await.unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }

    #[test]
    fn names() {
        for (c, n) in [
            (A_CNXN, "CNXN"),
            (A_AUTH, "AUTH"),
            (A_OPEN, "OPEN"),
            (A_OKAY, "OKAY"),
            (A_CLSE, "CLSE"),
            (A_WRTE, "WRTE"),
            (A_STLS, "STLS"),
        ] {
            assert_eq!(command_name(c), n);
        }
        assert_eq!(checksum(&[1, 2, 255]), 258);
    }
}
