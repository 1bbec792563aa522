//! Reverse remap against a compaction committed by another engine in Databricks' tag layout
//! (`compactedInto` / `compactionInfo` without our `sourceDeletionVector` field).

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::{Prepared, SqlSession};

use crate::common::{rt, sorted_rows};

#[test]
fn dml_reconciles_against_databricks_layout_compaction_tags() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::default(), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT NOT NULL, v STRING)")
            .await
            .unwrap();
        for f in 0..3 {
            s.execute(&format!(
                "INSERT INTO t SELECT value, 'x' FROM range({}, {})",
                f * 100,
                f * 100 + 100
            ))
            .await
            .unwrap();
        }
        s.execute("DELETE FROM t WHERE id = 100").await.unwrap();
        let Prepared::Write(loser) = s.prepare("DELETE FROM t WHERE id = 150").await.unwrap()
        else {
            panic!("not a write")
        };
        let out = s.execute("OPTIMIZE t").await.unwrap();
        let v = out.commit.unwrap().version.unwrap();
        // Rewrite the compaction commit into Databricks' layout: no sourceDeletionVector.
        let path = dir.path().join(format!("t/_delta_log/{v:020}.json"));
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = Vec::new();
        for line in text.lines() {
            let mut j: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(tags) = j
                .pointer_mut("/remove/tags")
                .and_then(|t| t.as_object_mut())
            {
                let info: Vec<serde_json::Value> =
                    serde_json::from_str(tags["compactionInfo"].as_str().unwrap()).unwrap();
                let stripped: Vec<serde_json::Value> = info
                    .into_iter()
                    .map(|mut e| {
                        e.as_object_mut().unwrap().remove("sourceDeletionVector");
                        e.as_object_mut()
                            .unwrap()
                            .insert("someFutureField".into(), serde_json::json!(1));
                        e
                    })
                    .collect();
                tags.insert(
                    "compactionInfo".into(),
                    serde_json::Value::String(serde_json::to_string(&stripped).unwrap()),
                );
            }
            lines.push(j.to_string());
        }
        assert!(!lines.join("\n").contains("sourceDeletionVector"));
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let r = loser.commit().await.unwrap();
        assert!(
            r.events
                .iter()
                .any(|e| e.name == "delta.optimize.conflictReconciliation.reverseRemapped"),
            "{:?}",
            r.events
        );
        let rows = sorted_rows(
            &s.execute("SELECT count(*), sum(id) FROM t")
                .await
                .unwrap()
                .batches,
        );
        let expected_sum: i64 = (0..300).sum::<i64>() - 100 - 150;
        assert_eq!(rows, vec![format!("298|{expected_sum}")]);
        let files = sorted_rows(
            &s.execute("SELECT count(*), sum(dv_cardinality) FROM delta_files('t')")
                .await
                .unwrap()
                .batches,
        );
        assert_eq!(files, vec!["1|1"]);
    });
}

#[test]
fn row_id_remap_aborts_when_an_id_is_found_twice() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::default(), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT NOT NULL, v STRING) TBLPROPERTIES ('delta.enableRowTracking' = 'true')").await.unwrap();
        for f in 0..3 {
            s.execute(&format!("INSERT INTO t SELECT value, CAST(value % 7 AS VARCHAR) FROM range({}, {})", f * 100, f * 100 + 100)).await.unwrap();
        }
        let Prepared::Write(loser) = s.prepare("DELETE FROM t WHERE id = 150").await.unwrap() else { panic!("not a write") };
        let out = s.execute("OPTIMIZE t ZORDER BY (v, id)").await.unwrap();
        let v = out.commit.unwrap().version.unwrap();
        // Inject: the winner's commit also adds a byte-identical copy of its output, so every
        // materialized row id occurs twice among the outputs.
        let path = dir.path().join(format!("t/_delta_log/{v:020}.json"));
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let add_line = lines.iter().find(|l| l.starts_with("{\"add\"")).unwrap().clone();
        let mut add: serde_json::Value = serde_json::from_str(&add_line).unwrap();
        let out_path = add["add"]["path"].as_str().unwrap().to_string();
        let copy = format!("copy-{out_path}");
        std::fs::copy(dir.path().join("t").join(&out_path), dir.path().join("t").join(&copy)).unwrap();
        add["add"]["path"] = serde_json::Value::String(copy);
        lines.push(add.to_string());
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let e = loser.commit().await.unwrap_err();
        assert_eq!(e.kind(), delta_rlc_engine::ErrorKind::Conflict, "{e}");
    });
}
