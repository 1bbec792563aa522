//! ALTER TABLE: each operation's rows and metadata, the upgrade to column mapping, and bad input
//! (one clear error, nothing committed).

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;

use crate::common::{latest_snapshot, rt, sorted_rows};

fn session(loc: &str) -> SqlSession {
    let mut s = SqlSession::new(Env::deterministic(21), ConflictConfig::default());
    s.register("t", loc);
    s
}

async fn rows(s: &SqlSession, sql: &str) -> Vec<String> {
    sorted_rows(&s.execute(sql).await.unwrap().batches)
}

#[test]
fn add_columns_rename_drop_and_the_upgrade_to_column_mapping() {
    let loc = "memory://alter-ops/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT NOT NULL, v STRING, p STRING) PARTITIONED BY (p)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (1, 'a', 'x'), (2, 'b', 'y')")
            .await
            .unwrap();
        // Without column mapping: ADD works (old rows NULL); RENAME / DROP are refused.
        s.execute("ALTER TABLE t ADD COLUMNS (c BIGINT COMMENT 'new', d STRING)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (3, 'c', 'x', 30, 'dd')")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, v, p, c, d FROM t").await,
            vec!["1|a|x|NULL|NULL", "2|b|y|NULL|NULL", "3|c|x|30|dd"]
        );
        let version = latest_snapshot(loc).await.version;
        for bad in [
            "ALTER TABLE t RENAME COLUMN v TO w",
            "ALTER TABLE t DROP COLUMN v",
            "ALTER TABLE t ADD COLUMNS (v INT)",
            "ALTER TABLE t ADD COLUMNS (e INT NOT NULL)",
            "ALTER TABLE t SET TBLPROPERTIES ('delta.noSuchThing' = '1')",
            "ALTER TABLE t SET TBLPROPERTIES ('delta.checkpointInterval' = '-1')",
            "ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'id')",
            "ALTER TABLE t UNSET TBLPROPERTIES ('never.set')",
            "ALTER TABLE t ALTER COLUMN id TYPE DOUBLE",
            "ALTER TABLE t ADD CONSTRAINT pos CHECK (id > 1)",
            "ALTER TABLE t FROB",
        ] {
            let err = s.execute(bad).await.expect_err(bad);
            assert!(!err.to_string().contains('\n'), "{bad}: one line: {err}");
        }
        assert_eq!(
            latest_snapshot(loc).await.version,
            version,
            "nothing committed"
        );
        // Properties: set, unset, IF EXISTS.
        s.execute(
            "ALTER TABLE t SET TBLPROPERTIES ('delta.checkpointInterval' = '5', 'owner' = 'me')",
        )
        .await
        .unwrap();
        s.execute("ALTER TABLE t UNSET TBLPROPERTIES ('owner')")
            .await
            .unwrap();
        s.execute("ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('owner')")
            .await
            .unwrap();
        let snap = latest_snapshot(loc).await;
        assert_eq!(snap.config("delta.checkpointInterval"), Some("5"));
        assert_eq!(snap.config("owner"), None);
        // The upgrade to column mapping: existing columns keep their names as physical names, so
        // the files already written stay readable as they are.
        s.execute("ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
            .await
            .unwrap();
        let snap = latest_snapshot(loc).await;
        assert!(snap.protocol.has_writer_feature("columnMapping"));
        assert_eq!(snap.physical_name("v"), "v");
        assert_eq!(snap.config("delta.columnMapping.maxColumnId"), Some("5"));
        // Properties the engine set (maxColumnId) do not block later property changes, and users
        // cannot set them.
        s.execute("ALTER TABLE t SET TBLPROPERTIES ('owner' = 'again')")
            .await
            .unwrap();
        assert!(s
            .execute("ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.maxColumnId' = '99')")
            .await
            .is_err());
        // Now RENAME and DROP; a new column named like the dropped one reads NULL, never the old data.
        s.execute("ALTER TABLE t RENAME COLUMN v TO w")
            .await
            .unwrap();
        s.execute("ALTER TABLE t RENAME COLUMN p TO q")
            .await
            .unwrap();
        s.execute("ALTER TABLE t DROP COLUMN d").await.unwrap();
        s.execute("ALTER TABLE t ADD COLUMN d STRING")
            .await
            .unwrap();
        s.execute("ALTER TABLE t ADD COLUMN v STRING")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, w, q, c, d, v FROM t").await,
            vec![
                "1|a|x|NULL|NULL|NULL",
                "2|b|y|NULL|NULL|NULL",
                "3|c|x|30|NULL|NULL"
            ]
        );
        // Writes and DML after the changes, with pruning on the renamed partition column.
        s.execute("INSERT INTO t (id, w, q, c, d, v) VALUES (4, 'e', 'y', 40, 'new-d', 'new-v')")
            .await
            .unwrap();
        s.execute("UPDATE t SET c = 0 WHERE q = 'x'").await.unwrap();
        s.execute("DELETE FROM t WHERE w = 'b'").await.unwrap();
        assert_eq!(
            rows(&s, "SELECT id, w, q, c, d, v FROM t").await,
            vec![
                "1|a|x|0|NULL|NULL",
                "3|c|x|0|NULL|NULL",
                "4|e|y|40|new-d|new-v"
            ]
        );
        // DROP NOT NULL: NULL ids are accepted from then on.
        let err = s
            .execute("INSERT INTO t (id, w, q) VALUES (NULL, 'n', 'x')")
            .await
            .unwrap_err();
        assert!(err.to_string().to_lowercase().contains("null"), "{err}");
        s.execute("ALTER TABLE t ALTER COLUMN id DROP NOT NULL")
            .await
            .unwrap();
        s.execute("INSERT INTO t (id, w, q) VALUES (NULL, 'n', 'x')")
            .await
            .unwrap();
        assert_eq!(
            rows(&s, "SELECT count(*) FROM t WHERE id IS NULL").await,
            vec!["1"]
        );
        // Partition and last columns cannot be dropped; mode changes other than none → name are refused.
        for bad in [
            "ALTER TABLE t DROP COLUMN q",
            "ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')",
            "ALTER TABLE t RENAME COLUMN w TO c",
        ] {
            assert!(s.execute(bad).await.is_err(), "{bad}");
        }
        let history = rows(&s, "DESCRIBE HISTORY t").await;
        for op in [
            "ADD COLUMNS",
            "RENAME COLUMN",
            "DROP COLUMNS",
            "SET TBLPROPERTIES",
            "UNSET TBLPROPERTIES",
            "CHANGE COLUMN",
        ] {
            assert!(
                history.iter().any(|h| h.split('|').any(|f| f == op)),
                "{op} in {history:?}"
            );
        }
    });
}

