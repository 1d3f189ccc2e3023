//! Tauri build script: generates the context (config, capabilities, icons) and one
//! `allow-<command>` permission per app command, so the capability can grant exactly those.
/// The bundled UI (`frontendDist`). On a clean clone it does not exist until
/// `npm ci && npm run build` ran in `ui/` (scripts/test.sh does that first); so that the
/// workspace still compiles (`cargo clippy --workspace`), a placeholder page that says what to
/// do is written when the directory is missing. A real UI build replaces it.
fn ensure_frontend_dist() {
    let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    println!("cargo:rerun-if-changed=../crates/phoneagent-console/src/command_names.rs");
    if dist.join("index.html").exists() {
        return;
    }
    let page = "<!doctype html><meta charset=utf-8><title>PhoneAgent</title>\n\
        <p>The PhoneAgent UI was not built. Run <code>npm ci &amp;&amp; npm run build</code> in \
        <code>ui/</code>, then rebuild the app.</p>\n";
    if let Err(e) =
        std::fs::create_dir_all(&dist).and_then(|()| std::fs::write(dist.join("index.html"), page))
    {
        println!(
            "cargo:warning=could not write a placeholder {}: {e}",
            dist.display()
        );
    }
}

/// The app's command names, shared with the console crate (`phoneagent_console::COMMANDS`) and
/// `src/commands.rs` (one list for all).
const COMMANDS: &[&str] = include!("../crates/phoneagent-console/src/command_names.rs");

fn main() {
    ensure_frontend_dist();
    let commands: &[&str] = COMMANDS;
    let attrs = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(commands));
    if let Err(e) = tauri_build::try_build(attrs) {
        eprintln!("tauri build failed: {e:#}");
        std::process::exit(1);
    }
}
