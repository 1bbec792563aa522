//! MERGE INTO target USING source ON cond WHEN … — executed with DataFusion's join machinery.
//!
//! The target's candidate files are scanned with physical row indexes and joined to the source
//! (inner / left / right / full, depending on which clause kinds exist). With deletion vectors and
//! no NOT MATCHED BY SOURCE clause, only the target rows whose ON keys occur in the source are read
//! (`merge_probe.rs`). For each joined row the
//! first clause whose kind and condition match decides: UPDATE / DELETE remove the target row (DV,
//! removal or rewrite) and UPDATE / INSERT write new rows. A target row matched by more than one
//! source row is an error (as in Spark) unless the only matched clause is an unconditional DELETE.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow::compute::{concat_batches, filter_record_batch};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{DFSchema, JoinType};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::prelude::SessionContext;
use serde_json::json;

use super::dml::{
    register_candidates, scan_candidates, stage_row_removal, write_new_rows, DmlMetrics, FileScan,
};
use super::merge_probe::{scan_key_matches, KeyProbe};
use crate::error::{EngineError, Result};
use crate::row_tracking::{row_tracking_columns, stabilize_row_tracking};
use crate::scan::{RowMatcher, ROW_INDEX_COLUMN};
use crate::snapshot::Snapshot;
use crate::txn::Transaction;

const FILE_IDX: &str = "__delta_rlc_file_idx";
const T_PRESENT: &str = "__delta_rlc_t_present";
const S_PRESENT: &str = "__delta_rlc_s_present";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClauseKind {
    Matched,
    NotMatched,
    NotMatchedBySource,
}

/// What a clause does. Expressions reference columns qualified by the target and source aliases
/// (as [`MergeExprParser`] plans them).
#[derive(Debug, Clone)]
pub enum ClauseAction {
    /// (column, value); `None` = `UPDATE SET *`.
    Update(Option<Vec<(String, Expr)>>),
    Delete,
    /// (columns, values); `None` = `INSERT *`. No columns = every table column in order.
    Insert(Option<(Vec<String>, Vec<Expr>)>),
}

#[derive(Debug, Clone)]
pub struct MergeClause {
    pub kind: ClauseKind,
    pub condition: Option<Expr>,
    pub action: ClauseAction,
}

/// A planned MERGE: the source rows and the ON condition and clauses as expressions over the
/// target (qualified by `target_alias`) and the source (by `source_alias`).
#[derive(Debug, Clone)]
pub struct MergeSpec {
    pub target_alias: String,
    pub source_alias: String,
    pub source_batches: Vec<RecordBatch>,
    pub source_schema: Arc<Schema>,
    pub on: Expr,
    pub clauses: Vec<MergeClause>,
}

/// Plans MERGE expressions written as SQL against the target's columns (qualified by its alias)
/// and the source's (by its alias), once, before the MERGE runs.
pub struct MergeExprParser {
    schema: DFSchema,
    ctx: SessionContext,
}

impl MergeExprParser {
    pub fn new(
        snapshot: &Snapshot,
        target_alias: &str,
        source_schema: &Schema,
        source_alias: &str,
    ) -> Result<Self> {
        let table_schema = crate::arrow_conv::table_arrow_schema(&snapshot.schema);
        let target = DFSchema::try_from_qualified_schema(
            target_alias.to_ascii_lowercase().as_str(),
            &table_schema,
        )?;
        let source = DFSchema::try_from_qualified_schema(
            source_alias.to_ascii_lowercase().as_str(),
            source_schema,
        )?;
        Ok(MergeExprParser {
            schema: target.join(&source)?,
            ctx: SessionContext::new(),
        })
    }

    /// `what` names the part of the statement in the error ("ON", "condition", …).
    pub fn parse(&self, what: &str, sql: &str) -> Result<Expr> {
        self.ctx
            .parse_sql_expr(sql, &self.schema)
            .map_err(|e| EngineError::invalid(format!("MERGE {what}: {e}")))
    }
}

/// Column qualifiers that name an alias in another case are the alias (tables are registered
/// under lower-case names).
fn normalize_qualifiers(e: Expr, aliases: &[&str]) -> Result<Expr> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::common::{Column, TableReference};
    Ok(e.transform(|e| {
        Ok(match e {
            Expr::Column(c) => match c.relation.as_ref().and_then(|r| {
                aliases
                    .iter()
                    .find(|a| r.table().eq_ignore_ascii_case(a) && r.table() != **a)
            }) {
                Some(a) => Transformed::yes(Expr::Column(Column::new(
                    Some(TableReference::bare(a.to_string())),
                    c.name,
                ))),
                None => Transformed::no(Expr::Column(c)),
            },
            other => Transformed::no(other),
        })
    })?
    .data)
}

