//! The phone's storage and IPC state that the streaming services need (SPEC V7): a small
//! in-memory file system (what `adb push`/`pull` and `screencap -p FILE` see), the abstract
//! unix sockets a running scrcpy server listens on (`localabstract:scrcpy_<scid>`), and the
//! clipboard.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

/// A byte stream a device service runs on (an adb server-protocol TCP connection, or one
/// multiplexed adbd stream).
pub(crate) trait Conn: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Conn for T {}

/// A boxed service stream.
pub(crate) type BoxConn = Box<dyn Conn>;

/// `S_IFREG | 0644` / `S_IFDIR | 0755`, as `stat` reports them.
pub(crate) const MODE_FILE: u32 = 0o100_644;
pub(crate) const MODE_DIR: u32 = 0o040_755;

/// One file.
#[derive(Clone, Debug)]
pub(crate) struct File {
    pub data: Arc<Vec<u8>>,
    pub mode: u32,
    /// Seconds since the epoch.
    pub mtime: u32,
}

/// What a path is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stat {
    Missing,
    File { mode: u32, size: u32, mtime: u32 },
    Dir { mtime: u32 },
}

/// The phone's storage, sockets and clipboard.
pub(crate) struct DevState {
    files: BTreeMap<String, File>,
    dirs: Vec<String>,
    /// Listening abstract sockets: name → where connections are handed.
    sockets: BTreeMap<String, mpsc::UnboundedSender<BoxConn>>,
    /// The primary clip (`set clipboard` / `get clipboard` of the scrcpy control socket).
    pub clipboard: String,
}

impl Default for DevState {
    fn default() -> Self {
        Self {
            files: BTreeMap::new(),
            dirs: [
                "/",
                "/data",
                "/data/local",
                "/data/local/tmp",
                "/sdcard",
                "/storage",
                "/storage/emulated",
                "/storage/emulated/0",
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
            sockets: BTreeMap::new(),
            clipboard: String::new(),
        }
    }
}

pub(crate) fn now_secs() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs().min(u64::from(u32::MAX)) as u32)
        .unwrap_or(0)
}

/// `/a//b/` → `/a/b`; `/sdcard` aliases `/storage/emulated/0` as on Android.
pub(crate) fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            x => parts.push(x),
        }
    }
    let joined = format!("/{}", parts.join("/"));
    match joined.strip_prefix("/storage/emulated/0") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("/sdcard{rest}"),
        _ => joined,
    }
}

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

impl DevState {
    fn is_dir(&self, path: &str) -> bool {
        path == "/sdcard" || self.dirs.iter().any(|d| d == path)
    }

    /// `stat` of `path`.
    pub(crate) fn stat(&self, path: &str) -> Stat {
        let p = normalize(path);
        if let Some(f) = self.files.get(&p) {
            return Stat::File {
                mode: f.mode,
                size: f.data.len().min(u32::MAX as usize) as u32,
                mtime: f.mtime,
            };
        }
        if self.is_dir(&p) {
            return Stat::Dir { mtime: 0 };
        }
        Stat::Missing
    }

    /// Write a file; `Err` is the message a phone gives (no such directory, is a directory).
    pub(crate) fn write(
        &mut self,
        path: &str,
        data: Vec<u8>,
        mode: u32,
        mtime: u32,
    ) -> Result<(), String> {
        let p = normalize(path);
        if self.is_dir(&p) {
            return Err(format!("{path}: Is a directory"));
        }
        if !self.is_dir(parent(&p)) {
            return Err(format!("{}: No such file or directory", parent(&p)));
        }
        let mode = if mode & 0o170_000 == 0 {
            0o100_000 | (mode & 0o7777)
        } else {
            mode
        };
        self.files.insert(
            p,
            File {
                data: Arc::new(data),
                mode,
                mtime,
            },
        );
        Ok(())
    }

    /// Read a file.
    pub(crate) fn read(&self, path: &str) -> Result<Arc<Vec<u8>>, String> {
        let p = normalize(path);
        match self.files.get(&p) {
            Some(f) => Ok(f.data.clone()),
            None if self.is_dir(&p) => Err(format!("{path}: Is a directory")),
            None => Err(format!("remote object '{path}' does not exist")),
        }
    }

    /// Remove a file; false when there was none.
    pub(crate) fn remove(&mut self, path: &str) -> bool {
        self.files.remove(&normalize(path)).is_some()
    }

