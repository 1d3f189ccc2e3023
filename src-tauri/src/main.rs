//! The PhoneAgent desktop app binary.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // WebKitGTK's DMA-BUF renderer keeps a GPU-style buffer pipeline in the web process: about
    // 100 MB more (PSS 209 → 112 MB measured under Xvfb) for a UI that shows a few images, and
    // the renderer behind most Linux "blank window" reports. Off unless the user chose.
    #[cfg(target_os = "linux")]
    if std::env::var_os("WEBKIT_DISABLE_DMABUF_RENDERER").is_none() {
        // SAFETY: the first statement of main, before any thread exists.
        unsafe { std::env::set_var("WEBKIT_DISABLE_DMABUF_RENDERER", "1") };
    }
    phoneagent_app::run();
}
