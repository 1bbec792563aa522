//! Model test: random INSERT / DELETE / UPDATE / MERGE sequences applied to the engine and to a plain
//! in-memory model must give the same rows after every step, with deletion vectors on and off.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use proptest::prelude::*;

use crate::common::{latest_snapshot, rt, sorted_rows};

static N: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<(i64, bool)>),
    Delete {
        modulo: i64,
        rem: i64,
    },
    DeletePartition(bool),
    Update {
        below: i64,
        add: i64,
    },
    Merge {
        keys: Vec<(i64, i64)>,
        delete_above: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        prop::collection::vec((0i64..50, any::<bool>()), 1..6).prop_map(Op::Insert),
        (2i64..5, 0i64..2).prop_map(|(modulo, rem)| Op::Delete { modulo, rem }),
        any::<bool>().prop_map(Op::DeletePartition),
        (0i64..60, -5i64..5).prop_map(|(below, add)| Op::Update { below, add }),
        (prop::collection::vec((0i64..30, 0i64..50), 1..5), 20i64..60)
            .prop_map(|(keys, delete_above)| Op::Merge { keys, delete_above }),
    ]
}

type Model = BTreeMap<i64, (i64, &'static str)>;

fn part(b: bool) -> &'static str {
    if b {
        "a"
    } else {
        "b"
    }
}

fn apply(model: &mut Model, next_key: &mut i64, op: &Op) -> String {
    match op {
        Op::Insert(rows) => {
            let mut vals = Vec::new();
            for (v, p) in rows {
                model.insert(*next_key, (*v, part(*p)));
                vals.push(format!("({}, {v}, '{}')", *next_key, part(*p)));
                *next_key += 1;
            }
            format!("INSERT INTO t VALUES {}", vals.join(", "))
        }
        Op::Delete { modulo, rem } => {
            model.retain(|_, (v, _)| *v % *modulo != *rem && *v % *modulo != -*rem);
            format!("DELETE FROM t WHERE v % {modulo} = {rem} OR v % {modulo} = -{rem}")
        }
        Op::DeletePartition(p) => {
            model.retain(|_, (_, q)| *q != part(*p));
            format!("DELETE FROM t WHERE p = '{}'", part(*p))
        }
        Op::Update { below, add } => {
            for (v, _) in model.values_mut() {
                if *v < *below {
                    *v += add;
                }
            }
            format!("UPDATE t SET v = v + {add} WHERE v < {below}")
        }
        Op::Merge { keys, delete_above } => {
            let mut dedup: BTreeMap<i64, i64> = BTreeMap::new();
            for (k, v) in keys {
                dedup.insert(*k, *v);
            }
            for (k, v) in &dedup {
                match model.get(k).copied() {
                    Some(_) if *v > *delete_above => {
                        model.remove(k);
                    }
                    Some((_, p)) => {
                        model.insert(*k, (*v, p));
                    }
                    None => {
                        model.insert(*k, (*v, "a"));
                    }
                }
            }
            *next_key = (*next_key).max(dedup.keys().max().copied().unwrap_or(0) + 1);
            let rows: Vec<String> = dedup.iter().map(|(k, v)| format!("({k}, {v})")).collect();
            format!(
                "MERGE INTO t USING (SELECT * FROM (VALUES {}) AS x(k, v)) s ON t.k = s.k \
                 WHEN MATCHED AND s.v > {delete_above} THEN DELETE \
                 WHEN MATCHED THEN UPDATE SET v = s.v \
                 WHEN NOT MATCHED THEN INSERT (k, v, p) VALUES (s.k, s.v, 'a')",
                rows.join(", ")
            )
        }
    }
}

