"""Compares two junit XML runs of deltalake's suite: how many tests that pass on deltalake pass on
delta_rlc, and which do not (by file, then each test), for scripts/deltalake_suite.sh."""

import collections
import sys
import xml.etree.ElementTree as ET


def outcomes(path):
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        out[name] = "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"
    return out


base, ours = outcomes(sys.argv[1]), outcomes(sys.argv[2])
passing = [t for t, o in base.items() if o == "passed"]
also = [t for t in passing if ours.get(t) == "passed"]
print(f"deltalake_suite: {len(also)} of {len(passing)} tests that pass on deltalake pass on delta_rlc ({100 * len(also) / max(1, len(passing)):.1f}%)")
missing = [t for t in passing if ours.get(t) != "passed"]
by_file = collections.Counter(t.split("::")[0] for t in missing)
for f, n in by_file.most_common():
    print(f"  {n:4d}  {f}")
if "-v" in sys.argv:
    for t in missing:
        print("   ", t, ours.get(t, "absent"))
