#!/usr/bin/env bash
# Desktop app checks (issue 6): UI type check + unit tests + build, the Rust crate's tests
# (including the TypeScript bindings / fixtures staleness check), then WebDriver end-to-end tests
# of the real app binary under Xvfb with a private D-Bus session, gnome-keyring and dunst.
# Needs the apt packages of scripts/install-deps.sh, Node 20 and npm. Everything runs under
# `timeout`. Screenshots of the main views are written to docs/screenshots/.
#
#   scripts/test-app.sh            # everything
#   SKIP_E2E=1 scripts/test-app.sh # no WebDriver tests
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
APP_MANIFEST=(-p phoneagent-app)
if ! grep -q '"src-tauri"' Cargo.toml; then APP_MANIFEST=(--manifest-path src-tauri/Cargo.toml); fi

step() { printf '\n== %s\n' "$*"; }

step "UI: npm ci, svelte-check, vitest, vite build"
(cd ui && timeout 300 npm ci --no-audit --no-fund && timeout 300 npm run check && timeout 300 npm test && timeout 300 npm run build)

step "Rust: phoneagent-app unit + integration tests (regenerate ui/src/lib/bindings and the event fixture)"
rm -rf ui/src/lib/bindings.new
TS_RS_EXPORT_DIR="$ROOT/ui/src/lib/bindings" PHONEAGENT_WRITE_FIXTURES=1 \
  timeout 900 cargo test "${APP_MANIFEST[@]}" --lib --tests
step "Generated TypeScript must be committed and current"
if [ -n "$(git status --porcelain -- ui/src/lib/bindings ui/src/lib/fixtures)" ]; then
  git status --short -- ui/src/lib/bindings ui/src/lib/fixtures
  git --no-pager diff --stat -- ui/src/lib/bindings ui/src/lib/fixtures
  echo "ui/src/lib/bindings or fixtures are stale: commit the regenerated files" >&2
  exit 1
fi

[ "${SKIP_E2E:-0}" = "1" ] && { echo "SKIP_E2E=1: skipping WebDriver tests"; exit 0; }

step "Build the app and the scripted model"
timeout 1200 cargo build "${APP_MANIFEST[@]}" --bin phoneagent-app
timeout 900 cargo build -p phoneagent-testkit --bin scripted-model

step "WebDriver end-to-end tests (Xvfb, D-Bus, gnome-keyring, dunst)"
E2E_HOME="$(mktemp -d)"
trap 'rm -rf "$E2E_HOME"' EXIT
mkdir -p "$E2E_HOME/data" docs/screenshots
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HOME="$E2E_HOME" \
  XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_RUNTIME_DIR="$E2E_HOME/run" \
  PHONEAGENT_HOME="$E2E_HOME/data" PHONEAGENT_EXPORT_DIR="$E2E_HOME/exports" \
  PHONEAGENT_APP_SIM_PORT="$(free_port)" ADB_SERVER_SOCKET="tcp:127.0.0.1:$(free_port)" \
  APP="$CARGO_TARGET_DIR/debug/phoneagent-app" SCRIPTED_MODEL="$CARGO_TARGET_DIR/debug/scripted-model" \
  SHOTS="$ROOT/docs/screenshots" \
  timeout 600 dbus-run-session -- bash tests/webdriver/session.sh
