//! Typed secrets (SPEC P6): text typed into a credential field is a secret everywhere but the one
//! device command that types it.
//!
//! When the runtime sees a `type_text` whose text is a secret — the last touch focused a
//! credential field (password, PIN, verification code …), or the text itself has a credential
//! shape (a one-time code, a key or token, `password=…`) — it registers the text here and gets a
//! placeholder `[secret:XXXXXXXX]` (8 hex digits of a keyed SHA-256: the same secret gives the
//! same placeholder within a run, and the short hash cannot be brute-forced back into a short
//! password because the key is random per run and never stored). From then on:
//!
//! * every event the run emits is scrubbed ([`Secrets::scrub_event`]) before it is committed or
//!   broadcast — events, trajectories, HTML/JSON exports, the terminal timeline and the app all
//!   read that one stream (SPEC P3);
//! * the action the rest of the run sees (gate, receipts, reviewers, memory and the model's later
//!   history) carries the placeholder ([`Secrets::mask_action`]);
//! * only the device command gets the real text back ([`Secrets::reveal`]).

use std::sync::{Arc, Mutex};

use phoneagent_protocol::{Action, ActionKind, AgentEvent};
use sha2::{Digest, Sha256};

/// The secrets of one run: real text → placeholder. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Secrets {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    key: [u8; 16],
    keyed: bool,
    /// (real, placeholder), longest real text first (so a secret that contains another is
    /// replaced whole).
    list: Vec<(String, String)>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.inner.lock().map(|g| g.list.len()).unwrap_or(0);
        write!(f, "Secrets({n} registered)")
    }
}

/// Shortest text treated as a secret: shorter ones (a single character) would be masked all over
/// unrelated text.
const MIN_SECRET_CHARS: usize = 2;

impl Secrets {
    /// An empty registry with a fresh random key.
    pub fn new() -> Self {
        let s = Self::default();
        if let Ok(mut g) = s.inner.lock() {
            g.key = uuid::Uuid::new_v4().into_bytes();
            g.keyed = true;
        }
        s
    }

    /// Register `real` as a secret and return its placeholder (`[secret:1a2b3c4d]`). Texts
    /// shorter than two characters are not registered (their placeholder is still returned).
    pub fn add(&self, real: &str) -> String {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !g.keyed {
            g.key = uuid::Uuid::new_v4().into_bytes();
            g.keyed = true;
        }
        if let Some((_, p)) = g.list.iter().find(|(r, _)| r == real) {
            return p.clone();
        }
        let mut h = Sha256::new();
        h.update(g.key);
        h.update(real.as_bytes());
        let digest = h.finalize();
        let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
        let placeholder = format!("[secret:{hex}]");
        if real.chars().count() >= MIN_SECRET_CHARS {
            g.list.push((real.to_string(), placeholder.clone()));
            g.list.sort_by_key(|(r, _)| std::cmp::Reverse(r.len()));
        }
        placeholder
    }

    /// True when no secret is registered.
    pub fn is_empty(&self) -> bool {
        self.inner.lock().map(|g| g.list.is_empty()).unwrap_or(true)
    }

    /// `s` with every registered secret replaced by its placeholder.
    pub fn mask(&self, s: &str) -> String {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = s.to_string();
        for (real, ph) in &g.list {
            if out.contains(real.as_str()) {
                out = out.replace(real.as_str(), ph);
            }
        }
        out
    }

    /// The real text of a placeholder, or `shown` itself when it is not one of ours.
    pub fn reveal(&self, shown: &str) -> String {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.list
            .iter()
            .find(|(_, ph)| ph == shown)
            .map(|(r, _)| r.clone())
            .unwrap_or_else(|| shown.to_string())
    }

    /// `action` with every registered secret masked in its text fields (typed text, target
    /// description, reason, screen description, messages).
    pub fn mask_action(&self, action: &Action) -> Action {
        if self.is_empty() {
            return action.clone();
        }
        let mut a = action.clone();
        let m = |s: &mut String| *s = self.mask(s);
        for f in [
            &mut a.target_description,
            &mut a.reason,
            &mut a.screen_description,
        ]
        .into_iter()
        .flatten()
        {
            m(f);
        }
        match &mut a.kind {
            ActionKind::Type { text } => m(text),
            ActionKind::Finish { message, .. } => m(message),
            ActionKind::Note { message, .. } => m(message),
            ActionKind::AskUser { question } => m(question),
            ActionKind::TakeOver { message } => m(message),
            _ => {}
        }
        a
    }

