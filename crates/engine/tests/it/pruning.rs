//! Pruning soundness: a file holding a row that satisfies the predicate is never pruned.

use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::{Array, BooleanArray};
use datafusion::common::DFSchema;
use datafusion::prelude::SessionContext;
use delta_rlc_engine::arrow_conv::table_arrow_schema;
use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::scan::{
    prune_files, prune_with_stats, read_file, FileReadOptions, FileStatsPruning, StatsSubset,
};
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::DeltaTable;
use delta_rlc_protocol::actions::Add;
use proptest::prelude::*;

use crate::common::{rt, sorted_rows};

static N: AtomicU64 = AtomicU64::new(0);

fn value_sql(v: &Option<i64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "NULL".into())
}

fn str_sql(v: &Option<String>) -> String {
    v.as_ref()
        .map(|s| format!("'{s}'"))
        .unwrap_or_else(|| "NULL".into())
}

fn predicate() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (
            prop::sample::select(vec!["=", "<", "<=", ">", ">=", "<>"]),
            -20i64..20
        )
            .prop_map(|(op, v)| format!("x {op} {v}")),
        (prop::sample::select(vec!["=", "<", ">"]), "[a-e]{0,2}")
            .prop_map(|(op, v)| format!("s {op} '{v}'")),
        (-20i64..20, 0i64..10).prop_map(|(a, w)| format!("x BETWEEN {a} AND {}", a + w)),
        prop::collection::vec(-20i64..20, 1..4).prop_map(|v| format!(
            "x IN ({})",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Just("x IS NULL".to_string()),
        Just("s IS NOT NULL".to_string()),
        (prop::sample::select(vec!["a", "b", "c", "d"])).prop_map(|p| format!("p = '{p}'")),
        "[a-e]{1,2}".prop_map(|v| format!("s LIKE '{v}%'")),
    ];
    leaf.prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) AND ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) OR ({b})")),
            inner.prop_map(|a| format!("NOT ({a})")),
        ]
    })
}

type Row = (Option<i64>, Option<String>, String);

