#!/usr/bin/env python3
"""Writes tests/scenarios/metadata/: issue #21's rules, one file per (rule, twin, isolation level,
legacy). In each, B (the winner) changes metadata and A (the loser, started first) writes; A's
outcome is the rule's verdict and the queries check the rows. Run from the repository root."""
import os

OUT = os.path.join("tests", "scenarios", "metadata")
TABLE = 'columns = "id BIGINT NOT NULL, v BIGINT, s STRING, w INT"\nsetup = ["INSERT INTO t SELECT value, value * 10, \'x\', CAST(NULL AS INT) FROM range(0, 50)", "INSERT INTO t SELECT value, value * 10, \'y\', CAST(NULL AS INT) FROM range(50, 100)"]'

# (slug, name, loser SQL, winner SQL, properties, A outcome, A events, queries)
RULES = [
    ("insert-vs-add-columns", "INSERT vs ADD COLUMNS: a nullable column the loser cannot have read or written; its rows read NULL in it",
     "INSERT INTO t (id, v, s) VALUES (100, 1000, 'new')", "ALTER TABLE t ADD COLUMNS (c BIGINT, d STRING)", {}, "committed", ["metadataChangeReconciled"],
     [("SELECT count(*), count(c), count(d) FROM t", [[101, 0, 0]]), ("SELECT v FROM t WHERE id = 100", [[1000]])]),
    ("update-vs-add-columns", "UPDATE (DVs) vs ADD COLUMNS: compatible, the updated rows read NULL in the new column",
     "UPDATE t SET v = -1 WHERE id < 5", "ALTER TABLE t ADD COLUMNS (c BIGINT)", {}, "committed", ["metadataChangeReconciled"],
     [("SELECT count(*), count(c) FROM t WHERE v = -1", [[5, 0]]), ("SELECT count(*) FROM t", [[100]])]),
    ("merge-vs-neutral-property", "MERGE vs SET TBLPROPERTIES of a key that does not change how files are written",
     "MERGE INTO t USING (SELECT 3 AS id, 7 AS v) src ON t.id = src.id WHEN MATCHED THEN UPDATE SET v = src.v",
     "ALTER TABLE t SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 60 days', 'owner' = 'ops')", {}, "committed", ["metadataChangeReconciled"],
     [("SELECT v FROM t WHERE id = 3", [[7]])]),
    ("insert-vs-add-constraint-held", "INSERT vs ADD CONSTRAINT that the loser's rows satisfy: checked on them at conflict time, committed",
     "INSERT INTO t (id, v, s) VALUES (100, 5, 'new')", "ALTER TABLE t ADD CONSTRAINT v_nonneg CHECK (v >= 0)", {}, "committed", ["metadataChangeReconciled"],
     [("SELECT count(*) FROM t WHERE v >= 0", [[101]])]),
    ("insert-vs-add-constraint-broken", "Twin: INSERT of a row the new constraint rejects — a true conflict",
     "INSERT INTO t (id, v, s) VALUES (100, -5, 'new')", "ALTER TABLE t ADD CONSTRAINT v_nonneg CHECK (v >= 0)", {}, "MetadataChanged", [],
     [("SELECT count(*), min(v) FROM t", [[100, 0]])]),
    ("update-vs-set-not-null-held", "UPDATE vs SET NOT NULL on a column the loser's new rows fill",
     "UPDATE t SET s = 'u' WHERE id < 5", "ALTER TABLE t ALTER COLUMN s SET NOT NULL", {}, "committed", ["metadataChangeReconciled"],
     [("SELECT count(*) FROM t WHERE s = 'u'", [[5]])]),
    ("update-vs-set-not-null-broken", "Twin: UPDATE setting NULL in the column made NOT NULL — a true conflict",
     "UPDATE t SET s = NULL WHERE id < 5", "ALTER TABLE t ALTER COLUMN s SET NOT NULL", {}, "MetadataChanged", [],
     [("SELECT count(*) FROM t WHERE s IS NULL", [[0]])]),
    ("delete-vs-add-constraint", "DELETE (DVs) vs ADD CONSTRAINT: the re-added file's rows were checked by the ALTER and are checked again; committed",
     "DELETE FROM t WHERE id < 10", "ALTER TABLE t ADD CONSTRAINT id_nonneg CHECK (id >= 0)", {}, "committed", ["metadataChangeReconciled"],
     [("SELECT count(*) FROM t", [[90]])]),
    ("insert-vs-rename", "INSERT vs RENAME COLUMN (column mapping): the loser wrote the old name — a true conflict",
     "INSERT INTO t (id, v, s) VALUES (100, 1000, 'new')", "ALTER TABLE t RENAME COLUMN v TO v2", {"delta.columnMapping.mode": "name"}, "MetadataChanged", [],
     [("SELECT count(*), count(v2) FROM t", [[100, 100]])]),
    ("insert-vs-drop-column", "INSERT vs DROP COLUMN (column mapping): a true conflict",
     "INSERT INTO t (id, v, s) VALUES (100, 1000, 'new')", "ALTER TABLE t DROP COLUMN s", {"delta.columnMapping.mode": "name"}, "MetadataChanged", [],
     [("SELECT count(*) FROM t", [[100]])]),
    ("insert-vs-add-columns-mapped", "INSERT vs ADD COLUMNS on a column-mapped table: the new column's fresh physical name is absent from the loser's files",
     "INSERT INTO t (id, v, s) VALUES (100, 1000, 'new')", "ALTER TABLE t ADD COLUMNS (c BIGINT)", {"delta.columnMapping.mode": "name"}, "committed", ["metadataChangeReconciled"],
     [("SELECT count(*), count(c) FROM t", [[101, 0]])]),
    ("delete-vs-append-only", "DELETE vs delta.appendOnly = true: the loser removes rows — a true conflict",
     "DELETE FROM t WHERE id < 10", "ALTER TABLE t SET TBLPROPERTIES ('delta.appendOnly' = 'true')", {}, "MetadataChanged", [],
     [("SELECT count(*) FROM t", [[100]])]),
    ("insert-vs-append-only", "Twin: INSERT vs delta.appendOnly = true: the loser only appends; committed",
     "INSERT INTO t (id, v, s) VALUES (100, 1000, 'new')", "ALTER TABLE t SET TBLPROPERTIES ('delta.appendOnly' = 'true')", {}, "committed", ["metadataChangeReconciled"],
     [("SELECT count(*) FROM t", [[101]])]),
    ("dv-delete-vs-dvs-off", "DELETE writing a DV vs deletion vectors turned off — a true conflict",
     "DELETE FROM t WHERE id < 10", "ALTER TABLE t SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')", {}, "MetadataChanged", [],
     [("SELECT count(*) FROM t", [[100]])]),
    ("insert-vs-dvs-off", "Twin: INSERT (no DV) vs deletion vectors turned off; committed",
     "INSERT INTO t (id, v, s) VALUES (100, 1000, 'new')", "ALTER TABLE t SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')", {}, "committed", ["metadataChangeReconciled"],
     [("SELECT count(*) FROM t", [[101]])]),
    ("insert-vs-mapping-upgrade", "INSERT vs the upgrade to column mapping (name mode): every existing column's physical name is its name, which the loser's file, stats and partition values use; committed",
     "INSERT INTO t (id, v, s) VALUES (100, 1000, 'new')", "ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')", {}, "committed", ["metadataChangeReconciled"],
     [("SELECT count(*), count(s) FROM t", [[101, 101]]), ("SELECT count(*), sum(v) FROM t WHERE id >= 99", [[2, 1990]])]),
    ("insert-vs-widen-type", "INSERT vs ALTER COLUMN TYPE (a widening): the loser's file holds the narrower type, which readers cast",
     "INSERT INTO t (id, v, w, s) VALUES (100, 1000, 7, 'new')", "ALTER TABLE t ALTER COLUMN w TYPE BIGINT",
     {"delta.enableTypeWidening": "true"}, "committed", ["metadataChangeReconciled"],
     [("SELECT count(*), sum(w) FROM t WHERE w IS NOT NULL", [[1, 7]]), ("SELECT count(*) FROM t", [[101]])]),
    ("delete-vs-cdf-on", "DELETE vs the change data feed turned on: the loser removes rows without change data files — a true conflict",
     "DELETE FROM t WHERE id < 10", "ALTER TABLE t SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')", {}, "MetadataChanged", [],
     [("SELECT count(*) FROM t", [[100]])]),
    ("insert-vs-cdf-on", "Twin: INSERT vs the change data feed turned on: pure appends need no change data; committed",
     "INSERT INTO t (id, v, s) VALUES (100, 1000, 'new')", "ALTER TABLE t SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')", {}, "committed", ["metadataChangeReconciled"],
     [("SELECT count(*) FROM t", [[101]])]),
    ("add-constraint-vs-insert", "ADD CONSTRAINT (loser, it read every row) vs a concurrent INSERT: the new rows were not checked — a true conflict",
     None, None, {}, None, [], []),
]


