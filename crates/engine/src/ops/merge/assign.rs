//! Which clause decides each joined row (the first whose kind and condition match), and the
//! target rows the deciding UPDATE and DELETE clauses remove. A target row matched by two source
//! rows is an error, as in Spark, unless the only MATCHED clause is an unconditional DELETE.

use std::collections::{BTreeMap, HashSet};

use arrow::array::{Array, UInt64Array};

use super::join::{Joined, FILE_IDX};
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

/// The target rows UPDATE and DELETE clauses remove: file index → physical row indexes. Counts
/// updated and deleted rows in `metrics`.
pub(super) fn removed_target_rows(
    spec: &MergeSpec,
    joined: &Joined,
    assigned: &[Option<usize>],
    metrics: &mut DmlMetrics,
) -> Result<BTreeMap<u64, HashSet<u64>>> {
    let files = u64_column(joined, &spec.target_alias, FILE_IDX)?;
    let row_indexes = u64_column(joined, &spec.target_alias, ROW_INDEX_COLUMN)?;
    let only_unconditional_delete = {
        let m: Vec<&MergeClause> = spec
            .clauses
            .iter()
            .filter(|c| c.kind == ClauseKind::Matched)
            .collect();
        matches!(m.as_slice(), [c] if c.condition.is_none() && matches!(c.action, ClauseAction::Delete))
    };
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    let mut removed: BTreeMap<u64, HashSet<u64>> = BTreeMap::new();
    for (r, slot) in assigned.iter().enumerate() {
        let Some(clause) = slot.and_then(|ci| spec.clauses.get(ci)) else {
            continue;
        };
        if clause.kind == ClauseKind::NotMatched {
            continue;
        }
        if let Some(k) = joined.target_row(&files, &row_indexes, r) {
            if clause.kind == ClauseKind::Matched && !seen.insert(k) && !only_unconditional_delete {
                return Err(EngineError::invalid(
                    "MERGE: multiple source rows matched the same target row; make the ON condition or the source unique",
                ));
            }
            removed.entry(k.0).or_default().insert(k.1);
            match clause.action {
                ClauseAction::Delete => metrics.deleted_rows += 1,
                ClauseAction::Update(_) => metrics.updated_rows += 1,
                ClauseAction::Insert(_) => {}
            }
        }
    }
    if only_unconditional_delete {
        // Several source rows may delete one target row; count target rows.
        metrics.deleted_rows = removed.values().map(|s| s.len() as u64).sum::<u64>();
    }
    Ok(removed)
}