fn run(ops: &[Op], dvs: bool, partitioned: bool) {
    let loc = format!("memory://dml-model-{}/t", N.fetch_add(1, Ordering::SeqCst));
    let mut s = SqlSession::new(Env::deterministic(3), ConflictConfig::default());
    s.register("t", &loc);
    let mut model = Model::new();
    let mut next_key = 0i64;
    rt().block_on(async {
        let part_clause = if partitioned { "PARTITIONED BY (p)" } else { "" };
        s.execute(&format!(
            "CREATE TABLE t (k BIGINT NOT NULL, v BIGINT, p STRING) {part_clause} TBLPROPERTIES ('delta.enableDeletionVectors' = '{dvs}')"
        ))
        .await
        .unwrap();
        for op in ops {
            let sql = apply(&mut model, &mut next_key, op);
            s.execute(&sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            let got = sorted_rows(&s.execute("SELECT k, v, p FROM t").await.unwrap().batches);
            let mut want: Vec<String> = model.iter().map(|(k, (v, p))| format!("{k}|{v}|{p}")).collect();
            want.sort();
            assert_eq!(got, want, "after {sql} (dvs={dvs}, partitioned={partitioned})");
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn dml_matches_model(ops in prop::collection::vec(op(), 1..9), dvs in any::<bool>(), partitioned in any::<bool>()) {
        run(&ops, dvs, partitioned);
    }
}

#[test]
fn dml_writes_dvs_only_when_enabled() {
    for dvs in [true, false] {
        let loc = format!("memory://dml-dv-check-{dvs}/t");
        let mut s = SqlSession::new(Env::deterministic(3), ConflictConfig::default());
        s.register("t", &loc);
        rt().block_on(async {
            s.execute(&format!(
                "CREATE TABLE t (k BIGINT) TBLPROPERTIES ('delta.enableDeletionVectors' = '{dvs}')"
            ))
            .await
            .unwrap();
            s.execute("INSERT INTO t SELECT value FROM range(0, 100)")
                .await
                .unwrap();
            let out = s.execute("DELETE FROM t WHERE k % 10 = 0").await.unwrap();
            assert_eq!(out.commit.unwrap().affected_rows, Some(10));
            let snap = latest_snapshot(&loc).await;
            assert_eq!(snap.files.len(), 1);
            let f = &snap.files[0];
            if dvs {
                assert_eq!(f.deletion_vector.as_ref().map(|d| d.cardinality), Some(10));
                assert!(f
                    .stats
                    .as_deref()
                    .unwrap()
                    .contains("\"tightBounds\":false"));
            } else {
                assert!(f.deletion_vector.is_none());
            }
            // A second delete on the same file unions the DV.
            s.execute("DELETE FROM t WHERE k % 10 = 1").await.unwrap();
            let snap = latest_snapshot(&loc).await;
            if dvs {
                assert_eq!(
                    snap.files[0]
                        .deletion_vector
                        .as_ref()
                        .map(|d| d.cardinality),
                    Some(20)
                );
            }
            assert_eq!(
                sorted_rows(&s.execute("SELECT count(*) FROM t").await.unwrap().batches),
                vec!["80"]
            );
        });
    }
}

#[test]
fn a_statement_writes_the_dvs_of_all_its_files_into_one_dv_file() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("t").to_str().unwrap().to_string();
    let mut s = SqlSession::new(Env::deterministic(5), ConflictConfig::default());
    s.register("t", &loc);
    let dv_files = || {
        std::fs::read_dir(&loc)
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_str().unwrap().starts_with("deletion_vector_")
            })
            .count()
    };
    rt().block_on(async {
        s.execute("CREATE TABLE t (k BIGINT)").await.unwrap();
        for f in 0..3 {
            s.execute(&format!(
                "INSERT INTO t SELECT value FROM range({}, {})",
                f * 100,
                f * 100 + 100
            ))
            .await
            .unwrap();
        }
        let out = s.execute("DELETE FROM t WHERE k % 10 = 0").await.unwrap();
        assert_eq!(out.commit.unwrap().affected_rows, Some(30));
        assert_eq!(dv_files(), 1);
        let snap = latest_snapshot(&loc).await;
        let dvs: Vec<_> = snap
            .files
            .iter()
            .map(|f| f.deletion_vector.clone().unwrap())
            .collect();
        assert_eq!(dvs.len(), 3);
        assert!(dvs
            .iter()
            .all(|d| d.path_or_inline_dv == dvs[0].path_or_inline_dv));
        let mut offsets: Vec<_> = dvs.iter().map(|d| d.offset.unwrap()).collect();
        offsets.sort();
        offsets.dedup();
        assert_eq!(offsets.len(), 3, "each DV at its own offset");
        // The next statement reads each DV from its offset and unions it with the new rows; an
        // UPDATE's DVs are batched the same way.
        s.execute("DELETE FROM t WHERE k % 10 = 1").await.unwrap();
        s.execute("UPDATE t SET k = k + 1000 WHERE k % 10 = 2")
            .await
            .unwrap();
        assert_eq!(dv_files(), 3);
        let snap = latest_snapshot(&loc).await;
        let cards: Vec<_> = snap
            .files
            .iter()
            .filter_map(|f| f.deletion_vector.as_ref().map(|d| d.cardinality))
            .collect();
        assert_eq!(cards, vec![30, 30, 30]);
        let count = |sql: &'static str| {
            let s = &s;
            async move { sorted_rows(&s.execute(sql).await.unwrap().batches) }
        };
        assert_eq!(count("SELECT count(*) FROM t").await, vec!["240"]);
        assert_eq!(
            count("SELECT count(*) FROM t WHERE k % 10 IN (0, 1) OR (k % 10 = 2 AND k < 1000)")
                .await,
            vec!["0"]
        );
        assert_eq!(
            count("SELECT count(*) FROM t WHERE k >= 1000").await,
            vec!["30"]
        );
    });
}

