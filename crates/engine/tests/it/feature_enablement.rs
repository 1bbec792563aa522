//! A writer that loses the race to a commit enabling a feature meets the feature's obligations in
//! its own commit (docs/design.md, the compatibility table): after in-commit timestamps are turned
//! on every commit carries one; after row tracking is supported every new file carries row ids.
//! The winners are written as Delta Spark writes them (this engine does not turn either on for an
//! existing table, but a Spark cluster sharing the table may); the last test's winner is this
//! engine's own ALTER listing `rowTracking` as supported.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::{Prepared, SqlSession};
use serde_json::{json, Value};

use crate::common::{latest_snapshot, rt};

/// The actions of commit `version` of the table at `loc`.
fn commit(loc: &str, version: u64) -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{loc}/_delta_log/{version:020}.json")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A table at version 1 (10 rows), an INSERT of 2 rows prepared there, version 2 written by hand
/// as `winner(protocol, metadata)` gives it, then the INSERT's commit: its outcome and the row
/// count after.
struct Race {
    _dir: tempfile::TempDir,
    loc: String,
    outcome: Result<delta_rlc_engine::txn::CommitResult, delta_rlc_engine::EngineError>,
    rows_after: Vec<i64>,
}

fn insert_races(winner: impl Fn(Value, Value) -> Vec<Value>) -> Race {
    races("INSERT INTO t VALUES (100, 1), (101, 2)", winner)
}

/// [`insert_races`] with another losing statement.
fn races(loser_sql: &str, winner: impl Fn(Value, Value) -> Vec<Value>) -> Race {
    races_on(&[], loser_sql, |snap| {
        winner(
            serde_json::to_value(&snap.protocol).unwrap(),
            serde_json::to_value(&snap.metadata).unwrap(),
        )
    })
}

/// [`races`] on a table whose protocol first gained `features` in a hand-written commit (at
/// version 2, before the loser reads), with the winner built from the loser's snapshot.
fn races_on(
    features: &[&str],
    loser_sql: &str,
    winner: impl Fn(&delta_rlc_engine::Snapshot) -> Vec<Value>,
) -> Race {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::default(), ConflictConfig::default());
    s.register("t", &loc);
    let write = |version: u64, actions: Vec<Value>| {
        let lines: Vec<String> = actions.iter().map(Value::to_string).collect();
        std::fs::write(
            format!("{loc}/_delta_log/{version:020}.json"),
            lines.join("\n") + "\n",
        )
        .unwrap();
    };
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT)")
            .await
            .unwrap();
        s.execute("INSERT INTO t SELECT value, value FROM range(0, 10)")
            .await
            .unwrap();
        if !features.is_empty() {
            let snap = latest_snapshot(&loc).await;
            let protocol = serde_json::to_value(&snap.protocol).unwrap();
            write(
                snap.version + 1,
                vec![
                    json!({"commitInfo": {"timestamp": 1, "operation": "UPGRADE PROTOCOL"}}),
                    json!({"protocol": add_writer_feature(protocol, features)}),
                ],
            );
        }
        let Prepared::Write(loser) = s.prepare(loser_sql).await.unwrap() else {
            panic!("not a write")
        };
        let snap = latest_snapshot(&loc).await;
        write(snap.version + 1, winner(&snap));
        let outcome = loser.commit().await;
        let out = s.execute("SELECT count(*) FROM t").await.unwrap();
        let rows_after = crate::common::first_i64s(&out.batches);
        Race {
            _dir: dir,
            loc: loc.clone(),
            outcome,
            rows_after,
        }
    })
}

/// The INSERT commits at version 3 after the winner; its actions.
fn insert_loses_to(winner: impl Fn(Value, Value) -> Vec<Value>) -> Vec<Value> {
    let race = insert_races(winner);
    assert_eq!(race.outcome.unwrap().version, Some(3));
    assert_eq!(race.rows_after, vec![12]);
    commit(&race.loc, 3)
}

fn add_writer_feature(mut protocol: Value, features: &[&str]) -> Value {
    let list = protocol["writerFeatures"].as_array_mut().unwrap();
    for f in features {
        list.push(json!(f));
    }
    protocol
}

