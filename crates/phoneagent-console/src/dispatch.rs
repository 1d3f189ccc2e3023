//! [`Console::dispatch`]: every console command by name, with its arguments as the UI sends
//! them (one JSON object, argument names in camelCase as Tauri names a command's parameters:
//! `select_device` takes `{adbAddr, serial}`), its result serialized exactly as the typed
//! method returns it (`()` → `null`). The run controls (`stop_run`, `pause_run`, `active_run`,
//! `pending_requests`, `approval_status`, `grant_override`, `set_auto_review_suspended`) and
//! the person's taps take an optional `serial` (a phone's serial or a run id; see
//! [`crate::sessions`]); `answer_request` finds its run by the request id. The desktop app's Tauri commands and `phoneagent web`'s
//! `POST /api/<command>` serve the same list ([`crate::COMMANDS`]), except the two mirror
//! commands, which stream ([`Console::start_mirror`], [`Console::stop_mirror`]).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::console::Console;
use crate::error::{AppError, AppResult};

/// The commands that stream and so are not served by [`Console::dispatch`].
pub const STREAMING_COMMANDS: &[&str] = &["mirror_start", "mirror_stop"];

/// A command's named arguments.
struct Args<'a> {
    cmd: &'a str,
    map: Map<String, Value>,
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'a> Args<'a> {
    fn new(cmd: &'a str, args: Value) -> AppResult<Self> {
        match args {
            Value::Null => Ok(Self {
                cmd,
                map: Map::new(),
            }),
            Value::Object(map) => Ok(Self { cmd, map }),
            other => Err(AppError::bad_request(format!(
                "`{cmd}`: the arguments must be a JSON object of named arguments, not {}",
                json_kind(&other)
            ))),
        }
    }

    /// Argument `name` (camelCase) as a `T`; a missing argument reads as `null` (so an
    /// `Option` is `None`, as with Tauri).
    fn get<T: DeserializeOwned>(&self, name: &str) -> AppResult<T> {
        let (value, missing) = match self.map.get(name) {
            Some(v) => (v.clone(), false),
            None => (Value::Null, true),
        };
        serde_json::from_value(value).map_err(|e| {
            let cmd = self.cmd;
            AppError::bad_request(if missing {
                format!("`{cmd}` needs the argument `{name}`: {e}")
            } else {
                format!("`{cmd}`: argument `{name}`: {e}")
            })
        })
    }
}

impl Args<'_> {
    /// The optional `serial` argument of the run controls: a phone's serial or a run id
    /// (several phones run at once, see [`crate::sessions`]).
    fn serial(&self) -> AppResult<Option<String>> {
        self.get("serial")
    }
}

fn ok<T: Serialize>(v: T) -> AppResult<Value> {
    serde_json::to_value(v)
        .map_err(|e| AppError::internal(format!("could not serialize the result: {e}")))
}

fn unknown(cmd: &str) -> AppError {
    let served: Vec<&str> = crate::COMMANDS
        .iter()
        .copied()
        .filter(|c| !STREAMING_COMMANDS.contains(c))
        .collect();
    if STREAMING_COMMANDS.contains(&cmd) {
        AppError::bad_request(format!(
            "`{cmd}` streams and is not served by dispatch: use Console::start_mirror / Console::stop_mirror"
        ))
    } else {
        AppError::bad_request(format!(
            "unknown command `{cmd}`: expected one of {}",
            served.join(", ")
        ))
    }
}

