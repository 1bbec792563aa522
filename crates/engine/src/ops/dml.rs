//! Shared machinery of DELETE / UPDATE / MERGE: scanning candidate files with physical row indexes,
//! evaluating predicates row by row, and staging the removal of rows — by a deletion vector
//! (merge-on-read: `remove(F, oldDV)` + `add(F, newDV)` with wide bounds), by removing the file when
//! every live row goes, or by rewriting the survivors (copy-on-write, when DVs are off).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow::compute::{concat_batches, filter_record_batch};
use arrow::datatypes::{DataType, Field, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::prelude::SessionContext;
use delta_rlc_protocol::actions::Add;
use delta_rlc_protocol::dv::DvDescriptor;
use delta_rlc_protocol::schema::StructType;
use delta_rlc_protocol::stats::FileStats;
use roaring::RoaringTreemap;

use crate::arrow_conv::table_arrow_schema;
use crate::dv_io::{encode_dvs, write_dv};
use crate::error::{EngineError, Result};
use crate::read_set::{split_predicate, ReadPredicate};
use crate::row_tracking::{row_tracking_columns, stabilize_row_tracking};
use crate::scan::{
    candidate_files, match_files, FileMatch, FileReadOptions, RowMatcher, ROW_INDEX_COLUMN,
};
use crate::snapshot::Snapshot;
use crate::txn::Transaction;
use crate::write::FileWriter;

use super::new_rows::interleave_by_mask;
pub use super::new_rows::{NewRows, REWRITE_CHUNK_BYTES};

pub use crate::operation_metrics::DmlMetrics;

/// One scanned candidate file: its live rows (table columns, then materialized row-tracking columns
/// when enabled, then the physical row index) and its DV at read time.
pub struct FileScan {
    pub add: Add,
    /// Live rows read (all of them, or with [`FileScan::live_rows`] larger, only some).
    pub rows: RecordBatch,
    pub old_dv: RoaringTreemap,
    /// Live rows of the file: physical rows minus the DV. Equal to `rows.num_rows()` unless only
    /// some rows were read (a merge-on-read MERGE reads only rows whose keys can match).
    pub live_rows: u64,
}

impl FileScan {
    pub fn row_indexes(&self) -> Result<&UInt64Array> {
        self.rows
            .column_by_name(ROW_INDEX_COLUMN)
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .ok_or_else(|| EngineError::Internal("row index column missing".into()))
    }

    /// The table columns only (what predicates and assignments see).
    pub fn table_rows(&self, n_table_cols: usize) -> Result<RecordBatch> {
        Ok(self.rows.project(&(0..n_table_cols).collect::<Vec<_>>())?)
    }
}

/// Planning context for expressions over a table.
pub struct ExprContext {
    pub schema: StructType,
    pub arrow_schema: SchemaRef,
    pub df_schema: DFSchema,
    ctx: SessionContext,
}

impl ExprContext {
    pub fn new(snapshot: &Snapshot, qualifier: Option<&str>) -> Result<Self> {
        let arrow_schema = table_arrow_schema(&snapshot.schema);
        let df_schema = match qualifier {
            Some(q) => DFSchema::try_from_qualified_schema(q, arrow_schema.as_ref())?,
            None => DFSchema::try_from(arrow_schema.as_ref().clone())?,
        };
        Ok(ExprContext {
            schema: snapshot.schema.clone(),
            arrow_schema,
            df_schema,
            ctx: crate::spark::context(),
        })
    }

    /// The same context in Spark's mode `options` (a SQL session's setting).
    pub fn with_spark_options(mut self, options: crate::spark::SparkOptions) -> Self {
        self.ctx = crate::spark::context_for(options);
        self
    }

    pub fn parse(&self, sql: &str) -> Result<Expr> {
        crate::spark::ident_case::parse_sql_expr(&self.ctx, sql, &self.df_schema)
            .and_then(|e| legacy_mode_in_expr(&self.ctx, e, &self.df_schema))
            .map_err(expr_error)
    }

    /// Plans a parsed SQL expression — never printed back to text first: sqlparser's `Display`
    /// loses quotes (a literal ending in `''` prints as one that ends in `'`).
    pub fn plan(&self, e: &datafusion::sql::sqlparser::ast::Expr) -> Result<Expr> {
        plan_sql_expr(&self.ctx, e, &self.df_schema).map_err(expr_error)
    }

    pub fn physical(&self, e: &Expr) -> Result<Arc<dyn PhysicalExpr>> {
        crate::expr_plan::plan_physical(&self.ctx, e, &self.df_schema)
    }

    pub fn n_cols(&self) -> usize {
        self.arrow_schema.fields().len()
    }
}

/// Evaluates a boolean expression; NULL counts as false.
pub fn eval_mask(phys: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> Result<BooleanArray> {
    bool_mask(&phys.evaluate(batch)?.into_array(batch.num_rows())?)
}

/// A condition's value as a mask: NULL counts as false.
pub fn bool_mask(v: &ArrayRef) -> Result<BooleanArray> {
    let b = v
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| EngineError::invalid("the condition is not a boolean expression"))?;
    Ok(null_as_false(b))
}

/// `b` with every NULL read as false; the result has no nulls (its value bits are the mask).
pub fn null_as_false(b: &BooleanArray) -> BooleanArray {
    match b.nulls() {
        Some(valid) => BooleanArray::new(b.values() & valid.inner(), None),
        None => BooleanArray::new(b.values().clone(), None),
    }
}

/// Reads the candidate files for `predicate`, registering the read in the transaction: the predicate
/// (split into partition and data parts) and every file scanned; no predicate = whole table.
pub async fn scan_candidates(
    txn: &mut Transaction,
    snapshot: &Arc<Snapshot>,
    predicate: Option<&Expr>,
) -> Result<Vec<FileScan>> {
    scan_candidates_projected(txn, snapshot, predicate, None).await
}

/// [`scan_candidates`] decoding only `projection` (other table columns come back NULL): enough
/// when only the predicate's verdict and the row indexes are needed (DV deletes).
pub async fn scan_candidates_projected(
    txn: &mut Transaction,
    snapshot: &Arc<Snapshot>,
    predicate: Option<&Expr>,
    projection: Option<Vec<String>>,
) -> Result<Vec<FileScan>> {
    let files = register_candidates(txn, snapshot, predicate)?;
    scan_files(txn, snapshot, files, projection).await
}

/// Reads `files` (registered by the caller) for a DML: live rows with their row indexes.
pub async fn scan_files(
    txn: &Transaction,
    snapshot: &Arc<Snapshot>,
    files: Vec<Add>,
    projection: Option<Vec<String>>,
) -> Result<Vec<FileScan>> {
    let opts = dml_read_options(snapshot);
    let mut out = Vec::new();
    for add in files {
        if let Some(scan) = scan_file(
            &txn.table.store,
            snapshot,
            &add,
            &opts,
            projection.as_deref(),
        )
        .await?
        {
            out.push(scan);
        }
    }
    Ok(out)
}

/// Registers a DML read in `txn` — the predicate (the whole table when none) and every candidate
/// file with its DV at read time — and returns the candidate files.
pub fn register_candidates(
    txn: &mut Transaction,
    snapshot: &Snapshot,
    predicate: Option<&Expr>,
) -> Result<Vec<Add>> {
    let reads = match predicate {
        None => Reads::WholeTable,
        Some(p) => Reads::Predicates(vec![split_predicate(
            p,
            &snapshot.metadata.partition_columns,
            p.to_string(),
        )]),
    };
    register_reads(txn, snapshot, predicate, reads)
}

/// What a DML registers as read.
pub enum Reads {
    /// Every row (no tier refines it).
    WholeTable,
    /// The rows any of these predicates can match (OR-ed).
    Predicates(Vec<ReadPredicate>),
}

/// Registers `reads` and every candidate file of `scan_filter` (with its DV at read time), and
/// returns those files. Invariant: the reads cover every row the DML's outcome depends on; the
/// scan filter only prunes files and may be broader.
pub fn register_reads(
    txn: &mut Transaction,
    snapshot: &Snapshot,
    scan_filter: Option<&Expr>,
    reads: Reads,
) -> Result<Vec<Add>> {
    match reads {
        Reads::WholeTable => txn.read_set.read_whole_table(),
        Reads::Predicates(ps) => {
            for p in ps {
                txn.read_set.add_predicate(p);
            }
        }
    }
    let files: Vec<Add> = candidate_files(snapshot, scan_filter)?
        .into_iter()
        .cloned()
        .collect();
    for add in &files {
        txn.read_set.read_file(
            &add.path,
            add.deletion_vector.as_ref().map(|d| d.unique_id()),
        );
    }
    Ok(files)
}

/// Drops the row index column (before writing rows to a new file).
pub fn without_row_index(b: &RecordBatch) -> Result<RecordBatch> {
    let keep: Vec<usize> = b
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name() != ROW_INDEX_COLUMN)
        .map(|(i, _)| i)
        .collect();
    Ok(b.project(&keep)?)
}

