"""Re-exports delta_rlc._util."""

from delta_rlc._util import deprecate_positional_commit_args, encode_partition_value  # noqa: F401
