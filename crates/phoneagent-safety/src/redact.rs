//! Redaction for everything the gate shows or stores (SPEC S5, S7, AR6, P5).
//!
//! * [`redact_text`] masks, in this order: key=value secrets (`password=…`, `验证码：…`),
//!   private keys, JWTs and known API-key shapes (`[secret]`), e-mail addresses (`[email]`),
//!   card numbers (Luhn-valid 13–19 digits → `[card]`) and other long digit runs such as order
//!   or ID numbers (`[number]`), phone numbers (`[phone]`), long hex secrets (`[secret]`), and
//!   one-time codes next to a code word or typed alone (`[code]`).
//! * [`redact_json`] walks JSON arguments: the value of any key whose name contains a secret
//!   word — split on word boundaries across camelCase, snake_case and kebab-case (`auth`,
//!   `authToken`, `api_key`, `X-API-Key`, `password`, `otp` are secret; `author` is not) — is
//!   replaced by `"[redacted]"`, and every other string goes through [`redact_text`].
//! * [`redact_json_text`] does the same for a JSON document given as text, with a text
//!   fallback (secret `key=value` / `"key": value` pairs, then [`redact_text`]) when it does not
//!   parse.
//!
//! Redaction is idempotent: redacting redacted text changes nothing.

use std::sync::OnceLock;

use regex::{Captures, Regex};
use serde_json::Value;

/// What a redacted JSON value becomes.
pub const REDACTED: &str = "[redacted]";

#[derive(Debug, Clone, Copy)]
enum Placeholder {
    Fixed(&'static str),
    /// `[card]` when the digits pass the Luhn check (13–19 digits), else `[number]`.
    CardOrNumber,
}

#[derive(Debug)]
struct Rule {
    re: Regex,
    placeholder: Placeholder,
    /// Capture group to replace (0 = whole match).
    group: usize,
    /// Skip a match whose replaced span touches another digit.
    digit_guard: bool,
}

fn rules() -> Option<&'static [Rule]> {
    static RULES: OnceLock<Option<Vec<Rule>>> = OnceLock::new();
    RULES
        .get_or_init(|| {
            let specs: [(&str, Placeholder, usize, bool); 12] = [
                (
                    r#"(?i)(?:api[_-]?key|secret|token|passwd|password|pwd|passcode|密码|口令|支付密码)\s*(?:[:=：]|是|为)\s*([^\s,;，；&"'\[\]{}]+)"#,
                    Placeholder::Fixed("[secret]"),
                    1,
                    false,
                ),
                (
                    r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
                    Placeholder::Fixed("[secret]"),
                    0,
                    false,
                ),
                (
                    r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}",
                    Placeholder::Fixed("[secret]"),
                    0,
                    false,
                ),
                (
                    r"(?-u:\b)(?:sk-(?:proj-|live-|test-)?[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20})",
                    Placeholder::Fixed("[secret]"),
                    0,
                    false,
                ),
                (
                    r"(?i)(?:bearer|basic)\s+([A-Za-z0-9._~+/-]{12,}=*)",
                    Placeholder::Fixed("[secret]"),
                    1,
                    false,
                ),
                (
                    r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
                    Placeholder::Fixed("[email]"),
                    0,
                    false,
                ),
                (
                    r"[0-9]{17}[Xx]|[0-9]{4}(?:[ -][0-9]{4}){2,4}(?:[ -][0-9]{1,3})?|[0-9]{12,24}",
                    Placeholder::CardOrNumber,
                    0,
                    true,
                ),
                (
                    r"(?:\+?86[ -]?)?1[3-9][0-9][ -]?[0-9]{4}[ -]?[0-9]{4}",
                    Placeholder::Fixed("[phone]"),
                    0,
                    true,
                ),
                (
                    r"\+[0-9]{1,3}[ -]?(?:\([0-9]{1,4}\)[ -]?)?[0-9]{2,4}(?:[ -]?[0-9]{2,4}){1,4}|\(?[0-9]{3}\)?[ .-][0-9]{3}[ .-][0-9]{4}",
                    Placeholder::Fixed("[phone]"),
                    0,
                    true,
                ),
                (
                    r"[0-9a-f]{32,}|[0-9A-F]{32,}",
                    Placeholder::Fixed("[secret]"),
                    0,
                    false,
                ),
                (
                    r"(?i)(?:验证码|校验码|动态码|短信码|确认码|安全码|code|otp|pin|passcode|cvv|cvc)[^0-9]{0,8}?([0-9]{3,8})",
                    Placeholder::Fixed("[code]"),
                    1,
                    true,
                ),
                (r"^\s*([0-9]{4,8})\s*$", Placeholder::Fixed("[code]"), 1, false),
            ];
            let mut out = Vec::with_capacity(specs.len());
            for (pat, placeholder, group, digit_guard) in specs {
                out.push(Rule {
                    re: Regex::new(pat).ok()?,
                    placeholder,
                    group,
                    digit_guard,
                });
            }
            Some(out)
        })
        .as_deref()
}

