#!/usr/bin/env bash
# Peak memory (RSS) of statements whose input or output is large: a streaming INSERT … SELECT of
# 120M rows and SELECT * of 12.5M rows streamed as CSV / NDJSON. Prints one line per measurement.
#   scripts/bench_memory.sh [path/to/delta-rlc]     (default: the debug build in ./target)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-${CARGO_TARGET_DIR:-$PWD/target}/debug/delta-rlc}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
peak() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "$label: %e s, peak RSS %M KB" "$@" > /dev/null
}
"$bin" sql "CREATE TABLE '$dir/ins' (id BIGINT)" > /dev/null
peak "INSERT 120M rows from range()" "$bin" sql "INSERT INTO '$dir/ins' SELECT value FROM range(0, 120000000)"
"$bin" sql "CREATE TABLE '$dir/sel' (id BIGINT, v BIGINT)" > /dev/null
"$bin" sql "INSERT INTO '$dir/sel' SELECT value, value * 7 FROM range(0, 12500000)" > /dev/null
peak "SELECT * of 12.5M rows, --format csv" "$bin" --format csv sql "SELECT * FROM '$dir/sel'"
peak "SELECT * of 12.5M rows, --format ndjson" "$bin" --format ndjson sql "SELECT * FROM '$dir/sel'"
peak "SELECT * of 12.5M rows, table (first 10,000 shown)" "$bin" sql "SELECT * FROM '$dir/sel'"
