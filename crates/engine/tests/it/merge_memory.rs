//! MERGE under a memory limit: the source spills to disk, the join sort-merges with spilling sorts,
//! the key sets past their budget are declined (a coarser read, a full target scan). The rows
//! must be exactly those of the same MERGE without a limit — for every clause mix, with deletion
//! vectors and with rewrites — and a source that matches a target row twice still fails.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;

use crate::common::{first_i64s, rt, sorted_rows};

const TARGET_ROWS: i64 = 120_000;

/// A MERGE source of 900,000 rows (about 15 MB decoded): past a quarter of a 48 MiB limit, so it
/// spills, and over a third of the join's 24 MiB share, so the join sort-merges. (DataFusion's
/// external sorts need working memory: with rows or targets much larger than the limit allows,
/// a MERGE fails with "resources exhausted" — cleanly, nothing committed — rather than spill.)
const SOURCE: &str = "(SELECT value * 2 AS id, value AS v FROM range(30000, 930000))";

const LIMIT: usize = 48 << 20;

fn session(limit: Option<usize>) -> SqlSession {
    let env = Env {
        memory_limit: limit,
        ..Env::deterministic(11)
    };
    SqlSession::new(env, ConflictConfig::default())
}

/// Runs `merge` (with `SRC` for the source) on a fresh table; returns its rows, the MERGE's
/// affected rows and events (name, fields).
async fn run(
    limit: Option<usize>,
    dvs: bool,
    merge: &str,
    tag: &str,
) -> (Vec<String>, u64, Vec<(String, serde_json::Value)>) {
    let loc = format!("memory://merge-memory-{tag}-{dvs}-{}/t", limit.is_some());
    let mut s = session(limit);
    s.register("t", &loc);
    s.execute(&format!(
        "CREATE TABLE t (id BIGINT, v BIGINT, s STRING) TBLPROPERTIES ('delta.enableDeletionVectors' = '{dvs}')"
    ))
    .await
    .unwrap();
    for part in 0..3 {
        let (lo, hi) = (part * TARGET_ROWS / 3, (part + 1) * TARGET_ROWS / 3);
        s.execute(&format!(
            "INSERT INTO t SELECT value, value * 7, CAST(value AS STRING) FROM range({lo}, {hi})"
        ))
        .await
        .unwrap();
    }
    let out = s
        .execute(&merge.replace("SRC", SOURCE))
        .await
        .unwrap_or_else(|e| panic!("{tag} (limit {limit:?}, dvs {dvs}): {e}"));
    let commit = out.commit.expect("the MERGE commits");
    let events = commit
        .events
        .iter()
        .map(|e| {
            (
                e.name.to_string(),
                serde_json::Value::Object(e.fields.clone()),
            )
        })
        .collect();
    let rows = sorted_rows(&s.execute("SELECT id, v, s FROM t").await.unwrap().batches);
    (rows, commit.affected_rows.unwrap_or(0), events)
}

