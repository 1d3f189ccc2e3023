//! The ADB server ("smart socket") protocol, as spoken by host adb clients to 127.0.0.1:5037:
//! `hex4 length + service` requests, `OKAY`/`FAIL` replies, host services, transport switches,
//! and the device services `shell:` (v1), `shell,v2,…:` (shell protocol), `exec:` and
//! `framebuffer:`. Plus the sim-only `host:sim-state|sim-fault|sim-reset` services.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::config::SimDeviceState;
use crate::phone::AfterService;
use crate::server::{Shared, Slot};
use crate::shell::{self, ShellOutput};
use crate::truth::Faults;

/// adb server protocol version the stock 1.0.41 client expects.
const ADB_SERVER_VERSION: u32 = 41;
/// Features the virtual device advertises.
pub(crate) const DEVICE_FEATURES: &str = "shell_v2,cmd";
/// Features of the host side.
const HOST_FEATURES: &str = "shell_v2,cmd,push_sync";
/// Shell protocol packet ids.
const ID_STDIN: u8 = 0;
const ID_STDOUT: u8 = 1;
const ID_STDERR: u8 = 2;
const ID_EXIT: u8 = 3;
const ID_CLOSE_STDIN: u8 = 4;
/// Largest shell-protocol payload we send in one packet.
const CHUNK: usize = 16 * 1024;

async fn read_request(s: &mut TcpStream) -> io::Result<Option<String>> {
    let mut len = [0u8; 4];
    match s.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = std::str::from_utf8(&len)
        .ok()
        .and_then(|h| usize::from_str_radix(h, 16).ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad request length"))?;
    let mut buf = vec![0u8; len];
    s.read_exact(&mut buf).await?;
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "request is not UTF-8"))
}

async fn okay(s: &mut TcpStream) -> io::Result<()> {
    s.write_all(b"OKAY").await
}

async fn fail(s: &mut TcpStream, msg: &str) -> io::Result<()> {
    let mut v = b"FAIL".to_vec();
    v.extend_from_slice(format!("{:04x}", msg.len()).as_bytes());
    v.extend_from_slice(msg.as_bytes());
    s.write_all(&v).await
}

async fn okay_data(s: &mut TcpStream, data: &str) -> io::Result<()> {
    let mut v = b"OKAY".to_vec();
    v.extend_from_slice(format!("{:04x}", data.len()).as_bytes());
    v.extend_from_slice(data.as_bytes());
    s.write_all(&v).await
}

/// Half-close and wait (briefly) for the client to close, so our last bytes are not lost to a
/// reset caused by unread client data.
pub(crate) async fn finish(mut s: TcpStream) {
    let _ = s.flush().await;
    let _ = s.shutdown().await;
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            match s.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
}

/// Which device a host request targets.
enum Target {
    Any,
    Usb,
    Local,
    Serial(String),
    Id(u64),
}

fn split_host(shared: &Shared, req: &str) -> Option<(Target, String)> {
    if let Some(r) = req.strip_prefix("host:") {
        return Some((Target::Any, r.to_owned()));
    }
    if let Some(r) = req.strip_prefix("host-usb:") {
        return Some((Target::Usb, r.to_owned()));
    }
    if let Some(r) = req.strip_prefix("host-local:") {
        return Some((Target::Local, r.to_owned()));
    }
    if let Some(r) = req.strip_prefix("host-transport-id:") {
        let (id, svc) = r.split_once(':')?;
        return Some((Target::Id(id.parse().ok()?), svc.to_owned()));
    }
    if let Some(r) = req.strip_prefix("host-serial:") {
        for d in &shared.devices {
            if let Some(svc) = r.strip_prefix(&format!("{}:", d.serial)) {
                return Some((Target::Serial(d.serial.clone()), svc.to_owned()));
            }
        }
        // Unknown serial: it may itself contain ':' (host:port); the service is the last part.
        let (serial, svc) = r.rsplit_once(':')?;
        return Some((Target::Serial(serial.to_owned()), svc.to_owned()));
    }
    None
}

