//! The virtual phone's **device-side adbd face** (what a phone speaks over USB bulk endpoints
//! and on `adb tcpip 5555`), on a loopback TCP port: ADB messages (24-byte header with
//! checksum and magic), the CNXN/AUTH handshake with RSA token signatures verified against the
//! keys the phone trusts (an unknown key shows the "Allow USB debugging?" prompt, answered per
//! [`KeyPrompt`]), and streams (OPEN/OKAY/WRTE/CLSE, several at once, each with its own flow control) serving the same
//! `shell:`, `shell,v2,…:` and `exec:` services as the adb-server face — through the same
//! command handling (`adb::parse_service`, `adb::run_command`, `adb::encode_output`).
//!
//! Written independently of `phoneagent-device`'s host side, so the two check each other.
//! The disconnect fault closes the TCP connection (the phone vanished) and refuses new ones
//! until it is back.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use base64::Engine;
use rsa::rand_core::{OsRng, RngCore};
use rsa::{BigUint, Pkcs1v15Sign, RsaPublicKey};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::adb;
use crate::error::{Result, SimError};
use crate::phone::AfterService;
use crate::server::{Shared, Slot};

const A_CNXN: u32 = 0x4e58_4e43;
const A_AUTH: u32 = 0x4854_5541;
const A_OPEN: u32 = 0x4e45_504f;
const A_OKAY: u32 = 0x5941_4b4f;
const A_CLSE: u32 = 0x4553_4c43;
const A_WRTE: u32 = 0x4554_5257;
const AUTH_TOKEN: u32 = 1;
const AUTH_SIGNATURE: u32 = 2;
const AUTH_RSAPUBLICKEY: u32 = 3;
const A_VERSION: u32 = 0x0100_0001;
/// Largest message we accept from the host.
const MAX_IN: u32 = 1024 * 1024;

/// What the user does when the phone shows "Allow USB debugging?" for an unknown key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyPrompt {
    /// Taps "Allow" (with "Always allow from this computer"): the key is trusted from now on.
    #[default]
    Accept,
    /// Dismisses the prompt: the connection stays unauthorized (no CNXN is ever sent).
    Refuse,
}

/// Configuration of the adbd face.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdbdConfig {
    /// Which device answers (default: the server's first device).
    pub serial: Option<String>,
    /// Public keys the phone already trusts, as adb writes them (`BASE64 user@host`).
    pub trusted_keys: Vec<String>,
    /// The answer to the prompt for an unknown key.
    pub on_unknown_key: KeyPrompt,
    /// Largest payload the phone announces in CNXN (bytes; adbd uses 1 MiB, older ones 256 KiB
    /// or 4 KiB). Output is sent in WRTE messages of at most this size.
    pub max_payload: u32,
}

impl Default for AdbdConfig {
    fn default() -> Self {
        Self {
            serial: None,
            trusted_keys: Vec::new(),
            on_unknown_key: KeyPrompt::Accept,
            max_payload: 256 * 1024,
        }
    }
}

struct TrustedKey {
    line: String,
    key: RsaPublicKey,
}

struct AdbdState {
    trusted: Mutex<Vec<TrustedKey>>,
    prompt: Mutex<KeyPrompt>,
    prompts: AtomicU64,
    authorized: AtomicU64,
    max_payload: u32,
}

