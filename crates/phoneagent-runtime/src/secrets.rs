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

use phoneagent_protocol::text::is_han;
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
    /// A text that is (or holds) one of this run's placeholders registers its real text: the
    /// model typing the placeholder of a secret the user gave is that secret, not a new one.
    pub fn add(&self, real: &str) -> String {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !g.keyed {
            g.key = uuid::Uuid::new_v4().into_bytes();
            g.keyed = true;
        }
        let real = reveal_in(&g.list, real);
        let real = real.as_str();
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
            g.list
                .sort_by_key(|(r, _)| std::cmp::Reverse(r.chars().count()));
        }
        placeholder
    }

    /// True when no secret is registered.
    pub fn is_empty(&self) -> bool {
        self.inner.lock().map(|g| g.list.is_empty()).unwrap_or(true)
    }

    /// `s` with every registered secret replaced by its placeholder. Matching ignores case
    /// (ASCII and Unicode simple case folding), so `TR0UB4DOR&3` is masked like `Tr0ub4dor&3`;
    /// placeholders already in `s` are left whole (a secret that happens to occur inside a
    /// placeholder does not break it).
    pub fn mask(&self, s: &str) -> String {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.list.is_empty() {
            return s.to_string();
        }
        let folded: Vec<Vec<char>> = g
            .list
            .iter()
            .map(|(r, _)| r.chars().map(fold).collect())
            .collect();
        let chars: Vec<(usize, char)> = s.char_indices().collect();
        let text: Vec<char> = chars.iter().map(|&(_, c)| fold(c)).collect();
        let mut out = String::with_capacity(s.len());
        let mut i = 0;
        while i < chars.len() {
            if let Some(n) = placeholder_at(&chars, i) {
                for &(_, c) in &chars[i..i + n] {
                    out.push(c);
                }
                i += n;
                continue;
            }
            let hit = folded.iter().enumerate().find(|(_, f)| {
                !f.is_empty() && text.len() - i >= f.len() && text[i..i + f.len()] == f[..]
            });
            match hit {
                Some((k, f)) => {
                    out.push_str(&g.list[k].1);
                    i += f.len();
                }
                None => {
                    out.push(chars[i].1);
                    i += 1;
                }
            }
        }
        out
    }

    /// `shown` with each of our placeholders in it replaced by its real text (the device
    /// command, SPEC P6): a placeholder typed alone, or inside other text (`alice [secret:…]`).
    /// Text without one of our placeholders comes back as it is.
    pub fn reveal(&self, shown: &str) -> String {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        reveal_in(&g.list, shown)
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

/// True when `label` — the label or hint of the field a `type_text` types into, as read from
/// the screen — names a credential field (password, PIN, verification code, CVV …: the gate's
/// credential/OTP domain for a touch target, SPEC S3).
pub fn is_credential_label(label: &str) -> bool {
    let input = phoneagent_safety::GateInput::new(phoneagent_safety::Tool::Tap).target(label);
    phoneagent_safety::classify(&input)
        .reasons
        .iter()
        .any(|r| r.code == phoneagent_safety::ReasonCode::CredentialTarget)
}

/// True when `reading` — the screen reader's reading of the field a `type_text` types into —
/// shows a credential field: its label names one, or no label could be read there and the
/// screen's other texts name one (a password field focused at its corner). The gate's own
/// `credential_target` rule for `type_text` (SPEC S3, P6).
pub fn is_credential_field(reading: &phoneagent_protocol::ScreenReading) -> bool {
    let input = phoneagent_safety::GateInput::new(phoneagent_safety::Tool::TypeText)
        .with_screen(reading.clone());
    phoneagent_safety::classify(&input)
        .reasons
        .iter()
        .any(|r| r.code == phoneagent_safety::ReasonCode::CredentialTarget)
}

/// Length of a placeholder, `[secret:` + 8 hex digits + `]`, starting at `chars[i]` (ASCII case
/// ignored), in chars.
fn placeholder_at(chars: &[(usize, char)], i: usize) -> Option<usize> {
    const HEAD: &str = "[secret:";
    const N: usize = HEAD.len() + 8 + 1;
    let w = chars.get(i..i + N)?;
    let head_ok = HEAD
        .chars()
        .zip(w)
        .all(|(h, &(_, c))| c.eq_ignore_ascii_case(&h));
    let hex_ok = w[HEAD.len()..HEAD.len() + 8]
        .iter()
        .all(|&(_, c)| c.is_ascii_hexdigit());
    (head_ok && hex_ok && w[N - 1].1 == ']').then_some(N)
}

/// `shown` with the placeholders of `list` in it replaced by their real text.
fn reveal_in(list: &[(String, String)], shown: &str) -> String {
    if list.is_empty() || !shown.to_ascii_lowercase().contains("[secret:") {
        return shown.to_string();
    }
    let chars: Vec<(usize, char)> = shown.char_indices().collect();
    let mut out = String::with_capacity(shown.len());
    let mut i = 0;
    while i < chars.len() {
        if let Some(n) = placeholder_at(&chars, i) {
            let start = chars[i].0;
            let end = chars.get(i + n).map_or(shown.len(), |&(b, _)| b);
            let ph = shown[start..end].to_ascii_lowercase();
            match list.iter().find(|(_, p)| *p == ph) {
                Some((real, _)) => out.push_str(real),
                None => out.push_str(&shown[start..end]),
            }
            i += n;
        } else {
            out.push(chars[i].1);
            i += 1;
        }
    }
    out
}

/// Unicode simple case folding of one char, close enough for matching secrets: the single-char
/// lowercase of the single-char uppercase (`ς` → `σ`, `ſ` → `s`, Kelvin `K` → `k`), else the
/// single-char lowercase, else the char itself (no multi-char expansions, so a match has the
/// secret's length in chars).
fn fold(c: char) -> char {
    fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
        let a = it.next()?;
        it.next().is_none().then_some(a)
    }
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    single(c.to_uppercase())
        .and_then(|u| single(u.to_lowercase()))
        .or_else(|| single(c.to_lowercase()))
        .unwrap_or(c)
}

