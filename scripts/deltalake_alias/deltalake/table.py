"""deltalake.table is delta_rlc.table itself (the same module object), so a test that patches a
name in it (monkeypatch.setattr(deltalake.table, ...)) patches what delta_rlc calls."""

import sys

import delta_rlc.table as _m

sys.modules[__name__] = _m
