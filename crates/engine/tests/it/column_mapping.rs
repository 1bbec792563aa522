//! Reading a column-mapped table (mode `name`): data files, stats and partition values use physical
//! names. The table is built by hand so that every shortcut gives a wrong answer:
//! - `b` was renamed from `a` (physical name `a`), and a new `a` was added (physical `col-a2`):
//!   looking a logical name up in a file, in stats or in partition values finds the wrong column;
//! - the first file still holds a dropped column (`col-id2`): it must not surface;
//! - a nested field added later (`s.y`) is missing from the second file (NULL), and the files
//!   order nested fields differently from the schema.
//!
//! The twin without column mapping reads the same files by their literal names — and gets the
//! answer a shortcut would: that is what the mapping must not do.

use std::fs;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, StructArray};
use arrow::datatypes::{DataType, Field, Fields};
use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use parquet::arrow::ArrowWriter;
use serde_json::json;

use crate::common::{rt, sorted_rows};

fn cm_field(name: &str, ty: serde_json::Value, id: i64, physical: &str) -> serde_json::Value {
    json!({"name": name, "type": ty, "nullable": true, "metadata": {
        "delta.columnMapping.id": id, "delta.columnMapping.physicalName": physical}})
}

/// A list<struct<col-z: int>> column: one list per row (None = NULL list).
fn list_of_struct(rows: &[Option<Vec<i32>>]) -> ArrayRef {
    use arrow::array::{Int32Builder, ListBuilder, StructBuilder};
    let fields = Fields::from(vec![Field::new("col-z", DataType::Int32, true)]);
    let mut b = ListBuilder::new(StructBuilder::new(
        fields.clone(),
        vec![Box::new(Int32Builder::new())],
    ))
    .with_field(Field::new("element", DataType::Struct(fields), true));
    for r in rows {
        match r {
            None => b.append(false),
            Some(vs) => {
                for v in vs {
                    let st = b.values();
                    st.field_builder::<Int32Builder>(0)
                        .unwrap()
                        .append_value(*v);
                    st.append(true);
                }
                b.append(true);
            }
        }
    }
    Arc::new(b.finish())
}

fn write_parquet(path: &std::path::Path, batch: &RecordBatch) -> u64 {
    let file = fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    fs::metadata(path).unwrap().len()
}

fn struct_col(fields: Vec<(&str, ArrayRef)>) -> ArrayRef {
    let (names, cols): (Vec<_>, Vec<_>) = fields.into_iter().unzip();
    let fields: Fields = names
        .iter()
        .zip(&cols)
        .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
        .collect();
    Arc::new(StructArray::try_new(fields, cols, None).unwrap())
}