    /// `event` with every registered secret masked in every string it holds (the one choke
    /// point before the store, the timeline and the app, SPEC P3/P6). Events without a secret
    /// in them come back unchanged.
    pub fn scrub_event(&self, event: AgentEvent) -> AgentEvent {
        if self.is_empty() {
            return event;
        }
        let Ok(mut v) = serde_json::to_value(&event) else {
            return event;
        };
        if !self.scrub_value(&mut v) {
            return event;
        }
        serde_json::from_value(v).unwrap_or(event)
    }

    /// Mask secrets in every string of `v`; true when something changed.
    fn scrub_value(&self, v: &mut serde_json::Value) -> bool {
        match v {
            serde_json::Value::String(s) => {
                let m = self.mask(s);
                if m != *s {
                    *s = m;
                    true
                } else {
                    false
                }
            }
            // Every element is scrubbed: no short-circuit.
            serde_json::Value::Array(a) => {
                let mut changed = false;
                for x in a.iter_mut() {
                    changed |= self.scrub_value(x);
                }
                changed
            }
            serde_json::Value::Object(o) => {
                let mut changed = false;
                for x in o.values_mut() {
                    changed |= self.scrub_value(x);
                }
                changed
            }
            _ => false,
        }
    }
}

/// True when `text`, typed, is a secret by its own shape (SPEC S3 credential/OTP domain, the
/// secret part of it): a one-time code, a key or token, a private key, `password=…`, or text
/// with a password/code word in it. Identifiers (an e-mail address, a phone or order number)
/// are not secrets by shape; typed into a credential field they are (the runtime checks that).
pub fn is_secret_shape(text: &str) -> bool {
    let input =
        phoneagent_safety::GateInput::new(phoneagent_safety::Tool::TypeText).with_text(text);
    let c = phoneagent_safety::classify(&input);
    c.reasons.iter().any(|r| {
        r.code == phoneagent_safety::ReasonCode::CredentialText
            && r.entry.as_deref().is_some_and(|e| {
                e.starts_with("cred.")
                    || matches!(
                        e,
                        "shape.code_only"
                            | "shape.openai_key"
                            | "shape.cloud_keys"
                            | "shape.jwt"
                            | "shape.private_key"
                            | "shape.hex_secret"
                            | "shape.key_value"
                    )
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholder_is_stable_keyed_and_reversible_only_here() {
        let s = Secrets::new();
        let p = s.add("hunter2pass");
        assert!(p.starts_with("[secret:") && p.len() == "[secret:12345678]".len());
        assert_eq!(s.add("hunter2pass"), p);
        assert_eq!(s.reveal(&p), "hunter2pass");
        assert_eq!(s.reveal("other"), "other");
        // Another run (another key) gives another placeholder for the same text.
        assert_ne!(Secrets::new().add("hunter2pass"), p);
        assert_eq!(
            s.mask("typed hunter2pass then hunter2pass"),
            format!("typed {p} then {p}")
        );
    }

    #[test]
    fn events_are_scrubbed_in_every_string() {
        let s = Secrets::new();
        let p = s.add("S3cret!pw");
        let e = AgentEvent::ModelCall {
            role: "actor".into(),
            call_kind: "planning".into(),
            model: "m".into(),
            prompt_tokens: 1,
            completion_tokens: 1,
            cost_usd: 0.0,
            latency_ms: 1,
            content: "do(action=\"Type\", text=\"S3cret!pw\")".into(),
            reasoning: Some("I will type S3cret!pw".into()),
            error: None,
            run_totals: Default::default(),
        };
        let json = serde_json::to_string(&s.scrub_event(e)).unwrap_or_default();
        assert!(!json.contains("S3cret!pw"), "{json}");
        assert!(json.contains(&p));
    }

    #[test]
    fn secret_shapes_are_codes_keys_and_password_words_not_identifiers() {
        assert!(is_secret_shape("482913"));
        assert!(is_secret_shape("sk-proj-abcdefghijklmnopqrstuvwxyz123456"));
        assert!(is_secret_shape("password=hunter2"));
        assert!(!is_secret_shape("alice@example.com"));
        assert!(!is_secret_shape("无线蓝牙耳机"));
        assert!(!is_secret_shape("hello world"));
    }
}