impl Console {
    /// Run command `cmd` with its named arguments `args` (a JSON object, or `null` for none)
    /// and return its result as JSON, exactly as the desktop app's Tauri command of that name
    /// returns it.
    ///
    /// # Errors
    /// `bad_request` for an unknown (or streaming) command, arguments that are not an object,
    /// or an argument missing or of the wrong type (the message names the command, the
    /// argument and what was expected); otherwise the command's own [`AppError`].
    pub async fn dispatch(&self, cmd: &str, args: Value) -> AppResult<Value> {
        if !crate::COMMANDS.contains(&cmd) || STREAMING_COMMANDS.contains(&cmd) {
            return Err(unknown(cmd));
        }
        let a = Args::new(cmd, args)?;
        match cmd {
            // ---- devices ----
            "get_app_info" => ok(self.info()),
            "list_devices" => ok(self.list_devices().await),
            "select_device" => ok(self.select_device(a.get("adbAddr")?, a.get("serial")?)?),
            "start_virtual_phone" => ok(self.start_virtual_phone().await?),
            "device_readiness" => ok(self.readiness().await?),
            "add_direct_device" => ok(self.add_direct_device(&a.get::<String>("addr")?)?),
            "remove_direct_device" => ok(self.remove_direct_device(&a.get::<String>("serial")?)?),
            "take_over_tap" => {
                let serial: Option<String> = a.get("serial")?;
                ok(self
                    .take_over_tap_on(serial.as_deref(), a.get("x")?, a.get("y")?)
                    .await?)
            }
            "take_over_swipe" => ok(self
                .take_over_swipe_on(
                    a.get::<Option<String>>("serial")?.as_deref(),
                    (a.get("x1")?, a.get("y1")?),
                    (a.get("x2")?, a.get("y2")?),
                    a.get("durationMs")?,
                )
                .await?),
            // ---- runs ----
            "start_run" => ok(self.start_run(a.get("request")?).await?),
            "start_demo" => {
                let name: String = a.get("name")?;
                let mode: Option<String> = a.get("mode")?;
                ok(self.start_demo(&name, mode.as_deref()).await?)
            }
            "demo_scenarios" => ok(self.demo_scenarios()),
            "stop_run" => ok(self.stop_run_of(a.serial()?.as_deref())?),
            "pause_run" => ok(self.set_paused_of(a.serial()?.as_deref(), a.get("paused")?)?),
            "active_run" => ok(self.active_run_of(a.serial()?.as_deref())),
            "active_runs" => ok(self.active_runs()),
            "recent_tasks" => ok(self.recent_tasks()?),
            // ---- approvals ----
            "pending_requests" => ok(self.pending_of(a.serial()?.as_deref())),
            "answer_request" => {
                let id: String = a.get("id")?;
                ok(self.answer(&id, a.get("answer")?).await?)
            }
            "approval_status" => ok(self.approval_status_of(a.serial()?.as_deref())),
            "grant_override" => {
                ok(self.grant_override_of(a.serial()?.as_deref(), &a.get::<String>("requestId")?)?)
            }
            "set_auto_review_suspended" => {
                ok(self.set_auto_review_suspended_of(a.serial()?.as_deref(), a.get("suspended")?)?)
            }
            "get_approval_policy" => ok(self.approval_policy()?),
            "save_approval_policy" => ok(self.save_approval_policy(&a.get("config")?)?),
            "approval_reviews" => ok(self.approval_reviews(&a.get::<String>("runId")?)?),
            // ---- settings and keys ----
            "set_language" => ok(self.set_language(&a.get::<String>("lang")?)?),
            "get_settings" => ok(self.settings()?),
            "save_settings" => ok(self.save_settings(&a.get("settings")?)?),
            "key_status" => ok(self.key_status(a.get("entries")?).await),
            "set_api_key" => ok(self.set_api_key(a.get("entry")?, a.get("key")?).await?),
            "delete_api_key" => ok(self.delete_api_key(a.get("entry")?).await?),
            "model_catalog" => ok(self.model_catalog()),
            "profile_family" => ok(self.profile_family(&a.get("profile")?)?),
            "test_connection" => ok(self.test_connection(&a.get("profile")?).await?),
            "setup_status" => ok(self.setup_status(&a.get::<String>("profile")?).await?),
            // ---- history ----
            "list_runs" => ok(self.list_runs(a.get::<u32>("limit")? as usize)?),
            "run_events" => ok(self.run_events(&a.get::<String>("runId")?)?),
            "get_screenshot" => ok(self.screenshot(&a.get::<String>("sha256")?)?),
            "run_ledger" => ok(self.ledger(&a.get::<String>("runId")?)?),
            "export_run" => {
                let run_id: String = a.get("runId")?;
                ok(self.export(&run_id, &a.get::<String>("format")?)?)
            }
            _ => Err(unknown(cmd)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;

    use super::*;
    use crate::settings::AppSettings;

    fn console() -> (tempfile::TempDir, std::sync::Arc<Console>) {
        let dir = tempfile::tempdir().unwrap();
        let c = Console::open(
            dir.path().join("phoneagent.sqlite3"),
            dir.path().join("exports"),
        )
        .unwrap();
        (dir, c)
    }

    #[tokio::test]
    async fn an_unknown_command_is_a_bad_request_naming_it() {
        let (_d, c) = console();
        let e = c.dispatch("launch_rockets", json!({})).await.unwrap_err();
        assert_eq!(e.code, "bad_request");
        assert!(e.message.contains("`launch_rockets`"), "{}", e.message);
        assert!(
            e.message.contains("get_settings"),
            "lists what it serves: {}",
            e.message
        );
        let e = c.dispatch("mirror_start", json!({})).await.unwrap_err();
        assert_eq!(e.code, "bad_request");
        assert!(e.message.contains("start_mirror"), "{}", e.message);
    }

    #[tokio::test]
    async fn bad_arguments_name_the_command_the_argument_and_what_was_expected() {
        let (_d, c) = console();
        let e = c
            .dispatch("select_device", json!({"serial": "emulator-5554"}))
            .await
            .unwrap_err();
        assert_eq!(e.code, "bad_request");
        assert!(
            e.message.contains("`select_device`") && e.message.contains("`adbAddr`"),
            "{}",
            e.message
        );
        assert!(e.message.contains("expected a string"), "{}", e.message);
        let e = c
            .dispatch("take_over_tap", json!({"x": "left", "y": 3}))
            .await
            .unwrap_err();
        assert_eq!(e.code, "bad_request");
        assert!(
            e.message.contains("`x`") && e.message.contains("u32"),
            "{}",
            e.message
        );
        let e = c.dispatch("list_runs", json!([10])).await.unwrap_err();
        assert_eq!(e.code, "bad_request");
        assert!(e.message.contains("JSON object"), "{}", e.message);
        // snake_case is not what the UI sends: refused, not silently defaulted.
        let e = c
            .dispatch("approval_reviews", json!({"run_id": "x"}))
            .await
            .unwrap_err();
        assert!(e.message.contains("`runId`"), "{}", e.message);
        // A nested value's own fields are checked by its type.
        let e = c
            .dispatch("start_run", json!({"request": {"task": "x"}}))
            .await
            .unwrap_err();
        assert_eq!(e.code, "bad_request");
        assert!(
            e.message.contains("`request`") && e.message.contains("missing field"),
            "{}",
            e.message
        );
    }

    #[tokio::test]
    async fn settings_round_trip_through_dispatch() {
        let (_d, c) = console();
        let got = c.dispatch("get_settings", Value::Null).await.unwrap();
        assert_eq!(got, serde_json::to_value(c.settings().unwrap()).unwrap());
        let mut s: AppSettings = serde_json::from_value(got).unwrap();
        s.default_mode = "hard".into();
        s.max_steps = 42;
        let saved = c
            .dispatch("save_settings", json!({ "settings": s }))
            .await
            .unwrap();
        assert_eq!(saved, Value::Null, "() is null, as Tauri returns it");
        let back = c.dispatch("get_settings", json!({})).await.unwrap();
        assert_eq!(serde_json::from_value::<AppSettings>(back).unwrap(), s);
        // Validation errors keep the command's own code.
        s.max_steps = 0;
        let e = c
            .dispatch("save_settings", json!({ "settings": s }))
            .await
            .unwrap_err();
        assert_eq!(e.code, "invalid_input");
        // Option results are null when empty; typed errors pass through.
        assert_eq!(
            c.dispatch("active_run", json!({})).await.unwrap(),
            Value::Null
        );
        assert_eq!(
            c.dispatch("stop_run", json!({})).await.unwrap_err().code,
            "not_running"
        );
        let e = c
            .dispatch("export_run", json!({"runId": "nope", "format": "json"}))
            .await
            .unwrap_err();
        assert_eq!(e.code, "invalid_input");
    }

    /// Every listed command but the two streaming ones has an arm: none answers "unknown".
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_command_is_dispatched() {
        let (_d, c) = console();
        // Arguments of the wrong type everywhere: commands that take arguments refuse them by
        // name, the others run (on a console with no phone and no model).
        let junk = json!({
            "adbAddr": 1, "serial": 1, "addr": 1, "x": "a", "x1": "a", "request": 1, "name": 1,
            "paused": "a", "id": 1, "requestId": 1, "suspended": "a", "config": 1, "runId": 1,
            "lang": 1, "settings": 1, "entries": 1, "entry": 1, "profile": 1, "limit": "a",
            "sha256": 1,
        });
        for cmd in crate::COMMANDS {
            // Real work that needs nothing else: skip starting the virtual phone here.
            if *cmd == "start_virtual_phone" {
                continue;
            }
            let r = c.dispatch(cmd, junk.clone()).await;
            if STREAMING_COMMANDS.contains(cmd) {
                assert!(r.is_err(), "{cmd}");
                continue;
            }
            if let Err(e) = r {
                assert!(
                    !e.message.contains("unknown command"),
                    "{cmd}: {}",
                    e.message
                );
            }
        }
    }
}
