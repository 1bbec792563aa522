//! [`ScanBuilder`]: rows of one version as a stream of Arrow batches, read file by file.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::physical_plan::SendableRecordBatchStream;
use delta_rlc_engine::ops::dml::ExprContext;
use delta_rlc_engine::sql::DeltaTableProvider;
use futures::{Stream, StreamExt, TryStreamExt};

use crate::error::{Error, Result};
use crate::table::Table;
use crate::Expression;

/// Reads rows. Awaiting it gives a [`RecordBatchStream`]; [`ScanBuilder::collect`] gathers it.
/// The filter prunes files by partition values and statistics and then applies to every row.
///
/// ```
/// # async fn demo(table: delta_rlc::Table) -> delta_rlc::Result<()> {
/// use delta_rlc::{col, lit};
/// use futures::TryStreamExt;
///
/// let mut stream = table
///     .scan()
///     .filter(col("id").gt(lit(100i64)))
///     .columns(["id", "v"])
///     .await?;
/// while let Some(batch) = stream.try_next().await? {
///     println!("{} rows", batch.num_rows());
/// }
/// let old = table.scan().version(0).collect().await?; // time travel
/// # let _ = old; Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct ScanBuilder {
    table: Table,
    version: Option<u64>,
    filter: Option<Expression>,
    columns: Option<Vec<String>>,
}

impl ScanBuilder {
    pub(crate) fn new(table: Table) -> Self {
        ScanBuilder {
            table,
            version: None,
            filter: None,
            columns: None,
        }
    }

    /// Keeps only rows for which `predicate` is true (with earlier `.filter` calls: all of them).
    pub fn filter(mut self, predicate: impl Into<Expression>) -> Self {
        self.filter = Expression::and_then(self.filter.take(), predicate.into());
        self
    }

    /// Returns only these columns, in this order.
    pub fn columns<I, S>(mut self, columns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.columns = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Reads this version instead of the latest.
    pub fn version(mut self, version: u64) -> Self {
        self.version = Some(version);
        self
    }

    /// Reads every matching row into memory.
    pub async fn collect(self) -> Result<Vec<RecordBatch>> {
        self.await?.try_collect().await
    }

    async fn run(self) -> Result<RecordBatchStream> {
        let inner = &self.table.inner;
        let snapshot = inner.snapshot(self.version).await?;
        let provider = DeltaTableProvider::new(inner.clone(), Arc::clone(&snapshot), None);
        // Nothing reshuffles the scan's partitions, so reading them in turn is reading the files
        // in the table's order (each partition holds a contiguous run of them).
        let ctx = delta_rlc_engine::spark::context_with(
            datafusion::prelude::SessionConfig::new()
                .with_round_robin_repartition(false)
                .with_repartition_file_scans(false),
        );
        let mut df = ctx.read_table(Arc::new(provider))?;
        if let Some(f) = &self.filter {
            let ectx = ExprContext::new(&snapshot, None)?;
            df = df.filter(f.over_table(&ectx)?)?;
        }
        if let Some(cols) = &self.columns {
            let names: Vec<&str> = cols.iter().map(String::as_str).collect();
            df = df.select_columns(&names)?;
        }
        let schema = Arc::new(df.schema().as_arrow().clone());
        let task = ctx.task_ctx();
        let plan = df.create_physical_plan().await?;
        let inner = in_partition_order(&plan, task, Arc::clone(&schema))?;
        Ok(RecordBatchStream { schema, inner })
    }
}

awaitable!(ScanBuilder => RecordBatchStream);

/// Batches read ahead per partition while an earlier partition is being consumed.
const READ_AHEAD_BATCHES: usize = 2;

/// The plan's partitions one after another (rows in the files' order, as deltalake's readers give
/// them), each executing concurrently into a small buffer so the reads still overlap.
fn in_partition_order(
    plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    task: Arc<datafusion::execution::TaskContext>,
    schema: SchemaRef,
) -> Result<SendableRecordBatchStream> {
    let n = plan.properties().output_partitioning().partition_count();
    let mut receivers = Vec::with_capacity(n);
    for i in 0..n {
        let mut part = plan.execute(i, Arc::clone(&task))?;
        let (tx, rx) = tokio::sync::mpsc::channel(READ_AHEAD_BATCHES);
        tokio::spawn(async move {
            while let Some(batch) = part.next().await {
                // The reader is gone: stop reading.
                if tx.send(batch).await.is_err() {
                    break;
                }
            }
        });
        receivers.push(rx);
    }
    let batches = futures::stream::iter(receivers).flat_map(|rx| {
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) })
    });
    Ok(Box::pin(
        datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(schema, batches),
    ))
}

/// A stream of Arrow record batches with this crate's errors.
pub struct RecordBatchStream {
    schema: SchemaRef,
    inner: SendableRecordBatchStream,
}

impl RecordBatchStream {
    pub(crate) fn new(inner: SendableRecordBatchStream) -> Self {
        RecordBatchStream {
            schema: inner.schema(),
            inner,
        }
    }

    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

impl std::fmt::Debug for RecordBatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordBatchStream")
            .field("schema", &self.schema)
            .finish()
    }
}

impl Stream for RecordBatchStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner
            .poll_next_unpin(cx)
            .map(|next| next.map(|r| r.map_err(Error::from)))
    }
}
