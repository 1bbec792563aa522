#!/usr/bin/env bash
# Installs what the Spark interop suite needs (idempotent): a venv with pyspark (pinned) and the
# Delta Spark jars from Maven Central into .spark-jars/ (via tests/interop/spark/pom.xml).
# Maven Central does not serve io.delta:delta-spark_2.13:4.4.1 ("Could not find artifact
# io.delta:delta-spark_2.13:jar:4.4.1 in central"), so the suite pins 4.4.0, the newest served.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
stamp=.venv-spark/.installed-pyspark-4.2.0
if [ ! -f "$stamp" ]; then
  rm -rf .venv-spark
  "$PY" -m venv .venv-spark
  .venv-spark/bin/pip install --quiet --disable-pip-version-check 'pyspark==4.2.0' 'pytest==8.4.2'
  touch "$stamp"
fi
if [ ! -f .spark-jars/delta-spark_2.13-4.4.0.jar ]; then
  mvn -q -B -f tests/interop/spark/pom.xml dependency:copy-dependencies -DoutputDirectory="$PWD/.spark-jars" -DincludeScope=runtime
fi
echo "spark environment ready"
