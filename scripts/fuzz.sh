#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ (docs/reliability.md, "Fuzzing") for SECONDS seconds each,
# one after the other, starting from its committed seed corpus fuzz/corpus/<target> (read, never
# written: new inputs go to a scratch copy), and fails on the first crash (its input is kept in
# fuzz/artifacts/<target>/; rerun it with `cargo +nightly fuzz run <target> <that file>`).
#   scripts/fuzz.sh                          # CI: 25 s per target, 4 targets (plus the build)
#   FUZZ_FLAGS= scripts/fuzz.sh 300          # the long run of docs/reliability.md
#   scripts/fuzz.sh 60 spec jni_inputs       # some targets only
# Needs the nightly toolchain (skipped, with a message, without it) and cargo-fuzz, which it
# installs from crates.io when missing. The last line per target is its figures: executions,
# executions per second, coverage (edges, features), corpus size, crashes.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-25}"
shift || true
TARGETS=("$@")
if [[ ${#TARGETS[@]} -eq 0 ]]; then
  TARGETS=(configmap sidecar_request jni_inputs spec)
fi
# FUZZ_FLAGS: cargo-fuzz build flags. Default: an unoptimised build without AddressSanitizer, the
# quickest to build on a fresh CI machine (every line fuzzed is safe Rust; debug assertions and
# overflow checks are on). Empty: cargo-fuzz's defaults (optimised, debug assertions,
# AddressSanitizer), three to four times the executions per second, for long runs.
read -r -a FLAGS <<< "${FUZZ_FLAGS---dev -a -s none}"

if ! command -v rustup >/dev/null || ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz.sh: SKIPPED: no nightly Rust toolchain (cargo-fuzz needs one: rustup toolchain install nightly)"
  exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz from crates.io (cargo +nightly install cargo-fuzz --locked)" >&2
  if ! cargo +nightly install cargo-fuzz --locked --quiet; then
    echo "fuzz.sh: SKIPPED: cargo-fuzz could not be installed"
    exit 0
  fi
fi

echo "fuzz.sh: building the fuzz targets (cargo +nightly fuzz build ${FLAGS[*]})" >&2
cargo +nightly fuzz build "${FLAGS[@]}"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
for target in "${TARGETS[@]}"; do
  mkdir -p "$SCRATCH/$target"
  log="$SCRATCH/$target.log"
  if ! cargo +nightly fuzz run "${FLAGS[@]}" "$target" "$SCRATCH/$target" "fuzz/corpus/$target" -- \
      -max_total_time="$SECONDS_EACH" -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "fuzz.sh: $target FAILED: the crashing input is in fuzz/artifacts/$target/ (see above)" >&2
    exit 1
  fi
  last="$(grep -E '^#[0-9]+' "$log" | tail -n 1)"
  stat() { grep -E "^stat::$1:" "$log" | awk '{print $2}'; }
  cov="$(sed -nE 's/.* cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/\1 \2 \3/p' <<< "$last")"
  read -r edges features corpus <<< "${cov:-? ? ?}"
  echo "fuzz.sh: $target: ${SECONDS_EACH} s, $(stat number_of_executed_units) executions ($(stat average_exec_per_sec)/s), coverage $edges edges / $features features, corpus $corpus, 0 crashes"
done
