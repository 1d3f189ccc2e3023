//! Direct connection to the phone's adbd, without an adb server (SPEC D1): over USB bulk
//! endpoints (feature `usb`) or over TCP (`adb tcpip 5555`, or an emulator's adbd port). The
//! message layer (CNXN, AUTH, OPEN/OKAY/WRTE/CLSE, checksums, max payload) is the same on both.
//!
//! One connection per [`DirectLink`], used by one command at a time (a `Mutex`); each command
//! is one stream (`OPEN` → `OKAY` → `WRTE`… → `CLSE`). A command abandoned half-way (timeout,
//! cancel) poisons the connection, and the next command reconnects (a fresh CNXN + AUTH with
//! the now-known key, a few ms).

pub mod key;
pub(crate) mod message;
#[cfg(feature = "usb")]
pub(crate) mod usb;

use crate::Result;
use crate::server::ShellProtocol;
use crate::types::{DeviceError, DeviceInfo, DeviceState, Transport};
use crate::wire::{self, ShellOutput};
use key::AdbKey;
use message::{
    A_AUTH, A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_STLS, A_VERSION, A_WRTE, AUTH_RSAPUBLICKEY,
    AUTH_SIGNATURE, AUTH_TOKEN, MAX_PAYLOAD, Message,
};
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;

#[cfg(feature = "usb")]
pub use usb::UsbCandidate;

/// Environment variable naming a TCP adbd to drive directly (`HOST:PORT`), like `--direct`.
pub const DIRECT_ENV: &str = "PHONEAGENT_ADB_DIRECT";

/// The banner we send in CNXN: a host that speaks shell protocol v2.
const HOST_BANNER: &[u8] = b"host::features=shell_v2,cmd\0";

/// Where a direct connection goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DirectTarget {
    /// adbd listening on TCP (`adb tcpip 5555`, emulators). Its serial is `HOST:PORT`.
    Tcp {
        /// Host name or IP.
        host: String,
        /// TCP port (5555 after `adb tcpip 5555`).
        port: u16,
    },
    /// A phone on USB, by USB serial number (needs the `usb` feature).
    Usb {
        /// USB serial number.
        serial: String,
    },
}

impl DirectTarget {
    /// Parse a `--direct` / `PHONEAGENT_ADB_DIRECT` value: `HOST:PORT`, `[V6]:PORT`, or a
    /// bare `HOST` (port 5555).
    ///
    /// # Errors
    /// [`DeviceError::Config`] with the expected form.
    pub fn parse_tcp(s: &str) -> Result<Self> {
        let t = s.trim();
        let bad = || {
            DeviceError::Config(format!(
                "--direct {s:?} is not HOST:PORT: give the phone's address, e.g. 192.168.1.20:5555 (after `adb tcpip 5555`)"
            ))
        };
        if t.is_empty() {
            return Err(bad());
        }
        let (host, port) = if let Some(rest) = t.strip_prefix('[') {
            let (h, p) = rest.split_once("]:").ok_or_else(bad)?;
            (h.to_string(), p)
        } else if t.matches(':').count() == 1 {
            let (h, p) = t.split_once(':').ok_or_else(bad)?;
            (h.to_string(), p)
        } else if !t.contains(':') {
            (t.to_string(), "5555")
        } else {
            return Err(bad());
        };
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(bad)?;
        if host.is_empty() {
            return Err(bad());
        }
        Ok(Self::Tcp { host, port })
    }

    /// The serial this target goes by (`HOST:PORT` for TCP, as adb names such devices).
    pub fn serial(&self) -> String {
        match self {
            Self::Tcp { host, port } if host.contains(':') => format!("[{host}]:{port}"),
            Self::Tcp { host, port } => format!("{host}:{port}"),
            Self::Usb { serial } => serial.clone(),
        }
    }

    /// `tcp` / `usb`.
    pub fn transport(&self) -> Transport {
        match self {
            Self::Tcp { .. } => Transport::Tcp,
            Self::Usb { .. } => Transport::Usb,
        }
    }
}

