"""deltalake (delta-rs Python) side of the benchmarks: the same operations as delta-rlc, run as a
subprocess by scripts/bench.py so wall time and peak memory are measured the same way."""
import json
import sys
import time

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder, write_deltalake
from deltalake.exceptions import CommitFailedError


def data(lo, hi):
    ids = pa.array(range(lo, hi), type=pa.int64())
    import pyarrow.compute as pc
    return pa.table({"id": ids, "v": pc.cast(pc.bit_wise_and(ids, 1023), pa.int64()), "s": pc.binary_join_element_wise("r", pc.cast(pc.bit_wise_and(ids, 127), pa.string()), "")})


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    t0 = time.time()
    out = {}
    if cmd == "insert":
        rows, files = int(args[0]), int(args[1])
        per = rows // files
        for f in range(files):
            write_deltalake(path, data(f * per, (f + 1) * per), mode="append", configuration={"delta.enableDeletionVectors": "true"} if f == 0 else None)
    elif cmd == "scan":
        dt = DeltaTable(path)
        q = QueryBuilder().register("t", dt)
        out["count"] = pa.table(q.execute("SELECT count(*) AS c FROM t")).column(0)[0].as_py()
        out["filtered"] = pa.table(q.execute("SELECT sum(v) AS c FROM t WHERE id % 10 = 3")).column(0)[0].as_py()
    elif cmd == "delete":
        out = DeltaTable(path).delete("id % 1000 = 7")
    elif cmd == "update":
        out = DeltaTable(path).update(predicate="id % 1000 = 8", updates={"v": "v + 1"})
    elif cmd == "merge":
        keys = int(args[0])
        src = pa.table({"id": pa.array(range(0, keys * 100, 100), type=pa.int64()), "v": pa.array([7] * keys, type=pa.int64()), "s": pa.array(["m"] * keys)})
        out = (DeltaTable(path).merge(source=src, predicate="t.id = s.id", source_alias="s", target_alias="t")
               .when_matched_update_all().when_not_matched_insert_all().execute())
    elif cmd == "snapshot":
        t = time.time()
        dt = DeltaTable(path)
        n = len(dt.file_uris())
        out = {"files": n, "ms": (time.time() - t) * 1000}
    elif cmd == "loop":
        # loop <writer> <seconds> <kind>: the concurrency workloads with deltalake's API.
        writer, seconds, kind = int(args[0]), float(args[1]), args[2]
        pause = float(args[3]) / 1000 if len(args) > 3 else 0.0
        # The *_scale kinds (scripts/bench_scale.py): keys [lo, lo + step) inside the writer's own
        # region, as `delta-rlc-dev stress loop --region --step` computes {lo} and {new}.
        region = int(args[4]) if len(args) > 4 else 1
        step = int(args[5]) if len(args) > 5 else 0
        commits, aborts, n, lat, rows_changed = 0, 0, 0, [], 0
        while time.time() - t0 < seconds:
            time.sleep(pause)
            t = time.time()
            try:
                dt = DeltaTable(path)
                if kind == "update":
                    lo = writer * 10000 + n * 10
                    dt.update(predicate=f"id >= {lo} AND id <= {lo + 5}", updates={"v": "v + 1"})
                elif kind == "append":
                    write_deltalake(path, data(10_000_000 + writer * 1_000_000 + n * 10, 10_000_000 + writer * 1_000_000 + n * 10 + 10), mode="append")
                elif kind == "optimize":
                    dt.optimize.compact()
                elif kind == "delete":
                    lo = writer * 10000 + n * 10
                    dt.delete(f"id >= {lo} AND id <= {lo + 2}")
                elif kind == "append_named":
                    # The table may have gained columns: the missing ones are NULL.
                    write_deltalake(path, data(10_000_000 + writer * 1_000_000 + n * 10, 10_000_000 + writer * 1_000_000 + n * 10 + 10),
                                    mode="append", schema_mode="merge")
                elif kind == "merge_named":
                    lo = writer * 10000 + n * 10
                    src = pa.table({"id": pa.array(range(lo, lo + 5), type=pa.int64()), "v": pa.array([1] * 5, type=pa.int64()), "s": pa.array(["m"] * 5)})
                    (dt.merge(source=src, predicate="t.id = s.id", source_alias="s", target_alias="t")
                     .when_matched_update(updates={"v": "s.v"}).when_not_matched_insert(updates={"id": "s.id", "v": "s.v", "s": "s.s"}).execute())
                elif kind == "alter_add":
                    from deltalake.schema import Field, PrimitiveType
                    dt.alter.add_columns(Field(f"c{writer}_{n}", PrimitiveType("long"), nullable=True))
                elif kind == "alter_prop":
                    dt.alter.set_table_properties({"delta.logRetentionDuration": f"interval 3{n} days"})
                elif kind == "update_scan":
                    # scripts/bench_scale.py's UPDATE_SCAN: every 2000th key, residues w mod 4.
                    m = dt.update(predicate=f"id % 2000 = {(n * 4 + writer) % 2000}", updates={"v": "v + 1"})
                    rows_changed += m.get("num_updated_rows", 0)
                elif kind == "delete_scan":
                    # scripts/bench_scale.py's DELETE_SCAN: every 8000th key, residues w mod 4.
                    m = dt.delete(f"id % 8000 = {(n * 4 + writer) % 8000}")
                    rows_changed += m.get("num_deleted_rows", 0)
                elif kind in ("update_scale", "delete_scale", "merge_scale"):
                    lo = writer * region + (n * step) % region
                    if kind == "update_scale":
                        m = dt.update(predicate=f"id >= {lo} AND id < {lo + step}", updates={"v": "v + 1"})
                        rows_changed += m.get("num_updated_rows", 0)
                    elif kind == "delete_scale":
                        m = dt.delete(f"id >= {lo} AND id < {lo + step}")
                        rows_changed += m.get("num_deleted_rows", 0)
                    else:
                        new = 1_000_000_000 + writer * 100_000_000 + n * step
                        half = step // 2
                        ids = pa.concat_arrays([pa.array(range(lo, lo + half), type=pa.int64()), pa.array(range(new, new + step - half), type=pa.int64())])
                        src = pa.table({"id": ids, "v": pa.array([1] * step, type=pa.int64()), "s": pa.array(["m"] * step)})
                        m = (dt.merge(source=src, predicate="t.id = s.id", source_alias="s", target_alias="t")
                             .when_matched_update_all().when_not_matched_insert_all().execute())
                        rows_changed += m.get("num_target_rows_updated", 0) + m.get("num_target_rows_inserted", 0)
                elif kind == "merge":
                    lo = writer * 10000 + n * 10
                    src = pa.table({"id": pa.array(range(lo, lo + 5), type=pa.int64()), "v": pa.array([1] * 5, type=pa.int64()), "s": pa.array(["m"] * 5)})
                    dt.merge(source=src, predicate="t.id = s.id", source_alias="s", target_alias="t").when_matched_update_all().when_not_matched_insert_all().execute()
                commits += 1
                lat.append((time.time() - t) * 1000)
                n += 1
            except CommitFailedError:
                aborts += 1  # the job runs the same operation again
        lat.sort()
        out = {"writer": writer, "commits": commits, "aborts": {"CommitFailed": aborts} if aborts else {}, "retries": 0, "rowsChanged": rows_changed,
               "p50Ms": lat[len(lat) // 2] if lat else 0, "p99Ms": lat[int((len(lat) - 1) * 0.99)] if lat else 0, "seconds": time.time() - t0}
    out = out if isinstance(out, dict) else {"result": str(out)}
    out.setdefault("seconds", time.time() - t0)
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
