//! Finding the rows of data files that satisfy a predicate, and reading back only chosen rows — the
//! two passes of merge-on-read DML. Pass one ([`RowMatcher`]) decodes only the columns the
//! predicate (or another [`RowVerdict`], such as MERGE's key probe) names and yields physical row
//! indexes; pass two ([`read_file_rows`]) decodes every column, but only for those rows (a Parquet
//! row selection).
//!
//! Invariants: matched rows are live rows (the file's DV at read time is excluded); the predicate is
//! planned against exactly the columns it names, typed as in the table schema, with partition
//! values and missing columns filled in as a full read would (so the verdicts equal those of a
//! full-row evaluation); NULL verdicts do not match. Files are matched in parallel, but the results
//! come back in input order and no identifier or clock is drawn here, so runs stay deterministic.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::PhysicalExpr;
use delta_rlc_protocol::actions::Add;
use delta_rlc_storage::TableStore;
use futures::StreamExt;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use roaring::RoaringTreemap;

use super::read::{open_reader, table_column, FileReadOptions, ROW_INDEX_COLUMN};
use crate::arrow_conv::table_arrow_schema;
use crate::error::{EngineError, Result};
use crate::snapshot::Snapshot;

/// Rows per decoded batch in the matching pass. Small enough that buffers are reused from the heap
/// rather than mapped and faulted in afresh per batch (measured: faster and ~20% less memory than 64k).
const MATCH_BATCH_ROWS: usize = 8_192;

/// The outcome of matching one file.
#[derive(Debug, Clone)]
pub struct FileMatch {
    pub add: Add,
    /// The file's deletion vector when it was read.
    pub old_dv: RoaringTreemap,
    /// Physical indexes of live rows satisfying the predicate.
    pub matched: RoaringTreemap,
    /// Live rows of the file (physical rows minus the DV).
    pub live_rows: u64,
    /// With [`RowMatcher::keeping_values`]: the predicate's columns of the matched rows, in row
    /// order (pass two need not decode them again).
    pub values: Option<RecordBatch>,
}

/// Decides, for a batch of rows holding the matcher's columns, which rows match (NULL = no).
pub trait RowVerdict: Send + Sync {
    fn verdict(&self, rows: &RecordBatch) -> Result<BooleanArray>;
}

/// A planned boolean expression as a verdict.
struct PredicateVerdict(Arc<dyn PhysicalExpr>);

impl RowVerdict for PredicateVerdict {
    fn verdict(&self, rows: &RecordBatch) -> Result<BooleanArray> {
        let verdict = self.0.evaluate(rows)?.into_array(rows.num_rows())?;
        verdict
            .as_any()
            .downcast_ref::<BooleanArray>()
            .cloned()
            .ok_or_else(|| EngineError::invalid("the condition is not a boolean expression"))
    }
}

/// A row verdict (a predicate, or another test) over only the table columns it needs.
pub struct RowMatcher {
    snapshot: Arc<Snapshot>,
    /// The referenced table columns, typed as in the table schema.
    schema: SchemaRef,
    columns: Vec<String>,
    verdict: Arc<dyn RowVerdict>,
    keep_values: bool,
}

impl RowMatcher {
    /// Plans `predicate`. `None` when it references no column, only partition columns, or a column
    /// the table schema does not name exactly (callers then evaluate over full rows).
    pub fn new(snapshot: Arc<Snapshot>, predicate: &Expr) -> Result<Option<Self>> {
        let refs: Vec<String> = predicate
            .column_refs()
            .into_iter()
            .map(|c| c.name.clone())
            .collect();
        let Some((refs, schema)) = Self::columns_schema(&snapshot, refs) else {
            return Ok(None);
        };
        let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
        let phys =
            crate::expr_plan::plan_physical(&crate::spark::context(), predicate, &df_schema)?;
        Ok(Some(RowMatcher {
            snapshot,
            schema,
            columns: refs,
            verdict: Arc::new(PredicateVerdict(phys)),
            keep_values: false,
        }))
    }

    /// A matcher deciding by `verdict` over the table columns `columns`. `None` under the same
    /// conditions as [`RowMatcher::new`].
    pub fn with_verdict(
        snapshot: Arc<Snapshot>,
        columns: Vec<String>,
        verdict: Arc<dyn RowVerdict>,
    ) -> Option<Self> {
        let (columns, schema) = Self::columns_schema(&snapshot, columns)?;
        Some(RowMatcher {
            snapshot,
            schema,
            columns,
            verdict,
            keep_values: false,
        })
    }