/// A merge-on-read MERGE reads only the target rows whose keys occur in the source; removing
/// them must still count the file's other live rows (a file is removed whole only when all its live
/// rows go). Twins: a file whose every row matches is removed, and a float key (not probed) takes
/// the full read with the same outcome.
#[test]
fn merge_with_dvs_reads_only_rows_whose_keys_occur_in_the_source() {
    for key_type in ["BIGINT", "DOUBLE"] {
        let loc = format!("memory://dml-merge-probe-{key_type}/t");
        let mut s = SqlSession::new(Env::deterministic(9), ConflictConfig::default());
        s.register("t", &loc);
        rt().block_on(async {
            s.execute(&format!("CREATE TABLE t (k {key_type} NOT NULL, v BIGINT)"))
                .await
                .unwrap();
            for f in 0..3 {
                s.execute(&format!(
                    "INSERT INTO t SELECT CAST(value AS {key_type}), 0 FROM range({}, {})",
                    f * 100,
                    f * 100 + 100
                ))
                .await
                .unwrap();
            }
            s.execute(&format!(
                "INSERT INTO t VALUES (CAST(1000 AS {key_type}), 0), (CAST(1001 AS {key_type}), 0)"
            ))
            .await
            .unwrap();
            // Deletes 5, 150 and both rows of the small file; updates 151; inserts 999.
            let out = s
                .execute(&format!(
                    "MERGE INTO t USING (SELECT CAST(k AS {key_type}) AS k, v FROM (VALUES \
                     (5, -1), (150, -1), (151, 7), (999, 9), (1000, -1), (1001, -1)) AS x(k, v)) s \
                     ON t.k = s.k WHEN MATCHED AND s.v < 0 THEN DELETE \
                     WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
                ))
                .await
                .unwrap();
            let commit = out.commit.unwrap();
            assert_eq!(commit.affected_rows, Some(6));
            let probe = commit
                .events
                .iter()
                .find(|e| e.name == "delta.dml.merge.keyProbeRead");
            // Float keys are probed too, by the shared key equality (-0.0 = 0.0).
            let e = probe.expect("the key probe read the target");
            assert_eq!(e.fields["numFilesWithKeys"], 3, "{key_type}");
            assert_eq!(e.fields["numTargetRowsRead"], 5, "{key_type}");
            let snap = latest_snapshot(&loc).await;
            let mut cards: Vec<i64> = snap
                .files
                .iter()
                .filter_map(|f| f.deletion_vector.as_ref().map(|d| d.cardinality))
                .collect();
            cards.sort();
            assert_eq!(
                cards,
                vec![1, 2],
                "{key_type}: DVs on the first two files only"
            );
            assert_eq!(
                snap.files.len(),
                4,
                "{key_type}: 3 data files + the new rows; small file gone"
            );
            let rows = |sql: String| {
                let s = &s;
                async move { sorted_rows(&s.execute(&sql).await.unwrap().batches) }
            };
            assert_eq!(rows("SELECT count(*) FROM t".into()).await, vec!["299"]);
            assert_eq!(
                rows("SELECT CAST(k AS BIGINT), v FROM t WHERE v <> 0".into()).await,
                vec!["151|7", "999|9"]
            );
            assert_eq!(
                rows("SELECT count(*) FROM t WHERE k IN (5, 150, 1000, 1001)".into()).await,
                vec!["0"]
            );
        });
    }
}
