#!/usr/bin/env bash
# The project's test command (README): formatting, lints, every test of the workspace, and the
# desktop UI's unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The core crates must never depend on Tauri (ARCHITECTURE.md).
if cargo tree -p phoneagent-runtime --locked 2>/dev/null | grep -q tauri; then
  echo "phoneagent-runtime depends on tauri: core crates must not" >&2; exit 1
fi
cargo nextest run --workspace --locked --no-fail-fast
# Desktop UI state (vitest); the app's Rust crate and WebDriver tests: scripts/test-app.sh.
(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm test)
