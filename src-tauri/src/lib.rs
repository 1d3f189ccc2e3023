//! # phoneagent-app
//!
//! PhoneAgent's desktop app (SPEC U1–U7, P5): a thin Tauri 2 layer of commands and events over
//! the same core crates as the CLI. Nothing here decides what the agent does.
//!
//! Code map:
//! * `commands` — the `#[tauri::command]`s, one-line typed adapters over
//!   [`phoneagent_console::Console`], the backend this app shares with `phoneagent web`
//!   (devices, mirror, runs, approvals, settings, history: `crates/phoneagent-console`).
//! * [`mirror`] — the `pa:` URI scheme's adapter: [`phoneagent_console::Console::picture`] as
//!   a Tauri HTTP response.
//! * [`forward_events`] — every [`phoneagent_console::ConsoleEvent`] emitted to the webview as
//!   a Tauri event of the same name (`agent-event`, `run-ended`).
//!
//! Security: the webview loads only the bundled UI (no remote content), under a strict CSP;
//! the capability `default` grants our own commands and event listening, nothing else
//! (`capabilities/default.json`, `permissions/app.toml`).
//!
//! Environment: `PHONEAGENT_HOME` (data directory, from the store), `PHONEAGENT_APP_SIM_PORT`
//! (port of the virtual phone, default ephemeral), `ADB_SERVER_SOCKET` /
//! `ANDROID_ADB_SERVER_PORT` (the user's adb server), `PHONEAGENT_EXPORT_DIR`.

pub mod commands;
pub mod mirror;

use std::sync::Arc;

use phoneagent_console::Console;
use tauri::{Emitter, Manager};

/// Emit every event of `console` to the webview as a Tauri event of the same name and payload,
/// until the console is gone.
pub fn forward_events(app: tauri::AppHandle, console: &Console) {
    let mut rx = console.subscribe();
    tauri::async_runtime::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(ev) => {
                    if let Err(e) = app.emit(&ev.name, ev.payload) {
                        tracing::warn!(error = %e, event = %ev.name, "could not emit an event");
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(skipped = n, "the webview event forwarder lagged");
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    });
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
        .map_err(phoneagent_console::AppError::from)
        .and_then(|p| {
            Console::open(
                p.clone(),
                phoneagent_console::console::default_export_dir(&p),
            )
        }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("PhoneAgent could not start: {}", e.message);
            std::process::exit(1);
        }
    };
    // The virtual phone runs in its own process (this binary again, see `main`), so its
    // rendering and video encoder are not the app's memory (issue #14).
    match phoneagent_console::virtual_phone::VirtualPhoneProcess::this_binary() {
        Ok(p) => state.set_virtual_phone_process(p),
        Err(e) => tracing::warn!("the virtual phone will run inside the app: {e}"),
    }
    let result = tauri::Builder::default()
        .setup(move |app| {
            forward_events(app.handle().clone(), &state);
            app.manage(state);
            Ok(())
        })
        // Pictures reach the webview as URLs of this scheme, not as base64 in events (issue
        // #14): `pa://localhost/mirror/<seq>`, `pa://localhost/shot/<sha256>`.
        // `pa://localhost/thumb/<sha256>`: answered on a blocking thread (PNG decode), never on
        // the webview's main thread.
        .register_asynchronous_uri_scheme_protocol("pa", |ctx, request, responder| {
            let state = ctx.app_handle().state::<Arc<Console>>().inner().clone();
            let path = request.uri().path().to_string();
            tauri::async_runtime::spawn_blocking(move || {
                responder.respond(mirror::response(state.picture(&path)));
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
            commands::active_runs,
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
