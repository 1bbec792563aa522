//! Values in columns an ADD COLUMNS added: the generators and the serial meaning of statements
//! that write or match a value only an added column holds. They hit the compatibility rule
//! "ADD COLUMNS reconciles a loser only if it declared the names by which it reaches columns and
//! names none of the added ones" with what that rule exists for:
//! - `INSERT INTO t (k, v, g, c<n>)` and `UPDATE t SET c<n> = x` name an added column (declared);
//! - `DELETE … WHERE c<n> = x` matches rows by it;
//! - `INSERT INTO t VALUES (k, v, g[, x])` reaches columns by position (undeclared): its values
//!   fit only the column count it planned with;
//! - `MERGE … UPDATE SET * / INSERT *` from a source holding every column the history may add
//!   (undeclared): after a concurrent ADD COLUMNS of `c<m>`, the serial run stores the source's
//!   `c<m>`, which a loser planned without the column would have left NULL.
//!
//! Serial replay refuses what the engine (and Spark) refuse at planning: a name the table does
//! not have at that point, an INSERT whose value count is not the column count, a `*` whose
//! source lacks a target column. A statement that commits where the serial run refuses it, or is
//! refused where the serial run takes it, is an anomaly (oracle check R).

use std::collections::BTreeMap;

use crate::model::{fresh, Model, Op, Pred, Row};
use crate::sim::Rng;

/// A column of the table at some version: its name, and the name it was added under (a rename
/// keeps that; the model keys added values by it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub origin: String,
    /// Added by an ALTER of the history (the table's own columns, such as an identity column
    /// and one generated from it, are not: the model does not hold their values).
    pub added: bool,
}

/// The columns after `op` commits, from the columns before: ADD COLUMNS appends, a rename
/// renames (`metadata_check.rs` replays the same).
pub fn columns_after(op: &Op, cols: &mut Vec<Column>) {
    match op {
        Op::AlterAddColumn(n) => {
            cols.extend(crate::model::added_columns(*n).into_iter().map(|c| Column {
                name: c.clone(),
                origin: c,
                added: true,
            }))
        }
        Op::AlterRenameAdded(n) => {
            let from = format!("c{n}");
            if let Some(c) = cols.iter_mut().find(|c| c.name == from) {
                c.name = format!("r{n}");
            }
        }
        _ => {}
    }
}

/// The columns among `cols` an ALTER of the history added.
pub fn added(cols: &[Column]) -> Vec<&Column> {
    cols.iter().filter(|c| c.added).collect()
}

/// The value a MERGE source row with value `v` holds in the column added as `origin` (distinct
/// per column, so a value landing in another column shows).
fn source_value(v: i64, origin: &str) -> i64 {
    let (kind, n) = origin.split_at(1);
    let n: i64 = n.parse().unwrap_or(0);
    v * 1000 + n * 2 + i64::from(kind == "d")
}

/// The columns a `MergeStar` source holds besides `k, v, g`: each `c<m>` and `d<m>` operations
/// `0..width` may add.
fn source_columns(width: i64) -> Vec<String> {
    (0..width).flat_map(crate::model::added_columns).collect()
}

