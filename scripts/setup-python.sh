#!/usr/bin/env bash
# Creates the Python environments the interop tests use (idempotent; pinned versions).
#   .venv        deltalake, polars, pyarrow, pandas, pytest, moto server (S3 on 127.0.0.1),
#                azure-storage-blob (creates Azurite containers), maturin
#                (builds the delta_rlc Python package: scripts/build-python.sh)
#   .venv-duckdb duckdb 1.5.5 + its delta extension (must be paired exactly; separate venv)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
mkvenv() {
  local dir=$1; shift
  local stamp="$dir/.installed-$(echo "$*" | md5sum | cut -c1-12)"
  if [ -f "$stamp" ]; then return 0; fi
  rm -rf "$dir"
  "$PY" -m venv "$dir"
  "$dir/bin/pip" install --quiet --disable-pip-version-check "$@"
  touch "$stamp"
}
mkvenv .venv 'deltalake==1.6.6' 'polars==2.1.0' 'pyarrow==26.0.1' 'pandas==3.1.1' 'pytest==8.4.2' 'moto[server]==5.2.5' 'boto3==1.44.8' 'azure-storage-blob==12.31.1' 'maturin==1.16.0'
mkvenv .venv-duckdb 'duckdb==1.5.5' 'duckdb-extension-delta==1.5.5' 'pytest==8.4.2'
echo "python environments ready"
