//! Which clause decides each joined row (the first whose kind and condition match), and the
//! target rows the deciding UPDATE and DELETE clauses remove. A target row matched by two source
//! rows is an error, as in Spark, unless the only MATCHED clause is an unconditional DELETE.

use std::collections::BTreeMap;

use arrow::array::{Array, UInt64Array};
use roaring::RoaringTreemap;

use super::join::Joined;
use super::target::FILE_IDX;
use super::{ClauseAction, ClauseKind, MergeClause, MergeSpec};
use crate::error::{EngineError, Result};
use crate::ops::dml::{bool_mask, DmlMetrics};
use crate::scan::ROW_INDEX_COLUMN;

/// For each joined row, the index of the clause that decides it (None: no clause applies).
pub(super) fn assign_clauses(spec: &MergeSpec, joined: &Joined) -> Result<Vec<Option<usize>>> {
    let (tp, sp) = (&joined.target_present, &joined.source_present);
    let mut assigned: Vec<Option<usize>> = vec![None; joined.rows()];
    for (ci, clause) in spec.clauses.iter().enumerate() {
        let cond = match &clause.condition {
            Some(c) => Some(bool_mask(&joined.eval(c, &joined.batch)?)?),
            None => None,
        };
        for (r, slot) in assigned.iter_mut().enumerate() {
            if slot.is_some() {
                continue;
            }
            let kind_ok = match clause.kind {
                ClauseKind::Matched => tp.value(r) && sp.value(r),
                ClauseKind::NotMatched => !tp.value(r) && sp.value(r),
                ClauseKind::NotMatchedBySource => tp.value(r) && !sp.value(r),
            };
            if kind_ok && cond.as_ref().is_none_or(|c| c.value(r)) {
                *slot = Some(ci);
            }
        }
    }
    Ok(assigned)
}

fn u64_column(joined: &Joined, qualifier: &str, name: &str) -> Result<UInt64Array> {
    joined
        .column_index(qualifier, name)
        .and_then(|i| {
            joined
                .batch
                .column(i)
                .as_any()
                .downcast_ref::<UInt64Array>()
                .cloned()
        })
        .ok_or_else(|| EngineError::Internal(format!("MERGE: {name} missing")))
}

/// The target rows UPDATE and DELETE clauses remove, gathered batch by batch: file index →
/// physical row indexes.
pub(super) struct Removals {
    pub by_file: BTreeMap<u64, RoaringTreemap>,
    /// The only MATCHED clause is an unconditional DELETE: several source rows may delete one
    /// target row (counted once).
    only_unconditional_delete: bool,
}

impl Removals {
    pub fn new(spec: &MergeSpec) -> Self {
        let m: Vec<&MergeClause> = spec
            .clauses
            .iter()
            .filter(|c| c.kind == ClauseKind::Matched)
            .collect();
        let only_unconditional_delete = matches!(m.as_slice(), [c] if c.condition.is_none() && matches!(c.action, ClauseAction::Delete));
        Removals {
            by_file: BTreeMap::new(),
            only_unconditional_delete,
        }
    }

    /// Adds the target rows the deciding clauses of `joined` remove. Counts updated and deleted
    /// rows in `metrics`. A target row decided by a MATCHED clause a second time (matched by a
    /// second source row, in this batch or an earlier one) is an error. Returns, per joined row,
    /// whether it removed its target row for the first time (what change data records).
    pub fn add(
        &mut self,
        spec: &MergeSpec,
        joined: &Joined,
        assigned: &[Option<usize>],
        metrics: &mut DmlMetrics,
    ) -> Result<Vec<bool>> {
        let mut removed_now = vec![false; assigned.len()];
        let files = u64_column(joined, &spec.target_alias, FILE_IDX)?;
        let row_indexes = u64_column(joined, &spec.target_alias, ROW_INDEX_COLUMN)?;
        for (r, slot) in assigned.iter().enumerate() {
            let Some(clause) = slot.and_then(|ci| spec.clauses.get(ci)) else {
                continue;
            };
            if clause.kind == ClauseKind::NotMatched {
                continue;
            }
            let Some((file, row)) = joined.target_row(&files, &row_indexes, r) else {
                continue;
            };
            // A target row is either matched (once per matching source row) or not matched by
            // source (once): a second insertion is a second match.
            let first = self.by_file.entry(file).or_default().insert(row);
            if !first {
                if clause.kind == ClauseKind::Matched && !self.only_unconditional_delete {
                    return Err(EngineError::invalid(
                        "MERGE: multiple source rows matched the same target row; make the ON condition or the source unique",
                    ));
                }
                continue;
            }
            if let Some(flag) = removed_now.get_mut(r) {
                *flag = true;
            }
            match clause.action {
                ClauseAction::Delete => metrics.deleted_rows += 1,
                ClauseAction::Update(_) => metrics.updated_rows += 1,
                ClauseAction::Insert(_) => {}
            }
        }
        Ok(removed_now)
    }
}