#[test]
fn a_loser_after_in_commit_timestamps_were_enabled_carries_one() {
    const T: i64 = 4_102_444_800_000; // later than the loser's clock: it must go past it
    let loser = insert_loses_to(|protocol, mut metadata| {
        let c = metadata["configuration"].as_object_mut().unwrap();
        c.insert("delta.enableInCommitTimestamps".into(), json!("true"));
        c.insert(
            "delta.inCommitTimestampEnablementVersion".into(),
            json!("2"),
        );
        c.insert(
            "delta.inCommitTimestampEnablementTimestamp".into(),
            json!(T.to_string()),
        );
        vec![
            json!({"commitInfo": {"inCommitTimestamp": T, "timestamp": T, "operation": "SET TBLPROPERTIES"}}),
            json!({"protocol": add_writer_feature(protocol, &["inCommitTimestamp"])}),
            json!({"metaData": metadata}),
        ]
    });
    assert!(loser.iter().any(|a| a.get("add").is_some()));
    let ict = loser[0]["commitInfo"]["inCommitTimestamp"].as_i64();
    assert_eq!(ict, Some(T + 1), "{loser:?}");
}

#[test]
fn a_loser_after_row_tracking_was_supported_assigns_row_ids() {
    let loser = insert_loses_to(|protocol, _| {
        vec![
            json!({"commitInfo": {"timestamp": 1, "operation": "UPGRADE PROTOCOL"}}),
            json!({"protocol": add_writer_feature(protocol, &["domainMetadata", "rowTracking"])}),
        ]
    });
    let adds: Vec<&Value> = loser.iter().filter_map(|a| a.get("add")).collect();
    assert_eq!(adds.len(), 1, "{loser:?}");
    assert_eq!(adds[0]["baseRowId"].as_i64(), Some(0), "{loser:?}");
    assert_eq!(adds[0]["defaultRowCommitVersion"].as_i64(), Some(3));
    let hwm = loser.iter().find_map(|a| {
        let d = a.get("domainMetadata")?;
        (d["domain"] == "delta.rowTracking")
            .then(|| d["configuration"].as_str().map(String::from))?
    });
    assert_eq!(hwm.as_deref(), Some(r#"{"rowIdHighWaterMark":1}"#));
}

/// Twin of `feature_enablement/01`–`02`: a winner that turns column mapping on but gives an
/// existing column a physical name other than its name (as a writer may that rewrote every file)
/// — the loser's file, written under the plain name, would read NULL there: a true conflict.
#[test]
fn a_mapping_upgrade_that_renames_physical_columns_aborts_the_writer() {
    let race = insert_races(|protocol, mut metadata| {
        let mut schema: Value =
            serde_json::from_str(metadata["schemaString"].as_str().unwrap()).unwrap();
        for (i, f) in schema["fields"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            let name = f["name"].as_str().unwrap().to_string();
            let physical = if name == "v" {
                "col-v-renamed".to_string()
            } else {
                name
            };
            f["metadata"] = json!({
                "delta.columnMapping.id": i + 1,
                "delta.columnMapping.physicalName": physical,
            });
        }
        metadata["schemaString"] = json!(schema.to_string());
        let c = metadata["configuration"].as_object_mut().unwrap();
        c.insert("delta.columnMapping.mode".into(), json!("name"));
        c.insert("delta.columnMapping.maxColumnId".into(), json!("2"));
        let protocol: delta_rlc_protocol::actions::Protocol =
            serde_json::from_value(protocol).unwrap();
        vec![
            json!({"commitInfo": {"timestamp": 1, "operation": "SET TBLPROPERTIES"}}),
            json!({"protocol": protocol.with_feature("columnMapping")}),
            json!({"metaData": metadata}),
        ]
    });
    let err = race
        .outcome
        .expect_err("a renamed physical column is a conflict");
    assert!(err.to_string().contains("MetadataChanged"), "{err}");
    assert_eq!(race.rows_after, vec![10]);
}

/// Twin of `a_loser_after_row_tracking_was_supported_assigns_row_ids`: a DELETE (a DV re-add of
/// an existing file) planned without row tracking would give the file's untouched rows fresh row
/// ids after the winner supported it (red team helper-17, h13): a true conflict, nothing deleted.
#[test]
fn a_rewrite_after_row_tracking_was_supported_aborts() {
    let race = races("DELETE FROM t WHERE id = 3", |protocol, _| {
        vec![
            json!({"commitInfo": {"timestamp": 1, "operation": "UPGRADE PROTOCOL"}}),
            json!({"protocol": add_writer_feature(protocol, &["domainMetadata", "rowTracking"])}),
        ]
    });
    let err = race
        .outcome
        .expect_err("a rewrite beside a row-tracking change is a conflict");
    assert!(err.to_string().contains("ProtocolChanged"), "{err}");
    assert!(err.to_string().contains("row tracking"), "{err}");
    assert_eq!(race.rows_after, vec![10]);
}

/// The backfill twin: the protocol already supported row tracking when the DELETE read (its file
/// had no row ids yet); the winner re-adds that file with ids (`dataChange = false`, as Delta
/// Spark's backfill does). The DELETE's DV re-add would give the file's other rows fresh ids: a
/// true conflict, nothing deleted.
#[test]
fn a_rewrite_of_a_file_a_winner_backfilled_aborts() {
    let race = races_on(
        &["domainMetadata", "rowTracking"],
        "DELETE FROM t WHERE id = 3",
        |snap| {
            let mut actions =
                vec![json!({"commitInfo": {"timestamp": 1, "operation": "ROW TRACKING BACKFILL"}})];
            for f in &snap.files {
                let mut add = serde_json::to_value(f).unwrap();
                add["dataChange"] = json!(false);
                add["baseRowId"] = json!(0);
                add["defaultRowCommitVersion"] = json!(snap.version + 1);
                actions.push(json!({"add": add}));
            }
            actions.push(json!({"domainMetadata": {"domain": "delta.rowTracking", "configuration": "{\"rowIdHighWaterMark\":9}", "removed": false}}));
            actions
        },
    );
    let err = race
        .outcome
        .expect_err("a rewrite of a backfilled file is a conflict");
    assert!(err.to_string().contains("row tracking"), "{err}");
    assert_eq!(race.rows_after, vec![10]);
}

/// Delta Spark's `delta.feature.<name>` = 'supported' adds a feature to the protocol (never
/// stored as a property), at CREATE and by ALTER; row tracking added by this engine's own ALTER
/// while an INSERT is in flight: the INSERT, committing after it, gives its file row ids and
/// the commit carries the high-water mark. A feature not addable, or another value, is refused
/// and commits nothing.
#[test]
fn features_requested_as_properties_are_added_and_row_tracking_binds_writers_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::default(), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, v BIGINT) TBLPROPERTIES ('delta.feature.changeDataFeed' = 'supported', 'delta.enableDeletionVectors' = 'false')")
            .await
            .unwrap();
        let snap = latest_snapshot(&loc).await;
        assert!(snap.protocol.has_writer_feature("changeDataFeed"));
        assert!(snap.metadata.configuration.keys().all(|k| !k.starts_with("delta.feature.")));
        s.execute("INSERT INTO t SELECT value, value FROM range(0, 10)")
            .await
            .unwrap();
        for bad in [
            "ALTER TABLE t SET TBLPROPERTIES ('delta.feature.rowTracking' = 'maybe')",
            "ALTER TABLE t SET TBLPROPERTIES ('delta.feature.vacuumProtocolCheck' = 'supported')",
            "ALTER TABLE t SET TBLPROPERTIES ('delta.feature.noSuchThing' = 'supported')",
        ] {
            assert!(s.execute(bad).await.is_err(), "{bad}");
        }
        assert_eq!(latest_snapshot(&loc).await.version, 1);
        let Prepared::Write(insert) = s.prepare("INSERT INTO t VALUES (100, 1), (101, 2)").await.unwrap() else {
            panic!("not a write")
        };
        s.execute("ALTER TABLE t SET TBLPROPERTIES ('delta.feature.rowTracking' = 'supported')")
            .await
            .unwrap();
        let snap = latest_snapshot(&loc).await;
        assert!(snap.protocol.has_writer_feature("rowTracking"));
        assert!(snap.protocol.has_writer_feature("domainMetadata"));
        assert_eq!(insert.commit().await.unwrap().version, Some(3));
    });
    let actions = commit(&loc, 3);
    let adds: Vec<&Value> = actions.iter().filter_map(|a| a.get("add")).collect();
    assert_eq!(adds.len(), 1);
    assert!(adds[0]["baseRowId"].as_i64().is_some(), "{actions:?}");
    assert!(
        actions
            .iter()
            .any(|a| a["domainMetadata"]["domain"] == "delta.rowTracking"),
        "{actions:?}"
    );
    let out = rt().block_on(s.execute("SELECT count(*) FROM t")).unwrap();
    assert_eq!(crate::common::first_i64s(&out.batches), vec![12]);
}