impl std::fmt::Display for DirectTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tcp { .. } => write!(f, "direct TCP {}", self.serial()),
            Self::Usb { serial } => write!(f, "direct USB {serial}"),
        }
    }
}

/// Tunables of a direct connection.
#[derive(Debug, Clone)]
pub struct DirectOptions {
    /// Time limit of the TCP connect / USB open and of each handshake step.
    pub connect_timeout: Duration,
    /// How long to wait for the user to tap "Allow" after the public key was sent; then
    /// [`DeviceError::Unauthorized`].
    pub auth_timeout: Duration,
}

impl Default for DirectOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            auth_timeout: Duration::from_secs(30),
        }
    }
}

/// What the phone said in its CNXN banner (`device::ro.product.model=…;features=…`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceBanner {
    /// `ro.product.model`.
    pub model: Option<String>,
    /// `ro.product.name`.
    pub product: Option<String>,
    /// Features (`shell_v2`, `cmd`, …).
    pub features: Vec<String>,
}

impl DeviceBanner {
    /// Parse `device::k=v;k=v;features=a,b`.
    pub fn parse(banner: &[u8]) -> Self {
        let s = String::from_utf8_lossy(banner);
        let s = s.trim_end_matches('\0');
        let props = s.splitn(3, ':').nth(2).unwrap_or_default();
        let mut b = Self::default();
        for kv in props.split(';') {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            match k {
                "ro.product.model" => b.model = Some(v.to_string()),
                "ro.product.name" => b.product = Some(v.to_string()),
                "features" => {
                    b.features = v
                        .split(',')
                        .filter(|f| !f.is_empty())
                        .map(str::to_string)
                        .collect();
                }
                _ => {}
            }
        }
        b
    }
}

/// The byte pipe under the message layer.
enum Io {
    Tcp(TcpStream),
    #[cfg(feature = "usb")]
    Usb(Box<usb::UsbIo>),
}

impl Io {
    async fn send(&mut self, m: &Message) -> io::Result<()> {
        match self {
            Self::Tcp(s) => message::write_message(s, m).await,
            #[cfg(feature = "usb")]
            Self::Usb(u) => u.send(m).await,
        }
    }

    async fn recv(&mut self, max: u32) -> io::Result<Message> {
        match self {
            Self::Tcp(s) => message::read_message(s, max).await,
            #[cfg(feature = "usb")]
            Self::Usb(u) => u.recv(max).await,
        }
    }
}

/// An authenticated connection to adbd.
struct Conn {
    io: Io,
    max_payload: u32,
    banner: DeviceBanner,
    next_id: u32,
    /// Set while a stream is open: a command dropped half-way leaves it set, and the
    /// connection is not reused.
    in_flight: bool,
}

/// How a service failed, for the retry decision.
struct ServiceError {
    error: DeviceError,
    /// True when the phone acknowledged the OPEN (the command may have run).
    opened: bool,
}