/// Writes rows (table columns + optional materialized row-tracking columns) as new data files.
pub async fn write_new_rows(
    txn: &mut Transaction,
    snapshot: &Snapshot,
    batches: &[RecordBatch],
    metrics: &mut DmlMetrics,
) -> Result<()> {
    let batches: Vec<RecordBatch> = batches
        .iter()
        .filter(|b| b.num_rows() > 0)
        .cloned()
        .collect();
    if batches.is_empty() {
        return Ok(());
    }
    let constraints = crate::constraints::TableConstraints::new(
        &snapshot.schema,
        &snapshot.metadata.configuration,
    )?;
    let writer = FileWriter {
        constraints: Some(&constraints),
        parquet: txn.table.parquet.clone(),
        ..FileWriter::for_table(
            &txn.table.store,
            &txn.table.env,
            &snapshot.schema,
            &snapshot.metadata,
        )?
    };
    let adds = writer.write(&batches, true).await?;
    metrics.added_files += adds.len() as u64;
    for a in adds {
        txn.add_file(a);
    }
    Ok(())
}

/// Removes the rows of `scan` selected by `mask` (aligned with `scan.rows`): a new DV, the whole
/// file, or — DVs off — the file removed and its survivors (with their stable row-tracking values)
/// pushed to `out`, where they share files with the statement's other new rows.
pub async fn stage_row_removal(
    txn: &mut Transaction,
    snapshot: &Snapshot,
    scan: &FileScan,
    mask: &BooleanArray,
    out: &mut NewRows,
    metrics: &mut DmlMetrics,
) -> Result<()> {
    if stage_removed_rows(txn, snapshot, scan, mask, metrics).await? {
        return Ok(());
    }
    let survivors = rewritten_survivors(txn, snapshot, scan, mask, metrics)?;
    out.push(without_row_index(&survivors)?);
    Ok(())
}

