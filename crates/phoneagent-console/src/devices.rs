//! Devices (SPEC U1, D1, D2, D7, U4): the phones of the user's adb server, phones reached
//! without one (`direct:usb`, `direct:tcp` addresses the user added; one shared `DirectLink`
//! per phone), the in-process virtual phone, the selected phone (one `AdbDevice` per phone,
//! shared by the mirror, readiness and a run), its readiness, and the person's taps and swipes
//! through the mirror.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use phoneagent_device::direct::key::AdbKey;
use phoneagent_device::direct::{DirectLink, DirectOptions, DirectTarget};
use phoneagent_device::{
    AdbDevice, AdbDeviceOptions, AdbServer, AdbServerAddr, Device, DeviceState, Transport,
};
use phoneagent_protocol::DevicePoint;
use phoneagent_protocol::event::HumanRequestKind;
use tokio_util::sync::CancellationToken;

use crate::console::{Console, lock};
use crate::dto::{
    CheckView, DeviceEntry, DevicesView, SelectedDevice, SourceProblem, VirtualPhone,
};
use crate::error::{AppError, AppResult};
use crate::settings::AppSettings;

/// `adb_addr` of phones reached without an adb server over USB (SPEC D1).
pub const DIRECT_USB: &str = "direct:usb";
/// `adb_addr` of phones reached without an adb server over TCP (`serial` = `HOST:PORT`).
pub const DIRECT_TCP: &str = "direct:tcp";
/// Settings key of the phones the user added by address (direct TCP).
pub const DIRECT_TARGETS_KEY: &str = "app.direct_targets";

pub(crate) fn parse_addr(s: &str) -> AppResult<AdbServerAddr> {
    Ok(AdbServerAddr::parse(s)?)
}

fn addr_string(a: &AdbServerAddr) -> String {
    format!("{}:{}", a.host, a.port)
}

fn state_name(s: &DeviceState) -> String {
    match s {
        DeviceState::Device => "device".into(),
        DeviceState::Unauthorized => "unauthorized".into(),
        DeviceState::Offline => "offline".into(),
        DeviceState::Other(o) => o.clone(),
    }
}

impl Console {
    /// Use `dir/adbkey` as this computer's ADB key for direct connections instead of the
    /// shared config dir's (tests; a portable install).
    pub fn set_adb_key_dir(&self, dir: PathBuf) {
        *lock(&self.adb_key_dir) = Some(dir);
    }

    fn adb_key(&self) -> AppResult<AdbKey> {
        let dir = match lock(&self.adb_key_dir).clone() {
            Some(d) => d,
            None => phoneagent_device::direct::key::config_dir()?,
        };
        Ok(AdbKey::load_or_create(
            &dir.join("adbkey"),
            phoneagent_device::direct::key::android_adbkey_path().as_deref(),
        )?)
    }

    /// The shared direct link to `target` (created on first use).
    fn direct_link(&self, target: DirectTarget) -> AppResult<DirectLink> {
        let serial = target.serial();
        if let Some(l) = lock(&self.direct_links).get(&serial) {
            return Ok(l.clone());
        }
        let link = DirectLink::new(target, self.adb_key()?, DirectOptions::default());
        Ok(lock(&self.direct_links)
            .entry(serial)
            .or_insert(link)
            .clone())
    }