impl Conn {
    /// CNXN, then AUTH: sign the token with `key`; if the phone does not know the key, send the
    /// public key and wait `auth_timeout` for the user to allow it.
    async fn handshake(
        mut io: Io,
        key: &AdbKey,
        opts: &DirectOptions,
        serial: &str,
    ) -> Result<Self> {
        io.send(&Message::new(A_CNXN, A_VERSION, MAX_PAYLOAD, HOST_BANNER))
            .await?;
        let mut signed = false;
        let mut sent_key = false;
        loop {
            let limit = if sent_key {
                opts.auth_timeout
            } else {
                opts.connect_timeout
            };
            let m = match tokio::time::timeout(limit, io.recv(MAX_PAYLOAD)).await {
                Ok(r) => r?,
                Err(_) if sent_key => {
                    return Err(DeviceError::Unauthorized {
                        serial: serial.to_string(),
                    });
                }
                Err(_) => {
                    return Err(DeviceError::Timeout {
                        command: format!("ADB handshake with {serial}"),
                        ms: limit.as_millis() as u64,
                    });
                }
            };
            match (m.command, m.arg0) {
                (A_CNXN, _) => {
                    let banner = DeviceBanner::parse(&m.data);
                    tracing::debug!(serial, ?banner, max_payload = m.arg1, "adbd connected");
                    return Ok(Self {
                        io,
                        max_payload: m.arg1.clamp(4096, MAX_PAYLOAD),
                        banner,
                        next_id: 1,
                        in_flight: false,
                    });
                }
                (A_AUTH, AUTH_TOKEN) if !signed => {
                    let sig = key.sign_token(&m.data)?;
                    io.send(&Message::new(A_AUTH, AUTH_SIGNATURE, 0, sig))
                        .await?;
                    signed = true;
                }
                (A_AUTH, AUTH_TOKEN) if !sent_key => {
                    // The phone does not know our key: offer it; the phone shows
                    // "Allow USB debugging?" with its fingerprint.
                    let mut pubkey = key.android_public_key().into_bytes();
                    pubkey.push(0);
                    io.send(&Message::new(A_AUTH, AUTH_RSAPUBLICKEY, 0, pubkey))
                        .await?;
                    sent_key = true;
                    tracing::warn!(
                        serial,
                        key = %key.path().display(),
                        "the phone does not know this computer's ADB key yet: unlock it and tap \"Allow\" on the \"Allow USB debugging?\" prompt"
                    );
                }
                (A_AUTH, AUTH_TOKEN) => {
                    return Err(DeviceError::Unauthorized {
                        serial: serial.to_string(),
                    });
                }
                (A_STLS, _) => {
                    return Err(DeviceError::Config(format!(
                        "{serial} asks for TLS (Android 11+ \"Wireless debugging\" port), which PhoneAgent's direct mode does not speak: connect the phone by USB, or run `adb tcpip 5555` once over USB and use --direct PHONE_IP:5555"
                    )));
                }
                (c, a) => {
                    return Err(DeviceError::Protocol(format!(
                        "unexpected {} (arg0 {a}) from {serial} during the handshake",
                        message::command_name(c)
                    )));
                }
            }
        }
    }

    /// Run one service to its end: OPEN, collect WRTE payloads (acknowledging each with OKAY)
    /// until CLSE.
    async fn run_service(&mut self, service: &str) -> std::result::Result<Vec<u8>, ServiceError> {
        let err = |error: DeviceError, opened: bool| ServiceError { error, opened };
        self.in_flight = true;
        let local = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let mut dest = service.as_bytes().to_vec();
        dest.push(0);
        if dest.len() > self.max_payload as usize {
            return Err(err(
                DeviceError::Protocol(format!(
                    "the command is {} bytes, more than the phone's {} byte limit",
                    dest.len(),
                    self.max_payload
                )),
                false,
            ));
        }
        self.io
            .send(&Message::new(A_OPEN, local, 0, dest))
            .await
            .map_err(|e| err(e.into(), false))?;
        let mut remote: Option<u32> = None;
        let mut out = Vec::new();
        loop {
            let m = self
                .io
                .recv(self.max_payload)
                .await
                .map_err(|e| err(e.into(), remote.is_some()))?;
            if m.arg1 != local && matches!(m.command, A_OKAY | A_WRTE | A_CLSE) {
                // A message of an earlier, abandoned stream: not ours.
                continue;
            }
            match m.command {
                A_OKAY => {
                    remote.get_or_insert(m.arg0);
                }
                A_WRTE => {
                    let r = *remote.get_or_insert(m.arg0);
                    out.extend_from_slice(&m.data);
                    self.io
                        .send(&Message::new(A_OKAY, local, r, Vec::new()))
                        .await
                        .map_err(|e| err(e.into(), true))?;
                }
                A_CLSE => {
                    if remote.is_none() {
                        self.in_flight = false;
                        return Err(err(
                            DeviceError::CommandFailed {
                                command: service.to_string(),
                                detail:
                                    "the phone refused this service (closed the stream at once)"
                                        .into(),
                            },
                            false,
                        ));
                    }
                    self.in_flight = false;
                    return Ok(out);
                }
                A_CNXN | A_AUTH => {
                    return Err(err(
                        DeviceError::Io(io::Error::new(
                            io::ErrorKind::ConnectionReset,
                            "adbd restarted the connection (CNXN/AUTH mid-stream)",
                        )),
                        remote.is_some(),
                    ));
                }
                _ => {}
            }
        }
    }
}