impl AdbdState {
    fn prompt(&self) -> KeyPrompt {
        *self.prompt.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn verify(&self, token: &[u8], sig: &[u8]) -> bool {
        let trusted = self.trusted.lock().unwrap_or_else(|e| e.into_inner());
        trusted.iter().any(|k| {
            k.key
                .verify(Pkcs1v15Sign::new::<sha1::Sha1>(), token, sig)
                .is_ok()
        })
    }

    fn trust(&self, line: &str) -> std::result::Result<(), String> {
        let key = decode_android_pubkey(line)?;
        let mut t = self.trusted.lock().unwrap_or_else(|e| e.into_inner());
        if !t.iter().any(|k| k.key == key) {
            t.push(TrustedKey {
                line: line.trim_end_matches('\0').trim().to_owned(),
                key,
            });
        }
        Ok(())
    }
}

/// Decode Android's `RSAPublicKey` struct (base64, optionally followed by ` user@host`):
/// u32 words (64), u32 n0inv, modulus LE (256 bytes), rr LE (256 bytes), u32 exponent.
fn decode_android_pubkey(line: &str) -> std::result::Result<RsaPublicKey, String> {
    let b64 = line
        .trim_end_matches('\0')
        .split_whitespace()
        .next()
        .ok_or("empty public key")?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| format!("public key is not base64: {e}"))?;
    if raw.len() != 524 || raw[0..4] != 64u32.to_le_bytes() {
        return Err(format!(
            "public key is {} bytes, not Android's 524-byte RSA-2048 struct",
            raw.len()
        ));
    }
    let n = BigUint::from_bytes_le(&raw[8..264]);
    let e = u32::from_le_bytes([raw[520], raw[521], raw[522], raw[523]]);
    RsaPublicKey::new(n, BigUint::from(e)).map_err(|e| format!("bad RSA public key: {e}"))
}

/// A running adbd face. Stops with its [`crate::SimServer`].
#[derive(Clone)]
pub struct AdbdHandle {
    addr: SocketAddr,
    serial: String,
    state: Arc<AdbdState>,
}

impl std::fmt::Debug for AdbdHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdbdHandle")
            .field("addr", &self.addr)
            .field("serial", &self.serial)
            .finish_non_exhaustive()
    }
}

impl AdbdHandle {
    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port (what `--direct 127.0.0.1:PORT` names).
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The device serial behind it.
    pub fn serial(&self) -> &str {
        &self.serial
    }

    /// Change the answer to future prompts.
    pub fn set_prompt(&self, p: KeyPrompt) {
        *self.state.prompt.lock().unwrap_or_else(|e| e.into_inner()) = p;
    }

    /// How many times the "Allow USB debugging?" prompt was shown.
    pub fn prompts_shown(&self) -> u64 {
        self.state.prompts.load(Ordering::SeqCst)
    }

    /// How many connections were authorized (signature or accepted prompt).
    pub fn authorized_connections(&self) -> u64 {
        self.state.authorized.load(Ordering::SeqCst)
    }

    /// Public keys the phone trusts now (`BASE64 user@host`).
    pub fn trusted_keys(&self) -> Vec<String> {
        self.state
            .trusted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|k| k.line.clone())
            .collect()
    }

    /// "Revoke USB debugging authorizations".
    pub fn revoke_all(&self) {
        self.state
            .trusted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

/// Bind 127.0.0.1:`port` and serve the adbd face of one device of `shared`.
pub(crate) async fn start(shared: Arc<Shared>, cfg: AdbdConfig, port: u16) -> Result<AdbdHandle> {
    let slot = match &cfg.serial {
        Some(s) => shared
            .slot(s)
            .cloned()
            .ok_or_else(|| SimError::Config(format!("adbd: no device with serial {s}")))?,
        None => shared
            .devices
            .first()
            .cloned()
            .ok_or_else(|| SimError::Config("adbd: the server has no device".into()))?,
    };
    if cfg.max_payload < 64 {
        return Err(SimError::Config(format!(
            "adbd: max_payload {} is too small (at least 64 bytes)",
            cfg.max_payload
        )));
    }
    let state = Arc::new(AdbdState {
        trusted: Mutex::new(Vec::new()),
        prompt: Mutex::new(cfg.on_unknown_key),
        prompts: AtomicU64::new(0),
        authorized: AtomicU64::new(0),
        max_payload: cfg.max_payload,
    });
    for k in &cfg.trusted_keys {
        state
            .trust(k)
            .map_err(|e| SimError::Config(format!("adbd: trusted key: {e}")))?;
    }
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|source| SimError::Bind { port, source })?;
    let addr = listener.local_addr()?;
    let (sh, st, sl) = (shared.clone(), state.clone(), slot.clone());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = sh.shutdown.cancelled() => break,
                acc = listener.accept() => match acc {
                    Ok((stream, _)) => {
                        let _ = stream.set_nodelay(true);
                        let (sh2, st2, sl2) = (sh.clone(), st.clone(), sl.clone());
                        tokio::spawn(async move {
                            if let Err(e) = serve(stream, sh2, sl2, st2).await {
                                tracing::debug!("adbd connection ended: {e}");
                            }
                        });
                    }
                    Err(e) => {
                        tracing::warn!("adbd accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
        }
    });
    tracing::info!(serial = %slot.serial, "virtual phone adbd listening on {addr}");
    Ok(AdbdHandle {
        addr,
        serial: slot.serial.clone(),
        state,
    })
}

