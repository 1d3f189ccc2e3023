#!/usr/bin/env bash
# The project's test command (README): formatting, lints, then every test of the workspace.
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