struct Shared {
    target: DirectTarget,
    key: AdbKey,
    opts: DirectOptions,
    conn: tokio::sync::Mutex<Option<Conn>>,
    banner: std::sync::Mutex<Option<DeviceBanner>>,
}

/// A phone reached directly (no adb server): its target, this computer's key, and the
/// (lazily opened, reused) connection. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct DirectLink {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for DirectLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectLink")
            .field("target", &self.shared.target)
            .field("key", &self.shared.key.path())
            .finish()
    }
}

impl DirectLink {
    /// A link to `target` authenticating with `key` (nothing is connected yet).
    pub fn new(target: DirectTarget, key: AdbKey, opts: DirectOptions) -> Self {
        Self {
            shared: Arc::new(Shared {
                target,
                key,
                opts,
                conn: tokio::sync::Mutex::new(None),
                banner: std::sync::Mutex::new(None),
            }),
        }
    }

    /// Where it goes.
    pub fn target(&self) -> &DirectTarget {
        &self.shared.target
    }

    /// The key it authenticates with.
    pub fn key(&self) -> &AdbKey {
        &self.shared.key
    }

    /// The serial (`HOST:PORT` or the USB serial).
    pub fn serial(&self) -> String {
        self.shared.target.serial()
    }

    /// A link to the same phone with its own connection (for work on another runtime, such
    /// as the IME restore of a dropped guard).
    pub fn detached(&self) -> Self {
        Self::new(
            self.shared.target.clone(),
            self.shared.key.clone(),
            self.shared.opts.clone(),
        )
    }

    async fn open_io(&self) -> Result<Io> {
        let t = &self.shared.target;
        let limit = self.shared.opts.connect_timeout;
        let unreachable = |detail: String| DeviceError::DirectUnreachable {
            target: t.to_string(),
            detail,
        };
        match t {
            DirectTarget::Tcp { host, port } => {
                match tokio::time::timeout(limit, TcpStream::connect((host.as_str(), *port))).await
                {
                    Ok(Ok(s)) => {
                        let _ = s.set_nodelay(true);
                        Ok(Io::Tcp(s))
                    }
                    Ok(Err(e)) => Err(unreachable(e.to_string())),
                    Err(_) => Err(unreachable(format!(
                        "no answer within {} ms",
                        limit.as_millis()
                    ))),
                }
            }
            #[cfg(feature = "usb")]
            DirectTarget::Usb { serial } => {
                match tokio::time::timeout(limit, usb::UsbIo::open(serial)).await {
                    Ok(Ok(u)) => Ok(Io::Usb(Box::new(u))),
                    Ok(Err(e)) => Err(unreachable(e.to_string())),
                    Err(_) => Err(unreachable(format!(
                        "the USB device did not open within {} ms",
                        limit.as_millis()
                    ))),
                }
            }
            #[cfg(not(feature = "usb"))]
            DirectTarget::Usb { .. } => Err(DeviceError::Config(
                "this build of PhoneAgent has no direct USB support (cargo feature `usb`): install adb and use the adb server, or use --direct HOST:PORT".into(),
            )),
        }
    }

    /// Open the byte pipe and authenticate.
    async fn connect(&self) -> Result<Conn> {
        let io = self.open_io().await?;
        let conn = Conn::handshake(io, &self.shared.key, &self.shared.opts, &self.serial()).await;
        let conn = match conn {
            // A connection that closes during the handshake: nobody (usable) is there.
            Err(DeviceError::Io(e)) => {
                return Err(DeviceError::DirectUnreachable {
                    target: self.shared.target.to_string(),
                    detail: format!("the connection closed during the ADB handshake ({e})"),
                });
            }
            other => other?,
        };
        if let Ok(mut b) = self.shared.banner.lock() {
            *b = Some(conn.banner.clone());
        }
        Ok(conn)
    }