struct Msg {
    command: u32,
    arg0: u32,
    arg1: u32,
    data: Vec<u8>,
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

async fn read_msg<R: AsyncRead + Unpin>(s: &mut R) -> io::Result<Msg> {
    let mut h = [0u8; 24];
    s.read_exact(&mut h).await?;
    let w = |i: usize| u32::from_le_bytes([h[i * 4], h[i * 4 + 1], h[i * 4 + 2], h[i * 4 + 3]]);
    let (command, arg0, arg1, len, check, magic) = (w(0), w(1), w(2), w(3), w(4), w(5));
    if magic != command ^ 0xffff_ffff {
        return Err(bad(format!("bad magic for command 0x{command:08x}")));
    }
    if len > MAX_IN {
        return Err(bad(format!("message of {len} bytes is too long")));
    }
    let mut data = vec![0u8; len as usize];
    s.read_exact(&mut data).await?;
    let sum = data.iter().fold(0u32, |a, b| a.wrapping_add(u32::from(*b)));
    if check != 0 && check != sum {
        return Err(bad(format!(
            "checksum mismatch: 0x{sum:08x} != 0x{check:08x}"
        )));
    }
    Ok(Msg {
        command,
        arg0,
        arg1,
        data,
    })
}

/// One message, header and payload, ready to write.
fn encode(command: u32, arg0: u32, arg1: u32, data: &[u8]) -> Vec<u8> {
    let sum = data.iter().fold(0u32, |a, b| a.wrapping_add(u32::from(*b)));
    let mut buf = Vec::with_capacity(24 + data.len());
    for v in [
        command,
        arg0,
        arg1,
        data.len() as u32,
        sum,
        command ^ 0xffff_ffff,
    ] {
        buf.extend_from_slice(&v.to_le_bytes());
    }
    buf.extend_from_slice(data);
    buf
}

async fn send(
    s: &mut TcpStream,
    command: u32,
    arg0: u32,
    arg1: u32,
    data: &[u8],
) -> io::Result<()> {
    s.write_all(&encode(command, arg0, arg1, data)).await
}

fn new_token() -> [u8; 20] {
    let mut t = [0u8; 20];
    OsRng.fill_bytes(&mut t);
    t
}

/// One host connection: handshake, then any number of concurrent streams, until the host closes,
/// the server stops, or the device vanishes (disconnect fault).
async fn serve(
    mut s: TcpStream,
    shared: Arc<Shared>,
    slot: Arc<Slot>,
    st: Arc<AdbdState>,
) -> io::Result<()> {
    let link = {
        let mut p = slot.lock();
        if !p.link_up(Instant::now()) {
            // The phone is away: nothing answers.
            return Ok(());
        }
        p.link.clone()
    };
    let shutdown = shared.shutdown.clone();
    tokio::select! {
        r = session(&mut s, &shared, &slot, &st) => r,
        _ = link.cancelled() => Ok(()),
        _ = shutdown.cancelled() => Ok(()),
    }
}

async fn session(
    s: &mut TcpStream,
    shared: &Arc<Shared>,
    slot: &Arc<Slot>,
    st: &AdbdState,
) -> io::Result<()> {
    let hello = read_msg(s).await?;
    if hello.command != A_CNXN {
        return Err(bad(format!(
            "expected CNXN first, got 0x{:08x}",
            hello.command
        )));
    }
    let max = hello.arg1.clamp(64, st.max_payload);
    // AUTH: token → signature (checked against trusted keys) or public key (the prompt).
    let mut token = new_token();
    send(s, A_AUTH, AUTH_TOKEN, 0, &token).await?;
    loop {
        let m = read_msg(s).await?;
        if m.command != A_AUTH {
            continue;
        }
        match m.arg0 {
            AUTH_SIGNATURE => {
                if st.verify(&token, &m.data) {
                    break;
                }
                token = new_token();
                send(s, A_AUTH, AUTH_TOKEN, 0, &token).await?;
            }
            AUTH_RSAPUBLICKEY => {
                st.prompts.fetch_add(1, Ordering::SeqCst);
                let line = String::from_utf8_lossy(&m.data).into_owned();
                match st.prompt() {
                    KeyPrompt::Accept => match st.trust(&line) {
                        Ok(()) => break,
                        Err(e) => tracing::warn!("adbd: unusable public key: {e}"),
                    },
                    KeyPrompt::Refuse => {
                        tracing::info!("adbd: the user dismissed the USB debugging prompt");
                    }
                }
            }
            _ => {}
        }
    }
    st.authorized.fetch_add(1, Ordering::SeqCst);
    let banner = format!(
        "device::ro.product.name=sim;ro.product.model=PhoneAgent_Virtual;ro.product.device=sim;features={}",
        adb::DEVICE_FEATURES
    );
    send(s, A_CNXN, A_VERSION, st.max_payload, banner.as_bytes()).await?;
    streams(s, shared, slot, max).await
}

/// What the connection's reader tells one open stream.
struct StreamCtl {
    /// The host's OKAY for our last WRTE (flow control, per stream).
    acks: mpsc::UnboundedSender<()>,
    /// Cancelled by the host's CLSE.
    closed: CancellationToken,
}

type Streams = Arc<Mutex<HashMap<u32, StreamCtl>>>;

/// The multiplexed part of a connection (issue #12 item 6): every OPEN becomes its own task
/// with its own local id, its own OKAY flow control and its own cancellation, so several
/// streams run at once and their WRTEs interleave on the wire, as adbd does. One writer
/// serializes the messages; the reader routes OKAY/CLSE/WRTE by our local id (`arg1`).
async fn streams(
    s: &mut TcpStream,
    shared: &Arc<Shared>,
    slot: &Arc<Slot>,
    max: u32,
) -> io::Result<()> {
    let (mut rd, mut wr) = s.split();
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let table: Streams = Arc::new(Mutex::new(HashMap::new()));
    // Cancelled when a stream must end the connection (the device vanished); dropping the
    // JoinSet when the connection ends aborts every stream still running.
    let end = CancellationToken::new();
    let mut tasks = JoinSet::new();
    // Set by a stream whose service fires the disconnect fault: the phone vanishes once the
    // messages already queued (that service's output and CLSE) are on the wire.
    let vanish = Arc::new(AtomicBool::new(false));
    let writer = async {
        loop {
            // Each message is written whole: only the waits are raced.
            tokio::select! {
                biased;
                buf = out_rx.recv() => match buf {
                    Some(buf) => wr.write_all(&buf).await?,
                    None => return io::Result::Ok(()),
                },
                _ = end.cancelled() => {
                    while let Ok(buf) = out_rx.try_recv() {
                        wr.write_all(&buf).await?;
                    }
                    wr.flush().await?;
                    return Ok(());
                }
            }
        }
    };
    let reader = async {
        let mut next_id: u32 = 1;
        loop {
            let m = read_msg(&mut rd).await?;
            match m.command {
                A_OPEN => {
                    let local = next_id;
                    next_id = next_id.wrapping_add(1).max(1);
                    let service = String::from_utf8_lossy(&m.data)
                        .trim_end_matches('\0')
                        .to_owned();
                    let (acks, rx) = mpsc::unbounded_channel();
                    let closed = CancellationToken::new();
                    lock(&table).insert(
                        local,
                        StreamCtl {
                            acks,
                            closed: closed.clone(),
                        },
                    );
                    let ctx = StreamCtx {
                        slot: slot.clone(),
                        out: out_tx.clone(),
                        local,
                        remote: m.arg0,
                        max,
                        acks: rx,
                        closed,
                        end: end.clone(),
                        vanish: vanish.clone(),
                    };
                    let table2 = table.clone();
                    tasks.spawn(async move {
                        if let Err(e) = ctx.serve(&service).await {
                            tracing::debug!("adbd stream {local} ({service:?}) ended: {e}");
                        }
                        lock(&table2).remove(&local);
                    });
                }
                A_OKAY => {
                    if let Some(c) = lock(&table).get(&m.arg1) {
                        let _ = c.acks.send(());
                    }
                }
                A_CLSE => {
                    if let Some(c) = lock(&table).remove(&m.arg1) {
                        c.closed.cancel();
                    }
                }
                // Host writes (stdin) are not used: acknowledged and dropped.
                A_WRTE => {
                    let _ = out_tx.send(encode(A_OKAY, m.arg1, m.arg0, &[]));
                }
                A_CNXN => return Err(bad("CNXN again on an open connection".into())),
                _ => {}
            }
        }
    };
    let r = tokio::select! {
        r = reader => r,
        r = writer => r,
    };
    drop(tasks);
    if vanish.load(Ordering::SeqCst) {
        let away = slot.lock().disconnect(Instant::now());
        shared.after_disconnect(away);
    }
    r
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One open stream.
struct StreamCtx {
    slot: Arc<Slot>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    local: u32,
    remote: u32,
    max: u32,
    acks: mpsc::UnboundedReceiver<()>,
    closed: CancellationToken,
    end: CancellationToken,
    vanish: Arc<AtomicBool>,
}

impl StreamCtx {
    fn send(&self, command: u32, arg0: u32, data: &[u8]) -> io::Result<()> {
        self.out
            .send(encode(command, arg0, self.remote, data))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "connection closed"))
    }

