//! The plain in-memory model of the simulated table and the operation alphabet. Each operation is
//! an *intent*: SQL for the engine and a function on the model. The table has columns
//! `k BIGINT NOT NULL` (a stable key), `v BIGINT NOT NULL`, `g INT NOT NULL`.

use std::collections::BTreeMap;

/// A row of the model and who last wrote it (for WriteSerializable's blind-append relaxation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub v: i64,
    pub g: i64,
    /// Commit version of the last writer, and whether that writer was a blind append.
    pub written_at: u64,
    pub by_blind_append: bool,
    /// Values of columns an ADD COLUMNS added, by the name the column was added under (`c<n>`,
    /// `d<n>`; a rename keeps it); a column absent here holds NULL (`added_values.rs`).
    pub extra: BTreeMap<String, i64>,
}

/// Rows keyed by (k, uniquifier): `k` is not a unique key in Delta (two appends may write the same
/// k), so the model is a multiset ordered by k.
pub type Model = BTreeMap<(i64, u64), Row>;

/// A key for a new row with key `k`: after every row already holding `k`.
pub(crate) fn fresh(m: &Model, k: i64) -> (i64, u64) {
    let next = m
        .range((k, 0)..=(k, u64::MAX))
        .next_back()
        .map(|((_, s), _)| s + 1)
        .unwrap_or(0);
    (k, next)
}

/// The first value of `g` that only a widened `g` (BIGINT) holds: writing it into an INT `g` is
/// refused, and after `ALTER COLUMN g TYPE BIGINT` it is an ordinary value that predicates planned
/// under INT must still see (the type-widening soundness rule).
pub const WIDE_G: i64 = 3_000_000_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pred {
    VLess(i64),
    VMod(i64, i64),
    GEq(i64),
    KBetween(i64, i64),
    /// `(g = c OR k = k0)`: a DELETE/UPDATE that changes a row under INT and would change a wide
    /// row written after a widening (the conflict checks must read that row as BIGINT).
    GEqOrK(i64, i64),
    /// `g / d = c`: division (Spark's: DOUBLE, so only multiples of d match) — an expression whose
    /// proof under a widening is not a literal comparison, so a concurrent widening must abort
    /// its statement.
    GDiv(i64, i64),
    /// `c<n> = x`: a value only the added column `c<n>` holds (`added_values.rs`).
    AddedEq(i64, i64),
}

impl Pred {
    pub fn sql(&self) -> String {
        match self {
            Pred::VLess(c) => format!("v < {c}"),
            Pred::VMod(m, r) => format!("v % {m} = {r}"),
            Pred::GEq(c) => format!("g = {c}"),
            Pred::KBetween(a, b) => format!("k BETWEEN {a} AND {b}"),
            Pred::GEqOrK(c, k) => format!("(g = {c} OR k = {k})"),
            Pred::GDiv(d, c) => format!("g / {d} = {c}"),
            Pred::AddedEq(n, x) => format!("c{n} = {x}"),
        }
    }

