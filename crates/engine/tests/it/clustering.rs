//! Incremental clustering: OPTIMIZE on a CLUSTER BY table reorders only files not yet clustered by
//! the table's columns, purges a clustered file's deletion vector alone as a tagged compaction, and
//! commits nothing when nothing is new.

use std::collections::BTreeSet;

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;

use crate::common::{first_i64s, latest_snapshot, rt, sorted_rows};

async fn rows(s: &SqlSession, sql: &str) -> Vec<String> {
    sorted_rows(&s.execute(sql).await.unwrap().batches)
}

fn paths(snap: &delta_rlc_engine::Snapshot) -> BTreeSet<String> {
    snap.files.iter().map(|f| f.path.clone()).collect()
}

/// (removed path, whether its remove carries `compactedInto`) of commit `v`.
fn removes(dir: &std::path::Path, v: u64) -> Vec<(String, bool)> {
    let text = std::fs::read_to_string(dir.join(format!("t/_delta_log/{v:020}.json"))).unwrap();
    text.lines()
        .filter_map(|l| {
            let j: serde_json::Value = serde_json::from_str(l).unwrap();
            let r = j.get("remove")?;
            Some((
                r["path"].as_str().unwrap().to_string(),
                r.pointer("/tags/compactedInto").is_some(),
            ))
        })
        .collect()
}

/// Three appends of `width` keys each, `[2w, 3w)`, `[0, w)`, `[w, 2w)` (so no file order is the
/// key order), the second column `v_expr` of `value`.
async fn insert_out_of_order(s: &SqlSession, v_expr: &str, width: i64) {
    for f in [2, 0, 1] {
        s.execute(&format!(
            "INSERT INTO t SELECT value, {v_expr} FROM range({}, {})",
            f * width,
            f * width + width
        ))
        .await
        .unwrap();
    }
}

fn clustered_by(snap: &delta_rlc_engine::Snapshot, columns: &str) -> bool {
    snap.files.iter().all(|f| {
        f.clustering_provider.as_deref() == Some("liquid")
            && f.tags.as_ref().and_then(|t| t.get("clusteredBy")).cloned()
                == Some(Some(columns.to_string()))
    })
}

