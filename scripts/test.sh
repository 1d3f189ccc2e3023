#!/usr/bin/env bash
# The project's test command (README): formatting, the UI's type check / unit tests / build, lints,
# every Rust test of the workspace (including the desktop app's crate and the TypeScript bindings
# staleness check), then the desktop app's WebDriver end-to-end tests under Xvfb.
#
#   scripts/test.sh              # everything
#   SKIP_WEBDRIVER=1 scripts/test.sh
#   SKIP_PACKAGE=1 scripts/test.sh   # without the release .deb build and its install test
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Debian's libtesseract (the safety gate's OCR) uses OpenMP; one thread per reading keeps it
# from spinning on a loaded 2-core machine (read when the library loads, so set it here).
export OMP_THREAD_LIMIT="${OMP_THREAD_LIMIT:-1}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
step() { printf '\n== %s\n' "$*"; }

step "rustfmt"
cargo fmt --all --check

# The app embeds ui/dist at compile time, so the UI is built before any cargo build of the app.
step "UI: npm ci, svelte-check (strict TypeScript), vitest, vite build"
(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run check && npm test && npm run build)

step "clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The core crates must never depend on Tauri (ARCHITECTURE.md).
for crate in phoneagent-runtime phoneagent-console; do
  if cargo tree -p "$crate" --locked 2>/dev/null | grep -q tauri; then
    echo "$crate depends on tauri: core crates (and the console backend) must not" >&2; exit 1
  fi
done

# ts-rs writes to ui/src/lib/bindings (TS_RS_EXPORT_DIR in .cargo/config.toml).
step "cargo nextest (the whole workspace; regenerates ui/src/lib/bindings and the event fixture)"
# PHONEAGENT_REQUIRE_MCP_CLIENT: the MCP client test fails (instead of skipping) without the
# Python `mcp` SDK (scripts/install-deps.sh installs it).
PHONEAGENT_WRITE_FIXTURES=1 PHONEAGENT_REQUIRE_MCP_CLIENT=1 \
  cargo nextest run --workspace --locked --no-fail-fast
if git rev-parse --git-dir >/dev/null 2>&1 \
  && [ -n "$(git status --porcelain -- ui/src/lib/bindings ui/src/lib/fixtures)" ]; then
  git status --short -- ui/src/lib/bindings ui/src/lib/fixtures
  echo "ui/src/lib/bindings or ui/src/lib/fixtures are stale: commit the regenerated files" >&2
  exit 1
fi

if [ "${SKIP_WEBDRIVER:-0}" = "1" ]; then
  echo "SKIP_WEBDRIVER=1: skipping the WebDriver tests"
else
  step "desktop app: WebDriver end-to-end tests"
  # E2E_SKIP=a,b skips the scenarios named; E2E_ONLY=a,b runs only those.
  bash scripts/webdriver.sh
fi

if [ "${SKIP_WEB:-0}" = "1" ]; then
  echo "SKIP_WEB=1: skipping the browser tests of phoneagent web"
else
  step "phoneagent web: browser tests (headless Chromium over WebDriver)"
  PHONEAGENT="$CARGO_TARGET_DIR/debug/phoneagent" SCRIPTED_MODEL="$CARGO_TARGET_DIR/debug/scripted-model" \
    bash scripts/web-e2e.sh
fi

[ "${SKIP_PACKAGE:-0}" = "1" ] && { echo "SKIP_PACKAGE=1: skipping the .deb build and install test"; exit 0; }
step "desktop app: build the .deb (release) and install and start it"
bash scripts/package.sh
bash scripts/test-package.sh
# The release binary's memory after ten runs (README's performance table, issue #14): ten demo
# purchases on the in-app virtual phone, each checked against the phone's ground truth.
step "desktop app (release): memory after ten runs"
APP="$CARGO_TARGET_DIR/release/phoneagent-app" SCRIPTED_MODEL="$CARGO_TARGET_DIR/debug/scripted-model" \
  E2E_ONLY=virtual_phone_and_mirror,ten_runs_memory E2E_TEN_RUNS=1 E2E_SKIP= SHOTS= bash scripts/webdriver.sh