TWO_WINNERS = f"""name = "Two metadata winners (ADD COLUMNS, then ADD CONSTRAINT): classified from the loser's snapshot to the last; the loser's rows satisfy both; committed, and its twin A2 (a row breaking the constraint) aborts"
steps = ["A.start", "A2.start", "B.start", "B.commit", "C.start", "C.commit", "A.commit", "A2.commit"]

[table]
{TABLE}

[[txn]]
name = "A"
sql = "INSERT INTO t (id, v, s) VALUES (100, 5, 'new')"

[[txn]]
name = "A2"
sql = "INSERT INTO t (id, v, s) VALUES (101, -5, 'bad')"

[[txn]]
name = "B"
sql = "ALTER TABLE t ADD COLUMNS (c BIGINT)"

[[txn]]
name = "C"
sql = "ALTER TABLE t ADD CONSTRAINT v_nonneg CHECK (v >= 0 AND c IS NULL)"

[expect]
A = "committed"
A2 = "MetadataChanged"
B = "committed"
C = "committed"
[expect.events]
A = ["delta.rowLevelConcurrency.metadataChangeReconciled"]
[[expect.query]]
sql = "SELECT count(*), count(c), min(v) FROM t"
rows = [[101, 0, 0]]
"""


def toml_value(v):
    return "[" + ", ".join("[" + ", ".join(str(x) for x in r) + "]" for r in v) + "]"


