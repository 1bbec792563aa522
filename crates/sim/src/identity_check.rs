//! Check I of the oracle (identity histories, `SimConfig::identity`): the table has an identity
//! column `id` and a column `gid` generated from it, and at every version
//! - every row has an `id`, distinct from every other row's, and `gid = id * 2`;
//! - no row breaks the `ident` rule on `id` (a CHECK a moved value can break);
//! - the ids a commit added are exactly the block a serial run generates after the previous
//!   version's high-water mark (`mark + step, …, mark + n·step`), the mark is raised to the last
//!   of them, and no id is ever handed out twice (not even one deleted since).
//!
//! Concurrent generating writers whose values the checker moved (`identityRebase`) must leave
//! exactly this; a loser whose moved values break `ident` must have aborted.

use std::collections::BTreeSet;

use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::DeltaTable as Table;

use crate::oracle::Anomaly;

/// The rule on `id`, added after the setup rows (`mark` is the setup's last value): values past
/// the setup's with `|id| % 13 = 6` are refused, so a moved value can break it.
pub fn ident_constraint(mark: i64) -> String {
    format!(
        "ALTER TABLE t ADD CONSTRAINT ident CHECK (abs(id) % 13 <> 6 OR abs(id) <= {})",
        mark.unsigned_abs()
    )
}

fn breaks_ident(id: i64, setup_mark: i64) -> bool {
    id.unsigned_abs() % 13 == 6 && id.unsigned_abs() > setup_mark.unsigned_abs()
}

/// (start, step, mark) of `id` at `version`.
async fn identity_at(table: &Table, version: u64) -> Result<(i64, i64, Option<i64>), String> {
    let s = table
        .snapshot(Some(version))
        .await
        .map_err(|e| e.to_string())?;
    let f = s.schema.field("id").ok_or("no column id")?;
    let long = |k: &str| f.metadata.get(k).and_then(|v| v.as_i64());
    Ok((
        long("delta.identity.start").unwrap_or(1),
        long("delta.identity.step").unwrap_or(1),
        long("delta.identity.highWaterMark"),
    ))
}

async fn ids_at(
    session: &SqlSession,
    version: u64,
) -> Result<Vec<(Option<i64>, Option<i64>)>, String> {
    let sql = format!("SELECT id, gid FROM t VERSION AS OF {version}");
    Ok(crate::oracle::int_rows(session, &sql)
        .await?
        .into_iter()
        .map(|r| (r.first().copied().flatten(), r.get(1).copied().flatten()))
        .collect())
}

/// Check I over versions `base_version ..= latest` (`setup_mark`: the mark the `ident` rule
/// was added at).
pub async fn check(
    session: &SqlSession,
    table: &Table,
    base_version: u64,
    latest: u64,
    setup_mark: i64,
) -> Vec<Anomaly> {
    let anomaly = |detail: String| vec![Anomaly { check: "I", detail }];
    let mut ever: BTreeSet<i64> = BTreeSet::new();
    let mut before: BTreeSet<i64> = BTreeSet::new();
    let mut mark_before: Option<i64> = None;
    for v in base_version..=latest {
        let rows = match ids_at(session, v).await {
            Ok(r) => r,
            Err(e) => return anomaly(format!("v{v} unreadable: {e}")),
        };
        let (start, step, mark) = match identity_at(table, v).await {
            Ok(x) => x,
            Err(e) => return anomaly(format!("v{v}: {e}")),
        };
        let mut now = BTreeSet::new();
        for (id, gid) in rows {
            let Some(id) = id else {
                return anomaly(format!("v{v}: a row without an id"));
            };
            if gid != id.checked_mul(2) {
                return anomaly(format!("v{v}: id {id} has gid {gid:?}"));
            }
            if !now.insert(id) {
                return anomaly(format!("v{v}: id {id} twice"));
            }
            if breaks_ident(id, setup_mark) && v > base_version {
                return anomaly(format!("v{v}: id {id} breaks the ident rule"));
            }
        }
        if v > base_version {
            let new: Vec<i64> = now.difference(&before).copied().collect();
            if let Some(reused) = new.iter().find(|i| ever.contains(i)) {
                return anomaly(format!("v{v}: id {reused} handed out again"));
            }
            let after = mark_before.unwrap_or(start - step);
            let mut block: Vec<i64> = (1..=new.len() as i64).map(|i| after + i * step).collect();
            block.sort_unstable();
            if new != block {
                return anomaly(format!(
                    "v{v}: new ids {new:?}, a serial run generates {block:?} after mark {mark_before:?}"
                ));
            }
            let want = if new.is_empty() {
                mark_before
            } else {
                Some(after + new.len() as i64 * step)
            };
            if mark != want {
                return anomaly(format!("v{v}: mark {mark:?}, a serial run leaves {want:?}"));
            }
        }
        ever.extend(now.iter().copied());
        before = now;
        mark_before = mark;
    }
    Vec::new()
}