/// Resolve a target to a usable device, or the adb error message.
fn resolve(shared: &Shared, t: &Target) -> Result<Arc<Slot>, String> {
    let now = Instant::now();
    let slot = match t {
        Target::Serial(s) => match shared.slot(s) {
            Some(slot) if slot.lock().link_up(now) => slot.clone(),
            _ => return Err(format!("device '{s}' not found")),
        },
        Target::Id(id) => match shared.devices.iter().find(|d| d.transport_id == *id) {
            Some(slot) if slot.lock().link_up(now) => slot.clone(),
            _ => return Err(format!("no device with transport id '{id}'")),
        },
        Target::Local => return Err("no emulators found".to_owned()),
        Target::Any | Target::Usb => {
            let up: Vec<&Arc<Slot>> = shared
                .devices
                .iter()
                .filter(|d| d.lock().link_up(now))
                .collect();
            match up.as_slice() {
                [] => return Err("no devices/emulators found".to_owned()),
                [one] => (*one).clone(),
                _ => return Err("more than one device/emulator".to_owned()),
            }
        }
    };
    match slot.listed {
        SimDeviceState::Device => Ok(slot),
        SimDeviceState::Unauthorized => Err("device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set\nTry 'adb kill-server' if that seems wrong.\nOtherwise check for a confirmation dialog on your device.".to_owned()),
        SimDeviceState::Offline => Err("device offline".to_owned()),
    }
}

fn device_list(shared: &Shared, long: bool) -> String {
    let now = Instant::now();
    let mut out = String::new();
    for d in &shared.devices {
        if !d.lock().link_up(now) {
            continue;
        }
        let st = d.listed.as_adb_str();
        if long {
            if d.listed == SimDeviceState::Device {
                out.push_str(&format!(
                    "{:<22} {} product:sim model:PhoneAgent_Virtual device:sim transport_id:{}\n",
                    d.serial, st, d.transport_id
                ));
            } else {
                out.push_str(&format!(
                    "{:<22} {} transport_id:{}\n",
                    d.serial, st, d.transport_id
                ));
            }
        } else {
            out.push_str(&format!("{}\t{}\n", d.serial, st));
        }
    }
    out
}

/// Serve one client connection until it closes.
pub(crate) async fn serve_connection(s: TcpStream, shared: Arc<Shared>) -> io::Result<()> {
    let shutdown = shared.shutdown.clone();
    tokio::select! {
        r = connection(s, shared) => r,
        _ = shutdown.cancelled() => Ok(()),
    }
}

async fn connection(mut s: TcpStream, shared: Arc<Shared>) -> io::Result<()> {
    let mut transport: Option<(Arc<Slot>, CancellationToken)> = None;
    loop {
        let req = match &transport {
            None => read_request(&mut s).await?,
            Some((_, link)) => tokio::select! {
                r = read_request(&mut s) => r?,
                _ = link.cancelled() => return Ok(()),
            },
        };
        let Some(req) = req else {
            return Ok(());
        };
        tracing::debug!(request = %req, "adb request");
        if let Some((slot, link)) = transport.take() {
            // Device service on the selected transport; the connection ends with it.
            return device_service(s, &shared, slot, link, &req).await;
        }
        let Some((target, svc)) = split_host(&shared, &req) else {
            fail(&mut s, &format!("unknown host service '{req}'")).await?;
            finish(s).await;
            return Ok(());
        };
        // Host queries end with the server closing the socket (the client waits for it).
        match host_service(&mut s, &shared, target, &svc).await? {
            HostOutcome::Continue | HostOutcome::Close => {
                finish(s).await;
                return Ok(());
            }
            HostOutcome::Transport(slot) => {
                let link = slot.lock().link.clone();
                transport = Some((slot, link));
            }
        }
    }
}

