//! Re-execution on a true conflict through the library: a statement that read an older version
//! (`at_version`, as a deltalake `DeltaTable` loaded earlier does) and truly conflicts with a
//! winner runs again from the latest version when asked, and aborts as before when not (the
//! twin). Rows are checked in both; a source read once (a stream) refuses to re-execute.

use std::sync::Arc;

use delta_rlc::arrow::array::{Array, Int64Array, RecordBatch};
use delta_rlc::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use delta_rlc::{
    col, lit, CommitOptions, ConflictKind, ConflictSettings, ErrorKind, Table, TableOptions,
    WriteMode,
};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Int64, true),
    ]))
}

fn batch(rows: &[(i64, i64)]) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
        ],
    )
    .unwrap()
}

/// (id, x) of every row, sorted.
async fn rows(table: &Table) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    for b in table.scan().collect().await.unwrap() {
        let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let xs = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        out.extend((0..b.num_rows()).map(|i| (ids.value(i), xs.value(i))));
    }
    out.sort();
    out
}

/// A table (ids 1..=4, x = id × 10) opened with `retry_on_conflict` re-runs, and a handle that
/// read its version before a winner doubled row 2's x.
async fn raced(dir: &tempfile::TempDir, retry_on_conflict: u32) -> (Table, Table) {
    let loc = dir.path().join("t").display().to_string();
    let options = TableOptions::default().conflict(ConflictSettings {
        retry_on_conflict,
        ..ConflictSettings::default()
    });
    Table::create(&loc)
        .columns_from(&schema())
        .property("delta.enableDeletionVectors", "true")
        .await
        .unwrap();
    let table = Table::open_with(&loc, options).await.unwrap();
    table
        .write([batch(&[(1, 10), (2, 20), (3, 30), (4, 40)])])
        .await
        .unwrap();
    let stale = table.at_version(table.version().await.unwrap());
    let winner = table
        .update()
        .set("x", col("x") * lit(2i64))
        .filter("id = 2")
        .await
        .unwrap();
    assert_eq!(winner.version, Some(2));
    (table, stale)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_that_truly_conflicts_runs_again_on_the_winners_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (table, stale) = raced(&dir, 2).await;
    let done = stale
        .update()
        .set("x", col("x") + lit(1i64))
        .filter("id = 2")
        .await
        .unwrap();
    assert_eq!(done.version, Some(3));
    assert_eq!(done.statement_runs(), 2);
    assert!(
        done.earlier_runs[0].contains("a concurrent UPDATE committed at version 2"),
        "{:?}",
        done.earlier_runs
    );
    // The serial result: the winner's doubling, then this statement's +1.
    assert_eq!(rows(&table).await, vec![(1, 10), (2, 41), (3, 30), (4, 40)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twin_without_reexecution_the_conflict_aborts_and_nothing_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (table, stale) = raced(&dir, 0).await;
    let e = stale
        .update()
        .set("x", col("x") + lit(1i64))
        .filter("id = 2")
        .await
        .unwrap_err();
    let info = e
        .conflict()
        .unwrap_or_else(|| panic!("not a conflict: {e}"));
    assert_eq!(info.kind, ConflictKind::ConcurrentAppend);
    assert_eq!(info.statement_runs, 1);
    assert_eq!(table.version().await.unwrap(), 2);
    assert_eq!(rows(&table).await, vec![(1, 10), (2, 40), (3, 30), (4, 40)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statements_own_setting_overrides_the_tables() {
    // The table says re-run; this DELETE says never: it aborts after one run.
    let dir = tempfile::tempdir().unwrap();
    let (table, stale) = raced(&dir, 3).await;
    let once = CommitOptions {
        retry_on_conflict: Some(0),
        ..CommitOptions::default()
    };
    let e = stale
        .delete()
        .filter("x >= 40")
        .commit_options(once)
        .await
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Conflict(_)), "{e}");
    assert_eq!(rows(&table).await, vec![(1, 10), (2, 40), (3, 30), (4, 40)]);
    // And the other way: the table says never, this DELETE re-runs and sees the winner's row 2.
    let dir = tempfile::tempdir().unwrap();
    let (table, stale) = raced(&dir, 0).await;
    let again = CommitOptions {
        retry_on_conflict: Some(1),
        ..CommitOptions::default()
    };
    let done = stale
        .delete()
        .filter("x >= 40")
        .commit_options(again)
        .await
        .unwrap();
    assert_eq!(done.statement_runs(), 2);
    assert_eq!(done.metrics.rows_affected, Some(2));
    assert_eq!(rows(&table).await, vec![(1, 10), (3, 30)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_and_a_write_from_batches_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let (table, stale) = raced(&dir, 1).await;
    let done = stale
        .merge(batch(&[(2, 5), (9, 90)]), "target.id = source.id")
        .when_matched_update(|u| u.set("x", "target.x + source.x"))
        .when_not_matched_insert(|i| i.all())
        .await
        .unwrap();
    assert_eq!(done.statement_runs(), 2);
    assert_eq!(
        rows(&table).await,
        vec![(1, 10), (2, 45), (3, 30), (4, 40), (9, 90)]
    );
    // A replaceWhere over row 2's range conflicts with a later winner in it, and runs again.
    let stale = table.at_version(table.version().await.unwrap());
    table
        .update()
        .set("x", lit(0i64))
        .filter("id = 2")
        .await
        .unwrap();
    let done = stale
        .write([batch(&[(2, 7)])])
        .mode(WriteMode::ReplaceWhere("id = 2".into()))
        .await
        .unwrap();
    assert_eq!(done.statement_runs(), 2);
    assert_eq!(
        rows(&table).await,
        vec![(1, 10), (2, 7), (3, 30), (4, 40), (9, 90)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_source_is_read_once_so_it_refuses_to_reexecute() {
    let dir = tempfile::tempdir().unwrap();
    let (table, _) = raced(&dir, 0).await;
    let stream = Box::pin(futures::stream::iter(vec![Ok(batch(&[(5, 50)]))]));
    let e = table
        .write_stream(schema(), stream)
        .commit_options(CommitOptions {
            retry_on_conflict: Some(2),
            ..CommitOptions::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("read once"), "{e}");
    assert_eq!(table.version().await.unwrap(), 2, "nothing committed");
    // The table's own setting does not make a stream fail: it runs once.
    let dir = tempfile::tempdir().unwrap();
    let (table, _) = raced(&dir, 2).await;
    let stream = Box::pin(futures::stream::iter(vec![Ok(batch(&[(5, 50)]))]));
    let done = table.write_stream(schema(), stream).await.unwrap();
    assert_eq!((done.version, done.statement_runs()), (Some(3), 1));
    assert_eq!(rows(&table).await.len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_reruns_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (table, _) = raced(&dir, 0).await;
    let e = table
        .delete()
        .filter("id = 1")
        .commit_options(CommitOptions {
            retry_on_conflict: Some(1000),
            ..CommitOptions::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    assert_eq!(rows(&table).await.len(), 4);
}
