"""Re-exports delta_rlc.fs."""

from delta_rlc.fs import *  # noqa: F401,F403
import delta_rlc.fs as _m

globals().update({k: v for k, v in vars(_m).items() if not k.startswith("__")})