enum HostOutcome {
    Continue,
    Close,
    Transport(Arc<Slot>),
}

async fn host_service(
    s: &mut TcpStream,
    shared: &Arc<Shared>,
    target: Target,
    svc: &str,
) -> io::Result<HostOutcome> {
    match svc {
        "version" => okay_data(s, &format!("{ADB_SERVER_VERSION:04x}")).await?,
        "devices" => okay_data(s, &device_list(shared, false)).await?,
        "devices-l" => okay_data(s, &device_list(shared, true)).await?,
        "track-devices" | "track-devices-l" => {
            let long = svc.ends_with("-l");
            okay(s).await?;
            let mut rx = shared.changed.subscribe();
            let mut last = String::new();
            let mut first = true;
            loop {
                let list = device_list(shared, long);
                if first || list != last {
                    s.write_all(format!("{:04x}{list}", list.len()).as_bytes())
                        .await?;
                    last = list;
                    first = false;
                }
                let mut probe = [0u8; 1];
                tokio::select! {
                    r = rx.changed() => if r.is_err() { return Ok(HostOutcome::Close) },
                    r = s.read(&mut probe) => match r {
                        Ok(0) | Err(_) => return Ok(HostOutcome::Close),
                        Ok(_) => {}
                    },
                }
            }
        }
        "host-features" => okay_data(s, HOST_FEATURES).await?,
        "features" => match resolve(shared, &target) {
            Ok(_) => okay_data(s, DEVICE_FEATURES).await?,
            Err(e) => fail(s, &e).await?,
        },
        "get-state" => {
            // get-state reports unauthorized/offline instead of failing.
            let now = Instant::now();
            let slot = match &target {
                Target::Serial(ser) => shared.slot(ser).filter(|d| d.lock().link_up(now)).cloned(),
                _ => resolve(shared, &target).ok(),
            };
            match slot {
                Some(d) => okay_data(s, d.listed.as_adb_str()).await?,
                None => match resolve(shared, &target) {
                    Ok(d) => okay_data(s, d.listed.as_adb_str()).await?,
                    Err(e) => fail(s, &e).await?,
                },
            }
        }
        "get-serialno" => match resolve(shared, &target) {
            Ok(d) => okay_data(s, &d.serial).await?,
            Err(e) => fail(s, &e).await?,
        },
        "get-devpath" => match resolve(shared, &target) {
            Ok(_) => okay_data(s, "usb:1-1").await?,
            Err(e) => fail(s, &e).await?,
        },
        "kill" => {
            okay(s).await?;
            if shared.allow_kill {
                shared.shutdown.cancel();
            }
            return Ok(HostOutcome::Close);
        }
        _ if svc.starts_with("wait-for-") => {
            // wait-for-<transport>-<state>: OKAY now, OKAY again once it holds.
            okay(s).await?;
            let want = svc.rsplit('-').next().unwrap_or("device");
            let mut rx = shared.changed.subscribe();
            loop {
                let ok = match resolve(shared, &target) {
                    Ok(d) => want == "device" || want == d.listed.as_adb_str(),
                    Err(_) => want == "disconnect",
                };
                if ok {
                    okay(s).await?;
                    return Ok(HostOutcome::Close);
                }
                tokio::select! {
                    _ = rx.changed() => {}
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        }
        _ if svc.starts_with("transport") => {
            let t = match svc {
                "transport-any" => Target::Any,
                "transport-usb" => Target::Usb,
                "transport-local" => Target::Local,
                x if x.starts_with("transport:") => {
                    Target::Serial(x["transport:".len()..].to_owned())
                }
                x if x.starts_with("transport-id:") => match x["transport-id:".len()..].parse() {
                    Ok(id) => Target::Id(id),
                    Err(_) => {
                        fail(s, "bad transport id").await?;
                        return Ok(HostOutcome::Continue);
                    }
                },
                _ => {
                    fail(s, &format!("unknown host service '{svc}'")).await?;
                    return Ok(HostOutcome::Continue);
                }
            };
            return switch(s, shared, t, false).await;
        }
        _ if svc.starts_with("tport:") => {
            let t = match &svc["tport:".len()..] {
                "any" => Target::Any,
                "usb" => Target::Usb,
                "local" => Target::Local,
                x if x.starts_with("serial:") => Target::Serial(x["serial:".len()..].to_owned()),
                x if x.starts_with("transport-id:") => match x["transport-id:".len()..].parse() {
                    Ok(id) => Target::Id(id),
                    Err(_) => {
                        fail(s, "bad transport id").await?;
                        return Ok(HostOutcome::Continue);
                    }
                },
                _ => {
                    fail(s, &format!("unknown host service '{svc}'")).await?;
                    return Ok(HostOutcome::Continue);
                }
            };
            return switch(s, shared, t, true).await;
        }
        _ if svc.starts_with("sim-") => return sim_service(s, shared, svc).await,
        _ => fail(s, &format!("unknown host service '{svc}'")).await?,
    }
    Ok(HostOutcome::Continue)
}

async fn switch(
    s: &mut TcpStream,
    shared: &Arc<Shared>,
    t: Target,
    tport: bool,
) -> io::Result<HostOutcome> {
    match resolve(shared, &t) {
        Ok(slot) => {
            okay(s).await?;
            if tport {
                s.write_all(&slot.transport_id.to_le_bytes()).await?;
            }
            Ok(HostOutcome::Transport(slot))
        }
        Err(e) => {
            fail(s, &e).await?;
            Ok(HostOutcome::Close)
        }
    }
}

/// `sim-state[:SERIAL]`, `sim-fault[:SERIAL]:JSON`, `sim-reset[:SERIAL][:SCENARIO]`.
async fn sim_service(
    s: &mut TcpStream,
    shared: &Arc<Shared>,
    svc: &str,
) -> io::Result<HostOutcome> {
    let (verb, rest) = svc.split_once(':').unwrap_or((svc, ""));
    // Pick the device: an explicit serial prefix, or the only device.
    let mut slot = None;
    let mut arg = rest;
    for d in &shared.devices {
        if rest == d.serial {
            slot = Some(d.clone());
            arg = "";
        } else if let Some(a) = rest.strip_prefix(&format!("{}:", d.serial)) {
            slot = Some(d.clone());
            arg = a;
        }
    }
    let slot = match slot {
        Some(s) => s,
        // One device: the serial may be left out (`host:sim-state`, `host:sim-fault:JSON`).
        None if shared.devices.len() == 1 && (verb != "sim-state" || rest.is_empty()) => {
            shared.devices[0].clone()
        }
        None => {
            let serials: Vec<&str> = shared.devices.iter().map(|d| d.serial.as_str()).collect();
            fail(
                s,
                &format!(
                    "{verb}: name one of the devices ({}) as `host:{verb}:SERIAL…`",
                    serials.join(", ")
                ),
            )
            .await?;
            return Ok(HostOutcome::Close);
        }
    };
    match verb {
        "sim-state" => {
            let gt = slot.lock().ground_truth(Instant::now());
            match serde_json::to_vec(&gt) {
                Ok(json) => {
                    okay(s).await?;
                    s.write_all(&json).await?;
                }
                Err(e) => fail(s, &format!("cannot serialize ground truth: {e}")).await?,
            }
            return Ok(HostOutcome::Close);
        }
        "sim-fault" => {
            match serde_json::from_str::<Faults>(if arg.is_empty() { "{}" } else { arg }) {
                Ok(f) => {
                    let fired = slot.lock().set_faults(f, Instant::now());
                    match fired {
                        Some(away) => shared.after_disconnect(away),
                        None => shared.notify(),
                    }
                    okay(s).await?;
                }
                Err(e) => fail(s, &format!("sim-fault: bad faults JSON: {e}")).await?,
            }
        }
        "sim-reset" => {
            let scenario = if arg.is_empty() { "home" } else { arg };
            let r = slot.lock().reset(scenario, Instant::now());
            match r {
                Ok(()) => {
                    shared.notify();
                    okay(s).await?;
                }
                Err(e) => fail(s, &e.to_string()).await?,
            }
        }
        _ => {
            fail(
                s,
                &format!("unknown sim service '{verb}' (sim-state, sim-fault, sim-reset)"),
            )
            .await?
        }
    }
    Ok(HostOutcome::Continue)
}

/// How a device service delivers its output.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// `shell:` — stdout and stderr on the raw stream.
    V1,
    /// `shell,v2,…:` — shell protocol packets with the exit code.
    V2,
    /// `exec:` — the raw stream, no exit code; stderr is merged into it as on a real phone
    /// (adbd's raw subprocess shares one socket for stdout and stderr).
    Exec,
}

/// Parse a `shell:` / `shell,v2,…:` / `exec:` service into its mode and command; `Err` is the
/// refusal message. (`framebuffer:` is handled apart.)
pub(crate) fn parse_service(req: &str) -> Result<(Mode, String), String> {
    let (mode, cmd) = if let Some(c) = req.strip_prefix("exec:") {
        (Mode::Exec, c.to_owned())
    } else if req.starts_with("shell") && req.contains(':') {
        let (head, c) = req.split_once(':').unwrap_or((req, ""));
        let v2 = head.split(',').any(|o| o == "v2");
        (if v2 { Mode::V2 } else { Mode::V1 }, c.to_owned())
    } else {
        return Err(format!(
            "the virtual phone does not support the device service '{req}' (it supports shell:, shell,v2:, exec:, framebuffer:)"
        ));
    };
    if cmd.trim().is_empty() {
        return Err(
            "the virtual phone has no interactive shell; pass a command (adb shell CMD)".to_owned(),
        );
    }
    Ok((mode, cmd))
}

/// Count a service on a reachable device: `(after, screencap delay ms)`, or `None` when the
/// device is away (disconnect fault).
pub(crate) fn begin_service(
    slot: &Slot,
    link: &CancellationToken,
    cmd: &str,
) -> Option<(AfterService, u64)> {
    let now = Instant::now();
    let mut p = slot.lock();
    if !p.link_up(now) || link.is_cancelled() {
        return None;
    }
    let delay = if shell::first_word(cmd).as_deref() == Some("screencap") {
        p.faults.screencap_delay_ms
    } else {
        0
    };
    Some((p.note_service(), delay))
}

/// Run `cmd` on the phone (after the screencap delay fault), off the async threads.
pub(crate) async fn run_command(
    slot: &Arc<Slot>,
    cmd: String,
    delay_ms: u64,
) -> io::Result<ShellOutput> {
    if delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    }
    // SPEC V6: the command's cost on the phone, then the command, then the transfer of its
    // output; all before the first response byte. Async sleeps: other streams go on, and a
    // closed stream or a disconnect (the caller's select) cancels them.
    let timing = slot.timing();
    if !timing.is_instant() {
        let (w, h) = slot.lock().frame_size();
        let cost = timing.command_line(&shell::commands(&cmd), u64::from(w) * u64::from(h));
        tokio::time::sleep(cost).await;
    }
    let slot2 = slot.clone();
    let out = tokio::task::spawn_blocking(move || {
        let mut p = slot2.lock();
        shell::exec(&mut p, &cmd, Instant::now())
    })
    .await
    .map_err(io::Error::other)?;
    if !timing.is_instant() {
        tokio::time::sleep(timing.transfer(out.stdout.len() + out.stderr.len())).await;
    }
    Ok(out)
}