    /// Phones the user added by address (`HOST:PORT`, direct TCP), in the order added.
    pub fn direct_targets(&self) -> Vec<String> {
        self.store
            .setting::<Vec<String>>(DIRECT_TARGETS_KEY)
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Add a phone reached over the network without an adb server (`HOST[:PORT]`, port 5555 by
    /// default; the phone must be in TCP debugging mode, `adb tcpip 5555`). Remembered.
    ///
    /// # Errors
    /// `config` naming the malformed address.
    pub fn add_direct_device(&self, addr: &str) -> AppResult<String> {
        let target = DirectTarget::parse_tcp(addr.trim()).map_err(|_| {
            AppError::invalid(format!(
                "{:?} is not a phone address: use its IP and port, e.g. 192.168.1.20:5555 (the port is 5555 after `adb tcpip 5555`)",
                addr.trim()
            ))
        })?;
        let serial = target.serial();
        let mut list = self.direct_targets();
        if !list.contains(&serial) {
            list.push(serial.clone());
            self.store.set_setting(DIRECT_TARGETS_KEY, &list)?;
        }
        Ok(serial)
    }

    /// Forget a phone added by address (and unselect it if it was selected).
    ///
    /// # Errors
    /// Store errors.
    pub fn remove_direct_device(&self, serial: &str) -> AppResult<()> {
        let list: Vec<String> = self
            .direct_targets()
            .into_iter()
            .filter(|s| s != serial)
            .collect();
        self.store.set_setting(DIRECT_TARGETS_KEY, &list)?;
        lock(&self.direct_links).remove(serial);
        let mut sel = lock(&self.selected);
        if sel
            .as_ref()
            .is_some_and(|d| d.adb_addr == DIRECT_TCP && d.serial == serial)
        {
            *sel = None;
        }
        Ok(())
    }

    /// List the phones reached without an adb server: on USB (only when no adb server answers:
    /// with one running, adb owns the USB interface) and the ones added by address.
    async fn direct_devices(
        &self,
        usb: bool,
        problems: &mut Vec<SourceProblem>,
    ) -> Vec<DeviceEntry> {
        let mut out = vec![];
        if usb {
            match phoneagent_device::direct::usb_devices().await {
                Ok(found) => out.extend(found.into_iter().map(|(serial, product)| DeviceEntry {
                    serial,
                    state: "device".into(),
                    model: product,
                    transport: "usb".into(),
                    fix: Some("no adb server: PhoneAgent talks to this phone directly; the first time, accept \"Allow USB debugging?\" on the phone".into()),
                    adb_addr: DIRECT_USB.into(),
                    is_virtual: false,
                })),
                Err(e) => problems.push(SourceProblem {
                    adb_addr: DIRECT_USB.into(),
                    code: e.code().as_str().into(),
                    message: e.to_string(),
                }),
            }
        }
        for serial in self.direct_targets() {
            let entry = |state: &str, model: Option<String>, fix: Option<String>| DeviceEntry {
                serial: serial.clone(),
                state: state.into(),
                model,
                transport: "tcp".into(),
                fix,
                adb_addr: DIRECT_TCP.into(),
                is_virtual: false,
            };
            let link = match DirectTarget::parse_tcp(&serial)
                .map_err(AppError::from)
                .and_then(|t| self.direct_link(t))
            {
                Ok(l) => l,
                Err(e) => {
                    out.push(entry("offline", None, Some(e.message)));
                    continue;
                }
            };
            // The shared link's own connection when it has one (a run or the mirror may be
            // using it), else a handshake; bounded so a silent address cannot stall the list.
            out.push(
                match tokio::time::timeout(Duration::from_secs(4), link.device_info()).await {
                    Ok(Ok(info)) => entry(&state_name(&info.state), info.model, info.fix),
                    Ok(Err(e)) => entry("offline", None, Some(e.to_string())),
                    Err(_) => entry(
                        "offline",
                        None,
                        Some(format!(
                            "{serial} did not finish connecting within 4 s: if the phone shows \"Allow USB debugging?\", tap Allow and refresh; otherwise check the address, that the phone is on this network and in TCP debugging mode (`adb tcpip 5555` once over USB)"
                        )),
                    ),
                },
            );
        }
        out
    }

    async fn sim_addr(&self) -> Option<VirtualPhone> {
        let mut sim = self.sim.lock().await;
        let s = sim.as_mut()?;
        s.is_running().then(|| VirtualPhone {
            adb_addr: format!("127.0.0.1:{}", s.port()),
            serial: s.serial(),
        })
    }

    /// Phones from the user's adb server and the virtual phone, with problems per source.
    pub async fn list_devices(&self) -> DevicesView {
        let mut sources: Vec<(String, bool)> = vec![];
        let mut problems = vec![];
        let env_server = AdbServerAddr::resolve(None).ok().map(|a| addr_string(&a));
        match AdbServerAddr::resolve(None) {
            Ok(a) => sources.push((addr_string(&a), false)),
            Err(e) => problems.push(SourceProblem {
                adb_addr: "(environment)".into(),
                code: e.code().as_str().into(),
                message: e.to_string(),
            }),
        }
        let virtual_phone = self.sim_addr().await;
        if let Some(v) = &virtual_phone {
            sources.push((v.adb_addr.clone(), true));
        }
        let mut devices = vec![];
        for (addr, is_virtual) in sources {
            let server = match parse_addr(&addr) {
                Ok(a) => AdbServer::new(a),
                Err(e) => {
                    problems.push(SourceProblem {
                        adb_addr: addr,
                        code: e.code,
                        message: e.message,
                    });
                    continue;
                }
            };
            match tokio::time::timeout(Duration::from_secs(3), server.devices()).await {
                Ok(Ok(list)) => devices.extend(list.into_iter().map(|d| DeviceEntry {
                    serial: d.serial,
                    state: state_name(&d.state),
                    model: d.model,
                    transport: match d.transport {
                        Transport::Usb => "usb".into(),
                        Transport::Tcp => "tcp".into(),
                    },
                    fix: d.fix,
                    adb_addr: addr.clone(),
                    is_virtual,
                })),
                Ok(Err(e)) => problems.push(SourceProblem {
                    message: if matches!(e, phoneagent_device::DeviceError::AdbServerUnreachable { .. }) {
                        format!("no adb server at {addr}: phones on USB are used directly (no adb needed), or add a phone by its network address below; to use adb instead, install Android platform-tools and run `adb start-server`")
                    } else {
                        e.to_string()
                    },
                    adb_addr: addr,
                    code: e.code().as_str().into(),
                }),
                Err(_) => problems.push(SourceProblem {
                    adb_addr: addr.clone(),
                    // Not "unreachable": a slow server still owns its USB phones.
                    code: "adb_server_slow".into(),
                    message: format!("the adb server at {addr} did not answer within 3 s: restart it with `adb kill-server && adb start-server`"),
                }),
            }
        }
        // No adb server answered (and none was named in the environment): look on USB directly.
        let server_down = env_server.as_ref().is_some_and(|a| {
            problems
                .iter()
                .any(|p| &p.adb_addr == a && p.code == "adb_server_unreachable")
        });
        let named = ["ADB_SERVER_SOCKET", "ANDROID_ADB_SERVER_PORT"]
            .iter()
            .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()));
        let usb = server_down && !named && phoneagent_device::direct::USB_SUPPORTED;
        devices.extend(self.direct_devices(usb, &mut problems).await);
        DevicesView {
            devices,
            problems,
            selected: lock(&self.selected).clone(),
            virtual_phone,
        }
    }