/// Credential words a task may spell a value after (SPEC P6), longest first.
const TASK_CREDENTIAL_WORDS: &[&str] = &[
    "支付密码",
    "验证码",
    "密码",
    "口令",
    "passcode",
    "password",
    "pwd",
    "pin",
    "code",
    "pw",
];

/// The credentials a task spells out (SPEC P6), to register before the run records anything:
/// the value after a credential word (password, passcode, pw, pwd, PIN, code, 密码, 口令,
/// 验证码, 支付密码) and `:`, `：`, `=`, `is`, `是`, `为` or a space, up to whitespace or
/// sentence punctuation; plus every word of the task that has a secret's shape
/// ([`is_secret_shape`]). A value after a bare space or `is` must look like a secret (a digit,
/// a capital or a symbol in it: "password reset page" names no password); a value of Chinese
/// characters only is not one ("密码是多少").
pub fn task_secrets(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let push = |out: &mut Vec<String>, v: &str| {
        let v = v.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'', '」', '”']);
        if v.chars().count() >= MIN_SECRET_CHARS && !out.iter().any(|o| o == v) {
            out.push(v.to_string());
        }
    };
    let lower: Vec<char> = task.chars().map(fold).collect();
    let orig: Vec<char> = task.chars().collect();
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut i = 0;
    while i < lower.len() {
        let Some(word) = TASK_CREDENTIAL_WORDS.iter().find(|w| {
            let w: Vec<char> = w.chars().collect();
            lower.get(i..i + w.len()) == Some(&w[..])
        }) else {
            i += 1;
            continue;
        };
        let wlen = word.chars().count();
        let ascii = word.is_ascii();
        let before_ok = !ascii || i == 0 || !is_word(lower[i - 1]);
        let mut j = i + wlen;
        let after_ok = !ascii || lower.get(j).is_none_or(|&c| !is_word(c));
        if !(before_ok && after_ok) {
            i += 1;
            continue;
        }
        // The separator: spaces, then `:` `：` `=` `是` `为` or `is`, then spaces.
        let spaces = |j: &mut usize| {
            let s = *j;
            while lower.get(*j).is_some_and(|c| c.is_whitespace()) {
                *j += 1;
            }
            *j > s
        };
        let spaced = spaces(&mut j);
        let mut strong = false;
        let mut is_word_sep = false;
        match lower.get(j) {
            Some(':' | '：' | '=' | '是' | '为') => {
                strong = true;
                j += 1;
            }
            Some('i')
                if spaced
                    && lower.get(j + 1) == Some(&'s')
                    && lower.get(j + 2).is_some_and(|c| c.is_whitespace()) =>
            {
                is_word_sep = true;
                j += 2;
            }
            _ => {}
        }
        spaces(&mut j);
        if !(spaced || strong || is_word_sep) {
            i += wlen;
            continue;
        }
        let start = j;
        while orig
            .get(j)
            .is_some_and(|&c| !c.is_whitespace() && !is_sentence_stop(c))
        {
            j += 1;
        }
        let value: String = orig[start..j].iter().collect();
        let han_only = !value.is_empty() && value.chars().all(is_han);
        let secret_like = value
            .chars()
            .any(|c| !c.is_alphabetic() || c.is_uppercase() || !c.is_ascii());
        if !value.is_empty() && !han_only && (strong || secret_like) {
            push(&mut out, &value);
        }
        i = j.max(i + wlen);
    }
    for tok in task.split(|c: char| c.is_whitespace() || is_sentence_stop(c)) {
        let tok = tok.trim_end_matches(['.', ',', ';', '!', '?']);
        // A word of letters only is at most a credential word ("passwords"), not a secret.
        if tok.chars().any(|c| !c.is_alphabetic())
            && is_secret_shape(tok)
            && !is_credential_word_only(tok)
            && !out.iter().any(|o| tok.contains(o.as_str()))
        {
            push(&mut out, tok);
        }
    }
    out
}