fn rows() -> impl Strategy<Value = Vec<Vec<Row>>> {
    let row = (
        proptest::option::weighted(0.85, -20i64..20),
        proptest::option::weighted(0.85, "[a-e]{0,3}"),
        prop::sample::select(vec!["a".to_string(), "b".to_string(), "c".to_string()]),
    );
    prop::collection::vec(prop::collection::vec(row, 1..6), 1..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn pruning_never_drops_a_matching_file(files in rows(), preds in prop::collection::vec(predicate(), 1..4)) {
        let loc = format!("memory://prune-{}/t", N.fetch_add(1, Ordering::SeqCst));
        let s = SqlSession::new(Env::deterministic(1), ConflictConfig::default());
        rt().block_on(async {
            s.execute(&format!("CREATE TABLE '{loc}' (x BIGINT, s STRING, p STRING) PARTITIONED BY (p)")).await.unwrap();
            for f in &files {
                let values: Vec<String> = f.iter().map(|(x, st, p)| format!("({}, {}, '{p}')", value_sql(x), str_sql(st))).collect();
                s.execute(&format!("INSERT INTO '{loc}' VALUES {}", values.join(", "))).await.unwrap();
            }
            let table = DeltaTable::open(&loc).unwrap();
            let snap = table.snapshot(None).await.unwrap();
            let schema = table_arrow_schema(&snap.schema);
            let df_schema = DFSchema::try_from(schema.as_ref().clone()).unwrap();
            let ctx = SessionContext::new();
            // One shared pruner for every predicate (as tier 1 uses it), asked for a reordered subset.
            let shared = FileStatsPruning::new(&snap, &snap.files);
            let subset: Vec<&Add> = snap.files.iter().rev().step_by(2).collect();
            let positions = shared.positions_of(&subset).expect("subset of the pruner's own files");
            for pred in &preds {
                let expr = ctx.parse_sql_expr(pred, &df_schema).unwrap();
                let keep = prune_files(&snap, &snap.files, &expr).unwrap();
                let owned: Vec<Add> = subset.iter().map(|a| (*a).clone()).collect();
                assert_eq!(
                    prune_with_stats(&snap, &StatsSubset::new(&shared, positions.clone()), &expr).unwrap(),
                    prune_files(&snap, &owned, &expr).unwrap(),
                    "shared stats answered differently for {}", pred
                );
                // Copies are not the pruner's files: identity, not the path, decides.
                assert!(owned.is_empty() || shared.positions_of(&owned.iter().collect::<Vec<_>>()).is_none());
                let phys = ctx.create_physical_expr(expr.clone(), &df_schema).unwrap();
                for (f, k) in snap.files.iter().zip(keep) {
                    let mut any = false;
                    for b in read_file(&table.store, &snap, f, &FileReadOptions::default()).await.unwrap() {
                        let v = phys.evaluate(&b).unwrap().into_array(b.num_rows()).unwrap();
                        let v = v.as_any().downcast_ref::<BooleanArray>().unwrap();
                        any |= (0..v.len()).any(|i| v.is_valid(i) && v.value(i));
                    }
                    assert!(k || !any, "file {} pruned for {pred} but holds a matching row", f.path);
                }
            }
        });
    }
}

/// Which of `snap`'s files `prune_files` keeps for the predicate `sql`.
fn kept(snap: &delta_rlc_engine::snapshot::Snapshot, sql: &str) -> Vec<bool> {
    let schema = table_arrow_schema(&snap.schema);
    let df_schema = DFSchema::try_from(schema.as_ref().clone()).unwrap();
    let expr = SessionContext::new()
        .parse_sql_expr(sql, &df_schema)
        .unwrap();
    prune_files(snap, &snap.files, &expr).unwrap()
}

#[test]
fn pruning_does_prune_by_stats_and_partitions() {
    let s = SqlSession::new(Env::deterministic(1), ConflictConfig::default());
    let loc = "memory://prune-fixed/t";
    rt().block_on(async {
        s.execute(&format!(
            "CREATE TABLE '{loc}' (x BIGINT, s STRING, p STRING) PARTITIONED BY (p)"
        ))
        .await
        .unwrap();
        s.execute(&format!(
            "INSERT INTO '{loc}' VALUES (1, 'a', 'a'), (5, 'b', 'a')"
        ))
        .await
        .unwrap();
        s.execute(&format!(
            "INSERT INTO '{loc}' VALUES (10, 'c', 'b'), (20, 'd', 'b')"
        ))
        .await
        .unwrap();
        let snap = DeltaTable::open(loc).unwrap().snapshot(None).await.unwrap();
        let keep = |sql: &str| kept(&snap, sql);
        assert_eq!(keep("x > 7"), vec![false, true]);
        assert_eq!(keep("p = 'a'"), vec![true, false]);
        assert_eq!(keep("s = 'zz'"), vec![false, false]);
        assert_eq!(keep("x IS NULL"), vec![false, false]);
        assert_eq!(keep("abs(x) = 3"), vec![true, true]);
    });
}

/// Boolean min/max in a file's stats are never a bound, whoever wrote them: here they claim every
/// row is true while the file holds false rows. Scans and the conflict checker's stats tier prune
/// through the same code, so neither may drop this file for `flag = false`.
#[test]
fn boolean_bounds_in_stats_never_prune() {
    let tmp = tempfile::tempdir().unwrap();
    let loc = tmp.path().join("b").to_string_lossy().to_string();
    let s = SqlSession::new(Env::deterministic(1), ConflictConfig::default());
    rt().block_on(async {
        s.execute(&format!("CREATE TABLE '{loc}' (id BIGINT, flag BOOLEAN)"))
            .await
            .unwrap();
        s.execute(&format!(
            "INSERT INTO '{loc}' VALUES (1, false), (2, true), (3, false)"
        ))
        .await
        .unwrap();
        // Another writer's wrong bounds: min = max = true.
        let log = std::path::Path::new(&loc).join("_delta_log/00000000000000000001.json");
        let mut lines = Vec::new();
        for line in std::fs::read_to_string(&log).unwrap().lines() {
            let mut action: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(stats) = action.pointer("/add/stats").and_then(|v| v.as_str()) {
                let mut stats: serde_json::Value = serde_json::from_str(stats).unwrap();
                stats["minValues"]["flag"] = serde_json::json!(true);
                stats["maxValues"]["flag"] = serde_json::json!(true);
                action["add"]["stats"] = serde_json::json!(stats.to_string());
            }
            lines.push(action.to_string());
        }
        std::fs::write(&log, lines.join("\n") + "\n").unwrap();
        let snap = DeltaTable::open(&loc)
            .unwrap()
            .snapshot(None)
            .await
            .unwrap();
        let keep = |sql: &str| kept(&snap, sql);
        assert_eq!(keep("flag = false"), vec![true]);
        assert_eq!(keep("NOT flag"), vec![true]);
        // The other columns' bounds still prune (the stats were read).
        assert_eq!(keep("id > 10"), vec![false]);
        let out = s
            .execute(&format!(
                "SELECT id FROM '{loc}' WHERE flag = false ORDER BY id"
            ))
            .await
            .unwrap();
        let ids: Vec<i64> = out
            .batches
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<arrow::array::Int64Array>()
                    .unwrap()
                    .values()
                    .to_vec()
            })
            .collect();
        assert_eq!(ids, vec![1, 3]);
    });
}

