//! The adb server client: host services and transport services over the smart-socket protocol
//! (SPEC D1), device selection, and waiting for a lost device to come back (D6).

use crate::Result;
use crate::parse;
use crate::types::{DeviceError, DeviceInfo, DeviceState};
use crate::wire::{self, ShellOutput, Status};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// Where the adb server listens (SPEC D1).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AdbServerAddr {
    /// Host name or IP (without brackets for IPv6).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Default for AdbServerAddr {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: Self::DEFAULT_PORT,
        }
    }
}

impl std::fmt::Display for AdbServerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl AdbServerAddr {
    /// The adb server's default port.
    pub const DEFAULT_PORT: u16 = 5037;

    /// Parse `HOST:PORT`, `tcp:HOST:PORT`, `tcp:PORT`, `PORT` or `[V6]:PORT`.
    ///
    /// # Errors
    /// [`DeviceError::Config`] for anything else (including unix-socket forms, which are not
    /// supported).
    pub fn parse(s: &str) -> Result<Self> {
        let bad = |why: &str| {
            DeviceError::Config(format!(
                "adb server address {s:?} {why}: use HOST:PORT (e.g. 127.0.0.1:5037) or tcp:HOST:PORT"
            ))
        };
        let t = s.trim();
        let t = t.strip_prefix("tcp:").unwrap_or(t);
        if t.starts_with("local") {
            return Err(bad("is a unix socket, which is not supported"));
        }
        let port_of = |p: &str| p.parse::<u16>().ok().filter(|p| *p != 0);
        if let Some(port) = port_of(t) {
            return Ok(Self {
                host: "127.0.0.1".into(),
                port,
            });
        }
        let (host, port) = if let Some(rest) = t.strip_prefix('[') {
            let (h, p) = rest.split_once("]:").ok_or_else(|| bad("is malformed"))?;
            (h, p)
        } else {
            t.rsplit_once(':').ok_or_else(|| bad("has no port"))?
        };
        let port = port_of(port).ok_or_else(|| bad("has an invalid port"))?;
        if host.is_empty() {
            return Err(bad("has no host"));
        }
        Ok(Self {
            host: host.to_string(),
            port,
        })
    }

    /// Resolve from an explicit `--adb` value, else `ADB_SERVER_SOCKET=tcp:HOST:PORT`, else
    /// `ANDROID_ADB_SERVER_PORT`, else `127.0.0.1:5037`.
    ///
    /// # Errors
    /// [`DeviceError::Config`] when the chosen value is malformed.
    pub fn resolve(explicit: Option<&str>) -> Result<Self> {
        Self::resolve_with(
            explicit,
            std::env::var("ADB_SERVER_SOCKET").ok().as_deref(),
            std::env::var("ANDROID_ADB_SERVER_PORT").ok().as_deref(),
        )
    }

    /// [`AdbServerAddr::resolve`] with the environment passed in (testable).
    ///
    /// # Errors
    /// [`DeviceError::Config`] when the chosen value is malformed.
    pub fn resolve_with(
        explicit: Option<&str>,
        adb_server_socket: Option<&str>,
        android_adb_server_port: Option<&str>,
    ) -> Result<Self> {
        if let Some(e) = explicit.filter(|s| !s.trim().is_empty()) {
            return Self::parse(e);
        }
        if let Some(s) = adb_server_socket.filter(|s| !s.trim().is_empty()) {
            return Self::parse(s);
        }
        if let Some(p) = android_adb_server_port.filter(|s| !s.trim().is_empty()) {
            let port = p.trim().parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| {
                DeviceError::Config(format!(
                    "ANDROID_ADB_SERVER_PORT={p:?} is not a port number: set it to e.g. 5037 or unset it"
                ))
            })?;
            return Ok(Self {
                host: "127.0.0.1".into(),
                port,
            });
        }
        Ok(Self::default())
    }
}

/// Which shell protocol to use for a `shell:` service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellProtocol {
    /// `shell,v2,raw:` — separate stdout/stderr and an exit status (feature `shell_v2`).
    V2,
    /// `shell:` — one merged output stream, no exit status (old devices).
    V1,
}

/// Client of one adb server. Cheap to clone; every call opens its own connection, as adb does.
#[derive(Debug, Clone)]
pub struct AdbServer {
    addr: AdbServerAddr,
    connect_timeout: Duration,
}

