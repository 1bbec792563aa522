//! MERGE INTO target USING source ON cond WHEN … — executed with DataFusion's join machinery.
//!
//! The target's candidate files are scanned with physical row indexes and joined to the source
//! (inner / left / right / full, depending on which clause kinds exist). With deletion vectors and
//! no NOT MATCHED BY SOURCE clause, only the target rows whose ON keys occur in the source are read
//! (`merge_probe.rs`). For each joined row the
//! first clause whose kind and condition match decides: UPDATE / DELETE remove the target row (DV,
//! removal or rewrite) and UPDATE / INSERT write new rows. A target row matched by more than one
//! source row is an error (as in Spark) unless the only matched clause is an unconditional DELETE.
//!
//! In four steps, one module each: `reads` (what the MERGE reads, registered, and the target
//! scan), `join` (target ⋈ source), `assign` (the deciding clause of each joined row and the
//! target rows it removes), `emit` (the new rows and the staged actions).

mod assign;
mod emit;
mod join;
mod reads;

use std::sync::Arc;

use arrow::datatypes::Schema;
use arrow::record_batch::RecordBatch;
use datafusion::common::DFSchema;
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;
use serde_json::json;

use super::dml::DmlMetrics;
use crate::error::{EngineError, Result};
use crate::snapshot::Snapshot;
use crate::txn::Transaction;

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

pub async fn merge_txn(mut txn: Transaction, spec: MergeSpec) -> Result<Transaction> {
    let spec = spec.normalized()?;
    let snapshot: Arc<Snapshot> = Arc::clone(txn.snapshot()?);
    let start = txn.table.env.clock.now_ms();
    txn.operation = "MERGE".into();
    txn.operation_parameters
        .insert("predicate".into(), json!(spec.on.to_string()));
    let scans = reads::plan_and_scan(&mut txn, &spec, &snapshot).await?;
    let joined = join::join(&spec, &snapshot, &scans).await?;
    let assigned = assign::assign_clauses(&spec, &joined)?;
    let mut metrics = DmlMetrics::default();
    let removed = assign::removed_target_rows(&spec, &joined, &assigned, &mut metrics)?;
    let new_rows = emit::new_rows(&spec, &snapshot, &joined, &assigned, &mut metrics)?;
    emit::stage(
        &mut txn,
        &snapshot,
        &scans,
        &removed,
        &new_rows,
        &mut metrics,
    )
    .await?;
    txn.affected_rows = Some(metrics.updated_rows + metrics.deleted_rows + metrics.inserted_rows);
    let elapsed = txn.table.env.clock.now_ms() - start;
    txn.operation_metrics = metrics.into_map(elapsed);
    Ok(txn)
}
