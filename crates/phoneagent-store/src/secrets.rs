//! A defensive check that keeps secrets out of the settings table (house rule: secrets live in
//! the OS keyring only).
//!
//! A JSON object field is treated as a secret when its name, split into words at `_`, `-`, `.`,
//! spaces and lowerCamel boundaries, ends with one of: `api key`, `apikey`, `secret`,
//! `password`, `passwd`, `passphrase`, `private key`, or `token` preceded by `access`, `auth`,
//! `bearer`, `refresh`, `session` or `api`; or is exactly `authorization` / `auth`. Only
//! non-empty string values count, so `api_key_env: "OPENAI_API_KEY"` (a name, not a key)
//! and `token_budget: 100000` pass, while `api_key: "sk-…"` is refused.

/// Returns the JSON path (`$.a.b[0].c`) of the first field that looks like a secret, if any.
pub fn find_secret(value: &serde_json::Value) -> Option<String> {
    walk(value, String::from("$"))
}

fn walk(value: &serde_json::Value, path: String) -> Option<String> {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let here = format!("{path}.{k}");
                if is_secret_name(k) && v.as_str().is_some_and(|s| !s.trim().is_empty()) {
                    return Some(here);
                }
                if let Some(found) = walk(v, here) {
                    return Some(found);
                }
            }
            None
        }
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| walk(v, format!("{path}[{i}]"))),
        _ => None,
    }
}

fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | ' ') {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// True when a field name looks like it holds a secret (rules in the module docs).
pub fn is_secret_name(name: &str) -> bool {
    let w = words(name);
    let n = w.len();
    let last = |i: usize| -> &str { if i < n { w[n - 1 - i].as_str() } else { "" } };
    match last(0) {
        "apikey" | "secret" | "password" | "passwd" | "passphrase" => true,
        "authorization" | "auth" => n == 1,
        "key" => matches!(last(1), "api" | "private" | "secret" | "access"),
        "token" => matches!(
            last(1),
            "access" | "auth" | "bearer" | "refresh" | "session" | "api" | "id"
        ),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_names() {
        for yes in [
            "api_key",
            "apiKey",
            "OPENAI_API_KEY",
            "apikey",
            "client_secret",
            "password",
            "refresh_token",
            "accessToken",
            "authorization",
            "private-key",
        ] {
            assert!(is_secret_name(yes), "{yes} should be a secret name");
        }
        for no in [
            "api_key_env",
            "token_budget",
            "max_tokens",
            "author",
            "keyring_entry",
            "key",
            "base_url",
            "password_field_hint_enabled",
        ] {
            assert!(!is_secret_name(no), "{no} should not be a secret name");
        }
    }

    #[test]
    fn finds_nested_secret_with_path() {
        let v = json!({"profiles": [{"name": "a", "api_key": "sk-123"}]});
        assert_eq!(find_secret(&v).as_deref(), Some("$.profiles[0].api_key"));
        let ok =
            json!({"profiles": [{"name": "a", "api_key": "", "api_key_env": "OPENAI_API_KEY"}]});
        assert_eq!(find_secret(&ok), None);
    }
}