impl AdbServer {
    /// A client for the server at `addr` (nothing is connected yet).
    pub fn new(addr: AdbServerAddr) -> Self {
        Self {
            addr,
            connect_timeout: Duration::from_secs(3),
        }
    }

    /// The server address.
    pub fn addr(&self) -> &AdbServerAddr {
        &self.addr
    }

    async fn connect(&self) -> Result<TcpStream> {
        let unreachable = |detail: String| DeviceError::AdbServerUnreachable {
            addr: self.addr.to_string(),
            detail,
        };
        let fut = TcpStream::connect((self.addr.host.as_str(), self.addr.port));
        match tokio::time::timeout(self.connect_timeout, fut).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                Ok(s)
            }
            Ok(Err(e)) => Err(unreachable(e.to_string())),
            Err(_) => Err(unreachable(format!(
                "no answer within {} ms",
                self.connect_timeout.as_millis()
            ))),
        }
    }

    /// Send `req` on `s` and expect `OKAY`.
    async fn request(&self, s: &mut TcpStream, req: &str, serial: Option<&str>) -> Result<()> {
        wire::send_request(s, req).await?;
        match wire::read_status(s).await? {
            Status::Okay => Ok(()),
            Status::Fail(msg) => Err(fail_to_error(serial, req, &msg)),
        }
    }

    /// A host service answering `OKAY` + `hex4` payload.
    async fn host_query(&self, req: &str, serial: Option<&str>) -> Result<Vec<u8>> {
        let mut s = self.connect().await?;
        self.request(&mut s, req, serial).await?;
        Ok(wire::read_hex4_payload(&mut s).await?)
    }

    /// `host:version` → the server's protocol version (41 for current platform-tools).
    ///
    /// # Errors
    /// [`DeviceError::AdbServerUnreachable`] when nothing listens; protocol errors otherwise.
    pub async fn version(&self) -> Result<u32> {
        let v = self.host_query("host:version", None).await?;
        let s = String::from_utf8_lossy(&v);
        u32::from_str_radix(s.trim(), 16)
            .map_err(|_| DeviceError::Protocol(format!("bad host:version reply {s:?}")))
    }

    /// `host:devices-l` → every device the server knows, in any state (SPEC D1).
    ///
    /// # Errors
    /// [`DeviceError::AdbServerUnreachable`] when nothing listens; protocol errors otherwise.
    pub async fn devices(&self) -> Result<Vec<DeviceInfo>> {
        let raw = self.host_query("host:devices-l", None).await?;
        Ok(parse::parse_devices(&String::from_utf8_lossy(&raw)))
    }

    /// The state of `serial`, `None` when the server does not list it.
    ///
    /// # Errors
    /// As [`AdbServer::devices`].
    pub async fn state_of(&self, serial: &str) -> Result<Option<DeviceState>> {
        Ok(self
            .devices()
            .await?
            .into_iter()
            .find(|d| d.serial == serial)
            .map(|d| d.state))
    }

    /// `host-serial:SERIAL:features` → the device's feature list (`shell_v2`, `cmd`, …).
    ///
    /// # Errors
    /// [`DeviceError::SerialNotFound`], [`DeviceError::Offline`], [`DeviceError::Unauthorized`]
    /// as the server says; I/O and protocol errors.
    pub async fn features(&self, serial: &str) -> Result<Vec<String>> {
        let raw = self
            .host_query(&format!("host-serial:{serial}:features"), Some(serial))
            .await?;
        Ok(parse::parse_features(&String::from_utf8_lossy(&raw)))
    }

    /// Open `service` on the device `serial` (`host:transport:SERIAL`, then the service).
    pub(crate) async fn open(&self, serial: &str, service: &str) -> Result<TcpStream> {
        let mut s = self.connect().await?;
        self.request(&mut s, &format!("host:transport:{serial}"), Some(serial))
            .await?;
        self.request(&mut s, service, Some(serial)).await?;
        Ok(s)
    }

    /// Run `cmd` in the device shell and collect its output.
    ///
    /// With [`ShellProtocol::V2`] a stream that ends before the exit status is an
    /// [`DeviceError::Io`] of kind `UnexpectedEof`.
    ///
    /// # Errors
    /// Server refusals (device not found/offline/unauthorized), I/O errors.
    pub async fn shell(
        &self,
        serial: &str,
        cmd: &str,
        protocol: ShellProtocol,
    ) -> Result<ShellOutput> {
        match protocol {
            ShellProtocol::V2 => {
                let mut s = self.open(serial, &format!("shell,v2,raw:{cmd}")).await?;
                Ok(wire::read_shell_v2(&mut s).await?)
            }
            ShellProtocol::V1 => {
                let mut s = self.open(serial, &format!("shell:{cmd}")).await?;
                let mut out = Vec::new();
                s.read_to_end(&mut out).await?;
                Ok(ShellOutput {
                    stdout: out,
                    stderr: Vec::new(),
                    exit_code: None,
                })
            }
        }
    }

    /// `exec:CMD` → the command's raw stdout, binary-clean (what `adb exec-out` uses).
    ///
    /// # Errors
    /// Server refusals, I/O errors.
    pub async fn exec(&self, serial: &str, cmd: &str) -> Result<Vec<u8>> {
        let mut s = self.open(serial, &format!("exec:{cmd}")).await?;
        let mut out = Vec::with_capacity(1 << 20);
        s.read_to_end(&mut out).await?;
        Ok(out)
    }
}

