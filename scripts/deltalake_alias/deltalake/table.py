"""Re-exports delta_rlc.table."""

from delta_rlc.table import *  # noqa: F401,F403
import delta_rlc.table as _m

globals().update({k: v for k, v in vars(_m).items() if not k.startswith("__")})
