"""A deltalake script — write, merge, delete, optimize, read — that runs on delta_rlc after
changing only the import:

    from deltalake import DeltaTable, write_deltalake     # before
    from delta_rlc import DeltaTable, write_deltalake     # after

Run: python examples/deltalake_script.py TABLE_DIR [deltalake|delta_rlc]
"""

import sys

import pyarrow as pa

if len(sys.argv) > 2 and sys.argv[2] == "deltalake":
    from deltalake import DeltaTable, write_deltalake
else:
    from delta_rlc import DeltaTable, write_deltalake

uri = sys.argv[1] if len(sys.argv) > 1 else "./orders"

orders = pa.table(
    {
        "order_id": pa.array(range(1, 11), pa.int64()),
        "region": ["eu", "us"] * 5,
        "amount": pa.array([10.0 * i for i in range(1, 11)], pa.float64()),
    }
)
write_deltalake(uri, orders, partition_by=["region"], mode="overwrite")

dt = DeltaTable(uri)
updates = pa.table({"order_id": pa.array([2, 4, 11], pa.int64()), "region": ["us", "us", "eu"], "amount": [0.5, 0.5, 110.0]})
metrics = (
    dt.merge(updates, predicate="t.order_id = s.order_id", source_alias="s", target_alias="t")
    .when_matched_update(updates={"amount": "s.amount"})
    .when_not_matched_insert_all()
    .execute()
)
print("merge:", {k: metrics[k] for k in ("num_target_rows_updated", "num_target_rows_inserted") if k in metrics})

dt.delete("amount > 90")
dt.optimize.compact()
write_deltalake(uri, pa.table({"order_id": pa.array([12], pa.int64()), "region": ["eu"], "amount": [1.0]}), mode="append")

result = DeltaTable(uri).to_pyarrow_table().sort_by("order_id")
for row in result.to_pylist():
    print(row["order_id"], row["region"], row["amount"])
print("version", DeltaTable(uri).version())
