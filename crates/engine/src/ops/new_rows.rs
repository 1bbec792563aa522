//! The new rows of a DML statement before they are written: its updated and inserted rows and
//! the survivors of the files it rewrites (deletion vectors off) buffered together, so they share
//! files — as Spark writes a rewritten file's rows with the changed ones, not apart.

use arrow::array::{Array, BooleanArray, RecordBatch};

use super::dml::{write_new_rows, DmlMetrics};
use crate::error::Result;
use crate::snapshot::Snapshot;
use crate::txn::Transaction;

/// Bytes of survivors a copy-on-write DELETE buffers before writing them as files.
pub const REWRITE_CHUNK_BYTES: usize = 128 << 20;

/// The new rows of a statement, buffered so that its updated and inserted rows and the survivors
/// of the files it rewrites share files: written together once the caller's chunk is full, one
/// stage of writes and no more objects than the rows need. Batches whose columns differ in type
/// are kept in groups of their own (each group is one write).
#[derive(Default)]
pub struct NewRows {
    groups: Vec<Vec<RecordBatch>>,
    bytes: usize,
}

impl NewRows {
    /// Buffers `b` (an empty batch is dropped).
    pub fn push(&mut self, b: RecordBatch) {
        if b.num_rows() == 0 {
            return;
        }
        self.bytes += b.get_array_memory_size();
        for g in &mut self.groups {
            let Some(first) = g.first() else { continue };
            if !same_names(first, &b) {
                continue;
            }
            if let Ok(same) = RecordBatch::try_new(first.schema(), b.columns().to_vec()) {
                g.push(same);
                return;
            }
        }
        self.groups.push(vec![b]);
    }

    /// Bytes buffered since the last write.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Writes what is buffered as new data files of `txn`.
    pub async fn write(
        &mut self,
        txn: &mut Transaction,
        snapshot: &Snapshot,
        metrics: &mut DmlMetrics,
    ) -> Result<()> {
        for g in std::mem::take(&mut self.groups) {
            write_new_rows(txn, snapshot, &g, metrics).await?;
        }
        self.bytes = 0;
        Ok(())
    }
}

/// Whether `a` and `b` have the same columns by name, in order (a batch is only ever given
/// another's schema when its columns are the same ones; the types are checked by the batch).
fn same_names(a: &RecordBatch, b: &RecordBatch) -> bool {
    let (a, b) = (a.schema(), b.schema());
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields())
            .all(|(x, y)| x.name() == y.name())
}

/// The rows of `unselected` and `selected` merged back into one batch in `mask`'s order (row i is
/// the next of `selected` where `mask[i]`, else the next of `unselected`); None when their
/// columns differ in type or the counts do not add up.
pub(super) fn interleave_by_mask(
    mask: &BooleanArray,
    unselected: &RecordBatch,
    selected: &RecordBatch,
) -> Result<Option<RecordBatch>> {
    if !same_names(unselected, selected)
        || unselected.num_rows() + selected.num_rows() != mask.len()
        || mask.true_count() != selected.num_rows()
    {
        return Ok(None);
    }
    let Ok(selected) = RecordBatch::try_new(unselected.schema(), selected.columns().to_vec())
    else {
        return Ok(None);
    };
    let (mut u, mut s) = (0usize, 0usize);
    let mut indices = Vec::with_capacity(mask.len());
    for i in 0..mask.len() {
        if mask.is_valid(i) && mask.value(i) {
            indices.push((1usize, s));
            s += 1;
        } else {
            indices.push((0usize, u));
            u += 1;
        }
    }
    let mut cols = Vec::with_capacity(unselected.num_columns());
    for (a, b) in unselected.columns().iter().zip(selected.columns()) {
        cols.push(arrow::compute::interleave(
            &[a.as_ref(), b.as_ref()],
            &indices,
        )?);
    }
    Ok(Some(RecordBatch::try_new(unselected.schema(), cols)?))
}
