//! The library API end to end: every builder's outcome (rows, versions, metrics), the error kinds a
//! caller branches on, and commits beside a concurrent writer (reconciled, and the true-conflict
//! twin that must abort).

use std::sync::Arc;
use std::time::Duration;

use delta_rlc::arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use delta_rlc::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use delta_rlc::{
    col, lit, AbortReason, At, ConflictKind, ConflictSettings, ErrorKind, Table, TableOptions,
    WriteMode,
};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Utf8, true),
    ]))
}

fn batch(ids: &[i64], v: &str) -> RecordBatch {
    let vals: Vec<String> = ids.iter().map(|i| format!("{v}{i}")).collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(StringArray::from(vals)),
        ],
    )
    .unwrap()
}

/// (id, v) of every row, sorted by id.
async fn rows(table: &Table) -> Vec<(i64, Option<String>)> {
    let mut out = Vec::new();
    for b in table.scan().collect().await.unwrap() {
        let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let vs = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
        for i in 0..b.num_rows() {
            out.push((
                ids.value(i),
                vs.is_valid(i).then(|| vs.value(i).to_string()),
            ));
        }
    }
    out.sort();
    out
}

async fn new_table(dir: &tempfile::TempDir, dvs: bool) -> Table {
    let loc = dir.path().join("t").display().to_string();
    Table::create(&loc)
        .columns_from(&schema())
        .property("delta.enableDeletionVectors", dvs.to_string())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_scan_delete_update_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, true).await;
    let w = table.write([batch(&[1, 2, 3, 4], "a")]).await.unwrap();
    assert_eq!(
        (w.version, w.attempts, w.metrics.rows_affected),
        (Some(1), 1, Some(4))
    );

    let d = table
        .delete()
        .filter(col("id").eq(lit(2i64)))
        .await
        .unwrap();
    assert_eq!((d.version, d.metrics.rows_affected), (Some(2), Some(1)));
    assert_eq!(d.metrics.get("numDeletedRows"), Some(1));
    let u = table
        .update()
        .set("v", "upper(v)")
        .filter("id >= 3")
        .await
        .unwrap();
    assert_eq!((u.version, u.metrics.rows_affected), (Some(3), Some(2)));
    assert_eq!(
        rows(&table).await,
        vec![
            (1, Some("a1".into())),
            (3, Some("A3".into())),
            (4, Some("A4".into()))
        ]
    );
    // A DELETE that matches nothing commits nothing.
    let none = table.delete().filter("id > 100").await.unwrap();
    assert_eq!((none.version, none.metrics.rows_affected), (None, Some(0)));
    assert_eq!(table.version().await.unwrap(), 3);

    // Filter and projection; time travel by version.
    let picked = table
        .scan()
        .filter(col("id").gt(lit(1i64)))
        .columns(["v"])
        .collect()
        .await
        .unwrap();
    let n: usize = picked.iter().map(|b| b.num_rows()).sum();
    assert_eq!((n, picked[0].num_columns()), (2, 1));
    let v1 = table.snapshot(At::Version(1)).await.unwrap();
    assert_eq!((v1.version(), v1.num_rows()), (1, Some(4)));
    let old: usize = v1
        .scan()
        .collect()
        .await
        .unwrap()
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(old, 4);
    let latest = table.snapshot(At::Latest).await.unwrap();
    assert_eq!(latest.schema().fields().len(), 2);
    assert_eq!(
        latest
            .properties()
            .get("delta.enableDeletionVectors")
            .map(String::as_str),
        Some("true")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overwrite_replace_where_and_sql() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, false).await;
    table.write([batch(&[1, 2, 3], "a")]).await.unwrap();
    table
        .write([batch(&[2], "b")])
        .mode(WriteMode::ReplaceWhere("id = 2".into()))
        .await
        .unwrap();
    assert_eq!(
        rows(&table).await,
        vec![
            (1, Some("a1".into())),
            (2, Some("b2".into())),
            (3, Some("a3".into()))
        ]
    );
    // replaceWhere refuses rows outside its predicate, and commits nothing.
    let bad = table
        .write([batch(&[9], "c")])
        .mode(WriteMode::ReplaceWhere("id = 2".into()))
        .await
        .unwrap_err();
    assert_eq!(bad.kind(), &ErrorKind::InvalidInput, "{bad}");
    assert_eq!(table.version().await.unwrap(), 2);

    table
        .write([batch(&[7], "o")])
        .mode(WriteMode::Overwrite)
        .await
        .unwrap();
    assert_eq!(rows(&table).await, vec![(7, Some("o7".into()))]);

    let out = table.sql("SELECT count(*) AS n FROM t").await.unwrap();
    let n = out.batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!(n.value(0), 1);
    let ins = table.sql("INSERT INTO t VALUES (8, 'x')").await.unwrap();
    assert_eq!(ins.commit.and_then(|c| c.version), Some(4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_upserts_and_deletes_by_source() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, true).await;
    table.write([batch(&[1, 2, 3, 4], "a")]).await.unwrap();
    let m = table
        .merge(
            batch(&[2, 3, 9], "s"),
            col("target.id").eq(col("source.id")),
        )
        .when_matched_delete(|d| d.when("source.id = 3"))
        .when_matched_update(|u| u.set("v", "source.v"))
        .when_not_matched_insert(|i| i.all())
        .when_not_matched_by_source_delete(|d| d.when("target.id = 4"))
        .await
        .unwrap();
    assert_eq!(m.version, Some(2));
    // 1 updated + 1 deleted by source match + 1 inserted + 1 deleted by source.
    assert_eq!(m.metrics.rows_affected, Some(4));
    assert_eq!(
        rows(&table).await,
        vec![
            (1, Some("a1".into())),
            (2, Some("s2".into())),
            (9, Some("s9".into()))
        ]
    );
    // Aliases of the caller's choosing, in any case.
    table
        .merge(batch(&[1], "z"), "T.id = S.id")
        .target_alias("t")
        .source_alias("s")
        .when_matched_update(|u| u.all())
        .await
        .unwrap();
    assert_eq!(rows(&table).await[0], (1, Some("z1".into())));
}

