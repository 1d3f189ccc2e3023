//! The PhoneAgent desktop app binary.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // WebKitGTK's DMA-BUF renderer keeps a GPU-style buffer pipeline in the web process: about
    // 100 MB more (PSS 209 → 112 MB measured under Xvfb) for a UI that shows a few images, and
    // the renderer behind most Linux "blank window" reports. Off unless the user chose: WebKit
    // reads the variable itself, so the process replaces itself with the variable set (same
    // pid and arguments) before anything starts.
    #[cfg(target_os = "linux")]
    if std::env::var_os("WEBKIT_DISABLE_DMABUF_RENDERER").is_none()
        && let Ok(exe) = std::env::current_exe()
    {
        use std::os::unix::process::CommandExt as _;
        let err = std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env("WEBKIT_DISABLE_DMABUF_RENDERER", "1")
            .exec();
        eprintln!(
            "note: could not restart with WEBKIT_DISABLE_DMABUF_RENDERER=1 ({err}); going on"
        );
    }
    phoneagent_app::run();
}
