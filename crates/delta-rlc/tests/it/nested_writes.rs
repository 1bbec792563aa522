//! A DataFrame write (`Table::write`) matches a struct's fields to the column's by name, as
//! deltalake and Spark's DataFrame writer do: reordered fields land in their own columns, and a
//! struct with a field the column lacks or lacking one it has is refused, nothing committed
//! (Arrow's own struct cast would drop the extra field, or match the rest by position).

use std::sync::Arc;

use delta_rlc::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, StructArray};
use delta_rlc::arrow::datatypes::{DataType, Field, Fields, Int64Type, Schema};
use delta_rlc::{ErrorKind, Table};

fn struct_batch(names: &[&str], values: &[i64]) -> RecordBatch {
    let fields: Vec<Field> = names
        .iter()
        .map(|n| Field::new(*n, DataType::Int64, true))
        .collect();
    let children: Vec<ArrayRef> = values
        .iter()
        .map(|v| Arc::new(Int64Array::from(vec![*v])) as ArrayRef)
        .collect();
    let s = StructArray::new(Fields::from(fields.clone()), children, None);
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("s", DataType::Struct(Fields::from(fields)), true),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(Int64Array::from(vec![1])), Arc::new(s)],
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn struct_fields_are_matched_by_name_and_every_one_must_match() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let table = Table::create(&loc)
        .columns_from(&struct_batch(&["a", "b"], &[0, 0]).schema())
        .await
        .unwrap();
    table
        .write([struct_batch(&["b", "A"], &[1, 2])])
        .await
        .unwrap();
    let version = table.version().await.unwrap();
    for (names, values) in [
        (&["a", "b", "c"][..], &[1, 2, 3][..]),
        (&["b", "c"], &[1, 2]),
        (&["x", "y"], &[1, 2]),
    ] {
        let e = table
            .write([struct_batch(names, values)])
            .await
            .unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{names:?}: {e}");
        assert!(e.to_string().contains("nested field"), "{names:?}: {e}");
    }
    assert_eq!(table.version().await.unwrap(), version);
    let batches = table.scan().collect().await.unwrap();
    let rows: Vec<(i64, i64)> = batches
        .iter()
        .flat_map(|b| {
            let s = b.column(1).as_struct();
            let a = s.column(0).as_primitive::<Int64Type>().clone();
            let bb = s.column(1).as_primitive::<Int64Type>().clone();
            (0..b.num_rows()).map(move |i| (a.value(i), bb.value(i)))
        })
        .collect();
    assert_eq!(rows, vec![(2, 1)], "a is the value's A, b its b");
    assert!(batches.iter().all(|b| b.column(1).null_count() == 0));
}

/// A DataFrame's DECIMAL narrower than the column's is refused by type (Delta Spark's schema
/// check; deltalake's `test_rust_decimal_cast`), inside a struct too; a narrower one is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_narrower_decimal_type_is_refused_by_type() {
    use delta_rlc::arrow::array::Decimal128Array;
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("d").display().to_string();
    let batch = |p: u8, s: i8, v: i128| {
        let a = Decimal128Array::from(vec![v])
            .with_precision_and_scale(p, s)
            .unwrap();
        let schema = Schema::new(vec![Field::new("x", DataType::Decimal128(p, s), true)]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(a)]).unwrap()
    };
    let table = Table::create(&loc)
        .columns_from(&batch(4, 1, 0).schema())
        .await
        .unwrap();
    table.write([batch(3, 1, 101)]).await.unwrap();
    let version = table.version().await.unwrap();
    // 10.1 fits DECIMAL(4,1), but the type DECIMAL(5,1) does not; nor does DECIMAL(4,2).
    for (p, s, v) in [(5, 1, 101), (4, 2, 1010)] {
        let e = table.write([batch(p, s, v)]).await.unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::SchemaMismatch, "({p},{s}): {e}");
        assert!(
            e.to_string()
                .starts_with("Cannot cast field x from Decimal128"),
            "{e}"
        );
    }
    assert_eq!(table.version().await.unwrap(), version);
}

/// With schema merging, a struct's new fields are added to the column (Delta Spark's
/// mergeSchema; deltalake's `test_optimize_schema_evolved_3185`), and a struct lacking some of
/// the column's fields writes them NULL; every row reads back by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_merging_adds_a_structs_new_fields_and_fills_missing_ones() {
    use delta_rlc::SchemaMode;
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("m").display().to_string();
    let table = Table::create(&loc)
        .columns_from(&struct_batch(&["a"], &[0]).schema())
        .await
        .unwrap();
    table.write([struct_batch(&["a"], &[1])]).await.unwrap();
    table
        .write([struct_batch(&["b", "a"], &[20, 2])])
        .schema_mode(SchemaMode::Merge)
        .await
        .unwrap();
    table
        .write([struct_batch(&["a"], &[3])])
        .schema_mode(SchemaMode::Merge)
        .await
        .unwrap();
    let schema = table
        .snapshot(delta_rlc::At::Latest)
        .await
        .unwrap()
        .schema();
    let DataType::Struct(s) = schema.field(1).data_type() else {
        panic!("{schema:?}")
    };
    assert_eq!(
        s.iter().map(|f| f.name().as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    let mut rows: Vec<(i64, Option<i64>)> = Vec::new();
    for b in table.scan().collect().await.unwrap() {
        let s = b.column(1).as_struct();
        let a = s.column(0).as_primitive::<Int64Type>();
        let bb = s.column(1).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            rows.push((a.value(i), bb.is_valid(i).then(|| bb.value(i))));
        }
    }
    rows.sort();
    assert_eq!(rows, vec![(1, None), (2, Some(20)), (3, None)]);
}