    /// Connect now (if not connected) and return the phone's banner.
    ///
    /// # Errors
    /// [`DeviceError::DirectUnreachable`], [`DeviceError::Unauthorized`] (the user has not
    /// allowed this computer within the auth timeout), [`DeviceError::Config`] (TLS-only port),
    /// protocol errors.
    pub async fn banner(&self) -> Result<DeviceBanner> {
        let mut g = self.shared.conn.lock().await;
        if g.as_ref().is_some_and(|c| c.in_flight) {
            *g = None;
        }
        match g.as_ref() {
            Some(c) => Ok(c.banner.clone()),
            None => {
                let c = self.connect().await?;
                let b = c.banner.clone();
                *g = Some(c);
                Ok(b)
            }
        }
    }

    /// The device row for `devices`: state `device` with its model when the handshake
    /// succeeds, `unauthorized` (with the fix) while the prompt is not accepted.
    ///
    /// # Errors
    /// [`DeviceError::DirectUnreachable`] and protocol errors.
    pub async fn device_info(&self) -> Result<DeviceInfo> {
        let serial = self.serial();
        let transport = self.shared.target.transport();
        match self.banner().await {
            Ok(b) => Ok(DeviceInfo {
                serial,
                state: DeviceState::Device,
                model: b.model,
                transport,
                fix: None,
            }),
            Err(DeviceError::Unauthorized { .. }) => Ok(DeviceInfo {
                serial,
                fix: crate::parse::fix_for_state(&DeviceState::Unauthorized),
                state: DeviceState::Unauthorized,
                model: None,
                transport,
            }),
            Err(e) => Err(e),
        }
    }

