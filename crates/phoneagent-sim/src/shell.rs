//! The device shell: parses a command line the way `/system/bin/sh` would (quotes, escapes,
//! `;`/`&&`/`||` lists) and runs the handful of Android commands the device layer uses.
//!
//! Size: about 850 lines of code (tests after): the shell's parser and one function per Android
//! command it answers (`input`, `screencap`, `wm`, `dumpsys`, `getprop`, `ime`, `settings`, `am
//! broadcast`), each short; the table of commands reads best as one file.

use std::time::Instant;

use base64::Engine as _;

use crate::apps::Key;
use crate::phone::{ADB_IME, LATIN_IME, Phone};

/// Output of one shell command line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ShellOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub code: u8,
}

impl ShellOutput {
    pub(crate) fn out(&mut self, s: &str) {
        self.stdout.extend_from_slice(s.as_bytes());
    }
    pub(crate) fn err(&mut self, s: &str) {
        self.stderr.extend_from_slice(s.as_bytes());
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sep {
    Seq,
    And,
    Or,
}

/// Split a command line into `(separator-before, words)` commands.
fn parse(line: &str) -> Result<Vec<(Sep, Vec<String>)>, String> {
    let mut cmds = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut sep = Sep::Seq;
    let mut it = line.chars().peekable();
    let flush_word = |words: &mut Vec<String>, cur: &mut String, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(cur));
            *in_word = false;
        }
    };
    while let Some(c) = it.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match it.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err("unterminated '".to_owned()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match it.next() {
                        Some('"') => break,
                        Some('\\') => match it.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => cur.push(x),
                            Some('\n') => {}
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => return Err("unterminated \"".to_owned()),
                        },
                        Some(x) => cur.push(x),
                        None => return Err("unterminated \"".to_owned()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match it.next() {
                    Some('\n') | None => {}
                    Some(x) => cur.push(x),
                }
            }
            ' ' | '\t' | '\n' | '\r' => flush_word(&mut words, &mut cur, &mut in_word),
            ';' => {
                flush_word(&mut words, &mut cur, &mut in_word);
                if !words.is_empty() {
                    cmds.push((sep, std::mem::take(&mut words)));
                }
                sep = Sep::Seq;
            }
            '&' if it.peek() == Some(&'&') => {
                it.next();
                flush_word(&mut words, &mut cur, &mut in_word);
                cmds.push((sep, std::mem::take(&mut words)));
                sep = Sep::And;
            }
            '|' if it.peek() == Some(&'|') => {
                it.next();
                flush_word(&mut words, &mut cur, &mut in_word);
                cmds.push((sep, std::mem::take(&mut words)));
                sep = Sep::Or;
            }
            '|' | '&' | '<' | '>' | '`' | '(' | ')' => {
                return Err(format!(
                    "`{c}` is not supported by the virtual phone's shell"
                ));
            }
            x => {
                in_word = true;
                cur.push(x);
            }
        }
    }
    flush_word(&mut words, &mut cur, &mut in_word);
    if !words.is_empty() {
        cmds.push((sep, words));
    } else if sep != Sep::Seq {
        return Err("syntax error: unexpected end of file".to_owned());
    }
    Ok(cmds)
}

/// The words of a line that holds exactly one command (`None` for lists or bad quoting); the
/// streaming services (scrcpy's `app_process`, `screenrecord`) are recognised with it.
pub(crate) fn single_command(line: &str) -> Option<Vec<String>> {
    let mut cmds = parse(line).ok()?;
    if cmds.len() != 1 {
        return None;
    }
    cmds.pop().map(|(_, w)| w)
}

/// First word of the first command (to spot `screencap` before running it).
pub(crate) fn first_word(line: &str) -> Option<String> {
    parse(line)
        .ok()
        .and_then(|c| c.into_iter().next())
        .and_then(|(_, w)| w.into_iter().next())
}

/// Each command's words, as the shell splits the line (empty when it does not parse); for the
/// timing profile.
pub(crate) fn commands(line: &str) -> Vec<Vec<String>> {
    parse(line)
        .map(|c| c.into_iter().map(|(_, w)| w).collect())
        .unwrap_or_default()
}

