"""``python -m delta_rlc sql "STATEMENT"`` / ``python -m delta_rlc sql -f script.sql``: run SQL and
print rows as CSV (the full CLI is the ``delta-rlc`` binary)."""

from __future__ import annotations

import argparse
import sys

import pyarrow.csv as pacsv

import delta_rlc
from delta_rlc.exceptions import DeltaError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m delta_rlc")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sql", help="run SQL statements")
    s.add_argument("statement", nargs="?")
    s.add_argument("-f", "--file", help="a script of ';'-separated statements ('-' = stdin)")
    args = p.parse_args(argv)
    if args.file:
        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
        # The engine's splitter: a ';' inside a string or a comment does not end a statement.
        try:
            statements = delta_rlc._internal.split_statements(text)
        except (DeltaError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    elif args.statement:
        statements = [args.statement]
    else:
        p.error("give a statement or -f FILE")
    try:
        for stmt in statements:
            out = delta_rlc.sql(stmt)
            if out is None:
                continue
            if isinstance(out, dict):
                v = out.get("version")
                print(f"committed version {v}" if v is not None else "no change")
            elif isinstance(out, str):
                print(out)
            else:
                pacsv.write_csv(out.read_all(), sys.stdout.buffer)
    except (DeltaError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
