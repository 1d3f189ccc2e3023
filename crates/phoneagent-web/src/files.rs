//! The built UI's files (`ui/dist`): where they are, and serving them.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::{Ctx, error_response};

/// The built UI was not found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the web UI is not built (looked in {looked}): build it with `cd ui && npm ci && npm run build`, or pass --ui-dir DIR (a directory with index.html)"
)]
pub struct UiDirError {
    /// The places looked in, comma-separated.
    pub looked: String,
}

/// The directory of the built UI: `explicit` (`--ui-dir`) if given, else `$PHONEAGENT_UI_DIR`,
/// else an installed share dir next to the executable (`../share/phoneagent/ui`), else the
/// source tree this binary was built from (`ui/dist`), else `./ui/dist`. The directory must
/// hold an `index.html`.
///
/// # Errors
/// [`UiDirError`] naming the places looked in and how to build the UI.
pub fn find_ui_dir(explicit: Option<&Path>) -> Result<PathBuf, UiDirError> {
    let mut candidates: Vec<PathBuf> = vec![];
    if let Some(d) = explicit {
        candidates.push(d.to_path_buf());
    } else {
        if let Some(d) = std::env::var_os("PHONEAGENT_UI_DIR").filter(|v| !v.is_empty()) {
            candidates.push(PathBuf::from(d));
        }
        if let Some(bin_dir) = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf))
        {
            candidates.push(bin_dir.join("../share/phoneagent/ui"));
            candidates.push(bin_dir.join("../lib/phoneagent/ui"));
        }
        candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/dist"));
        candidates.push(PathBuf::from("ui/dist"));
    }
    for c in &candidates {
        if c.join("index.html").is_file() {
            return Ok(c.canonicalize().unwrap_or_else(|_| c.clone()));
        }
    }
    Err(UiDirError {
        looked: candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "txt" => "text/plain; charset=utf-8",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

/// The file under `root` that the URL path `path` names, or `None` for anything but plain
/// names (no `..`, no absolute parts, no backslashes or NULs).
pub(crate) fn resolve(root: &Path, path: &str) -> Option<PathBuf> {
    let rel = path.trim_start_matches('/');
    if rel.contains('\\') || rel.contains('\0') {
        return None;
    }
    let rel = Path::new(rel);
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    Some(root.join(rel))
}

/// `GET` any other path: a file of the built UI, `index.html` for `/` and for paths without
/// an extension (the UI has no routes of its own, but a reload must not 404).
pub(crate) async fn serve(State(ctx): State<Arc<Ctx>>, req: Request) -> Response {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "only GET is served here; commands are POST /api/call/<command>",
        );
    }
    let path = req.uri().path();
    let Some(mut file) = resolve(&ctx.ui_dir, path) else {
        return error_response(StatusCode::NOT_FOUND, "not_found", "no such file");
    };
    if path == "/" || (!file.is_file() && file.extension().is_none()) {
        file = ctx.ui_dir.join("index.html");
    }
    let is_asset = path.starts_with("/assets/");
    match tokio::fs::read(&file).await {
        Ok(bytes) => {
            let mut r = (StatusCode::OK, bytes).into_response();
            let h = r.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(&file)),
            );
            h.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static(if is_asset {
                    // Vite names them by content hash.
                    "private, max-age=31536000, immutable"
                } else {
                    "no-store"
                }),
            );
            r
        }
        Err(_) => error_response(StatusCode::NOT_FOUND, "not_found", "no such file"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_paths_resolve() {
        let root = Path::new("/srv/ui");
        assert_eq!(
            resolve(root, "/assets/a.js"),
            Some(PathBuf::from("/srv/ui/assets/a.js"))
        );
        assert_eq!(resolve(root, "/"), Some(PathBuf::from("/srv/ui/")));
        assert_eq!(resolve(root, "/../etc/passwd"), None);
        assert_eq!(resolve(root, "/a/../../x"), None);
        assert_eq!(
            resolve(root, "//etc/passwd"),
            Some(PathBuf::from("/srv/ui/etc/passwd"))
        );
        assert_eq!(resolve(root, "/a\\..\\b"), None);
    }

    #[test]
    fn a_missing_ui_says_how_to_build_it() {
        let dir = tempfile::tempdir().unwrap();
        let e = find_ui_dir(Some(dir.path())).unwrap_err();
        assert!(e.to_string().contains("npm ci && npm run build"), "{e}");
        std::fs::write(dir.path().join("index.html"), "<html>").unwrap();
        assert!(find_ui_dir(Some(dir.path())).is_ok());
    }
}