/// Run a command line.
pub(crate) fn exec(phone: &mut Phone, line: &str, now: Instant) -> ShellOutput {
    phone.tick(now);
    let mut out = ShellOutput::default();
    let cmds = match parse(line) {
        Ok(c) => c,
        Err(e) => {
            out.err(&format!("/system/bin/sh: {e}\n"));
            out.code = 2;
            return out;
        }
    };
    let mut last = 0u8;
    for (sep, words) in cmds {
        match sep {
            Sep::And if last != 0 => continue,
            Sep::Or if last == 0 => continue,
            _ => {}
        }
        let before = out.stdout.len();
        last = run(phone, &words, now, &mut out);
        let _ = before;
    }
    out.code = last;
    out
}

fn run(phone: &mut Phone, w: &[String], now: Instant, out: &mut ShellOutput) -> u8 {
    let args: Vec<&str> = w.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] => 0,
        ["echo", rest @ ..] => {
            let (nl, rest) = match rest {
                ["-n", r @ ..] => (false, r),
                r => (true, r),
            };
            out.out(&rest.join(" "));
            if nl {
                out.out("\n");
            }
            0
        }
        ["true"] => 0,
        ["false"] => 1,
        ["exit", code @ ..] => code.first().and_then(|c| c.parse().ok()).unwrap_or(0),
        ["id"] => {
            out.out("uid=2000(shell) gid=2000(shell) groups=2000(shell) context=u:r:shell:s0\n");
            0
        }
        ["whoami"] => {
            out.out("shell\n");
            0
        }
        ["rm", rest @ ..] => {
            // The phone's file system (SPEC V7): what `adb push` and `screencap FILE` wrote.
            let force = rest.iter().any(|a| a.starts_with('-') && a.contains('f'));
            let mut code = 0;
            for p in rest.iter().filter(|a| !a.starts_with('-')) {
                if !phone.dev.remove(p) && !force {
                    out.err(&format!("rm: {p}: No such file or directory\n"));
                    code = 1;
                }
            }
            code
        }
        ["input", rest @ ..] => input(phone, rest, now, out),
        ["cmd", "input", rest @ ..] => input(phone, rest, now, out),
        ["screencap", rest @ ..] => screencap(phone, rest, out),
        ["wm", rest @ ..] | ["cmd", "window", rest @ ..] => wm(phone, rest, out),
        ["dumpsys", rest @ ..] => dumpsys(phone, rest, out),
        ["getprop", rest @ ..] => getprop(phone, rest, out),
        ["ime", rest @ ..] | ["cmd", "input_method", rest @ ..] => ime(phone, rest, out),
        ["settings", rest @ ..] | ["cmd", "settings", rest @ ..] => settings(phone, rest, out),
        ["am", "broadcast", rest @ ..] => broadcast(phone, rest, out),
        ["pm", "list", "packages", rest @ ..] => {
            let mut pkgs = vec![
                "com.android.settings",
                "com.android.inputmethod.latin",
                "com.phoneagent.sim.launcher",
                "com.phoneagent.sim.shop",
                "com.phoneagent.sim.mail",
                "com.phoneagent.sim.search",
            ];
            if phone.adb_keyboard {
                pkgs.push("com.android.adbkeyboard");
            }
            pkgs.sort_unstable();
            let filter = rest.iter().find(|a| !a.starts_with('-'));
            for p in pkgs {
                if filter.is_none_or(|f| p.contains(*f)) {
                    out.out(&format!("package:{p}\n"));
                }
            }
            0
        }
        [cmd, ..] => {
            out.err(&format!(
                "/system/bin/sh: {cmd}: inaccessible or not found\n"
            ));
            127
        }
    }
}

const INPUT_USAGE: &str = "Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]\n\n\
The commands and default sources are:\n      text <string> (Default: touchscreen)\n      \
keyevent [--longpress|--doubletap] <key code number or name> ... (Default: keyboard)\n      \
tap <x> <y> (Default: touchscreen)\n      swipe <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)\n      \
draganddrop <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)\n";

const SOURCES: &[&str] = &[
    "keyboard",
    "mouse",
    "joystick",
    "touchnavigation",
    "touchpad",
    "trackball",
    "dpad",
    "stylus",
    "gamepad",
    "touchscreen",
    "rotaryencoder",
];