/// ALTER COLUMN … TYPE: only widenings, only with `delta.enableTypeWidening`; old files keep the
/// narrower type and read widened; the change is recorded. (That a widened column's old stats do
/// not prune is checked against Spark's files, whose float stats are the float's text:
/// `test_type_widening_both_ways`.)
#[test]
fn type_widening_reads_old_files_widened_and_stops_pruning_on_their_stats() {
    let loc = "memory://alter-widen/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id INT, f FLOAT, d DECIMAL(10,2), day DATE)")
            .await
            .unwrap();
        // One row per file, so each file's stats are that row's value.
        s.execute("INSERT INTO t VALUES (1, CAST(0.1 AS FLOAT), 1.25, DATE '2020-01-02')")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (2147483647, CAST(2.5 AS FLOAT), -3.5, DATE '2021-06-30')")
            .await
            .unwrap();
        let version = latest_snapshot(loc).await.version;
        for bad in [
            "ALTER TABLE t ALTER COLUMN id TYPE BIGINT",
            "ALTER TABLE t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'maybe')",
        ] {
            let err = s.execute(bad).await.expect_err(bad);
            assert!(!err.to_string().contains('\n'), "{bad}: {err}");
        }
        assert_eq!(latest_snapshot(loc).await.version, version);
        s.execute("ALTER TABLE t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
            .await
            .unwrap();
        assert!(latest_snapshot(loc)
            .await
            .protocol
            .has_reader_feature("typeWidening"));
        let version = latest_snapshot(loc).await.version;
        for bad in [
            "ALTER TABLE t ALTER COLUMN id TYPE SMALLINT",
            "ALTER TABLE t ALTER COLUMN id TYPE DECIMAL(9,0)",
            "ALTER TABLE t ALTER COLUMN d TYPE DECIMAL(11,4)",
            "ALTER TABLE t ALTER COLUMN day TYPE TIMESTAMP",
            "ALTER TABLE t ALTER COLUMN f TYPE STRING",
        ] {
            let err = s.execute(bad).await.expect_err(bad);
            assert!(!err.to_string().contains('\n'), "{bad}: {err}");
        }
        assert_eq!(
            latest_snapshot(loc).await.version,
            version,
            "nothing committed"
        );
        for ok in [
            "ALTER TABLE t ALTER COLUMN id TYPE BIGINT",
            "ALTER TABLE t ALTER COLUMN f TYPE DOUBLE",
            "ALTER TABLE t ALTER COLUMN d TYPE DECIMAL(12,3)",
            "ALTER TABLE t ALTER COLUMN day TYPE TIMESTAMP_NTZ",
        ] {
            s.execute(ok).await.unwrap();
        }
        let snap = latest_snapshot(loc).await;
        let id = snap.schema.field("id").unwrap();
        assert_eq!(
            id.metadata.get("delta.typeChanges"),
            Some(&serde_json::json!([{"fromType": "integer", "toType": "long"}]))
        );
        s.execute(
            "INSERT INTO t VALUES (3000000000, 0.25, 1.125, TIMESTAMP '2022-01-01 12:30:00')",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, d, day FROM t").await,
            vec![
                "1|1.250|2020-01-02T00:00:00",
                "2147483647|-3.500|2021-06-30T00:00:00",
                "3000000000|1.125|2022-01-01T12:30:00"
            ]
        );
        // The float 0.1 widened is 0.100000001490116…: above 0.1.
        assert_eq!(
            rows(&s, "SELECT id FROM t WHERE f > 0.1 AND f < 0.2").await,
            vec!["1"]
        );
        assert_eq!(
            rows(&s, "SELECT id FROM t WHERE id > 2147483646")
                .await
                .len(),
            2
        );
    });
}