    /// The sorted, deduplicated `refs` and their schema as typed in the table; `None` when there
    /// are none, all are partition columns, or one is not a table column.
    fn columns_schema(
        snapshot: &Snapshot,
        mut refs: Vec<String>,
    ) -> Option<(Vec<String>, SchemaRef)> {
        let table = table_arrow_schema(&snapshot.schema);
        refs.sort();
        refs.dedup();
        if refs.is_empty() {
            return None;
        }
        // At least one column must be decoded from the file: the row count of a batch comes from
        // its decoded columns (partition-only predicates are evaluated over full rows instead).
        let partition = &snapshot.metadata.partition_columns;
        if refs.iter().all(|r| partition.iter().any(|p| p == r)) {
            return None;
        }
        let mut fields: Vec<Field> = Vec::with_capacity(refs.len());
        for name in &refs {
            fields.push(table.field_with_name(name).ok()?.clone());
        }
        Some((refs, Arc::new(Schema::new(fields))))
    }

    /// Also return the matched rows' values of the predicate's columns ([`FileMatch::values`]).
    pub fn keeping_values(mut self) -> Self {
        self.keep_values = true;
        self
    }

    /// Matches one file.
    pub async fn match_file(&self, store: &TableStore, add: Add) -> Result<FileMatch> {
        let old_dv = super::vanished::snapshot_dv(store, &self.snapshot, &add).await?;
        let reader = open_reader(store, &self.snapshot, &add, Some(&self.columns), &[], false)
            .await?
            .with_batch_size(MATCH_BATCH_ROWS)
            .build()
            .map_err(|e| EngineError::corrupt(format!("data file {}: {e}", add.path)))?;
        let mut matched = RoaringTreemap::new();
        let mut values: Vec<RecordBatch> = Vec::new();
        let mut offset: u64 = 0;
        for batch in reader {
            let batch =
                batch.map_err(|e| EngineError::corrupt(format!("data file {}: {e}", add.path)))?;
            let batch = crate::column_mapping::to_logical(&self.snapshot, batch, &[])?;
            let n = batch.num_rows();
            let columns = self
                .schema
                .fields()
                .iter()
                .map(|f| table_column(&self.snapshot, &add, f, &batch))
                .collect::<Result<Vec<ArrayRef>>>()?;
            let rows = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
            let verdict = self.verdict.verdict(&rows)?;
            if verdict.len() != n {
                return Err(EngineError::Internal(format!(
                    "a row verdict of {} rows for a batch of {n}",
                    verdict.len()
                )));
            }
            let mut hits = Vec::new();
            for i in verdict.values().set_indices() {
                if verdict.is_valid(i) {
                    let row = offset + i as u64;
                    if !old_dv.contains(row) {
                        matched.insert(row);
                        hits.push(i as u64);
                    }
                }
            }
            if self.keep_values && !hits.is_empty() {
                let taken = arrow::compute::take_record_batch(&rows, &UInt64Array::from(hits))?;
                values.push(taken);
            }
            offset += n as u64;
        }
        if let Some(max) = old_dv.max() {
            if max >= offset {
                return Err(EngineError::corrupt(format!(
                    "deletion vector of {} deletes row {max} but the file has {offset} rows",
                    add.path
                )));
            }
        }
        let live_rows = offset - old_dv.len();
        let values = match self.keep_values {
            true => Some(arrow::compute::concat_batches(&self.schema, &values)?),
            false => None,
        };
        Ok(FileMatch {
            add,
            old_dv,
            matched,
            live_rows,
            values,
        })
    }
}

/// Matches `files` with up to `parallelism` files in flight; results in input order.
pub async fn match_files(
    store: &TableStore,
    matcher: Arc<RowMatcher>,
    files: Vec<Add>,
    parallelism: usize,
) -> Result<Vec<FileMatch>> {
    crate::dv_io::prefetch_files(store, &matcher.snapshot.root, &files).await;
    let tasks = files.into_iter().map(|add| {
        let store = store.clone();
        let matcher = Arc::clone(&matcher);
        tokio::spawn(async move { matcher.match_file(&store, add).await })
    });
    in_order(tasks, parallelism, "matching").await
}

