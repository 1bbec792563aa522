"""Spark session (local mode, two cores, small memory) with the Delta jars, and delta-rlc helpers."""
import glob
import json
import os
import subprocess
import sys


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
BIN = os.environ.get("DELTA_RLC_BIN", os.path.join(ROOT, "target", "debug", "delta-rlc"))
# The developer tooling (load generators, benchmark drivers), built beside the CLI.
DEV_BIN = os.environ.get("DELTA_RLC_DEV_BIN", os.path.join(os.path.dirname(BIN), "delta-rlc-dev"))


def rlc(*args):
    res = subprocess.run([BIN, *args], capture_output=True, text=True)
    if res.returncode != 0:
        raise AssertionError(f"delta-rlc {args} failed: {res.stderr}")
    return res.stdout


def rlc_rows(sql):
    return json.loads(rlc("sql", "--json", sql))["rows"]


def make_spark():
    from pyspark.sql import SparkSession
    jars = [j for j in glob.glob(os.path.join(ROOT, ".spark-jars", "*.jar")) if os.path.basename(j).startswith(("delta-", "unitycatalog-"))]
    s = (SparkSession.builder.master("local[2]").appName("delta-rlc-interop")
         .config("spark.jars", ",".join(jars))
         .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
         .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
         .config("spark.driver.memory", "1g").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "1")
         # Delta rebuilds a snapshot's state in 50 tasks by default, and replays the log after
         # each commit (ours too): tables here are a few files, and 50 tasks cost seconds per
         # statement. One task computes the same snapshot (a statement took 2-5x less, measured).
         .config("spark.databricks.delta.snapshotPartitions", "1")
         .config("spark.ui.showConsoleProgress", "false")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    return s
