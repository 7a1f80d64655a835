#!/usr/bin/env bash
# Licenses, bans and sources of every dependency, by the policy in deny.toml:
#   cargo deny --locked check licenses bans sources
# Installs cargo-deny from crates.io first when it is missing (`cargo install cargo-deny --locked`).
# Advisories are not checked: that needs the RustSec database from GitHub, which CI cannot reach
# (deny.toml, docs/reliability.md); run `cargo deny check advisories` where it can.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo deny --version >/dev/null 2>&1; then
  echo "deny.sh: installing cargo-deny from crates.io (a few minutes, once)" >&2
  cargo install cargo-deny --locked --quiet
fi
exec cargo deny --locked check licenses bans sources
