//! The running server: devices, their handles, the accept loop.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{SimConfig, SimDeviceState};
use crate::error::{Result, SimError};
use crate::phone::Phone;
use crate::truth::{Faults, GroundTruth};

/// One device slot behind the server.
pub(crate) struct Slot {
    pub serial: String,
    pub transport_id: u64,
    pub listed: SimDeviceState,
    pub phone: Mutex<Phone>,
    /// What commands cost on this phone (SPEC V6).
    pub timing: Mutex<crate::timing::TimingProfile>,
    /// Fired by [`SimPhoneHandle::stop_streams`]: every running stream process ends (a new
    /// token replaces it, so later streams run).
    pub streams_kill: Mutex<CancellationToken>,
}

impl Slot {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Phone> {
        self.phone.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The token that stops the stream processes running now.
    pub(crate) fn stream_kill(&self) -> CancellationToken {
        self.streams_kill
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The timing profile in effect (a copy: figures may change between commands).
    pub(crate) fn timing(&self) -> crate::timing::TimingProfile {
        self.timing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// State shared by all connections.
pub(crate) struct Shared {
    pub devices: Vec<Arc<Slot>>,
    pub allow_kill: bool,
    pub shutdown: CancellationToken,
    /// Bumped whenever the device list may have changed (disconnect/reconnect).
    pub changed: watch::Sender<u64>,
}

impl Shared {
    pub(crate) fn notify(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    pub(crate) fn slot(&self, serial: &str) -> Option<&Arc<Slot>> {
        self.devices.iter().find(|s| s.serial == serial)
    }

    /// Fire the disconnect fault of a device now and schedule the reconnect notification.
    pub(crate) fn after_disconnect(self: &Arc<Self>, away: Option<Duration>) {
        self.notify();
        if let Some(d) = away {
            let me = self.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = tokio::time::sleep(d + Duration::from_millis(1)) => me.notify(),
                    _ = me.shutdown.cancelled() => {}
                }
            });
        }
    }
}

/// A running virtual phone server on 127.0.0.1 (SPEC V1, V2). Dropping it stops it.
pub struct SimServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    task: Option<JoinHandle<()>>,
}

impl SimServer {
    /// Validate the config, load the font, bind 127.0.0.1:`port` (0 = ephemeral) and serve.
    ///
    /// Errors: [`SimError::Config`] (empty/duplicate serials, zero sizes),
    /// [`SimError::UnknownScenario`], [`SimError::FontNotFound`] (names the package to install),
    /// [`SimError::Bind`].
    pub async fn start(config: SimConfig, port: u16) -> Result<SimServer> {
        if config.devices.is_empty() {
            return Err(SimError::Config("at least one device is needed".to_owned()));
        }
        crate::render::font()?;
        let now = Instant::now();
        let mut devices = Vec::new();
        for (i, d) in config.devices.iter().enumerate() {
            if d.serial.is_empty() || d.serial.contains(|c: char| c.is_whitespace() || c == ':') {
                return Err(SimError::Config(format!(
                    "serial {:?} is not usable: it must be non-empty, without spaces or ':'",
                    d.serial
                )));
            }
            if config.devices[..i].iter().any(|o| o.serial == d.serial) {
                return Err(SimError::Config(format!(
                    "serial {} is used twice",
                    d.serial
                )));
            }
            devices.push(Arc::new(Slot {
                serial: d.serial.clone(),
                transport_id: i as u64 + 1,
                listed: d.state,
                phone: Mutex::new(Phone::new(d, now)?),
                timing: Mutex::new(d.timing.clone()),
                streams_kill: Mutex::new(CancellationToken::new()),
            }));
        }
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|source| SimError::Bind { port, source })?;
        let addr = listener.local_addr()?;
        let (changed, _) = watch::channel(0u64);
        let shared = Arc::new(Shared {
            devices,
            allow_kill: config.allow_kill,
            shutdown: CancellationToken::new(),
            changed,
        });
        let sh = shared.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = sh.shutdown.cancelled() => break,
                    acc = listener.accept() => match acc {
                        Ok((stream, _)) => {
                            let _ = stream.set_nodelay(true);
                            let sh2 = sh.clone();
                            tokio::spawn(async move {
                                if let Err(e) = crate::adb::serve_connection(stream, sh2).await {
                                    tracing::debug!("adb connection ended: {e}");
                                }
                            });
                        }
                        Err(e) => {
                            tracing::warn!("accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            }
        });
        tracing::info!("virtual phone listening on {addr}");
        Ok(SimServer {
            shared,
            addr,
            task: Some(task),
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serials in listing order.
    pub fn serials(&self) -> Vec<String> {
        self.shared
            .devices
            .iter()
            .map(|d| d.serial.clone())
            .collect()
    }

    /// In-process access to a device's ground truth and faults.
    pub fn phone(&self, serial: &str) -> Option<SimPhoneHandle> {
        self.shared.slot(serial).map(|slot| SimPhoneHandle {
            slot: slot.clone(),
            shared: self.shared.clone(),
        })
    }

    /// Also answer as the **phone's adbd** on 127.0.0.1:`port` (0 = ephemeral): the device-side
    /// ADB protocol a phone speaks over USB or on `adb tcpip 5555`, with RSA AUTH (see
    /// [`crate::AdbdConfig`]). Serves until the server stops.
    ///
    /// Errors: [`SimError::Config`] (unknown serial, bad trusted key), [`SimError::Bind`].
    pub async fn start_adbd(
        &self,
        config: crate::AdbdConfig,
        port: u16,
    ) -> Result<crate::AdbdHandle> {
        crate::adbd::start(self.shared.clone(), config, port).await
    }

    /// Resolves when the server stops (after [`SimServer::shutdown`], or `host:kill` when the
    /// config allows it).
    pub async fn stopped(&self) {
        self.shared.shutdown.cancelled().await;
    }

    /// Stop accepting and close every connection.
    pub async fn shutdown(mut self) {
        self.shared.shutdown.cancel();
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}

/// Handle on one virtual device, for tests and the CLI (never given to the agent).
#[derive(Clone)]
pub struct SimPhoneHandle {
    slot: Arc<Slot>,
    shared: Arc<Shared>,
}

impl SimPhoneHandle {
    /// The device's serial.
    pub fn serial(&self) -> &str {
        &self.slot.serial
    }

    /// Current ground truth (SPEC V3).
    pub fn ground_truth(&self) -> GroundTruth {
        self.slot.lock().ground_truth(Instant::now())
    }

    /// The timing profile in effect (SPEC V6).
    pub fn timing(&self) -> crate::timing::TimingProfile {
        self.slot.timing()
    }

    /// Replace the timing profile (SPEC V6); applies from the next command on.
    pub fn set_timing(&self, t: crate::timing::TimingProfile) {
        *self.slot.timing.lock().unwrap_or_else(|e| e.into_inner()) = t;
    }

    /// Kill every running stream process (scrcpy server, `screenrecord`) while the phone stays
    /// connected (SPEC V4, issue #12 "a stream that dies"): their sockets close, as when the
    /// server crashes. Streams started afterwards run normally.
    pub fn stop_streams(&self) {
        let old = std::mem::replace(
            &mut *self
                .slot
                .streams_kill
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
            CancellationToken::new(),
        );
        old.cancel();
    }

    /// Replace the fault set (SPEC V4); see [`Faults`].
    pub fn set_faults(&self, f: Faults) {
        let fired = self.slot.lock().set_faults(f, Instant::now());
        if let Some(away) = fired {
            self.shared.after_disconnect(away);
        } else {
            self.shared.notify();
        }
    }

    /// Reset to a scenario (see [`crate::SCENARIOS`]).
    pub fn reset(&self, scenario: &str) -> Result<()> {
        self.slot.lock().reset(scenario, Instant::now())?;
        self.shared.notify();
        Ok(())
    }

    /// Force a fresh render of the current screen (no cache) and return its RGBA size; for the
    /// benchmark.
    #[doc(hidden)]
    pub fn render_uncached(&self) -> Result<(u32, u32)> {
        let mut p = self.slot.lock();
        p.version += 1;
        let f = p.frame()?;
        Ok((f.w, f.h))
    }

    /// The current screen as PNG bytes (what `screencap -p` returns, without the delay fault).
    pub fn screenshot_png(&self) -> Result<Vec<u8>> {
        let mut p = self.slot.lock();
        p.tick(Instant::now());
        Ok(p.png()?.as_ref().clone())
    }
}
