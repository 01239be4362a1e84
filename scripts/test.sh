#!/usr/bin/env bash
# The one command that runs every check: formatting, clippy, and the whole test suite through
# cargo-insta (which refuses unreviewed or unreferenced snapshots). Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh --test

echo "== cargo fmt --check" >&2
cargo fmt --all -- --check
echo "== cargo clippy" >&2
cargo clippy --all-targets --locked -- -D warnings
echo "== cargo insta test" >&2
# CI=true makes insta refuse to write snapshots; --unreferenced=reject fails on stale ones.
CI=true cargo insta test --unreferenced=reject
