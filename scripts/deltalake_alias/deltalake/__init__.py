"""deltalake → delta_rlc: a thin alias that only re-exports, so deltalake's own test suite runs
against delta_rlc (scripts/deltalake_suite.sh). No behaviour lives here."""

import delta_rlc as _m
from delta_rlc import *  # noqa: F401,F403
from delta_rlc import __all__, __version__  # noqa: F401

globals().update({k: v for k, v in vars(_m).items() if not k.startswith("__")})
