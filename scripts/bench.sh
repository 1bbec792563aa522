#!/usr/bin/env bash
# Builds the optimized binary and runs the benchmark orchestrator; writes BENCHMARKS.md.
#   scripts/bench.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
PROFILE="${DELTA_RLC_BENCH_PROFILE:-bench-fast}"
cargo build --profile "$PROFILE" -p delta-rlc-cli
scripts/setup-python.sh
dir="$PROFILE"; [ "$PROFILE" = "dev" ] && dir=debug
.venv/bin/python scripts/bench.py --bin "$CARGO_TARGET_DIR/$dir/delta-rlc" "$@"