/// ALTER COLUMN … TYPE on a column that a CHECK constraint or a generated column reads, or on a
/// generated column, is refused as Delta refuses it: under the new type the rule means something
/// else (`CAST(v AS STRING)` is '45' or '45.0'; a rule's arithmetic overflows at other bounds),
/// and the rows already written were checked or generated under the old one. Nothing commits; once
/// the constraint is dropped the widening goes through.
#[test]
fn a_column_read_by_a_rule_cannot_be_retyped() {
    let loc = "memory://alter-widen-rules/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT, v INT, w INT, g STRING GENERATED ALWAYS AS (CAST(w AS STRING))) \
             TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        )
        .await
        .unwrap();
        s.execute("INSERT INTO t (id, v, w) VALUES (1, 40, 45)")
            .await
            .unwrap();
        s.execute("ALTER TABLE t ADD CONSTRAINT tens CHECK (v / 10 <= 4)")
            .await
            .unwrap();
        let version = latest_snapshot(loc).await.version;
        for (bad, names) in [
            ("ALTER TABLE t ALTER COLUMN v TYPE DOUBLE", "tens"),
            ("ALTER TABLE t ALTER COLUMN v TYPE BIGINT", "tens"),
            ("ALTER TABLE t ALTER COLUMN w TYPE BIGINT", "g"),
        ] {
            let err = s.execute(bad).await.expect_err(bad).to_string();
            assert!(!err.contains('\n'), "{bad}: {err}");
            assert!(err.contains("cannot be retyped") && err.contains(names), "{bad}: {err}");
        }
        assert_eq!(latest_snapshot(loc).await.version, version, "nothing committed");
        s.execute("ALTER TABLE t DROP CONSTRAINT tens").await.unwrap();
        s.execute("ALTER TABLE t ALTER COLUMN v TYPE DOUBLE").await.unwrap();
        assert_eq!(rows(&s, "SELECT id, v, g FROM t").await, vec!["1|40.0|45"]);
    });
}

