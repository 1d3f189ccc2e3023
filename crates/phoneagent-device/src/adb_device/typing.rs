//! Typing text (SPEC D4, D9): scrcpy's clipboard paste, else ADB Keyboard (switching the IME
//! behind an [`ImeGuard`] and the journal, restoring it after), else ASCII `input text`.

use super::{Inner, first_lines};
use crate::Result;
use crate::ime::{self, ImeGuard};
use crate::parse;
use crate::stream::hook::Gesture;
use crate::text::{self, ADB_KEYBOARD_IME};
use crate::types::DeviceError;
use std::time::Duration;

impl Inner {
    pub(super) async fn adb_keyboard_installed(&self) -> Result<bool> {
        let mut cached = self.adb_keyboard.lock().await;
        if let Some(v) = *cached {
            return Ok(v);
        }
        // `-a` lists installed IMEs, enabled or not; old `ime` tools may not know it.
        let mut ids = Vec::new();
        for cmd in ["ime list -a -s", "ime list -s"] {
            match self.shell(cmd, self.opts.command_timeout).await {
                Ok(out) if !out.failed() => {
                    ids = parse::parse_ime_list(&out.stdout_str());
                    if !ids.is_empty() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        let v = ids.iter().any(|i| i == ADB_KEYBOARD_IME);
        *cached = Some(v);
        Ok(v)
    }

    /// Make ADB Keyboard the current IME, arming the guard (before the switch) the first time.
    async fn ensure_adb_ime(&self) -> Result<()> {
        let mut slot = self.ime.lock().await;
        let current = self
            .map_err(
                "settings get secure default_input_method",
                ime::current_ime_on(&self.server, &self.serial, self.protocol).await,
            )
            .await?;
        if current.as_deref() == Some(ADB_KEYBOARD_IME) {
            return Ok(());
        }
        let fresh = slot.is_none();
        if fresh {
            // Before the switch: a kill right after it still finds the user's IME.
            let journal = match self.opts.ime_journal.as_deref() {
                Some(d) => Some(ime::ImeJournal::new(d, &self.serial).record(current.as_deref())?),
                None => None,
            };
            *slot = Some(
                ImeGuard::new(
                    self.server.clone(),
                    self.serial.clone(),
                    self.protocol,
                    current.clone(),
                )
                .with_journal(journal),
            );
        }
        let r = self
            .map_err(
                "ime set",
                ime::set_ime_on(
                    &self.server,
                    &self.serial,
                    self.protocol,
                    ADB_KEYBOARD_IME,
                    true,
                )
                .await,
            )
            .await;
        match r {
            Ok(()) => {
                tracing::info!(serial = %self.serial, from = ?current, "switched to ADB Keyboard");
                tokio::time::sleep(self.opts.ime_settle).await;
                Ok(())
            }
            Err(e) => {
                // Half-switched: put the user's IME back now unless the device is gone (then
                // the guard stays armed for later).
                if !e.is_device_lost()
                    && let Some(g) = slot.as_mut()
                    && g.restore().await.is_ok()
                {
                    *slot = None;
                }
                Err(e)
            }
        }
    }

    pub(super) async fn restore_ime(&self) -> Result<()> {
        let mut slot = self.ime.lock().await;
        if let Some(g) = slot.as_mut() {
            let r = g.restore().await;
            self.map_err("restore IME", r).await?;
            *slot = None;
        }
        Ok(())
    }

    pub(super) async fn restore_after_cancel(&self) {
        if let Err(e) = self.restore_ime().await {
            tracing::warn!(serial = %self.serial, "could not restore the IME after cancel: {e}");
        }
    }

    pub(super) async fn type_text(&self, text: &str) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        // scrcpy's clipboard paste types any Unicode without switching the IME (SPEC D9).
        if self
            .fast_input("type text", &Gesture::Text(text.to_string()))
            .await?
            .is_some()
        {
            return Ok(());
        }
        if self.adb_keyboard_installed().await? {
            self.ensure_adb_ime().await?;
            self.stream.note_action();
            for cmd in text::adb_keyboard_commands(text) {
                let out = self.shell(&cmd, self.opts.command_timeout).await?;
                let all = out.combined();
                if out.failed() || !all.contains("Broadcast completed") {
                    return Err(DeviceError::CommandFailed {
                        command: "am broadcast -a ADB_INPUT_B64".into(),
                        detail: format!(
                            "ADB Keyboard did not take the text ({}): check that ADB Keyboard is enabled",
                            first_lines(&all, 3)
                        ),
                    });
                }
            }
            self.stream.note_action_sent();
            Ok(())
        } else {
            let steps = text::ascii_input_steps(text).ok_or(DeviceError::AdbKeyboardMissing)?;
            for s in steps {
                self.input(&s.command(), Duration::ZERO).await?;
            }
            Ok(())
        }
    }
}