    async fn serve(mut self, service: &str) -> io::Result<()> {
        let (mode, cmd) = match adb::parse_service(service) {
            Ok(x) => x,
            Err(msg) => {
                tracing::debug!("adbd refuses {service:?}: {msg}");
                return self.send(A_CLSE, 0, &[]);
            }
        };
        let link = self.slot.lock().link.clone();
        let Some((after, delay)) = adb::begin_service(&self.slot, &link, &cmd) else {
            self.end.cancel();
            return Ok(());
        };
        let local = self.local;
        self.send(A_OKAY, local, &[])?;
        let out = tokio::select! {
            r = adb::run_command(&self.slot, cmd, delay) => r?,
            _ = self.closed.cancelled() => return Ok(()),
        };
        let bytes = adb::encode_output(mode, &out);
        for chunk in bytes.chunks(self.max as usize) {
            self.send(A_WRTE, local, chunk)?;
            // Flow control: the next WRTE of this stream only after the host's OKAY.
            tokio::select! {
                a = self.acks.recv() => if a.is_none() { return Ok(()) },
                _ = self.closed.cancelled() => break,
            }
        }
        self.send(A_CLSE, local, &[])?;
        if after == AfterService::Disconnect {
            self.vanish.store(true, Ordering::SeqCst);
            self.end.cancel();
        }
        Ok(())
    }
}
