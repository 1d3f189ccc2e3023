//! Helpers: a raw smart-socket client (no code shared with the sim) and app drivers.

use std::time::Duration;

use phoneagent_sim::{GroundTruth, SimConfig, SimPhoneHandle, SimServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const SERIAL: &str = "virtual-phone-1";

pub async fn start() -> (SimServer, SimPhoneHandle) {
    start_with(SimConfig::default()).await
}

pub async fn start_with(cfg: SimConfig) -> (SimServer, SimPhoneHandle) {
    let first = cfg.devices[0].serial.clone();
    let sim = SimServer::start(cfg, 0).await.expect("sim starts");
    let phone = sim.phone(&first).expect("device exists");
    (sim, phone)
}

pub async fn connect(port: u16) -> TcpStream {
    TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect")
}

pub async fn send(s: &mut TcpStream, req: &str) {
    s.write_all(format!("{:04x}{req}", req.len()).as_bytes())
        .await
        .expect("write request");
}

/// Read OKAY/FAIL; FAIL returns the message as Err.
pub async fn status(s: &mut TcpStream) -> Result<(), String> {
    let mut st = [0u8; 4];
    s.read_exact(&mut st).await.expect("status");
    match &st {
        b"OKAY" => Ok(()),
        b"FAIL" => Err(read_hex_string(s).await),
        other => panic!("bad status {other:?}"),
    }
}

pub async fn read_hex_string(s: &mut TcpStream) -> String {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.expect("len");
    let n = usize::from_str_radix(std::str::from_utf8(&len).unwrap(), 16).unwrap();
    let mut buf = vec![0u8; n];
    s.read_exact(&mut buf).await.expect("payload");
    String::from_utf8(buf).unwrap()
}

/// A host query answered with OKAY + hex4 + payload.
pub async fn host_query(port: u16, req: &str) -> Result<String, String> {
    let mut s = connect(port).await;
    send(&mut s, req).await;
    status(&mut s).await?;
    Ok(read_hex_string(&mut s).await)
}

/// Open a device service on `serial` through `host:transport:`.
pub async fn open_service(port: u16, serial: &str, service: &str) -> Result<TcpStream, String> {
    let mut s = connect(port).await;
    send(&mut s, &format!("host:transport:{serial}")).await;
    status(&mut s).await?;
    send(&mut s, service).await;
    status(&mut s).await?;
    Ok(s)
}

#[derive(Debug, Default)]
pub struct ShellResult {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub code: Option<u8>,
}

impl ShellResult {
    pub fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn err(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// `shell,v2,raw:CMD`, decoding shell-protocol packets.
pub async fn shell_v2(port: u16, serial: &str, cmd: &str) -> Result<ShellResult, String> {
    let mut s = open_service(port, serial, &format!("shell,v2,raw:{cmd}")).await?;
    let mut r = ShellResult::default();
    loop {
        let mut head = [0u8; 5];
        if s.read_exact(&mut head).await.is_err() {
            break;
        }
        let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut data = vec![0u8; len];
        s.read_exact(&mut data).await.expect("packet data");
        match head[0] {
            1 => r.stdout.extend(data),
            2 => r.stderr.extend(data),
            3 => {
                r.code = data.first().copied();
                break;
            }
            other => panic!("unexpected packet id {other}"),
        }
    }
    Ok(r)
}

/// `shell,v2` that must succeed with exit 0.
pub async fn sh(port: u16, cmd: &str) -> String {
    let r = shell_v2(port, SERIAL, cmd).await.expect("transport");
    assert_eq!(r.code, Some(0), "`{cmd}` failed: {}", r.err());
    r.out()
}

/// A raw service (`exec:` / `shell:`): everything until the server closes.
pub async fn raw_service(port: u16, serial: &str, service: &str) -> Result<Vec<u8>, String> {
    let mut s = open_service(port, serial, service).await?;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .expect("service closes in time");
    Ok(out)
}

pub fn decode_png(bytes: &[u8]) -> image::RgbaImage {
    image::load_from_memory_with_format(bytes, image::ImageFormat::Png)
        .expect("valid PNG")
        .to_rgba8()
}

/// Tap the centre of the visible element `id` through the ADB protocol.
pub async fn tap(port: u16, phone: &SimPhoneHandle, id: &str) -> GroundTruth {
    let gt = phone.ground_truth();
    let el = gt.element(id).unwrap_or_else(|| {
        panic!(
            "element {id} not visible on {}: {:?}",
            gt.current_screen,
            ids(&gt)
        )
    });
    let (x, y) = el.center();
    sh(port, &format!("input tap {x} {y}")).await;
    phone.ground_truth()
}

pub fn ids(gt: &GroundTruth) -> Vec<String> {
    gt.elements.iter().map(|e| e.id.clone()).collect()
}

/// Type any Unicode text with the ADB Keyboard broadcast (enabling it first).
pub async fn type_b64(port: u16, text: &str) {
    use base64::Engine as _;
    sh(port, &format!("ime enable {}", phoneagent_sim::ADB_IME)).await;
    sh(port, &format!("ime set {}", phoneagent_sim::ADB_IME)).await;
    let b64 = base64::engine::general_purpose::STANDARD.encode(text);
    let out = sh(
        port,
        &format!("am broadcast -a ADB_INPUT_B64 --es msg {b64}"),
    )
    .await;
    assert!(out.contains("Broadcast completed: result=0"), "{out}");
}