pub fn sql(op: &Op) -> String {
    let rows3 = |rows: &[(i64, i64, i64)], extra: &dyn Fn() -> Option<i64>| {
        rows.iter()
            .map(|(k, v, g)| match extra() {
                Some(x) => format!("({k}, {v}, {g}, {x})"),
                None => format!("({k}, {v}, {g})"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match op {
        Op::InsertAdded { rows, col, val } => format!(
            "INSERT INTO t (k, v, g, c{col}) VALUES {}",
            rows3(rows, &|| Some(*val))
        ),
        Op::InsertPositional { rows, fourth } => {
            format!("INSERT INTO t VALUES {}", rows3(rows, &|| *fourth))
        }
        Op::UpdateAdded { pred, col, val } => {
            format!("UPDATE t SET c{col} = {val} WHERE {}", pred.sql())
        }
        Op::MergeStar { rows, width } => {
            let names = source_columns(*width);
            let values = rows
                .iter()
                .map(|(k, v)| {
                    let mut vals = vec![k.to_string(), v.to_string(), (v % 4).to_string()];
                    vals.extend(names.iter().map(|c| source_value(*v, c).to_string()));
                    format!("({})", vals.join(", "))
                })
                .collect::<Vec<_>>()
                .join(", ");
            let mut header = vec!["k".to_string(), "v".into(), "g".into()];
            header.extend(names);
            format!(
                "MERGE INTO t USING (SELECT * FROM (VALUES {values}) AS x({})) s ON t.k = s.k \
                 WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
                header.join(", ")
            )
        }
        other => other.sql(),
    }
}

/// The added column a predicate names, if any.
fn pred_column(p: &Pred) -> Option<i64> {
    match p {
        Pred::AddedEq(n, _) => Some(*n),
        _ => None,
    }
}

/// Whether `refusal` can refuse `op` (a refusal at planning is then judged, not a failure).
pub fn may_be_refused(op: &Op) -> bool {
    match op {
        Op::InsertAdded { .. }
        | Op::InsertPositional { .. }
        | Op::UpdateAdded { .. }
        | Op::MergeStar { .. } => true,
        Op::Delete(p) | Op::UpdateV { pred: p, .. } | Op::UpdateG { pred: p, .. } => {
            pred_column(p).is_some()
        }
        _ => false,
    }
}

/// Why serial order refuses `op` on a table whose columns are `cols`, or `None` when it runs.
pub fn refusal(op: &Op, cols: &[Column]) -> Option<String> {
    let has = |n: &i64| cols.iter().any(|c| c.name == format!("c{n}"));
    let named = match op {
        Op::InsertAdded { col, .. } => Some(*col),
        Op::UpdateAdded { pred, col, .. } => pred_column(pred).filter(|n| !has(n)).or(Some(*col)),
        Op::Delete(p) | Op::UpdateV { pred: p, .. } | Op::UpdateG { pred: p, .. } => pred_column(p),
        _ => None,
    };
    if let Some(n) = named.filter(|n| !has(n)) {
        return Some(format!("no column c{n}"));
    }
    match op {
        Op::InsertPositional { fourth, .. } => {
            let values = if fourth.is_some() { 4 } else { 3 };
            (values != cols.len()).then(|| format!("{values} values for {} columns", cols.len()))
        }
        Op::MergeStar { width, .. } => {
            let source = source_columns(*width);
            added(cols)
                .iter()
                .find(|c| !source.contains(&c.name))
                .map(|c| format!("the source lacks {}", c.name))
        }
        _ => None,
    }
}

/// The serial meaning of the ops of this module (`refusal` is `None`): rows `visible` to the
/// statement, columns `cols`, at commit `version`.
pub fn apply(
    op: &Op,
    m: &mut Model,
    visible: &[(i64, u64)],
    cols: &[Column],
    version: u64,
    blind: bool,
) -> u64 {
    let row = |v, g, extra| Row {
        v,
        g,
        written_at: version,
        by_blind_append: blind,
        extra,
    };
    match op {
        Op::InsertAdded { rows, col, val } => {
            for (k, v, g) in rows {
                let key = fresh(m, *k);
                m.insert(
                    key,
                    row(*v, *g, BTreeMap::from([(format!("c{col}"), *val)])),
                );
            }
            rows.len() as u64
        }
        Op::InsertPositional { rows, fourth } => {
            for (k, v, g) in rows {
                let mut extra = BTreeMap::new();
                if let (Some(x), Some(c)) = (fourth, cols.get(3).filter(|c| c.added)) {
                    extra.insert(c.origin.clone(), *x);
                }
                let key = fresh(m, *k);
                m.insert(key, row(*v, *g, extra));
            }
            rows.len() as u64
        }
        Op::UpdateAdded { pred, col, val } => {
            let mut n = 0;
            for key in visible {
                if let Some(r) = m.get_mut(key) {
                    if pred.eval(key.0, r) {
                        let mut extra = r.extra.clone();
                        extra.insert(format!("c{col}"), *val);
                        *r = row(r.v, r.g, extra);
                        n += 1;
                    }
                }
            }
            n
        }
        Op::MergeStar { rows, .. } => {
            // `*` is every target column, set from the source's column of that name.
            let star = |v: i64| -> BTreeMap<String, i64> {
                added(cols)
                    .iter()
                    .map(|c| (c.origin.clone(), source_value(v, &c.name)))
                    .collect()
            };
            let mut n = 0;
            for (k, v) in rows {
                let matches: Vec<(i64, u64)> =
                    visible.iter().copied().filter(|key| key.0 == *k).collect();
                if matches.is_empty() {
                    let key = fresh(m, *k);
                    m.insert(key, row(*v, v % 4, star(*v)));
                    n += 1;
                }
                for key in matches {
                    if m.contains_key(&key) {
                        m.insert(key, row(*v, v % 4, star(*v)));
                        n += 1;
                    }
                }
            }
            n
        }
        _ => 0,
    }
}

/// Rows as (k, v, g, the value of each added column in `cols` order), sorted: the comparable
/// content of a model on a table with added columns.
pub fn content(m: &Model, cols: &[Column]) -> Vec<(i64, i64, i64, Vec<Option<i64>>)> {
    let mut rows: Vec<_> = m
        .iter()
        .map(|((k, _), r)| {
            let extra = added(cols)
                .iter()
                .map(|c| r.extra.get(&c.origin).copied())
                .collect();
            (*k, r.v, r.g, extra)
        })
        .collect();
    rows.sort();
    rows
}

/// An operation of the added-column alphabet (`SimConfig::added_values`): a third adds or
/// renames columns, the rest write or match values in columns the last few operations may have
/// added (so the named column has sometimes committed, sometimes not yet, sometimes renamed).
pub fn random_op(rng: &mut Rng, next_key: &mut i64, op_id: i64, width: i64) -> Op {
    let recent = rng.range((op_id - 4).max(0), op_id.max(1));
    let val = rng.range(-3, 4);
    let mut fresh_rows = |rng: &mut Rng| -> Vec<(i64, i64, i64)> {
        (0..rng.range(1, 3))
            .map(|_| {
                *next_key += 1;
                (*next_key, rng.range(0, 60), rng.range(0, 4))
            })
            .collect()
    };
    match rng.below(9) {
        0 | 1 => Op::AlterAddColumn(op_id),
        2 => Op::AlterRenameAdded(recent),
        3 => Op::InsertAdded {
            rows: fresh_rows(rng),
            col: recent,
            val,
        },
        4 => Op::InsertPositional {
            rows: fresh_rows(rng),
            fourth: rng.chance(60).then_some(val),
        },
        5 => Op::UpdateAdded {
            pred: if rng.chance(50) {
                Pred::AddedEq(
                    rng.range((op_id - 4).max(0), op_id.max(1)),
                    rng.range(-3, 4),
                )
            } else {
                Pred::VLess(rng.range(0, 60))
            },
            col: recent,
            val,
        },
        6 => Op::Delete(Pred::AddedEq(recent, val)),
        _ => {
            let mut keys = BTreeMap::new();
            for _ in 0..rng.range(1, 4) {
                keys.insert(rng.range(0, 260), rng.range(0, 60));
            }
            Op::MergeStar {
                rows: keys.into_iter().collect(),
                width,
            }
        }
    }
}
