//! Where the console's virtual phone (SPEC D7, C1) runs: in its own child process when the
//! front end says how to start one ([`crate::Console::set_virtual_phone_process`]: the desktop
//! app and `phoneagent web` re-run their own binary with [`CHILD_FLAG`]), else in this process.
//!
//! In its own process the phone's screen rendering, its H.264 encoder and its state are not
//! the app's memory (issue #14: about 60 MB of the app's resident memory once the mirror
//! streams), as a real phone's are not; the console reaches it exactly as it reaches a real
//! phone, over the ADB protocol on loopback, and resets it through the sim-only host service
//! (`host:sim-reset`, [`phoneagent_sim::client`]).
//!
//! The child protocol: `EXE --phoneagent-virtual-phone PORT` (0 = a free port) serves the
//! phone on 127.0.0.1:PORT, writes one line `phoneagent-virtual-phone PORT SERIAL` on stdout
//! once it listens, and exits when its stdin closes (the console dropped it, or the app died
//! in any way), so no phone is left behind.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use phoneagent_sim::{SimConfig, SimServer};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// The first argument that makes a binary serve the virtual phone as a child process
/// ([`run_child_if_asked`]).
pub const CHILD_FLAG: &str = "--phoneagent-virtual-phone";

/// The first word of the child's ready line.
const READY: &str = "phoneagent-virtual-phone";

/// How long the child may take to listen (it loads a CJK font first: ~0.1–0.5 s).
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How to start the virtual phone's process: `program` [`CHILD_FLAG`] `PORT`, where `program`
/// calls [`run_child_if_asked`] first thing in `main`.
#[derive(Debug, Clone)]
pub struct VirtualPhoneProcess {
    /// The binary (the front end's own, `std::env::current_exe()`).
    pub program: PathBuf,
}

impl VirtualPhoneProcess {
    /// This binary (for a `main` that calls [`run_child_if_asked`] first).
    ///
    /// # Errors
    /// The path of the running binary is not known (`std::env::current_exe`).
    pub fn this_binary() -> std::io::Result<Self> {
        Ok(Self {
            program: std::env::current_exe()?,
        })
    }
}

/// Serve the virtual phone when this process was started as its child (`args[1]` is
/// [`CHILD_FLAG`]): returns the exit code to end with; `None` for a normal start. Call it first
/// in `main`, before any UI or runtime starts.
pub fn run_child_if_asked() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(CHILD_FLAG)) {
        return None;
    }
    let port = match args.next().map(|p| p.to_string_lossy().parse::<u16>()) {
        None => 0,
        Some(Ok(p)) => p,
        Some(Err(_)) => {
            eprintln!("virtual phone: the port after {CHILD_FLAG} must be a number 0..65535");
            return Some(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("virtual phone: cannot start the async runtime: {e}");
            return Some(1);
        }
    };
    Some(rt.block_on(serve_child(port)))
}

async fn serve_child(port: u16) -> i32 {
    let sim = match SimServer::start(SimConfig::default(), port).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("virtual phone: could not start: {e}");
            return 1;
        }
    };
    let serial = sim.serials().into_iter().next().unwrap_or_default();
    println!("{READY} {} {serial}", sim.port());
    // Until the parent closes stdin (or dies: the pipe closes with it).
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    loop {
        tokio::select! {
            r = stdin.read(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
            () = sim.stopped() => break,
        }
    }
    sim.shutdown().await;
    0
}

/// The console's running virtual phone.
pub(crate) enum VirtualPhoneHost {
    /// Served by this process.
    InProcess(SimServer),
    /// Served by a child process.
    Child(ChildPhone),
}

/// A virtual phone in a child process; dropping it ends the process.
pub(crate) struct ChildPhone {
    child: tokio::process::Child,
    port: u16,
    serial: String,
}

