//! Table administration through the library: ALTER changes, RESTORE, application transactions,
//! checkpoints and log cleanup — rows, versions and conflict kinds checked, with the concurrent
//! twins (a restore beside a concurrent DELETE aborts; beside a blind append it commits and the
//! appended rows survive; two commits of one app id: the second aborts).

use std::collections::BTreeMap;
use std::sync::Arc;

use delta_rlc::arrow::array::{Int64Array, RecordBatch, StringArray};
use delta_rlc::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use delta_rlc::{CommitOptions, ConflictKind, ErrorKind, Table, TableChange};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Utf8, true),
    ]))
}

fn batch(ids: &[i64]) -> RecordBatch {
    let vals: Vec<String> = ids.iter().map(|i| format!("v{i}")).collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(StringArray::from(vals)),
        ],
    )
    .unwrap()
}

async fn ids(table: &Table) -> Vec<i64> {
    let mut out = Vec::new();
    for b in table.scan().columns(["id"]).collect().await.unwrap() {
        let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        out.extend(a.values().iter().copied());
    }
    out.sort();
    out
}

async fn column_count(table: &Table) -> usize {
    let snapshot = table.snapshot(delta_rlc::At::Latest).await.unwrap();
    snapshot.schema().fields().len()
}

async fn new_table(dir: &tempfile::TempDir) -> Table {
    let loc = dir.path().join("t").display().to_string();
    Table::create(&loc)
        .columns_from(&schema())
        .property("delta.enableDeletionVectors", "true")
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_brings_back_an_earlier_version() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir).await;
    table.write([batch(&[1, 2, 3])]).await.unwrap(); // v1
    table.delete().filter("id = 2").await.unwrap(); // v2: a DV on the file
    table.write([batch(&[4])]).await.unwrap(); // v3
    let out = table.restore(1).await.unwrap();
    assert_eq!(out.version, Some(4));
    assert_eq!(ids(&table).await, vec![1, 2, 3]);
    assert_eq!(out.metrics.get("numRemovedFiles"), Some(2));
    assert_eq!(out.metrics.get("numRestoredFiles"), Some(1));
    // Restoring the current version, or a later one, is refused.
    let e = table.restore(4).await.unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    // The metadata comes back too: a column added after version 1 is gone.
    table
        .alter(TableChange::AddColumns(vec![Field::new(
            "w",
            DataType::Int32,
            true,
        )]))
        .await
        .unwrap(); // v5
    assert_eq!(column_count(&table).await, 3);
    table.restore(4).await.unwrap();
    assert_eq!(column_count(&table).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_of_a_vacuumed_file_fails_unless_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir).await;
    table.write([batch(&[1])]).await.unwrap(); // v1
    table.write([batch(&[2])]).await.unwrap(); // v2
    let first = table.snapshot(1).await.unwrap().files();
    table.delete().filter("id = 1").await.unwrap(); // v3: the file goes (all rows deleted)
    std::fs::remove_file(dir.path().join("t").join(&first[0])).unwrap();
    let e = table.restore(2).await.unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("no longer exists"), "{e}");
    assert_eq!(table.version().await.unwrap(), 3, "nothing committed");
    table.restore(2).ignore_missing_files(true).await.unwrap();
    assert_eq!(ids(&table).await, vec![2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_beside_concurrent_writers() {
    // Twin 1: a concurrent DELETE removed rows the restore read and keeps: a true conflict.
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir).await;
    table.write([batch(&[1, 2])]).await.unwrap(); // v1
    table.write([batch(&[3])]).await.unwrap(); // v2
    let reader = table.at_version(2);
    table.delete().filter("id = 1").await.unwrap(); // v3 (the winner)
    let e = reader.restore(1).await.unwrap_err();
    let info = e.conflict().expect("a conflict");
    assert_eq!(info.winning_version, Some(3));
    assert_eq!(ids(&table).await, vec![2, 3], "the loser committed nothing");

    // Twin 2: a concurrent blind append: the restore commits and the appended rows survive.
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir).await;
    table.write([batch(&[1, 2])]).await.unwrap(); // v1
    table.write([batch(&[3])]).await.unwrap(); // v2
    let reader = table.at_version(2);
    table.write([batch(&[9])]).await.unwrap(); // v3 (the winner)
    let out = reader.restore(1).await.unwrap();
    assert_eq!(out.version, Some(4));
    assert_eq!(ids(&table).await, vec![1, 2, 9]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_changes_are_typed_and_keep_their_rules() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir).await;
    table.write([batch(&[1, 2])]).await.unwrap();
    let c: BTreeMap<String, String> = [
        ("id_positive".to_string(), "id > 0".to_string()),
        ("v_short".to_string(), "length(v) < 10".to_string()),
    ]
    .into_iter()
    .collect();
    let out = table.alter(TableChange::AddConstraints(c)).await.unwrap();
    assert_eq!(out.version, Some(2), "two constraints, one commit");
    let props = table
        .snapshot(delta_rlc::At::Latest)
        .await
        .unwrap()
        .properties();
    assert_eq!(
        props
            .get("delta.constraints.id_positive")
            .map(String::as_str),
        Some("id > 0")
    );
    assert!(props.contains_key("delta.constraints.v_short"));
    // Enforced on writes.
    let e = table.write([batch(&[-1])]).await.unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    // A constraint an existing row violates is refused, and nothing is committed.
    let bad: BTreeMap<String, String> = [("big".to_string(), "id > 1".to_string())]
        .into_iter()
        .collect();
    let e = table
        .alter(TableChange::AddConstraints(bad))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    assert_eq!(table.version().await.unwrap(), 2);
    table
        .alter(TableChange::DropConstraint {
            name: "ID_POSITIVE".into(),
            if_exists: false,
        })
        .await
        .unwrap();
    let e = table
        .alter(TableChange::DropConstraint {
            name: "id_positive".into(),
            if_exists: false,
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    table
        .alter(TableChange::SetName(Some("events".into())))
        .await
        .unwrap();
    table
        .alter(TableChange::SetDescription(Some("all events".into())))
        .await
        .unwrap();
    let m = table
        .snapshot(delta_rlc::At::Latest)
        .await
        .unwrap()
        .metadata();
    assert_eq!(m.name.as_deref(), Some("events"));
    assert_eq!(m.description.as_deref(), Some("all events"));
    table
        .alter(TableChange::AddFeatures {
            features: vec!["changeDataFeed".into()],
            allow_protocol_versions_increase: false,
        })
        .await
        .unwrap();
    let p = table
        .snapshot(delta_rlc::At::Latest)
        .await
        .unwrap()
        .protocol();
    assert!(p
        .writer_features
        .unwrap()
        .contains(&"changeDataFeed".to_string()));
    let e = table
        .alter(TableChange::AddFeatures {
            features: vec!["vacuumProtocolCheck".into()],
            allow_protocol_versions_increase: true,
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Unsupported, "{e}");
    assert_eq!(ids(&table).await, vec![1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_transactions_are_recorded_and_conflict_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir).await;
    table
        .write([batch(&[1])])
        .commit_options(CommitOptions::default().app_transaction("job", 7))
        .await
        .unwrap(); // v1
    let snap = table.snapshot(delta_rlc::At::Latest).await.unwrap();
    assert_eq!(snap.app_transaction_version("job"), Some(7));
    assert_eq!(snap.app_transaction_version("other"), None);
    // Two writers from version 1: the same app id twice is a true conflict for the second.
    let a = table.at_version(1);
    let b = table.at_version(1);
    a.write([batch(&[2])])
        .commit_options(CommitOptions::default().app_transaction("job", 8))
        .await
        .unwrap(); // v2
    let e = b
        .write([batch(&[3])])
        .commit_options(CommitOptions::default().app_transaction("job", 8))
        .await
        .unwrap_err();
    assert_eq!(
        e.conflict().map(|c| c.kind),
        Some(ConflictKind::ConcurrentTransaction),
        "{e}"
    );
    // Another app id beside it commits.
    b.write([batch(&[4])])
        .commit_options(CommitOptions::default().app_transaction("other", 1))
        .await
        .unwrap();
    assert_eq!(ids(&table).await, vec![1, 2, 4]);
    let snap = table.snapshot(delta_rlc::At::Latest).await.unwrap();
    assert_eq!(snap.app_transaction_version("job"), Some(8));
    assert_eq!(snap.app_transaction_version("other"), Some(1));
    let e = table
        .write([batch(&[5])])
        .commit_options(
            CommitOptions::default()
                .app_transaction("x", 1)
                .app_transaction("x", 2),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoint_and_add_actions() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir).await;
    table.write([batch(&[1, 2, 3])]).await.unwrap();
    table.delete().filter("id = 2").await.unwrap();
    assert_eq!(table.create_checkpoint().await.unwrap(), 2);
    assert!(dir
        .path()
        .join("t/_delta_log/00000000000000000002.checkpoint.parquet")
        .exists());
    let reopened = Table::open(&dir.path().join("t").display().to_string())
        .await
        .unwrap();
    assert_eq!(ids(&reopened).await, vec![1, 3]);
    let adds = reopened
        .snapshot(delta_rlc::At::Latest)
        .await
        .unwrap()
        .add_actions();
    assert_eq!(adds.len(), 1);
    assert_eq!(
        adds[0].deletion_vector.as_ref().map(|d| d.cardinality),
        Some(1)
    );
    assert!(adds[0]
        .stats
        .as_deref()
        .unwrap_or("")
        .contains("numRecords"));
    // Nothing is old enough to clean up.
    assert!(table.cleanup_metadata().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_keeps_identity_values_handed_out() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    delta_rlc::sql(
        &format!("CREATE TABLE '{loc}' (id BIGINT GENERATED ALWAYS AS IDENTITY, v STRING)"),
        &delta_rlc::TableOptions::default(),
    )
    .await
    .unwrap();
    let table = Table::open(&loc).await.unwrap();
    table
        .sql("INSERT INTO t (v) VALUES ('a'), ('b')")
        .await
        .unwrap(); // v1: ids 1, 2
    table
        .sql("INSERT INTO t (v) VALUES ('c'), ('d')")
        .await
        .unwrap(); // v2: ids 3, 4
    table.restore(1).await.unwrap();
    table.sql("INSERT INTO t (v) VALUES ('e')").await.unwrap();
    // The restored table has ids 1 and 2; the new row gets 5, not 3 (3 and 4 were handed out).
    assert_eq!(ids(&table).await, vec![1, 2, 5]);
}

/// Commit metadata: JSON values kept as they are; commitInfo's own fields refused; Spark's typed
/// fields must have Spark's type; `operationParameters` adds to the operation's own, as text. A
/// refused option commits nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_metadata_keeps_json_and_refuses_what_readers_cannot_parse() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir).await; // v0
    let refused = [
        CommitOptions::default().metadata("readVersion", 15),
        CommitOptions::default().metadata("userName", 123),
        CommitOptions::default().metadata("job", "nightly"),
        CommitOptions::default().metadata("operationParameters", "x"),
        CommitOptions::default().metadata("version", "1.2.3"),
        CommitOptions::default().metadata("job", serde_json::json!({"jobId": {"a": 1}})),
        CommitOptions::default().metadata("kernelVersion", 4),
    ];
    for options in refused {
        let e = table
            .write([batch(&[9])])
            .commit_options(options.clone())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{options:?}: {e}");
    }
    table
        .write([batch(&[1])])
        .commit_options(
            CommitOptions::default()
                .metadata("attempt", 2)
                .metadata("userName", "ann")
                .metadata("userId", serde_json::Value::Null)
                .metadata("job", serde_json::json!({"jobId": 7, "jobName": "n"}))
                .metadata("engineCommitInfo", serde_json::json!({"retries": 3}))
                .metadata("nested", serde_json::json!({"items": [1, null]}))
                .metadata(
                    "operationParameters",
                    serde_json::json!({"mode": "mine", "extra": {"a": 1}, "flag": true}),
                ),
        )
        .await
        .unwrap(); // v1
    let history = table.history(Some(1)).await.unwrap();
    let entry = history.first().unwrap();
    assert_eq!(entry.version, 1);
    let info: serde_json::Value = serde_json::from_str(&entry.commit_info).unwrap();
    assert_eq!(info["attempt"], serde_json::json!(2));
    assert_eq!(info["userName"], serde_json::json!("ann"));
    assert_eq!(info["nested"], serde_json::json!({"items": [1, null]}));
    assert_eq!(info["userId"], serde_json::Value::Null);
    assert_eq!(info["job"], serde_json::json!({"jobId": 7, "jobName": "n"}));
    assert_eq!(
        info["engineCommitInfo"],
        serde_json::json!({"retries": "3"})
    );
    let params = &info["operationParameters"];
    assert_eq!(params["mode"], serde_json::json!("Append"));
    assert_eq!(params["extra"], serde_json::json!("{\"a\":1}"));
    assert_eq!(params["flag"], serde_json::json!("true"));
    assert_eq!(ids(&table).await, vec![1]);
}

/// A partitioned table (by `v`) with two files in each of the partitions `va`, `vb`, `vc`.
async fn three_partitions(dir: &tempfile::TempDir) -> Table {
    let loc = dir.path().join("p").display().to_string();
    let table = Table::create(&loc)
        .columns_from(&schema())
        .partition_by(["v"])
        .property("delta.enableDeletionVectors", "true")
        .await
        .unwrap();
    for round in 0..2i64 {
        let ids: Vec<i64> = (0..3).map(|p| 10 * p + round).collect();
        let vals: Vec<String> = (0..3).map(|p| format!("v{}", ["a", "b", "c"][p])).collect();
        let b = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(vals)),
            ],
        )
        .unwrap();
        table.write([b]).await.unwrap();
    }
    table
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimize_with_a_commit_interval_commits_bin_by_bin() {
    let dir = tempfile::tempdir().unwrap();
    let table = three_partitions(&dir).await; // v0 create, v1-v2 writes
    let before = ids(&table).await;
    assert_eq!(before, vec![0, 1, 10, 11, 20, 21]);
    let options = CommitOptions {
        app_transactions: vec![delta_rlc::AppTransaction {
            app_id: "compactor".into(),
            version: 7,
            last_updated: None,
        }],
        ..Default::default()
    };
    // Interval zero: one commit per bin, i.e. per partition (each holds two small files).
    let out = table
        .optimize()
        .min_commit_interval(std::time::Duration::ZERO)
        .commit_options(options)
        .await
        .unwrap();
    assert_eq!(out.version, Some(5));
    assert_eq!(out.metrics.get("numFilesRemoved"), Some(6));
    assert_eq!(out.metrics.get("numFilesAdded"), Some(3));
    assert_eq!(out.metrics.get("numBins"), Some(3));
    assert_eq!(ids(&table).await, before);
    let history = table.history(Some(3)).await.unwrap();
    assert!(
        history
            .iter()
            .all(|h| h.operation.as_deref() == Some("OPTIMIZE")),
        "{history:?}"
    );
    let snap = table.snapshot(delta_rlc::At::Latest).await.unwrap();
    assert_eq!(snap.files().len(), 3);
    assert_eq!(snap.app_transaction_version("compactor"), Some(7));
    // Only the last commit records the application's version: at version 4 it is not there yet.
    let v4 = table.snapshot(delta_rlc::At::Version(4)).await.unwrap();
    assert_eq!(v4.app_transaction_version("compactor"), None);

    // A long interval: everything in one commit, as without one.
    let dir = tempfile::tempdir().unwrap();
    let table = three_partitions(&dir).await;
    let out = table
        .optimize()
        .min_commit_interval(std::time::Duration::from_secs(600))
        .await
        .unwrap();
    assert_eq!(out.version, Some(3));
    assert_eq!(out.metrics.get("numFilesRemoved"), Some(6));
    assert_eq!(ids(&table).await, vec![0, 1, 10, 11, 20, 21]);
}

/// Each commit of an interval OPTIMIZE reads the plan's snapshot, so a concurrent DELETE that
/// landed after planning is checked against every later commit: the deleted rows stay deleted
/// (the compaction carries the deletion over or the commit aborts; it never resurrects them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimize_commits_beside_a_concurrent_delete_keep_it_deleted() {
    for (deleted, kept_by_delete) in [
        (10i64, vec![0, 1, 11, 20, 21]),
        (21, vec![0, 1, 10, 11, 20]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let table = three_partitions(&dir).await;
        let pinned = table.at_version(2);
        table
            .delete()
            .filter(format!("id = {deleted}").as_str())
            .await
            .unwrap(); // v3, a DV in partition vb or vc
        let out = pinned
            .optimize()
            .min_commit_interval(std::time::Duration::ZERO)
            .await;
        match out {
            Ok(o) => assert_eq!(o.version, Some(6), "{o:?}"),
            Err(e) => assert!(matches!(e.kind(), ErrorKind::Conflict(_)), "{e}"),
        }
        assert_eq!(ids(&table).await, kept_by_delete, "deleted {deleted}");
    }
}

/// Compaction packs files adjacent in write order: with six files of ten consecutive ids each,
/// written one after another, and a target of about two and a half files, every output holds
/// one contiguous run of ids (size order would pack files written apart together).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_packs_files_in_the_order_they_were_written() {
    let dir = tempfile::tempdir().unwrap();
    let table = new_table(&dir).await;
    for f in 0..6i64 {
        let ids: Vec<i64> = (f * 10..f * 10 + 10).collect();
        table.write([batch(&ids)]).await.unwrap();
        // Distinct modification times (milliseconds), as files written apart have.
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    let snap = table.snapshot(delta_rlc::At::Latest).await.unwrap();
    let size = snap.add_actions().iter().map(|a| a.size).max().unwrap();
    let out = table
        .optimize()
        .target_size((size * 5 / 2) as u64)
        .await
        .unwrap();
    assert_eq!(out.metrics.get("numFilesRemoved"), Some(6));
    assert_eq!(out.metrics.get("numFilesAdded"), Some(3));
    assert_eq!(out.metrics.get("maxBinSpanFiles"), Some(2));
    let strategy = out.metrics.iter().find(|(k, _)| *k == "plannerStrategy");
    assert_eq!(strategy, Some(("plannerStrategy", "preserveLocality")));
    let snap = table.snapshot(delta_rlc::At::Latest).await.unwrap();
    for a in snap.add_actions() {
        let stats: serde_json::Value = serde_json::from_str(a.stats.as_deref().unwrap()).unwrap();
        let (lo, hi, n) = (
            stats["minValues"]["id"].as_i64().unwrap(),
            stats["maxValues"]["id"].as_i64().unwrap(),
            stats["numRecords"].as_i64().unwrap(),
        );
        assert_eq!(
            hi - lo + 1,
            n,
            "a contiguous run of ids: {lo}..={hi} in {n} rows"
        );
    }
    assert_eq!(ids(&table).await, (0..60).collect::<Vec<_>>());
}

/// deltalake's `add_columns`: a struct column named like an existing struct adds its fields to
/// it (Spark's `ADD COLUMNS (s.z …)`); the rows already written read NULL for the new field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_columns_into_an_existing_struct() {
    use delta_rlc::arrow::datatypes::Fields;
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("s").display().to_string();
    let inner = Fields::from(vec![Field::new("x", DataType::Int64, true)]);
    let table = Table::create(&loc)
        .column("id", DataType::Int64, true)
        .column("s", DataType::Struct(inner), true)
        .await
        .unwrap();
    let added = Fields::from(vec![
        Field::new("z", DataType::Float32, true),
        Field::new("w", DataType::Utf8, true),
    ]);
    table
        .alter(TableChange::AddColumns(vec![
            Field::new("s", DataType::Struct(added), true),
            Field::new("n", DataType::Int32, true),
        ]))
        .await
        .unwrap();
    let schema = table
        .snapshot(delta_rlc::At::Latest)
        .await
        .unwrap()
        .schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["id", "s", "n"]);
    let DataType::Struct(s) = schema.field(1).data_type() else {
        panic!("s is a struct: {schema:?}")
    };
    let inner: Vec<&str> = s.iter().map(|f| f.name().as_str()).collect();
    assert_eq!(inner, ["x", "z", "w"]);
    // A field the struct already has is refused, and nothing commits.
    let version = table.version().await.unwrap();
    let again = Fields::from(vec![Field::new("x", DataType::Int64, true)]);
    let e = table
        .alter(TableChange::AddColumns(vec![Field::new(
            "s",
            DataType::Struct(again),
            true,
        )]))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidInput, "{e}");
    assert_eq!(table.version().await.unwrap(), version);
}

