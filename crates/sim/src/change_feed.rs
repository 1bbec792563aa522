//! Check H (tables with the change data feed on): every committed version's feed is exactly its
//! change. Starting from the rows at `v - 1` (the oracle's model, already checked equal to the
//! table), removing every `delete` and `update_preimage` row of `table_changes(v, v)` — each must
//! be present — and adding every `insert` and `update_postimage` row gives the rows at `v`, as
//! multisets. So a change recorded twice, lost, or recorded with other values (a reconciled loser
//! whose change files no longer match what it did) is an anomaly.

use std::collections::BTreeMap;

use arrow::array::{Array, Int64Array, StringArray};
use delta_rlc_engine::sql::SqlSession;

use crate::model::{content, Model};
use crate::oracle::Anomaly;

type Row = (i64, i64, i64);

/// The feed of version `v`: (row, change type).
async fn feed_of(session: &SqlSession, v: u64) -> Result<Vec<(Row, String)>, String> {
    let out = session
        .execute(&format!(
            "SELECT k, v, CAST(g AS BIGINT), _change_type FROM table_changes('t', {v}, {v})"
        ))
        .await
        .map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for b in &out.batches {
        let int = |i: usize| b.column(i).as_any().downcast_ref::<Int64Array>().cloned();
        let (Some(k), Some(val), Some(g)) = (int(0), int(1), int(2)) else {
            return Err("unexpected column types in the feed".into());
        };
        let Some(c) = b.column(3).as_any().downcast_ref::<StringArray>().cloned() else {
            return Err("unexpected _change_type type".into());
        };
        for i in 0..b.num_rows() {
            rows.push((
                (k.value(i), val.value(i), g.value(i)),
                c.value(i).to_string(),
            ));
        }
    }
    Ok(rows)
}

fn counts(rows: &[Row]) -> BTreeMap<Row, i64> {
    let mut m = BTreeMap::new();
    for r in rows {
        *m.entry(*r).or_insert(0) += 1;
    }
    m
}

/// Check H over versions `from..=to`, whose models are in `models` (with `from - 1`).
pub async fn check(
    session: &SqlSession,
    models: &BTreeMap<u64, Model>,
    from: u64,
    to: u64,
) -> Vec<Anomaly> {
    let mut out = Vec::new();
    let bad = |detail: String| Anomaly { check: "H", detail };
    for v in from..=to {
        let (Some(before), Some(after)) = (models.get(&(v - 1)), models.get(&v)) else {
            continue;
        };
        let feed = match feed_of(session, v).await {
            Ok(f) => f,
            Err(e) => {
                out.push(bad(format!("v{v}: change feed unreadable: {e}")));
                continue;
            }
        };
        let mut rows = counts(&content(before));
        for (row, change) in &feed {
            let delta = match change.as_str() {
                "delete" | "update_preimage" => -1,
                "insert" | "update_postimage" => 1,
                other => {
                    out.push(bad(format!("v{v}: unknown change type {other}")));
                    continue;
                }
            };
            let n = rows.entry(*row).or_insert(0);
            *n += delta;
            if *n < 0 {
                out.push(bad(format!(
                    "v{v}: the feed removes {row:?}, which was not in the table"
                )));
            }
        }
        rows.retain(|_, n| *n != 0);
        if rows != counts(&content(after)) {
            out.push(bad(format!(
                "v{v}: applying its {} change rows to v{} does not give the rows at v{v}",
                feed.len(),
                v - 1
            )));
        }
    }
    out
}
