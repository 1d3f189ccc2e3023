//! Tauri build script: generates the context (config, capabilities, icons) and one
//! `allow-<command>` permission per app command, so the capability can grant exactly those.
fn main() {
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
