#!/usr/bin/env bash
# Installs every system package PhoneAgent's build, demo and tests need (Debian/Ubuntu, as root).
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
  xvfb xauth python3 dbus dbus-x11 webkit2gtk-driver dunst imagemagick \
  gnome-keyring libsecret-tools libdbus-1-dev keyutils xdotool \
  fonts-wqy-microhei fonts-dejavu-core \
  adb >/dev/null
echo "system packages installed"