/// Map a `FAIL` message to a typed error.
fn fail_to_error(serial: Option<&str>, req: &str, msg: &str) -> DeviceError {
    let lower = msg.to_lowercase();
    let serial_s = serial.unwrap_or_default().to_string();
    if serial.is_some() {
        if lower.contains("unauthorized") {
            return DeviceError::Unauthorized { serial: serial_s };
        }
        if lower.contains("offline") {
            return DeviceError::Offline { serial: serial_s };
        }
        if lower.contains("not found") || lower.contains("no devices") {
            return DeviceError::SerialNotFound {
                serial: serial_s,
                available: Vec::new(),
            };
        }
    }
    DeviceError::Protocol(format!("the adb server refused `{req}`: {msg}"))
}

/// Choose the device to drive (SPEC D1): `explicit` (a `--serial` flag or `ANDROID_SERIAL`, as
/// the caller resolved it), else the only device in state `device`.
///
/// Devices that are `unauthorized`/`offline` are skipped; when no usable device remains, the
/// error names the first skipped one with its fix.
///
/// # Errors
/// [`DeviceError::MultipleDevices`] (listing them), [`DeviceError::NoDevice`],
/// [`DeviceError::SerialNotFound`], [`DeviceError::Unauthorized`], [`DeviceError::Offline`],
/// [`DeviceError::CommandFailed`] for other states, and server errors.
pub async fn select_device(server: &AdbServer, explicit: Option<&str>) -> Result<DeviceInfo> {
    let list = server.devices().await?;
    choose_device(&list, explicit)
}

/// The pure selection rule behind [`select_device`].
///
/// # Errors
/// As [`select_device`].
pub fn choose_device(list: &[DeviceInfo], explicit: Option<&str>) -> Result<DeviceInfo> {
    if let Some(serial) = explicit.map(str::trim).filter(|s| !s.is_empty()) {
        let Some(d) = list.iter().find(|d| d.serial == serial) else {
            return Err(DeviceError::SerialNotFound {
                serial: serial.to_string(),
                available: list.iter().map(|d| d.serial.clone()).collect(),
            });
        };
        return usable(d).map(|()| d.clone());
    }
    let ready: Vec<&DeviceInfo> = list
        .iter()
        .filter(|d| d.state == DeviceState::Device)
        .collect();
    match ready.as_slice() {
        [one] => Ok((*one).clone()),
        [] => match list.first() {
            Some(d) => usable(d).map(|()| d.clone()),
            None => Err(DeviceError::NoDevice),
        },
        many => Err(DeviceError::MultipleDevices {
            serials: many
                .iter()
                .map(|d| match &d.model {
                    Some(m) => format!("{} ({m})", d.serial),
                    None => d.serial.clone(),
                })
                .collect(),
        }),
    }
}

fn usable(d: &DeviceInfo) -> Result<()> {
    match &d.state {
        DeviceState::Device => Ok(()),
        DeviceState::Unauthorized => Err(DeviceError::Unauthorized {
            serial: d.serial.clone(),
        }),
        DeviceState::Offline => Err(DeviceError::Offline {
            serial: d.serial.clone(),
        }),
        DeviceState::Other(s) => Err(DeviceError::CommandFailed {
            command: format!("select device {}", d.serial),
            detail: format!(
                "the device is in state `{s}`: {}",
                d.fix.clone().unwrap_or_default()
            ),
        }),
    }
}