impl MergeSpec {
    /// The same MERGE with every column qualifier spelled as the lower-case alias.
    fn normalized(mut self) -> Result<Self> {
        let (t, s) = (
            self.target_alias.to_ascii_lowercase(),
            self.source_alias.to_ascii_lowercase(),
        );
        let aliases = [t.as_str(), s.as_str()];
        let norm = |e: Expr| normalize_qualifiers(e, &aliases);
        self.on = norm(self.on)?;
        for c in &mut self.clauses {
            c.condition = c.condition.take().map(norm).transpose()?;
            match &mut c.action {
                ClauseAction::Update(Some(a)) => {
                    for (_, e) in a.iter_mut() {
                        *e = norm(e.clone())?;
                    }
                }
                ClauseAction::Insert(Some((_, v))) => {
                    for e in v.iter_mut() {
                        *e = norm(e.clone())?;
                    }
                }
                _ => {}
            }
        }
        self.target_alias = t;
        self.source_alias = s;
        Ok(self)
    }
}

fn with_flag(batch: &RecordBatch, flag: &str) -> Result<RecordBatch> {
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(flag, DataType::Boolean, true));
    let mut cols = batch.columns().to_vec();
    cols.push(Arc::new(BooleanArray::from(vec![true; batch.num_rows()])));
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

fn with_file_idx(batch: &RecordBatch, idx: u64) -> Result<RecordBatch> {
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(FILE_IDX, DataType::UInt64, false));
    let mut cols = batch.columns().to_vec();
    cols.push(Arc::new(UInt64Array::from(vec![idx; batch.num_rows()])));
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// `source_alias.name` (UPDATE SET * / INSERT *).
fn source_column(source_alias: &str, name: &str) -> Expr {
    Expr::Column(datafusion::common::Column::new(
        Some(datafusion::common::TableReference::bare(
            source_alias.to_string(),
        )),
        name,
    ))
}

fn mask_of(v: &ArrayRef) -> Result<BooleanArray> {
    let b = v
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| EngineError::invalid("a MERGE condition is not boolean"))?;
    Ok((0..b.len())
        .map(|i| Some(b.is_valid(i) && b.value(i)))
        .collect())
}

fn column_index(schema: &DFSchema, qualifier: &str, name: &str) -> Option<usize> {
    schema.iter().position(|(q, f)| {
        q.is_some_and(|q| q.table().eq_ignore_ascii_case(qualifier))
            && f.name().eq_ignore_ascii_case(name)
    })
}

