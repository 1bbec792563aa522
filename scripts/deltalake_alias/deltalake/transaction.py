"""Re-exports delta_rlc.transaction."""

from delta_rlc.transaction import *  # noqa: F401,F403
import delta_rlc.transaction as _m

globals().update({k: v for k, v in vars(_m).items() if not k.startswith("__")})