/// Reads every table column (plus `opts.extra_columns` and, if asked, the row index) of only the
/// physical rows `rows` of `add`, in row order. Rows deleted by the file's DV are dropped; a row
/// past the end of the file is a corruption error. `known` holds some table columns of exactly those
/// rows, in row order (the matching pass's values): they are taken as they are, not decoded again.
pub async fn read_file_rows(
    store: &TableStore,
    snapshot: &Snapshot,
    add: &Add,
    opts: &FileReadOptions,
    rows: &RoaringTreemap,
    known: Option<&RecordBatch>,
) -> Result<Vec<RecordBatch>> {
    let mut wanted = rows.clone();
    if opts.apply_dv {
        wanted -= super::vanished::snapshot_dv(store, snapshot, add).await?;
    }
    if known.is_some_and(|k| k.num_rows() as u64 != wanted.len()) {
        return Err(EngineError::Internal(format!(
            "matched values of {} do not cover the rows to read",
            add.path
        )));
    }
    let is_known = |name: &str| known.is_some_and(|k| k.schema().field_with_name(name).is_ok());
    let table = table_arrow_schema(&snapshot.schema);
    let decode: Vec<String> = table
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| !is_known(n))
        .collect();
    let partition = &snapshot.metadata.partition_columns;
    let nothing_to_decode =
        decode.iter().all(|c| partition.contains(c)) && opts.extra_columns.is_empty();
    let chunks: Vec<RecordBatch> = match known {
        Some(k) if nothing_to_decode => vec![k.clone()],
        _ => decode_rows(store, snapshot, add, &decode, opts, &wanted).await?,
    };
    let mut fields: Vec<Field> = table.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.extend(opts.extra_columns.iter().cloned());
    if opts.with_row_index {
        fields.push(Field::new(ROW_INDEX_COLUMN, DataType::UInt64, false));
    }
    let schema = Arc::new(Schema::new(fields));
    let mut indexes = wanted.iter();
    let mut offset = 0usize;
    let mut out = Vec::new();
    for batch in chunks {
        let n = batch.num_rows();
        let known_part = match known {
            Some(k) if offset + n <= k.num_rows() => Some(k.slice(offset, n)),
            Some(_) => {
                return Err(EngineError::Internal(format!(
                    "row selection of {} returned more rows than selected",
                    add.path
                )))
            }
            None => None,
        };
        let mut columns = Vec::with_capacity(schema.fields().len());
        for field in schema.fields() {
            if field.name() == ROW_INDEX_COLUMN {
                let idx: Vec<u64> = indexes.by_ref().take(n).collect();
                if idx.len() != n {
                    return Err(EngineError::Internal(format!(
                        "row selection of {} returned more rows than selected",
                        add.path
                    )));
                }
                columns.push(Arc::new(UInt64Array::from(idx)) as ArrayRef);
            } else if let Some(c) = known_part
                .as_ref()
                .and_then(|k| k.column_by_name(field.name()))
            {
                columns.push(Arc::clone(c));
            } else {
                columns.push(table_column(snapshot, add, field, &batch)?);
            }
        }
        out.push(RecordBatch::try_new(Arc::clone(&schema), columns)?);
        offset += n;
    }
    let returned: usize = out.iter().map(|b| b.num_rows()).sum();
    if returned as u64 != wanted.len() {
        return Err(EngineError::Internal(format!(
            "row selection of {} returned {returned} rows, {} selected",
            add.path,
            wanted.len()
        )));
    }
    Ok(out)
}

/// Decodes the `columns` (and `opts.extra_columns`) of exactly the rows `wanted` of `add`.
async fn decode_rows(
    store: &TableStore,
    snapshot: &Snapshot,
    add: &Add,
    columns: &[String],
    opts: &FileReadOptions,
    wanted: &RoaringTreemap,
) -> Result<Vec<RecordBatch>> {
    let builder = open_reader(
        store,
        snapshot,
        add,
        Some(columns),
        &opts.extra_columns,
        true,
    )
    .await?;
    let total = u64::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    if let Some(max) = wanted.max() {
        if max >= total {
            return Err(EngineError::corrupt(format!(
                "row {max} of {} requested but the file has {total} rows",
                add.path
            )));
        }
    }
    let reader = builder
        .with_row_selection(selection(wanted, total))
        .with_batch_size(8192)
        .build()
        .map_err(|e| EngineError::corrupt(format!("data file {}: {e}", add.path)))?;
    reader
        .map(|b| {
            let b = b.map_err(|e| EngineError::corrupt(format!("data file {}: {e}", add.path)))?;
            crate::column_mapping::to_logical(snapshot, b, &opts.extra_columns)
        })
        .collect()
}