fn luhn_ok(digits: &str) -> bool {
    let ds: Vec<u32> = digits.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&ds.len()) {
        return false;
    }
    let sum: u32 = ds
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn apply(rule: &Rule, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for caps in rule.re.captures_iter(text) {
        let Some(m) = caps.get(rule.group) else {
            continue;
        };
        if rule.digit_guard {
            let before = text[..m.start()].chars().next_back();
            let after = text[m.end()..].chars().next();
            if before.is_some_and(|c| c.is_ascii_digit())
                || after.is_some_and(|c| c.is_ascii_digit())
            {
                continue;
            }
        }
        let ph = match rule.placeholder {
            Placeholder::Fixed(p) => p,
            Placeholder::CardOrNumber => {
                if luhn_ok(m.as_str()) {
                    "[card]"
                } else {
                    "[number]"
                }
            }
        };
        out.push_str(&text[last..m.start()]);
        out.push_str(ph);
        last = m.end();
    }
    out.push_str(&text[last..]);
    out
}

/// Mask phone numbers, e-mail addresses, card/order/ID numbers, one-time codes and key/token
/// shapes in free text (see the module docs for the order and placeholders). If the built-in
/// patterns could not be compiled (ruled out by tests), every run of 4+ letters/digits is
/// replaced by `[redacted]` — redaction fails closed.
pub fn redact_text(text: &str) -> String {
    let Some(rules) = rules() else {
        return fail_closed(text);
    };
    let mut s = text.to_string();
    for rule in rules {
        s = apply(rule, &s);
    }
    s
}