#[test]
fn shared_stats_refuse_repeated_paths() {
    let s = SqlSession::new(Env::deterministic(1), ConflictConfig::default());
    let loc = "memory://prune-dup/t";
    rt().block_on(async {
        s.execute(&format!("CREATE TABLE '{loc}' (x BIGINT)"))
            .await
            .unwrap();
        s.execute(&format!("INSERT INTO '{loc}' VALUES (1), (2)"))
            .await
            .unwrap();
        let table = DeltaTable::open(loc).unwrap();
        let snap = table.snapshot(None).await.unwrap();
        let mut files = snap.files.clone();
        files.push(files[0].clone());
        let shared = FileStatsPruning::new(&snap, &files);
        // Two adds with one path: positions would be ambiguous, so the shared stats are not used.
        assert!(shared.positions_of(&[&files[0]]).is_none());
        let single = FileStatsPruning::new(&snap, &snap.files);
        assert_eq!(single.positions_of(&[&snap.files[0]]), Some(vec![0]));
    });
}

/// An infinite float has no JSON number: that bound is left out of the file's stats and the other,
/// finite one kept. The kept lower bound prunes what it can; the missing upper bound prunes
/// nothing, so the infinite row is still found.
#[test]
fn an_infinite_float_bound_is_left_out_and_the_other_kept() {
    let s = SqlSession::new(Env::deterministic(1), ConflictConfig::default());
    let loc = "memory://prune-inf/t";
    rt().block_on(async {
        s.execute(&format!("CREATE TABLE '{loc}' (x DOUBLE)"))
            .await
            .unwrap();
        s.execute(&format!(
            "INSERT INTO '{loc}' VALUES (0.0), (CAST('Infinity' AS DOUBLE)), (NULL), (1.0)"
        ))
        .await
        .unwrap();
        let snap = DeltaTable::open(loc).unwrap().snapshot(None).await.unwrap();
        let stats =
            delta_rlc_protocol::stats::FileStats::parse(snap.files[0].stats.as_deref().unwrap())
                .unwrap();
        assert_eq!(stats.min_values.get("x"), Some(&serde_json::json!(0.0)));
        assert_eq!(stats.max_values.get("x"), None, "+inf has no JSON number");
        assert_eq!(kept(&snap, "x < -1"), vec![false], "the lower bound prunes");
        assert_eq!(kept(&snap, "x > 1e300"), vec![true], "no upper bound: kept");
        let found = s
            .execute(&format!(
                "SELECT count(*) FROM '{loc}' WHERE x > CAST(1000000 AS DOUBLE)"
            ))
            .await
            .unwrap();
        assert_eq!(sorted_rows(&found.batches), vec!["1"]);
    });
}