/// A TIMESTAMP_NTZ column needs the `timestampNtz` feature wherever it sits — inside a struct,
/// a list or a map — at CREATE, at ADD COLUMNS and at a schema-replacing overwrite; a reader
/// without it would misread the column.
#[test]
fn nested_timestamp_ntz_columns_list_the_feature() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqlSession::new(Env::deterministic(91), ConflictConfig::default());
    rt().block_on(async {
        for (i, ty) in [
            "STRUCT<a: TIMESTAMP_NTZ>",
            "ARRAY<TIMESTAMP_NTZ>",
            "MAP<STRING, ARRAY<STRUCT<t: TIMESTAMP_NTZ>>>",
        ]
        .iter()
        .enumerate()
        {
            let created = format!("{}/c{i}", dir.path().display());
            s.execute(&format!("CREATE TABLE '{created}' (id BIGINT, x {ty})"))
                .await
                .unwrap();
            let p = latest_snapshot(&created).await.protocol.clone();
            assert!(p.has_reader_feature("timestampNtz"), "{ty}: {p:?}");
            assert!(p.has_writer_feature("timestampNtz"), "{ty}: {p:?}");
            let added = format!("{}/a{i}", dir.path().display());
            s.execute(&format!("CREATE TABLE '{added}' (id BIGINT) TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')"))
                .await
                .unwrap();
            assert!(!latest_snapshot(&added).await.protocol.has_writer_feature("timestampNtz"));
            s.execute(&format!("ALTER TABLE '{added}' ADD COLUMNS (x {ty})"))
                .await
                .unwrap();
            let p = latest_snapshot(&added).await.protocol.clone();
            assert!(p.has_reader_feature("timestampNtz"), "ADD COLUMNS {ty}: {p:?}");
        }
    });
}