/// ALTER TABLE … CLUSTER BY: a plain table becomes clustered (features added), the columns change
/// (physical names under column mapping), `CLUSTER BY NONE` clears them, the next OPTIMIZE clusters
/// by the new columns with the rows unchanged; a partitioned table, an unknown column, a repeated
/// column and NONE on an unclustered table are refused, nothing committed.
#[test]
fn cluster_by_changes_the_clustering_columns() {
    for mapping in ["none", "name"] {
        let loc = format!("memory://alter-cluster-{mapping}/t");
        let s = session(&loc);
        rt().block_on(async {
            s.execute(&format!(
                "CREATE TABLE t (id BIGINT, k BIGINT, v STRING) TBLPROPERTIES ('delta.columnMapping.mode' = '{mapping}')"
            ))
            .await
            .unwrap();
            for i in 0..3 {
                s.execute(&format!(
                    "INSERT INTO t SELECT value, (value * 7) % 10, 'x' FROM range({}, {})",
                    i * 10,
                    i * 10 + 10
                ))
                .await
                .unwrap();
            }
            let version = latest_snapshot(&loc).await.version;
            for bad in [
                "ALTER TABLE t CLUSTER BY NONE",
                "ALTER TABLE t CLUSTER BY (nope)",
                "ALTER TABLE t CLUSTER BY (k, K)",
            ] {
                let err = s.execute(bad).await.expect_err(bad);
                assert_eq!(err.kind(), delta_rlc_engine::ErrorKind::InvalidArgument, "{bad}: {err}");
            }
            assert_eq!(latest_snapshot(&loc).await.version, version);
            s.execute("ALTER TABLE t CLUSTER BY (k)").await.unwrap();
            let snap = latest_snapshot(&loc).await;
            assert!(snap.protocol.has_writer_feature("clustering"));
            assert!(snap.protocol.has_writer_feature("domainMetadata"));
            let domain = snap.domains.get("delta.clustering").unwrap().configuration.clone();
            let physical_k = snap.physical_name("k").to_string();
            assert_eq!(mapping == "name", physical_k != "k");
            assert!(domain.contains(&format!("[\"{physical_k}\"]")), "{domain}");
            s.execute("OPTIMIZE t").await.unwrap();
            assert_eq!(
                rows(&s, "SELECT count(*), sum(id), sum(k) FROM t").await,
                vec!["30|435|135"]
            );
            assert_eq!(latest_snapshot(&loc).await.files.len(), 1);
            s.execute("ALTER TABLE t CLUSTER BY (v, id)").await.unwrap();
            let d = latest_snapshot(&loc).await;
            let cols = d.domains.get("delta.clustering").unwrap().configuration.clone();
            assert!(cols.contains(d.physical_name("v")) && cols.contains(d.physical_name("id")), "{cols}");
            s.execute("ALTER TABLE t CLUSTER BY NONE").await.unwrap();
            let d = latest_snapshot(&loc).await;
            assert_eq!(
                d.domains.get("delta.clustering").unwrap().configuration,
                r#"{"clusteringColumns":[]}"#
            );
        });
    }
    let s = session("memory://alter-cluster-part/t");
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, p STRING) PARTITIONED BY (p)")
            .await
            .unwrap();
        let err = s
            .execute("ALTER TABLE t CLUSTER BY (id)")
            .await
            .expect_err("partitioned");
        assert!(err.to_string().contains("partitioned"), "{err}");
    });
}

