//! A statement that only reads never creates, changes or removes a file or directory: every
//! read-only statement kind, failed statements included, over a local table and data files.

use std::collections::BTreeMap;
use std::path::Path;

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;

use crate::common::rt;

/// Every file and directory under `root` with its size and modification time.
fn tree(root: &Path) -> BTreeMap<String, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            let rel = e.path().strip_prefix(root).unwrap().display().to_string();
            out.insert(rel, (m.len(), m.modified().unwrap()));
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

#[test]
fn read_only_statements_leave_the_disk_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = d.join("t").display().to_string();
    let s = SqlSession::new(Env::default(), ConflictConfig::default());
    let csv = d.join("in.csv").display().to_string();
    std::fs::write(&csv, "id,v\n1,a\n").unwrap();
    rt().block_on(async {
        s.execute(&format!(
            "CREATE TABLE '{t}' (id BIGINT, v STRING) TBLPROPERTIES ('delta.enableRowTracking' = 'true')"
        ))
        .await
        .unwrap();
        s.execute(&format!("INSERT INTO '{t}' VALUES (1, 'a'), (2, 'b')"))
            .await
            .unwrap();
        s.execute(&format!("DELETE FROM '{t}' WHERE id = 2")).await.unwrap();
    });
    let before = tree(d);
    let nosuch = d.join("nosuch/deeper").display().to_string();
    let reads = [
        format!("SELECT * FROM '{t}'"),
        format!("SELECT count(*) FROM '{t}' VERSION AS OF 1"),
        format!("SELECT count(*) FROM '{t}' TIMESTAMP AS OF '2000-01-01'"),
        format!("SELECT * FROM '{t}' t JOIN '{csv}' c ON t.id = c.id"),
        format!("SELECT * FROM read_csv('{csv}')"),
        format!("DESCRIBE '{t}'"),
        format!("DESCRIBE HISTORY '{t}'"),
        format!("DESCRIBE DETAIL '{t}'"),
        format!("SHOW TBLPROPERTIES '{t}'"),
        format!("VACUUM '{t}' DRY RUN"),
        format!("SELECT * FROM delta_files('{t}')"),
        format!("SELECT * FROM delta_rows('{t}')"),
        format!("DELETE FROM '{t}' WHERE id = 99"),
        format!("UPDATE '{t}' SET v = 'x' WHERE id = 99"),
        // Failing statements: none may leave anything behind either.
        format!("SELECT * FROM '{nosuch}'"),
        format!("SELECT * FROM '{t}' VERSION AS OF 99"),
        format!("SELECT nope FROM '{t}'"),
        format!("INSERT INTO '{nosuch}' VALUES (1)"),
        format!("DELETE FROM '{nosuch}' WHERE id = 1"),
        format!("DESCRIBE HISTORY '{nosuch}'"),
        format!("VACUUM '{nosuch}'"),
        format!("CREATE TABLE '{nosuch}' (id BIGINT) TBLPROPERTIES ('delta.appendOnly' = 'maybe')"),
        format!("SELECT * FROM read_parquet('{nosuch}/x.parquet')"),
    ];
    for sql in &reads {
        let _ = rt().block_on(s.execute(sql));
        assert_eq!(tree(d), before, "{sql} changed the disk");
    }
}
