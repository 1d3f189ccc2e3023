//! The `#[tauri::command]`s: one-line typed adapters over [`Console`] (SPEC U7, issue #13);
//! `phoneagent web` serves the same commands through [`Console::dispatch`]. Each returns
//! `Result<T, AppError>`; the webview sees errors as `{code, message}`. Commands that read the
//! store are `async` so they run on the async runtime, never on the main thread (on Linux the
//! webview's UI thread: a slow export or many thumbnails would freeze the window).

use std::sync::Arc;

use phoneagent_console::Console;
use phoneagent_console::dto::{
    AppInfo, CheckView, ConnectionTestView, DemoScenarioView, DevicesView, ExportResult,
    FamilyView, KeyStatus, LedgerRow, MirrorMessage, ModelCatalog, PendingRequest, PhoneRunView,
    RunSummary, SelectedDevice, SetupStatus, StartRunRequest, VirtualPhone,
};
use phoneagent_console::error::AppResult;
use phoneagent_console::settings::{AppSettings, ApprovalPolicySettings, ModelProfile};
use phoneagent_protocol::{ApprovalReview, EventEnvelope};
use phoneagent_review::auto::{AutoReviewConfig, AutoReviewStatus, OverrideGrant};
use tauri::State;
use tauri::ipc::Channel;

type S<'a> = State<'a, Arc<Console>>;

/// Data file, export directory, version.
#[tauri::command]
pub fn get_app_info(state: S<'_>) -> AppInfo {
    state.info()
}

/// Phones from every source, with problems and fixes (U1).
#[tauri::command]
pub async fn list_devices(state: S<'_>) -> AppResult<DevicesView> {
    Ok(state.list_devices().await)
}

/// Choose the phone.
#[tauri::command]
pub fn select_device(state: S<'_>, adb_addr: String, serial: String) -> AppResult<SelectedDevice> {
    state.select_device(adb_addr, serial)
}

/// Start (or return) the in-process virtual phone and select it.
#[tauri::command]
pub async fn start_virtual_phone(state: S<'_>) -> AppResult<VirtualPhone> {
    state.start_virtual_phone().await
}

/// Readiness checks of the selected phone (D2).
#[tauri::command]
pub async fn device_readiness(state: S<'_>) -> AppResult<Vec<CheckView>> {
    state.readiness().await
}

/// Start mirroring phone `serial` (default: the selected phone) into `channel`; other
/// phones' mirrors go on.
#[tauri::command]
pub async fn mirror_start(
    state: S<'_>,
    channel: Channel<MirrorMessage>,
    serial: Option<String>,
) -> AppResult<()> {
    state
        .start_mirror_of(serial.as_deref(), move |m| channel.send(m).is_ok())
        .await
}

/// Stop phone `serial`'s mirror (default: every mirror).
#[tauri::command]
pub fn mirror_stop(state: S<'_>, serial: Option<String>) {
    state.stop_mirror_of(serial.as_deref());
}

/// Tap on phone `serial` (default: the selected one) during a take_over (device px).
#[tauri::command]
pub async fn take_over_tap(state: S<'_>, x: u32, y: u32, serial: Option<String>) -> AppResult<()> {
    state.take_over_tap_on(serial.as_deref(), x, y).await
}

/// Swipe on the phone during a take_over (device px, ms).
#[tauri::command]
pub async fn take_over_swipe(
    state: S<'_>,
    x1: u32,
    y1: u32,
    x2: u32,
    y2: u32,
    duration_ms: u32,
    serial: Option<String>,
) -> AppResult<()> {
    state
        .take_over_swipe_on(serial.as_deref(), (x1, y1), (x2, y2), duration_ms)
        .await
}

/// Requests waiting for a human on phone `serial` (a serial or a run id), or on every phone.
#[tauri::command]
pub fn pending_requests(state: S<'_>, serial: Option<String>) -> Vec<PendingRequest> {
    state.pending_of(serial.as_deref())
}

/// Answer a pending request; validated against its id, expiry and kind in Rust.
#[tauri::command]
pub async fn answer_request(
    state: S<'_>,
    id: String,
    answer: phoneagent_protocol::event::HumanResponse,
) -> AppResult<()> {
    state.answer(&id, answer).await
}