/// Iceberg compatibility may be listed as supported (deltalake's `add_feature`), which brings
/// column mapping with it and leaves the table writable; turning it on is refused, and a table
/// another engine turned it on for is not written (its writer rules are not implemented here).
#[test]
fn iceberg_compat_is_supported_but_never_active() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(92), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT) TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')",
        )
        .await
        .unwrap();
        s.execute(
            "ALTER TABLE t SET TBLPROPERTIES ('delta.feature.icebergCompatV1' = 'supported')",
        )
        .await
        .unwrap();
        let p = latest_snapshot(&loc).await.protocol.clone();
        assert!(p.has_writer_feature("icebergCompatV1"), "{p:?}");
        assert!(p.has_writer_feature("columnMapping"), "{p:?}");
        assert_eq!(p.min_writer_version, 7);
        s.execute("INSERT INTO t VALUES (1), (2)").await.unwrap();
        let e = s
            .execute("ALTER TABLE t SET TBLPROPERTIES ('delta.enableIcebergCompatV1' = 'true')")
            .await
            .unwrap_err();
        assert!(e.to_string().contains("enableIcebergCompatV1"), "{e}");
        // Another engine turns it on (a metadata action written by hand): writes are refused.
        let snap = latest_snapshot(&loc).await;
        let mut metadata = serde_json::to_value(&snap.metadata).unwrap();
        metadata["configuration"]["delta.enableIcebergCompatV1"] = json!("true");
        let next = snap.version + 1;
        std::fs::write(
            format!("{loc}/_delta_log/{next:020}.json"),
            format!("{}\n", json!({ "metaData": metadata })),
        )
        .unwrap();
        let e = s.execute("INSERT INTO t VALUES (3)").await.unwrap_err();
        assert!(e.to_string().contains("Iceberg compatibility"), "{e}");
        assert_eq!(latest_snapshot(&loc).await.version, next);
        let out = s.execute("SELECT count(*) FROM t").await.unwrap();
        assert_eq!(crate::common::first_i64s(&out.batches), vec![2]);
    });
}
