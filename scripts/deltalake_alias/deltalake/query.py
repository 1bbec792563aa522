"""Re-exports delta_rlc.query."""

from delta_rlc.query import *  # noqa: F401,F403
import delta_rlc.query as _m

globals().update({k: v for k, v in vars(_m).items() if not k.startswith("__")})
