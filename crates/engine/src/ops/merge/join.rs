//! The target rows joined to the source: inner, left, right or full, by which clause kinds the
//! MERGE has. Each side carries a presence flag (NULL on the side a row lacks) and the target
//! carries each row's file and physical row index.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{DFSchema, JoinType};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;

use super::{ClauseKind, MergeSpec};
use crate::error::{EngineError, Result};
use crate::ops::dml::FileScan;
use crate::row_tracking::{row_tracking_columns, stabilize_row_tracking};
use crate::scan::ROW_INDEX_COLUMN;
use crate::snapshot::Snapshot;

pub(super) const FILE_IDX: &str = "__delta_rlc_file_idx";
const T_PRESENT: &str = "__delta_rlc_t_present";
const S_PRESENT: &str = "__delta_rlc_s_present";

/// `batch` with one more column.
fn with_column(batch: &RecordBatch, field: Field, column: ArrayRef) -> Result<RecordBatch> {
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(field);
    let mut cols = batch.columns().to_vec();
    cols.push(column);
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// `batch` with a presence flag (true on every row; the join leaves it NULL where the side has
/// no row).
fn with_flag(batch: &RecordBatch, flag: &str) -> Result<RecordBatch> {
    let flags = Arc::new(BooleanArray::from(vec![true; batch.num_rows()]));
    with_column(batch, Field::new(flag, DataType::Boolean, true), flags)
}

/// `batch` with the index of the scanned file its rows come from.
fn with_file_idx(batch: &RecordBatch, idx: u64) -> Result<RecordBatch> {
    let idxs = Arc::new(UInt64Array::from(vec![idx; batch.num_rows()]));
    with_column(batch, Field::new(FILE_IDX, DataType::UInt64, false), idxs)
}

fn column_index(schema: &DFSchema, qualifier: &str, name: &str) -> Option<usize> {
    schema.iter().position(|(q, f)| {
        q.is_some_and(|q| q.table().eq_ignore_ascii_case(qualifier))
            && f.name().eq_ignore_ascii_case(name)
    })
}

/// The joined rows, their schema (columns qualified by the aliases) and the context that plans
/// expressions over them.
pub(super) struct Joined {
    pub batch: RecordBatch,
    pub schema: DFSchema,
    ctx: SessionContext,
    /// Per row: a target row is present / a source row is present.
    pub target_present: BooleanArray,
    pub source_present: BooleanArray,
}

impl Joined {
    pub fn rows(&self) -> usize {
        self.batch.num_rows()
    }

    pub fn column_index(&self, qualifier: &str, name: &str) -> Option<usize> {
        column_index(&self.schema, qualifier, name)
    }

    /// Evaluates `e` over `rows` (the joined rows, or a selection of them).
    pub fn eval(&self, e: &Expr, rows: &RecordBatch) -> Result<ArrayRef> {
        let p = self
            .ctx
            .create_physical_expr(e.clone(), &self.schema)
            .map_err(|e| EngineError::invalid(format!("MERGE: {e}")))?;
        Ok(p.evaluate(rows)?.into_array(rows.num_rows())?)
    }

    /// (file index, row index) of the target row of joined row `r`, if it has one.
    pub fn target_row(
        &self,
        files: &UInt64Array,
        rows: &UInt64Array,
        r: usize,
    ) -> Option<(u64, u64)> {
        (files.is_valid(r) && rows.is_valid(r)).then(|| (files.value(r), rows.value(r)))
    }
}

pub(super) async fn join(
    spec: &MergeSpec,
    snapshot: &Snapshot,
    scans: &[FileScan],
) -> Result<Joined> {
    let has = |k: ClauseKind| spec.clauses.iter().any(|c| c.kind == k);
    let needs_target_only = has(ClauseKind::NotMatchedBySource);
    let needs_source_only = has(ClauseKind::NotMatched);
    let table_schema = crate::arrow_conv::table_arrow_schema(&snapshot.schema);
    let mut target_batches = Vec::new();
    for (i, s) in scans.iter().enumerate() {
        let rows = stabilize_row_tracking(snapshot, &s.add, &s.rows, true)?;
        target_batches.push(with_flag(&with_file_idx(&rows, i as u64)?, T_PRESENT)?);
    }
    let target_schema = match target_batches.first() {
        Some(b) => b.schema(),
        None => {
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
    };
    let source_batches: Vec<RecordBatch> = spec
        .source_batches
        .iter()
        .map(|b| with_flag(b, S_PRESENT))
        .collect::<Result<_>>()?;
    let source_schema = match source_batches.first() {
        Some(b) => b.schema(),
        None => {
            let mut fields: Vec<Field> = spec
                .source_schema
                .fields()
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            fields.push(Field::new(S_PRESENT, DataType::Boolean, true));
            Arc::new(Schema::new(fields))
        }
    };
    let ctx = SessionContext::new();
    ctx.register_table(
        spec.target_alias.to_ascii_lowercase(),
        Arc::new(MemTable::try_new(target_schema, vec![target_batches])?),
    )?;
    ctx.register_table(
        spec.source_alias.to_ascii_lowercase(),
        Arc::new(MemTable::try_new(source_schema, vec![source_batches])?),
    )?;
    let t_df = ctx.table(spec.target_alias.to_ascii_lowercase()).await?;
    let s_df = ctx.table(spec.source_alias.to_ascii_lowercase()).await?;
    let on = spec.on.clone();
    let join_type = match (needs_target_only, needs_source_only) {
        (true, true) => JoinType::Full,
        (true, false) => JoinType::Left,
        (false, true) => JoinType::Right,
        (false, false) => JoinType::Inner,
    };
    let df = t_df.join_on(s_df, join_type, [on])?;
    let df_schema = df.schema().clone();
    let batches = df.collect().await?;
    let out_schema = Arc::new(df_schema.as_arrow().clone());
    let joined = concat_batches(&out_schema, &batches)?;
    let n = joined.num_rows();

    let idx_of = |q: &str, name: &str| column_index(&df_schema, q, name);
    let t_present = idx_of(&spec.target_alias, T_PRESENT)
        .ok_or_else(|| EngineError::Internal("target flag missing".into()))?;
    let s_present = idx_of(&spec.source_alias, S_PRESENT)
        .ok_or_else(|| EngineError::Internal("source flag missing".into()))?;
    let present = |i: usize| -> BooleanArray {
        let c = joined
            .column(i)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .cloned();
        (0..n)
            .map(|r| Some(c.as_ref().is_some_and(|c| c.is_valid(r) && c.value(r))))
            .collect()
    };
    let (target_present, source_present) = (present(t_present), present(s_present));
    Ok(Joined {
        batch: joined,
        schema: df_schema,
        ctx,
        target_present,
        source_present,
    })
}
