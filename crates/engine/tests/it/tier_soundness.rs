//! Soundness of every append tier: whenever some live row of a winner file satisfies a read
//! predicate, no tier clears that file (random tables, predicates, files and deletion vectors).

use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::{Array, BooleanArray};
use datafusion::common::DFSchema;
use datafusion::prelude::SessionContext;
use delta_rlc_engine::arrow_conv::table_arrow_schema;
use delta_rlc_engine::conflict::tiers::{append_tiers, delete_read_tiers, TierContext};
use delta_rlc_engine::conflict::{ConflictConfig, WinningCommit};
use delta_rlc_engine::env::Env;
use delta_rlc_engine::ops::merge::SourceRows;
use delta_rlc_engine::read_set::{split_predicate, ReadSet};
use delta_rlc_engine::scan::{read_file, FileReadOptions};
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::DeltaTable;
use proptest::prelude::*;
use std::sync::Arc;

use crate::common::rt;

static N: AtomicU64 = AtomicU64::new(0);

fn predicate() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (
            prop::sample::select(vec!["=", "<", ">", "<=", ">=", "<>"]),
            -30i64..30
        )
            .prop_map(|(op, v)| format!("x {op} {v}")),
        (2i64..5, 0i64..3).prop_map(|(m, r)| format!("x % {m} = {r}")),
        (prop::sample::select(vec!["=", "<", ">"]), "[a-d]{0,2}")
            .prop_map(|(op, v)| format!("s {op} '{v}'")),
        Just("x IS NULL".to_string()),
        (prop::sample::select(vec!["a", "b"])).prop_map(|p| format!("p = '{p}'")),
    ];
    leaf.prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) AND ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) OR ({b})")),
            inner.prop_map(|a| format!("NOT ({a})")),
        ]
    })
}

type Row = (Option<i64>, String, bool);

fn file() -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec(
        (
            proptest::option::weighted(0.9, -30i64..30),
            "[a-d]{0,2}",
            any::<bool>(),
        ),
        1..6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn no_tier_clears_a_file_with_a_matching_live_row(
        winner_files in prop::collection::vec(file(), 1..4),
        deletes in prop::collection::vec(-30i64..30, 0..3),
        preds in prop::collection::vec(predicate(), 1..3),
        partitioned in any::<bool>(),
    ) {
        let loc = format!("memory://tier-sound-{}/t", N.fetch_add(1, Ordering::SeqCst));
        let mut s = SqlSession::new(Env::deterministic(5), ConflictConfig::default());
        s.register("t", &loc);
        rt().block_on(async {
            let part = if partitioned { "PARTITIONED BY (p)" } else { "" };
            s.execute(&format!("CREATE TABLE t (x BIGINT, s STRING, p STRING) {part}")).await.unwrap();
            let base = DeltaTable::open(&loc).unwrap().snapshot(None).await.unwrap();
            for f in &winner_files {
                let vals: Vec<String> = f.iter().map(|(x, st, p)| format!("({}, '{st}', '{}')", x.map(|v| v.to_string()).unwrap_or("NULL".into()), if *p { "a" } else { "b" })).collect();
                s.execute(&format!("INSERT INTO t VALUES {}", vals.join(", "))).await.unwrap();
            }
            for d in &deletes {
                s.execute(&format!("DELETE FROM t WHERE x = {d}")).await.unwrap();
            }
            let table = DeltaTable::open(&loc).unwrap();
            let snap = table.snapshot(None).await.unwrap();
            let winner = WinningCommit { version: snap.version, commit_info: None, protocol: None, metadata: None, txns: vec![], domains: vec![], adds: snap.files.iter().cloned().map(|mut a| { a.data_change = true; a }).collect(), removes: vec![] };
            let schema = table_arrow_schema(&snap.schema);
            let df_schema = DFSchema::try_from(schema.as_ref().clone()).unwrap();
            let ctx = SessionContext::new();
            let config = ConflictConfig::default();
            for pred_sql in &preds {
                let expr = ctx.parse_sql_expr(pred_sql, &df_schema).unwrap();
                let rp = split_predicate(&expr, &snap.metadata.partition_columns, pred_sql.clone());
                let mut read_set = ReadSet::default();
                read_set.add_predicate(rp.clone());
                let findings = delta_rlc_engine::conflict::abort_reason::Findings::default();
                let tctx = TierContext::new(&base, &table.store, &read_set, &[], &config, &winner, &findings);
                let phys = ctx.create_physical_expr(expr.clone(), &df_schema).unwrap();
                // New data (dataChange=true): relocation only applies to rows already in the table.
                let cands: Vec<&delta_rlc_protocol::Add> = winner.adds.iter().collect();
                for tier in append_tiers() {
                    let cleared = tier.clear(&tctx, &rp, &cands).await;
                    for (f, c) in cands.iter().zip(cleared) {
                        if !c { continue; }
                        for b in read_file(&table.store, &snap, f, &FileReadOptions::default()).await.unwrap() {
                            let v = phys.evaluate(&b).unwrap().into_array(b.num_rows()).unwrap();
                            let v = v.as_any().downcast_ref::<BooleanArray>().unwrap();
                            let hit = (0..v.len()).any(|i| v.is_valid(i) && v.value(i));
                            assert!(!hit, "tier {} cleared {} for {pred_sql} but a live row matches", tier.name(), f.path);
                        }
                    }
                }
            }
        });
    }
}

