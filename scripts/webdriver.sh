#!/usr/bin/env bash
# WebDriver end-to-end tests of the desktop app (issue 6): the real app binary driven through
# WebKitWebDriver under Xvfb, with a private D-Bus session, gnome-keyring and dunst
# (tests/webdriver/session.sh), against the in-app virtual phone and the scripted model server.
# Screenshots of the main views are written to docs/screenshots/. Needs the apt packages of
# scripts/install-deps.sh and a built ui/dist (scripts/test.sh builds it first).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
# The same unit graph as `cargo nextest run --workspace` (features are unified over the selected
# packages, so `cargo build -p ...` would rebuild half the dependency tree with other features):
# right after scripts/test.sh's nextest step this is a no-op, and it leaves both binaries in
# target/debug. APP and SCRIPTED_MODEL may point at already built binaries instead.
if [ -z "${APP:-}" ] || [ -z "${SCRIPTED_MODEL:-}" ]; then
  cargo test --no-run --workspace --locked
fi
APP="${APP:-$CARGO_TARGET_DIR/debug/phoneagent-app}"
SCRIPTED_MODEL="${SCRIPTED_MODEL:-$CARGO_TARGET_DIR/debug/scripted-model}"
# The CLI serves a second virtual phone with an adbd face (a phone added by address).
PHONEAGENT_CLI="${PHONEAGENT_CLI:-$CARGO_TARGET_DIR/debug/phoneagent}"
for bin in "$APP" "$SCRIPTED_MODEL" "$PHONEAGENT_CLI"; do
  if [ ! -x "$bin" ]; then
    echo "webdriver.sh: $bin was not built. Build it (cargo test --no-run --workspace builds every" >&2
    echo "binary that has an integration test) or point APP / SCRIPTED_MODEL / PHONEAGENT_CLI at one." >&2
    exit 1
  fi
done

E2E_HOME="$(mktemp -d)"
# KEEP_E2E_HOME=1 keeps the app's data directory (SQLite, logs) for debugging a failure.
[ "${KEEP_E2E_HOME:-0}" = "1" ] && echo "keeping $E2E_HOME" || trap 'rm -rf "$E2E_HOME"' EXIT
mkdir -p "$E2E_HOME/data" "$E2E_HOME/run" docs/screenshots
chmod 700 "$E2E_HOME/run"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HOME="$E2E_HOME" \
  XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_RUNTIME_DIR="$E2E_HOME/run" \
  PHONEAGENT_HOME="$E2E_HOME/data" PHONEAGENT_EXPORT_DIR="$E2E_HOME/exports" \
  PHONEAGENT_APP_SIM_PORT="$(free_port)" ADB_SERVER_SOCKET="tcp:127.0.0.1:$(free_port)" \
  APP="$APP" SCRIPTED_MODEL="$SCRIPTED_MODEL" PHONEAGENT_CLI="$PHONEAGENT_CLI" \
  SHOTS="$ROOT/docs/screenshots" \
  timeout 1500 dbus-run-session -- bash tests/webdriver/session.sh
