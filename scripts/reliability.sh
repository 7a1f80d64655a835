#!/usr/bin/env bash
# Runs the fault and bad-input tests with BLUEGREEN_RELIABILITY_DIR set, so that each records the
# trials it ran (bluegreen_examples::reliability), then renders them into the generated part of
# docs/reliability.md. Usage: scripts/reliability.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The test files that record trials (a file named here that is gone fails the run).
tests=(least_privilege secrets_in_logs flink_faults failures api_faults crash_every_call bad_specs configmap_edits restarts)
args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done
BLUEGREEN_RELIABILITY_DIR=$dir cargo test --locked -p bluegreen-e2e "${args[@]}" "$@"
cargo run --locked -q -p bluegreen-examples --bin bluegreen-reliability -- \
  "$dir" docs/reliability.md --made-by "scripts/reliability.sh ($(git rev-parse --short HEAD))"
