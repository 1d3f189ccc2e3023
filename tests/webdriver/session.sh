#!/usr/bin/env bash
# Runs inside `dbus-run-session`: a keyring daemon (fresh HOME, unlocked with a throwaway
# password; ENVIRONMENT.md), a notification daemon whose context menu picks "approve", then the
# WebDriver tests under Xvfb.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
eval "$(printf 'e2e-keyring-password' | gnome-keyring-daemon --unlock --components=secrets)"
export GNOME_KEYRING_CONTROL SSH_AUTH_SOCK 2>/dev/null || true
mkdir -p "$HOME/.config/dunst"
cat > "$HOME/.config/dunst/dunstrc" <<CONF
[global]
dmenu = $here/pick-approve.sh
CONF
dunst -conf "$HOME/.config/dunst/dunstrc" >"$HOME/dunst.log" 2>&1 &
dunst_pid=$!
trap 'kill $dunst_pid 2>/dev/null || true' EXIT
exec xvfb-run -a -s "-screen 0 1280x800x24" python3 "$here/e2e.py"
