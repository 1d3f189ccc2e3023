#!/usr/bin/env bash
# Build PhoneAgent's desktop packages with Tauri's bundler (issue #14 item 7): the release app
# binary with the UI embedded, as a .deb (icons, desktop entry, runtime dependencies declared in
# src-tauri/tauri.conf.json: WebKitGTK and GTK from Tauri, Tesseract and its zh/en data from
# us; adb, scrcpy and gnome-keyring recommended). BUNDLES=deb,appimage also builds an AppImage —
# Tauri's bundler downloads linuxdeploy from GitHub for it, so it needs that network access.
# macOS (.dmg/.app) and Windows (.msi/.exe) bundles are built on those systems with the same
# command and BUNDLES=dmg / BUNDLES=msi,nsis.
# Prints the path of each package built. Needs the apt packages of scripts/install-deps.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT/ui"
[ -d node_modules/@tauri-apps/cli ] || npm ci --no-audit --no-fund
npm run build >/dev/null
cd "$ROOT/src-tauri"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
"$ROOT/ui/node_modules/.bin/tauri" build --ci --bundles "${BUNDLES:-deb}" -- --locked
find "$CARGO_TARGET_DIR/release/bundle" -maxdepth 2 -type f \( -name '*.deb' -o -name '*.AppImage' -o -name '*.rpm' \) -newer "$ROOT/src-tauri/tauri.conf.json" -print
