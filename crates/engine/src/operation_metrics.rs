//! Each operation's metrics as a type, rendered into commitInfo's `operationMetrics` under Delta
//! Spark's names, each value a decimal string as Spark writes them (`DESCRIBE HISTORY`, deltalake
//! and the facade's `Metrics` read them so). A transaction holds one [`OperationMetrics`]; the
//! commit renders it with [`OperationMetrics::to_map`], so a counter is written under one name in
//! one place and an operation cannot record another's (before, each operation put strings into
//! the map, and an INSERT written in chunks parsed its own strings back to add to them).
//! A leaf: imports nothing from the crate.

use serde_json::{json, Map, Value};

/// What one committed operation counted.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub enum OperationMetrics {
    /// CREATE, ALTER, CLONE, …: an empty `operationMetrics`.
    #[default]
    None,
    /// INSERT, an overwrite, REPLACE WHERE, CREATE … AS SELECT.
    Write(WriteMetrics),
    /// DELETE and UPDATE.
    Dml(DmlMetrics),
    Merge(MergeMetrics),
    Optimize(OptimizeMetrics),
    Restore(RestoreMetrics),
    VacuumStart(VacuumStartMetrics),
    VacuumEnd(VacuumEndMetrics),
    /// `FSCK REPAIR TABLE`.
    Repair(RepairMetrics),
}

impl OperationMetrics {
    /// The commitInfo map, in Delta Spark's names and order.
    pub fn to_map(&self) -> Map<String, Value> {
        let mut m = Metrics(Map::new());
        match self {
            OperationMetrics::None => {}
            OperationMetrics::Write(w) => w.render(&mut m),
            OperationMetrics::Dml(d) => d.render(&mut m),
            OperationMetrics::Merge(g) => g.render(&mut m),
            OperationMetrics::Optimize(o) => o.render(&mut m),
            OperationMetrics::Restore(r) => r.render(&mut m),
            OperationMetrics::VacuumStart(v) => {
                m.put("numFilesToDelete", v.files_to_delete);
                m.put("sizeOfDataToDelete", v.bytes_to_delete);
            }
            OperationMetrics::VacuumEnd(v) => {
                m.put("numDeletedFiles", v.deleted_files);
                m.put("numVacuumedDirectories", v.vacuumed_directories);
            }
            OperationMetrics::Repair(r) => m.put("numFilesRemoved", r.files_removed),
        }
        m.0
    }

    /// Adds one written chunk to the write counters (an INSERT writes its rows in chunks), which
    /// start at zero when the transaction counted nothing else yet.
    pub fn add_write(&mut self, files: u64, rows: u64, bytes: i64) {
        let before = match self {
            OperationMetrics::Write(w) => *w,
            _ => WriteMetrics::default(),
        };
        *self = OperationMetrics::Write(WriteMetrics {
            files: before.files + files,
            output_rows: before.output_rows + rows,
            output_bytes: before.output_bytes + bytes,
        });
    }
}

/// A map being rendered: every counter a decimal string.
struct Metrics(Map<String, Value>);

impl Metrics {
    fn put(&mut self, name: &str, v: impl ToString) {
        self.0.insert(name.into(), json!(v.to_string()));
    }
}

/// An append or overwrite: the files and rows it wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WriteMetrics {
    pub files: u64,
    pub output_rows: u64,
    pub output_bytes: i64,
}

impl WriteMetrics {
    fn render(&self, m: &mut Metrics) {
        m.put("numFiles", self.files);
        m.put("numOutputRows", self.output_rows);
        m.put("numOutputBytes", self.output_bytes);
    }
}

/// DELETE, UPDATE and MERGE's row and file counters.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DmlMetrics {
    pub deleted_rows: u64,
    pub updated_rows: u64,
    pub copied_rows: u64,
    pub inserted_rows: u64,
    pub dvs_added: u64,
    pub dvs_removed: u64,
    pub dvs_updated: u64,
    pub added_files: u64,
    pub removed_files: u64,
    pub scanned_files: u64,
    /// Rows were deleted with files that have no stats and were not read: the deleted-row count is
    /// unknown and is left out of the metrics (as Delta Spark leaves it), not reported low.
    pub deleted_rows_unknown: bool,
    pub execution_time_ms: i64,
}

impl DmlMetrics {
    fn render(&self, m: &mut Metrics) {
        if !self.deleted_rows_unknown {
            m.put("numDeletedRows", self.deleted_rows);
            m.put("numTargetRowsDeleted", self.deleted_rows);
        }
        m.put("numUpdatedRows", self.updated_rows);
        m.put("numCopiedRows", self.copied_rows);
        m.put("numTargetRowsCopied", self.copied_rows);
        m.put("numTargetRowsInserted", self.inserted_rows);
        m.put("numTargetRowsUpdated", self.updated_rows);
        m.put("numDeletionVectorsAdded", self.dvs_added);
        m.put("numDeletionVectorsRemoved", self.dvs_removed);
        m.put("numDeletionVectorsUpdated", self.dvs_updated);
        m.put("numAddedFiles", self.added_files);
        m.put("numRemovedFiles", self.removed_files);
        m.put("numScannedFiles", self.scanned_files);
        m.put("executionTimeMs", self.execution_time_ms.max(0));
    }
}

