"""Re-exports delta_rlc.schema."""

from delta_rlc.schema import *  # noqa: F401,F403
import delta_rlc.schema as _m

globals().update({k: v for k, v in vars(_m).items() if not k.startswith("__")})
