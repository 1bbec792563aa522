#!/usr/bin/env bash
# Differential campaign against Delta Spark (issue #49): N generated expressions evaluated by
# Spark, then replayed through delta-rlc by the `spark_corpus` test. Differences are written to
# $OUT.differences; curate them into tests/data/spark_expressions.jsonl (the committed corpus).
#   scripts/spark_campaign.sh [N] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10000}"; seed="${2:-1}"
out="${TMPDIR:-/tmp}/spark_campaign_${n}_${seed}.jsonl"
scripts/setup-spark.sh
.venv-spark/bin/python scripts/spark_expressions.py --n "$n" --seed "$seed" --out "$out" 2>/dev/null
DELTA_RLC_SPARK_CORPUS="$out" DELTA_RLC_SPARK_DIFFERENCES="$out.differences" \
  cargo test --workspace --exclude delta-rlc-python --test it -- spark_corpus --nocapture
