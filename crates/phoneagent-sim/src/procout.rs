//! Output of a long-running device command (SPEC V7): `screenrecord` and scrcpy's
//! `app_process` write stdout/stderr while they run, not once at the end. With the shell
//! protocol (`shell,v2`) they become stdout/stderr packets and an exit packet; on `exec:` and
//! `shell:` (v1) both go raw on the stream, as on a phone without a pty.

use std::io;

use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::adb::Mode;

/// Shell-protocol packet ids.
const ID_STDOUT: u8 = 1;
const ID_STDERR: u8 = 2;
const ID_EXIT: u8 = 3;
/// Largest shell-protocol payload in one packet.
const CHUNK: usize = 64 * 1024;

/// Where a running command writes.
pub(crate) struct ProcOut<W> {
    w: W,
    mode: Mode,
}

impl<W: AsyncWrite + Unpin> ProcOut<W> {
    pub(crate) fn new(w: W, mode: Mode) -> Self {
        Self { w, mode }
    }

    async fn packet(&mut self, id: u8, data: &[u8]) -> io::Result<()> {
        match self.mode {
            Mode::V2 => {
                for chunk in data.chunks(CHUNK) {
                    let mut head = [0u8; 5];
                    head[0] = id;
                    head[1..].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
                    self.w.write_all(&head).await?;
                    self.w.write_all(chunk).await?;
                }
            }
            Mode::V1 | Mode::Exec => self.w.write_all(data).await?,
        }
        self.w.flush().await
    }

    /// Write to stdout.
    pub(crate) async fn stdout(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        self.packet(ID_STDOUT, data).await
    }

    /// Write to stderr.
    pub(crate) async fn stderr(&mut self, text: &str) -> io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        self.packet(ID_STDERR, text.as_bytes()).await
    }

    /// The exit status (shell protocol only), then close our side.
    pub(crate) async fn exit(mut self, code: u8) -> io::Result<W> {
        if self.mode == Mode::V2 {
            let mut p = [ID_EXIT, 1, 0, 0, 0, code];
            p[1..5].copy_from_slice(&1u32.to_le_bytes());
            self.w.write_all(&p).await?;
        }
        self.w.flush().await?;
        Ok(self.w)
    }
}