#[test]
fn merge_under_a_memory_limit_spills_and_writes_the_same_rows() {
    let merges = [
        (
            "upsert",
            "MERGE INTO t USING SRC s ON t.id = s.id \
             WHEN MATCHED THEN UPDATE SET v = s.v, s = 'u' WHEN NOT MATCHED THEN INSERT (id, v, s) VALUES (s.id, s.v, 'i')",
        ),
        (
            "delete-and-nmbs",
            "MERGE INTO t USING SRC s ON t.id = s.id \
             WHEN MATCHED AND s.v % 3 = 0 THEN DELETE \
             WHEN NOT MATCHED BY SOURCE AND t.id < 100 THEN UPDATE SET v = -1",
        ),
        (
            "all-kinds",
            "MERGE INTO t USING SRC s ON t.id = s.id AND t.v >= 0 \
             WHEN MATCHED AND s.v % 2 = 0 THEN UPDATE SET v = t.v + s.v \
             WHEN MATCHED THEN DELETE \
             WHEN NOT MATCHED AND s.v % 5 = 0 THEN INSERT (id, v, s) VALUES (s.id, s.v, 'n') \
             WHEN NOT MATCHED BY SOURCE AND t.id % 1000 = 0 THEN DELETE",
        ),
    ];
    rt().block_on(async {
        for dvs in [true, false] {
            for (tag, merge) in merges {
                let (free_rows, free_n, free_events) = run(None, dvs, merge, tag).await;
                let (limited_rows, limited_n, events) = run(Some(LIMIT), dvs, merge, tag).await;
                assert!(free_n > 1000, "{tag}: the MERGE changes rows ({free_n})");
                assert_eq!(limited_n, free_n, "{tag} (dvs {dvs}): affected rows");
                assert_eq!(limited_rows.len(), free_rows.len(), "{tag} (dvs {dvs})");
                assert!(limited_rows == free_rows, "{tag} (dvs {dvs}): rows differ");
                let named = |events: &[(String, serde_json::Value)], name: &str| {
                    events
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, f)| f.clone())
                };
                let join = named(&events, "delta.dml.merge.join").expect("join event");
                assert_eq!(join["algorithm"], "sortMerge", "{tag}");
                assert_eq!(join["sourceSpilled"], true, "{tag}");
                assert_eq!(join["sourceRows"], 900000, "{tag}");
                let free_join = named(&free_events, "delta.dml.merge.join").expect("join event");
                assert_eq!(free_join["algorithm"], "hash", "{tag}");
                assert_eq!(free_join["sourceSpilled"], false, "{tag}");
            }
        }
    });
}

#[test]
fn a_spilled_source_matching_a_row_twice_still_fails() {
    rt().block_on(async {
        let merge =
            "MERGE INTO t USING (SELECT id, v FROM SRC x UNION ALL SELECT 100000 AS id, 1 AS v) s \
                     ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v";
        let loc = "memory://merge-memory-twice/t";
        let mut s = session(Some(LIMIT));
        s.register("t", loc);
        s.execute("CREATE TABLE t (id BIGINT, v BIGINT)")
            .await
            .unwrap();
        s.execute("INSERT INTO t SELECT value, 0 FROM range(0, 120000)")
            .await
            .unwrap();
        let err = s
            .execute(&merge.replace("SRC", SOURCE))
            .await
            .expect_err("a target row matched twice");
        assert!(
            err.to_string().contains("multiple source rows matched"),
            "{err}"
        );
        let rows = sorted_rows(
            &s.execute("SELECT count(*), sum(v) FROM t")
                .await
                .unwrap()
                .batches,
        );
        assert_eq!(rows, vec!["120000|0"], "nothing committed");
    });
}

/// A SELECT runs in the session's memory pool as MERGE's join does: under a small limit a sort
/// spills to disk and returns every row in order, and a hash join whose build side cannot fit
/// fails with "resources exhausted" — where without a limit both simply run.
#[test]
fn select_joins_and_sorts_are_bounded_by_the_sessions_memory_limit() {
    const ROWS: i64 = 2_000_000;
    let sort = format!("SELECT value FROM range(0, {ROWS}) ORDER BY value DESC");
    let join = format!(
        "SELECT count(*) FROM range(0, {ROWS}) a JOIN (SELECT value * 3 AS v FROM range(0, {ROWS})) b ON a.value = b.v"
    );
    rt().block_on(async {
        for limit in [None, Some(8 << 20)] {
            let s = session(limit);
            let values = first_i64s(&s.execute(&sort).await.unwrap().batches);
            assert_eq!(values.len(), ROWS as usize, "limit {limit:?}");
            assert!(
                values.windows(2).all(|w| w[0] > w[1]),
                "limit {limit:?}: not sorted"
            );
            let joined = s.execute(&join).await;
            match limit {
                None => assert_eq!(
                    sorted_rows(&joined.unwrap().batches),
                    vec![((ROWS + 2) / 3).to_string()]
                ),
                Some(_) => {
                    let e = joined.unwrap_err().to_string();
                    assert!(e.contains("Resources exhausted"), "{e}");
                }
            }
        }
    });
}