/// Start a task on the selected phone (U2).
#[tauri::command]
pub async fn start_run(state: S<'_>, request: StartRunRequest) -> AppResult<SelectedDevice> {
    state.start_run(request).await
}

/// Run a demo scenario on the in-app virtual phone with the scripted model (C1).
#[tauri::command]
pub async fn start_demo(
    state: S<'_>,
    name: String,
    mode: Option<String>,
) -> AppResult<SelectedDevice> {
    state.start_demo(&name, mode.as_deref()).await
}

/// The demo scenarios.
#[tauri::command]
pub fn demo_scenarios(state: S<'_>) -> Vec<DemoScenarioView> {
    state.demo_scenarios()
}

/// Stop the running task on phone `serial` (a serial or a run id; default: the selected
/// phone's, else the only one).
#[tauri::command]
pub fn stop_run(state: S<'_>, serial: Option<String>) -> AppResult<()> {
    state.stop_run_of(serial.as_deref())
}

/// Pause (`paused = true`) or resume the running task (U2) on phone `serial` (as `stop_run`).
#[tauri::command]
pub fn pause_run(state: S<'_>, paused: bool, serial: Option<String>) -> AppResult<()> {
    state.set_paused_of(serial.as_deref(), paused)
}

/// Add a phone by network address (`HOST[:PORT]`, direct TCP without an adb server; D1).
#[tauri::command(async)]
pub fn add_direct_device(state: S<'_>, addr: String) -> AppResult<String> {
    state.add_direct_device(&addr)
}

/// Forget a phone added by address.
#[tauri::command(async)]
pub fn remove_direct_device(state: S<'_>, serial: String) -> AppResult<()> {
    state.remove_direct_device(&serial)
}

/// Live approve-for-me state of the running task (AR7/AR8), or null outside that mode.
#[tauri::command]
pub fn approval_status(state: S<'_>, serial: Option<String>) -> Option<AutoReviewStatus> {
    state.approval_status_of(serial.as_deref())
}

/// One-time override of the running task's denial `request_id` (AR7).
#[tauri::command]
pub fn grant_override(
    state: S<'_>,
    request_id: String,
    serial: Option<String>,
) -> AppResult<OverrideGrant> {
    state.grant_override_of(serial.as_deref(), &request_id)
}

/// Switch the running task's approve-for-me reviewer off (`suspended = true`: a person decides)
/// or back on (AR8).
#[tauri::command]
pub fn set_auto_review_suspended(
    state: S<'_>,
    suspended: bool,
    serial: Option<String>,
) -> AppResult<AutoReviewStatus> {
    state.set_auto_review_suspended_of(serial.as_deref(), suspended)
}

/// The approve-for-me policy (rules, tool table, gate options) and its source (AR2–AR7).
#[tauri::command(async)]
pub fn get_approval_policy(state: S<'_>) -> AppResult<ApprovalPolicySettings> {
    state.approval_policy()
}

/// Validate and save the approve-for-me policy (used from the next run).
#[tauri::command(async)]
pub fn save_approval_policy(state: S<'_>, config: AutoReviewConfig) -> AppResult<()> {
    state.save_approval_policy(&config)
}

/// The approve-for-me ledger of a run (AR8), rebuilt from its events.
#[tauri::command(async)]
pub fn approval_reviews(state: S<'_>, run_id: String) -> AppResult<Vec<ApprovalReview>> {
    state.approval_reviews(&run_id)
}

/// Set the app's language (`en`/`zh`) for the UI and the reasons of later runs.
#[tauri::command(async)]
pub fn set_language(state: S<'_>, lang: String) -> AppResult<()> {
    state.set_language(&lang)
}

/// Id of the running task ("" while it starts), or null.
#[tauri::command]
pub fn active_run(state: S<'_>, serial: Option<String>) -> Option<String> {
    state.active_run_of(serial.as_deref())
}

/// Every phone with a run (running or last finished): one Run panel each.
#[tauri::command]
pub fn active_runs(state: S<'_>) -> Vec<PhoneRunView> {
    state.active_runs()
}

/// Recent tasks, newest first.
#[tauri::command(async)]
pub fn recent_tasks(state: S<'_>) -> AppResult<Vec<String>> {
    state.recent_tasks()
}