#[test]
fn clustering_optimize_is_incremental() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(31), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT NOT NULL, v STRING) CLUSTER BY (id)")
            .await
            .unwrap();
        insert_out_of_order(&s, "CAST(value % 3 AS VARCHAR)", 100).await;
        s.execute("OPTIMIZE t").await.unwrap();
        let clustered = latest_snapshot(&loc).await;
        assert!(
            clustered_by(&clustered, r#"["id"]"#),
            "{:?}",
            clustered.files
        );
        // Nothing new: nothing is rewritten, nothing committed.
        s.execute("OPTIMIZE t").await.unwrap();
        assert_eq!(latest_snapshot(&loc).await.version, clustered.version);

        // A DV on a clustered file and two new files: the DV is purged alone (a tagged
        // compaction), the two new files are reordered together (untagged), nothing else moves.
        s.execute("DELETE FROM t WHERE id = 10").await.unwrap();
        s.execute("INSERT INTO t SELECT value, 'n' FROM range(300, 350)")
            .await
            .unwrap();
        s.execute("INSERT INTO t SELECT value, 'n' FROM range(350, 400)")
            .await
            .unwrap();
        let before = latest_snapshot(&loc).await;
        let with_dv: Vec<String> = before
            .files
            .iter()
            .filter(|f| f.deletion_vector.is_some())
            .map(|f| f.path.clone())
            .collect();
        assert_eq!(with_dv.len(), 1);
        s.execute("OPTIMIZE t").await.unwrap();
        let after = latest_snapshot(&loc).await;
        assert_eq!(after.version, before.version + 1);
        let mut removed = removes(dir.path(), after.version);
        removed.sort();
        let fresh: BTreeSet<String> = paths(&before)
            .difference(&paths(&clustered))
            .filter(|p| !with_dv.contains(p))
            .cloned()
            .collect();
        assert_eq!(fresh.len(), 2, "{fresh:?}");
        let mut expected: Vec<(String, bool)> = fresh.into_iter().map(|p| (p, false)).collect();
        expected.push((with_dv[0].clone(), true));
        expected.sort();
        assert_eq!(removed, expected);
        assert_eq!(
            paths(&before).difference(&paths(&after)).count(),
            3,
            "only the purged file and the two new files are rewritten"
        );
        assert!(after.files.iter().all(|f| f.deletion_vector.is_none()));
        assert!(clustered_by(&after, r#"["id"]"#));
        let sum: i64 = (0..400).sum::<i64>() - 10;
        assert_eq!(
            rows(&s, "SELECT count(*), sum(id) FROM t").await,
            vec![format!("399|{sum}")]
        );
        s.execute("OPTIMIZE t").await.unwrap();
        assert_eq!(latest_snapshot(&loc).await.version, after.version);

        // New clustering columns: every file is clustered again, by them.
        s.execute("ALTER TABLE t CLUSTER BY (v)").await.unwrap();
        s.execute("OPTIMIZE t").await.unwrap();
        let reclustered = latest_snapshot(&loc).await;
        assert!(clustered_by(&reclustered, r#"["v"]"#));
        assert!(paths(&reclustered).is_disjoint(&paths(&after)));
        assert_eq!(
            rows(&s, "SELECT count(*), sum(id) FROM t").await,
            vec![format!("399|{sum}")]
        );
    });
}

/// A reordering OPTIMIZE cuts its outputs at the table's target file size (before, a partition's
/// reordered rows were one batch, so one output however large), each a slice of the key order.
#[test]
fn a_reordering_optimize_cuts_outputs_at_the_target_size() {
    let loc = "memory://cluster-target/t";
    let mut s = SqlSession::new(Env::deterministic(32), ConflictConfig::default());
    s.register("t", loc);
    rt().block_on(async {
        s.execute(
            "CREATE TABLE t (id BIGINT NOT NULL, v BIGINT) CLUSTER BY (id) \
             TBLPROPERTIES ('delta.targetFileSize' = '1000000')",
        )
        .await
        .unwrap();
        insert_out_of_order(&s, "value * 2", 100_000).await;
        s.execute("OPTIMIZE t").await.unwrap();
        let snap = latest_snapshot(loc).await;
        // 300,000 rows of two BIGINTs are 4.8 MB in memory, chunks of 65,536 rows 1 MB each.
        assert!(snap.files.len() >= 3, "{} outputs", snap.files.len());
        assert!(clustered_by(&snap, r#"["id"]"#));
        let mut ranges: Vec<(i64, i64)> = snap
            .files
            .iter()
            .map(|f| {
                let st = delta_rlc_protocol::stats::FileStats::parse(f.stats.as_deref().unwrap())
                    .unwrap();
                (
                    st.min_values["id"].as_i64().unwrap(),
                    st.max_values["id"].as_i64().unwrap(),
                )
            })
            .collect();
        ranges.sort();
        // The curve orders by rank buckets, so neighbouring outputs may share an edge key, but
        // their ranges advance: each output is a slice of the key order, not a sample of it.
        assert!(
            ranges
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1 && w[1].0 + 8 > w[0].1),
            "{ranges:?}"
        );
        assert_eq!(
            rows(&s, "SELECT count(*), sum(v) FROM t").await,
            vec![format!("300000|{}", (0..300_000i64).sum::<i64>() * 2)]
        );
    });
}

/// First-row ids of the table in file order (the order a reader sees rows of one file).
async fn file_orders(loc: &str) -> Vec<(String, Option<String>)> {
    latest_snapshot(loc)
        .await
        .files
        .iter()
        .map(|f| {
            (
                f.path.clone(),
                f.tags
                    .as_ref()
                    .and_then(|t| t.get("ZCUBE_ZORDER_BY"))
                    .cloned()
                    .flatten(),
            )
        })
        .collect()
}

/// An explicit ZORDER BY rewrites a one-file partition ordered by other columns, tags its output
/// with the columns, and skips only a file already z-ordered by the same columns (a DV or another
/// column list makes it fresh again).
#[test]
fn zorder_rewrites_files_ordered_by_other_columns() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(37), ConflictConfig::default());
    s.register("t", &loc);
    rt().block_on(async {
        s.execute("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT)")
            .await
            .unwrap();
        // One file whose rows are in neither id nor v order.
        s.execute("INSERT INTO t SELECT (value * 37) % 200, (value * 91) % 200 FROM range(0, 200)")
            .await
            .unwrap();
        let v1 = latest_snapshot(&loc).await.version;
        s.execute("OPTIMIZE t ZORDER BY (v)").await.unwrap();
        let by_v = file_orders(&loc).await;
        assert_eq!(
            latest_snapshot(&loc).await.version,
            v1 + 1,
            "one file is rewritten"
        );
        assert_eq!(by_v.len(), 1);
        assert_eq!(by_v[0].1.as_deref(), Some(r#"["v"]"#));
        let v_order = rows(&s, "SELECT v FROM t").await;
        // The same columns again: settled, nothing committed.
        s.execute("OPTIMIZE t ZORDER BY (v)").await.unwrap();
        assert_eq!(latest_snapshot(&loc).await.version, v1 + 1);
        // Other columns: the one file is rewritten again, now tagged by id.
        s.execute("OPTIMIZE t ZORDER BY (id)").await.unwrap();
        let by_id = file_orders(&loc).await;
        assert_eq!(latest_snapshot(&loc).await.version, v1 + 2);
        assert_ne!(by_id[0].0, by_v[0].0);
        assert_eq!(by_id[0].1.as_deref(), Some(r#"["id"]"#));
        let ids = first_i64s(&s.execute("SELECT id FROM t").await.unwrap().batches);
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted, "one z-ordered column: rows in id order");
        // A deletion vector on the settled file makes it fresh: purged and re-tagged.
        s.execute("DELETE FROM t WHERE id = 5").await.unwrap();
        let before = latest_snapshot(&loc).await.version;
        s.execute("OPTIMIZE t ZORDER BY (id)").await.unwrap();
        let after = latest_snapshot(&loc).await;
        assert_eq!(after.version, before + 1);
        assert!(after.files.iter().all(|f| f.deletion_vector.is_none()));
        assert_eq!(file_orders(&loc).await[0].1.as_deref(), Some(r#"["id"]"#));
        assert_eq!(rows(&s, "SELECT count(*) FROM t").await, vec!["199"]);
        assert_eq!(v_order.len(), 200);
    });
}
