//! `devices`, `doctor`, `screenshot` (SPEC C1, D1, D2, D3).

use super::Global;
use phoneagent_device::direct::key::AdbKey;
use phoneagent_device::{
    AdbDevice, AdbLink, ConnectPlan, Device, DeviceError, DeviceInfo, DeviceState, DirectLink,
    DirectOptions, DirectTarget, ReadinessCheck, Route, Transport,
};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

/// `phoneagent devices`
#[derive(Debug, clap::Args)]
pub struct DevicesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `phoneagent doctor`
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// ADB serial of the phone to check (default: ANDROID_SERIAL, or the only device).
    #[arg(long, env = "ANDROID_SERIAL")]
    pub serial: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: super::run::ModelArgs,
    /// Also send each role's model a tiny vision request (costs a few tokens).
    #[arg(long)]
    pub deep: bool,
    #[command(flatten)]
    pub capture: super::run::CaptureArg,
}

/// `phoneagent screenshot`
#[derive(Debug, clap::Args)]
pub struct ScreenshotArgs {
    /// ADB serial (default: ANDROID_SERIAL, or the only device).
    #[arg(long, env = "ANDROID_SERIAL")]
    pub serial: Option<String>,
    /// Output PNG file.
    #[arg(short, long)]
    pub output: std::path::PathBuf,
}

/// What to do when no phone is listed.
const EMPTY_HINT: &str = "no phone is connected. Connect an Android phone with USB debugging on \
(Settings → About phone → tap \"Build number\" 7 times, then Developer options → USB debugging) \
and accept the \"Allow USB debugging\" prompt; or start the virtual phone with \
`phoneagent sim serve --port 15037` and use `phoneagent --adb 127.0.0.1:15037 devices`.";

/// How the global flags and environment say to reach phones (`--adb`, `--direct`).
fn plan_of(g: &Global) -> ConnectPlan {
    ConnectPlan::from_flags(g.adb.as_deref(), g.direct.as_deref())
}

/// What direct mode is, for `devices` and `doctor`.
fn direct_note(link: &AdbLink) -> Option<String> {
    match link {
        AdbLink::Server(_) => None,
        AdbLink::Direct(d) => Some(format!(
            "direct mode: no adb server is used; PhoneAgent speaks the ADB protocol to the phone itself ({}) with its own RSA key {} — the phone asks \"Allow USB debugging?\" once for it",
            d.target(),
            d.key().path().display()
        )),
    }
}

/// Rows for phones reached directly: one handshake each (state `device` / `unauthorized`),
/// with a short wait for the prompt so listing stays quick.
async fn direct_rows(
    targets: Vec<DirectTarget>,
) -> Result<(Vec<DeviceInfo>, Option<String>), DeviceError> {
    let mut rows = Vec::new();
    let mut key_path = None;
    if targets.is_empty() {
        return Ok((rows, key_path));
    }
    let key = AdbKey::for_user()?;
    key_path = Some(key.path().display().to_string());
    let opts = DirectOptions {
        auth_timeout: std::time::Duration::from_secs(5),
        ..DirectOptions::default()
    };
    for t in targets {
        let link = DirectLink::new(t.clone(), key.clone(), opts.clone());
        match link.device_info().await {
            Ok(info) => rows.push(info),
            Err(e @ DeviceError::DirectUnreachable { .. })
                if matches!(t, DirectTarget::Tcp { .. }) =>
            {
                return Err(e);
            }
            Err(e) => rows.push(DeviceInfo {
                serial: t.serial(),
                state: DeviceState::Other("error".into()),
                model: None,
                transport: t.transport(),
                fix: Some(e.to_string()),
            }),
        }
    }
    Ok((rows, key_path))
}

/// A device error as the user sees it: `error[code]: message`, or a JSON object.
#[derive(Debug, Serialize)]
struct ErrorOut {
    code: String,
    message: String,
}

impl From<&DeviceError> for ErrorOut {
    fn from(e: &DeviceError) -> Self {
        Self {
            code: e.code().as_str().to_string(),
            message: e.to_string(),
        }
    }
}

fn print_error(e: &DeviceError, json: bool) -> anyhow::Result<u8> {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "error": ErrorOut::from(e) }))?
        );
    } else {
        super::out::note(&format!("error[{}]: {e}", e.code()));
    }
    Ok(1)
}

