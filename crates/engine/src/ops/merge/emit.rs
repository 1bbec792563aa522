//! The rows a MERGE writes (UPDATE images and INSERTs, evaluated only over the rows their clause
//! decides) and the staged removals: matched target rows removed from their files (deletion
//! vectors, removal or rewrite).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef, BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::logical_expr::Expr;

use super::assign::Removals;
use super::join::Joined;
use super::target::{FileState, FileStates, TargetPlan};
use super::{ClauseAction, MergeSpec};
use crate::error::{EngineError, Result};
use crate::ops::conform::conform_column_with;
use crate::ops::dml::{
    dml_read_options, scan_file, stage_deleted_rows, stage_dv_removals, stage_row_removal,
    DmlMetrics, NewRows,
};
use crate::row_tracking::row_tracking_columns;
use crate::scan::FileMatch;
use crate::snapshot::Snapshot;
use crate::txn::identity::IdentityColumn;
use crate::txn::Transaction;
use crate::write::change_data::ChangeType;

/// `source_alias.name` (UPDATE SET * / INSERT *).
fn source_column(source_alias: &str, name: &str) -> Expr {
    Expr::Column(datafusion::common::Column::new(
        Some(datafusion::common::TableReference::bare(
            source_alias.to_string(),
        )),
        name,
    ))
}

/// Every table column from the source column of the same name, found without regard to case as
/// Spark resolves `*` (a target column `V` takes the source's `v`), spelled as the source spells
/// it. Two source columns of that name are refused as ambiguous.
fn star(spec: &MergeSpec, table_schema: &Schema, joined: &Joined) -> Result<HashMap<String, Expr>> {
    table_schema
        .fields()
        .iter()
        .map(|f| {
            let name = match joined
                .source_spellings(&spec.source_alias, f.name())
                .as_slice()
            {
                [one] => one.clone(),
                [] => f.name().clone(),
                _ => {
                    return Err(EngineError::invalid(format!(
                    "MERGE: UPDATE SET * and INSERT * find more than one source column named {} \
                         (names are compared without regard to case)",
                    f.name()
                )))
                }
            };
            Ok((
                f.name().to_ascii_lowercase(),
                source_column(&spec.source_alias, &name),
            ))
        })
        .collect()
}

/// `map` without the identity columns `drop` selects.
fn without_identity(
    mut map: HashMap<String, Expr>,
    identity: &[IdentityColumn],
    drop: impl Fn(&IdentityColumn) -> bool,
) -> HashMap<String, Expr> {
    for c in identity.iter().filter(|c| drop(c)) {
        map.remove(&c.name.to_ascii_lowercase());
    }
    map
}

/// An explicit value for a GENERATED ALWAYS identity column is refused.
fn refuse_always_identity(
    map: &HashMap<String, Expr>,
    identity: &[IdentityColumn],
    what: &str,
) -> Result<()> {
    match identity
        .iter()
        .find(|c| !c.allow_explicit && map.contains_key(&c.name.to_ascii_lowercase()))
    {
        Some(c) => Err(EngineError::invalid(format!(
            "MERGE {what}: {} is an identity column GENERATED ALWAYS; its values cannot be set",
            c.name
        ))),
        None => Ok(()),
    }
}

