//! Which clause decides each joined row (the first whose kind and condition match), and the
//! target rows the deciding UPDATE and DELETE clauses remove. A target row matched by two source
//! rows is an error, as in Spark, unless the only MATCHED clause is an unconditional DELETE.

use std::collections::BTreeMap;

use arrow::array::{Array, UInt64Array};
use arrow::buffer::BooleanBuffer;
use roaring::RoaringTreemap;

use super::join::Joined;
use super::target::FILE_IDX;
use super::{ClauseAction, ClauseKind, MergeClause, MergeSpec};
use crate::error::{EngineError, Result};
use crate::ops::dml::{bool_mask, DmlMetrics};
use crate::scan::ROW_INDEX_COLUMN;

/// For each joined row, the index of the clause that decides it (None: no clause applies).
pub(super) fn assign_clauses(spec: &MergeSpec, joined: &Joined) -> Result<Vec<Option<usize>>> {
    // Presence flags and conditions have no nulls (NULL reads as false), so their value bits are
    // the masks.
    let (tp, sp) = (
        joined.target_present.values(),
        joined.source_present.values(),
    );
    let n = joined.rows();
    let mut assigned: Vec<Option<usize>> = vec![None; n];
    let mut open = BooleanBuffer::new_set(n);
    for (ci, clause) in spec.clauses.iter().enumerate() {
        if open.count_set_bits() == 0 {
            break;
        }
        let kind = match clause.kind {
            ClauseKind::Matched => tp & sp,
            ClauseKind::NotMatched => &!tp & sp,
            ClauseKind::NotMatchedBySource => tp & &!sp,
        };
        let mut decided = &kind & &open;
        if let Some(c) = &clause.condition {
            decided = &decided & bool_mask(&joined.eval(c, &joined.batch)?)?.values();
        }
        for r in decided.set_indices() {
            if let Some(slot) = assigned.get_mut(r) {
                *slot = Some(ci);
            }
        }
        open = &open & &!&decided;
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
    /// Target rows a source row matched that no clause removed (no MATCHED clause's condition
    /// held), by file index: the statement depends on each without changing it — its existence
    /// decides that no NOT MATCHED clause inserts for that source row. The conflict checker's DV
    /// merge must not settle a winner's deletion of one (`ReadSet::kept_rows`).
    pub matched_unchanged: BTreeMap<u64, RoaringTreemap>,
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
            matched_unchanged: BTreeMap::new(),
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
        // The removing rows of this batch, in runs of one file: (joined row, clause, target row).
        let mut run: Vec<(usize, &MergeClause, u64)> = Vec::new();
        let mut run_file: Option<u64> = None;
        let matched = joined.target_present.values() & joined.source_present.values();
        for (r, slot) in assigned.iter().enumerate() {
            let Some(clause) = slot.and_then(|ci| spec.clauses.get(ci)) else {
                if matched.value(r) {
                    if let Some((file, row)) = joined.target_row(&files, &row_indexes, r) {
                        self.matched_unchanged.entry(file).or_default().insert(row);
                    }
                }
                continue;
            };
            if clause.kind == ClauseKind::NotMatched {
                continue;
            }
            let Some((file, row)) = joined.target_row(&files, &row_indexes, r) else {
                continue;
            };
            if run_file.is_some_and(|f| f != file) {
                self.add_run(run_file, &mut run, &mut removed_now, metrics)?;
            }
            run_file = Some(file);
            run.push((r, clause, row));
        }
        self.add_run(run_file, &mut run, &mut removed_now, metrics)?;
        Ok(removed_now)
    }

    /// Adds one file's run of removing rows (drained). A run whose rows ascend past every row
    /// already noted for the file is appended at once (none can be a repeat); any other run goes
    /// row by row, where a row noted before is a second match.
    fn add_run(
        &mut self,
        file: Option<u64>,
        run: &mut Vec<(usize, &MergeClause, u64)>,
        removed_now: &mut [bool],
        metrics: &mut DmlMetrics,
    ) -> Result<()> {
        let Some(file) = file else {
            return Ok(());
        };
        let rows = self.by_file.entry(file).or_default();
        let ascending = run.windows(2).all(|w| w[0].2 < w[1].2)
            && run
                .first()
                .is_some_and(|&(_, _, first)| rows.max().is_none_or(|m| m < first));
        let mut fresh = vec![true; run.len()];
        if ascending {
            rows.append(run.iter().map(|&(_, _, row)| row))
                .map_err(|_| EngineError::Internal("MERGE removals out of order".into()))?;
        } else {
            for (i, &(_, clause, row)) in run.iter().enumerate() {
                // A target row is either matched (once per matching source row) or not matched
                // by source (once): a second insertion is a second match.
                if rows.insert(row) {
                    continue;
                }
                if clause.kind == ClauseKind::Matched && !self.only_unconditional_delete {
                    return Err(EngineError::invalid(
                        "MERGE: multiple source rows matched the same target row (duplicate relevant WHEN MATCHED clauses); make the ON condition or the source unique",
                    ));
                }
                if let Some(f) = fresh.get_mut(i) {
                    *f = false;
                }
            }
        }
        for (&(r, clause, _), first) in run.iter().zip(fresh) {
            if !first {
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
        run.clear();
        Ok(())
    }
}