pub async fn merge_txn(mut txn: Transaction, spec: MergeSpec) -> Result<Transaction> {
    let spec = spec.normalized()?;
    let snapshot: Arc<Snapshot> = Arc::clone(txn.snapshot()?);
    let start = txn.table.env.clock.now_ms();
    txn.operation = "MERGE".into();
    txn.operation_parameters
        .insert("predicate".into(), json!(spec.on.to_string()));
    let has = |k: ClauseKind| spec.clauses.iter().any(|c| c.kind == k);
    let needs_target_only = has(ClauseKind::NotMatchedBySource);
    let needs_source_only = has(ClauseKind::NotMatched);
    let table_schema = crate::arrow_conv::table_arrow_schema(&snapshot.schema);
    let n_cols = table_schema.fields().len();

    // Target: every candidate file, live rows with row index. NOT MATCHED BY SOURCE reads everything.
    // What the MERGE reads from the target: the source-key predicate when possible.
    let source_df = DFSchema::try_from_qualified_schema(
        spec.source_alias.to_ascii_lowercase().as_str(),
        spec.source_schema.as_ref(),
    )?;
    let on_expr = spec.on.clone();
    // Case 6: with NOT MATCHED BY SOURCE clauses, the MERGE also reads the target rows their
    // conditions can touch; an unconditional one reads everything.
    let nmbs_conditions: Option<Vec<Expr>> = if needs_target_only
        && txn
            .table
            .conflict
            .enabled(crate::conflict_config::Switch::MergeNotMatchedBySource)
    {
        let mut conds = Vec::new();
        for c in spec
            .clauses
            .iter()
            .filter(|c| c.kind == ClauseKind::NotMatchedBySource)
        {
            let Some(e) = c.condition.clone() else {
                conds.clear();
                break;
            };
            let target_only = e.column_refs().iter().all(|col| {
                col.relation
                    .as_ref()
                    .is_none_or(|r| r.table().eq_ignore_ascii_case(&spec.target_alias))
            });
            if !target_only {
                return Err(EngineError::invalid(
                    "MERGE: a NOT MATCHED BY SOURCE condition may only reference the target",
                ));
            }
            conds.push(crate::expr_plan::strip_qualifiers(e));
        }
        (!conds.is_empty()).then_some(conds)
    } else {
        None
    };
    let key_read_allowed = txn
        .table
        .conflict
        .enabled(crate::conflict_config::Switch::MergeSourceKey)
        && (!needs_target_only || nmbs_conditions.is_some());
    let (on_keys, on_target_only) =
        super::merge_keys::analyze_on(&on_expr, &spec.target_alias, &spec.source_alias);
    let read = if !key_read_allowed {
        None
    } else {
        let (keys, target_only) = (&on_keys, on_target_only);
        if keys.is_empty() {
            None
        } else {
            Some(super::merge_keys::target_read(
                keys,
                target_only,
                table_schema.as_ref(),
                &spec.source_batches,
                &source_df,
                &spec.source_alias.to_ascii_lowercase(),
                txn.table.conflict.in_set_threshold,
            )?)
        }
    };
    let scans: Vec<FileScan> = match (&read, &nmbs_conditions) {
        (Some(r), None) => {
            // No NOT MATCHED BY SOURCE clause: only target rows whose keys occur in the source can
            // join. With DVs, read just those (a key-probe pass, then their full rows).
            let source_alias = spec.source_alias.to_ascii_lowercase();
            let probe = match snapshot.deletion_vectors_enabled() && !needs_target_only {
                true => KeyProbe::build(
                    &on_keys,
                    table_schema.as_ref(),
                    &spec.source_batches,
                    &source_df,
                    &source_alias,
                )?,
                false => None,
            };
            let matcher = probe.and_then(|p| {
                let columns = p.columns.clone();
                RowMatcher::with_verdict(Arc::clone(&snapshot), columns, Arc::new(p))
            });
            let s = match matcher {
                Some(m) => {
                    let files = register_candidates(&mut txn, &snapshot, r.predicate.as_ref())?;
                    scan_key_matches(&mut txn, &snapshot, m, files).await?
                }
                None => scan_candidates(&mut txn, &snapshot, r.predicate.as_ref()).await?,
            };
            if let Some(p) = txn.read_set.predicates.last_mut() {
                p.exact_keys = r.keys.clone();
            }
            if let Some(e) = &r.event {
                txn.events.push(e.clone());
            }
            s
        }
        (Some(r), Some(conds)) => {
            // Two reads, OR-ed: the source-key read and the NMBS conditions.
            let nmbs = conds
                .iter()
                .cloned()
                .reduce(|a, b| a.or(b))
                .ok_or_else(|| EngineError::Internal("no NMBS condition".into()))?;
            let scan_pred = match &r.predicate {
                Some(p) => p.clone().or(nmbs.clone()),
                None => datafusion::logical_expr::lit(true),
            };
            let s = scan_candidates(&mut txn, &snapshot, Some(&scan_pred)).await?;
            txn.read_set.predicates.pop();
            let parts = &snapshot.metadata.partition_columns;
            if let Some(p) = &r.predicate {
                let mut kp = crate::read_set::split_predicate(p, parts, p.to_string());
                kp.exact_keys = r.keys.clone();
                txn.read_set.add_predicate(kp);
            }
            txn.read_set.add_predicate(crate::read_set::split_predicate(
                &nmbs,
                parts,
                nmbs.to_string(),
            ));
            if let Some(e) = &r.event {
                txn.events.push(e.clone());
            }
            txn.events.push(crate::events::Event::new(
                "delta.dml.merge.notMatchedBySourceReadPredicate",
                json!({"numClauses": conds.len(), "predicate": nmbs.to_string()}),
            ));
            s
        }
        _ => scan_candidates(&mut txn, &snapshot, None).await?,
    };
    let mut target_batches = Vec::new();
    for (i, s) in scans.iter().enumerate() {
        let rows = stabilize_row_tracking(&snapshot, &s.add, &s.rows, true)?;
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
            if let Some((id, ver)) = row_tracking_columns(&snapshot) {
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
    let (tp, sp) = (present(t_present), present(s_present));
    let physical = |e: &Expr| -> Result<Arc<dyn PhysicalExpr>> {
        ctx.create_physical_expr(e.clone(), &df_schema)
            .map_err(|e| EngineError::invalid(format!("MERGE: {e}")))
    };
    let eval =
        |p: &Arc<dyn PhysicalExpr>| -> Result<ArrayRef> { Ok(p.evaluate(&joined)?.into_array(n)?) };

    // Assign each joined row to the first clause that applies.
    let mut assigned: Vec<Option<usize>> = vec![None; n];
    for (ci, clause) in spec.clauses.iter().enumerate() {
        let cond = match &clause.condition {
            Some(c) => Some(mask_of(&eval(&physical(c)?)?)?),
            None => None,
        };
        for (r, slot) in assigned.iter_mut().enumerate() {
            if slot.is_some() {
                continue;
            }
            let kind_ok = match clause.kind {
                ClauseKind::Matched => tp.value(r) && sp.value(r),
                ClauseKind::NotMatched => !tp.value(r) && sp.value(r),
                ClauseKind::NotMatchedBySource => tp.value(r) && !sp.value(r),
            };
            if kind_ok && cond.as_ref().is_none_or(|c| c.value(r)) {
                *slot = Some(ci);
            }
        }
    }

    // Target identity of each row: (file idx, row index).
    let file_col = idx_of(&spec.target_alias, FILE_IDX)
        .ok_or_else(|| EngineError::Internal("file idx missing".into()))?;
    let row_col = idx_of(&spec.target_alias, ROW_INDEX_COLUMN)
        .ok_or_else(|| EngineError::Internal("row index missing".into()))?;
    let files = joined
        .column(file_col)
        .as_any()
        .downcast_ref::<UInt64Array>()
        .cloned();
    let rowsi = joined
        .column(row_col)
        .as_any()
        .downcast_ref::<UInt64Array>()
        .cloned();
    let key = |r: usize| -> Option<(u64, u64)> {
        let f = files.as_ref()?;
        let ri = rowsi.as_ref()?;
        (f.is_valid(r) && ri.is_valid(r)).then(|| (f.value(r), ri.value(r)))
    };
    let only_unconditional_delete = {
        let m: Vec<&MergeClause> = spec
            .clauses
            .iter()
            .filter(|c| c.kind == ClauseKind::Matched)
            .collect();
        m.len() == 1 && m[0].condition.is_none() && matches!(m[0].action, ClauseAction::Delete)
    };
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    let mut removed: BTreeMap<u64, HashSet<u64>> = BTreeMap::new();
    let mut metrics = DmlMetrics::default();
    for (r, slot) in assigned.iter().enumerate() {
        let Some(ci) = *slot else { continue };
        let Some(clause) = spec.clauses.get(ci) else {
            continue;
        };
        if clause.kind == ClauseKind::NotMatched {
            continue;
        }
        if let Some(k) = key(r) {
            if clause.kind == ClauseKind::Matched && !seen.insert(k) && !only_unconditional_delete {
                return Err(EngineError::invalid(
                    "MERGE: multiple source rows matched the same target row; make the ON condition or the source unique",
                ));
            }
            removed.entry(k.0).or_default().insert(k.1);
            match clause.action {
                ClauseAction::Delete => metrics.deleted_rows += 1,
                ClauseAction::Update(_) => metrics.updated_rows += 1,
                ClauseAction::Insert(_) => {}
            }
        }
    }
    if only_unconditional_delete {
        // Several source rows may delete one target row; count target rows.
        metrics.deleted_rows = removed.values().map(|s| s.len() as u64).sum::<u64>();
    }

    // New rows from UPDATE and INSERT clauses.
    let mut new_rows: Vec<RecordBatch> = Vec::new();
    let extra_cols: Vec<(usize, Field)> = row_tracking_columns(&snapshot)
        .map(|(id, ver)| {
            [id, ver]
                .into_iter()
                .filter_map(|name| {
                    idx_of(&spec.target_alias, &name)
                        .map(|i| (i, Field::new(name, DataType::Int64, true)))
                })
                .collect()
        })
        .unwrap_or_default();
    for (ci, clause) in spec.clauses.iter().enumerate() {
        let sel: BooleanArray = (0..n).map(|r| Some(assigned[r] == Some(ci))).collect();
        if sel.true_count() == 0 {
            continue;
        }
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(n_cols);
        match &clause.action {
            ClauseAction::Delete => continue,
            ClauseAction::Update(assign) => {
                let map: HashMap<String, Expr> = match assign {
                    Some(a) => a
                        .iter()
                        .map(|(c, e)| (c.to_ascii_lowercase(), e.clone()))
                        .collect(),
                    None => table_schema
                        .fields()
                        .iter()
                        .map(|f| {
                            (
                                f.name().to_ascii_lowercase(),
                                source_column(&spec.source_alias, f.name()),
                            )
                        })
                        .collect(),
                };
                for f in table_schema.fields() {
                    let v = match map.get(&f.name().to_ascii_lowercase()) {
                        Some(e) => eval(&physical(e)?)?,
                        None => joined
                            .column(idx_of(&spec.target_alias, f.name()).ok_or_else(|| {
                                EngineError::Internal(format!("column {}", f.name()))
                            })?)
                            .clone(),
                    };
                    cols.push(v);
                }
                for (i, _) in &extra_cols {
                    cols.push(joined.column(*i).clone());
                }
            }
            ClauseAction::Insert(values) => {
                let map: HashMap<String, Expr> = match values {
                    Some((c, v)) => {
                        if c.is_empty() {
                            table_schema
                                .fields()
                                .iter()
                                .map(|f| f.name().to_ascii_lowercase())
                                .zip(v.iter().cloned())
                                .collect()
                        } else {
                            c.iter()
                                .map(|x| x.to_ascii_lowercase())
                                .zip(v.iter().cloned())
                                .collect()
                        }
                    }
                    None => table_schema
                        .fields()
                        .iter()
                        .map(|f| {
                            (
                                f.name().to_ascii_lowercase(),
                                source_column(&spec.source_alias, f.name()),
                            )
                        })
                        .collect(),
                };
                for k in map.keys() {
                    if table_schema
                        .fields()
                        .iter()
                        .all(|f| f.name().to_ascii_lowercase() != *k)
                    {
                        return Err(EngineError::invalid(format!(
                            "MERGE INSERT: unknown column {k}"
                        )));
                    }
                }
                for f in table_schema.fields() {
                    cols.push(match map.get(&f.name().to_ascii_lowercase()) {
                        Some(e) => eval(&physical(e)?)?,
                        None => new_null_array(f.data_type(), n),
                    });
                }
                for (_, f) in &extra_cols {
                    cols.push(new_null_array(f.data_type(), n));
                }
                metrics.inserted_rows += sel.true_count() as u64;
            }
        }
        let mut fields: Vec<Field> = table_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.extend(extra_cols.iter().map(|(_, f)| f.clone()));
        let mut typed = Vec::with_capacity(cols.len());
        for (c, f) in cols.into_iter().zip(&fields) {
            let c = if c.data_type() == f.data_type() {
                c
            } else {
                arrow::compute::cast_with_options(
                    &c,
                    f.data_type(),
                    &arrow::compute::CastOptions {
                        safe: false,
                        ..Default::default()
                    },
                )
                .map_err(|e| EngineError::invalid(format!("MERGE: column {}: {e}", f.name())))?
            };
            typed.push(c);
        }
        let fields: Vec<Field> = fields.into_iter().map(|f| f.with_nullable(true)).collect();
        let batch = filter_record_batch(
            &RecordBatch::try_new(Arc::new(Schema::new(fields.clone())), typed)?,
            &sel,
        )?;
        for (i, f) in table_schema.fields().iter().enumerate() {
            if !f.is_nullable() && batch.column(i).null_count() > 0 {
                return Err(EngineError::invalid(format!(
                    "NOT NULL constraint violated for column {}",
                    f.name()
                )));
            }
        }
        new_rows.push(batch);
    }

    // Remove matched target rows from their files.
    for (fi, rows) in &removed {
        let Some(scan) = scans.get(*fi as usize) else {
            continue;
        };
        let idx = scan.row_indexes()?;
        let mask: BooleanArray = (0..idx.len())
            .map(|i| Some(rows.contains(&idx.value(i))))
            .collect();
        stage_row_removal(&mut txn, &snapshot, scan, &mask, &mut metrics).await?;
    }
    write_new_rows(&mut txn, &snapshot, &new_rows, &mut metrics).await?;
    txn.affected_rows = Some(metrics.updated_rows + metrics.deleted_rows + metrics.inserted_rows);
    let elapsed = txn.table.env.clock.now_ms() - start;
    txn.operation_metrics = metrics.into_map(elapsed);
    Ok(txn)
}
