//! Parsers for adb output, apart from any I/O (scrcpy style) and tested on captured output.
//!
//! All parsers accept `\n` and `\r\n` line ends and ignore surrounding blank lines.

use crate::types::{DeviceInfo, DeviceState, Transport};
use phoneagent_protocol::Rotation;

/// Keys `adb devices -l` prints after the state.
const DEVICE_KEYS: [&str; 5] = ["usb", "product", "model", "device", "transport_id"];

fn is_device_key_token(tok: &str) -> bool {
    tok.split_once(':')
        .is_some_and(|(k, _)| DEVICE_KEYS.contains(&k))
}

/// The state string as adb prints it.
pub fn parse_state(s: &str) -> DeviceState {
    match s.trim() {
        "device" => DeviceState::Device,
        "unauthorized" => DeviceState::Unauthorized,
        "offline" => DeviceState::Offline,
        other => DeviceState::Other(other.to_string()),
    }
}

/// The plain-language fix for a device that is not ready, `None` for state `device`.
pub fn fix_for_state(state: &DeviceState) -> Option<String> {
    match state {
        DeviceState::Device => None,
        DeviceState::Unauthorized => Some(
            "unlock the phone and accept the \"Allow USB debugging\" prompt (tick \"Always allow from this computer\"); if no prompt shows, unplug and replug the cable"
                .into(),
        ),
        DeviceState::Offline => Some(
            "unplug and replug the cable (or run `adb reconnect`); if it stays offline, restart the adb server with `adb kill-server`".into(),
        ),
        DeviceState::Other(s) if s.starts_with("no permissions") => Some(
            "this computer may not open the USB device: add a udev rule for Android phones (Debian: `apt install android-sdk-platform-tools-common`), add yourself to the plugdev group, then replug".into(),
        ),
        DeviceState::Other(s) if s == "authorizing" || s == "connecting" => {
            Some("the phone is still connecting: wait a few seconds and try again".into())
        }
        DeviceState::Other(s) => Some(format!(
            "the phone is in `{s}` mode: boot it normally, unlock it and enable USB debugging"
        )),
    }
}

/// How a device is attached, from its `devices -l` fields: a `usb:` field means USB; anything
/// else (`host:port`, `emulator-N`, mDNS, the virtual phone) is reached over TCP.
pub fn transport_of(has_usb_field: bool) -> Transport {
    if has_usb_field {
        Transport::Usb
    } else {
        Transport::Tcp
    }
}

/// Parse `adb devices -l` / `host:devices-l` (also plain `host:devices`) output.
///
/// Tolerates the `List of devices attached` header, `* daemon …` lines, CRLF, and states with
/// spaces (`no permissions (…); see […]`).
pub fn parse_devices(out: &str) -> Vec<DeviceInfo> {
    let mut list = Vec::new();
    for line in out.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("List of devices") || line.starts_with('*') {
            continue;
        }
        let mut toks = line.split_whitespace();
        let Some(serial) = toks.next() else { continue };
        let rest: Vec<&str> = toks.collect();
        let state_end = rest
            .iter()
            .position(|t| is_device_key_token(t))
            .unwrap_or(rest.len());
        if state_end == 0 {
            // A line with no state is not a device row.
            continue;
        }
        let state = parse_state(&rest[..state_end].join(" "));
        let mut model = None;
        let mut usb = false;
        for t in &rest[state_end..] {
            if let Some((k, v)) = t.split_once(':') {
                match k {
                    "model" if !v.is_empty() => model = Some(v.to_string()),
                    "usb" => usb = true,
                    _ => {}
                }
            }
        }
        let fix = fix_for_state(&state);
        list.push(DeviceInfo {
            serial: serial.to_string(),
            transport: transport_of(usb),
            state,
            model,
            fix,
        });
    }
    list
}

/// `wm size` output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WmSize {
    /// `Physical size: WxH` (natural orientation, px).
    pub physical: Option<(u32, u32)>,
    /// `Override size: WxH`, when set.
    pub override_size: Option<(u32, u32)>,
}

impl WmSize {
    /// The size the input system uses: the override when set, else the physical size.
    pub fn effective(&self) -> Option<(u32, u32)> {
        self.override_size.or(self.physical)
    }
}

fn parse_wxh(s: &str) -> Option<(u32, u32)> {
    let (w, h) = s.trim().split_once('x')?;
    let (w, h) = (w.trim().parse().ok()?, h.trim().parse().ok()?);
    (w > 0 && h > 0).then_some((w, h))
}

/// Parse `wm size`. `None` when neither line is present.
pub fn parse_wm_size(out: &str) -> Option<WmSize> {
    let mut r = WmSize {
        physical: None,
        override_size: None,
    };
    for line in out.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("Physical size:") {
            r.physical = parse_wxh(v);
        } else if let Some(v) = line.strip_prefix("Override size:") {
            r.override_size = parse_wxh(v);
        }
    }
    (r.physical.is_some() || r.override_size.is_some()).then_some(r)
}

