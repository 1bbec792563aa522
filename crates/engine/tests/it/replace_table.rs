//! `CREATE OR REPLACE TABLE`: one commit that gives the table a new schema, partitioning and
//! properties and removes every file (with the query's rows, AS SELECT), keeping the table's id,
//! history and every protocol feature it had. Twins: a write that commits between the replace's
//! read and its commit aborts one of the two (the replace read the whole table; a loser behind a
//! replace sees a metadata change), the rows checked each way.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::{Prepared, SqlSession};

use crate::common::{latest_snapshot, rt, sorted_rows};

fn session(loc: &str) -> SqlSession {
    let mut s = SqlSession::new(Env::deterministic(61), ConflictConfig::default());
    s.register("t", loc);
    s.register("src", "memory://replace-src/src");
    s
}

async fn rows(s: &SqlSession, sql: &str) -> Vec<String> {
    sorted_rows(
        &s.execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .batches,
    )
}

#[test]
fn create_or_replace_gives_a_new_table_in_one_commit() {
    let loc = "memory://replace-basic/t";
    let s = session(loc);
    rt().block_on(async {
        // On no table it creates one.
        s.execute("CREATE OR REPLACE TABLE t (a INT, b STRING) PARTITIONED BY (b) TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
            .await
            .unwrap();
        assert_eq!(latest_snapshot(loc).await.version, 0);
        s.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y')").await.unwrap();
        let before = latest_snapshot(loc).await;
        s.execute("CREATE OR REPLACE TABLE t (k BIGINT, note STRING) PARTITIONED BY (note)")
            .await
            .unwrap();
        let after = latest_snapshot(loc).await;
        assert_eq!(after.version, before.version + 1, "one commit");
        assert_eq!(after.metadata.id, before.metadata.id, "the table keeps its id");
        let names: Vec<&str> = after.schema.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["k", "note"]);
        assert_eq!(after.metadata.partition_columns, ["note"]);
        assert_eq!(after.num_rows(), Some(0), "every file removed");
        assert!(
            after.protocol.has_writer_feature("changeDataFeed"),
            "a feature the table had stays: {:?}",
            after.protocol
        );
        // AS SELECT: the query's rows, in the new layout; time travel still reads the old table.
        s.execute("CREATE TABLE src (k BIGINT, note STRING)").await.unwrap();
        s.execute("INSERT INTO src VALUES (7, 'n7'), (8, 'n8')").await.unwrap();
        s.execute("CREATE OR REPLACE TABLE t AS SELECT k * 10 AS k10, note FROM src")
            .await
            .unwrap();
        assert_eq!(rows(&s, "SELECT * FROM t").await, vec!["70|n7", "80|n8"]);
        assert_eq!(before.version, 1, "the CREATE and the INSERT");
        assert_eq!(
            rows(&s, "SELECT a, b FROM t VERSION AS OF 1").await,
            vec!["1|x", "2|y"]
        );
        // Reading the table it replaces is refused (its rows would be read at one version and
        // the replace committed over a later one); so is IF NOT EXISTS beside OR REPLACE.
        let e = s
            .execute("CREATE OR REPLACE TABLE t AS SELECT * FROM t")
            .await
            .unwrap_err();
        assert!(e.to_string().contains("reads the table itself"), "{e}");
        assert!(s
            .execute("CREATE OR REPLACE TABLE IF NOT EXISTS t (a INT)")
            .await
            .is_err());
    });
}

#[test]
fn a_replace_and_a_concurrent_write_never_both_commit() {
    for replace_first in [true, false] {
        let loc = format!("memory://replace-race-{replace_first}/t");
        let s = session(&loc);
        rt().block_on(async {
            s.execute("CREATE TABLE t (a INT, b STRING)").await.unwrap();
            s.execute("INSERT INTO t VALUES (1, 'x')").await.unwrap();
            let Prepared::Write(replace) = s
                .prepare("CREATE OR REPLACE TABLE t (z STRING)")
                .await
                .unwrap()
            else {
                panic!("not a write")
            };
            let Prepared::Write(insert) = s.prepare("INSERT INTO t VALUES (2, 'y')").await.unwrap()
            else {
                panic!("not a write")
            };
            let (first, second) = match replace_first {
                true => (replace, insert),
                false => (insert, replace),
            };
            first.commit().await.unwrap();
            let e = second
                .commit()
                .await
                .expect_err("the second of the two aborts");
            assert!(e.to_string().to_lowercase().contains("concurrent"), "{e}");
            let names: Vec<String> = latest_snapshot(&loc)
                .await
                .schema
                .fields
                .iter()
                .map(|f| f.name.clone())
                .collect();
            match replace_first {
                true => {
                    assert_eq!(names, ["z"]);
                    assert_eq!(latest_snapshot(&loc).await.num_rows(), Some(0));
                }
                false => {
                    assert_eq!(names, ["a", "b"]);
                    assert_eq!(rows(&s, "SELECT a, b FROM t").await, vec!["1|x", "2|y"]);
                }
            }
        });
    }
}