/// Schema evolution: Merge adds the data's new columns in the same commit (old rows NULL) and
/// writes NULL for columns the data lacks; without it a mismatch is a SchemaMismatch and nothing
/// commits; Overwrite replaces the schema (with an overwrite).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_evolution_on_write() {
    use delta_rlc::SchemaMode;
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, true).await;
    table.write([batch(&[1], "a")]).await.unwrap();
    let wide_schema = Arc::new(Schema::new(vec![
        Field::new("extra", DataType::Int64, true),
        Field::new("id", DataType::Int64, false),
    ]));
    let wide = RecordBatch::try_new(
        wide_schema,
        vec![
            Arc::new(Int64Array::from(vec![20])),
            Arc::new(Int64Array::from(vec![2])),
        ],
    )
    .unwrap();
    let err = table.write([wide.clone()]).await.unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::SchemaMismatch);
    // A new column the data declares generated or identity is not added as a plain one:
    // refused, nothing committed (rows already written have no value for it).
    for (key, value, what) in [
        ("delta.generationExpression", "id + 1", "generated"),
        ("delta.identity.start", "1", "identity"),
    ] {
        let declared = Field::new("c", DataType::Int64, true)
            .with_metadata([(key.to_string(), value.to_string())].into());
        let data = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("id", DataType::Int64, false),
                declared,
            ])),
            vec![
                Arc::new(Int64Array::from(vec![3])),
                Arc::new(Int64Array::from(vec![4])),
            ],
        )
        .unwrap();
        let err = table
            .write([data])
            .schema_mode(SchemaMode::Merge)
            .await
            .unwrap_err();
        assert!(err.to_string().contains(what), "{err}");
        assert_eq!(err.kind(), &ErrorKind::SchemaMismatch);
        assert_eq!(table.version().await.unwrap(), 1);
    }
    let out = table
        .write([wide])
        .schema_mode(SchemaMode::Merge)
        .await
        .unwrap();
    assert_eq!(
        out.version,
        Some(2),
        "the new column and the rows in one commit"
    );
    let snap = table.snapshot(At::Latest).await.unwrap();
    let names: Vec<String> = snap
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, vec!["id", "v", "extra"]);
    assert_eq!(
        rows(&table).await,
        vec![(1, Some("a1".into())), (2, None)],
        "v is NULL for the row that lacked it"
    );
    let replaced =
        RecordBatch::try_from_iter(vec![("z", Arc::new(StringArray::from(vec!["only"])) as _)])
            .unwrap();
    let err = table
        .write([replaced.clone()])
        .schema_mode(SchemaMode::Overwrite)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::InvalidInput);
    table
        .write([replaced])
        .mode(WriteMode::Overwrite)
        .schema_mode(SchemaMode::Overwrite)
        .await
        .unwrap();
    let snap = table.snapshot(At::Latest).await.unwrap();
    assert_eq!(snap.schema().fields().len(), 1);
    assert_eq!(snap.num_rows(), Some(1));
}