fn coord(s: &str) -> Option<i32> {
    s.parse::<f32>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v.round() as i32)
}

fn input(phone: &mut Phone, args: &[&str], now: Instant, out: &mut ShellOutput) -> u8 {
    let mut a = args;
    if let [s, rest @ ..] = a
        && SOURCES.contains(s)
    {
        a = rest;
    }
    if let ["-d", _, rest @ ..] = a {
        a = rest;
    }
    let Some((cmd, rest)) = a.split_first() else {
        out.err(INPUT_USAGE);
        return 1;
    };
    phone.commands_received += 1;
    if phone.faults.inject_events_denied {
        phone.rejected_inputs += 1;
        out.err(&format!(
            "Exception occurred while executing '{cmd}':\n\
             java.lang.SecurityException: Injecting to another application requires INJECT_EVENTS permission\n\
             \tat com.android.server.input.InputManagerService.injectInputEventToTarget(InputManagerService.java:1012)\n"
        ));
        return 1;
    }
    let invalid = |out: &mut ShellOutput| {
        out.err(&format!(
            "Error: Invalid arguments for command: {cmd}\n{INPUT_USAGE}"
        ));
        1
    };
    enum Op {
        Tap(i32, i32),
        Swipe(i32, i32, i32, i32, u64),
        Keys(Vec<(String, Key, Option<char>)>),
        Text(String),
    }
    let op = match (*cmd, rest) {
        ("tap", [x, y]) => match (coord(x), coord(y)) {
            (Some(x), Some(y)) => Op::Tap(x, y),
            _ => return invalid(out),
        },
        ("swipe" | "draganddrop", [x1, y1, x2, y2, ms @ ..]) if ms.len() <= 1 => {
            let ms = match ms.first() {
                Some(m) => match m.parse::<u64>() {
                    Ok(v) => v,
                    Err(_) => return invalid(out),
                },
                None => 300,
            };
            match (coord(x1), coord(y1), coord(x2), coord(y2)) {
                (Some(a), Some(b), Some(c), Some(d)) => Op::Swipe(a, b, c, d, ms),
                _ => return invalid(out),
            }
        }
        ("keyevent" | "press", keys) => {
            let keys: Vec<&&str> = keys.iter().filter(|k| !k.starts_with("--")).collect();
            if keys.is_empty() && *cmd == "keyevent" {
                return invalid(out);
            }
            let mut v = Vec::new();
            for k in keys {
                match keycode(k) {
                    Some(x) => v.push(x),
                    None => {
                        out.err(&format!("Error: Unknown keycode: {k}\n"));
                        return 1;
                    }
                }
            }
            Op::Keys(v)
        }
        ("text", words) if !words.is_empty() => Op::Text(words.join(" ").replace("%s", " ")),
        _ => return invalid(out),
    };
    if phone.faults.drop_input {
        phone.dropped_inputs += 1;
        return 0;
    }
    match op {
        Op::Tap(x, y) => phone.tap(x, y, now),
        Op::Swipe(a, b, c, d, ms) => phone.swipe(a, b, c, d, ms, now),
        Op::Keys(keys) => {
            for (name, key, ch) in keys {
                if let Some(ch) = ch {
                    phone.type_text(&ch.to_string());
                    phone.keys.push(name);
                } else {
                    phone.key(&name, key, now);
                }
            }
        }
        Op::Text(t) => {
            // Like Android's `input text`: only what the key character map can type (ASCII).
            let ascii: String = t
                .chars()
                .filter(|c| c.is_ascii() && !c.is_ascii_control())
                .collect();
            phone.type_text(&ascii);
        }
    }
    0
}