impl VirtualPhoneHost {
    /// Start the phone on 127.0.0.1:`port` (0 = a free one): in a child process when
    /// `process` is given, else here.
    ///
    /// # Errors
    /// A sentence naming what failed (the child's own message when it gave one).
    pub(crate) async fn start(
        process: Option<&VirtualPhoneProcess>,
        port: u16,
    ) -> Result<Self, String> {
        let Some(p) = process else {
            return SimServer::start(SimConfig::default(), port)
                .await
                .map(Self::InProcess)
                .map_err(|e| e.to_string());
        };
        let mut child = tokio::process::Command::new(&p.program)
            .arg(CHILD_FLAG)
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", p.program.display()))?;
        let stdout = child.stdout.take().ok_or("the child has no stdout")?;
        let stderr = child.stderr.take().ok_or("the child has no stderr")?;
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(START_TIMEOUT, lines.next_line()).await;
        let line = match ready {
            Ok(Ok(Some(l))) => l,
            Ok(Ok(None)) | Ok(Err(_)) => {
                let why = first_line_of(stderr).await;
                return Err(if why.is_empty() {
                    "the virtual phone's process ended before it listened".to_owned()
                } else {
                    why
                });
            }
            Err(_) => {
                return Err(format!(
                    "the virtual phone's process did not listen within {} s",
                    START_TIMEOUT.as_secs()
                ));
            }
        };
        let (port, serial) = parse_ready(&line)
            .ok_or_else(|| format!("the virtual phone's process said {line:?}, not its port"))?;
        // Its later output (warnings) goes to this process's log, line by line.
        tokio::spawn(async move {
            let mut err = BufReader::new(stderr).lines();
            while let Ok(Some(l)) = err.next_line().await {
                tracing::warn!("virtual phone: {}", l.escape_debug());
            }
        });
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self::Child(ChildPhone {
            child,
            port,
            serial,
        }))
    }

    /// Still serving (a child that exited is not).
    pub(crate) fn is_running(&mut self) -> bool {
        match self {
            Self::InProcess(_) => true,
            Self::Child(c) => matches!(c.child.try_wait(), Ok(None)),
        }
    }

    /// Its port on 127.0.0.1.
    pub(crate) fn port(&self) -> u16 {
        match self {
            Self::InProcess(s) => s.port(),
            Self::Child(c) => c.port,
        }
    }

    /// Its phone's serial.
    pub(crate) fn serial(&self) -> String {
        match self {
            Self::InProcess(s) => s.serials().into_iter().next().unwrap_or_default(),
            Self::Child(c) => c.serial.clone(),
        }
    }

    /// The child's process id (`None` in process).
    pub(crate) fn child_pid(&self) -> Option<u32> {
        match self {
            Self::InProcess(_) => None,
            Self::Child(c) => c.child.id(),
        }
    }

    /// Put the phone on `screen` (a sim scenario: `shop_product`, `home`, …).
    ///
    /// # Errors
    /// The phone refused (unknown scenario) or cannot be reached.
    pub(crate) async fn reset(&self, serial: &str, screen: &str) -> Result<(), String> {
        match self {
            Self::InProcess(s) => s
                .phone(serial)
                .ok_or_else(|| format!("the virtual phone has no device {serial}"))?
                .reset(screen)
                .map_err(|e| e.to_string()),
            Self::Child(c) => phoneagent_sim::client::reset(c.port, Some(serial), screen)
                .await
                .map_err(|e| e.to_string()),
        }
    }
}

async fn first_line_of(stderr: tokio::process::ChildStderr) -> String {
    let mut lines = BufReader::new(stderr).lines();
    match tokio::time::timeout(Duration::from_secs(2), lines.next_line()).await {
        Ok(Ok(Some(l))) => l.escape_debug().to_string(),
        _ => String::new(),
    }
}

/// `phoneagent-virtual-phone PORT SERIAL` → (port, serial).
fn parse_ready(line: &str) -> Option<(u16, String)> {
    let mut w = line.split_whitespace();
    if w.next()? != READY {
        return None;
    }
    let port = w.next()?.parse().ok().filter(|p| *p != 0)?;
    let serial = w.next()?.to_owned();
    Some((port, serial))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_line_gives_port_and_serial() {
        assert_eq!(
            parse_ready("phoneagent-virtual-phone 40123 virtual-phone-1"),
            Some((40123, "virtual-phone-1".to_owned()))
        );
        assert_eq!(parse_ready("phoneagent-virtual-phone 0 x"), None);
        assert_eq!(parse_ready("listening on 40123"), None);
        assert_eq!(parse_ready("phoneagent-virtual-phone 40123"), None);
    }
}