/// A CHECK constraint binds the library's writes as it binds SQL's: the violating write fails with
/// a bad-input error naming the constraint and the row, and nothing is committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_constraints_bind_library_writes() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, true).await;
    table.write([batch(&[1, 2], "a")]).await.unwrap();
    table
        .sql("ALTER TABLE t ADD CONSTRAINT small_ids CHECK (id < 100)")
        .await
        .unwrap();
    let before = table.version().await.unwrap();
    let err = table.write([batch(&[3, 150], "b")]).await.unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::InvalidInput, "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("small_ids") && msg.contains("id: 150"),
        "{msg}"
    );
    assert_eq!(table.version().await.unwrap(), before);
    table.write([batch(&[3], "b")]).await.unwrap();
    assert_eq!(rows(&table).await.len(), 3);
}

/// A table opened with a memory limit runs its MERGE's join under it (the join event says so),
/// with the same rows; a limit that is not a size is a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_runs_under_the_tables_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, true).await;
    table.write([batch(&[1, 2, 3], "a")]).await.unwrap();
    let loc = dir.path().join("t").display().to_string();
    let limited = Table::open_with(
        &loc,
        TableOptions::default().memory_limit_str("256MB").unwrap(),
    )
    .await
    .unwrap();
    let m = limited
        .merge(batch(&[2, 5], "s"), "target.id = source.id")
        .when_matched_update(|u| u.all())
        .when_not_matched_insert(|i| i.all())
        .await
        .unwrap();
    let join = m
        .events
        .iter()
        .find(|e| e.name == "delta.dml.merge.join")
        .expect("the join event");
    assert_eq!(join.fields["memoryLimit"], (256u64 << 20).to_string());
    assert_eq!(join.fields["algorithm"], "\"hash\"");
    assert_eq!(
        rows(&table).await,
        vec![
            (1, Some("a1".into())),
            (2, Some("s2".into())),
            (3, Some("a3".into())),
            (5, Some("s5".into()))
        ]
    );
    let bad = TableOptions::default()
        .memory_limit_str("lots")
        .unwrap_err();
    assert_eq!(bad.kind(), &ErrorKind::InvalidInput);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimize_and_vacuum() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, false).await;
    for i in 0..3 {
        table.write([batch(&[i], "a")]).await.unwrap();
    }
    let o = table.optimize().zorder(["id"]).await.unwrap();
    assert_eq!(o.metrics.get("numFilesRemoved"), Some(3));
    assert_eq!(o.metrics.get("numFilesAdded"), Some(1));
    assert_eq!(table.snapshot(At::Latest).await.unwrap().files().len(), 1);
    // The compacted files are younger than the retention: nothing to delete.
    let dry = table.vacuum().dry_run(true).await.unwrap();
    assert!(dry.files.is_empty() && dry.dry_run);
    // A retention below the table's is refused unless asked for.
    let refused = table.vacuum().retention(Duration::ZERO).await.unwrap_err();
    assert_eq!(refused.kind(), &ErrorKind::InvalidInput, "{refused}");
    // With the check off, the three files OPTIMIZE removed go at once; a kept version keeps its
    // files (version 3 read them), and a lite run finds the same files without listing.
    let zero = || {
        table
            .vacuum()
            .retention(Duration::ZERO)
            .enforce_retention_duration(false)
    };
    let kept = zero().keep_versions([3]).dry_run(true).await.unwrap();
    assert!(kept.files.is_empty(), "{:?}", kept.files);
    let lite = zero().lite(true).dry_run(true).await.unwrap();
    assert_eq!(lite.files.len(), 3, "{:?}", lite.files);
    let done = zero().await.unwrap();
    assert_eq!(done.files, lite.files);
    assert_eq!(rows(&table).await.len(), 3);
    // Recorded as two commits (VACUUM START, VACUUM END) after OPTIMIZE's version 4.
    assert_eq!(table.version().await.unwrap(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_have_kinds_messages_and_sources() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope").display().to_string();
    let e = Table::open(&missing).await.unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::NotFound, "{e}");
    assert!(!e.is_retryable());
    assert!(std::error::Error::source(&e).is_some());
    assert!(
        !dir.path().join("nope").exists(),
        "opening created a directory"
    );

    let table = new_table(&dir, true).await;
    table.write([batch(&[1], "a")]).await.unwrap();
    let e = table.delete().filter("nosuch = 1").await.unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    let e = table.update().await.unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput);
    let e = table
        .update()
        .set("v", "'x'")
        .set("V", "'y'")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("more than once"), "{e}");
    // A value that does not fit its column is bad input, not a corrupt table.
    let wide = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Utf8, false),
            Field::new("v", DataType::Utf8, true),
        ])),
        vec![
            Arc::new(StringArray::from(vec!["not a number"])),
            Arc::new(StringArray::from(vec!["x"])),
        ],
    )
    .unwrap();
    let e = table.write([wide.clone()]).await.unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    let e = table
        .merge(wide, "target.id = source.id")
        .when_not_matched_insert(|i| i.all())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    let e = table
        .merge(batch(&[1], "s"), "target.id = source.id")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    assert_eq!(
        table.version().await.unwrap(),
        1,
        "a failed statement committed"
    );

    let e = Table::open_with(
        "s3://bucket/t",
        TableOptions::default().storage_option("AWS_NO_SUCH_OPTION", "1"),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("AWS_NO_SUCH_OPTION"), "{e}");
    let exists = Table::create(table.uri())
        .column("x", DataType::Int64, true)
        .await;
    assert_eq!(exists.unwrap_err().kind(), &ErrorKind::InvalidInput);
}

