#!/usr/bin/env bash
# Install the .deb built by scripts/package.sh into this system (as a user would: apt resolves
# the dependencies it declares) and start the installed app under Xvfb until its window is
# painted (issue #14 item 7). Then remove it again. Needs root (or sudo) and the apt packages of
# scripts/install-deps.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
DEB="${DEB:-$(ls -t "$CARGO_TARGET_DIR"/release/bundle/deb/*.deb | head -1)}"
echo "installing $DEB"
dpkg-deb --info "$DEB" | sed -n '/Package:/p;/Depends:/p;/Recommends:/p'
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$DEB" >/dev/null
PKG="$(dpkg-deb --field "$DEB" Package)"
cleanup() { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq "$PKG" >/dev/null || true; }
trap cleanup EXIT
BIN="$(dpkg -L "$PKG" | grep -E '^/usr/bin/' | head -1)"
DESKTOP="$(dpkg -L "$PKG" | grep -E '\.desktop$' | head -1)"
[ -x "$BIN" ] || { echo "FAIL: the package installs no program in /usr/bin"; exit 1; }
[ -n "$DESKTOP" ] && grep -q "^Exec=" "$DESKTOP" || { echo "FAIL: no desktop entry"; exit 1; }
# The installed binary is also the virtual phone's own process (issue #14): started with the
# flag it listens, says so on one line and ends when its stdin closes (here: at once).
READY="$(timeout 30 "$BIN" --phoneagent-virtual-phone 0 </dev/null | head -1)"
case "$READY" in
  "phoneagent-virtual-phone "[0-9]*" "*) echo "the installed binary serves the virtual phone: $READY" ;;
  *) echo "FAIL: $BIN --phoneagent-virtual-phone 0 printed ${READY:-nothing}, not its ready line"; exit 1 ;;
esac
dpkg -L "$PKG" | grep -q '/icons/' || { echo "FAIL: no icons"; exit 1; }
echo "installed $BIN and $DESKTOP"
# Start it on a private X display, D-Bus session and data directory.
HOME_DIR="$(mktemp -d)"
trap 'cleanup; rm -rf "$HOME_DIR"' EXIT
SHOT="$HOME_DIR/first-paint.png"
HOME="$HOME_DIR" PHONEAGENT_HOME="$HOME_DIR/data" XDG_RUNTIME_DIR="$HOME_DIR" BIN="$BIN" SHOT="$SHOT" \
  timeout 120 xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash -c '
    t0=$(date +%s.%N)
    "$BIN" >"$HOME/app.log" 2>&1 &
    pid=$!
    # The window exists, then its page has painted (not a blank window): up to 60 s.
    xdotool search --sync --onlyvisible --name "^PhoneAgent$" >/dev/null
    for _ in $(seq 1 120); do
      import -window root "$SHOT" 2>/dev/null || true
      sd=$(convert "$SHOT" -colorspace Gray -format "%[fx:standard_deviation]" info: 2>/dev/null || echo 0)
      if awk -v s="$sd" "BEGIN{exit !(s > 0.05)}"; then
        echo "MEASURE installed app: start to first paint $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$t0" "$(date +%s.%N)") s"
        kill $pid; wait $pid 2>/dev/null || true
        exit 0
      fi
      kill -0 $pid 2>/dev/null || { echo "FAIL: the app exited"; cat "$HOME/app.log"; exit 1; }
      sleep 0.5
    done
    echo "FAIL: nothing painted within 60 s"; cat "$HOME/app.log"; exit 1
  '
cp "$SHOT" "$ROOT/docs/screenshots/installed-first-paint.png" 2>/dev/null || true
echo "the installed package starts and paints its window"
