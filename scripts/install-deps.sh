#!/usr/bin/env bash
# Installs every system package PhoneAgent's build, demo and tests need (Debian/Ubuntu, as root).
# Screen reading for the safety gate (phoneagent-vision, SPEC S10/S11): Tesseract 5 with Simplified
# and Traditional Chinese and English language data; libtesseract-dev/libleptonica-dev to link it,
# clang/libclang-dev for the bindings' build script (bindgen).
# Direct USB (phoneagent-device feature `usb`, on by default) uses the pure-Rust `nusb` crate:
# no libusb or other system package is needed for it.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential pkg-config curl file libssl-dev \
  libwebkit2gtk-4.1-dev libxdo-dev libayatana-appindicator3-dev librsvg2-dev \
  xvfb xauth python3 python3-pip dbus dbus-x11 webkit2gtk-driver dunst imagemagick \
  gnome-keyring libsecret-tools libdbus-1-dev keyutils xdotool \
  fonts-wqy-microhei fonts-dejavu-core \
  tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-chi-tra tesseract-ocr-eng \
  libtesseract-dev libleptonica-dev clang libclang-dev \
  adb >/dev/null
# The browser tests of `phoneagent web` (scripts/web-e2e.sh): headless Chromium over WebDriver.
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
# nasm: the SIMD assembly of OpenH264 (the `openh264` crate builds it when nasm is there), the
# H.264 encoder/decoder of the live screen stream (SPEC D8, V7): ~5x faster than plain C.
$SUDO apt-get install -y -qq --no-install-recommends nasm >/dev/null
echo "system packages installed"

# The MCP client test (crates/phoneagent-cli/tests/mcp_e2e.rs, SPEC C4) drives `phoneagent mcp`
# with the official Python MCP SDK from PyPI. Installed for the user only when missing (quick
# when present); python3 comes from apt above unless one is already on PATH.
if ! python3 -c 'import mcp.client.stdio' >/dev/null 2>&1; then
  echo "installing the Python MCP SDK (pip install mcp) for the MCP client test…"
  python3 -m pip install --quiet --disable-pip-version-check 'mcp>=1.2' \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages 'mcp>=1.2' \
    || { echo "could not pip install mcp: the MCP client test will fail under scripts/test.sh" >&2; exit 1; }
fi

# Toolchains are not apt packages here: say what is missing instead of failing later.
if ! command -v cargo >/dev/null 2>&1; then
  if [ -n "${SUDO_USER:-}" ]; then
    # Under sudo, root's PATH usually lacks the user's ~/.cargo/bin: not an error.
    echo "note: run this script without sudo (it calls sudo for apt itself) so it can check Rust and cargo-nextest" >&2
    exit 0
  fi
  echo "Rust is not installed: get it with  curl https://sh.rustup.rs -sSf | sh  (stable), then open a new shell" >&2
  exit 1
fi
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "installing cargo-nextest (the test runner scripts/test.sh uses)…"
  cargo install cargo-nextest --locked
fi
node_major="$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/')"
if [ -z "$node_major" ] || [ "$node_major" -lt 20 ] || ! command -v npm >/dev/null 2>&1; then
  echo "note: the tests and the desktop app's UI need Node.js 20+ with npm (https://nodejs.org or nodesource); the CLI demo does not" >&2
fi