def write(slug, name, a_sql, b_sql, props, a_out, events, queries, config):
    lines = [f'name = "{name}"', 'steps = ["A.start", "B.start", "B.commit", "A.commit"]', "", "[table]", TABLE]
    if props:
        lines.append("properties = { " + ", ".join(f'"{k}" = "{v}"' for k, v in props.items()) + " }")
    if config:
        lines += ["", "[config]"] + [f"{k} = {v}" for k, v in config.items()]
    lines += ["", "[[txn]]", 'name = "A"', f'sql = "{a_sql}"', "", "[[txn]]", 'name = "B"', f'sql = "{b_sql}"', "",
              "[expect]", f'A = "{a_out}"', 'B = "committed"']
    if events and a_out == "committed":
        lines += ["[expect.events]", "A = [" + ", ".join(f'"delta.rowLevelConcurrency.{e}"' for e in events) + "]"]
    for sql, rows in queries:
        lines += ["[[expect.query]]", f'sql = "{sql}"', f"rows = {toml_value(rows)}"]
    with open(os.path.join(OUT, f"{slug}.toml"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    n = 0
    for i, (slug, name, a_sql, b_sql, props, a_out, events, queries) in enumerate(RULES, 1):
        if a_sql is None:
            continue
        for iso in ["WriteSerializable", "Serializable"]:
            config = {"isolation": f'"{iso}"'}
            write(f"{i:02d}-{slug}-{iso.lower()}", f"{name} ({iso})", a_sql, b_sql, props, a_out, events, queries, config)
            n += 1
        if a_out == "committed":
            # Legacy twin: OSS Delta aborts on any metadata change; the winner's rows only.
            legacy_queries = [("SELECT count(*) FROM t", [[100]])]
            write(f"{i:02d}-{slug}-legacy", f"{name} — legacy: OSS aborts", a_sql, b_sql, props, "MetadataChanged", [],
                  legacy_queries, {"legacy": "true"})
            n += 1
    # The reverse direction: ADD CONSTRAINT as the loser.
    write("90-add-constraint-vs-insert", RULES[-1][1], "ALTER TABLE t ADD CONSTRAINT v_small CHECK (v < 2000)",
          "INSERT INTO t (id, v, s) VALUES (100, 5000, 'big')", {}, "ConcurrentAppend", [],
          [("SELECT count(*), max(v) FROM t", [[101, 5000]])], {})
    with open(os.path.join(OUT, "91-two-metadata-winners.toml"), "w") as f:
        f.write(TWO_WINNERS)
    print(f"wrote {n + 2} scenarios to {OUT}")


if __name__ == "__main__":
    main()