async fn device_service(
    s: TcpStream,
    shared: &Arc<Shared>,
    slot: Arc<Slot>,
    link: CancellationToken,
    req: &str,
) -> io::Result<()> {
    if req == "framebuffer:" {
        return framebuffer(s, shared, slot, link).await;
    }
    // Streaming services (SPEC V7): sync:, localabstract:, app_process (scrcpy), screenrecord.
    let s = match crate::streams::device_service(s, shared, &slot, &link, req).await? {
        crate::streams::Handled::Done => return Ok(()),
        crate::streams::Handled::NotMine(s) => s,
    };
    let mut s = s;
    let (mode, cmd) = match parse_service(req) {
        Ok(x) => x,
        Err(msg) => {
            fail(&mut s, &msg).await?;
            return Ok(());
        }
    };
    let Some((after, delay)) = begin_service(&slot, &link, &cmd) else {
        fail(&mut s, &format!("device '{}' not found", slot.serial)).await?;
        return Ok(());
    };
    okay(&mut s).await?;
    let work = async {
        let out = run_command(&slot, cmd, delay).await?;
        s.write_all(&encode_output(mode, &out)).await
    };
    let res = tokio::select! {
        r = work => r,
        _ = link.cancelled() => return Ok(()),
    };
    if after == AfterService::Disconnect {
        let away = slot.lock().disconnect(Instant::now());
        shared.after_disconnect(away);
    }
    res?;
    finish(s).await;
    Ok(())
}

