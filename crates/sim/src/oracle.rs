//! The serial-replay oracle. A recorded history (what each transaction intended, what it read, how
//! it ended) is judged against the table:
//! - A: replaying committed intents in commit-version order on the model gives the table's rows at
//!   every version. WriteSerializable's relaxation is explicit: a non-blind transaction is placed
//!   before the blind appends it did not see (their rows are hidden from its intent).
//! - B: each committed transaction's affected-row count equals its replayed count.
//! - D: no transaction id appears in more than one commit (an Unknown commit lands at most once).
//! - E: physical invariants: contiguous versions with one committer each, files written by aborted
//!   transactions never referenced, replay from JSON equals replay from the checkpoint.
//! - G: table rules (`CHECK (v < bound)` constraints): every row a committed transaction wrote
//!   satisfies every constraint committed before it; a committed ADD CONSTRAINT holds for every row
//!   at its version; a statement refused by a rule wrote, at its snapshot, a row that breaks one.
//! - M: the metadata at every version (columns in order, `sim.*` properties, CHECK constraints,
//!   column-mapping ids and physical names) is the serial replay of the committed ALTERs
//!   (`metadata_check.rs`).
//! - R: a committed statement is one serial order runs at its commit (the columns it names exist,
//!   its values fit the column count, its `*` finds every target column), and one refused for its
//!   columns at planning is refused by serial order at its snapshot; the rows compared by A hold
//!   the values of added columns too (`added_values.rs`).
//! - H: with the change data feed on, each version's feed applied to the rows before it gives the
//!   rows after it (`change_feed.rs`).
//! - I (identity histories): every version's new ids are the block a serial run generates after
//!   the previous mark, never reused, with the column generated from them and the rule on them
//!   holding (`identity_check.rs`, run by the simulator beside `judge`).

use std::collections::{BTreeMap, BTreeSet};

use delta_rlc_engine::conflict::IsolationLevel;
use delta_rlc_engine::snapshot::{build_segment, list_log, Snapshot};
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_protocol::actions::{parse_commit, Action};

use crate::added_values::{added, columns_after, content, refusal, Column};
use crate::model::{Model, Op};

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Committed(u64),
    /// Nothing to commit (the statement changed nothing at its snapshot).
    Empty,
    Aborted(String),
    Failed(String),
}