fn fail_closed(text: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.chars().count() >= 4 {
            out.push_str(REDACTED);
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Split a key name into lowercase words across camelCase, PascalCase, acronyms, snake_case,
/// kebab-case, dots and spaces: `X-API-Key` → `x api key`, `authToken` → `auth token`.
pub fn key_words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).and_then(|j| chars.get(j)) {
            let next = chars.get(i + 1).copied();
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase()
                    && c.is_uppercase()
                    && next.is_some_and(|n| n.is_lowercase()))
                || (prev.is_ascii_digit() != c.is_ascii_digit() && prev.is_alphanumeric());
            if boundary && !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// True when a JSON key names a secret (SPEC AR6): one of its words is a secret word (`auth`,
/// `authorization`, `token`, `password`, `passwd`, `pwd`, `passcode`, `passphrase`, `secret`,
/// `otp`, `pin`, `cvv`, `cvc`, `cookie`, `credential(s)`, `bearer`, `apikey` and similar
/// concatenations), or a `key`/`id` word follows `api`, `access`, `private`, `secret`,
/// `signing`, `encryption` or `session`. Whole words only: `author` and `keyboard` are not secret.
pub fn is_secret_key(name: &str) -> bool {
    const SECRET_WORDS: &[&str] = &[
        "auth",
        "authorization",
        "authn",
        "token",
        "tokens",
        "password",
        "passwords",
        "passwd",
        "pwd",
        "passcode",
        "passphrase",
        "secret",
        "secrets",
        "otp",
        "pin",
        "cvv",
        "cvc",
        "cookie",
        "cookies",
        "credential",
        "credentials",
        "bearer",
        "apikey",
        "accesstoken",
        "authtoken",
        "refreshtoken",
        "idtoken",
        "secretkey",
        "privatekey",
        "sessionid",
        "clientsecret",
        "xapikey",
        "mnemonic",
        "密码",
        "验证码",
        "口令",
    ];
    const KEY_QUALIFIERS: &[&str] = &[
        "api",
        "access",
        "private",
        "secret",
        "signing",
        "encryption",
        "session",
        "client",
    ];
    let words = key_words(name);
    if words.iter().any(|w| SECRET_WORDS.contains(&w.as_str())) {
        return true;
    }
    words.windows(2).any(|w| {
        KEY_QUALIFIERS.contains(&w[0].as_str()) && matches!(w[1].as_str(), "key" | "keys" | "id")
    })
}

/// Redact JSON arguments (SPEC AR6): secret-named keys' values become `"[redacted]"` whatever
/// their type; every other string goes through [`redact_text`].
pub fn redact_json(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact_text(s)),
        Value::Array(items) => Value::Array(items.iter().map(redact_json).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) {
                        Value::String(REDACTED.into())
                    } else {
                        redact_json(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Compile the redaction rules now (see [`crate::warm_up`]).
pub(crate) fn warm_up() {
    let _ = rules();
    let _ = pair_regex();
}

fn pair_regex() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r#"(["']?)([\p{L}\p{N}_.-]+)(["']?\s*[:=]\s*)("(?:[^"\\]|\\.)*"?|'[^']*'?|[^\s,;}&\]]+)"#)
            .ok()
    })
    .as_ref()
}