/// The bytes a service sends for `out`: stdout then stderr (`exec:` and `shell:`),
/// or shell-protocol packets ending with the exit status (`shell,v2`).
pub(crate) fn encode_output(mode: Mode, out: &ShellOutput) -> Vec<u8> {
    match mode {
        Mode::Exec | Mode::V1 => {
            let mut v = out.stdout.clone();
            v.extend_from_slice(&out.stderr);
            v
        }
        Mode::V2 => {
            let mut buf = Vec::with_capacity(out.stdout.len() + out.stderr.len() + 64);
            for (id, data) in [(ID_STDOUT, &out.stdout), (ID_STDERR, &out.stderr)] {
                for chunk in data.chunks(CHUNK) {
                    buf.push(id);
                    buf.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
                    buf.extend_from_slice(chunk);
                }
            }
            buf.push(ID_EXIT);
            buf.extend_from_slice(&1u32.to_le_bytes());
            buf.push(out.code);
            let _ = (ID_STDIN, ID_CLOSE_STDIN);
            buf
        }
    }
}

/// `framebuffer:` — version-2 header (14 u32 LE) then RGBA_8888 pixels.
async fn framebuffer(
    mut s: TcpStream,
    shared: &Arc<Shared>,
    slot: Arc<Slot>,
    link: CancellationToken,
) -> io::Result<()> {
    let after = slot.lock().note_service();
    okay(&mut s).await?;
    let timing = slot.timing();
    tokio::select! {
        _ = tokio::time::sleep(timing.framebuffer()) => {}
        _ = link.cancelled() => return Ok(()),
    }
    let slot2 = slot.clone();
    let frame = tokio::task::spawn_blocking(move || {
        let mut p = slot2.lock();
        p.tick(Instant::now());
        p.frame()
    })
    .await
    .map_err(io::Error::other)?;
    let f = match frame {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!("framebuffer: {e}");
            return Ok(());
        }
    };
    let mut head = Vec::with_capacity(56);
    for v in [
        2u32,
        32,
        0,
        f.rgba.len() as u32,
        f.w,
        f.h,
        0,
        8,
        16,
        8,
        8,
        8,
        24,
        8,
    ] {
        head.extend_from_slice(&v.to_le_bytes());
    }
    let r = tokio::select! {
        r = async {
            tokio::time::sleep(timing.transfer(head.len() + f.rgba.len())).await;
            s.write_all(&head).await?;
            s.write_all(&f.rgba).await
        } => r,
        _ = link.cancelled() => return Ok(()),
    };
    if after == AfterService::Disconnect {
        let away = slot.lock().disconnect(Instant::now());
        shared.after_disconnect(away);
    }
    r?;
    finish(s).await;
    Ok(())
}
