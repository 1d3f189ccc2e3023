//! Tauri build script: generates the context (config, capabilities, icons) and one
//! `allow-<command>` permission per app command, so the capability can grant exactly those.
/// The bundled UI (`frontendDist`). On a clean clone it does not exist until
/// `npm ci && npm run build` ran in `ui/` (scripts/test.sh does that first); so that the
/// workspace still compiles (`cargo clippy --workspace`), a placeholder page that says what to
/// do is written when the directory is missing. A real UI build replaces it.
fn ensure_frontend_dist() {
    let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    if dist.join("index.html").exists() {
        return;
    }
    let page = "<!doctype html><meta charset=utf-8><title>PhoneAgent</title>\n\
        <p>The PhoneAgent UI was not built. Run <code>npm ci &amp;&amp; npm run build</code> in \
        <code>ui/</code>, then rebuild the app.</p>\n";
    if let Err(e) =
        std::fs::create_dir_all(&dist).and_then(|()| std::fs::write(dist.join("index.html"), page))
    {
        println!(
            "cargo:warning=could not write a placeholder {}: {e}",
            dist.display()
        );
    }
}

fn main() {
    ensure_frontend_dist();
    let commands = &[
        "get_app_info",
        "list_devices",
        "select_device",
        "start_virtual_phone",
        "device_readiness",
        "mirror_start",
        "mirror_stop",
        "take_over_tap",
        "take_over_swipe",
        "pending_requests",
        "answer_request",
        "start_run",
        "stop_run",
        "pause_run",
        "approval_status",
        "grant_override",
        "add_direct_device",
        "remove_direct_device",
        "set_auto_review_suspended",
        "get_approval_policy",
        "save_approval_policy",
        "approval_reviews",
        "set_language",
        "active_run",
        "recent_tasks",
        "get_settings",
        "save_settings",
        "key_status",
        "set_api_key",
        "delete_api_key",
        "list_runs",
        "run_events",
        "get_screenshot",
        "run_ledger",
        "export_run",
    ];
    let attrs = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(commands));
    if let Err(e) = tauri_build::try_build(attrs) {
        eprintln!("tauri build failed: {e:#}");
        std::process::exit(1);
    }
}
