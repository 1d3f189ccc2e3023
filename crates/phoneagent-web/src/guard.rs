//! The per-start token and the checks every request passes before it reaches a handler.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use rand::TryRngCore;
use subtle::ConstantTimeEq;

use crate::{Ctx, error_response};

/// The random token of one `phoneagent web` start: 32 bytes from the OS, as 64 hex digits.
/// Its `Debug` never shows it.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

impl Token {
    /// A fresh token from the operating system's random source.
    ///
    /// # Errors
    /// The OS has no random source.
    pub fn generate() -> std::io::Result<Self> {
        let mut b = [0u8; 32];
        rand::rngs::OsRng
            .try_fill_bytes(&mut b)
            .map_err(|e| std::io::Error::other(format!("no random source: {e}")))?;
        Ok(Self(b.iter().map(|x| format!("{x:02x}")).collect()))
    }

    /// A given token (tests).
    pub fn from_string(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    /// The token, to print once in the URL.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `candidate` is the token, in time independent of where they differ.
    pub fn matches(&self, candidate: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), candidate.as_bytes());
        // The length is public (always 64); the bytes are compared in constant time.
        a.len() == b.len() && bool::from(a.ct_eq(b))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `POST /api/call/…`: Bearer only.
    Api,
    /// `GET /api/ws`: `?token=` (a browser cannot set a WebSocket's headers) or Bearer.
    Ws,
    /// The page, its files, pictures: Bearer, `?token=` or the cookie.
    Page,
}

fn kind_of(path: &str) -> Kind {
    if path == "/api/ws" {
        Kind::Ws
    } else if path.starts_with("/api/") {
        Kind::Api
    } else {
        Kind::Page
    }
}

fn bearer(h: &HeaderMap) -> Option<&str> {
    let v = h.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
}

fn query_token(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|kv| kv.strip_prefix("token="))
}

fn cookie<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| {
            let (k, v) = kv.trim().split_once('=')?;
            (k == name).then_some(v)
        })
}

/// A Host value fit to repeat in a header (the CSP's `connect-src`).
fn plain_host(h: &str) -> bool {
    !h.is_empty()
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b':' | b'-' | b'[' | b']'))
}

fn csp(host: &str) -> String {
    let ws = if plain_host(host) {
        format!(" ws://{host}")
    } else {
        String::new()
    };
    format!(
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data: blob:; font-src 'self'; connect-src 'self'{ws}; \
         object-src 'none'; base-uri 'none'; form-action 'none'; frame-src 'none'; \
         frame-ancestors 'none'"
    )
}

/// Host, Origin and token checks, then the security headers on the response.
pub(crate) async fn guard(State(ctx): State<Arc<Ctx>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut resp = 'checked: {
        if let Some(allowed) = &ctx.allowed_hosts
            && !allowed.iter().any(|a| a.eq_ignore_ascii_case(&host))
        {
            break 'checked error_response(
                StatusCode::FORBIDDEN,
                "forbidden_host",
                &format!(
                    "this server answers only as http://{}/ (the Host header names another name: DNS rebinding is refused)",
                    allowed.first().map(String::as_str).unwrap_or("127.0.0.1")
                ),
            );
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let same = origin
                .to_str()
                .is_ok_and(|o| o.eq_ignore_ascii_case(&format!("http://{host}")));
            if !same {
                break 'checked error_response(
                    StatusCode::FORBIDDEN,
                    "forbidden_origin",
                    "requests from another site's pages are refused",
                );
            }
        }
        let kind = kind_of(req.uri().path());
        let ok = |t: Option<&str>| t.is_some_and(|t| ctx.token.matches(t));
        let by_query = ok(query_token(req.uri().query()));
        let authorized = ok(bearer(headers))
            || match kind {
                Kind::Api => false,
                Kind::Ws => by_query,
                Kind::Page => by_query || ok(cookie(headers, &ctx.cookie_name)),
            };
        if !authorized {
            let mut r = error_response(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this PhoneAgent web console needs the token of this start: open the URL `phoneagent web` printed (…/?token=…)",
            );
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            break 'checked r;
        }
        let set_cookie = kind == Kind::Page && by_query;
        let mut r = next.run(req).await;
        if set_cookie
            && let Ok(v) = HeaderValue::from_str(&format!(
                "{}={}; Path=/; HttpOnly; SameSite=Strict",
                ctx.cookie_name,
                ctx.token.expose()
            ))
        {
            r.headers_mut().append(header::SET_COOKIE, v);
        }
        r
    };
    let h = resp.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    if let Ok(v) = HeaderValue::from_str(&csp(&host)) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_hex_and_compare_exactly() {
        let a = Token::generate().unwrap_or_else(|_| Token::from_string("x"));
        let b = Token::generate().unwrap_or_else(|_| Token::from_string("y"));
        assert_eq!(a.expose().len(), 64);
        assert!(a.expose().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.expose(), b.expose());
        assert!(a.matches(a.expose()));
        assert!(!a.matches(b.expose()));
        assert!(!a.matches(&a.expose()[..63]));
        assert!(!a.matches(""));
        assert!(!format!("{a:?}").contains(a.expose()));
    }

    #[test]
    fn where_the_token_is_read() {
        assert_eq!(kind_of("/api/call/list_runs"), Kind::Api);
        assert_eq!(kind_of("/api/ws"), Kind::Ws);
        assert_eq!(kind_of("/"), Kind::Page);
        assert_eq!(kind_of("/pa/mirror/1"), Kind::Page);
        assert_eq!(query_token(Some("a=1&token=abc")), Some("abc"));
        assert_eq!(query_token(Some("xtoken=abc")), None);
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; pa_token_5=zz"),
        );
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer  tok "),
        );
        assert_eq!(cookie(&h, "pa_token_5"), Some("zz"));
        assert_eq!(cookie(&h, "pa_token_6"), None);
        assert_eq!(bearer(&h), Some("tok"));
    }

    #[test]
    fn the_csp_names_only_a_plain_host() {
        assert!(csp("127.0.0.1:8080").contains("ws://127.0.0.1:8080"));
        assert!(!csp("evil; script-src *").contains("evil"));
        assert!(csp("x").contains("frame-ancestors 'none'"));
    }
}
