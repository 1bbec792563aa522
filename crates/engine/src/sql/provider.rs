//! A DataFusion `TableProvider` over one snapshot. Filters are pushed down as *inexact*: they prune
//! files by partition values and stats; DataFusion still applies them to rows. When the scan runs
//! inside a transaction, it registers what it read (the pushed predicate, split into partition and
//! data parts, and the files it returned; a scan without filters reads the whole table). Rows are
//! streamed file by file ([`DeltaScanExec`]), never the whole table in memory.

use std::sync::{Arc, Mutex};

use arrow::array::{RecordBatch, RecordBatchOptions};
use arrow::datatypes::{Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use delta_rlc_protocol::actions::Add;

use super::scan_exec::DeltaScanExec;
use crate::error::EngineError;
use crate::read_set::{split_predicate, ReadSet};
use crate::scan::{candidate_files, FileReadOptions};
use crate::snapshot::Snapshot;
use crate::table::DeltaTable;

#[derive(Debug)]
pub struct DeltaTableProvider {
    pub table: DeltaTable,
    pub snapshot: Arc<Snapshot>,
    schema: SchemaRef,
    /// Where reads are recorded when this scan belongs to a transaction.
    pub reads: Option<Arc<Mutex<ReadSet>>>,
}

impl DeltaTableProvider {
    pub fn new(
        table: DeltaTable,
        snapshot: Arc<Snapshot>,
        reads: Option<Arc<Mutex<ReadSet>>>,
    ) -> Self {
        let schema = crate::arrow_conv::table_arrow_schema(&snapshot.schema);
        DeltaTableProvider {
            table,
            snapshot,
            schema,
            reads,
        }
    }

    /// Each column carries its Delta field metadata in the scan's schema (query results only:
    /// `SqlSession::field_metadata`).
    pub fn with_field_metadata(mut self) -> Self {
        self.schema = crate::arrow_conv::table_arrow_schema_with_metadata(&self.snapshot.schema);
        self
    }
}

#[async_trait]
impl TableProvider for DeltaTableProvider {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let filter = filters.iter().cloned().reduce(|a, b| a.and(b));
        let files =
            candidate_files(&self.snapshot, filter.as_ref()).map_err(|e| e.into_datafusion())?;
        if let Some(reads) = &self.reads {
            // A read that cannot be recorded must fail the statement: a dropped read would let a
            // conflict check miss it.
            let mut r = reads.lock().map_err(|_| {
                EngineError::Internal("the read set's lock is poisoned".into()).into_datafusion()
            })?;
            {
                r.read_by_query();
                match &filter {
                    None => r.read_whole_table(),
                    Some(f) => r.add_predicate(split_predicate(
                        f,
                        &self.snapshot.metadata.partition_columns,
                        f.to_string(),
                    )),
                }
                for f in &files {
                    r.read_file(&f.path, f.deletion_vector.as_ref().map(|d| d.unique_id()));
                }
            }
        }
        // Decode only the projected columns (DataFusion adds the filter columns to the projection).
        let names: Option<Vec<String>> = projection.map(|p| {
            p.iter()
                .filter_map(|i| self.schema.fields().get(*i).map(|f| f.name().clone()))
                .collect()
        });
        if projection.is_some_and(|p| p.is_empty()) {
            // No column is needed (e.g. count(*)): only row counts, from the log where it says
            // them exactly (numRecords minus the DV's cardinality), else by reading the file.
            let mut batches = Vec::new();
            let opts = FileReadOptions::default();
            let schema = Arc::new(Schema::empty());
            for f in files {
                let live = match live_rows_from_log(f) {
                    Some(n) => n,
                    None => crate::scan::read_file(&self.table.store, &self.snapshot, f, &opts)
                        .await
                        .map_err(|e| e.into_datafusion())?
                        .iter()
                        .map(|b| b.num_rows())
                        .sum(),
                };
                let options = RecordBatchOptions::new().with_row_count(Some(live));
                batches.push(RecordBatch::try_new_with_options(
                    schema.clone(),
                    vec![],
                    &options,
                )?);
            }
            return MemorySourceConfig::try_new_exec(&[batches], schema, None)
                .map(|e| e as Arc<dyn ExecutionPlan>);
        }
        let schema = match projection {
            Some(p) => Arc::new(self.schema.project(p)?),
            None => self.schema.clone(),
        };
        Ok(Arc::new(DeltaScanExec::new(
            self.table.store.clone(),
            Arc::clone(&self.snapshot),
            files.into_iter().cloned().collect(),
            names,
            projection.cloned(),
            schema,
            state.config().target_partitions(),
        )))
    }
}

/// Live rows of a file according to the log: `numRecords` (always exact, even when the bounds are
/// wide) minus the DV's cardinality. `None` without stats, or when they do not add up.
fn live_rows_from_log(add: &Add) -> Option<usize> {
    let n = add.num_records()?;
    let deleted = add.deletion_vector.as_ref().map_or(0, |d| d.cardinality);
    usize::try_from(n.checked_sub(deleted)?).ok()
}