/// MERGE: the DML counters, and its own names for the target's files (Delta Spark's
/// `numTargetFiles{Added,Removed}`; deltalake's scanned / skipped during the scan).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct MergeMetrics {
    pub dml: DmlMetrics,
    pub target_files_scanned: u64,
    pub target_files_skipped: u64,
}

impl MergeMetrics {
    fn render(&self, m: &mut Metrics) {
        self.dml.render(m);
        m.put("numTargetFilesAdded", self.dml.added_files);
        m.put("numTargetFilesRemoved", self.dml.removed_files);
        m.put("numTargetFilesScanned", self.target_files_scanned);
        m.put("numTargetFilesSkippedDuringScan", self.target_files_skipped);
    }
}

/// OPTIMIZE (and ZORDER BY): files and bytes compacted, and how bins were chosen (deltalake's
/// planner metrics).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct OptimizeMetrics {
    pub files_added: u64,
    pub files_removed: u64,
    pub bytes_added: i64,
    pub bytes_removed: i64,
    pub bins: u64,
    /// A bin's rows were reordered (ZORDER BY, clustering): the order they had is not kept.
    pub reordered: bool,
    pub max_bin_span_files: u64,
    pub partitions_optimized: u64,
    pub execution_time_ms: i64,
}

impl OptimizeMetrics {
    fn render(&self, m: &mut Metrics) {
        m.put("numFilesAdded", self.files_added);
        m.put("numFilesRemoved", self.files_removed);
        m.put("numAddedBytes", self.bytes_added);
        m.put("numRemovedBytes", self.bytes_removed);
        m.put("numBins", self.bins);
        m.0.insert(
            "plannerStrategy".into(),
            json!(match self.reordered {
                true => "zOrder",
                false => "preserveLocality",
            }),
        );
        for key in ["preservedStableOrder", "preserveInsertionOrder"] {
            m.put(key, !self.reordered);
        }
        m.put("maxBinSpanFiles", self.max_bin_span_files);
        m.put("partitionsOptimized", self.partitions_optimized);
        m.put("executionTimeMs", self.execution_time_ms.max(0));
    }
}

/// RESTORE: the files it removed and added back.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RestoreMetrics {
    pub removed_files: i64,
    pub restored_files: i64,
    pub removed_bytes: i64,
    pub restored_bytes: i64,
    pub files_after: i64,
}

impl RestoreMetrics {
    fn render(&self, m: &mut Metrics) {
        m.put("numRemovedFiles", self.removed_files);
        m.put("numRestoredFiles", self.restored_files);
        m.put("removedFilesSize", self.removed_bytes);
        m.put("restoredFilesSize", self.restored_bytes);
        m.put("numOfFilesAfterRestore", self.files_after);
    }
}

/// VACUUM's announcement: what it is about to delete.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct VacuumStartMetrics {
    pub files_to_delete: u64,
    pub bytes_to_delete: u64,
}

/// VACUUM's end: what it deleted.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct VacuumEndMetrics {
    pub deleted_files: u64,
    pub vacuumed_directories: u64,
}

/// `FSCK REPAIR TABLE`: the entries of missing files it removed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RepairMetrics {
    pub files_removed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_of_a_write_add_up_and_render_in_sparks_names() {
        let mut m = OperationMetrics::default();
        assert!(m.to_map().is_empty());
        m.add_write(1, 10, 100);
        m.add_write(2, 5, 50);
        let map = m.to_map();
        let keys: Vec<&str> = map.keys().map(String::as_str).collect();
        assert_eq!(keys, ["numFiles", "numOutputRows", "numOutputBytes"]);
        assert_eq!(map["numFiles"], json!("3"));
        assert_eq!(map["numOutputRows"], json!("15"));
        assert_eq!(map["numOutputBytes"], json!("150"));
    }

    #[test]
    fn an_unknown_deleted_row_count_is_left_out() {
        let d = DmlMetrics {
            deleted_rows_unknown: true,
            execution_time_ms: -3,
            ..Default::default()
        };
        let map = OperationMetrics::Dml(d).to_map();
        assert!(!map.contains_key("numDeletedRows"));
        assert_eq!(map["executionTimeMs"], json!("0"));
        let merge = OperationMetrics::Merge(MergeMetrics {
            dml: DmlMetrics {
                added_files: 2,
                ..Default::default()
            },
            target_files_scanned: 5,
            target_files_skipped: 15,
        })
        .to_map();
        assert_eq!(merge["numTargetFilesAdded"], json!("2"));
        assert_eq!(merge["numTargetFilesSkippedDuringScan"], json!("15"));
    }
}