/// Parse a key code (`3`, `KEYCODE_HOME`, `HOME`) into (name, key, typed char).
pub(crate) fn keycode(s: &str) -> Option<(String, Key, Option<char>)> {
    let upper = s.to_ascii_uppercase();
    let name = upper.strip_prefix("KEYCODE_").unwrap_or(&upper);
    let code: u32 = match name.parse::<u32>() {
        Ok(n) => n,
        Err(_) => match name {
            "HOME" => 3,
            "BACK" => 4,
            "ENTER" => 66,
            "DEL" => 67,
            "SPACE" => 62,
            "TAB" => 61,
            "POWER" => 26,
            "MENU" => 82,
            "APP_SWITCH" => 187,
            "VOLUME_UP" => 24,
            "VOLUME_DOWN" => 25,
            "ESCAPE" => 111,
            "FORWARD_DEL" => 112,
            "WAKEUP" => 224,
            n if n.len() == 1 && n.as_bytes()[0].is_ascii_uppercase() => {
                29 + u32::from(n.as_bytes()[0] - b'A')
            }
            n if n.len() == 1 && n.as_bytes()[0].is_ascii_digit() => {
                7 + u32::from(n.as_bytes()[0] - b'0')
            }
            _ => return None,
        },
    };
    let (nm, key, ch) = match code {
        3 => ("HOME".to_owned(), Key::Home, None),
        4 => ("BACK".to_owned(), Key::Back, None),
        66 => ("ENTER".to_owned(), Key::Enter, None),
        67 => ("DEL".to_owned(), Key::Del, None),
        62 => ("SPACE".to_owned(), Key::Other, Some(' ')),
        7..=16 => {
            let d = char::from(b'0' + (code - 7) as u8);
            (d.to_string(), Key::Other, Some(d))
        }
        29..=54 => {
            let c = char::from(b'a' + (code - 29) as u8);
            (c.to_ascii_uppercase().to_string(), Key::Other, Some(c))
        }
        0..=300 => (format!("KEYCODE_{code}"), Key::Other, None),
        _ => return None,
    };
    Some((nm, key, ch))
}

fn screencap(phone: &mut Phone, args: &[&str], out: &mut ShellOutput) -> u8 {
    let mut png = false;
    let mut file: Option<&str> = None;
    for a in args {
        match *a {
            "-p" => png = true,
            "-d" | "-a" | "-j" => {}
            a if a.parse::<u64>().is_ok() => {}
            path if file.is_none() && !path.starts_with('-') => file = Some(path),
            other => {
                out.err(&format!("screencap: unknown option {other}\n"));
                return 1;
            }
        }
    }
    if let Some(path) = file {
        // `screencap [-p] FILE` (SPEC V7): PNG when asked or named `.png`, else raw.
        return crate::devfs::screencap_to_file(phone, path, png, out);
    }
    if png {
        match phone.png() {
            Ok(p) => out.stdout.extend_from_slice(&p),
            Err(e) => {
                out.err(&format!("screencap: {e}\n"));
                return 1;
            }
        }
    } else {
        match phone.frame() {
            Ok(f) => {
                out.stdout.reserve(16 + f.rgba.len());
                out.stdout.extend_from_slice(&f.w.to_le_bytes());
                out.stdout.extend_from_slice(&f.h.to_le_bytes());
                out.stdout.extend_from_slice(&1u32.to_le_bytes());
                out.stdout.extend_from_slice(&0u32.to_le_bytes());
                out.stdout.extend_from_slice(&f.rgba);
            }
            Err(e) => {
                out.err(&format!("screencap: {e}\n"));
                return 1;
            }
        }
    }
    0
}

fn wm(phone: &mut Phone, args: &[&str], out: &mut ShellOutput) -> u8 {
    match args {
        ["size"] => {
            let (w, h) = phone.natural;
            out.out(&format!("Physical size: {w}x{h}\n"));
            if let Some((ow, oh)) = phone.size_override {
                out.out(&format!("Override size: {ow}x{oh}\n"));
            }
            0
        }
        ["size", "reset"] => {
            phone.size_override = None;
            phone.version += 1;
            0
        }
        ["size", spec] => {
            let parsed = spec
                .split_once('x')
                .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
                .filter(|(a, b)| (100..=8000).contains(a) && (100..=8000).contains(b));
            match parsed {
                Some(s) => {
                    phone.size_override = Some(s);
                    phone.version += 1;
                    0
                }
                None => {
                    out.err(&format!("Error: bad size {spec}\n"));
                    255
                }
            }
        }
        ["density"] => {
            out.out(&format!("Physical density: {}\n", phone.density));
            if let Some(d) = phone.density_override {
                out.out(&format!("Override density: {d}\n"));
            }
            0
        }
        ["density", "reset"] => {
            phone.density_override = None;
            0
        }
        ["density", d] => match d.parse::<u32>() {
            Ok(v) if (72..=1000).contains(&v) => {
                phone.density_override = Some(v);
                0
            }
            _ => {
                out.err(&format!("Error: bad density {d}\n"));
                255
            }
        },
        _ => {
            out.err("usage: wm [size|density] [reset|WxH|DENSITY]\n");
            255
        }
    }
}