/// The DV path of [`stage_row_removal`]: true when the removal is staged (a DV, the whole file,
/// or nothing to remove), false when the file must be rewritten (DVs off).
async fn stage_removed_rows(
    txn: &mut Transaction,
    snapshot: &Snapshot,
    scan: &FileScan,
    mask: &BooleanArray,
    metrics: &mut DmlMetrics,
) -> Result<bool> {
    let idx = scan.row_indexes()?;
    let mut deleted = RoaringTreemap::new();
    for i in 0..mask.len() {
        if mask.value(i) {
            deleted.insert(idx.value(i));
        }
    }
    stage_deleted_rows(
        txn,
        snapshot,
        &scan.add,
        &scan.old_dv,
        &deleted,
        scan.live_rows,
        metrics,
    )
    .await
}

/// Copy-on-write: removes `scan`'s file and returns its rows not selected by `mask`, with their
/// stable row-tracking values (row index kept) — which needs every live row of the file.
fn rewritten_survivors(
    txn: &mut Transaction,
    snapshot: &Snapshot,
    scan: &FileScan,
    mask: &BooleanArray,
    metrics: &mut DmlMetrics,
) -> Result<RecordBatch> {
    if scan.rows.num_rows() as u64 != scan.live_rows {
        return Err(EngineError::Internal(format!(
            "a rewrite of {} needs all its rows; only some were read",
            scan.add.path
        )));
    }
    let now = txn.table.env.clock.now_ms();
    let keep: BooleanArray = (0..mask.len()).map(|i| Some(!mask.value(i))).collect();
    let survivors = filter_record_batch(&scan.rows, &keep)?;
    let survivors = stabilize_row_tracking(snapshot, &scan.add, &survivors, false)?;
    metrics.copied_rows += survivors.num_rows() as u64;
    txn.remove_file(scan.add.to_remove(now, true));
    metrics.removed_files += 1;
    Ok(survivors)
}

/// An UPDATE's removal of the rows of `scan` selected by `mask`, whose new images are `updated`
/// (aligned with the selected rows, in order; no row index). With DVs, or when every row changes,
/// as [`stage_row_removal`] plus the images; DVs off, the file is rewritten as Spark rewrites it:
/// one image of its rows in their order, the selected ones replaced — not survivors and updated
/// rows apart, in two files.
pub async fn stage_row_update(
    txn: &mut Transaction,
    snapshot: &Snapshot,
    scan: &FileScan,
    mask: &BooleanArray,
    updated: RecordBatch,
    out: &mut NewRows,
    metrics: &mut DmlMetrics,
) -> Result<()> {
    if stage_removed_rows(txn, snapshot, scan, mask, metrics).await? {
        out.push(updated);
        return Ok(());
    }
    let survivors = without_row_index(&rewritten_survivors(txn, snapshot, scan, mask, metrics)?)?;
    match interleave_by_mask(mask, &survivors, &updated)? {
        Some(image) => out.push(image),
        None => {
            // Columns of other types (cannot happen: both come from the same scan) — kept apart.
            out.push(survivors);
            out.push(updated);
        }
    }
    Ok(())
}

