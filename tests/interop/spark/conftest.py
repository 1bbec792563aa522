"""The Spark session fixture (helpers live in spark_support.py)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import spark_support  # noqa: E402


@pytest.fixture(scope="session")
def spark():
    s = spark_support.make_spark()
    yield s
    s.stop()
