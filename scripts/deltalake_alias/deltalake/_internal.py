"""Re-exports delta_rlc._internal and the schema types deltalake keeps there."""

from delta_rlc._internal import *  # noqa: F401,F403
from delta_rlc.schema import ArrayType, Field, MapType, PrimitiveType, Schema, StructType, VariantType  # noqa: F401
from delta_rlc.transaction import Transaction  # noqa: F401
from delta_rlc import TableFeatures, __version__, rust_core_version  # noqa: F401

_NANOSECOND_TIMESTAMPS = False