/// Builds the table at `dir`: with column mapping (`mode` = "name") or without ("none").
fn build_table(dir: &std::path::Path, mode: &str) {
    fs::create_dir_all(dir.join("_delta_log")).unwrap();
    fs::create_dir_all(dir.join("col-p=one")).unwrap();
    fs::create_dir_all(dir.join("col-p=two")).unwrap();
    // File 1: id 1..=3, b's data under `a`, s = {y, x} (file order differs), and a dropped
    // column's data under `col-id2`. No `col-a2` (the new `a` came later).
    let f1 = RecordBatch::try_from_iter(vec![
        (
            "col-id",
            Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef,
        ),
        ("a", Arc::new(Int64Array::from(vec![100, 101, 102]))),
        (
            "col-s",
            struct_col(vec![
                (
                    "col-y",
                    Arc::new(StringArray::from(vec!["p", "q", "r"])) as ArrayRef,
                ),
                ("col-x", Arc::new(Int32Array::from(vec![7, 8, 9]))),
            ]),
        ),
        ("col-id2", Arc::new(Int64Array::from(vec![-1, -2, -3]))),
        (
            "col-l",
            list_of_struct(&[Some(vec![5, 6]), None, Some(vec![])]),
        ),
    ])
    .unwrap();
    // File 2: id 10, 11; b = 200, 201; the new a = 100, 101; s has no `col-y` yet.
    let f2 = RecordBatch::try_from_iter(vec![
        (
            "col-id",
            Arc::new(Int64Array::from(vec![10, 11])) as ArrayRef,
        ),
        ("a", Arc::new(Int64Array::from(vec![200, 201]))),
        ("col-a2", Arc::new(Int64Array::from(vec![100, 101]))),
        (
            "col-s",
            struct_col(vec![(
                "col-x",
                Arc::new(Int32Array::from(vec![70, 71])) as ArrayRef,
            )]),
        ),
    ])
    .unwrap();
    let s1 = write_parquet(&dir.join("col-p=one/f1.parquet"), &f1);
    let s2 = write_parquet(&dir.join("col-p=two/f2.parquet"), &f2);
    let schema = json!({"type": "struct", "fields": [
        cm_field("id", json!("long"), 1, "col-id"),
        cm_field("b", json!("long"), 2, "a"),
        cm_field("a", json!("long"), 6, "col-a2"),
        cm_field("s", json!({"type": "struct", "fields": [
            cm_field("x", json!("integer"), 4, "col-x"),
            cm_field("y", json!("string"), 7, "col-y"),
        ]}), 3, "col-s"),
        cm_field("p", json!("string"), 5, "col-p"),
        cm_field("l", json!({"type": "array", "containsNull": true, "elementType": {"type": "struct",
            "fields": [cm_field("z", json!("integer"), 9, "col-z")]}}), 8, "col-l"),
    ]});
    let (protocol, configuration) = match mode {
        "none" => (
            json!({"minReaderVersion": 1, "minWriterVersion": 2}),
            json!({}),
        ),
        m => (
            json!({"minReaderVersion": 3, "minWriterVersion": 7,
                   "readerFeatures": ["columnMapping"], "writerFeatures": ["columnMapping"]}),
            json!({"delta.columnMapping.mode": m, "delta.columnMapping.maxColumnId": "7"}),
        ),
    };
    let stats1 = json!({"numRecords": 3, "minValues": {"col-id": 1, "a": 100, "col-s": {"col-x": 7}},
        "maxValues": {"col-id": 3, "a": 102, "col-s": {"col-x": 9}}, "nullCount": {"col-id": 0, "a": 0}});
    let stats2 = json!({"numRecords": 2, "minValues": {"col-id": 10, "a": 200, "col-a2": 100},
        "maxValues": {"col-id": 11, "a": 201, "col-a2": 101}, "nullCount": {"col-id": 0, "a": 0, "col-a2": 0}});
    let lines = [
        json!({"protocol": protocol}),
        json!({"metaData": {"id": "cm-test", "format": {"provider": "parquet", "options": {}},
            "schemaString": schema.to_string(), "partitionColumns": ["p"],
            "configuration": configuration, "createdTime": 1}}),
        json!({"add": {"path": "col-p=one/f1.parquet", "partitionValues": {"col-p": "one"},
            "size": s1, "modificationTime": 1, "dataChange": true, "stats": stats1.to_string()}}),
        json!({"add": {"path": "col-p=two/f2.parquet", "partitionValues": {"col-p": "two"},
            "size": s2, "modificationTime": 1, "dataChange": true, "stats": stats2.to_string()}}),
    ];
    let log: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    fs::write(
        dir.join("_delta_log/00000000000000000000.json"),
        log.join("\n") + "\n",
    )
    .unwrap();
}

#[test]
fn a_column_mapped_table_reads_by_physical_names() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    build_table(&t, "name");
    let loc = t.display().to_string();
    let mut s = SqlSession::new(Env::deterministic(1), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        let rows = |sql: &'static str| {
            let s = &s;
            async move { sorted_rows(&s.execute(sql).await.unwrap().batches) }
        };
        assert_eq!(
            rows("SELECT id, b, a, get_field(s, 'x'), get_field(s, 'y'), p FROM t").await,
            vec![
                "10|200|100|70|NULL|two",
                "11|201|101|71|NULL|two",
                "1|100|NULL|7|p|one",
                "2|101|NULL|8|q|one",
                "3|102|NULL|9|r|one",
            ]
        );
        // Pruning reads stats by physical name: `a = 100` is in file 2 (col-a2 100..101); the
        // stats under the literal key `a` (column b: 200..201) would prune it.
        assert_eq!(rows("SELECT id FROM t WHERE a = 100").await, vec!["10"]);
        assert_eq!(rows("SELECT id FROM t WHERE b = 100").await, vec!["1"]);
        assert_eq!(
            rows("SELECT id FROM t WHERE p = 'two' AND b > 200").await,
            vec!["11"]
        );
        assert_eq!(
            rows("SELECT count(*) FROM t WHERE get_field(s, 'x') > 8").await,
            vec!["3"]
        );
        // Lists of structs come back with logical field names; the file without the column: NULL.
        assert_eq!(
            rows("SELECT id, l FROM t WHERE id IN (1, 2, 3, 10)").await,
            vec!["10|NULL", "1|[{z: 5}, {z: 6}]", "2|NULL", "3|[]"]
        );
        // Writing goes through the same names: deleting `a = 100` removes id 10 (col-a2 = 100),
        // not id 1 (whose `a` physical column, logical `b`, holds 100).
        let out = s.execute("DELETE FROM t WHERE a = 100").await.unwrap();
        assert_eq!(out.commit.and_then(|c| c.affected_rows), Some(1));
        assert_eq!(
            rows("SELECT id FROM t WHERE id IN (1, 10)").await,
            vec!["1"]
        );
        s.execute("UPDATE t SET b = -b WHERE p = 'one' AND get_field(s, 'x') = 8")
            .await
            .unwrap();
        assert_eq!(
            rows("SELECT id, b, a, p FROM t").await,
            vec![
                "11|201|101|two",
                "1|100|NULL|one",
                "2|-101|NULL|one",
                "3|102|NULL|one"
            ]
        );
    });
}

