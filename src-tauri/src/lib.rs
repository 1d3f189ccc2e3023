//! # phoneagent-app
//!
//! PhoneAgent's desktop app (SPEC U1–U7, P5): a thin Tauri 2 layer of commands and events over
//! the same core crates as the CLI. Nothing here decides what the agent does.
//!
//! Code map:
//! * `commands` — the `#[tauri::command]`s, one-line adapters over [`state::AppState`].
//! * [`state`] — device sources, the in-process virtual phone, the mirror, runs (an `Agent`
//!   per run, its `EventEnvelope`s forwarded to the webview as `agent-event`), approvals through
//!   the runtime's `PendingApprovals` (validated against id, expiry and kind), settings, keys
//!   (OS keyring only), history and exports.
//! * [`mirror`] — the live mirror (stream frames, else polled screenshots) and the `pa:` URI
//!   scheme that serves its frames and stored screenshots (thumbnails, views, originals) to
//!   the webview as images.
//! * [`connection`] — Settings' provider presets and families, the connection test (over
//!   `phoneagent_llm::connection_test`) and whether the actor can start (first-start setup).
//! * [`notify`] — native notifications with Approve / Reject actions; first answer wins.
//! * [`settings`] — [`settings::AppSettings`], persisted in SQLite through the store.
//! * [`dto`] / [`error`] — the shapes that cross the boundary; TypeScript twins are generated
//!   by ts-rs into `ui/src/lib/bindings/`.
//!
//! Security: the webview loads only the bundled UI (no remote content), under a strict CSP;
//! the capability `default` grants our own commands and event listening, nothing else
//! (`capabilities/default.json`, `permissions/app.toml`).
//!
//! Environment: `PHONEAGENT_HOME` (data directory, from the store), `PHONEAGENT_APP_SIM_PORT`
//! (port of the virtual phone, default ephemeral), `ADB_SERVER_SOCKET` /
//! `ANDROID_ADB_SERVER_PORT` (the user's adb server), `PHONEAGENT_EXPORT_DIR`.

pub mod commands;
pub mod connection;
pub mod dto;
pub mod error;
#[doc(hidden)]
pub mod fixtures;
pub mod mirror;
pub mod notify;
pub mod settings;
pub mod state;

use std::path::PathBuf;
use std::sync::Arc;

use tauri::Manager;

/// Where exports go: `$PHONEAGENT_EXPORT_DIR`, else the data directory's `exports/`.
fn export_dir(db_path: &std::path::Path) -> PathBuf {
    std::env::var_os("PHONEAGENT_EXPORT_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            db_path
                .parent()
                .map(|p| p.join("exports"))
                .unwrap_or_else(|| PathBuf::from("exports"))
        })
}

/// Start the app. Exits the process with status 1 and a message when the data store cannot
/// be opened or the window cannot be created.
pub fn run() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let state = match phoneagent_store::default_db_path()
        .map_err(error::AppError::from)
        .and_then(|p| state::AppState::open(p.clone(), export_dir(&p)))
    {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("PhoneAgent could not start: {}", e.message);
            std::process::exit(1);
        }
    };
    let result = tauri::Builder::default()
        .setup(move |app| {
            app.manage(state);
            Ok(())
        })
        // Pictures reach the webview as URLs of this scheme, not as base64 in events (issue
        // #14): `pa://localhost/mirror/<seq>`, `pa://localhost/shot/<sha256>`.
        // `pa://localhost/thumb/<sha256>`: answered on a blocking thread (PNG decode), never on
        // the webview's main thread.
        .register_asynchronous_uri_scheme_protocol("pa", |ctx, request, responder| {
            let state = ctx
                .app_handle()
                .state::<Arc<state::AppState>>()
                .inner()
                .clone();
            let path = request.uri().path().to_string();
            tauri::async_runtime::spawn_blocking(move || {
                responder.respond(mirror::serve(
                    &path,
                    state.mirror_slot(),
                    state.thumb_cache(),
                    |h| state.screenshot_bytes(h),
                ));
            });
        })
        .invoke_handler(tauri::generate_handler![
            commands::get_app_info,
            commands::list_devices,
            commands::select_device,
            commands::start_virtual_phone,
            commands::device_readiness,
            commands::mirror_start,
            commands::mirror_stop,
            commands::take_over_tap,
            commands::take_over_swipe,
            commands::pending_requests,
            commands::answer_request,
            commands::start_run,
            commands::start_demo,
            commands::demo_scenarios,
            commands::stop_run,
            commands::pause_run,
            commands::approval_status,
            commands::grant_override,
            commands::add_direct_device,
            commands::remove_direct_device,
            commands::set_auto_review_suspended,
            commands::get_approval_policy,
            commands::save_approval_policy,
            commands::approval_reviews,
            commands::set_language,
            commands::active_run,
            commands::recent_tasks,
            commands::get_settings,
            commands::save_settings,
            commands::key_status,
            commands::set_api_key,
            commands::delete_api_key,
            commands::model_catalog,
            commands::profile_family,
            commands::test_connection,
            commands::setup_status,
            commands::list_runs,
            commands::run_events,
            commands::get_screenshot,
            commands::run_ledger,
            commands::export_run,
        ])
        .run(tauri::generate_context!());
    if let Err(e) = result {
        eprintln!("PhoneAgent could not open its window: {e}");
        std::process::exit(1);
    }
}
