//! Opening the phone (SPEC D1): through the adb server, directly over USB or TCP, or as the
//! [`ConnectPlan`] from flags and environment decides; and waiting for it to come back after
//! it was lost (D6). Putting back an IME a killed run left switched happens on open (D4).

use super::{AdbDevice, AdbDeviceOptions, serial_from_env};
use crate::Result;
use crate::direct::{DirectLink, DirectOptions, DirectTarget, key::AdbKey};
use crate::ime;
use crate::link::AdbLink;
use crate::server::{self, AdbServer, AdbServerAddr, ShellProtocol};
use crate::text::ADB_KEYBOARD_IME;
use crate::types::{DeviceError, DeviceState};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

impl AdbDevice {
    /// Open `serial` on `server`: checks that it is listed in state `device` and reads its
    /// features (shell v2 when advertised, else shell v1).
    ///
    /// # Errors
    /// [`DeviceError::SerialNotFound`], [`DeviceError::Unauthorized`], [`DeviceError::Offline`],
    /// [`DeviceError::AdbServerUnreachable`].
    pub async fn open(server: AdbServer, serial: &str, opts: AdbDeviceOptions) -> Result<Self> {
        let list = server.devices().await?;
        let info = server::choose_device(&list, Some(serial))?;
        let features = server.features(&info.serial).await?;
        let protocol = if features.iter().any(|f| f == "shell_v2") {
            ShellProtocol::V2
        } else {
            ShellProtocol::V1
        };
        tracing::debug!(serial, ?protocol, ?features, "opened device");
        Ok(Self::with_link(server.into(), info.serial, protocol, opts)
            .recover_ime()
            .await)
    }

    /// Put back an IME a killed run left switched (the journal, SPEC D4). Never fails the
    /// open: a failure is logged and the entry kept for the next open.
    async fn recover_ime(self) -> Self {
        if let Some(dir) = &self.inner.opts.ime_journal {
            let j = ime::ImeJournal::new(dir, &self.inner.serial);
            let i = &self.inner;
            if let Err(e) =
                ime::recover_from_journal(&i.server, &i.serial, i.protocol, &j, ADB_KEYBOARD_IME)
                    .await
            {
                tracing::warn!(serial = %i.serial, "cannot put back the IME a killed run left: {e}");
            }
        }
        self
    }

    /// Open a phone directly, without an adb server (SPEC D1): connect to its adbd over
    /// `link` (USB or TCP), authenticate with this computer's key (the phone asks "Allow USB
    /// debugging?" the first time) and read its features from the CNXN banner.
    ///
    /// # Errors
    /// [`DeviceError::DirectUnreachable`] (nothing answers), [`DeviceError::Unauthorized`] (the
    /// prompt was not accepted within the auth timeout), [`DeviceError::Config`] (TLS-only
    /// wireless-debugging port), protocol errors.
    pub async fn open_direct(link: DirectLink, opts: AdbDeviceOptions) -> Result<Self> {
        let features = link.features().await?;
        let protocol = if features.iter().any(|f| f == "shell_v2") {
            ShellProtocol::V2
        } else {
            ShellProtocol::V1
        };
        let serial = link.serial();
        tracing::debug!(serial, ?protocol, ?features, target = %link.target(), "opened device directly");
        Ok(Self::with_link(link.into(), serial, protocol, opts)
            .recover_ime()
            .await)
    }

    /// Connect the way the user's flags and environment ask (SPEC D1), see [`ConnectPlan`]:
    /// `--direct HOST:PORT` / `PHONEAGENT_ADB_DIRECT` → direct TCP; else the adb server when one
    /// answers; else (no adb server) a phone on USB directly, when built with the `usb`
    /// feature. The serial is `explicit`, else `ANDROID_SERIAL`, else the only device.
    ///
    /// # Errors
    /// As [`AdbDevice::select`] / [`AdbDevice::open_direct`]; [`DeviceError::NoDevice`] when
    /// neither an adb server nor a USB phone is there (the message says how to fix it), and
    /// [`DeviceError::AdbServerUnreachable`] without USB support.
    pub async fn connect(
        plan: &ConnectPlan,
        explicit: Option<&str>,
        opts: AdbDeviceOptions,
    ) -> Result<Self> {
        let chosen = explicit
            .map(str::to_string)
            .or_else(serial_from_env)
            .filter(|s| !s.trim().is_empty());
        match plan.resolve().await? {
            Route::Server(server) => Self::select(server, chosen.as_deref(), opts).await,
            Route::Direct(target) => {
                let key = AdbKey::for_user()?;
                Self::open_direct(DirectLink::new(target, key, plan.direct.clone()), opts).await
            }
            Route::Usb(server_err) => {
                let found = crate::direct::usb_devices().await?;
                let pick = match chosen.as_deref() {
                    Some(s) => found
                        .iter()
                        .find(|(serial, _)| serial == s)
                        .cloned()
                        .ok_or_else(|| DeviceError::SerialNotFound {
                            serial: s.to_string(),
                            available: found.iter().map(|(x, _)| x.clone()).collect(),
                        })?,
                    None => match found.as_slice() {
                        [one] => one.clone(),
                        [] => {
                            tracing::info!("no adb server ({server_err}) and no phone on USB");
                            return Err(DeviceError::NoDevice);
                        }
                        many => {
                            return Err(DeviceError::MultipleDevices {
                                serials: many
                                    .iter()
                                    .map(|(s, p)| match p {
                                        Some(p) => format!("{s} ({p})"),
                                        None => s.clone(),
                                    })
                                    .collect(),
                            });
                        }
                    },
                };
                let key = AdbKey::for_user()?;
                let target = DirectTarget::Usb { serial: pick.0 };
                Self::open_direct(DirectLink::new(target, key, plan.direct.clone()), opts).await
            }
        }
    }