/// Parse `wm density` → the effective dpi (override first).
pub fn parse_wm_density(out: &str) -> Option<u32> {
    let (mut phys, mut over) = (None, None);
    for line in out.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("Physical density:") {
            phys = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("Override density:") {
            over = v.trim().parse().ok();
        }
    }
    over.or(phys)
}

/// Parse the display rotation from `dumpsys input`: the first `SurfaceOrientation: N`, else the
/// `orientation=N` of the `Viewport INTERNAL` line (newer Android).
pub fn parse_orientation(dumpsys_input: &str) -> Option<Rotation> {
    for line in dumpsys_input.lines() {
        if let Some(v) = line.trim().strip_prefix("SurfaceOrientation:")
            && let Ok(n) = v.trim().parse::<u32>()
        {
            return Rotation::from_quarter_turns(n);
        }
    }
    for line in dumpsys_input.lines() {
        let line = line.trim();
        if line.starts_with("Viewport INTERNAL")
            && let Some(i) = line.find("orientation=")
        {
            let digits: String = line[i + "orientation=".len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse::<u32>() {
                return Rotation::from_quarter_turns(n);
            }
        }
    }
    None
}

/// Parse `ime list -s`: one IME id per line.
pub fn parse_ime_list(out: &str) -> Vec<String> {
    out.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && l.contains('/'))
        .map(str::to_string)
        .collect()
}

/// Parse `settings get …`: the trimmed value, `None` for `null` or empty.
pub fn parse_settings_value(out: &str) -> Option<String> {
    let v = out.trim();
    (!v.is_empty() && v != "null").then(|| v.to_string())
}

/// Parse `host:features` / `host-serial:S:features`: a comma-separated list.
pub fn parse_features(out: &str) -> Vec<String> {
    out.trim()
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect()
}

/// True when `input` output shows the INJECT_EVENTS SecurityException (Xiaomi/MIUI without
/// "USB debugging (Security settings)").
pub fn is_inject_events_denied(output: &str) -> bool {
    output.contains("INJECT_EVENTS")
        || (output.contains("SecurityException") && output.to_lowercase().contains("inject"))
}

