//! Incremental snapshot loads (`DeltaTable::snapshot` replaying only the commits after the last
//! snapshot it loaded) equal full loads, across checkpoints, DML, metadata changes, and a table
//! deleted and re-created in place.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::{DeltaTable, Snapshot};

use crate::common::rt;

fn assert_same(a: &Snapshot, b: &Snapshot, what: &str) {
    assert_eq!(a.version, b.version, "{what}");
    assert_eq!(a.files, b.files, "{what}: files");
    assert_eq!(a.tombstones, b.tombstones, "{what}: tombstones");
    assert_eq!(a.txns, b.txns, "{what}: txns");
    assert_eq!(a.domains, b.domains, "{what}: domains");
    assert_eq!(a.protocol, b.protocol, "{what}: protocol");
    assert_eq!(a.metadata, b.metadata, "{what}: metadata");
    assert_eq!(a.schema, b.schema, "{what}: schema");
    assert_eq!(a.timestamp_ms, b.timestamp_ms, "{what}: timestamp");
    assert_eq!(
        a.checkpoint_version, b.checkpoint_version,
        "{what}: checkpoint"
    );
}

#[test]
fn incremental_loads_equal_full_loads() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(31), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ('delta.checkpointInterval' = '4', \
             'delta.enableRowTracking' = 'true')",
        )
        .await
        .unwrap();
        let handle = DeltaTable::open(&loc).unwrap();
        let statements = [
            "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
            "INSERT INTO t VALUES (3, 'c')",
            "DELETE FROM t WHERE id = 2",
            "UPDATE t SET v = 'z' WHERE id = 1",
            "ALTER TABLE t ADD COLUMNS (w BIGINT)",
            "INSERT INTO t (id, v, w) VALUES (4, 'd', 40)",
            "OPTIMIZE t",
            "ALTER TABLE t SET TBLPROPERTIES ('owner' = 'me')",
            "DELETE FROM t WHERE id = 3",
            "INSERT INTO t (id, v) VALUES (5, 'e')",
        ];
        for (i, sql) in statements.iter().enumerate() {
            s.execute(sql).await.unwrap();
            // Every other statement: the handle skips one version, so it replays two commits.
            if i % 2 == 1 || i + 1 == statements.len() {
                let inc = handle.snapshot(None).await.unwrap();
                let full = Snapshot::load(&handle.store, None).await.unwrap();
                assert_same(&inc, &full, sql);
            }
        }
        // Re-created in place with as many versions: the cached state must not be reused.
        let before = handle.snapshot(None).await.unwrap();
        std::fs::remove_dir_all(dir.path().join("t")).unwrap();
        s.execute("CREATE TABLE t (id BIGINT, v STRING)")
            .await
            .unwrap();
        for i in 0..(before.version + 1) {
            s.execute(&format!("INSERT INTO t VALUES ({i}, 'new')"))
                .await
                .unwrap();
        }
        let inc = handle.snapshot(None).await.unwrap();
        let full = Snapshot::load(&handle.store, None).await.unwrap();
        assert!(inc.version > before.version);
        assert_same(&inc, &full, "re-created table");
        assert_ne!(inc.metadata.id, before.metadata.id);
    });
}
