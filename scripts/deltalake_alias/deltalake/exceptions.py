"""Re-exports delta_rlc.exceptions."""

from delta_rlc.exceptions import *  # noqa: F401,F403
import delta_rlc.exceptions as _m

globals().update({k: v for k, v in vars(_m).items() if not k.startswith("__")})