/// Stages the removal of the live rows `deleted` (physical indexes) of `add`, whose DV at read time
/// was `old_dv` and which had `live` live rows: nothing when none, the whole file when all, else a
/// new DV (old ∪ deleted) when DVs are enabled. Returns false when the survivors must be rewritten
/// instead (DVs off) — the caller does that, having the rows.
pub async fn stage_deleted_rows(
    txn: &mut Transaction,
    snapshot: &Snapshot,
    add: &Add,
    old_dv: &RoaringTreemap,
    deleted: &RoaringTreemap,
    live: u64,
    metrics: &mut DmlMetrics,
) -> Result<bool> {
    if deleted.is_empty() {
        return Ok(true);
    }
    let now = txn.table.env.clock.now_ms();
    if deleted.len() == live {
        txn.remove_file(add.to_remove(now, true));
        metrics.removed_files += 1;
        if add.deletion_vector.is_some() {
            metrics.dvs_removed += 1;
        }
        return Ok(true);
    }
    if !snapshot.deletion_vectors_enabled() {
        return Ok(false);
    }
    let mut new_dv = old_dv.clone();
    new_dv |= deleted;
    let uuid = txn.table.env.ids.uuid();
    let desc = write_dv(&txn.table.store, uuid, &new_dv).await?;
    txn.remove_file(add.to_remove(now, true));
    txn.add_file(with_new_dv(add, desc)?);
    if add.deletion_vector.is_some() {
        metrics.dvs_updated += 1;
    } else {
        metrics.dvs_added += 1;
    }
    Ok(true)
}

/// `add` with the new DV `desc`: a data change, its stats kept but no longer tight (rows left).
fn with_new_dv(add: &Add, desc: DvDescriptor) -> Result<Add> {
    let mut new_add = add.clone();
    new_add.deletion_vector = Some(Box::new(desc));
    new_add.data_change = true;
    if let Some(s) = &new_add.stats {
        let mut st = FileStats::parse(s)?;
        st.widen();
        new_add.stats = Some(st.to_json_string());
    }
    Ok(new_add)
}

/// Stages the removal of the matched rows of `matches`: nothing for a file without matches, the
/// whole file when every live row matched, else a new DV (old ∪ matched). The new DVs of all files
/// go into one DV file (one object written per statement, not one per data file); actions are
/// staged in file order. Only for tables with DVs enabled: a rewrite would need the survivors,
/// which the matching pass did not read.
pub async fn stage_dv_removals(
    txn: &mut Transaction,
    snapshot: &Snapshot,
    matches: &[FileMatch],
    metrics: &mut DmlMetrics,
) -> Result<()> {
    if !snapshot.deletion_vectors_enabled() {
        return Err(EngineError::Internal(
            "a DV removal needed a rewrite (DVs are off)".into(),
        ));
    }
    let partial: Vec<&FileMatch> = matches
        .iter()
        .filter(|m| !m.matched.is_empty() && m.matched.len() != m.live_rows)
        .collect();
    let bitmaps: Vec<RoaringTreemap> = partial
        .iter()
        .map(|m| {
            let mut dv = m.old_dv.clone();
            dv |= &m.matched;
            dv
        })
        .collect();
    let uuid = txn.table.env.ids.uuid();
    // Uploaded while the statement writes its new rows; the commit waits for it.
    let descriptors = match encode_dvs(uuid, &bitmaps)? {
        Some((rel, file, descriptors)) => {
            txn.uploads.start(&txn.table.store, rel, file)?;
            descriptors
        }
        None => Vec::new(),
    };
    let mut descriptors = descriptors.into_iter();
    let now = txn.table.env.clock.now_ms();
    for m in matches {
        if m.matched.is_empty() {
            continue;
        }
        txn.remove_file(m.add.to_remove(now, true));
        let had_dv = m.add.deletion_vector.is_some();
        if m.matched.len() == m.live_rows {
            metrics.removed_files += 1;
            metrics.dvs_removed += u64::from(had_dv);
            continue;
        }
        let desc = descriptors
            .next()
            .ok_or_else(|| EngineError::Internal("fewer DVs written than files".into()))?;
        txn.add_file(with_new_dv(&m.add, desc)?);
        match had_dv {
            true => metrics.dvs_updated += 1,
            false => metrics.dvs_added += 1,
        }
    }
    Ok(())
}