    /// Choose the phone for tasks and the mirror.
    pub fn select_device(&self, adb_addr: String, serial: String) -> AppResult<SelectedDevice> {
        if adb_addr == DIRECT_TCP {
            DirectTarget::parse_tcp(&serial)?;
        } else if adb_addr != DIRECT_USB {
            parse_addr(&adb_addr)?;
        }
        if serial.trim().is_empty() {
            return Err(AppError::invalid("choose a phone from the list"));
        }
        let sel = SelectedDevice { adb_addr, serial };
        *lock(&self.selected) = Some(sel.clone());
        Ok(sel)
    }

    pub(crate) fn selected(&self) -> AppResult<SelectedDevice> {
        lock(&self.selected).clone().ok_or_else(|| {
            AppError::coded(
                phoneagent_protocol::ErrorCode::NoDevice,
                "no phone selected: pick one in Devices, or start the virtual phone",
            )
        })
    }

    pub(crate) async fn open_selected(&self) -> AppResult<Arc<AdbDevice>> {
        let sel = self.selected()?;
        self.open_device(&sel).await
    }

    /// The phone `serial` as the console knows it: the selected one, a phone with a run, or one
    /// open for a mirror, readiness or a run; `None` (or empty) is the selected phone.
    ///
    /// # Errors
    /// `no_device` when none is selected (`None`) or the serial is not known.
    pub(crate) fn phone(&self, serial: Option<&str>) -> AppResult<SelectedDevice> {
        let Some(serial) = serial.filter(|s| !s.is_empty()) else {
            return self.selected();
        };
        if let Some(sel) = lock(&self.selected).clone().filter(|s| s.serial == serial) {
            return Ok(sel);
        }
        if let Some(p) = lock(&self.sessions).get(serial) {
            return Ok(p.device.clone());
        }
        // A phone open for a mirror, readiness or a run ("addr|serial|capture").
        let open = lock(&self.devices)
            .iter()
            .filter(|(_, w)| w.strong_count() > 0)
            .find_map(|(k, _)| {
                let mut parts = k.splitn(3, '|');
                let (addr, s) = (parts.next()?, parts.next()?);
                (s == serial).then(|| SelectedDevice {
                    adb_addr: addr.to_string(),
                    serial: serial.to_string(),
                })
            });
        if let Some(sel) = open {
            return Ok(sel);
        }
        Err(AppError::coded(
            phoneagent_protocol::ErrorCode::NoDevice,
            format!("no phone {serial:?}: select it in Devices first"),
        ))
    }

