"""Re-exports delta_rlc.writer's table helper."""

from delta_rlc.writer import try_get_table_and_table_uri  # noqa: F401