/// [`read_file_rows`] of each match's matched rows, up to `parallelism` files at once; results in
/// input order (an empty list for a match without rows).
pub async fn read_matched_rows(
    store: &TableStore,
    snapshot: &Arc<Snapshot>,
    opts: &FileReadOptions,
    matches: &[FileMatch],
    parallelism: usize,
) -> Result<Vec<Vec<RecordBatch>>> {
    // Owned inputs: a closure over `&FileMatch` would make every caller's future non-`Send`
    // for a library awaiting it on a multi-threaded runtime (a higher-ranked lifetime rustc
    // cannot prove general enough).
    let touched = matches.iter().filter(|m| !m.matched.is_empty());
    crate::dv_io::prefetch_files(store, &snapshot.root, touched.map(|m| &m.add)).await;
    let inputs: Vec<_> = matches
        .iter()
        .map(|m| (m.add.clone(), m.matched.clone(), m.values.clone()))
        .collect();
    let (store, snapshot, opts) = (store.clone(), Arc::clone(snapshot), opts.clone());
    let tasks = inputs.into_iter().map(move |(add, rows, known)| {
        let (store, snapshot, opts) = (store.clone(), Arc::clone(&snapshot), opts.clone());
        tokio::spawn(async move {
            if rows.is_empty() {
                return Ok(Vec::new());
            }
            read_file_rows(&store, &snapshot, &add, &opts, &rows, known.as_ref()).await
        })
    });
    in_order(tasks, parallelism, "reading").await
}

/// Awaits spawned `tasks` with at most `parallelism` in flight (a task is spawned only when the
/// stream pulls it), returning their results in order; the first error wins.
async fn in_order<T: Send + 'static>(
    tasks: impl Iterator<Item = tokio::task::JoinHandle<Result<T>>>,
    parallelism: usize,
    what: &str,
) -> Result<Vec<T>> {
    let results: Vec<_> = futures::stream::iter(tasks)
        .buffered(parallelism.max(1))
        .collect()
        .await;
    results
        .into_iter()
        .map(|r| r.map_err(|e| EngineError::Internal(format!("{what} task failed: {e}")))?)
        .collect()
}

/// A Parquet row selection of exactly `rows` (sorted, all below `total`).
fn selection(rows: &RoaringTreemap, total: u64) -> RowSelection {
    let mut selectors = Vec::new();
    let mut next: u64 = 0; // first row not yet covered by a selector
    let mut run: Option<(u64, u64)> = None; // [start, end) of the current selected run
    for r in rows.iter() {
        match run {
            Some((s, e)) if e == r => run = Some((s, e + 1)),
            _ => {
                if let Some((s, e)) = run {
                    push_run(&mut selectors, next, s, e);
                    next = e;
                }
                run = Some((r, r + 1));
            }
        }
    }
    if let Some((s, e)) = run {
        push_run(&mut selectors, next, s, e);
        next = e;
    }
    if total > next {
        selectors.push(RowSelector::skip((total - next) as usize));
    }
    RowSelection::from(selectors)
}

/// Skips rows `[next, start)` (if any) and selects `[start, end)`.
fn push_run(selectors: &mut Vec<RowSelector>, next: u64, start: u64, end: u64) {
    if start > next {
        selectors.push(RowSelector::skip((start - next) as usize));
    }
    selectors.push(RowSelector::select((end - start) as usize));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_covers_exactly_the_rows() {
        let rows: RoaringTreemap = [0u64, 1, 2, 5, 9, 10].into_iter().collect();
        let sel: Vec<RowSelector> = selection(&rows, 12).into();
        assert_eq!(
            sel,
            vec![
                RowSelector::select(3),
                RowSelector::skip(2),
                RowSelector::select(1),
                RowSelector::skip(3),
                RowSelector::select(2),
                RowSelector::skip(1),
            ]
        );
        let none: Vec<RowSelector> = selection(&RoaringTreemap::new(), 4).into();
        assert_eq!(none, vec![RowSelector::skip(4)]);
    }
}
