//! One virtual device: the apps plus everything device-level (IME, `wm` overrides, faults,
//! touches, the link state for disconnect faults, and the cached frame).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::apps::{Key, World};
use crate::config::{SimDeviceConfig, SimDeviceState};
use crate::error::{Result, SimError};
use crate::render::{Canvas, GlyphCache, encode_png, font};
use crate::truth::{DEFAULT_DIALOG_DELAY_MS, Element, Faults, GroundTruth, Touch};

/// The stock Android keyboard.
pub const LATIN_IME: &str = "com.android.inputmethod.latin/.LatinIME";
/// ADB Keyboard (`com.android.adbkeyboard`).
pub const ADB_IME: &str = "com.android.adbkeyboard/.AdbIME";

/// A rendered frame.
#[derive(Clone)]
pub(crate) struct Frame {
    pub w: u32,
    pub h: u32,
    pub rgba: Arc<Vec<u8>>,
    pub png: Option<Arc<Vec<u8>>>,
    key: (u64, u8, bool, u32, u32),
}

/// What the caller must do after a `shell:`/`exec:` service has been counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AfterService {
    Nothing,
    /// The disconnect fault fires once this service's output is written.
    Disconnect,
}

pub(crate) struct Phone {
    pub serial: String,
    pub natural: (u32, u32),
    pub density: u32,
    pub size_override: Option<(u32, u32)>,
    pub density_override: Option<u32>,
    pub adb_keyboard: bool,
    pub ime: String,
    pub enabled_imes: Vec<String>,
    pub settings: BTreeMap<String, String>,
    pub faults: Faults,
    pub world: World,
    pub version: u64,
    pub touches: Vec<Touch>,
    pub keys: Vec<String>,
    pub commands_received: u64,
    pub shell_commands: u64,
    pub dropped_inputs: u64,
    pub rejected_inputs: u64,
    pub disconnects: u64,
    pub listed: SimDeviceState,
    /// Cancelled when the device disconnects; every open stream watches it.
    pub link: CancellationToken,
    /// `Some(None)`: away until faults change; `Some(Some(t))`: away until `t`.
    pub down: Option<Option<Instant>>,
    services_since_fault: u64,
    frame: Option<Frame>,
    glyphs: GlyphCache,
    /// Files, abstract sockets and clipboard of the streaming services (SPEC V7).
    pub dev: crate::devfs::DevState,
}

impl Phone {
    pub(crate) fn new(cfg: &SimDeviceConfig, now: Instant) -> Result<Phone> {
        if cfg.width == 0 || cfg.height == 0 || cfg.density == 0 {
            return Err(SimError::Config(format!(
                "device {}: width, height and density must be > 0 (got {}x{} @ {} dpi)",
                cfg.serial, cfg.width, cfg.height, cfg.density
            )));
        }
        let faults = Faults::default();
        let world = World::new(&cfg.scenario, now, dialog_delay(&faults))?;
        Ok(Phone {
            serial: cfg.serial.clone(),
            natural: (cfg.width, cfg.height),
            density: cfg.density,
            size_override: None,
            density_override: None,
            adb_keyboard: cfg.adb_keyboard,
            ime: LATIN_IME.to_owned(),
            enabled_imes: vec![LATIN_IME.to_owned()],
            settings: BTreeMap::new(),
            faults,
            world,
            version: 1,
            touches: Vec::new(),
            keys: Vec::new(),
            commands_received: 0,
            shell_commands: 0,
            dropped_inputs: 0,
            rejected_inputs: 0,
            disconnects: 0,
            listed: cfg.state,
            link: CancellationToken::new(),
            down: None,
            services_since_fault: 0,
            frame: None,
            glyphs: GlyphCache::default(),
            dev: crate::devfs::DevState::default(),
        })
    }

    /// Back to a scenario: apps, IME, overrides, faults and counters all reset.
    pub(crate) fn reset(&mut self, scenario: &str, now: Instant) -> Result<()> {
        let world = World::new(scenario, now, dialog_delay(&Faults::default()))?;
        self.world = world;
        self.faults = Faults::default();
        self.size_override = None;
        self.density_override = None;
        self.ime = LATIN_IME.to_owned();
        self.enabled_imes = vec![LATIN_IME.to_owned()];
        self.settings.clear();
        self.touches.clear();
        self.keys.clear();
        self.commands_received = 0;
        self.shell_commands = 0;
        self.dropped_inputs = 0;
        self.rejected_inputs = 0;
        self.services_since_fault = 0;
        self.down = None;
        self.version += 1;
        Ok(())
    }

    pub(crate) fn dialog_delay(&self) -> Option<Duration> {
        dialog_delay(&self.faults)
    }

