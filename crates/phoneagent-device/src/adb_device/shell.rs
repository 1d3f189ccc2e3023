//! Shell and exec commands with their time limits, and the mapping of transport failures to
//! [`DeviceError::DeviceLost`] or a plain timeout (SPEC D6).

use super::Inner;
use crate::Result;
use crate::types::{DeviceError, DeviceState};
use crate::wire::ShellOutput;
use std::time::Duration;

impl Inner {
    /// Map a transport failure of `cmd` to [`DeviceError::DeviceLost`] where it means the
    /// device (or the server) went away (SPEC D6).
    pub(super) async fn map_err<T>(&self, cmd: &str, r: Result<T>) -> Result<T> {
        let e = match r {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let lost = |detail: String| {
            // A phone that comes back may have another geometry: read it again (D6).
            self.forget_geometry();
            DeviceError::DeviceLost {
                serial: self.serial.clone(),
                command: cmd.to_string(),
                detail,
            }
        };
        Err(match e {
            DeviceError::SerialNotFound { .. }
            | DeviceError::Offline { .. }
            | DeviceError::AdbServerUnreachable { .. }
            | DeviceError::DirectUnreachable { .. } => lost(e.to_string()),
            DeviceError::Io(io) => match io.kind() {
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput => {
                    DeviceError::Protocol(format!("`{cmd}`: {io}"))
                }
                _ => lost(self.server.broke(&io)),
            },
            other => other,
        })
    }

    /// After a timeout: lost if the device is gone from the list, else a plain timeout.
    pub(super) async fn timeout_error(&self, cmd: &str, limit: Duration) -> DeviceError {
        self.forget_geometry();
        match self.server.state_of(&self.serial).await {
            Ok(Some(DeviceState::Device)) => DeviceError::Timeout {
                command: cmd.to_string(),
                ms: limit.as_millis() as u64,
            },
            Ok(state) => DeviceError::DeviceLost {
                serial: self.serial.clone(),
                command: cmd.to_string(),
                detail: format!(
                    "no answer within {} ms and the device is now {state:?}",
                    limit.as_millis()
                ),
            },
            Err(e) => DeviceError::DeviceLost {
                serial: self.serial.clone(),
                command: cmd.to_string(),
                detail: e.to_string(),
            },
        }
    }

    pub(super) async fn shell(&self, cmd: &str, limit: Duration) -> Result<ShellOutput> {
        tracing::trace!(serial = %self.serial, cmd, "shell");
        match tokio::time::timeout(limit, self.server.shell(&self.serial, cmd, self.protocol)).await
        {
            Ok(r) => self.map_err(cmd, r).await,
            Err(_) => Err(self.timeout_error(cmd, limit).await),
        }
    }

    /// A shell command whose non-zero exit is an error.
    pub(super) async fn shell_ok(&self, cmd: &str) -> Result<String> {
        let out = self.shell(cmd, self.opts.command_timeout).await?;
        if out.failed() {
            return Err(DeviceError::CommandFailed {
                command: cmd.to_string(),
                detail: out.combined().trim().to_string(),
            });
        }
        Ok(out.combined())
    }

    pub(super) async fn exec(&self, cmd: &str, limit: Duration) -> Result<Vec<u8>> {
        match tokio::time::timeout(limit, self.server.exec(&self.serial, cmd)).await {
            Ok(r) => self.map_err(cmd, r).await,
            Err(_) => Err(self.timeout_error(cmd, limit).await),
        }
    }
}