fn state_str(s: &DeviceState) -> String {
    match s {
        DeviceState::Device => "device".into(),
        DeviceState::Unauthorized => "unauthorized".into(),
        DeviceState::Offline => "offline".into(),
        DeviceState::Other(o) => o.clone(),
    }
}

/// The `devices` table (pure, for tests).
fn devices_table(list: &[DeviceInfo]) -> String {
    let rows: Vec<[String; 5]> = list
        .iter()
        .map(|d| {
            [
                d.serial.clone(),
                state_str(&d.state),
                d.model.clone().unwrap_or_else(|| "-".into()),
                match d.transport {
                    Transport::Usb => "usb".into(),
                    Transport::Tcp => "tcp".into(),
                },
                d.fix.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let header = ["SERIAL", "STATE", "MODEL", "TRANSPORT", "FIX"];
    let mut width = header.map(str::len);
    for r in &rows {
        for (i, c) in r.iter().enumerate().take(4) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i < 4 {
                s.push_str(&format!("{c:<w$}  ", w = width[i]));
            } else {
                s.push_str(c);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(header);
    out.push('\n');
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
        out.push('\n');
    }
    out
}

/// List devices (SPEC C1, D1). An empty list is not an error: it prints a hint, exit 0.
///
/// Through the adb server when one answers; `--direct HOST:PORT` asks that phone's adbd
/// directly; with no adb server (and USB support built in) the phones on USB are asked
/// directly.
pub async fn devices(g: &Global, a: DevicesArgs) -> anyhow::Result<u8> {
    let route = match plan_of(g).resolve().await {
        Ok(r) => r,
        Err(e) => return print_error(&e, a.json),
    };
    let (server_addr, transport, list, key_path, note) = match route {
        Route::Server(server) => match server.devices().await {
            Ok(l) => (
                Some(server.addr().to_string()),
                format!("adb server {}", server.addr()),
                l,
                None,
                None,
            ),
            Err(e) => return print_error(&e, a.json),
        },
        Route::Direct(t) => {
            let transport = t.to_string();
            match direct_rows(vec![t]).await {
                Ok((l, k)) => (None, transport, l, k, None),
                Err(e) => return print_error(&e, a.json),
            }
        }
        Route::Usb(server_err) => {
            let found = match phoneagent_device::direct::usb_devices().await {
                Ok(f) => f,
                Err(e) => return print_error(&e, a.json),
            };
            let targets = found
                .into_iter()
                .map(|(serial, _)| DirectTarget::Usb { serial })
                .collect();
            match direct_rows(targets).await {
                Ok((l, k)) => (
                    None,
                    "direct USB".to_string(),
                    l,
                    k,
                    Some(format!(
                        "no adb server answered ({server_err}); looked for phones on USB directly"
                    )),
                ),
                Err(e) => return print_error(&e, a.json),
            }
        }
    };
    let direct = server_addr.is_none();
    if a.json {
        let hint = list.is_empty().then_some(EMPTY_HINT);
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "adb_server": server_addr,
                "transport": transport,
                "direct": direct,
                "adb_key": key_path,
                "note": note,
                "devices": list,
                "hint": hint,
            }))?
        );
        return Ok(0);
    }
    if let Some(n) = &note {
        outln!("{n}.");
    }
    if direct {
        outln!(
            "Direct mode ({transport}): no adb server; PhoneAgent speaks ADB to the phone itself{}.",
            key_path
                .as_deref()
                .map(|k| format!(" with its key {k}"))
                .unwrap_or_default()
        );
    }
    if list.is_empty() {
        match &server_addr {
            Some(addr) => outln!("No devices (adb server {addr})."),
            None => outln!("No devices ({transport})."),
        }
        outln!("hint: {EMPTY_HINT}");
    } else {
        out!("{}", devices_table(&list));
    }
    Ok(0)
}

fn print_checks(title: &str, checks: &[ReadinessCheck]) {
    outln!("{title}");
    for c in checks {
        let mark = if c.ok { "ok  " } else { "FAIL" };
        outln!("  [{mark}] {:<15} {}", c.name, c.detail);
        if let Some(f) = &c.fix {
            outln!("         fix: {f}");
        }
    }
}