    /// The state for [`crate::wait_for_device`]-style polling, from a fresh handshake:
    /// `Some(Device)` when a connection works, `Some(Unauthorized)`, or `None` when the phone is not reachable.
    ///
    /// # Errors
    /// Other errors (protocol, configuration).
    pub async fn state(&self) -> Result<Option<DeviceState>> {
        // A fresh handshake, not the cached connection: an idle connection does not know yet
        // that the phone went away.
        let fresh = {
            let mut g = self.shared.conn.lock().await;
            *g = None;
            match self.connect().await {
                Ok(c) => {
                    let b = c.banner.clone();
                    *g = Some(c);
                    Ok(b)
                }
                Err(e) => Err(e),
            }
        };
        match fresh {
            Ok(_) => Ok(Some(DeviceState::Device)),
            Err(DeviceError::Unauthorized { .. }) => Ok(Some(DeviceState::Unauthorized)),
            Err(DeviceError::DirectUnreachable { .. } | DeviceError::Timeout { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Features from the banner (`shell_v2`, …).
    ///
    /// # Errors
    /// As [`DirectLink::banner`].
    pub async fn features(&self) -> Result<Vec<String>> {
        Ok(self.banner().await?.features)
    }

    /// Run `service` and return all its output. A cached connection that turns out dead before
    /// the phone acknowledged the OPEN is replaced once (the phone may have restarted adbd while
    /// idle); after that, errors surface (I/O → the caller maps them to `DeviceLost`).
    async fn run(&self, service: &str) -> Result<Vec<u8>> {
        let mut g = self.shared.conn.lock().await;
        if g.as_ref().is_some_and(|c| c.in_flight) {
            tracing::debug!("dropping a connection with an abandoned stream");
            *g = None;
        }
        for attempt in 0..2 {
            let fresh = g.is_none();
            if fresh {
                *g = Some(self.connect().await?);
            }
            let Some(conn) = g.as_mut() else {
                continue;
            };
            match conn.run_service(service).await {
                Ok(v) => return Ok(v),
                Err(ServiceError { error, opened }) => {
                    let broken = matches!(error, DeviceError::Io(_) | DeviceError::Protocol(_));
                    if broken {
                        *g = None;
                    }
                    if broken && !opened && !fresh && attempt == 0 {
                        tracing::debug!("cached adbd connection is dead ({error}); reconnecting");
                        continue;
                    }
                    return Err(error);
                }
            }
        }
        Err(DeviceError::Protocol("unreachable retry state".into()))
    }

    /// Run `cmd` in the phone's shell (`shell,v2,raw:` or `shell:`).
    ///
    /// # Errors
    /// I/O errors (the phone went away), [`DeviceError::CommandFailed`] when the phone refuses
    /// the service, connection errors as [`DirectLink::banner`].
    pub async fn shell(&self, cmd: &str, protocol: ShellProtocol) -> Result<ShellOutput> {
        match protocol {
            ShellProtocol::V2 => {
                let raw = self.run(&format!("shell,v2,raw:{cmd}")).await?;
                let mut r: &[u8] = &raw;
                Ok(wire::read_shell_v2(&mut r).await?)
            }
            ShellProtocol::V1 => Ok(ShellOutput {
                stdout: self.run(&format!("shell:{cmd}")).await?,
                stderr: Vec::new(),
                exit_code: None,
            }),
        }
    }

    /// `exec:CMD` → raw stdout, binary-clean.
    ///
    /// # Errors
    /// As [`DirectLink::shell`].
    pub async fn exec(&self, cmd: &str) -> Result<Vec<u8>> {
        self.run(&format!("exec:{cmd}")).await
    }

    /// The model from the last banner, if connected once.
    pub fn model(&self) -> Option<String> {
        self.shared
            .banner
            .lock()
            .ok()
            .and_then(|b| b.as_ref().and_then(|b| b.model.clone()))
    }
}

/// Phones on USB with USB debugging on (empty without the `usb` feature or a USB bus).
///
/// # Errors
/// I/O errors of the USB enumeration.
pub async fn usb_devices() -> Result<Vec<(String, Option<String>)>> {
    #[cfg(feature = "usb")]
    {
        Ok(usb::list()
            .await?
            .into_iter()
            .map(|c| (c.serial, c.product))
            .collect())
    }
    #[cfg(not(feature = "usb"))]
    {
        Ok(Vec::new())
    }
}

/// True when this build can drive phones over USB without an adb server.
pub const USB_SUPPORTED: bool = cfg!(feature = "usb");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_targets() {
        let t = DirectTarget::parse_tcp("192.168.1.20:5555").unwrap();
        assert_eq!(t.serial(), "192.168.1.20:5555");
        assert_eq!(t.transport(), Transport::Tcp);
        assert_eq!(t.to_string(), "direct TCP 192.168.1.20:5555");
        assert_eq!(
            DirectTarget::parse_tcp("phone.lan").unwrap().serial(),
            "phone.lan:5555"
        );
        assert_eq!(
            DirectTarget::parse_tcp("[fe80::1]:5555").unwrap().serial(),
            "[fe80::1]:5555"
        );
        for bad in ["", "host:", "host:0", ":5555", "a:b:c", "host:99999"] {
            let e = DirectTarget::parse_tcp(bad).unwrap_err();
            assert!(matches!(e, DeviceError::Config(_)), "{bad}");
            assert!(e.to_string().contains("HOST:PORT"), "{e}");
        }
    }

    #[test]
    fn banner_parsing() {
        let b = DeviceBanner::parse(
            b"device::ro.product.name=sim;ro.product.model=PhoneAgent_Virtual;ro.product.device=sim;features=shell_v2,cmd\0",
        );
        assert_eq!(b.model.as_deref(), Some("PhoneAgent_Virtual"));
        assert_eq!(b.product.as_deref(), Some("sim"));
        assert_eq!(b.features, vec!["shell_v2", "cmd"]);
        assert_eq!(DeviceBanner::parse(b"device::"), DeviceBanner::default());
    }
}