/// Nested fields (column paths): RENAME COLUMN `s.a` and `arr.element.x` under column mapping,
/// ALTER COLUMN `s.a` TYPE (a widening recorded on the nested field; old files read widened),
/// DROP NOT NULL on a nested field. Refused in one line, nothing committed: a path that names no
/// field, a sibling's name, a widening inside an array, and renaming or dropping a column that a
/// CHECK constraint or a generated column reads.
#[test]
fn nested_fields_rename_widen_and_referenced_columns_are_refused() {
    let loc = "memory://alter-nested/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT, s STRUCT<a: INT, b: STRING NOT NULL>, arr ARRAY<STRUCT<x: INT>>, \
             g BIGINT GENERATED ALWAYS AS (id * 2)) \
             TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.enableTypeWidening' = 'true')",
        )
        .await
        .unwrap();
        s.execute("ALTER TABLE t ADD CONSTRAINT pos CHECK (id > 0)")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t (id, s, arr) VALUES (1, named_struct('a', 7, 'b', 'x'), make_array(named_struct('x', 5)))",
        )
        .await
        .unwrap();
        let version = latest_snapshot(loc).await.version;
        for bad in [
            "ALTER TABLE t RENAME COLUMN s.zz TO q",
            "ALTER TABLE t RENAME COLUMN s.a TO B",
            "ALTER TABLE t RENAME COLUMN nope.a TO q",
            "ALTER TABLE t RENAME COLUMN id TO key",
            "ALTER TABLE t DROP COLUMN id",
            "ALTER TABLE t ALTER COLUMN arr.element.x TYPE BIGINT",
            "ALTER TABLE t ALTER COLUMN s.a TYPE SMALLINT",
            "ALTER TABLE t ALTER COLUMN s.b SET NOT NULL",
        ] {
            let err = s.execute(bad).await.expect_err(bad);
            assert!(!err.to_string().contains('\n'), "{bad}: {err}");
        }
        let err = s
            .execute("ALTER TABLE t RENAME COLUMN id TO key")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("reads it"), "{err}");
        assert_eq!(latest_snapshot(loc).await.version, version, "nothing committed");

        s.execute("ALTER TABLE t RENAME COLUMN s.a TO a2").await.unwrap();
        s.execute("ALTER TABLE t RENAME COLUMN arr.element.x TO y")
            .await
            .unwrap();
        s.execute("ALTER TABLE t ALTER COLUMN s.a2 TYPE BIGINT")
            .await
            .unwrap();
        s.execute("ALTER TABLE t ALTER COLUMN s.b DROP NOT NULL")
            .await
            .unwrap();
        // Renaming the generated column itself is fine: its expression does not read it.
        s.execute("ALTER TABLE t RENAME COLUMN g TO twice").await.unwrap();
        let snap = latest_snapshot(loc).await;
        let st = match &snap.schema.field("s").unwrap().data_type {
            delta_rlc_protocol::schema::DataType::Struct(st) => st.clone(),
            other => panic!("{other:?}"),
        };
        let a2 = st.field("a2").unwrap();
        assert_eq!(
            a2.metadata.get("delta.typeChanges"),
            Some(&serde_json::json!([{"fromType": "integer", "toType": "long"}]))
        );
        assert!(st.field("b").unwrap().nullable);
        s.execute(
            "INSERT INTO t (id, s, arr) VALUES (2, named_struct('a2', 3000000000, 'b', NULL), make_array(named_struct('y', 6)))",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(
                &s,
                "SELECT id, s['a2'], s['b'], array_element(arr, 1)['y'], twice FROM t"
            )
            .await,
            vec!["1|7|x|5|2", "2|3000000000|NULL|6|4"]
        );
        assert_eq!(
            rows(&s, "SELECT id FROM t WHERE s['a2'] > 2147483647").await,
            vec!["2"]
        );
    });
}