/// Decimal bounds are exact or absent. Written: a precision-15 column's (a double prints each of
/// its values exactly) and an integer one's; not a wider column's with a fraction. Read: a JSON
/// number past 15 digits was rounded by the JSON parser (up or down), so another writer's such
/// bound is not used — here a min rounded up past the row it bounds would have pruned that row.
#[test]
fn decimal_bounds_are_exact_or_absent() {
    let tmp = tempfile::tempdir().unwrap();
    let loc = tmp.path().join("d").to_string_lossy().to_string();
    let s = SqlSession::new(Env::deterministic(1), ConflictConfig::default());
    rt().block_on(async {
        s.execute(&format!(
            "CREATE TABLE '{loc}' (a DECIMAL(10, 2), w DECIMAL(17, 4), i DECIMAL(20, 0))"
        ))
        .await
        .unwrap();
        s.execute(&format!(
            "INSERT INTO '{loc}' VALUES (CAST(10.25 AS DECIMAL(10, 2)), CAST(1234567890123.4567 AS DECIMAL(17, 4)), CAST(12345678901234567 AS DECIMAL(20, 0))), (CAST(-3.10 AS DECIMAL(10, 2)), CAST(1234567890123.4567 AS DECIMAL(17, 4)), CAST(5 AS DECIMAL(20, 0)))"
        ))
        .await
        .unwrap();
        let snap = DeltaTable::open(&loc).unwrap().snapshot(None).await.unwrap();
        let stats =
            delta_rlc_protocol::stats::FileStats::parse(snap.files[0].stats.as_deref().unwrap())
                .unwrap();
        assert_eq!(stats.min_values.get("a").map(|v| v.to_string()), Some("-3.1".into()));
        assert_eq!(stats.max_values.get("a").map(|v| v.to_string()), Some("10.25".into()));
        assert_eq!(stats.min_values.get("w"), None, "17 digits with a fraction: no bound");
        assert_eq!(stats.max_values.get("i").map(|v| v.to_string()), Some("12345678901234567".into()));
        let dec = |p: u8, s: i8, v: &str| format!("CAST('{v}' AS DECIMAL({p}, {s}))");
        assert_eq!(kept(&snap, &format!("a > {}", dec(10, 2, "10.25"))), vec![false]);
        assert_eq!(kept(&snap, &format!("a >= {}", dec(10, 2, "10.25"))), vec![true]);
        assert_eq!(
            kept(&snap, &format!("i > {}", dec(20, 0, "12345678901234567"))),
            vec![false]
        );
        // Another writer's 17-digit bounds for w, as Spark writes them (JSON numbers).
        let log = std::path::Path::new(&loc).join("_delta_log/00000000000000000001.json");
        let mut lines = Vec::new();
        for line in std::fs::read_to_string(&log).unwrap().lines() {
            let mut action: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(text) = action.pointer("/add/stats").and_then(|v| v.as_str()) {
                let text = text.replacen(
                    "\"minValues\":{",
                    "\"minValues\":{\"w\":1234567890123.4567,",
                    1,
                );
                let text = text.replacen(
                    "\"maxValues\":{",
                    "\"maxValues\":{\"w\":1234567890123.4567,",
                    1,
                );
                action["add"]["stats"] = serde_json::json!(text);
            }
            lines.push(action.to_string());
        }
        std::fs::write(&log, lines.join("\n") + "\n").unwrap();
        let snap = DeltaTable::open(&loc).unwrap().snapshot(None).await.unwrap();
        assert_eq!(
            kept(&snap, &format!("w <= {}", dec(17, 4, "1234567890123.4567"))),
            vec![true]
        );
        assert_eq!(
            kept(&snap, &format!("a > {}", dec(10, 2, "10.25"))),
            vec![false],
            "the exact bounds still prune"
        );
        let out = s
            .execute(&format!(
                "SELECT count(*) FROM '{loc}' WHERE w <= 1234567890123.4567"
            ))
            .await
            .unwrap();
        assert_eq!(sorted_rows(&out.batches), vec!["2"]);
    });
}

/// A DOUBLE bound is read back as the double it was written from, even at 17 significant digits
/// (red-team: without correctly rounded JSON parsing, 103.24600000000001 came back as 103.246 and
/// 114.99999999999999 as 115.0 — a max read low and a min read high, which pruned live rows from
/// `x > 103.246` and `x < 115`).
#[test]
fn a_double_bound_of_17_digits_is_read_exactly() {
    let s = SqlSession::new(Env::deterministic(1), ConflictConfig::default());
    let loc = "memory://prune-17-digits/t";
    rt().block_on(async {
        s.execute(&format!("CREATE TABLE '{loc}' (id BIGINT, x DOUBLE)"))
            .await
            .unwrap();
        for (id, x) in [(1, "103.24600000000001"), (2, "114.99999999999999")] {
            s.execute(&format!(
                "INSERT INTO '{loc}' VALUES ({id}, CAST('{x}' AS DOUBLE))"
            ))
            .await
            .unwrap();
        }
        let snap = DeltaTable::open(loc).unwrap().snapshot(None).await.unwrap();
        let keep = |sql: &str| kept(&snap, sql);
        // Float64 literals (DataFusion's own parser): the bounds decide.
        assert_eq!(keep("x > 103.246"), vec![true, true]);
        assert_eq!(keep("x < 115.0"), vec![true, true]);
        assert_eq!(keep("x > 115.0"), vec![false, false]);
        assert_eq!(keep("x > 103.24600000000001"), vec![false, true]);
        for (sql, want) in [
            ("x > CAST('103.246' AS DOUBLE)", "2"),
            ("x < CAST(115 AS DOUBLE)", "2"),
            ("x = CAST('103.24600000000001' AS DOUBLE)", "1"),
        ] {
            let out = s
                .execute(&format!("SELECT count(*) FROM '{loc}' WHERE {sql}"))
                .await
                .unwrap();
            assert_eq!(sorted_rows(&out.batches), vec![want], "{sql}");
        }
    });
}
