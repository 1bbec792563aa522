//! A sliding window frame's values, oldest first. Spark computes a sliding frame afresh from its
//! first row for each row (its sliding frame has no "take a row out"), so every accumulator here
//! that must give Spark's value over such a frame keeps the frame's values and folds them again
//! (`checked_sum`, `decimal_avg`, `float_frame`, `moments`). The cost is the frame's length per
//! row, as in Spark.

use std::collections::VecDeque;

use arrow::array::{Array, ArrayRef};

/// The non-NULL values of the rows in the frame, in row order.
#[derive(Debug)]
pub(super) struct FrameValues<T> {
    values: VecDeque<T>,
}

impl<T> Default for FrameValues<T> {
    fn default() -> Self {
        FrameValues {
            values: VecDeque::new(),
        }
    }
}

impl<T> FrameValues<T> {
    /// Rows entering the frame (their non-NULL values, in order).
    pub(super) fn extend(&mut self, values: impl IntoIterator<Item = T>) {
        self.values.extend(values);
    }

    /// Rows leaving the frame: as many of the oldest values as `leaving` has non-NULL rows
    /// (NULLs were never kept).
    pub(super) fn retract(&mut self, leaving: &ArrayRef) {
        for _ in 0..leaving.len().saturating_sub(leaving.null_count()) {
            self.values.pop_front();
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.values.iter()
    }

    pub(super) fn len(&self) -> usize {
        self.values.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Bytes held beside the struct itself.
    pub(super) fn heap_size(&self) -> usize {
        self.values.capacity() * std::mem::size_of::<T>()
    }
}