    /// Choose and open a device (SPEC D1): `explicit`, else `ANDROID_SERIAL`, else the only
    /// device in state `device`.
    ///
    /// # Errors
    /// As [`server::select_device`] and [`AdbDevice::open`].
    pub async fn select(
        server: AdbServer,
        explicit: Option<&str>,
        opts: AdbDeviceOptions,
    ) -> Result<Self> {
        let env = serial_from_env();
        let chosen = explicit.map(str::to_string).or(env);
        let info = server::select_device(&server, chosen.as_deref()).await?;
        Self::open(server, &info.serial, opts).await
    }

    /// Wait (bounded) for this serial to be back in state `device` after a
    /// [`DeviceError::DeviceLost`] (SPEC D6).
    ///
    /// # Errors
    /// [`DeviceError::DeviceLost`] on timeout, [`DeviceError::Cancelled`].
    pub async fn wait_until_back(
        &self,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<()> {
        match &self.inner.server {
            AdbLink::Server(s) => {
                server::wait_for_device(s, &self.inner.serial, timeout, cancel).await
            }
            AdbLink::Direct(d) => wait_for_direct(d, timeout, cancel).await,
        }
    }
}

/// Wait (bounded) until a direct link connects again (SPEC D6), polling every 200 ms.
async fn wait_for_direct(
    d: &DirectLink,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<()> {
    let serial = d.serial();
    server::poll_until_device(&serial, timeout, cancel, || async {
        Ok(match d.state().await? {
            Some(DeviceState::Device) => None,
            Some(s) => Some(format!("{s:?}").to_lowercase()),
            None => Some("not reachable".to_string()),
        })
    })
    .await
}

/// How [`AdbDevice::connect`] finds the phone (SPEC D1): flags and environment, resolved.
#[derive(Debug, Clone, Default)]
pub struct ConnectPlan {
    /// `--adb HOST:PORT` (else `ADB_SERVER_SOCKET`, `ANDROID_ADB_SERVER_PORT`, 127.0.0.1:5037).
    pub adb: Option<String>,
    /// `--direct HOST:PORT` (else `PHONEAGENT_ADB_DIRECT`): drive a TCP adbd directly.
    pub direct_tcp: Option<String>,
    /// When no adb server answers, look for a phone on USB directly (needs the `usb` feature;
    /// [`ConnectPlan::from_flags`] turns it on unless `--adb`, `ADB_SERVER_SOCKET` or
    /// `ANDROID_ADB_SERVER_PORT` named a server).
    pub usb_fallback: bool,
    /// Timeouts of direct connections.
    pub direct: DirectOptions,
}

/// Where [`ConnectPlan::resolve`] decided to go.
#[derive(Debug)]
pub enum Route {
    /// Through this adb server (it answered `host:version`).
    Server(AdbServer),
    /// Directly to this adbd.
    Direct(DirectTarget),
    /// No adb server answered (the error says why) and USB support is built in: look for a
    /// phone on USB.
    Usb(DeviceError),
}

impl ConnectPlan {
    /// From flags: `adb` (`--adb`), `direct` (`--direct`); `PHONEAGENT_ADB_DIRECT` fills in a
    /// missing `direct`.
    pub fn from_flags(adb: Option<&str>, direct: Option<&str>) -> Self {
        let direct_tcp = direct
            .map(str::to_string)
            .or_else(|| std::env::var(crate::direct::DIRECT_ENV).ok())
            .filter(|s| !s.trim().is_empty());
        // A server the user named (flag or environment) is meant: no silent USB fallback.
        let named_server = adb.is_some()
            || ["ADB_SERVER_SOCKET", "ANDROID_ADB_SERVER_PORT"]
                .iter()
                .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()));
        Self {
            usb_fallback: !named_server && crate::direct::USB_SUPPORTED,
            adb: adb.map(str::to_string),
            direct_tcp,
            direct: DirectOptions::default(),
        }
    }

    /// Decide: an explicit direct TCP target wins; else the adb server when it answers
    /// `host:version`; else USB directly when built in and [`ConnectPlan::usb_fallback`] is
    /// set; else the server's error.
    ///
    /// # Errors
    /// [`DeviceError::Config`] for malformed addresses; [`DeviceError::AdbServerUnreachable`]
    /// when no server answers and USB support is not built in.
    pub async fn resolve(&self) -> Result<Route> {
        if let Some(d) = &self.direct_tcp {
            return Ok(Route::Direct(DirectTarget::parse_tcp(d)?));
        }
        let server = AdbServer::new(AdbServerAddr::resolve(self.adb.as_deref())?);
        match server.version().await {
            Ok(_) => Ok(Route::Server(server)),
            Err(e @ DeviceError::AdbServerUnreachable { .. })
                if crate::direct::USB_SUPPORTED && self.usb_fallback =>
            {
                Ok(Route::Usb(e))
            }
            Err(e) => Err(e),
        }
    }
}