/// The settings (no keys in them).
#[tauri::command(async)]
pub fn get_settings(state: S<'_>) -> AppResult<AppSettings> {
    state.settings()
}

/// Validate and save the settings.
#[tauri::command(async)]
pub fn save_settings(state: S<'_>, settings: AppSettings) -> AppResult<()> {
    state.save_settings(&settings)
}

/// Which keyring entries hold a key.
#[tauri::command]
pub async fn key_status(state: S<'_>, entries: Vec<String>) -> AppResult<Vec<KeyStatus>> {
    Ok(state.key_status(entries).await)
}

/// Store or replace an API key in the OS keyring (write-only).
#[tauri::command]
pub async fn set_api_key(state: S<'_>, entry: String, key: String) -> AppResult<()> {
    state.set_api_key(entry, key).await
}

/// Delete an API key from the OS keyring.
#[tauri::command]
pub async fn delete_api_key(state: S<'_>, entry: String) -> AppResult<bool> {
    state.delete_api_key(entry).await
}

/// The provider presets and model families Settings offers (SPEC M7, M8).
#[tauri::command]
pub fn model_catalog(state: S<'_>) -> ModelCatalog {
    state.model_catalog()
}

/// The family a profile talks in: as set, or detected from its model name (SPEC M7).
#[tauri::command]
pub fn profile_family(state: S<'_>, profile: ModelProfile) -> AppResult<FamilyView> {
    state.profile_family(&profile)
}

/// Settings' Test connection of a profile as edited (SPEC M1, M4, M7, M8): the shared
/// step-by-step connection test on synthetic images, with its key from the keyring.
#[tauri::command]
pub async fn test_connection(state: S<'_>, profile: ModelProfile) -> AppResult<ConnectionTestView> {
    state.test_connection(&profile).await
}

/// Whether profile `profile` (the actor's when empty) can start a task (issue #14 item 3).
#[tauri::command]
pub async fn setup_status(state: S<'_>, profile: String) -> AppResult<SetupStatus> {
    state.setup_status(&profile).await
}

/// Past runs (U6).
#[tauri::command(async)]
pub fn list_runs(state: S<'_>, limit: u32) -> AppResult<Vec<RunSummary>> {
    state.list_runs(limit as usize)
}

/// Recorded events of a run.
#[tauri::command(async)]
pub fn run_events(state: S<'_>, run_id: String) -> AppResult<Vec<EventEnvelope>> {
    state.run_events(&run_id)
}

/// A stored screenshot as a data URL.
#[tauri::command(async)]
pub fn get_screenshot(state: S<'_>, sha256: String) -> AppResult<String> {
    state.screenshot(&sha256)
}

/// The approval ledger of a run.
#[tauri::command(async)]
pub fn run_ledger(state: S<'_>, run_id: String) -> AppResult<Vec<LedgerRow>> {
    state.ledger(&run_id)
}

/// Export a run as `json` or `html`.
#[tauri::command(async)]
pub fn export_run(state: S<'_>, run_id: String, format: String) -> AppResult<ExportResult> {
    state.export(&run_id, &format)
}

/// Every command name, for the build script's permission manifest and tests.
pub const COMMANDS: &[&str] = phoneagent_console::COMMANDS;

#[cfg(test)]
mod tests {
    use super::COMMANDS;

    /// A command missing from the handler list, the capability or the name list fails at run
    /// time only ("command not found" / "not allowed"): check the three agree.
    #[test]
    fn every_command_is_registered_and_allowed() {
        let lib = include_str!("lib.rs");
        let perms = include_str!("../permissions/app.toml");
        for name in COMMANDS {
            assert!(
                lib.contains(&format!("commands::{name},")),
                "{name} is not in lib.rs's generate_handler!"
            );
            let allow = format!("\"allow-{}\"", name.replace('_', "-"));
            assert!(perms.contains(&allow), "{allow} is missing from app.toml");
        }
        let handlers = lib.matches("commands::").count();
        assert_eq!(
            handlers,
            COMMANDS.len(),
            "lib.rs registers commands that are not in command_names.rs"
        );
        // The set's own identifier is `allow-app-commands`; the rest are one per command.
        assert_eq!(perms.matches("\"allow-").count(), COMMANDS.len() + 1);
    }
}