/// Without column mapping a nested rename is refused like a top-level one (nothing committed).
#[test]
fn nested_rename_needs_column_mapping() {
    let loc = "memory://alter-nested-nocm/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, s STRUCT<a: INT>)")
            .await
            .unwrap();
        let version = latest_snapshot(loc).await.version;
        let err = s
            .execute("ALTER TABLE t RENAME COLUMN s.a TO b")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs column mapping"), "{err}");
        assert_eq!(latest_snapshot(loc).await.version, version);
    });
}

/// ADD COLUMNS of nested fields (`s.c`, `arr.element.z`) beside a top-level one, with and without
/// column mapping: rows written before read NULL there, rows written after hold their values, and
/// an UPDATE that rewrites an old row keeps it. Refused in one line, nothing committed: an existing
/// field, a NOT NULL field, a path through a non-struct or a missing column.
#[test]
fn nested_add_columns_read_null_in_older_rows() {
    for (loc, props) in [
        ("memory://alter-nested-add/t", ""),
        (
            "memory://alter-nested-add-cm/t",
            " TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        ),
    ] {
        let s = session(loc);
        rt().block_on(async {
            s.execute(&format!(
                "CREATE TABLE t (id BIGINT, s STRUCT<a: INT>, arr ARRAY<STRUCT<x: INT>>){props}"
            ))
            .await
            .unwrap();
            s.execute(
                "INSERT INTO t VALUES (1, named_struct('a', 7), make_array(named_struct('x', 5)))",
            )
            .await
            .unwrap();
            let version = latest_snapshot(loc).await.version;
            for bad in [
                "ALTER TABLE t ADD COLUMNS (s.A INT)",
                "ALTER TABLE t ADD COLUMNS (s.c2 INT NOT NULL)",
                "ALTER TABLE t ADD COLUMNS (id.x INT)",
                "ALTER TABLE t ADD COLUMNS (nope.x INT)",
                "ALTER TABLE t ADD COLUMNS (arr.x INT)",
            ] {
                let err = s.execute(bad).await.expect_err(bad);
                assert!(!err.to_string().contains('\n'), "{bad}: {err}");
            }
            assert_eq!(latest_snapshot(loc).await.version, version, "{loc}");
            s.execute("ALTER TABLE t ADD COLUMNS (s.c STRING, arr.element.z BIGINT, w INT)")
                .await
                .unwrap();
            s.execute(
                "INSERT INTO t VALUES (2, named_struct('a', 8, 'c', 'q'), \
                 make_array(named_struct('x', 6, 'z', 9)), 3)",
            )
            .await
            .unwrap();
            let select = "SELECT id, s['a'], s['c'], array_element(arr, 1)['x'], array_element(arr, 1)['z'], w FROM t";
            assert_eq!(
                rows(&s, select).await,
                vec!["1|7|NULL|5|NULL|NULL", "2|8|q|6|9|3"],
                "{loc}"
            );
            // Pruning: the older file has no stats for `s.c`, so it is never skipped.
            assert_eq!(
                rows(&s, "SELECT id FROM t WHERE s['c'] IS NULL").await,
                vec!["1"],
                "{loc}"
            );
            s.execute("UPDATE t SET w = 4 WHERE id = 1").await.unwrap();
            assert_eq!(
                rows(&s, select).await,
                vec!["1|7|NULL|5|NULL|4", "2|8|q|6|9|3"],
                "{loc}"
            );
        });
    }
}

/// DROP COLUMN of nested fields under column mapping: the dropped data is never read again, not
/// even by a field added later under the same name. Refused in one line, nothing committed:
/// dropping without column mapping, a struct's last field, a field a CHECK constraint reads.
#[test]
fn nested_drop_columns_leave_the_data_unread() {
    let loc = "memory://alter-nested-drop/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT, s STRUCT<a: INT, b: STRING>, arr ARRAY<STRUCT<x: INT, y: INT>>, \
             u STRUCT<k: INT>) TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        )
        .await
        .unwrap();
        s.execute("ALTER TABLE t ADD CONSTRAINT ku CHECK (u['k'] IS NULL OR u['k'] > 0)")
            .await
            .unwrap();
        s.execute(
            "INSERT INTO t VALUES (1, named_struct('a', 7, 'b', 'x'), \
             make_array(named_struct('x', 5, 'y', 6)), named_struct('k', 1))",
        )
        .await
        .unwrap();
        s.execute("ALTER TABLE t DROP COLUMNS (s.a, arr.element.x)")
            .await
            .unwrap();
        let version = latest_snapshot(loc).await.version;
        for bad in [
            "ALTER TABLE t DROP COLUMN arr.element.y",
            "ALTER TABLE t DROP COLUMN u.k",
            "ALTER TABLE t DROP COLUMN s.zz",
            "ALTER TABLE t DROP COLUMN s.a",
        ] {
            let err = s.execute(bad).await.expect_err(bad);
            assert!(!err.to_string().contains('\n'), "{bad}: {err}");
        }
        assert_eq!(latest_snapshot(loc).await.version, version);
        s.execute("ALTER TABLE t DROP COLUMN IF EXISTS s.zz")
            .await
            .unwrap();
        s.execute("ALTER TABLE t ADD COLUMNS (s.a INT)").await.unwrap();
        s.execute(
            "INSERT INTO t VALUES (2, named_struct('b', 'q', 'a', 9), \
             make_array(named_struct('y', 8)), named_struct('k', 2))",
        )
        .await
        .unwrap();
        assert_eq!(
            rows(&s, "SELECT id, s['a'], s['b'], array_element(arr, 1)['y'] FROM t").await,
            vec!["1|NULL|x|6", "2|9|q|8"]
        );
        let snap = latest_snapshot(loc).await;
        let st = match &snap.schema.field("s").unwrap().data_type {
            delta_rlc_protocol::schema::DataType::Struct(st) => st.clone(),
            other => panic!("{other:?}"),
        };
        let names: Vec<&str> = st.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["b", "a"]);
    });

    let loc = "memory://alter-nested-drop-nocm/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, s STRUCT<a: INT, b: INT>)")
            .await
            .unwrap();
        let err = s
            .execute("ALTER TABLE t DROP COLUMN s.a")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs column mapping"), "{err}");
        assert_eq!(latest_snapshot(loc).await.version, 0);
    });
}