    /// Open phone `sel` (or reuse the device already open for it).
    pub(crate) async fn open_device(&self, sel: &SelectedDevice) -> AppResult<Arc<AdbDevice>> {
        let sel = sel.clone();
        let opts = self.device_options();
        let key = format!("{}|{}|{}", sel.adb_addr, sel.serial, opts.screenshot_mode);
        if let Some(dev) = lock(&self.devices)
            .get(&key)
            .and_then(std::sync::Weak::upgrade)
        {
            return Ok(dev);
        }
        let dev = Arc::new(match sel.adb_addr.as_str() {
            DIRECT_USB | DIRECT_TCP => {
                let target = if sel.adb_addr == DIRECT_USB {
                    DirectTarget::Usb {
                        serial: sel.serial.clone(),
                    }
                } else {
                    DirectTarget::parse_tcp(&sel.serial)?
                };
                // The link stays shared after an error: it drops a dead connection and dials
                // again, and a second link to a USB phone could not claim the interface the
                // first one holds.
                let link = self.direct_link(target)?;
                AdbDevice::open_direct(link, opts).await?
            }
            addr => AdbDevice::open(AdbServer::new(parse_addr(addr)?), &sel.serial, opts).await?,
        });
        let mut map = lock(&self.devices);
        map.retain(|_, w| w.strong_count() > 0);
        // Another caller may have opened it meanwhile: keep the first.
        if let Some(first) = map.get(&key).and_then(std::sync::Weak::upgrade) {
            return Ok(first);
        }
        map.insert(key, Arc::downgrade(&dev));
        Ok(dev)
    }

    /// Device options from the settings (capture path, SPEC D8), with the phone-keyboard
    /// journal of the data directory, so a killed app or CLI run has the keyboard put back when
    /// the phone is opened again (SPEC D4).
    fn device_options(&self) -> AdbDeviceOptions {
        let capture = AppSettings::load(&self.store)
            .ok()
            .and_then(|s| s.capture.parse().ok())
            .unwrap_or(phoneagent_device::ScreenshotMode::Auto);
        AdbDeviceOptions {
            screenshot_mode: capture,
            ime_journal: phoneagent_store::default_ime_journal_dir().ok(),
            ..AdbDeviceOptions::default()
        }
    }

