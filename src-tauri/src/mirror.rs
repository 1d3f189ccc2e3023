//! The `pa:` URI scheme's adapter: a [`PictureResponse`] of [`Console::picture`] as a Tauri
//! HTTP response (the pictures themselves are served by the console crate's `mirror`).
//!
//! [`Console::picture`]: phoneagent_console::Console::picture

use phoneagent_console::PictureResponse;

/// `p` as the response the webview gets (any origin may read it: the webview's own).
pub fn response(p: PictureResponse) -> tauri::http::Response<Vec<u8>> {
    tauri::http::Response::builder()
        .status(p.status)
        .header("Cache-Control", p.cache_control)
        .header("Access-Control-Allow-Origin", "*")
        .header("Content-Type", p.content_type)
        .body(p.bytes)
        .unwrap_or_else(|_| tauri::http::Response::new(Vec::new()))
}
