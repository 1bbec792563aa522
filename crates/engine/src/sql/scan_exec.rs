//! A streaming DataFusion scan of a snapshot's (already pruned) files. Files are dealt round-robin
//! to the output partitions; each partition reads its files one at a time and yields their batches,
//! so memory is bounded by a few files in flight, not by the table.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use delta_rlc_protocol::actions::Add;
use delta_rlc_storage::TableStore;
use futures::{StreamExt, TryStreamExt};

use crate::scan::{read_file_projected, FileReadOptions};
use crate::snapshot::Snapshot;

#[derive(Debug)]
pub struct DeltaScanExec {
    store: TableStore,
    snapshot: Arc<Snapshot>,
    /// The files of each output partition.
    partitions: Vec<Vec<Add>>,
    /// Table columns to decode (`None` = all).
    columns: Option<Vec<String>>,
    /// Positions of the output columns in the table schema (`None` = all).
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl DeltaScanExec {
    /// `schema` is the projected output schema; `target_partitions` bounds the parallelism.
    pub fn new(
        store: TableStore,
        snapshot: Arc<Snapshot>,
        files: Vec<Add>,
        columns: Option<Vec<String>>,
        projection: Option<Vec<usize>>,
        schema: SchemaRef,
        target_partitions: usize,
    ) -> Self {
        // Contiguous runs of files, so reading the partitions in turn reads the files in order.
        let n = target_partitions.clamp(1, files.len().max(1));
        let per = files.len().div_ceil(n).max(1);
        let mut partitions: Vec<Vec<Add>> = vec![Vec::new(); n];
        for (i, f) in files.into_iter().enumerate() {
            if let Some(p) = partitions.get_mut(i / per) {
                p.push(f);
            }
        }
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(n),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        DeltaScanExec {
            store,
            snapshot,
            partitions,
            columns,
            projection,
            schema,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for DeltaScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let files: usize = self.partitions.iter().map(Vec::len).sum();
        write!(
            f,
            "DeltaScanExec: version={}, files={files}, partitions={}",
            self.snapshot.version,
            self.partitions.len()
        )
    }
}

impl ExecutionPlan for DeltaScanExec {
    fn name(&self) -> &str {
        "DeltaScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "DeltaScanExec has no children".into(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let files = self.partitions.get(partition).cloned().ok_or_else(|| {
            DataFusionError::Internal(format!("DeltaScanExec has no partition {partition}"))
        })?;
        let (store, snapshot) = (self.store.clone(), Arc::clone(&self.snapshot));
        let (columns, projection) = (self.columns.clone(), self.projection.clone());
        let schema = Arc::clone(&self.schema);
        let out_schema = Arc::clone(&schema);
        let batches = futures::stream::iter(files)
            .then(move |add| {
                let (store, snapshot) = (store.clone(), Arc::clone(&snapshot));
                let (columns, projection) = (columns.clone(), projection.clone());
                let schema = Arc::clone(&out_schema);
                async move {
                    let opts = FileReadOptions::default();
                    let read =
                        read_file_projected(&store, &snapshot, &add, &opts, columns.as_deref())
                            .await
                            .map_err(|e| e.into_datafusion())?;
                    read.into_iter()
                        .map(|b| project(b, projection.as_deref(), &schema))
                        .collect::<DfResult<Vec<RecordBatch>>>()
                }
            })
            .map_ok(|batches| futures::stream::iter(batches.into_iter().map(Ok)))
            .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
    }
}

/// Hands DataFusion exactly the projected columns (the others were not decoded).
fn project(
    b: RecordBatch,
    projection: Option<&[usize]>,
    schema: &SchemaRef,
) -> DfResult<RecordBatch> {
    match projection {
        Some(p) => Ok(b.project(p)?.with_schema(Arc::clone(schema))?),
        None => Ok(b.with_schema(Arc::clone(schema))?),
    }
}