/// A writer that read the current version (`at_version`) commits after a concurrent UPDATE of
/// row 2 (the winner): it is reconciled or refused, as the conflict checker decides.
async fn race(
    table: &Table,
    loser_filter: &str,
) -> (delta_rlc::CommitOutcome, Result<u32, delta_rlc::Error>) {
    let stale = table.at_version(table.version().await.unwrap());
    let winner = table
        .update()
        .set("v", "'winner'")
        .filter("id = 2")
        .await
        .unwrap();
    let loser = stale
        .update()
        .set("v", lit("loser"))
        .filter(loser_filter)
        .await
        .map(|c| c.attempts);
    (winner, loser)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disjoint_concurrent_updates_both_commit() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, true).await;
    table.write([batch(&[1, 2, 3], "a")]).await.unwrap();
    let (winner, loser) = race(&table, "id = 3").await;
    assert_eq!(winner.version, Some(2));
    assert_eq!(loser.unwrap(), 2, "the loser commits on its second attempt");
    assert_eq!(
        rows(&table).await,
        vec![
            (1, Some("a1".into())),
            (2, Some("winner".into())),
            (3, Some("loser".into()))
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_true_conflict_is_a_typed_retryable_error() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, true).await;
    table.write([batch(&[1, 2, 3], "a")]).await.unwrap();
    let (winner, loser) = race(&table, "id = 2").await;
    let e = loser.unwrap_err();
    let info = e
        .conflict()
        .cloned()
        .unwrap_or_else(|| panic!("not a conflict: {e:?}"));
    assert_eq!(info.winning_version, winner.version);
    assert_eq!(info.winning_operation.as_deref(), Some("UPDATE"));
    assert_eq!(info.kind, ConflictKind::ConcurrentAppend);
    // The winner's new row 2 is one the loser's `id = 2` reads: found by reading rows.
    assert_eq!(info.reason, AbortReason::TrueOverlap);
    assert!(e.to_string().ends_with("reason: true-overlap"), "{e}");
    assert!(info.tier.is_some() && e.is_retryable(), "{e}");
    assert_eq!(table.version().await.unwrap(), 2, "the loser committed");
    assert_eq!(rows(&table).await[1], (2, Some("winner".into())));
}

/// The reconcile budget (issue #48): the race of `disjoint_concurrent_updates_both_commit`, with
/// the loser's checks allowed 1 byte of reads, aborts with reason budget-exceeded instead of
/// reading the winner's rows; nothing of the loser lands. With a budget that fits, it commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_reconcile_budget_aborts_with_its_reason() {
    for (bytes, commits) in [(1u64, false), (64 * 1024 * 1024, true)] {
        let dir = tempfile::tempdir().unwrap();
        let created = new_table(&dir, true).await;
        created.write([batch(&[1, 2, 3], "a")]).await.unwrap();
        let options = TableOptions::default().conflict(ConflictSettings {
            reconcile_byte_budget: bytes,
            ..ConflictSettings::default()
        });
        let table = Table::open_with(created.uri(), options).await.unwrap();
        let (winner, loser) = race(&table, "id = 3").await;
        assert_eq!(winner.version, Some(2));
        let want_3 = match commits {
            true => {
                assert_eq!(loser.unwrap(), 2, "budget {bytes}: commits");
                Some("loser".to_string())
            }
            false => {
                let e = loser.unwrap_err();
                let info = e.conflict().cloned().unwrap_or_else(|| panic!("{e:?}"));
                assert_eq!(info.reason, AbortReason::BudgetExceeded, "{e}");
                assert!(e.to_string().contains("reconcile budget of 1 bytes"), "{e}");
                Some("a3".to_string())
            }
        };
        let got = rows(&table).await;
        assert_eq!(got[1], (2, Some("winner".into())));
        assert_eq!(got[2], (3, want_3), "budget {bytes}");
        assert_eq!(table.version().await.unwrap(), 2 + u64::from(commits));
    }
}

