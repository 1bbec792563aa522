//! Soundness of every append tier: whenever some live row of a winner file satisfies a read
//! predicate, no tier clears that file (random tables, predicates, files and deletion vectors).

use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::{Array, BooleanArray};
use datafusion::common::DFSchema;
use datafusion::prelude::SessionContext;
use delta_rlc_engine::arrow_conv::table_arrow_schema;
use delta_rlc_engine::conflict::tiers::{append_tiers, TierContext};
use delta_rlc_engine::conflict::{ConflictConfig, WinningCommit};
use delta_rlc_engine::env::Env;
use delta_rlc_engine::scan::{read_file, FileReadOptions};
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::txn::{split_predicate, ReadSet};
use delta_rlc_engine::DeltaTable;
use proptest::prelude::*;

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
                let tctx = TierContext::new(&base, &table.store, &read_set, &[], &config, &winner);
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