/// Redact a JSON document given as text: parsed and walked as [`redact_json`] when it parses
/// (output is compact JSON); otherwise the text fallback masks the values of secret-named
/// `key=value` / `"key": value` pairs and then applies [`redact_text`].
pub fn redact_json_text(text: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return redact_json(&v).to_string();
    }
    let Some(re) = pair_regex() else {
        return fail_closed(text);
    };
    let pairs = re.replace_all(text, |c: &Captures<'_>| {
        let all = c.get(0).map_or("", |m| m.as_str());
        let key = c.get(2).map_or("", |m| m.as_str());
        if !is_secret_key(key) {
            return all.to_string();
        }
        let value = c.get(4).map_or("", |m| m.as_str());
        let quoted = if value.starts_with('"') {
            format!("\"{REDACTED}\"")
        } else if value.starts_with('\'') {
            format!("'{REDACTED}'")
        } else {
            REDACTED.to_string()
        };
        format!(
            "{}{}{}{}",
            c.get(1).map_or("", |m| m.as_str()),
            key,
            c.get(3).map_or("", |m| m.as_str()),
            quoted
        )
    });
    redact_text(&pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_in_patterns_compile() {
        assert!(rules().is_some());
        assert!(pair_regex().is_some());
    }

    #[test]
    fn text_shapes() {
        assert_eq!(
            redact_text("手机 13800138000 请回电"),
            "手机 [phone] 请回电"
        );
        assert_eq!(redact_text("call +1 415 555 0132"), "call [phone]");
        assert_eq!(redact_text("(415) 555-0132"), "[phone]");
        assert_eq!(
            redact_text("mail li.lei@example.com now"),
            "mail [email] now"
        );
        assert_eq!(redact_text("card 4111 1111 1111 1111"), "card [card]");
        assert_eq!(redact_text("订单号202405011234567890"), "订单号[number]");
        assert_eq!(
            redact_text("验证码 482913，5分钟有效"),
            "验证码 [code]，5分钟有效"
        );
        assert_eq!(redact_text("your code is 2580"), "your code is [code]");
        assert_eq!(redact_text("482913"), "[code]");
        assert_eq!(redact_text("key sk-abcdefghijklmnop1234"), "key [secret]");
        assert_eq!(redact_text("AKIAIOSFODNN7EXAMPLE"), "[secret]");
        assert_eq!(redact_text("password=hunter2, ok"), "password=[secret], ok");
        assert_eq!(redact_text("密码是abc123"), "密码是[secret]");
        assert_eq!(
            redact_text("Authorization: Bearer abcdefghijklmnop.qrs"),
            "Authorization: Bearer [secret]"
        );
        assert_eq!(
            redact_text("tok eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdEFGH"),
            "tok [secret]"
        );
    }

    #[test]
    fn benign_text_is_kept() {
        for s in [
            "确认支付 ¥128.00",
            "Place order",
            "2024-05-01 12:30",
            "删除搜索历史",
            "Send feedback",
            "第 3 页",
        ] {
            assert_eq!(redact_text(s), s);
        }
    }

    #[test]
    fn redaction_is_idempotent() {
        for s in [
            "手机 13800138000 mail a@b.co 验证码 482913 card 4111111111111111",
            "password=hunter2 sk-abcdefghijklmnop1234",
        ] {
            let once = redact_text(s);
            assert_eq!(redact_text(&once), once);
        }
    }

    #[test]
    fn key_words_split_every_style() {
        assert_eq!(key_words("authToken"), ["auth", "token"]);
        assert_eq!(key_words("api_key"), ["api", "key"]);
        assert_eq!(key_words("X-API-Key"), ["x", "api", "key"]);
        assert_eq!(key_words("APIKey"), ["api", "key"]);
        assert_eq!(key_words("oauth2Token"), ["oauth", "2", "token"]);
    }

    #[test]
    fn secret_keys_on_word_boundaries() {
        for k in [
            "auth",
            "authToken",
            "api_key",
            "apiKey",
            "X-API-Key",
            "password",
            "otp",
            "OTP",
            "client_secret",
            "sessionId",
            "access-key",
            "Authorization",
        ] {
            assert!(is_secret_key(k), "{k} should be secret");
        }
        for k in [
            "author",
            "authors",
            "keyboard",
            "key",
            "tool",
            "target_description",
            "pinned",
            "id",
        ] {
            assert!(!is_secret_key(k), "{k} should not be secret");
        }
    }

    #[test]
    fn json_structured() {
        let v = json!({
            "author": "Lu Xun",
            "authToken": "abc",
            "auth": {"user": "x"},
            "api_key": 12345,
            "nested": [{"password": "hunter2", "text": "call 13800138000"}],
            "otp": "482913"
        });
        let r = redact_json(&v);
        assert_eq!(
            r,
            json!({
                "author": "Lu Xun",
                "authToken": "[redacted]",
                "auth": "[redacted]",
                "api_key": "[redacted]",
                "nested": [{"password": "[redacted]", "text": "call [phone]"}],
                "otp": "[redacted]"
            })
        );
    }

    #[test]
    fn json_text_fallback_for_unparseable_payloads() {
        let broken =
            r#"{"author": "Lu Xun", "apiKey": "sk-abc", "otp": 482913, "note": "mail a@b.co""#;
        let r = redact_json_text(broken);
        assert!(r.contains(r#""author": "Lu Xun""#), "{r}");
        assert!(r.contains(r#""apiKey": "[redacted]""#), "{r}");
        assert!(r.contains(r#""otp": [redacted]"#), "{r}");
        assert!(r.contains("[email]"), "{r}");
        assert!(!r.contains("sk-abc") && !r.contains("482913"), "{r}");

        let query = "user=bob&password=hunter2&authToken=xyz";
        assert_eq!(
            redact_json_text(query),
            "user=bob&password=[redacted]&authToken=[redacted]"
        );
        // Parseable JSON goes the structured way.
        assert_eq!(
            redact_json_text(r#"{"pwd":"x","q":"hi"}"#),
            r#"{"pwd":"[redacted]","q":"hi"}"#
        );
    }
}