/// The target rows of `joined` selected by `mask`, typed as the table (nullable columns): the
/// pre-images and deleted rows change data records.
pub(super) fn target_rows(
    spec: &MergeSpec,
    snapshot: &Snapshot,
    joined: &Joined,
    mask: &BooleanArray,
) -> Result<RecordBatch> {
    let table_schema = crate::arrow_conv::table_arrow_schema(&snapshot.schema);
    let mut fields = Vec::with_capacity(table_schema.fields().len());
    let mut cols = Vec::with_capacity(table_schema.fields().len());
    for f in table_schema.fields() {
        let i = joined
            .column_index(&spec.target_alias, f.name())
            .ok_or_else(|| EngineError::Internal(format!("MERGE: target column {}", f.name())))?;
        cols.push(arrow::compute::filter(joined.batch.column(i), mask)?);
        fields.push(f.as_ref().clone().with_nullable(true));
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// The new rows of each UPDATE and INSERT clause, typed as the table (plus materialized
/// row-tracking columns: kept by updates, NULL for inserts), each with the change it is (an update's
/// post-image or an insert). Counts inserted rows.
pub(super) fn new_rows(
    spec: &MergeSpec,
    snapshot: &Snapshot,
    joined: &Joined,
    assigned: &[Option<usize>],
    metrics: &mut DmlMetrics,
) -> Result<Vec<(ChangeType, RecordBatch)>> {
    let table_schema = crate::arrow_conv::table_arrow_schema(&snapshot.schema);
    let extra_cols: Vec<(usize, Field)> = row_tracking_columns(snapshot)
        .map(|(id, ver)| {
            [id, ver]
                .into_iter()
                .filter_map(|name| {
                    joined
                        .column_index(&spec.target_alias, &name)
                        .map(|i| (i, Field::new(name, DataType::Int64, true)))
                })
                .collect()
        })
        .unwrap_or_default();
    let identity = crate::txn::identity::identity_columns(&snapshot.schema)?;
    // Generated and identity columns: a value left NULL here is computed by the writer, so their
    // NOT NULL is checked after that (with the table's other rules), not while conforming; and
    // `*` leaves out a generated column the source does not have (computed, as in Delta Spark).
    let computed: std::collections::HashSet<String> = snapshot
        .schema
        .fields
        .iter()
        .filter(|f| {
            crate::txn::identity::is_identity(f) || crate::constraints::generation_of(f).is_some()
        })
        .map(|f| f.name.to_ascii_lowercase())
        .collect();
    // `*` leaves out a column the source lacks when it is generated (computed) or the MERGE
    // evolves the schema (kept by UPDATE, NULL for INSERT); otherwise it is refused.
    let generated_missing_from_source = |mut map: HashMap<String, Expr>| {
        for f in snapshot.schema.fields.iter() {
            if joined.column_index(&spec.source_alias, &f.name).is_some() {
                continue;
            }
            let key = f.name.to_ascii_lowercase();
            if crate::constraints::generation_of(f).is_some() || spec.schema_evolution {
                map.remove(&key);
            } else if map.contains_key(&key) {
                return Err(EngineError::invalid(format!(
                    "MERGE: UPDATE SET * and INSERT * need source column {} (the source lacks it; name the columns to set, or merge with schema evolution to keep it)",
                    f.name
                )));
            }
        }
        Ok(map)
    };
    let conform = |v: ArrayRef, f: &Field| {
        if computed.contains(&f.name().to_ascii_lowercase()) && !f.is_nullable() {
            conform_column_with(v, &f.clone().with_nullable(true), spec.cast_failure)
        } else {
            conform_column_with(v, f, spec.cast_failure)
        }
    };
    let mut out: Vec<(ChangeType, RecordBatch)> = Vec::new();
    for (ci, clause) in spec.clauses.iter().enumerate() {
        let sel: BooleanArray = assigned.iter().map(|a| Some(*a == Some(ci))).collect();
        if sel.true_count() == 0 {
            continue;
        }
        // Only the rows this clause decides: its expressions never see (or fail on) others.
        let rows = filter_record_batch(&joined.batch, &sel)?;
        let n = rows.num_rows();
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(table_schema.fields().len());
        match &clause.action {
            ClauseAction::Delete => continue,
            ClauseAction::Update(assign) => {
                let map: HashMap<String, Expr> = match assign {
                    Some(a) => a
                        .iter()
                        .map(|(c, e)| (c.to_ascii_lowercase(), e.clone()))
                        .collect(),
                    // `UPDATE SET *` keeps identity values.
                    None => generated_missing_from_source(without_identity(
                        star(spec, &table_schema, joined)?,
                        &identity,
                        |_| true,
                    ))?,
                };
                refuse_always_identity(&map, &identity, "UPDATE SET")?;
                for f in table_schema.fields() {
                    let generated = snapshot
                        .schema
                        .field(f.name())
                        .is_some_and(|x| crate::constraints::generation_of(x).is_some());
                    let v = match map.get(&f.name().to_ascii_lowercase()) {
                        Some(e) => joined.eval(e, &rows)?,
                        // Recomputed by the writer from the updated values.
                        None if generated => new_null_array(f.data_type(), n),
                        None => rows
                            .column(
                                joined
                                    .column_index(&spec.target_alias, f.name())
                                    .ok_or_else(|| {
                                        EngineError::Internal(format!("column {}", f.name()))
                                    })?,
                            )
                            .clone(),
                    };
                    cols.push(conform(v, f)?);
                }
                for (i, _) in &extra_cols {
                    cols.push(rows.column(*i).clone());
                }
            }
            ClauseAction::Insert(values) => {
                let map: HashMap<String, Expr> = match values {
                    Some((c, v)) if c.is_empty() => table_schema
                        .fields()
                        .iter()
                        .map(|f| f.name().to_ascii_lowercase())
                        .zip(v.iter().cloned())
                        .collect(),
                    Some((c, v)) => c
                        .iter()
                        .map(|x| x.to_ascii_lowercase())
                        .zip(v.iter().cloned())
                        .collect(),
                    // `INSERT *` generates GENERATED ALWAYS values, and BY DEFAULT ones the
                    // source does not have.
                    None => generated_missing_from_source(without_identity(
                        star(spec, &table_schema, joined)?,
                        &identity,
                        |c| {
                            !c.allow_explicit
                                || joined.column_index(&spec.source_alias, &c.name).is_none()
                        },
                    ))?,
                };
                refuse_always_identity(&map, &identity, "INSERT")?;
                if let Some(k) = map.keys().find(|k| {
                    table_schema
                        .fields()
                        .iter()
                        .all(|f| f.name().to_ascii_lowercase() != **k)
                }) {
                    return Err(EngineError::invalid(format!(
                        "MERGE INSERT: unknown column {k}"
                    )));
                }
                for f in table_schema.fields() {
                    let v = match map.get(&f.name().to_ascii_lowercase()) {
                        Some(e) => joined.eval(e, &rows)?,
                        None => new_null_array(f.data_type(), n),
                    };
                    cols.push(conform(v, f)?);
                }
                for (_, f) in &extra_cols {
                    cols.push(new_null_array(f.data_type(), n));
                }
                metrics.inserted_rows += n as u64;
            }
        }
        let fields: Vec<Field> = table_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .chain(extra_cols.iter().map(|(_, f)| f.clone()))
            .map(|f| f.with_nullable(true))
            .collect();
        let change = match clause.action {
            ClauseAction::Insert(_) => ChangeType::Insert,
            _ => ChangeType::UpdatePostimage,
        };
        out.push((
            change,
            RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?,
        ));
    }
    Ok(out)
}

/// Stages the removal of each file's matched rows (after the join has run): a new DV, the whole
/// file, or — DVs off — the file removed and its survivors pushed to `survivors` (read again, one
/// file at a time; the same immutable file and DV the join read).
pub(super) async fn stage_removals(
    txn: &mut Transaction,
    snapshot: &Arc<Snapshot>,
    plan: &TargetPlan,
    states: &FileStates,
    removals: &Removals,
    survivors: &mut NewRows,
    metrics: &mut DmlMetrics,
) -> Result<()> {
    let states: Vec<Option<FileState>> = states
        .lock()
        .map_err(|_| EngineError::Internal("MERGE file states poisoned".into()))?
        .clone();
    if snapshot.deletion_vectors_enabled() {
        // Every touched file's new DV in one DV file: one object written, not one per file.
        let mut matches = Vec::with_capacity(removals.by_file.len());
        for (fi, rows) in &removals.by_file {
            let (file, state) = removed_file(plan, &states, *fi)?;
            matches.push(FileMatch {
                add: file.add.clone(),
                old_dv: state.old_dv.clone(),
                matched: rows.clone(),
                live_rows: state.live_rows,
                values: None,
            });
        }
        return stage_dv_removals(txn, snapshot, &matches, metrics).await;
    }
    for (fi, rows) in &removals.by_file {
        let (file, state) = removed_file(plan, &states, *fi)?;
        let staged = stage_deleted_rows(
            txn,
            snapshot,
            &file.add,
            &state.old_dv,
            rows,
            state.live_rows,
            metrics,
        )
        .await?;
        if staged {
            continue;
        }
        let opts = dml_read_options(snapshot);
        let Some(scan) = scan_file(&txn.table.store, snapshot, &file.add, &opts, None).await?
        else {
            return Err(EngineError::Internal(format!(
                "{} has no live rows on a second read",
                file.add.path
            )));
        };
        let idx = scan.row_indexes()?;
        let mask: BooleanArray = (0..idx.len())
            .map(|i| Some(rows.contains(idx.value(i))))
            .collect();
        stage_row_removal(txn, snapshot, &scan, &mask, survivors, metrics).await?;
    }
    Ok(())
}

/// The target file `fi` whose rows a MERGE removes, and its state when the join read it.
fn removed_file<'a>(
    plan: &'a TargetPlan,
    states: &'a [Option<FileState>],
    fi: u64,
) -> Result<(&'a super::target::TargetFile, &'a FileState)> {
    let i = usize::try_from(fi)
        .map_err(|_| EngineError::Internal("MERGE file index out of range".into()))?;
    match (plan.files.get(i), states.get(i)) {
        (Some(file), Some(Some(state))) => Ok((file, state)),
        _ => Err(EngineError::Internal(format!(
            "MERGE removed rows of target file {i}, which was not read"
        ))),
    }
}