/// True when `input` output (shell v1, where the exit status is unknown) shows a failure.
pub fn input_output_shows_error(output: &str) -> bool {
    output.contains("Exception")
        || output.contains("Error:")
        || output.contains("inaccessible or not found")
        || output.contains("Usage: input")
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured from `adb devices -l` (platform-tools 35) with a USB phone, an emulator, a
    // wireless device, an unauthorized and an offline phone and a udev problem; CRLF as on Windows.
    const DEVICES_L: &str = "List of devices attached\r\n\
        0123456789ABCDEF       device usb:1-1 product:sailfish model:Pixel device:sailfish transport_id:1\r\n\
        emulator-5554          device product:sdk_gphone64_x86_64 model:sdk_gphone64_x86_64 device:emu64x transport_id:2\r\n\
        192.168.1.5:5555       device product:alioth model:M2012K11AC device:alioth transport_id:3\r\n\
        R58M123ABC             unauthorized usb:1-2 transport_id:4\r\n\
        ZY22XXXX               offline usb:1-3 transport_id:5\r\n\
        4c1a2b3c               no permissions (user in plugdev group; are your udev rules wrong?); see [http://developer.android.com/tools/device.html] usb:1-4 transport_id:6\r\n\
        \r\n";

    #[test]
    fn devices_l_several() {
        let d = parse_devices(DEVICES_L);
        assert_eq!(d.len(), 6);
        assert_eq!(d[0].serial, "0123456789ABCDEF");
        assert_eq!(d[0].state, DeviceState::Device);
        assert_eq!(d[0].model.as_deref(), Some("Pixel"));
        assert_eq!(d[0].transport, Transport::Usb);
        assert_eq!(d[0].fix, None);
        assert_eq!(d[1].transport, Transport::Tcp);
        assert_eq!(d[2].serial, "192.168.1.5:5555");
        assert_eq!(d[2].transport, Transport::Tcp);
        assert_eq!(d[2].model.as_deref(), Some("M2012K11AC"));
        assert_eq!(d[3].state, DeviceState::Unauthorized);
        assert_eq!(d[3].model, None);
        assert!(d[3].fix.as_deref().unwrap().contains("Allow USB debugging"));
        assert_eq!(d[4].state, DeviceState::Offline);
        assert!(d[4].fix.as_deref().unwrap().contains("replug"));
        assert!(
            matches!(&d[5].state, DeviceState::Other(s) if s.starts_with("no permissions (user in plugdev group;"))
        );
        assert!(d[5].fix.as_deref().unwrap().contains("udev"));
        assert_eq!(d[5].transport, Transport::Usb);
    }

    #[test]
    fn devices_plain_and_virtual() {
        let d = parse_devices("emulator-5556\tdevice\nabc\tunauthorized\n");
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].state, DeviceState::Unauthorized);
        let d = parse_devices(
            "virtual-phone-1  device product:sim model:PhoneAgent_Virtual device:sim transport_id:1\n",
        );
        assert_eq!(d[0].model.as_deref(), Some("PhoneAgent_Virtual"));
        assert_eq!(d[0].transport, Transport::Tcp);
    }

    #[test]
    fn devices_empty_and_daemon_noise() {
        assert!(parse_devices("").is_empty());
        assert!(parse_devices("List of devices attached\n\n").is_empty());
        assert!(
            parse_devices(
                "* daemon not running; starting now at tcp:5037\n* daemon started successfully\nList of devices attached\n"
            )
            .is_empty()
        );
    }

    #[test]
    fn wm_size_override_wins() {
        let s = parse_wm_size("Physical size: 1080x2400\r\nOverride size: 720x1600\r\n").unwrap();
        assert_eq!(s.physical, Some((1080, 2400)));
        assert_eq!(s.override_size, Some((720, 1600)));
        assert_eq!(s.effective(), Some((720, 1600)));
        let s = parse_wm_size("Physical size: 1440x3200\n").unwrap();
        assert_eq!(s.effective(), Some((1440, 3200)));
        assert_eq!(parse_wm_size("Error: no display\n"), None);
        assert_eq!(
            parse_wm_size("Physical size: x\n")
                .unwrap_or(WmSize {
                    physical: None,
                    override_size: None
                })
                .effective(),
            None
        );
    }

    #[test]
    fn wm_density() {
        assert_eq!(parse_wm_density("Physical density: 420\r\n"), Some(420));
        assert_eq!(
            parse_wm_density("Physical density: 420\nOverride density: 360\n"),
            Some(360)
        );
        assert_eq!(parse_wm_density("garbage"), None);
    }

    #[test]
    fn orientation() {
        let dump = "INPUT MANAGER (dumpsys input)\n\nInput Manager State:\n  Interactive: true\n    Device 5: sec_touchscreen\n      Viewport INTERNAL: displayId=0, uniqueId=local:0, port=0, orientation=1, logicalFrame=[0, 0, 2400, 1080]\n      SurfaceOrientation: 1\n      SurfaceOrientation: 0\n";
        assert_eq!(parse_orientation(dump), Some(Rotation::R90));
        assert_eq!(
            parse_orientation("      SurfaceOrientation: 3\r\n"),
            Some(Rotation::R270)
        );
        let newer = "    Viewport INTERNAL: displayId=0, uniqueId=local:4630946, port=130, orientation=2, isActive=true\n";
        assert_eq!(parse_orientation(newer), Some(Rotation::R180));
        assert_eq!(parse_orientation("SurfaceOrientation: 7"), None);
        assert_eq!(parse_orientation("nothing here"), None);
    }

    #[test]
    fn ime_list() {
        let l = parse_ime_list(
            "com.android.inputmethod.latin/.LatinIME\r\ncom.android.adbkeyboard/.AdbIME\r\n\r\n",
        );
        assert_eq!(
            l,
            vec![
                "com.android.inputmethod.latin/.LatinIME".to_string(),
                "com.android.adbkeyboard/.AdbIME".to_string()
            ]
        );
        assert!(parse_ime_list("").is_empty());
    }

    #[test]
    fn settings_value() {
        assert_eq!(
            parse_settings_value(
                "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME\r\n"
            )
            .as_deref(),
            Some("com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME")
        );
        assert_eq!(parse_settings_value("null\n"), None);
        assert_eq!(parse_settings_value("  \n"), None);
    }

    #[test]
    fn features() {
        assert_eq!(
            parse_features("shell_v2,cmd,stat_v2,ls_v2\n"),
            vec!["shell_v2", "cmd", "stat_v2", "ls_v2"]
        );
        assert!(parse_features("").is_empty());
    }

    #[test]
    fn inject_events() {
        let miui = "java.lang.SecurityException: Injecting to another application requires INJECT_EVENTS permission\n\tat android.os.Parcel.createExceptionOrNull(Parcel.java:2373)\n";
        assert!(is_inject_events_denied(miui));
        assert!(input_output_shows_error(miui));
        assert!(!is_inject_events_denied(""));
        assert!(!input_output_shows_error(""));
        assert!(input_output_shows_error(
            "/system/bin/sh: input: inaccessible or not found"
        ));
    }

    #[test]
    fn fixes() {
        assert_eq!(fix_for_state(&DeviceState::Device), None);
        assert!(
            fix_for_state(&DeviceState::Other("recovery".into()))
                .unwrap()
                .contains("recovery")
        );
        assert!(
            fix_for_state(&DeviceState::Other("authorizing".into()))
                .unwrap()
                .contains("wait")
        );
    }
}