/// `delta_rlc::query` (deltalake's QueryBuilder): a column read as stored carries its Delta field
/// metadata, a computed one none; a statement through `Table::sql` carries none, so a CTAS from
/// the query never copies a generation expression.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_results_carry_the_columns_field_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t").to_str().unwrap().to_string();
    let options = delta_rlc::TableOptions::default();
    delta_rlc::sql(
        &format!(
            "CREATE TABLE '{uri}' (id INT, gc INT GENERATED ALWAYS AS (id * 2) COMMENT 'twice')"
        ),
        &options,
    )
    .await
    .unwrap();
    let table = Table::open(&uri).await.unwrap();
    table
        .sql("INSERT INTO t (id) VALUES (2), (1)")
        .await
        .unwrap();
    let stream = delta_rlc::query(
        "SELECT *, gc + 1 AS g1 FROM tbl ORDER BY id",
        &[("tbl", &table)],
    )
    .await
    .unwrap();
    let schema = stream.schema();
    let batches: Vec<RecordBatch> = futures::TryStreamExt::try_collect(stream).await.unwrap();
    // The batches say what the stream's schema says (pyarrow reads the stream's).
    assert_eq!(batches[0].schema(), schema);
    let gc = schema.field_with_name("gc").unwrap().metadata();
    assert_eq!(
        gc.get("delta.generationExpression").map(String::as_str),
        Some("id * 2")
    );
    assert_eq!(gc.get("comment").map(String::as_str), Some("twice"));
    assert!(schema.field_with_name("id").unwrap().metadata().is_empty());
    assert!(schema.field_with_name("g1").unwrap().metadata().is_empty());
    let gcs: Vec<i32> = batches
        .iter()
        .flat_map(|b| {
            let a = b
                .column(1)
                .as_any()
                .downcast_ref::<delta_rlc::arrow::array::Int32Array>();
            a.unwrap().values().to_vec()
        })
        .collect();
    assert_eq!(gcs, vec![2, 4]);

    // deltalake's QueryBuilder reads `"x"` as DataFusion does: an exact name. A statement
    // refuses it (a string in Spark).
    let quoted = delta_rlc::query(r#"SELECT "gc" FROM tbl WHERE "id" = 2"#, &[("tbl", &table)])
        .await
        .unwrap();
    let quoted: Vec<RecordBatch> = futures::TryStreamExt::try_collect(quoted).await.unwrap();
    let gc = quoted[0]
        .column(0)
        .as_any()
        .downcast_ref::<delta_rlc::arrow::array::Int32Array>()
        .unwrap()
        .values()
        .to_vec();
    assert_eq!(gc, vec![4]);
    // and orders as DataFusion does (NULLs last ascending; a statement orders them first, as
    // Spark does).
    let ordered = delta_rlc::query(
        "SELECT coalesce(x, -1) AS y FROM (VALUES (CAST(NULL AS BIGINT)), (1)) AS v(x) ORDER BY x",
        &[("tbl", &table)],
    )
    .await
    .unwrap();
    let ordered: Vec<RecordBatch> = futures::TryStreamExt::try_collect(ordered).await.unwrap();
    let xs: Vec<i64> = ordered
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<delta_rlc::arrow::array::Int64Array>()
                .unwrap()
                .values()
                .to_vec()
        })
        .collect();
    assert_eq!(xs, vec![1, -1]);
    let e = table
        .sql(r#"SELECT "gc" FROM t"#)
        .await
        .expect_err("a double-quoted token in a statement")
        .to_string();
    assert!(e.contains("is a string in Spark and a name here"), "{e}");

    let plain = table.sql("SELECT * FROM t").await.unwrap();
    let plain_schema = plain.batches[0].schema();
    assert!(plain_schema
        .field_with_name("gc")
        .unwrap()
        .metadata()
        .is_empty());
}
