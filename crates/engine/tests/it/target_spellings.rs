//! A statement that reads its own target under another spelling of its location (a trailing
//! slash) reads the target: its reads are recorded, so a concurrent DELETE of a row it copied is a
//! conflict, and it declares no column names, so a concurrent ADD COLUMNS is one too (red team
//! helper-46: both were matched by the location's spelling, and the INSERT committed).

use delta_rlc_engine::conflict::{ConflictConfig, ConflictKind};
use delta_rlc_engine::env::Env;
use delta_rlc_engine::error::EngineError;
use delta_rlc_engine::sql::{Prepared, SqlSession};

use crate::common::{rt, sorted_rows};

#[test]
fn a_target_read_under_another_spelling_is_a_read_of_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::default(), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT)")
            .await
            .unwrap();
        s.execute("INSERT INTO t SELECT value, value * 10 FROM range(0, 10)")
            .await
            .unwrap();
        let copy = format!("INSERT INTO t (id, v) SELECT id + 100, v FROM '{loc}/' WHERE id < 3");
        // Twin 1: a winner deletes a row the INSERT copied: a true conflict.
        let Prepared::Write(loser) = s.prepare(&copy).await.unwrap() else {
            panic!("not a write")
        };
        s.execute("DELETE FROM t WHERE id = 1").await.unwrap();
        match loser.commit().await {
            Err(EngineError::Conflict(c)) => {
                assert!(matches!(c.kind, ConflictKind::ConcurrentDeleteRead), "{c}")
            }
            other => panic!("the copied row was deleted: {other:?}"),
        }
        // Twin 2: a winner adds a column: the query's `*` would read three columns.
        let star = format!("INSERT INTO t (id, v) SELECT * FROM '{loc}/' WHERE id = 2");
        let Prepared::Write(loser) = s.prepare(&star).await.unwrap() else {
            panic!("not a write")
        };
        s.execute("ALTER TABLE t ADD COLUMNS (c BIGINT)")
            .await
            .unwrap();
        match loser.commit().await {
            Err(EngineError::Conflict(c)) => {
                assert!(matches!(c.kind, ConflictKind::MetadataChanged), "{c}")
            }
            other => panic!("the query's * changed: {other:?}"),
        }
        // Nothing of either loser landed: 9 rows (id 1 deleted), none copied.
        assert_eq!(
            sorted_rows(
                &s.execute("SELECT count(*), max(id) FROM t")
                    .await
                    .unwrap()
                    .batches
            ),
            vec!["9|9"]
        );
    });
}
