#!/usr/bin/env bash
# Builds the delta_rlc Python package (python/) into .venv for the tests: a debug build that
# shares the workspace's compiled dependencies (./target or $CARGO_TARGET_DIR). Users install a
# release build with `pip install ./python`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-python.sh > /dev/null
VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" .venv/bin/maturin develop --quiet -m python/Cargo.toml
.venv/bin/python -c "import delta_rlc; print('delta_rlc built into .venv')"