fn dumpsys(phone: &mut Phone, args: &[&str], out: &mut ShellOutput) -> u8 {
    let (w, h) = phone.natural_size();
    let rot = phone.faults.rotation;
    match args.first().copied() {
        Some("input") => {
            out.out(&format!(
                "INPUT MANAGER (dumpsys input)\n\nInput Manager Service (Java) State:\n  Interactive: true\n\n\
                 Event Hub State:\n  BuiltInKeyboardId: -2\n  Devices:\n    -1: Virtual\n      Classes: KEYBOARD | ALPHAKEY\n\
                 \x20   3: sim_touchscreen\n      Classes: TOUCH | TOUCH_MT\n\n\
                 Input Reader State:\n  Device 3: sim_touchscreen\n    Touch Input Mapper (mode - DIRECT):\n\
                 \x20     Viewport INTERNAL: displayId=0, uniqueId=local:0, port=0, orientation={rot}, logicalFrame=[0, 0, {lw}, {lh}], physicalFrame=[0, 0, {lw}, {lh}], deviceSize=[{w}, {h}], isActive=[1]\n\
                 \x20     RawSurfaceWidth: {w}px\n      RawSurfaceHeight: {h}px\n\
                 \x20     SurfaceOrientation: {rot}\n\n\
                 Input Dispatcher State:\n  DispatchEnabled: true\n  FocusedDisplayId: 0\n",
                lw = if rot % 2 == 1 { h } else { w },
                lh = if rot % 2 == 1 { w } else { h },
            ));
            0
        }
        Some("window") => {
            out.out(&format!(
                "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n  Display: mDisplayId=0\n    init={w}x{h} {d}dpi cur={cw}x{ch} app={cw}x{ch}\n    mCurrentRotation=ROTATION_{deg}\n",
                d = phone.density,
                cw = if rot % 2 == 1 { h } else { w },
                ch = if rot % 2 == 1 { w } else { h },
                deg = u32::from(rot) * 90,
            ));
            0
        }
        Some(svc) => {
            out.out(&format!("Can't find service: {svc}\n"));
            0
        }
        None => {
            out.out("Currently running services:\n  input\n  window\n");
            0
        }
    }
}

fn props(phone: &Phone) -> Vec<(&'static str, String)> {
    vec![
        ("persist.sys.locale", "zh-CN".to_owned()),
        ("ro.build.version.release", "14".to_owned()),
        ("ro.build.version.sdk", "34".to_owned()),
        ("ro.product.brand", "PhoneAgent".to_owned()),
        ("ro.product.device", "sim".to_owned()),
        ("ro.product.manufacturer", "PhoneAgent".to_owned()),
        ("ro.product.model", "PhoneAgent_Virtual".to_owned()),
        ("ro.product.name", "sim".to_owned()),
        ("ro.serialno", phone.serial.clone()),
        ("ro.sf.lcd_density", phone.density.to_string()),
        ("sys.boot_completed", "1".to_owned()),
    ]
}

fn getprop(phone: &mut Phone, args: &[&str], out: &mut ShellOutput) -> u8 {
    let props = props(phone);
    match args.first() {
        None => {
            for (k, v) in props {
                out.out(&format!("[{k}]: [{v}]\n"));
            }
        }
        Some(name) => {
            let v = props
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .or_else(|| args.get(1).map(|d| (*d).to_owned()))
                .unwrap_or_default();
            out.out(&format!("{v}\n"));
        }
    }
    0
}