    /// Entries of a directory: `(name, stat)`.
    pub(crate) fn list(&self, path: &str) -> Vec<(String, Stat)> {
        let p = normalize(path);
        let prefix = if p == "/" {
            "/".to_owned()
        } else {
            format!("{p}/")
        };
        let mut out = Vec::new();
        for name in self.files.keys() {
            if let Some(rest) = name.strip_prefix(&prefix)
                && !rest.contains('/')
            {
                out.push((rest.to_owned(), self.stat(name)));
            }
        }
        for d in &self.dirs {
            if let Some(rest) = d.strip_prefix(&prefix)
                && !rest.is_empty()
                && !rest.contains('/')
            {
                out.push((rest.to_owned(), Stat::Dir { mtime: 0 }));
            }
        }
        out
    }

    /// Start listening on the abstract socket `name`; `Err` when it is taken (`Address already
    /// in use`, as a second scrcpy server with the same scid gets).
    pub(crate) fn listen(
        &mut self,
        name: &str,
    ) -> Result<mpsc::UnboundedReceiver<BoxConn>, String> {
        if let Some(tx) = self.sockets.get(name)
            && !tx.is_closed()
        {
            return Err(format!("Address already in use: {name}"));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        self.sockets.insert(name.to_owned(), tx);
        Ok(rx)
    }

    /// True while something listens on `name`.
    pub(crate) fn is_listening(&self, name: &str) -> bool {
        self.sockets.get(name).is_some_and(|tx| !tx.is_closed())
    }

    /// Stop listening on `name`.
    pub(crate) fn unlisten(&mut self, name: &str) {
        self.sockets.remove(name);
    }

    /// Hand a connection to the listener of `name`; gives it back when nobody listens
    /// (`Connection refused`).
    pub(crate) fn connect(&mut self, name: &str, conn: BoxConn) -> Result<(), BoxConn> {
        match self.sockets.get(name) {
            Some(tx) => tx.send(conn).map_err(|e| e.0),
            None => Err(conn),
        }
    }
}

/// `screencap [-p] FILE`: write the current screen to the phone's file system — PNG when `-p`
/// is given or the name ends in `.png` (as Android's screencap decides), else the raw
/// header + RGBA. Prints nothing on success, as on a phone.
pub(crate) fn screencap_to_file(
    phone: &mut crate::phone::Phone,
    path: &str,
    png: bool,
    out: &mut crate::shell::ShellOutput,
) -> u8 {
    let as_png = png || path.to_ascii_lowercase().ends_with(".png");
    let data = if as_png {
        phone.png().map(|p| p.as_ref().clone())
    } else {
        phone.frame().map(|f| {
            let mut v = Vec::with_capacity(16 + f.rgba.len());
            for x in [f.w, f.h, 1, 0] {
                v.extend_from_slice(&x.to_le_bytes());
            }
            v.extend_from_slice(&f.rgba);
            v
        })
    };
    match data {
        Ok(d) => match phone.dev.write(path, d, MODE_FILE, now_secs()) {
            Ok(()) => 0,
            Err(e) => {
                out.err(&format!("Error opening file: {path} ({e})\n"));
                1
            }
        },
        Err(e) => {
            out.err(&format!("screencap: {e}\n"));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_dirs() {
        let mut fs = DevState::default();
        assert_eq!(normalize("/data//local/tmp/"), "/data/local/tmp");
        assert_eq!(normalize("/storage/emulated/0/a.png"), "/sdcard/a.png");
        assert!(matches!(fs.stat("/data/local/tmp"), Stat::Dir { .. }));
        assert_eq!(fs.stat("/data/local/tmp/x"), Stat::Missing);
        fs.write("/data/local/tmp/x", b"abc".to_vec(), 0o644, 7)
            .unwrap();
        assert_eq!(
            fs.stat("/data/local/tmp/x"),
            Stat::File {
                mode: MODE_FILE,
                size: 3,
                mtime: 7
            }
        );
        assert_eq!(fs.read("/data/local/tmp/x").unwrap().as_slice(), b"abc");
        assert!(fs.write("/nope/x", vec![], 0o644, 0).is_err());
        assert!(fs.write("/data/local/tmp", vec![], 0o644, 0).is_err());
        let names: Vec<String> = fs
            .list("/data/local/tmp")
            .into_iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(names, vec!["x"]);
        assert!(fs.read("/data/local/tmp/y").is_err());
        assert!(fs.remove("/data/local/tmp/x"));
        assert!(!fs.remove("/data/local/tmp/x"));
    }
}