    /// IME ids installed on the phone.
    pub(crate) fn installed_imes(&self) -> Vec<&'static str> {
        let mut v = vec![LATIN_IME];
        if self.adb_keyboard {
            v.push(ADB_IME);
        }
        v
    }

    /// Natural size in effect (override or physical).
    pub(crate) fn natural_size(&self) -> (u32, u32) {
        self.size_override.unwrap_or(self.natural)
    }

    /// Size of frames in the current orientation.
    pub(crate) fn frame_size(&self) -> (u32, u32) {
        let (w, h) = self.natural_size();
        if self.faults.rotation % 2 == 1 {
            (h, w)
        } else {
            (w, h)
        }
    }

    /// Apply time-based changes (the delayed dialog).
    pub(crate) fn tick(&mut self, now: Instant) {
        if self.world.tick(now) {
            self.version += 1;
        }
    }

    // ---------------------------------------------------------------------------------------
    // Link (disconnect fault)
    // ---------------------------------------------------------------------------------------

    /// Whether the device is currently reachable (not away because of the disconnect fault).
    pub(crate) fn link_up(&mut self, now: Instant) -> bool {
        match self.down {
            None => true,
            Some(Some(t)) if now >= t => {
                self.down = None;
                true
            }
            Some(_) => false,
        }
    }

    /// Count a `shell:`/`exec:` service.
    pub(crate) fn note_service(&mut self) -> AfterService {
        self.shell_commands += 1;
        if let Some(n) = self.faults.disconnect_after_commands {
            self.services_since_fault += 1;
            if self.services_since_fault >= n {
                return AfterService::Disconnect;
            }
        }
        AfterService::Nothing
    }

    /// Make the device vanish now; returns how long it stays away (`None`: until faults change).
    pub(crate) fn disconnect(&mut self, now: Instant) -> Option<Duration> {
        let away = self.faults.reconnect_after_ms.map(Duration::from_millis);
        self.down = Some(away.map(|d| now + d));
        self.faults.disconnect_after_commands = None;
        self.services_since_fault = 0;
        self.disconnects += 1;
        self.link.cancel();
        self.link = CancellationToken::new();
        away
    }

    /// Replace the fault set. Returns `Some(away)` when this fires the disconnect right away
    /// (`disconnect_after_commands: 0`).
    pub(crate) fn set_faults(&mut self, f: Faults, now: Instant) -> Option<Option<Duration>> {
        let rotation_changed = f.rotation != self.faults.rotation;
        let dialog_changed = f.dialog_delay_ms != self.faults.dialog_delay_ms
            || f.dialog_disabled != self.faults.dialog_disabled;
        self.faults = Faults {
            rotation: f.rotation % 4,
            ..f
        };
        self.services_since_fault = 0;
        // Setting faults again brings a device that is away "until faults change" back.
        if self.down == Some(None) {
            self.down = None;
        }
        if dialog_changed && self.world.dialog_due.is_some() {
            self.world.dialog_due = self.dialog_delay().map(|d| now + d);
        }
        if rotation_changed {
            self.version += 1;
        }
        if self.faults.disconnect_after_commands == Some(0) {
            return Some(self.disconnect(now));
        }
        None
    }

    // ---------------------------------------------------------------------------------------
    // Input
    // ---------------------------------------------------------------------------------------

    pub(crate) fn tap(&mut self, x: i32, y: i32, now: Instant) {
        let (w, h) = self.frame_size();
        let dd = self.dialog_delay();
        let hit = self.world.tap(x, y, w, h, now, dd);
        self.touches.push(Touch {
            kind: "tap".to_owned(),
            x,
            y,
            x2: None,
            y2: None,
            duration_ms: None,
            hit,
        });
        self.version += 1;
    }

    pub(crate) fn swipe(&mut self, x1: i32, y1: i32, x2: i32, y2: i32, ms: u64, now: Instant) {
        let dist = (x2 - x1).abs().max((y2 - y1).abs());
        let (w, h) = self.frame_size();
        if dist < 16 {
            // A press in place: a tap when short, a long press (no click) when held.
            if ms < 500 {
                self.tap(x1, y1, now);
                return;
            }
            let hit = self.world.scene(w, h).hit(x1, y1).map(|h| h.id.clone());
            self.touches.push(Touch {
                kind: "long_press".to_owned(),
                x: x1,
                y: y1,
                x2: None,
                y2: None,
                duration_ms: Some(ms),
                hit,
            });
            return;
        }
        self.world.swipe(x1, y1, x2, y2, w, h);
        self.touches.push(Touch {
            kind: "swipe".to_owned(),
            x: x1,
            y: y1,
            x2: Some(x2),
            y2: Some(y2),
            duration_ms: Some(ms),
            hit: None,
        });
        self.version += 1;
    }

    pub(crate) fn key(&mut self, name: &str, key: Key, now: Instant) {
        let dd = self.dialog_delay();
        self.world.key(key, now, dd);
        self.keys.push(name.to_owned());
        self.version += 1;
    }

    pub(crate) fn type_text(&mut self, s: &str) {
        self.world.type_text(s);
        self.version += 1;
    }

    pub(crate) fn clear_text(&mut self) {
        self.world.clear_text();
        self.version += 1;
    }

    // ---------------------------------------------------------------------------------------
    // Frames
    // ---------------------------------------------------------------------------------------

    /// The current frame (RGBA), rendered only when the state changed since the last one.
    pub(crate) fn frame(&mut self) -> Result<Frame> {
        let (w, h) = self.frame_size();
        let key = (
            self.version,
            self.faults.rotation,
            self.faults.black_frames,
            w,
            h,
        );
        if let Some(f) = &self.frame
            && f.key == key
        {
            return Ok(f.clone());
        }
        let rgba = if self.faults.black_frames {
            [0u8, 0, 0, 255].repeat(w as usize * h as usize)
        } else {
            let font = font()?;
            let scene = self.world.scene(w, h);
            let mut canvas = Canvas::new(w, h, scene.bg, &font, &mut self.glyphs);
            scene.paint(&mut canvas);
            canvas.px
        };
        let f = Frame {
            w,
            h,
            rgba: Arc::new(rgba),
            png: None,
            key,
        };
        self.frame = Some(f.clone());
        Ok(f)
    }

    /// The current frame as PNG (cached like the frame).
    pub(crate) fn png(&mut self) -> Result<Arc<Vec<u8>>> {
        let f = self.frame()?;
        if let Some(p) = f.png {
            return Ok(p);
        }
        let png = Arc::new(encode_png(f.w, f.h, &f.rgba)?);
        if let Some(cached) = &mut self.frame {
            cached.png = Some(png.clone());
        }
        Ok(png)
    }

    // ---------------------------------------------------------------------------------------
    // Ground truth
    // ---------------------------------------------------------------------------------------

    pub(crate) fn ground_truth(&mut self, now: Instant) -> GroundTruth {
        self.tick(now);
        let up = self.link_up(now);
        let (w, h) = self.frame_size();
        let scene = self.world.scene(w, h);
        let elements = scene
            .hits
            .iter()
            .map(|hh| Element {
                id: hh.id.clone(),
                label: hh.label.clone(),
                kind: hh.kind.to_owned(),
                bounds: [hh.r.x0, hh.r.y0, hh.r.x1, hh.r.y1],
            })
            .collect();
        let mut gt = GroundTruth {
            serial: self.serial.clone(),
            state: if up {
                self.listed.as_adb_str().to_owned()
            } else {
                "disconnected".to_owned()
            },
            current_screen: String::new(),
            overlay: None,
            back_stack: Vec::new(),
            product: None,
            orders_placed: 0,
            payments_confirmed: 0,
            orders: Vec::new(),
            cart: Vec::new(),
            coupons_claimed: 0,
            mails_sent: Vec::new(),
            drafts: Vec::new(),
            typed_text: Default::default(),
            ime: self.ime.clone(),
            enabled_imes: self.enabled_imes.clone(),
            adb_keyboard_installed: self.adb_keyboard,
            rotation: self.faults.rotation,
            width: w,
            height: h,
            density: self.density_override.unwrap_or(self.density),
            elements,
            commands_received: self.commands_received,
            shell_commands: self.shell_commands,
            touches: self.touches.clone(),
            keys: self.keys.clone(),
            dropped_inputs: self.dropped_inputs,
            rejected_inputs: self.rejected_inputs,
            accounts_deleted: 0,
            settings: Default::default(),
            search: Default::default(),
            logged_in_user: None,
            login_failures: 0,
            scroll: Default::default(),
            notice: None,
            faults: self.faults.clone(),
            disconnects: self.disconnects,
            frame_version: self.version,
            subscriptions: Vec::new(),
            auto_renew_on: false,
            password_free_payment: false,
            wallet_transfers: Vec::new(),
            trash_emptied: 0,
            chat_messages_sent: Vec::new(),
            chat_history_cleared: 0,
            orders_cancelled: 0,
            password_entries: 0,
        };
        self.world.fill_truth(&mut gt);
        gt
    }
}

fn dialog_delay(f: &Faults) -> Option<Duration> {
    if f.dialog_disabled {
        None
    } else {
        Some(Duration::from_millis(
            f.dialog_delay_ms.unwrap_or(DEFAULT_DIALOG_DELAY_MS),
        ))
    }
}