fn ime(phone: &mut Phone, args: &[&str], out: &mut ShellOutput) -> u8 {
    let installed = phone.installed_imes();
    match args {
        ["list", flags @ ..] => {
            let all = flags.contains(&"-a");
            let ids: Vec<String> = if all {
                installed.iter().map(|s| (*s).to_owned()).collect()
            } else {
                phone.enabled_imes.clone()
            };
            for id in ids {
                if flags.contains(&"-s") {
                    out.out(&format!("{id}\n"));
                } else {
                    let pkg = id.split('/').next().unwrap_or("");
                    out.out(&format!("{id}:\n  mId={id} mSettingsActivity=null\n  mIsDefaultResId=0x0\n  Service:\n    packageName={pkg}\n"));
                }
            }
            0
        }
        ["enable", id] => {
            if !installed.contains(id) {
                out.err(&format!(
                    "Unknown input method {id} cannot be enabled for user #0\n"
                ));
                return 255;
            }
            if phone.enabled_imes.iter().any(|e| e == id) {
                out.out(&format!("Input method {id}: already enabled for user #0\n"));
            } else {
                phone.enabled_imes.push((*id).to_owned());
                out.out(&format!("Input method {id}: now enabled for user #0\n"));
            }
            0
        }
        ["disable", id] => {
            if !installed.contains(id) {
                out.err(&format!(
                    "Unknown input method {id} cannot be disabled for user #0\n"
                ));
                return 255;
            }
            phone.enabled_imes.retain(|e| e != id);
            if phone.ime == *id {
                phone.ime = LATIN_IME.to_owned();
            }
            if phone.enabled_imes.is_empty() {
                phone.enabled_imes.push(LATIN_IME.to_owned());
            }
            out.out(&format!("Input method {id}: now disabled for user #0\n"));
            0
        }
        ["set", id] => {
            if !installed.contains(id) || !phone.enabled_imes.iter().any(|e| e == id) {
                out.err(&format!(
                    "Unknown input method {id} cannot be selected for user #0\n"
                ));
                return 255;
            }
            phone.ime = (*id).to_owned();
            out.out(&format!("Input method {id} selected for user #0\n"));
            0
        }
        ["reset"] => {
            phone.enabled_imes = vec![LATIN_IME.to_owned()];
            phone.ime = LATIN_IME.to_owned();
            out.out(&format!(
                "Reset current and enabled IMEs for user #0\n  Selected: {LATIN_IME}\n   Enabled: {LATIN_IME}\n"
            ));
            0
        }
        _ => {
            out.err("ime <command>: list [-a] [-s] | enable ID | disable ID | set ID | reset\n");
            255
        }
    }
}

fn settings(phone: &mut Phone, args: &[&str], out: &mut ShellOutput) -> u8 {
    let args: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| *a != "--user" && a.parse::<u32>().is_err() && *a != "current")
        .collect();
    match args.as_slice() {
        ["get", ns @ ("secure" | "system" | "global"), key] => {
            let v = match (*ns, *key) {
                ("secure", "default_input_method") => phone.ime.clone(),
                ("secure", "enabled_input_methods") => phone.enabled_imes.join(":"),
                _ => phone
                    .settings
                    .get(&format!("{ns}/{key}"))
                    .cloned()
                    .unwrap_or_else(|| "null".to_owned()),
            };
            out.out(&format!("{v}\n"));
            0
        }
        ["put", ns @ ("secure" | "system" | "global"), key, value] => {
            match (*ns, *key) {
                ("secure", "default_input_method") => {
                    if phone.installed_imes().contains(value) {
                        phone.ime = (*value).to_owned();
                    }
                }
                ("secure", "enabled_input_methods") => {
                    let installed = phone.installed_imes();
                    phone.enabled_imes = value
                        .split(':')
                        .filter(|i| installed.contains(i))
                        .map(str::to_owned)
                        .collect();
                }
                _ => {
                    phone
                        .settings
                        .insert(format!("{ns}/{key}"), (*value).to_owned());
                }
            }
            0
        }
        ["list", ns @ ("secure" | "system" | "global")] => {
            if *ns == "secure" {
                out.out(&format!("default_input_method={}\n", phone.ime));
                out.out(&format!(
                    "enabled_input_methods={}\n",
                    phone.enabled_imes.join(":")
                ));
            }
            let prefix = format!("{ns}/");
            for (k, v) in &phone.settings {
                if let Some(k) = k.strip_prefix(&prefix) {
                    out.out(&format!("{k}={v}\n"));
                }
            }
            0
        }
        _ => {
            out.err("usage:  settings [--user <USER_ID> | current] get namespace key\n        settings [--user <USER_ID> | current] put namespace key value\n");
            255
        }
    }
}