#[derive(Debug, Clone)]
pub struct TxnRecord {
    pub op: Op,
    pub read_version: u64,
    pub isolation: IsolationLevel,
    pub txn_id: String,
    pub affected: Option<u64>,
    pub outcome: Outcome,
    /// Data files this transaction wrote (decoded relative paths).
    pub written: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Anomaly {
    pub check: &'static str,
    pub detail: String,
}

/// A statement refused because a row it would write breaks a table rule (or an ADD CONSTRAINT
/// refused because an existing row does).
pub fn is_rule_refusal(e: &delta_rlc_engine::EngineError) -> bool {
    let m = e.to_string();
    e.kind() == delta_rlc_engine::ErrorKind::InvalidArgument
        && m.contains("constraint")
        && m.contains("violated")
}

/// A statement refused because it writes a value of `g` that an INT `g` cannot hold.
pub fn is_wide_value_refusal(op: &Op, e: &delta_rlc_engine::EngineError) -> bool {
    op.writes_wide_g()
        && e.kind() == delta_rlc_engine::ErrorKind::InvalidArgument
        && e.to_string().contains("cannot cast")
}

/// Constraint bounds (`v < bound`) in force after the committed ADD CONSTRAINTs among `records`
/// up to `version`.
fn bounds_at(by_version: &BTreeMap<u64, &TxnRecord>, version: u64) -> Vec<i64> {
    by_version
        .range(..=version)
        .filter_map(|(_, r)| match r.op {
            Op::AlterAddConstraint { bound, .. } => Some(bound),
            _ => None,
        })
        .collect()
}

fn anomaly(check: &'static str, detail: String) -> Anomaly {
    Anomaly { check, detail }
}

/// The rows of a query, each column cast to BIGINT (NULL as None).
pub async fn int_rows(session: &SqlSession, sql: &str) -> Result<Vec<Vec<Option<i64>>>, String> {
    let out = session.execute(sql).await.map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for b in &out.batches {
        let mut columns = Vec::with_capacity(b.num_columns());
        for c in b.columns() {
            let c = arrow::compute::cast(c, &arrow::datatypes::DataType::Int64)
                .map_err(|e| e.to_string())?;
            columns.push(
                c.as_any()
                    .downcast_ref::<arrow::array::Int64Array>()
                    .cloned()
                    .ok_or("not an integer column")?,
            );
        }
        for i in 0..b.num_rows() {
            use arrow::array::Array;
            rows.push(
                columns
                    .iter()
                    .map(|c| (!c.is_null(i)).then(|| c.value(i)))
                    .collect(),
            );
        }
    }
    Ok(rows)
}

/// The text of a refusal by a table rule.
fn is_rule_message(msg: &str) -> bool {
    msg.contains("constraint") && msg.contains("violated")
}

/// The table's rows at `version` as (k, v, g, the values of its added columns `cols`), sorted.
async fn rows_at(session: &SqlSession, version: u64, cols: &[Column]) -> Result<Rows, String> {
    let mut names = vec!["k".to_string(), "v".into(), "g".into()];
    names.extend(added(cols).iter().map(|c| c.name.clone()));
    let sql = format!("SELECT {} FROM t VERSION AS OF {version}", names.join(", "));
    let mut rows = int_rows(session, &sql)
        .await?
        .into_iter()
        .map(|r| match r.as_slice() {
            [Some(k), Some(v), Some(g), extra @ ..] => Ok((*k, *v, *g, extra.to_vec())),
            _ => Err(format!("unexpected row {r:?}")),
        })
        .collect::<Result<Rows, String>>()?;
    rows.sort();
    Ok(rows)
}

type Rows = Vec<(i64, i64, i64, Vec<Option<i64>>)>;

/// The table's columns at `version`, each named as its origin (what the history starts from).
async fn columns_at(
    table: &delta_rlc_engine::DeltaTable,
    version: u64,
) -> Result<Vec<Column>, String> {
    let s = table
        .snapshot(Some(version))
        .await
        .map_err(|e| e.to_string())?;
    Ok(s.schema
        .fields
        .iter()
        .map(|f| Column {
            name: f.name.clone(),
            origin: f.name.clone(),
            added: false,
        })
        .collect())
}

/// Judges a history. `base` is the model at `base_version` (after setup).
pub async fn judge(
    session: &SqlSession,
    location: &str,
    base: &Model,
    base_version: u64,
    records: &[TxnRecord],
) -> Vec<Anomaly> {
    let mut out = Vec::new();
    let table = match session.table(location) {
        Ok(t) => t,
        Err(e) => return vec![anomaly("E", format!("cannot open table: {e}"))],
    };
    let latest = match table.snapshot(None).await {
        Ok(s) => s.version,
        Err(e) => return vec![anomaly("E", format!("table unreadable: {e}"))],
    };
    let by_version: BTreeMap<u64, &TxnRecord> = records
        .iter()
        .filter_map(|r| match r.outcome {
            Outcome::Committed(v) => Some((v, r)),
            _ => None,
        })
        .collect();
    if by_version.len()
        != records
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Committed(_)))
            .count()
    {
        out.push(anomaly(
            "E",
            "two transactions claim the same version".into(),
        ));
    }
    // A + B: replay in commit order (G on the way).
    let mut model = base.clone();
    let mut models: BTreeMap<u64, Model> = BTreeMap::new();
    models.insert(base_version, model.clone());
    // The columns at each version, replayed from the committed ALTERs (check R).
    let mut cols = match columns_at(&table, base_version).await {
        Ok(c) => c,
        Err(e) => return vec![anomaly("E", format!("v{base_version} unreadable: {e}"))],
    };
    let mut columns: BTreeMap<u64, Vec<Column>> = BTreeMap::new();
    columns.insert(base_version, cols.clone());
    for v in base_version + 1..=latest {
        let Some(rec) = by_version.get(&v) else {
            out.push(anomaly(
                "E",
                format!("version {v} has no recorded committer"),
            ));
            return out;
        };
        let rv = rec.read_version;
        let relaxed =
            rec.isolation == IsolationLevel::WriteSerializable && !rec.op.is_blind_append();
        let hidden =
            move |_k: i64, r: &crate::model::Row| relaxed && r.by_blind_append && r.written_at > rv;
        // R: a statement that committed is one serial order runs (its names exist, its values
        // fit the column count, its `*` finds every target column in its source).
        if let Some(why) = refusal(&rec.op, &cols) {
            out.push(anomaly(
                "R",
                format!(
                    "v{v} {}: committed where serial order refuses it ({why})",
                    rec.op.sql()
                ),
            ));
        }
        let n = rec.op.apply_in(&mut model, v, &hidden, &cols);
        columns_after(&rec.op, &mut cols);
        columns.insert(v, cols.clone());
        let before = bounds_at(&by_version, v - 1);
        let written_bad = model
            .values()
            .any(|r| r.written_at == v && before.iter().any(|b| r.v >= *b));
        let alter_bad = match rec.op {
            Op::AlterAddConstraint { bound, .. } => model.values().any(|r| r.v >= bound),
            _ => false,
        };
        if written_bad || alter_bad {
            out.push(anomaly(
                "G",
                format!("v{v} {}: a row breaks a constraint in force", rec.op.sql()),
            ));
        }
        models.insert(v, model.clone());
        if rec.op.counts_rows() && rec.affected.is_some_and(|a| a != n) {
            out.push(anomaly(
                "B",
                format!(
                    "v{v} {}: engine affected {:?} rows, serial replay {n}",
                    rec.op.sql(),
                    rec.affected
                ),
            ));
        }
        match rows_at(session, v, &cols).await {
            Ok(rows) if rows == content(&model, &cols) => {}
            Ok(rows) => {
                out.push(anomaly(
                    "A",
                    format!(
                        "v{v} after {}: table has {} rows, model {}",
                        rec.op.sql(),
                        rows.len(),
                        model.len()
                    ),
                ));
                return out;
            }
            Err(e) => {
                out.push(anomaly("E", format!("v{v} unreadable: {e}")));
                return out;
            }
        }
    }
    // M: the metadata at every version is the serial replay of the committed ALTERs.
    out.extend(crate::metadata_check::check(&table, base_version, latest, &by_version).await);
    // H: with the change data feed on, each version's feed is exactly its change.
    if table.snapshot(None).await.is_ok_and(|s| {
        s.property_true(delta_rlc_protocol::table_properties::TableProperty::EnableChangeDataFeed)
    }) {
        out.extend(crate::change_feed::check(session, &models, base_version + 1, latest).await);
    }
    // G: a refusal by a rule is justified at the statement's snapshot.
    for rec in records {
        let Outcome::Failed(msg) = &rec.outcome else {
            continue;
        };
        // R: a statement refused at planning for its columns is refused by serial order at its
        // snapshot too.
        if crate::added_values::may_be_refused(&rec.op) && !is_rule_message(msg) {
            let at = columns
                .range(..=rec.read_version)
                .next_back()
                .map(|(_, c)| c);
            if at.is_some_and(|c| refusal(&rec.op, c).is_none()) {
                out.push(anomaly(
                    "R",
                    format!(
                        "{} refused at v{} where serial order runs it: {msg}",
                        rec.op.sql(),
                        rec.read_version
                    ),
                ));
            }
            continue;
        }
        if rec.op.writes_wide_g() && msg.contains("cannot cast") {
            // Justified only while g was INT: no widening committed at or before the snapshot.
            if by_version
                .range(..=rec.read_version)
                .any(|(_, r)| matches!(r.op, Op::AlterWidenG))
            {
                out.push(anomaly(
                    "G",
                    format!(
                        "{} refused at v{} although g was already BIGINT: {msg}",
                        rec.op.sql(),
                        rec.read_version
                    ),
                ));
            }
            continue;
        }
        if !is_rule_message(msg) {
            continue;
        }
        // The rule on identity values (identity histories): check I's.
        if msg.contains("CHECK constraint ident ") {
            continue;
        }
        let Some(at) = models.get(&rec.read_version) else {
            continue;
        };
        let mut m = at.clone();
        let probe = u64::MAX;
        let at_cols = columns
            .range(..=rec.read_version)
            .next_back()
            .map(|(_, c)| c.clone())
            .unwrap_or_default();
        rec.op.apply_in(&mut m, probe, &|_, _| false, &at_cols);
        let bounds = bounds_at(&by_version, rec.read_version);
        let justified = match rec.op {
            Op::AlterAddConstraint { bound, .. } => m.values().any(|r| r.v >= bound),
            _ => m
                .values()
                .any(|r| r.written_at == probe && bounds.iter().any(|b| r.v >= *b)),
        };
        if !justified {
            out.push(anomaly(
                "G",
                format!(
                    "{} refused at v{} by a rule no row breaks: {msg}",
                    rec.op.sql(),
                    rec.read_version
                ),
            ));
        }
    }
    // D: each transaction id committed at most once.
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for v in 0..=latest {
        let path = format!("_delta_log/{v:020}.json");
        let Ok(bytes) = table.store.get(&path).await else {
            out.push(anomaly("E", format!("commit {v} missing")));
            continue;
        };
        if let Ok(actions) = parse_commit(v, &bytes) {
            for a in actions {
                if let Action::CommitInfo(ci) = a {
                    if let Some(id) = ci.txn_id {
                        if let Some(prev) = seen.insert(id.clone(), v) {
                            out.push(anomaly(
                                "D",
                                format!("transaction {id} committed at {prev} and {v}"),
                            ));
                        }
                    }
                }
            }
        }
    }
    // E: aborted transactions' files are never referenced; JSON replay equals checkpoint replay.
    let aborted: BTreeSet<&str> = records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Aborted(_) | Outcome::Failed(_)))
        .flat_map(|r| r.written.iter().map(String::as_str))
        .collect();
    for v in base_version..=latest {
        if let Ok(s) = table.snapshot(Some(v)).await {
            if let Some(f) = s.files.iter().find(|f| aborted.contains(f.path.as_str())) {
                out.push(anomaly(
                    "E",
                    format!(
                        "v{v} references {} written by an aborted transaction",
                        f.path
                    ),
                ));
            }
        }
    }
    if let Ok(listing) = list_log(&table.store).await {
        let json_only: Vec<_> = listing
            .into_iter()
            .filter(|o| o.path.ends_with(".json"))
            .collect();
        if let Ok(seg) = build_segment(&json_only, Some(latest)) {
            match (
                Snapshot::from_segment(&table.store, &seg).await,
                table.snapshot(None).await,
            ) {
                (Ok(a), Ok(b))
                    if a.files == b.files
                        && a.metadata == b.metadata
                        && a.protocol == b.protocol => {}
                (Ok(_), Ok(_)) => out.push(anomaly(
                    "E",
                    "JSON replay differs from checkpoint replay".into(),
                )),
                (Err(e), _) | (_, Err(e)) => out.push(anomaly("E", format!("replay failed: {e}"))),
            }
        }
    }
    out
}
