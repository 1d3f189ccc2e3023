//! [`AdbLink`]: how an [`crate::AdbDevice`] reaches its phone — through an adb server, or
//! directly to adbd (USB / TCP) — with the same shell/exec primitives on both (SPEC D1).

use crate::Result;
use crate::direct::DirectLink;
use crate::server::{AdbServer, ShellProtocol};
use crate::types::DeviceState;
use crate::wire::ShellOutput;

/// The transport under an [`crate::AdbDevice`].
#[derive(Debug, Clone)]
pub enum AdbLink {
    /// Through an adb server (`host:transport:SERIAL` + service), one TCP connection per command.
    Server(AdbServer),
    /// Straight to the phone's adbd (no adb server): USB bulk endpoints or TCP.
    Direct(DirectLink),
}

impl From<AdbServer> for AdbLink {
    fn from(s: AdbServer) -> Self {
        Self::Server(s)
    }
}

impl From<DirectLink> for AdbLink {
    fn from(d: DirectLink) -> Self {
        Self::Direct(d)
    }
}

impl AdbLink {
    /// One line for `devices` / `doctor`: `adb server 127.0.0.1:5037`, `direct TCP HOST:PORT`,
    /// `direct USB SERIAL`.
    pub fn describe(&self) -> String {
        match self {
            Self::Server(s) => format!("adb server {}", s.addr()),
            Self::Direct(d) => d.target().to_string(),
        }
    }

    /// True for a direct (server-less) link.
    pub fn is_direct(&self) -> bool {
        matches!(self, Self::Direct(_))
    }

    /// The same link for use on another runtime (a direct link gets its own connection).
    pub fn detached(&self) -> Self {
        match self {
            Self::Server(s) => Self::Server(s.clone()),
            Self::Direct(d) => Self::Direct(d.detached()),
        }
    }

    /// Run `cmd` in the device shell of `serial`.
    ///
    /// # Errors
    /// As [`AdbServer::shell`] / [`DirectLink::shell`].
    pub async fn shell(
        &self,
        serial: &str,
        cmd: &str,
        protocol: ShellProtocol,
    ) -> Result<ShellOutput> {
        match self {
            Self::Server(s) => s.shell(serial, cmd, protocol).await,
            Self::Direct(d) => d.shell(cmd, protocol).await,
        }
    }

    /// `exec:CMD` on `serial`: raw stdout.
    ///
    /// # Errors
    /// As [`AdbServer::exec`] / [`DirectLink::exec`].
    pub async fn exec(&self, serial: &str, cmd: &str) -> Result<Vec<u8>> {
        match self {
            Self::Server(s) => s.exec(serial, cmd).await,
            Self::Direct(d) => d.exec(cmd).await,
        }
    }

    /// The state of `serial` (`None`: not listed / not reachable).
    ///
    /// # Errors
    /// Server unreachable; protocol errors.
    pub async fn state_of(&self, serial: &str) -> Result<Option<DeviceState>> {
        match self {
            Self::Server(s) => s.state_of(serial).await,
            Self::Direct(d) => d.state().await,
        }
    }

    /// The device's features (`shell_v2`, …).
    ///
    /// # Errors
    /// As [`AdbServer::features`] / [`DirectLink::features`].
    pub async fn features(&self, serial: &str) -> Result<Vec<String>> {
        match self {
            Self::Server(s) => s.features(serial).await,
            Self::Direct(d) => d.features().await,
        }
    }

    /// What "the connection broke" means on this link, for [`DeviceError::DeviceLost`].
    pub(crate) fn broke(&self, io: &std::io::Error) -> String {
        match self {
            Self::Server(_) => format!("connection to the adb server broke: {io}"),
            Self::Direct(d) => format!("the connection to the phone ({}) broke: {io}", d.target()),
        }
    }
}