/// Sentence punctuation that ends a value spelled in a task (CJK full-width and `,` `;`).
fn is_sentence_stop(c: char) -> bool {
    matches!(
        c,
        '，' | '。'
            | '；'
            | '！'
            | '？'
            | '、'
            | ','
            | ';'
            | '（'
            | '）'
            | '「'
            | '」'
            | '“'
            | '”'
    )
}

/// True when `tok` is only a credential word (and a separator): "password:", "密码是".
fn is_credential_word_only(tok: &str) -> bool {
    let t: String = tok
        .trim_end_matches([':', '：', '=', '是', '为'])
        .chars()
        .map(fold)
        .collect();
    TASK_CREDENTIAL_WORDS.iter().any(|w| *w == t)
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

    #[test]
    fn masking_ignores_case_and_keeps_placeholders_whole() {
        let s = Secrets::new();
        let p = s.add("Tr0ub4dor&3");
        assert_eq!(
            s.mask("echo TR0UB4DOR&3 and tr0ub4dor&3 and Tr0ub4dor&3"),
            format!("echo {p} and {p} and {p}")
        );
        // Unicode simple case folding: Greek final sigma, German sharp s, Kelvin sign.
        let g = s.add("Σοφίας9");
        assert_eq!(
            s.mask("σοφίας9 / ΣΟΦΊΑΣ9 / σοφίaς9"),
            format!("{g} / {g} / σοφίaς9")
        );
        assert_eq!(s.mask("ΣΟΦΊΑς9"), g);
        let k = s.add("kelvin42");
        assert_eq!(s.mask("\u{212A}ELVIN42"), k);
        let ss = s.add("straße77");
        assert_eq!(s.mask("STRAẞE77"), ss);
        // Re-masking masked text leaves it as it is, even for a secret inside a placeholder.
        let inner = s.add("secret");
        let masked = s.mask(&format!("{p} SECRET"));
        assert_eq!(masked, format!("{p} {inner}"));
        assert_eq!(s.mask(&masked), masked);
        // The reveal still finds each placeholder.
        assert_eq!(s.reveal(&p), "Tr0ub4dor&3");
        assert_eq!(s.reveal(&p.to_uppercase()), "Tr0ub4dor&3");
        assert_eq!(s.reveal(&format!("alice {p}")), "alice Tr0ub4dor&3");
        assert_eq!(s.reveal("[secret:00000000]"), "[secret:00000000]");
    }

    #[test]
    fn typing_a_placeholder_registers_nothing_new() {
        let s = Secrets::new();
        let p = s.add("Tr0ub4dor&3");
        assert_eq!(s.add(&p), p);
        assert_eq!(s.reveal(&s.mask(&p)), "Tr0ub4dor&3");
    }

    #[test]
    fn credentials_spelled_out_in_a_task_are_found() {
        let pw = "Tr0ub4dor&3";
        for task in [
            "Log in as alice, my pw: Tr0ub4dor&3",
            "Log in as alice, my pw: Tr0ub4dor&3.",
            "log in with password Tr0ub4dor&3 please",
            "the password is Tr0ub4dor&3",
            "Password: Tr0ub4dor&3, then open settings",
            "登录 alice，密码 Tr0ub4dor&3",
            "登录 alice，密码：Tr0ub4dor&3。",
            "登录alice，密码是Tr0ub4dor&3",
            "口令为 Tr0ub4dor&3 然后打开设置",
        ] {
            assert_eq!(task_secrets(task), vec![pw.to_string()], "{task}");
        }
        assert_eq!(task_secrets("支付密码 482913，付款"), vec!["482913"]);
        assert_eq!(task_secrets("验证码是 482913"), vec!["482913"]);
        assert_eq!(task_secrets("enter the code 482913"), vec!["482913"]);
        assert_eq!(task_secrets("my PIN is 4729"), vec!["4729"]);
        assert_eq!(task_secrets("pwd=hunter"), vec!["hunter"]);
        // Colon: any value, even plain letters.
        assert_eq!(task_secrets("my pw: hunter"), vec!["hunter"]);
        // A key pasted in a task is a secret by its shape.
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz123456";
        assert_eq!(
            task_secrets(&format!("use the key {key} in the app")),
            vec![key]
        );
        let s = Secrets::new();
        for t in task_secrets("Log in as alice, my pw: Tr0ub4dor&3") {
            s.add(&t);
        }
        let masked = s.mask("Log in as alice, my pw: Tr0ub4dor&3");
        assert!(
            masked.starts_with("Log in as alice, my pw: [secret:"),
            "{masked}"
        );
    }

    #[test]
    fn tasks_that_only_name_a_credential_register_nothing() {
        for task in [
            "open the password reset page",
            "change my password",
            "Change my password.",
            "Log in with the password I gave you",
            "the password is wrong, reset it",
            "passwords and passkeys settings",
            "scan the barcode on the box",
            "spinning wheel app, tap upwards",
            "打开修改密码页面",
            "我的密码是多少",
            "密码",
            "Password:",
            "buy the first product in the shop",
            "Log in as alice@example.com",
        ] {
            assert!(
                task_secrets(task).is_empty(),
                "{task}: {:?}",
                task_secrets(task)
            );
        }
    }
}