/// Pass one of merge-on-read DML: registers the read (the predicate and every candidate file) and
/// finds each candidate's live rows satisfying `predicate`, decoding only the predicate's columns,
/// several files at once (with `keep_values`, also the matched rows' predicate columns, so pass two
/// decodes only the rest). `None` (nothing registered) when the predicate cannot be evaluated over
/// its own columns alone; callers then scan full rows.
pub async fn match_candidates(
    txn: &mut Transaction,
    snapshot: &Arc<Snapshot>,
    predicate: &Expr,
    keep_values: bool,
) -> Result<Option<Vec<FileMatch>>> {
    let Some(mut matcher) = RowMatcher::new(Arc::clone(snapshot), predicate)? else {
        return Ok(None);
    };
    if keep_values {
        matcher = matcher.keeping_values();
    }
    let files = register_candidates(txn, snapshot, Some(predicate))?;
    let parallelism = txn.table.env.parallelism;
    let matches = match_files(&txn.table.store, Arc::new(matcher), files, parallelism).await?;
    Ok(Some(matches))
}

/// Read options for DML scans: DVs applied, physical row index, materialized row-tracking columns.
pub fn dml_read_options(snapshot: &Snapshot) -> FileReadOptions {
    let mut extra = Vec::new();
    if let Some((id, ver)) = row_tracking_columns(snapshot) {
        extra.push(Field::new(id, DataType::Int64, true));
        extra.push(Field::new(ver, DataType::Int64, true));
    }
    FileReadOptions {
        apply_dv: true,
        with_row_index: true,
        extra_columns: extra,
    }
}

/// Reads one candidate file's live rows (None when it has none). Callers register the read.
pub async fn scan_file(
    store: &delta_rlc_storage::TableStore,
    snapshot: &Snapshot,
    add: &Add,
    opts: &FileReadOptions,
    projection: Option<&[String]>,
) -> Result<Option<FileScan>> {
    let old_dv = crate::scan::vanished::snapshot_dv(store, snapshot, add).await?;
    let batches = crate::scan::read_file_projected(store, snapshot, add, opts, projection).await?;
    let Some(schema) = batches.first().map(|b| b.schema()) else {
        return Ok(None);
    };
    let rows = concat_batches(&schema, &batches)?;
    Ok(Some(FileScan {
        add: add.clone(),
        live_rows: rows.num_rows() as u64,
        rows,
        old_dv,
    }))
}

/// An expression that does not plan: a feature this engine lacks (DataFusion's `NotImplemented`,
/// a subquery) is `Unsupported`, anything else bad input.
fn expr_error(e: datafusion::error::DataFusionError) -> EngineError {
    expr_error_in("", e)
}

/// [`expr_error`] with `prefix` naming the statement's part ("MERGE condition: ").
pub(crate) fn expr_error_in(prefix: &str, e: datafusion::error::DataFusionError) -> EngineError {
    match e.find_root() {
        datafusion::error::DataFusionError::NotImplemented(m) => {
            EngineError::Unsupported(format!("{prefix}{m}"))
        }
        // The lexer's refusals (`spark::ident_case::parse_sql_expr`) in a statement's words.
        datafusion::error::DataFusionError::Plan(m) if m.starts_with("SQL syntax error: ") => {
            EngineError::invalid(format!("{prefix}{m}"))
        }
        _ => EngineError::invalid(format!("{prefix}{e}")),
    }
}

/// A parsed SQL expression planned against `schema` with `ctx`'s options (the same planner
/// `parse_sql_expr` uses after parsing), its column names resolved as Spark resolves them.
pub fn plan_sql_expr(
    ctx: &SessionContext,
    e: &datafusion::sql::sqlparser::ast::Expr,
    schema: &DFSchema,
) -> datafusion::error::Result<Expr> {
    let expr = crate::spark::ident_case::plan_parsed(ctx, e, schema)?;
    legacy_mode_in_expr(ctx, expr, schema)
}

/// Under a context in Spark's legacy mode (`spark.sql.ansi.enabled = false`) the expression's
/// arithmetic is given its legacy meaning now, in the expression itself: the row matchers,
/// conflict checks and pruning plan it again later in ANSI contexts, and the Spark step leaves
/// the operators it created alone, so the statement keeps one meaning everywhere.
pub fn legacy_mode_in_expr(
    ctx: &SessionContext,
    expr: Expr,
    schema: &DFSchema,
) -> datafusion::error::Result<Expr> {
    match crate::spark::SparkOptions::of_context(ctx).ansi {
        true => Ok(expr),
        false => Ok(crate::spark::rewrite::spark_semantics(expr, schema, false)?.data),
    }
}