/// A DOUBLE / DECIMAL / STRING value pool with the values equality gets wrong: both zeros, NaN,
/// infinities, NULLs, decimals of two scales, string prefixes.
const DOUBLES: &[&str] = &[
    "0.0",
    "CAST('-0.0' AS DOUBLE)",
    "'NaN'",
    "'inf'",
    "'-inf'",
    "1.5",
    "NULL",
];
const DECIMALS: &[&str] = &["0.5", "1", "1.25", "-0.5", "NULL"];
const STRINGS: &[&str] = &["''", "'a'", "'ab'", "'é'", "NULL"];

fn key_row() -> impl Strategy<Value = (usize, usize, usize)> {
    (0..DOUBLES.len(), 0..DECIMALS.len(), 0..STRINGS.len())
}

fn lit_row((d, m, s): (usize, usize, usize), d_type: &str, m_type: &str) -> String {
    format!(
        "(CAST({} AS {d_type}), CAST({} AS {m_type}), CAST({} AS STRING))",
        DOUBLES[d], DECIMALS[m], STRINGS[s]
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    /// The MERGE source-key read (pre-filter + exact key set, built as MERGE builds it, with a
    /// source typed unlike the target) is never cleared by a tier for a file holding a row the
    /// statement's own join matches (DataFusion decides "matches": -0.0 = 0.0, NaN = NaN, NULL
    /// matches nothing, decimals by value).
    #[test]
    fn no_tier_clears_a_file_the_merge_join_would_match(
        winner_files in prop::collection::vec(prop::collection::vec(key_row(), 1..5), 1..4),
        source in prop::collection::vec(key_row(), 1..4),
        key_cols in prop::sample::subsequence(vec!["d", "m", "s"], 1..=3),
        float_source in any::<bool>(),
    ) {
        let loc = format!("memory://tier-sound-keys-{}/t", N.fetch_add(1, Ordering::SeqCst));
        let mut s = SqlSession::new(Env::deterministic(6), ConflictConfig::default());
        s.register("t", &loc);
        rt().block_on(async {
            s.execute("CREATE TABLE t (d DOUBLE, m DECIMAL(10,2), s STRING)").await.unwrap();
            let base = DeltaTable::open(&loc).unwrap().snapshot(None).await.unwrap();
            for f in &winner_files {
                let vals: Vec<String> = f.iter().map(|r| lit_row(*r, "DOUBLE", "DECIMAL(10,2)")).collect();
                s.execute(&format!("INSERT INTO t VALUES {}", vals.join(", "))).await.unwrap();
            }
            let table = DeltaTable::open(&loc).unwrap();
            let snap = table.snapshot(None).await.unwrap();
            let winner = WinningCommit { version: snap.version, commit_info: None, protocol: None, metadata: None, txns: vec![], domains: vec![], adds: snap.files.iter().cloned().map(|mut a| { a.data_change = true; a }).collect(), removes: vec![] };
            // The source, typed as a MERGE source might be: FLOAT against DOUBLE, a wider decimal.
            let d_type = if float_source { "FLOAT" } else { "DOUBLE" };
            let src_rows: Vec<String> = source.iter().map(|r| lit_row(*r, d_type, "DECIMAL(12,4)")).collect();
            let ctx = SessionContext::new();
            let src_sql = format!("SELECT * FROM (VALUES {}) AS src(d, m, s)", src_rows.join(", "));
            let src_df = ctx.sql(&src_sql).await.unwrap();
            let src_schema = src_df.schema().clone();
            let src_batches = src_df.collect().await.unwrap();
            let keys: Vec<(String, String)> = key_cols.iter().map(|c| (c.to_string(), c.to_string())).collect();
            let schema = table_arrow_schema(&snap.schema);
            let src_dfs = DFSchema::try_from_qualified_schema("s", src_schema.as_arrow()).unwrap();
            let read = delta_rlc_engine::ops::merge_keys::target_read(
                &keys, Vec::new(), schema.as_ref(), &SourceRows::from_batches(Arc::new(src_schema.as_arrow().clone()), src_batches), &src_dfs, "s", 10_000, usize::MAX,
            ).unwrap();
            let expr = read.predicate.clone().unwrap_or(datafusion::logical_expr::lit(true));
            let mut rp = split_predicate(&expr, &[], "source keys".into());
            rp.exact_keys = read.keys.clone();
            let mut read_set = ReadSet::default();
            read_set.add_predicate(rp.clone());
            let config = ConflictConfig::default();
            let findings = delta_rlc_engine::conflict::abort_reason::Findings::default();
            let tctx = TierContext::new(&base, &table.store, &read_set, &[], &config, &winner, &findings);
            let on: Vec<String> = key_cols.iter().map(|c| format!("f.{c} = src.{c}")).collect();
            let cands: Vec<&delta_rlc_protocol::Add> = winner.adds.iter().collect();
            for tier in append_tiers() {
                let cleared = tier.clear(&tctx, &rp, &cands).await;
                for (f, c) in cands.iter().zip(cleared) {
                    if !c { continue; }
                    // The statement's own answer: does the join match a live row of this file?
                    let rows = read_file(&table.store, &snap, f, &FileReadOptions::default()).await.unwrap();
                    let jctx = SessionContext::new();
                    jctx.register_batch("f", arrow::compute::concat_batches(&rows[0].schema(), &rows).unwrap()).unwrap();
                    jctx.register_table("src", jctx.sql(&src_sql).await.unwrap().into_view()).unwrap();
                    let n = jctx
                        .sql(&format!("SELECT count(*) AS n FROM f JOIN src ON {}", on.join(" AND ")))
                        .await.unwrap().collect().await.unwrap();
                    let n = n[0].column(0).as_any().downcast_ref::<arrow::array::Int64Array>().unwrap().value(0);
                    assert_eq!(n, 0, "tier {} cleared {} but the join matches {n} row(s) (keys {key_cols:?}, source {src_rows:?})", tier.name(), f.path);
                }
            }
        });
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    /// Soundness of every delete/read tier: a winner's DELETEs (DV updates, and whole-file
    /// removals when every row goes) remove rows from files the loser read; whenever some removed
    /// row — live in the loser's snapshot, gone after the winner — satisfies a read predicate, no
    /// tier clears that remove. Rows carry a unique `id`, so "removed" is computed independently of
    /// the tiers, from the two snapshots' live rows.
    #[test]
    fn no_delete_read_tier_clears_a_remove_of_a_matching_row(
        files in prop::collection::vec(file(), 1..4),
        deletes in prop::collection::vec(predicate(), 1..3),
        preds in prop::collection::vec(predicate(), 1..3),
        partitioned in any::<bool>(),
    ) {
        let loc = format!("memory://tier-sound-dr-{}/t", N.fetch_add(1, Ordering::SeqCst));
        let mut s = SqlSession::new(Env::deterministic(7), ConflictConfig::default());
        s.register("t", &loc);
        rt().block_on(async {
            let part = if partitioned { "PARTITIONED BY (p)" } else { "" };
            s.execute(&format!("CREATE TABLE t (x BIGINT, s STRING, p STRING, id BIGINT) {part}")).await.unwrap();
            let mut id = 0;
            for f in &files {
                let vals: Vec<String> = f.iter().map(|(x, st, p)| {
                    id += 1;
                    format!("({}, '{st}', '{}', {id})", x.map(|v| v.to_string()).unwrap_or("NULL".into()), if *p { "a" } else { "b" })
                }).collect();
                s.execute(&format!("INSERT INTO t VALUES {}", vals.join(", "))).await.unwrap();
            }
            let table = DeltaTable::open(&loc).unwrap();
            let base = table.snapshot(None).await.unwrap();
            for d in &deletes {
                s.execute(&format!("DELETE FROM t WHERE {d}")).await.unwrap();
            }
            let after = DeltaTable::open(&loc).unwrap().snapshot(None).await.unwrap();
            // The winner as one commit: a remove of every base file that changed (with its
            // read-time DV) and the re-add of those still live with their new DV.
            let changed: Vec<&delta_rlc_protocol::Add> = base.files.iter()
                .filter(|f| after.file(&f.path).is_none_or(|a| a.deletion_vector != f.deletion_vector))
                .collect();
            let removes: Vec<delta_rlc_protocol::Remove> = changed.iter().map(|f| f.to_remove(1, true)).collect();
            let adds: Vec<delta_rlc_protocol::Add> = changed.iter().filter_map(|f| after.file(&f.path).cloned()).collect();
            let winner = WinningCommit { version: after.version, commit_info: None, protocol: None, metadata: None, txns: vec![], domains: vec![], adds, removes };
            let schema = table_arrow_schema(&base.schema);
            let df_schema = DFSchema::try_from(schema.as_ref().clone()).unwrap();
            let ctx = SessionContext::new();
            let config = ConflictConfig::default();
            let live_ids = |b: &arrow::array::RecordBatch| -> Vec<i64> {
                let c = b.column_by_name("id").unwrap().as_any().downcast_ref::<arrow::array::Int64Array>().unwrap().clone();
                (0..c.len()).map(|i| c.value(i)).collect()
            };
            for pred_sql in &preds {
                let expr = ctx.parse_sql_expr(pred_sql, &df_schema).unwrap();
                let rp = split_predicate(&expr, &base.metadata.partition_columns, pred_sql.clone());
                let mut read_set = ReadSet::default();
                read_set.add_predicate(rp);
                let findings = delta_rlc_engine::conflict::abort_reason::Findings::default();
                let tctx = TierContext::new(&base, &table.store, &read_set, &[], &config, &winner, &findings);
                let phys = ctx.create_physical_expr(expr.clone(), &df_schema).unwrap();
                let refs: Vec<&delta_rlc_protocol::Remove> = winner.removes.iter().collect();
                for tier in delete_read_tiers() {
                    let cleared = tier.clear(&tctx, &refs).await;
                    for (r, c) in refs.iter().zip(cleared) {
                        if !c { continue; }
                        let mut still: Vec<i64> = Vec::new();
                        if let Some(a) = after.file(&r.path) {
                            for b in read_file(&table.store, &after, a, &FileReadOptions::default()).await.unwrap() {
                                still.extend(live_ids(&b));
                            }
                        }
                        let pre = base.file(&r.path).unwrap();
                        for b in read_file(&table.store, &base, pre, &FileReadOptions::default()).await.unwrap() {
                            let v = phys.evaluate(&b).unwrap().into_array(b.num_rows()).unwrap();
                            let v = v.as_any().downcast_ref::<BooleanArray>().unwrap();
                            for (i, row_id) in live_ids(&b).into_iter().enumerate() {
                                let removed = !still.contains(&row_id);
                                assert!(!(removed && v.is_valid(i) && v.value(i)),
                                    "tier {} cleared the remove of {} for {pred_sql} but removed row {row_id} matches", tier.name(), r.path);
                            }
                        }
                    }
                }
            }
        });
    }
}