/// An overwrite that replaces the schema may lay the table out anew (deltalake's
/// `partition_by` with `schema_mode="overwrite"`): every row is rewritten under the new
/// partition columns. Asked of any other write it is refused and nothing commits. Twin: a
/// writer that appended under the old layout concurrently is never merged into the new one —
/// the repartitioning overwrite read the whole table, so it aborts, and the appended rows
/// stay; the other way round the append aborts on the changed partition columns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overwrite_that_replaces_the_schema_may_change_the_partition_columns() {
    use delta_rlc::SchemaMode;
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, true).await;
    table.write([batch(&[1, 2], "a")]).await.unwrap();
    let before = table.version().await.unwrap();
    let err = table
        .write([batch(&[3], "b")])
        .partition_by(vec!["v".into()])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::InvalidInput, "{err}");
    assert_eq!(table.version().await.unwrap(), before);

    let stale = table.at_version(before);
    table.write([batch(&[9], "c")]).await.unwrap();
    let err = stale
        .write([batch(&[5, 6], "d")])
        .mode(WriteMode::Overwrite)
        .schema_mode(SchemaMode::Overwrite)
        .partition_by(vec!["v".into()])
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Conflict(_)), "{err}");
    assert_eq!(rows(&table).await.len(), 3, "the appended row stays");

    let stale = table.at_version(table.version().await.unwrap());
    table
        .write([batch(&[5, 6], "d")])
        .mode(WriteMode::Overwrite)
        .schema_mode(SchemaMode::Overwrite)
        .partition_by(vec!["v".into()])
        .await
        .unwrap();
    let snap = table.snapshot(At::Latest).await.unwrap();
    assert_eq!(snap.partition_columns(), &["v".to_string()]);
    assert_eq!(
        rows(&table).await,
        vec![(5, Some("d5".into())), (6, Some("d6".into()))]
    );
    let err = stale.write([batch(&[7], "e")]).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Conflict(_)), "{err}");
    assert_eq!(
        rows(&table).await.len(),
        2,
        "nothing of the stale append landed"
    );
}

/// A scan gives the rows in the table's file order, every time (as deltalake's readers do): the
/// partitions of the scan hold contiguous runs of files and are read in turn, while each reads
/// ahead concurrently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_reads_the_files_in_the_tables_order() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, false).await;
    for i in 0..12 {
        table
            .write([batch(&[i * 10, i * 10 + 1], "v")])
            .await
            .unwrap();
    }
    let snap = table.snapshot(At::Latest).await.unwrap();
    let mut expected = Vec::new();
    for f in snap.files() {
        let file = std::fs::File::open(dir.path().join("t").join(&f)).unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        for b in reader {
            let b = b.unwrap();
            let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            expected.extend(ids.values().iter().copied());
        }
    }
    assert_eq!(expected.len(), 24);
    for _ in 0..5 {
        let mut got = Vec::new();
        for b in table.scan().collect().await.unwrap() {
            let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            got.extend(ids.values().iter().copied());
        }
        assert_eq!(got, expected);
    }
}

/// A predicate or assignment given to the Rust builders is Spark SQL as a statement's is: a typed
/// literal (`2L`, `1.5D`, `3S`) is one literal of its type, out of range is refused, nothing
/// committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builder_expressions_read_typed_literals_as_spark() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir, true).await;
    table.write([batch(&[1, 2, 3, 4], "v")]).await.unwrap();
    table.delete().filter("id = 2L").await.unwrap();
    table
        .update()
        .filter("id > 2.5D AND id < 3.5D")
        .set("v", "'x'")
        .await
        .unwrap();
    let version = table.version().await.unwrap();
    let e = table.delete().filter("id > 128Y").await.unwrap_err();
    assert_eq!(*e.kind(), delta_rlc::ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("for type tinyint"), "{e}");
    assert_eq!(table.version().await.unwrap(), version, "nothing committed");
    assert_eq!(
        rows(&table).await,
        vec![
            (1, Some("v1".into())),
            (3, Some("x".into())),
            (4, Some("v4".into()))
        ]
    );
}