/// Wait (bounded) until `serial` is listed in state `device` again (SPEC D6). The adb server
/// itself may be down meanwhile (restart); it is polled every 200 ms.
///
/// # Errors
/// [`DeviceError::Cancelled`] when `cancel` fires; [`DeviceError::DeviceLost`] with the last
/// thing seen when `timeout` passes.
pub async fn wait_for_device(
    server: &AdbServer,
    serial: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<()> {
    poll_until_device(serial, timeout, cancel, || async {
        Ok(match server.state_of(serial).await? {
            Some(DeviceState::Device) => None,
            Some(state) => Some(format!("listed as {state:?}")),
            None => Some("not listed by the adb server".to_string()),
        })
    })
    .await
}

/// Poll `probe` every 200 ms until it reports the phone back (`Ok(None)`), for at most
/// `timeout` (SPEC D6). `Ok(Some(what))` says what was seen instead; an `Err` is remembered the
/// same way and polling goes on (the link may be restarting).
///
/// # Errors
/// [`DeviceError::Cancelled`] when `cancel` fires; [`DeviceError::DeviceLost`] naming `serial`
/// and the last thing seen when `timeout` passes.
pub(crate) async fn poll_until_device<F, Fut>(
    serial: &str,
    timeout: Duration,
    cancel: &CancellationToken,
    mut probe: F,
) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<String>>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match probe().await {
            Ok(None) => return Ok(()),
            Ok(Some(seen)) => seen,
            Err(e) => e.to_string(),
        };
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(DeviceError::DeviceLost {
                serial: serial.to_string(),
                command: "wait_for_device".into(),
                detail: format!(
                    "did not come back within {} ms ({last}): reconnect the phone and unlock it",
                    timeout.as_millis()
                ),
            });
        }
        let nap = Duration::from_millis(200).min(deadline - now);
        tokio::select! {
            () = cancel.cancelled() => return Err(DeviceError::Cancelled),
            () = tokio::time::sleep(nap) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Transport;

    #[test]
    fn addr_parse_forms() {
        let a = AdbServerAddr::parse("127.0.0.1:5038").unwrap();
        assert_eq!((a.host.as_str(), a.port), ("127.0.0.1", 5038));
        let a = AdbServerAddr::parse("tcp:phonehost:6000").unwrap();
        assert_eq!((a.host.as_str(), a.port), ("phonehost", 6000));
        let a = AdbServerAddr::parse("tcp:5039").unwrap();
        assert_eq!((a.host.as_str(), a.port), ("127.0.0.1", 5039));
        let a = AdbServerAddr::parse("15037").unwrap();
        assert_eq!(a.port, 15037);
        let a = AdbServerAddr::parse("[::1]:5037").unwrap();
        assert_eq!(a.host, "::1");
        assert_eq!(a.to_string(), "[::1]:5037");
        for bad in [
            "",
            "host",
            "host:",
            "host:0",
            "host:99999",
            ":5037",
            "localfilesystem:/x",
        ] {
            let e = AdbServerAddr::parse(bad).unwrap_err();
            assert!(matches!(e, DeviceError::Config(_)), "{bad}: {e}");
        }
    }

    #[test]
    fn addr_resolution_order() {
        let r = |f, s, p| AdbServerAddr::resolve_with(f, s, p).unwrap().to_string();
        assert_eq!(r(None, None, None), "127.0.0.1:5037");
        assert_eq!(r(None, None, Some("5040")), "127.0.0.1:5040");
        assert_eq!(
            r(None, Some("tcp:10.0.0.2:5041"), Some("5040")),
            "10.0.0.2:5041"
        );
        assert_eq!(
            r(
                Some("127.0.0.1:15037"),
                Some("tcp:10.0.0.2:5041"),
                Some("5040")
            ),
            "127.0.0.1:15037"
        );
        assert_eq!(r(Some(""), None, Some("5040")), "127.0.0.1:5040");
        assert!(AdbServerAddr::resolve_with(None, None, Some("abc")).is_err());
    }

    fn dev(serial: &str, state: DeviceState) -> DeviceInfo {
        DeviceInfo {
            serial: serial.into(),
            fix: parse::fix_for_state(&state),
            state,
            model: Some("M".into()),
            transport: Transport::Usb,
        }
    }

    #[test]
    fn selection_rules() {
        let a = dev("A", DeviceState::Device);
        let b = dev("B", DeviceState::Device);
        let u = dev("U", DeviceState::Unauthorized);
        let o = dev("O", DeviceState::Offline);
        // The single ready device, skipping unauthorized/offline ones.
        let list = vec![u.clone(), a.clone(), o.clone()];
        assert_eq!(choose_device(&list, None).unwrap().serial, "A");
        // Several ready devices and none chosen: refuse, listing them.
        let list = vec![a.clone(), b.clone(), u.clone()];
        match choose_device(&list, None).unwrap_err() {
            DeviceError::MultipleDevices { serials } => {
                assert_eq!(serials, vec!["A (M)".to_string(), "B (M)".to_string()]);
            }
            e => panic!("{e}"),
        }
        // Explicit choice.
        assert_eq!(choose_device(&list, Some("B")).unwrap().serial, "B");
        assert!(matches!(
            choose_device(&list, Some("U")).unwrap_err(),
            DeviceError::Unauthorized { .. }
        ));
        match choose_device(&list, Some("Z")).unwrap_err() {
            DeviceError::SerialNotFound { serial, available } => {
                assert_eq!(serial, "Z");
                assert_eq!(available, vec!["A", "B", "U"]);
            }
            e => panic!("{e}"),
        }
        // Nothing usable: the skipped device's own error with its fix.
        assert!(matches!(
            choose_device(&[u.clone(), o.clone()], None).unwrap_err(),
            DeviceError::Unauthorized { .. }
        ));
        assert!(matches!(
            choose_device(&[o], None).unwrap_err(),
            DeviceError::Offline { .. }
        ));
        assert!(matches!(
            choose_device(&[], None).unwrap_err(),
            DeviceError::NoDevice
        ));
    }

    #[test]
    fn fail_messages() {
        assert!(matches!(
            fail_to_error(Some("x"), "host:transport:x", "device 'x' not found"),
            DeviceError::SerialNotFound { .. }
        ));
        assert!(matches!(
            fail_to_error(Some("x"), "host:transport:x", "device offline"),
            DeviceError::Offline { .. }
        ));
        assert!(matches!(
            fail_to_error(
                Some("x"),
                "host:transport:x",
                "device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set"
            ),
            DeviceError::Unauthorized { .. }
        ));
        assert!(matches!(
            fail_to_error(None, "host:foo", "unknown host service"),
            DeviceError::Protocol(_)
        ));
    }

    /// A scripted adb server on loopback: answers one connection per entry with canned bytes.
    async fn scripted_server(
        replies: Vec<Vec<u8>>,
    ) -> (AdbServer, tokio::task::JoinHandle<Vec<String>>) {
        use tokio::io::AsyncWriteExt;
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let h = tokio::spawn(async move {
            let mut seen = Vec::new();
            for reply in replies {
                let (mut s, _) = l.accept().await.unwrap();
                let mut len = [0u8; 4];
                s.read_exact(&mut len).await.unwrap();
                let n = wire::parse_hex4(&len).unwrap();
                let mut req = vec![0u8; n];
                s.read_exact(&mut req).await.unwrap();
                seen.push(String::from_utf8(req).unwrap());
                s.write_all(&reply).await.unwrap();
            }
            seen
        });
        (
            AdbServer::new(AdbServerAddr {
                host: "127.0.0.1".into(),
                port,
            }),
            h,
        )
    }

    #[tokio::test]
    async fn host_services_over_loopback() {
        let list = "abc\tdevice usb:1-1 model:Pixel_7 transport_id:1\n";
        let (srv, h) = scripted_server(vec![
            b"OKAY00040029".to_vec(),
            format!("OKAY{:04x}{list}", list.len()).into_bytes(),
        ])
        .await;
        assert_eq!(srv.version().await.unwrap(), 0x29);
        let d = srv.devices().await.unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].model.as_deref(), Some("Pixel_7"));
        assert_eq!(h.await.unwrap(), vec!["host:version", "host:devices-l"]);
    }

    #[tokio::test]
    async fn unreachable_server() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let srv = AdbServer::new(AdbServerAddr {
            host: "127.0.0.1".into(),
            port,
        });
        let e = srv.devices().await.unwrap_err();
        assert!(matches!(e, DeviceError::AdbServerUnreachable { .. }), "{e}");
        assert!(e.to_string().contains("adb start-server"));
    }
}