fn broadcast(phone: &mut Phone, args: &[&str], out: &mut ShellOutput) -> u8 {
    let mut action: Option<&str> = None;
    let mut strings: Vec<(&str, &str)> = Vec::new();
    let mut ints: Vec<(&str, &str)> = Vec::new();
    let mut extras = false;
    let mut i = 0;
    while i < args.len() {
        match args[i] {
            "-a" => {
                action = args.get(i + 1).copied();
                i += 2;
            }
            "--es" | "-e" => {
                if let (Some(k), Some(v)) = (args.get(i + 1), args.get(i + 2)) {
                    strings.push((k, v));
                }
                extras = true;
                i += 3;
            }
            "--ei" | "--eia" | "--el" | "--ez" => {
                if let (Some(k), Some(v)) = (args.get(i + 1), args.get(i + 2)) {
                    ints.push((k, v));
                }
                extras = true;
                i += 3;
            }
            "-n" | "-p" | "-f" | "--user" | "-c" | "-d" | "-t" => i += 2,
            _ => i += 1,
        }
    }
    let Some(action) = action else {
        out.err("Error: no intent action given (use -a ACTION)\n");
        return 255;
    };
    out.out(&format!(
        "Broadcasting: Intent {{ act={action} flg=0x400000{} }}\n",
        if extras { " (has extras)" } else { "" }
    ));
    // The receiver only exists while ADB Keyboard is the active IME.
    if phone.ime == ADB_IME {
        let get = |k: &str| strings.iter().find(|(kk, _)| *kk == k).map(|(_, v)| *v);
        let geti = |k: &str| ints.iter().find(|(kk, _)| *kk == k).map(|(_, v)| *v);
        match action {
            "ADB_INPUT_B64" => {
                if let Some(m) = get("msg")
                    && let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(m.trim())
                    && let Ok(text) = String::from_utf8(bytes)
                {
                    phone.type_text(&text);
                }
            }
            "ADB_INPUT_TEXT" => {
                if let Some(m) = get("msg") {
                    phone.type_text(m);
                }
            }
            "ADB_CLEAR_TEXT" => phone.clear_text(),
            "ADB_INPUT_CHARS" => {
                if let Some(list) = geti("chars") {
                    let s: String = list
                        .split(',')
                        .filter_map(|c| c.trim().parse::<u32>().ok())
                        .filter_map(char::from_u32)
                        .collect();
                    phone.type_text(&s);
                }
            }
            "ADB_INPUT_CODE" => {
                if let Some((name, key, ch)) = geti("code").and_then(keycode) {
                    if let Some(ch) = ch {
                        phone.type_text(&ch.to_string());
                    } else {
                        phone.key(&name, key, Instant::now());
                    }
                }
            }
            "ADB_EDITOR_CODE" => {
                phone.key("ENTER", Key::Enter, Instant::now());
            }
            _ => {}
        }
    }
    out.out("Broadcast completed: result=0\n");
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quotes_and_lists() {
        let c = parse(r#"echo 'a b' "c\"d" e\ f; input tap 1 2 && echo ok"#).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].1, vec!["echo", "a b", "c\"d", "e f"]);
        assert_eq!(c[1].1, vec!["input", "tap", "1", "2"]);
        assert_eq!(c[2].0, Sep::And);
        assert!(parse("echo 'x").is_err());
        assert!(parse("ls | grep x").is_err());
    }

    #[test]
    fn keycodes() {
        assert_eq!(keycode("3").unwrap().1, Key::Home);
        assert_eq!(keycode("KEYCODE_BACK").unwrap().1, Key::Back);
        assert_eq!(keycode("KEYCODE_A").unwrap().2, Some('a'));
        assert_eq!(keycode("8").unwrap().2, Some('1'));
        assert!(keycode("KEYCODE_NOPE").is_none());
    }
}
