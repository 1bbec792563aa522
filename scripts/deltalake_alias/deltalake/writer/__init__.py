"""Re-exports delta_rlc.writer."""

from delta_rlc.writer import *  # noqa: F401,F403
from delta_rlc.writer import __all__  # noqa: F401
