//! Reader features without a writer here: a `void` column (older Delta tables made by a CTAS of
//! NULL; data files do not store it) reads as NULL, and a write to such a table is refused with a
//! one-line error, nothing committed. (VARIANT columns: tests/interop/spark, against Spark's
//! `to_json`, and the decoder's unit tests.)

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::ErrorKind;

use crate::common::{latest_snapshot, rt, sorted_rows};

#[test]
fn a_void_column_reads_as_null_and_its_table_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t");
    let loc = loc.to_str().unwrap();
    let mut s = SqlSession::new(Env::deterministic(51), ConflictConfig::default());
    s.register("t", loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT, v STRING)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
            .await
            .unwrap();
        // The schema gains a void column, as an old CTAS of `NULL AS n` left it.
        let path = dir.path().join("t/_delta_log/00000000000000000000.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let void = r#"{\"name\":\"n\",\"type\":\"void\",\"nullable\":true,\"metadata\":{}}"#;
        let patched = text.replacen(
            r#"{\"name\":\"v\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}"#,
            &format!(r#"{{\"name\":\"v\",\"type\":\"string\",\"nullable\":true,\"metadata\":{{}}}},{void}"#),
            1,
        );
        assert_ne!(patched, text, "schema patched");
        std::fs::write(&path, patched).unwrap();
        // A commit never changes in a real table; the patch stands for a table written so by
        // another engine, read by a session that has not held it (this one holds version 1 as
        // its INSERT committed it).
        let mut s = SqlSession::new(Env::deterministic(52), ConflictConfig::default());
        s.register("t", loc);
        let out = s.execute("SELECT id, v, n FROM t").await.unwrap();
        assert_eq!(sorted_rows(&out.batches), vec!["1|a|NULL", "2|b|NULL"]);
        let version = latest_snapshot(loc).await.version;
        let err = s
            .execute("INSERT INTO t (id, v) VALUES (3, 'c')")
            .await
            .expect_err("write refused");
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        assert!(!err.to_string().contains('\n') && err.to_string().contains("VOID"), "{err}");
        assert_eq!(latest_snapshot(loc).await.version, version);
    });
}