    pub fn eval(&self, k: i64, r: &Row) -> bool {
        match self {
            Pred::VLess(c) => r.v < *c,
            Pred::VMod(m, rem) => r.v % m == *rem,
            Pred::GEq(c) => r.g == *c,
            Pred::KBetween(a, b) => k >= *a && k <= *b,
            Pred::GEqOrK(c, k0) => r.g == *c || k == *k0,
            // Spark's `/` is DOUBLE division; d is never 0 and |g| < 2^53, so the quotient equals
            // the integer c exactly when g = c * d.
            Pred::GDiv(d, c) => (r.g as f64) / (*d as f64) == *c as f64,
            // NULL (the row has no value there) matches nothing.
            Pred::AddedEq(n, x) => r.extra.get(&format!("c{n}")) == Some(x),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Blind append of fresh keys.
    Insert(Vec<(i64, i64, i64)>),
    /// Append that reads: copies matching rows under new keys `k + offset`.
    InsertSelect {
        pred: Pred,
        offset: i64,
    },
    Delete(Pred),
    UpdateV {
        pred: Pred,
        add: i64,
    },
    UpdateG {
        pred: Pred,
        g: i64,
    },
    /// MERGE upsert: matched → v = s.v; not matched → insert (k, v, 0).
    Merge(Vec<(i64, i64)>),
    /// MERGE upsert plus NOT MATCHED BY SOURCE AND g = c THEN DELETE.
    MergeNmbs {
        rows: Vec<(i64, i64)>,
        g: i64,
    },
    /// MERGE upsert whose MATCHED clause holds only where g = c: a matched row with another g is
    /// read but unchanged, and still keeps its source row from being inserted.
    MergeWhenG {
        rows: Vec<(i64, i64)>,
        g: i64,
    },
    Optimize,
    Zorder,
    /// `ALTER TABLE t ADD COLUMNS (c<n> BIGINT[, d<n> BIGINT])` (`added_columns`): a schema change
    /// no row holds a value for; one or two columns, so concurrent ones consume column-mapping ids
    /// unevenly.
    AlterAddColumn(i64),
    /// `ALTER TABLE t SET TBLPROPERTIES ('sim.note<n % 3>' = '<n>')`: a metadata change outside
    /// the schema; three keys, so concurrent ones sometimes set the same key and sometimes not.
    AlterSetProperty(i64),
    /// `ALTER TABLE t CLUSTER BY …`: 0 = NONE, 1 = (k), 2 = (g), 3 = (v, k). Refused on a
    /// partitioned table, and NONE on an unclustered one.
    AlterClusterBy(i64),
    /// `ALTER TABLE t ADD CONSTRAINT c<n> CHECK (v < bound)`: every row at its commit and every row
    /// written after it must satisfy it (the oracle's check G).
    AlterAddConstraint {
        n: i64,
        bound: i64,
    },
    /// `ALTER TABLE t ALTER COLUMN g TYPE BIGINT`: a widening (refused when the table lacks type
    /// widening, when g is a partition column, or once g is already BIGINT).
    AlterWidenG,
    /// `ALTER TABLE t RENAME COLUMN c<n> TO r<n>`: renames a column an earlier ADD COLUMNS may
    /// have added (refused without column mapping or when there is no such column).
    AlterRenameAdded(i64),
    /// `ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')`: turns column
    /// mapping on (every column named as it is); refused once it is on.
    AlterEnableMapping,
    /// `ALTER TABLE t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')`.
    AlterEnableTypeWidening,
    /// `INSERT INTO t (k, v, g, c<col>) VALUES …`: a blind append naming an added column.
    InsertAdded {
        rows: Vec<(i64, i64, i64)>,
        col: i64,
        val: i64,
    },
    /// `INSERT INTO t VALUES (k, v, g[, x])`: a blind append by position; it holds only while the
    /// table has as many columns as values.
    InsertPositional {
        rows: Vec<(i64, i64, i64)>,
        fourth: Option<i64>,
    },
    /// `UPDATE t SET c<col> = val WHERE pred`.
    UpdateAdded {
        pred: Pred,
        col: i64,
        val: i64,
    },
    /// `MERGE … WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *` from a source
    /// holding `k, v, g` and every column operations `0..width` may add (`added_values.rs`).
    MergeStar {
        rows: Vec<(i64, i64)>,
        width: i64,
    },
}

impl Op {
    pub fn name(&self) -> &'static str {
        match self {
            Op::Insert(_) => "insert",
            Op::InsertSelect { .. } => "insertSelect",
            Op::Delete(_) => "delete",
            Op::UpdateV { .. } | Op::UpdateG { .. } => "update",
            Op::Merge(_) => "merge",
            Op::MergeNmbs { .. } => "mergeNmbs",
            Op::MergeWhenG { .. } => "mergeWhenG",
            Op::Optimize => "optimize",
            Op::Zorder => "zorder",
            Op::AlterAddColumn(_) => "alterAddColumn",
            Op::AlterSetProperty(_) => "alterSetProperty",
            Op::AlterClusterBy(_) => "alterClusterBy",
            Op::AlterAddConstraint { .. } => "alterAddConstraint",
            Op::AlterWidenG => "alterWidenType",
            Op::AlterRenameAdded(_) => "alterRenameColumn",
            Op::AlterEnableMapping => "alterEnableColumnMapping",
            Op::AlterEnableTypeWidening => "alterEnableTypeWidening",
            Op::InsertAdded { .. } => "insertAdded",
            Op::InsertPositional { .. } => "insertPositional",
            Op::UpdateAdded { .. } => "updateAdded",
            Op::MergeStar { .. } => "mergeStar",
        }
    }

    /// The same intent for the `i`-th concurrent transaction: fresh keys are shifted so that two
    /// transactions never append the same key (key uniqueness is not a Delta constraint).
    pub fn for_txn(&self, i: i64) -> Op {
        let shift = |rows: &[(i64, i64, i64)]| -> Vec<(i64, i64, i64)> {
            rows.iter()
                .map(|(k, v, g)| (k + 100_000 * i, *v, *g))
                .collect()
        };
        match self {
            Op::Insert(rows) => Op::Insert(shift(rows)),
            Op::InsertSelect { pred, offset } => Op::InsertSelect {
                pred: pred.clone(),
                offset: offset + 100_000 * i,
            },
            Op::InsertAdded { rows, col, val } => Op::InsertAdded {
                rows: shift(rows),
                col: *col,
                val: *val,
            },
            Op::InsertPositional { rows, fourth } => Op::InsertPositional {
                rows: shift(rows),
                fourth: *fourth,
            },
            other => other.clone(),
        }
    }

    pub fn is_blind_append(&self) -> bool {
        matches!(
            self,
            Op::Insert(_) | Op::InsertAdded { .. } | Op::InsertPositional { .. }
        )
    }

    /// Whether the engine's affected-row count is a row count comparable with the model's.
    pub fn counts_rows(&self) -> bool {
        !matches!(
            self,
            Op::Optimize
                | Op::Zorder
                | Op::AlterAddColumn(_)
                | Op::AlterSetProperty(_)
                | Op::AlterClusterBy(_)
                | Op::AlterAddConstraint { .. }
                | Op::AlterWidenG
                | Op::AlterRenameAdded(_)
                | Op::AlterEnableMapping
                | Op::AlterEnableTypeWidening
        )
    }

    /// The statement writes a value of `g` that only a widened (BIGINT) `g` holds.
    pub fn writes_wide_g(&self) -> bool {
        match self {
            Op::Insert(rows) => rows.iter().any(|(_, _, g)| *g >= WIDE_G),
            Op::UpdateG { g, .. } => *g >= WIDE_G,
            _ => false,
        }
    }

    pub fn sql(&self) -> String {
        let values = |rows: &[(i64, i64)]| {
            rows.iter()
                .map(|(k, v)| format!("({k}, {v})"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Op::Insert(rows) => format!(
                "INSERT INTO t (k, v, g) VALUES {}",
                rows.iter().map(|(k, v, g)| format!("({k}, {v}, {g})")).collect::<Vec<_>>().join(", ")
            ),
            Op::InsertSelect { pred, offset } => format!("INSERT INTO t (k, v, g) SELECT k + {offset}, v, g FROM t WHERE {}", pred.sql()),
            Op::Delete(p) => format!("DELETE FROM t WHERE {}", p.sql()),
            Op::UpdateV { pred, add } => format!("UPDATE t SET v = v + {add} WHERE {}", pred.sql()),
            Op::UpdateG { pred, g } => format!("UPDATE t SET g = {g} WHERE {}", pred.sql()),
            Op::Merge(rows) => format!(
                "MERGE INTO t USING (SELECT * FROM (VALUES {}) AS x(k, v)) s ON t.k = s.k \
                 WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (k, v, g) VALUES (s.k, s.v, 0)",
                values(rows)
            ),
            Op::MergeNmbs { rows, g } => format!(
                "MERGE INTO t USING (SELECT * FROM (VALUES {}) AS x(k, v)) s ON t.k = s.k \
                 WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (k, v, g) VALUES (s.k, s.v, 0) \
                 WHEN NOT MATCHED BY SOURCE AND t.g = {g} THEN DELETE",
                values(rows)
            ),
            Op::MergeWhenG { rows, g } => format!(
                "MERGE INTO t USING (SELECT * FROM (VALUES {}) AS x(k, v)) s ON t.k = s.k \
                 WHEN MATCHED AND t.g = {g} THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (k, v, g) VALUES (s.k, s.v, 0)",
                values(rows)
            ),
            Op::Optimize => "OPTIMIZE t".into(),
            Op::Zorder => "OPTIMIZE t ZORDER BY (v, k)".into(),
            Op::AlterAddColumn(n) => format!(
                "ALTER TABLE t ADD COLUMNS ({})",
                added_columns(*n)
                    .iter()
                    .map(|c| format!("{c} BIGINT"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Op::AlterSetProperty(n) => {
                let (key, value) = property_of(*n);
                format!("ALTER TABLE t SET TBLPROPERTIES ('{key}' = '{value}')")
            }
            Op::AlterClusterBy(c) => format!(
                "ALTER TABLE t CLUSTER BY {}",
                match c {
                    0 => "NONE",
                    1 => "(k)",
                    2 => "(g)",
                    _ => "(v, k)",
                }
            ),
            Op::AlterAddConstraint { n, bound } => {
                format!("ALTER TABLE t ADD CONSTRAINT c{n} CHECK (v < {bound})")
            }
            Op::AlterWidenG => "ALTER TABLE t ALTER COLUMN g TYPE BIGINT".into(),
            Op::AlterRenameAdded(n) => format!("ALTER TABLE t RENAME COLUMN c{n} TO r{n}"),
            Op::AlterEnableMapping => {
                "ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')".into()
            }
            Op::AlterEnableTypeWidening => {
                "ALTER TABLE t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')".into()
            }
            Op::InsertAdded { .. }
            | Op::InsertPositional { .. }
            | Op::UpdateAdded { .. }
            | Op::MergeStar { .. } => crate::added_values::sql(self),
        }
    }

    /// Applies the intent at commit `version` to a table without added columns (the setup).
    pub fn apply(&self, m: &mut Model, version: u64, hidden: &dyn Fn(i64, &Row) -> bool) -> u64 {
        self.apply_in(m, version, hidden, &[])
    }

    /// Applies the intent at commit `version` on a table whose columns are `cols` (what a
    /// positional INSERT or a `*` expands to); rows in `hidden` are invisible to this transaction
    /// (blind appends it did not see, under WriteSerializable). Returns the affected-row count.
    /// Whether serial order refuses the statement there is `added_values::refusal`'s answer.
    pub fn apply_in(
        &self,
        m: &mut Model,
        version: u64,
        hidden: &dyn Fn(i64, &Row) -> bool,
        cols: &[crate::added_values::Column],
    ) -> u64 {
        let blind = self.is_blind_append();
        let row = |v, g| Row {
            v,
            g,
            written_at: version,
            by_blind_append: blind,
            extra: BTreeMap::new(),
        };
        // An update keeps the values the row holds in added columns.
        let updated = |r: &Row, v, g| Row {
            extra: r.extra.clone(),
            ..row(v, g)
        };
        let visible: Vec<(i64, u64)> = m
            .iter()
            .filter(|((k, _), r)| !hidden(*k, r))
            .map(|(key, _)| *key)
            .collect();
        match self {
            Op::Insert(rows) => {
                for (k, v, g) in rows {
                    let key = fresh(m, *k);
                    m.insert(key, row(*v, *g));
                }
                rows.len() as u64
            }
            Op::InsertSelect { pred, offset } => {
                let src: Vec<(i64, Row)> = visible
                    .iter()
                    .filter_map(|key| {
                        m.get(key)
                            .filter(|r| pred.eval(key.0, r))
                            .map(|r| (key.0, r.clone()))
                    })
                    .collect();
                for (k, r) in &src {
                    let key = fresh(m, k + offset);
                    m.insert(key, row(r.v, r.g));
                }
                src.len() as u64
            }
            Op::Delete(p) => {
                let del: Vec<(i64, u64)> = visible
                    .iter()
                    .copied()
                    .filter(|key| m.get(key).is_some_and(|r| p.eval(key.0, r)))
                    .collect();
                for key in &del {
                    m.remove(key);
                }
                del.len() as u64
            }
            Op::UpdateV { pred, add } => {
                let mut n = 0;
                for key in &visible {
                    if let Some(r) = m.get_mut(key) {
                        if pred.eval(key.0, r) {
                            *r = updated(r, r.v + add, r.g);
                            n += 1;
                        }
                    }
                }
                n
            }
            Op::UpdateG { pred, g } => {
                let mut n = 0;
                for key in &visible {
                    if let Some(r) = m.get_mut(key) {
                        if pred.eval(key.0, r) {
                            *r = updated(r, r.v, *g);
                            n += 1;
                        }
                    }
                }
                n
            }
            Op::Merge(rows) | Op::MergeNmbs { rows, .. } | Op::MergeWhenG { rows, .. } => {
                // MergeWhenG's MATCHED clause holds only where g = c.
                let when_g = match self {
                    Op::MergeWhenG { g, .. } => Some(*g),
                    _ => None,
                };
                let mut n = 0;
                let source: std::collections::BTreeSet<i64> =
                    rows.iter().map(|(k, _)| *k).collect();
                for (k, v) in rows {
                    let matches: Vec<(i64, u64)> =
                        visible.iter().copied().filter(|key| key.0 == *k).collect();
                    if matches.is_empty() {
                        let key = fresh(m, *k);
                        m.insert(key, row(*v, 0));
                        n += 1;
                    }
                    for key in matches {
                        if let Some(r) = m.get_mut(&key) {
                            if when_g.is_none_or(|g| r.g == g) {
                                *r = updated(r, *v, r.g);
                                n += 1;
                            }
                        }
                    }
                }
                if let Op::MergeNmbs { g, .. } = self {
                    let del: Vec<(i64, u64)> = visible
                        .iter()
                        .copied()
                        .filter(|key| {
                            !source.contains(&key.0) && m.get(key).is_some_and(|r| r.g == *g)
                        })
                        .collect();
                    for key in &del {
                        m.remove(key);
                    }
                    n += del.len() as u64;
                }
                n
            }
            // Metadata only: the rows (k, v, g) are unchanged.
            Op::Optimize
            | Op::Zorder
            | Op::AlterAddColumn(_)
            | Op::AlterSetProperty(_)
            | Op::AlterClusterBy(_)
            | Op::AlterAddConstraint { .. }
            | Op::AlterWidenG
            | Op::AlterRenameAdded(_)
            | Op::AlterEnableMapping
            | Op::AlterEnableTypeWidening => 0,
            Op::InsertAdded { .. }
            | Op::InsertPositional { .. }
            | Op::UpdateAdded { .. }
            | Op::MergeStar { .. } => {
                crate::added_values::apply(self, m, &visible, cols, version, blind)
            }
        }
    }
}

/// Rows as (k, v, g), the comparable content of a model.
pub fn content(m: &Model) -> Vec<(i64, i64, i64)> {
    let mut rows: Vec<(i64, i64, i64)> = m.iter().map(|((k, _), r)| (*k, r.v, r.g)).collect();
    rows.sort();
    rows
}

/// The property `Op::AlterSetProperty(n)` sets: one of three keys, its value `n`.
pub fn property_of(n: i64) -> (String, String) {
    (format!("sim.note{}", n.rem_euclid(3)), n.to_string())
}

/// The columns `Op::AlterAddColumn(n)` adds: `c<n>`, and `d<n>` for even `n`.
pub fn added_columns(n: i64) -> Vec<String> {
    let mut c = vec![format!("c{n}")];
    if n % 2 == 0 {
        c.push(format!("d{n}"));
    }
    c
}
