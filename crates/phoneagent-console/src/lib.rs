//! # phoneagent-console
//!
//! The backend of PhoneAgent's consoles (SPEC U1–U7, P5; issue #13 "one front door"): the
//! commands and events the desktop app (`src-tauri`, over Tauri's IPC) and `phoneagent web`
//! (over HTTP) serve, with no UI toolkit in it. A front end is an adapter: it passes a command
//! name and its JSON arguments to [`Console::dispatch`], forwards [`Console::subscribe`]'s
//! [`ConsoleEvent`]s to its clients, streams the mirror with [`Console::start_mirror`] and
//! answers picture URLs (`mirror/<seq>`, `mirror/<serial>/<seq>`, `thumb/<sha>`, `view/<sha>`, `shot/<sha>`) with
//! [`Console::picture`]. Nothing here decides what the agent does.
//!
//! Code map:
//! * [`console`] — [`Console`]: the state, [`Console::open`], [`Console::subscribe`]; its
//!   methods live by panel: [`devices`] (device sources, direct links, the virtual phone,
//!   readiness, the person's taps), [`mirror`], [`runs`] (tasks and demos through a runtime
//!   `Session`, SPEC A7), [`sessions`] (one session per phone, which one a control reaches),
//!   [`approvals`] (pending requests, notifications, approve-for-me),
//!   [`settings`] (settings, keys in the OS keyring only), [`history`] (runs, events, ledger,
//!   exports).
//! * [`demo`] — the demo's scripted model and run configuration, shared with `phoneagent demo`.
//! * [`dispatch`] — [`Console::dispatch`]: every command by name with the arguments the UI sends
//!   (camelCase, as Tauri names them), results serialized as the typed methods return them.
//! * [`events`] — [`ConsoleEvent`] and the event names the UI listens to.
//! * [`mirror`] — the live mirror (stream frames, else polled screenshots) and the picture
//!   paths ([`mirror::serve`] → [`mirror::PictureResponse`]).
//! * [`connection`] — Settings' provider presets and families, the connection test (over
//!   `phoneagent_llm::connection_test`) and whether the actor can start (first-start setup).
//! * [`notify`] — native notifications with Approve / Reject actions; first answer wins.
//! * [`settings`] — [`settings::AppSettings`], persisted in SQLite through the store.
//! * [`dto`] / [`error`] — the shapes that cross the boundary; TypeScript twins are generated
//!   by ts-rs into `ui/src/lib/bindings/` (`TS_RS_EXPORT_DIR`, `.cargo/config.toml`).
//!
//! Environment: `PHONEAGENT_APP_SIM_PORT` (port of the virtual phone, default ephemeral),
//! `ADB_SERVER_SOCKET` / `ANDROID_ADB_SERVER_PORT` (the user's adb server).

pub mod approvals;
pub mod connection;
pub mod console;
pub mod demo;
pub mod devices;
pub mod dispatch;
pub mod dto;
pub mod error;
pub mod events;
#[doc(hidden)]
pub mod fixtures;
pub mod history;
pub mod mirror;
pub mod notify;
pub mod runs;
pub mod sessions;
pub mod settings;
pub mod virtual_phone;

pub use console::Console;
pub use error::{AppError, AppResult};
pub use events::ConsoleEvent;
pub use mirror::PictureResponse;

/// Every command name the consoles serve (the Tauri build script makes one `allow-<name>`
/// permission of each; [`Console::dispatch`] serves all but the two mirror commands, which
/// stream: use [`Console::start_mirror`] / [`Console::stop_mirror`]).
pub const COMMANDS: &[&str] = include!("command_names.rs");
