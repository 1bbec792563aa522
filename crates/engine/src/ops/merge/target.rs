//! The MERGE's target side as a stream: the candidate files, read one after another (a few ahead,
//! bounded by the environment's parallelism), each batch tagged with its file and physical row
//! index and a presence flag. Memory follows the files in flight, not the table.
//!
//! A file is read in full (its live rows), or — a merge-on-read MERGE whose key probe ran — only
//! the live rows the probe selected. Each file's deletion vector at read time and its live row
//! count are recorded as the stream reads it (`FileStates`): the staging step removes matched
//! rows against exactly the state that was joined.

use std::sync::{Arc, Mutex};

use arrow::array::{ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::SendableRecordBatchStream;
use delta_rlc_protocol::actions::Add;
use delta_rlc_storage::TableStore;
use futures::StreamExt;
use roaring::RoaringTreemap;

use crate::error::{EngineError, Result};
use crate::ops::dml::dml_read_options;
use crate::row_tracking::{row_tracking_columns, stabilize_row_tracking};
use crate::scan::{read_file_projected, read_file_rows, ROW_INDEX_COLUMN};
use crate::snapshot::Snapshot;

pub(crate) const FILE_IDX: &str = "__delta_rlc_file_idx";
pub(crate) const T_PRESENT: &str = "__delta_rlc_t_present";

/// One candidate file of the target.
#[derive(Debug, Clone)]
pub(crate) struct TargetFile {
    pub add: Add,
    /// The live rows the key probe selected (only these are read); `None` = every live row.
    pub only_rows: Option<RoaringTreemap>,
    /// Known before the stream runs (the probe pass read it): the DV at read time and live rows.
    pub known_state: Option<FileState>,
}

/// A file's state when the MERGE read it.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileState {
    pub old_dv: RoaringTreemap,
    pub live_rows: u64,
}

/// Per target file (by index), its state once read.
pub(crate) type FileStates = Arc<Mutex<Vec<Option<FileState>>>>;

/// The target rows a MERGE joins: the files and how each is read.
pub(crate) struct TargetPlan {
    pub files: Vec<TargetFile>,
    /// Data files the MERGE read (the key probe's candidates, or the files joined).
    pub scanned: usize,
}

impl TargetPlan {
    /// A fresh record of each file's state: the known ones filled in.
    pub fn states(&self) -> FileStates {
        Arc::new(Mutex::new(
            self.files.iter().map(|f| f.known_state.clone()).collect(),
        ))
    }
}

/// The schema of the target stream: table columns, materialized row-tracking columns, the row
/// index, the file index and the presence flag.
pub(crate) fn target_schema(snapshot: &Snapshot) -> SchemaRef {
    let table_schema = crate::arrow_conv::table_arrow_schema(&snapshot.schema);
    let mut fields: Vec<Field> = table_schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    if let Some((id, ver)) = row_tracking_columns(snapshot) {
        fields.push(Field::new(id, DataType::Int64, true));
        fields.push(Field::new(ver, DataType::Int64, true));
    }
    fields.push(Field::new(ROW_INDEX_COLUMN, DataType::UInt64, false));
    fields.push(Field::new(FILE_IDX, DataType::UInt64, false));
    fields.push(Field::new(T_PRESENT, DataType::Boolean, true));
    Arc::new(Schema::new(fields))
}

/// The target files as one DataFusion partition stream.
pub(crate) struct TargetStream {
    pub snapshot: Arc<Snapshot>,
    pub store: TableStore,
    pub files: Arc<Vec<TargetFile>>,
    pub states: FileStates,
    pub parallelism: usize,
    pub schema: SchemaRef,
}

impl std::fmt::Debug for TargetStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MergeTarget({} files)", self.files.len())
    }
}

impl PartitionStream for TargetStream {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (snapshot, store, files) = (
            Arc::clone(&self.snapshot),
            self.store.clone(),
            Arc::clone(&self.files),
        );
        let (states, schema) = (Arc::clone(&self.states), Arc::clone(&self.schema));
        let n = files.len();
        let reads = futures::stream::iter(0..n)
            .map(move |i| {
                let (snapshot, store, files) =
                    (Arc::clone(&snapshot), store.clone(), Arc::clone(&files));
                let (states, schema) = (Arc::clone(&states), Arc::clone(&schema));
                async move {
                    let Some(file) = files.get(i) else {
                        return Ok(Vec::new());
                    };
                    let batches = read_target_file(&store, &snapshot, file, i, &states).await?;
                    batches
                        .iter()
                        .map(|b| tag_batch(&snapshot, &file.add, b, i as u64, &schema))
                        .collect::<Result<Vec<_>>>()
                }
            })
            .buffered(self.parallelism.max(1))
            .flat_map(|r: Result<Vec<RecordBatch>>| {
                let items: Vec<datafusion::error::Result<RecordBatch>> = match r {
                    Ok(batches) => batches.into_iter().map(Ok).collect(),
                    Err(e) => vec![Err(e.into_datafusion())],
                };
                futures::stream::iter(items)
            });
        Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            reads,
        ))
    }
}

/// Reads one target file (all live rows, or the probe's rows) and records its state.
async fn read_target_file(
    store: &TableStore,
    snapshot: &Snapshot,
    file: &TargetFile,
    idx: usize,
    states: &FileStates,
) -> Result<Vec<RecordBatch>> {
    let opts = dml_read_options(snapshot);
    let (batches, state) = match &file.only_rows {
        Some(rows) => {
            let batches = read_file_rows(store, snapshot, &file.add, &opts, rows, None).await?;
            (batches, None)
        }
        None => {
            // Batch by batch as decoded (no concatenated copy of the file).
            let old_dv = crate::scan::vanished::snapshot_dv(store, snapshot, &file.add).await?;
            let batches = read_file_projected(store, snapshot, &file.add, &opts, None).await?;
            let live_rows = batches.iter().map(|b| b.num_rows() as u64).sum();
            (batches, Some(FileState { old_dv, live_rows }))
        }
    };
    if let Some(state) = state {
        let mut states = states
            .lock()
            .map_err(|_| EngineError::Internal("MERGE file states poisoned".into()))?;
        if let Some(slot) = states.get_mut(idx) {
            *slot = Some(state);
        }
    }
    Ok(batches)
}

/// `rows` (a DML read: table, row-tracking and row index columns) with stable row-tracking values,
/// the file index and the presence flag, in the stream's schema.
fn tag_batch(
    snapshot: &Snapshot,
    add: &Add,
    rows: &RecordBatch,
    file_idx: u64,
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let rows = stabilize_row_tracking(snapshot, add, rows, true)?;
    let n = rows.num_rows();
    let mut cols: Vec<ArrayRef> = rows.columns().to_vec();
    cols.push(Arc::new(UInt64Array::from(vec![file_idx; n])));
    cols.push(Arc::new(BooleanArray::from(vec![true; n])));
    Ok(RecordBatch::try_new(Arc::clone(schema), cols)?)
}