/// The twin: the same files without column mapping are read by their literal names — the answers
/// a shortcut would give on the mapped table.
#[test]
fn the_same_files_without_column_mapping_read_literal_names() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    build_table(&t, "none");
    let loc = t.display().to_string();
    let mut s = SqlSession::new(Env::deterministic(1), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        let out = s.execute("SELECT id, b, a FROM t").await.unwrap();
        // No file has `id` or `b`; `a` is what the mapped table calls `b`.
        assert_eq!(
            sorted_rows(&out.batches),
            vec![
                "NULL|NULL|100",
                "NULL|NULL|101",
                "NULL|NULL|102",
                "NULL|NULL|200",
                "NULL|NULL|201"
            ]
        );
    });
}

/// A mode without the protocol feature, or a column without a physical name, fails the load.
#[test]
fn inconsistent_column_mapping_metadata_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    build_table(&t, "name");
    let log = t.join("_delta_log/00000000000000000000.json");
    let text = fs::read_to_string(&log).unwrap();
    let loc = t.display().to_string();
    let mut s = SqlSession::new(Env::deterministic(1), ConflictConfig::default());
    s.register("t", &loc);
    for broken in [
        text.replace(
            r#""readerFeatures":["columnMapping"],"writerFeatures":["columnMapping"]"#,
            r#""readerFeatures":[],"writerFeatures":[]"#,
        ),
        text.replace(
            r#"\"delta.columnMapping.physicalName\":\"col-x\""#,
            r#"\"comment\":\"x\""#,
        ),
        text.replace(
            r#""delta.columnMapping.mode":"name""#,
            r#""delta.columnMapping.mode":"fancy""#,
        ),
    ] {
        assert_ne!(broken, text, "the fixture changed shape");
        fs::write(&log, &broken).unwrap();
        let err = rt()
            .block_on(s.execute("SELECT count(*) FROM t"))
            .unwrap_err();
        assert!(err.to_string().to_lowercase().contains("column"), "{err}");
    }
}

/// A clustered column-mapped table records its clustering columns by physical name (as the
/// protocol's clustering domain does) and clusters by them: OPTIMIZE keeps every row.
#[test]
fn clustering_columns_of_a_column_mapped_table_are_physical() {
    let loc = "memory://cm-clustered/t";
    let mut s = SqlSession::new(Env::deterministic(4), ConflictConfig::default());
    s.register("t", loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT, v STRING) CLUSTER BY (v) \
             TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        )
        .await
        .unwrap();
        for i in 0..3 {
            s.execute(&format!(
                "INSERT INTO t SELECT value, CAST(value % 5 AS STRING) FROM range({}, {})",
                i * 10,
                i * 10 + 10
            ))
            .await
            .unwrap();
        }
        s.execute("OPTIMIZE t").await.unwrap();
        let snap = crate::common::latest_snapshot(loc).await;
        let domain = snap
            .domains
            .get("delta.clustering")
            .expect("clustering domain");
        let physical = snap.physical_name("v").to_string();
        assert!(physical.starts_with("col-"), "{physical}");
        assert!(
            domain.configuration.contains(&physical),
            "{}",
            domain.configuration
        );
        let out = s.execute("SELECT count(*), sum(id) FROM t").await.unwrap();
        assert_eq!(sorted_rows(&out.batches), vec!["30|435"]);
    });
}
