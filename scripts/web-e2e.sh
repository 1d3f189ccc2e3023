#!/usr/bin/env bash
# Browser tests of `phoneagent web` (SPEC C3): headless Chromium driven over W3C WebDriver
# (chromedriver; apt packages chromium chromium-driver, see scripts/install-deps.sh) against the
# console's virtual phone (its own process) and the scripted model server (tests/web/e2e.py).
# Needs a built ui/dist (`cd ui && npm ci && npm run build`; built here when missing).
# PHONEAGENT and SCRIPTED_MODEL may point at already built binaries.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
if [ -z "${PHONEAGENT:-}" ] || [ -z "${SCRIPTED_MODEL:-}" ]; then
  cargo build --locked -p phoneagent-cli -p phoneagent-testkit --bins
fi
PHONEAGENT="${PHONEAGENT:-$CARGO_TARGET_DIR/debug/phoneagent}"
SCRIPTED_MODEL="${SCRIPTED_MODEL:-$CARGO_TARGET_DIR/debug/scripted-model}"
UI_DIR="${UI_DIR:-$ROOT/ui/dist}"
if [ ! -f "$UI_DIR/index.html" ]; then
  (cd ui && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && npm run build)
fi
for b in chromium chromedriver; do
  command -v "$b" >/dev/null 2>&1 || [ -n "${CHROMIUM:-}" ] || { echo "$b is not installed: apt-get install chromium chromium-driver (scripts/install-deps.sh)" >&2; exit 1; }
done

E2E_HOME="$(mktemp -d)"
# KEEP_E2E_HOME=1 keeps the data directory (SQLite) for debugging a failure.
[ "${KEEP_E2E_HOME:-0}" = "1" ] && echo "keeping $E2E_HOME" || trap 'rm -rf "$E2E_HOME"' EXIT
mkdir -p "$E2E_HOME/data"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# No adb server and no D-Bus session of the user's: the console sees only its virtual phone.
env -u DBUS_SESSION_BUS_ADDRESS \
  HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_DATA_HOME="$E2E_HOME/.local/share" \
  PHONEAGENT_HOME="$E2E_HOME/data" PHONEAGENT_EXPORT_DIR="$E2E_HOME/exports" \
  PHONEAGENT_APP_SIM_PORT="$(free_port)" ADB_SERVER_SOCKET="tcp:127.0.0.1:$(free_port)" \
  PHONEAGENT="$PHONEAGENT" SCRIPTED_MODEL="$SCRIPTED_MODEL" UI_DIR="$UI_DIR" \
  timeout 600 python3 tests/web/e2e.py