#[test]
fn a_column_comment_is_set_and_the_protocols_keys_are_refused() {
    let loc = "memory://alter-comment/t";
    let s = session(loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, s STRUCT<a: BIGINT, b: STRING>)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (1, named_struct('a', 10, 'b', 'x'))")
            .await
            .unwrap();
        s.execute("ALTER TABLE t ALTER COLUMN id COMMENT 'the key'")
            .await
            .unwrap();
        s.execute("ALTER TABLE t CHANGE COLUMN s.b COMMENT 'nested'")
            .await
            .unwrap();
        let snap = latest_snapshot(loc).await;
        let id = snap.schema.field("id").unwrap();
        assert_eq!(id.metadata["comment"], "the key");
        assert!(snap
            .schema
            .to_schema_string()
            .contains("\"comment\":\"nested\""));
        let version = snap.version;
        for bad in [
            "ALTER TABLE t ALTER COLUMN nope COMMENT 'x'",
            "ALTER TABLE t ALTER COLUMN id COMMENT 'x' trailing",
        ] {
            assert!(s.execute(bad).await.is_err(), "{bad}");
        }
        assert_eq!(latest_snapshot(loc).await.version, version);
        assert_eq!(rows(&s, "SELECT id, s.a, s.b FROM t").await, vec!["1|10|x"]);
    });
}
