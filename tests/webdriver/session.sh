#!/usr/bin/env bash
# Runs inside `dbus-run-session`: a keyring daemon (fresh HOME, unlocked with a throwaway
# password; ENVIRONMENT.md), then under Xvfb a notification daemon (dunst needs the X display)
# whose context menu picks "approve", then the WebDriver tests.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
eval "$(printf 'e2e-keyring-password' | gnome-keyring-daemon --unlock --components=secrets)"
export GNOME_KEYRING_CONTROL SSH_AUTH_SOCK 2>/dev/null || true
mkdir -p "$HOME/.config/dunst"
cat > "$HOME/.config/dunst/dunstrc" <<CONF
[global]
dmenu = $here/pick-approve.sh
CONF
exec xvfb-run -a -s "-screen 0 1280x800x24" bash -c '
  dunst -conf "$HOME/.config/dunst/dunstrc" >"$HOME/dunst.log" 2>&1 &
  dunst_pid=$!
  trap "kill $dunst_pid 2>/dev/null || true" EXIT
  python3 "$1/e2e.py"
' session "$here"