    /// Start the in-process virtual phone (SPEC D7) and select it. Idempotent.
    pub async fn start_virtual_phone(&self) -> AppResult<VirtualPhone> {
        {
            let mut sim = self.sim.lock().await;
            // Started once; again when its process ended.
            if !sim.as_mut().is_some_and(|s| s.is_running()) {
                let process = lock(&self.sim_process).clone();
                let server =
                    crate::virtual_phone::VirtualPhoneHost::start(process.as_ref(), self.sim_port)
                        .await
                        .map_err(|e| {
                            AppError::coded(
                                phoneagent_protocol::ErrorCode::Config,
                                format!("could not start the virtual phone: {e}"),
                            )
                        })?;
                *sim = Some(server);
            }
        }
        let v = self.sim_addr().await.ok_or_else(|| {
            AppError::internal("the virtual phone stopped right after starting; start it again")
        })?;
        self.select_device(v.adb_addr.clone(), v.serial.clone())?;
        Ok(v)
    }

    /// Readiness checks of the selected phone (SPEC D2).
    pub async fn readiness(&self) -> AppResult<Vec<CheckView>> {
        let dev = self.open_selected().await?;
        let mut r = dev.readiness(&CancellationToken::new()).await?;
        // The gate's own eyes (SPEC S10), as `phoneagent doctor` shows them.
        r.checks.push(phoneagent_runtime::screen_reading_check());
        Ok(r.checks
            .into_iter()
            .map(|c| CheckView {
                name: c.name,
                ok: c.ok,
                detail: c.detail,
                fix: c.fix,
            })
            .collect())
    }

    /// The person may use the phone through the mirror (SPEC U4, issue #12 item 5) when no
    /// run is active, while the agent waits for them to take over, or while the run is paused.
    ///
    /// # Errors
    /// `pause_first` while a run is driving the phone.
    fn require_person_control(&self, serial: &str) -> AppResult<()> {
        let taking_over = self.session_on(serial).is_some_and(|s| {
            s.pending()
                .iter()
                .any(|r| matches!(r.kind, HumanRequestKind::TakeOver { .. }))
        });
        let driving = self.run_drives_phone(serial);
        if taking_over || !driving {
            Ok(())
        } else {
            Err(AppError::new(
                "pause_first",
                "a task is driving the phone: pause it first, then tap or swipe on the mirror",
            ))
        }
    }

    /// The person taps the phone at device pixels through the mirror (see
    /// [`Console::require_person_control`] for when).
    pub async fn take_over_tap(&self, x: u32, y: u32) -> AppResult<()> {
        self.take_over_tap_on(None, x, y).await
    }

    /// [`Console::take_over_tap`] on phone `serial` (`None`: the selected phone), the one whose
    /// mirror was tapped.
    ///
    /// # Errors
    /// `pause_first` while a run drives that phone; `no_device`; device errors.
    pub async fn take_over_tap_on(&self, serial: Option<&str>, x: u32, y: u32) -> AppResult<()> {
        let sel = self.phone(serial)?;
        self.require_person_control(&sel.serial)?;
        let dev = self.open_device(&sel).await?;
        dev.tap(DevicePoint { x, y }, &CancellationToken::new())
            .await?;
        Ok(())
    }

    /// The person swipes between device pixels through the mirror (as
    /// [`Console::take_over_tap`]; 50..=3000 ms).
    pub async fn take_over_swipe(
        &self,
        from: (u32, u32),
        to: (u32, u32),
        duration_ms: u32,
    ) -> AppResult<()> {
        self.take_over_swipe_on(None, from, to, duration_ms).await
    }

    /// [`Console::take_over_swipe`] on phone `serial` (`None`: the selected phone).
    ///
    /// # Errors
    /// As [`Console::take_over_tap_on`].
    pub async fn take_over_swipe_on(
        &self,
        serial: Option<&str>,
        from: (u32, u32),
        to: (u32, u32),
        duration_ms: u32,
    ) -> AppResult<()> {
        let sel = self.phone(serial)?;
        self.require_person_control(&sel.serial)?;
        let dev = self.open_device(&sel).await?;
        let d = duration_ms.clamp(50, 3000);
        dev.swipe(
            DevicePoint {
                x: from.0,
                y: from.1,
            },
            DevicePoint { x: to.0, y: to.1 },
            d,
            &CancellationToken::new(),
        )
        .await?;
        Ok(())
    }
}