/// The safety gate's own eyes (SPEC S10): whether screen reading (OCR) is on, with the fix.
pub fn screen_reading_check() -> ReadinessCheck {
    phoneagent_runtime::screen_reading_check()
}

/// Preflight (SPEC C1, D2): exit 0 when ready, 1 otherwise, each failed check with its fix.
pub async fn doctor(g: &Global, a: DoctorArgs) -> anyhow::Result<u8> {
    let cancel = CancellationToken::new();
    let device = match AdbDevice::connect(
        &plan_of(g),
        a.serial.as_deref(),
        super::run::device_options(a.capture.mode),
    )
    .await
    {
        Ok(d) => d,
        Err(e) => {
            // Not being able to choose a device is the first failed check.
            let check = ReadinessCheck {
                name: "device".into(),
                ok: false,
                detail: e.code().as_str().into(),
                fix: Some(e.to_string()),
            };
            if a.json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "serial": null, "ready": false, "device": [check], "safety": [screen_reading_check()], "model": super::models::doctor_checks(&a.model, a.deep).await,
                    }))?
                );
            } else {
                print_checks("Device", &[check]);
                print_checks("Safety gate", &[screen_reading_check()]);
                print_checks(
                    "Model",
                    &super::models::doctor_checks(&a.model, a.deep).await,
                );
            }
            return Ok(1);
        }
    };
    let readiness = match device.readiness(&cancel).await {
        Ok(r) => r,
        Err(e) => return print_error(&e, a.json),
    };
    let model = super::models::doctor_checks(&a.model, a.deep).await;
    let safety = screen_reading_check();
    let ready = readiness.ready() && model.iter().all(|c| c.ok) && safety.ok;
    let transport = device.link().describe();
    let note = direct_note(device.link());
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "serial": readiness.serial,
                "transport": transport,
                "direct": device.link().is_direct(),
                "note": note,
                "ready": ready,
                "device": readiness.checks,
                "safety": [safety],
                "model": model,
            }))?
        );
    } else {
        outln!("Transport: {transport}");
        if let Some(n) = &note {
            outln!("  {n}");
        }
        print_checks(&format!("Device {}", readiness.serial), &readiness.checks);
        print_checks("Safety gate", std::slice::from_ref(&safety));
        if !model.is_empty() {
            print_checks("Model", &model);
        }
        outln!(
            "{}",
            if ready {
                "Ready."
            } else {
                "Not ready: apply the fixes above and run `phoneagent doctor` again."
            }
        );
    }
    Ok(if ready { 0 } else { 1 })
}

/// Save a screenshot (SPEC C1, D3). A blank frame (protected window) is saved as taken and
/// reported; a failed capture is an error.
pub async fn screenshot(g: &Global, a: ScreenshotArgs) -> anyhow::Result<u8> {
    let cancel = CancellationToken::new();
    let device = match AdbDevice::connect(
        &plan_of(g),
        a.serial.as_deref(),
        super::run::device_options(phoneagent_device::ScreenshotMode::Png),
    )
    .await
    {
        Ok(d) => d,
        Err(e) => return print_error(&e, false),
    };
    let shot = match device.screenshot(&cancel).await {
        Ok(s) => s,
        Err(e) => return print_error(&e, false),
    };
    std::fs::write(&a.output, &shot.png).map_err(|e| {
        anyhow::anyhow!(
            "cannot write {}: {e} (check the directory exists and is writable)",
            a.output.display()
        )
    })?;
    outln!(
        "saved {}x{} screenshot of {} to {} ({} ms)",
        shot.image.width(),
        shot.image.height(),
        device.serial(),
        a.output.display(),
        shot.capture_ms
    );
    if shot.blocked {
        eprintln!(
            "warning[screenshot_blocked]: the frame is blank (black/uniform): the screen is off or a protected window is showing; unlock the phone or leave the protected app"
        );
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_fix_column() {
        let list = phoneagent_device::parse::parse_devices(
            "A1\tdevice usb:1-1 model:Pixel_7 transport_id:1\nB2\tunauthorized usb:1-2 transport_id:2\n",
        );
        let t = devices_table(&list);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("SERIAL"));
        assert!(
            lines[1].starts_with("A1") && lines[1].contains("Pixel_7") && lines[1].contains("usb")
        );
        assert!(lines[2].contains("unauthorized") && lines[2].contains("Allow USB debugging"));
    }
}
