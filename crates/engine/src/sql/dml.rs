//! DELETE and UPDATE statements: sqlparser AST → DataFusion expressions over the target table.

use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, FromTable, ObjectName, Statement, TableFactor,
};

use crate::error::{EngineError, Result};
use crate::ops::dml::ExprContext;
use crate::ops::{delete_txn, update_txn};
use std::sync::Arc;

use crate::snapshot::Snapshot;
use crate::table::DeltaTable;
use crate::txn::{Operation, Transaction};

use super::bind::TableRef;
use crate::expr_plan::strip_qualifiers;

/// The last part of a name, unquoted: the identifier's own value (`"a""b"` is `a"b`), never its
/// printed text with quotes trimmed (which turned `"""x"""` into `x`).
pub fn last_ident(name: &ObjectName) -> String {
    use datafusion::sql::sqlparser::ast::ObjectNamePart;
    name.0
        .last()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

/// The column an assignment sets: `c`, or `q.c` where `q` names the target (its alias, else its
/// name). Any other qualifier — another relation, or a struct column (`s.name`, a nested field) —
/// is refused: the column set must be the one written.
pub fn assigned_column(target: &ObjectName, qualifier: &str, statement: &str) -> Result<String> {
    use datafusion::sql::sqlparser::ast::ObjectNamePart;
    let parts: Vec<&str> = target
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Ok(i.value.as_str()),
            other => Err(EngineError::invalid(format!(
                "{statement}: cannot assign to {other}"
            ))),
        })
        .collect::<Result<_>>()?;
    match parts.as_slice() {
        [c] => Ok(c.to_string()),
        [q, c] if q.eq_ignore_ascii_case(qualifier) => Ok(c.to_string()),
        _ => Err(EngineError::Unsupported(format!(
            "{statement}: SET {target}: only the target's own columns can be assigned (qualified by {qualifier} or not); nested fields are not supported"
        ))),
    }
}

/// (table identifier, alias) of a table factor.
pub fn table_name(f: &TableFactor) -> Result<(String, Option<String>)> {
    match f {
        TableFactor::Table { name, alias, .. } => Ok((
            last_ident(name),
            alias.as_ref().map(|a| a.name.value.clone()),
        )),
        other => Err(EngineError::invalid(format!(
            "expected a table, found {other}"
        ))),
    }
}

pub(super) async fn open_target(
    refs: &[TableRef],
    name: &str,
    session: &super::SqlSession,
) -> Result<(DeltaTable, TableRef, Arc<Snapshot>)> {
    let r = refs
        .iter()
        .find(|r| r.ident.eq_ignore_ascii_case(name))
        .cloned()
        .ok_or_else(|| {
            EngineError::invalid(format!(
                "unknown table {name}: reference tables by path, e.g. './data/t'"
            ))
        })?;
    if r.version.is_some() || r.timestamp.is_some() {
        return Err(EngineError::invalid("cannot modify a past version"));
    }
    if super::table_locations::is_local_file(&r.location) {
        return Err(super::table_locations::not_a_table(&r.location));
    }
    let table = session.table(&r.location)?;
    // Two listings, not `latest_if_exists`'s one: a source that reads the target (INSERT …
    // SELECT FROM t, a MERGE source or a subquery over t) loads its own latest snapshot after
    // this one, and must not see a newer version than the transaction's read version unless a
    // commit really landed in between (a lagging listing here would make that common; the
    // simulator's oracle caught it). Saving the first listing needs the source to read the
    // target at the transaction's snapshot.
    if !table.exists().await? {
        return Err(EngineError::NotFound(format!(
            "no Delta table at {}",
            r.location
        )));
    }
    let snapshot = table.snapshot(None).await?;
    Ok((table, r, snapshot))
}

pub async fn prepare_delete(
    session: &super::SqlSession,
    refs: &[TableRef],
    statement: &Statement,
) -> Result<Transaction> {
    let Statement::Delete(d) = statement else {
        return Err(EngineError::invalid("not a DELETE statement"));
    };
    let tables = match &d.from {
        FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
    };
    let [twj] = tables.as_slice() else {
        return Err(EngineError::invalid("DELETE takes exactly one table"));
    };
    if !twj.joins.is_empty() || d.using.is_some() {
        return Err(EngineError::Unsupported(
            "DELETE … USING / joins; use MERGE".into(),
        ));
    }
    let (name, alias) = table_name(&twj.relation)?;
    let (table, _, snapshot) = open_target(refs, &name, session).await?;
    let ectx = ExprContext::new(&snapshot, Some(alias.as_deref().unwrap_or(&name)))?
        .with_spark_options(session.spark_options());
    let predicate = d.selection.as_ref().map(|e| ectx.plan(e)).transpose()?;
    let predicate = predicate.map(strip_qualifiers);
    let txn = Transaction::new(&table, Some(snapshot), Operation::Delete);
    delete_txn(txn, predicate).await
}

pub async fn prepare_update(
    session: &super::SqlSession,
    refs: &[TableRef],
    statement: &Statement,
) -> Result<Transaction> {
    let Statement::Update(u) = statement else {
        return Err(EngineError::invalid("not an UPDATE statement"));
    };
    if u.from.is_some() || !u.table.joins.is_empty() {
        return Err(EngineError::Unsupported("UPDATE … FROM; use MERGE".into()));
    }
    let (name, alias) = table_name(&u.table.relation)?;
    let (table, _, snapshot) = open_target(refs, &name, session).await?;
    let ectx = ExprContext::new(&snapshot, Some(alias.as_deref().unwrap_or(&name)))?
        .with_spark_options(session.spark_options());
    let mut assignments = Vec::new();
    for a in &u.assignments {
        let AssignmentTarget::ColumnName(col) = &a.target else {
            return Err(EngineError::Unsupported(
                "tuple assignment in UPDATE".into(),
            ));
        };
        // Unknown and twice-assigned columns are refused by the operation (`update_txn`), as
        // for every front end.
        let col = assigned_column(col, alias.as_deref().unwrap_or(&name), "UPDATE")?;
        assignments.push((col, strip_qualifiers(ectx.plan(&a.value)?)));
    }
    let predicate = u
        .selection
        .as_ref()
        .map(|e| ectx.plan(e))
        .transpose()?
        .map(strip_qualifiers);
    let txn = Transaction::new(&table, Some(snapshot), Operation::Update);
    update_txn(txn, assignments, predicate, Default::default()).await
}

/// `OPTIMIZE t [WHERE partition-predicate] [ZORDER BY (c, …)]`, as read.
pub struct OptimizeStatement {
    pub target: TableRef,
    pub predicate: Option<datafusion::sql::sqlparser::ast::Expr>,
    pub zorder_by: Vec<String>,
}

/// Reads OPTIMIZE's clauses after its table (synchronously: the parser never lives across an
/// await, so statements stay `Send`).
pub fn read_optimize(target: TableRef, c: &mut super::parser::Cursor) -> Result<OptimizeStatement> {
    let mut predicate = None;
    if c.eat_kw("WHERE") {
        predicate = Some(c.expr()?.0);
    }
    let mut zorder_by = Vec::new();
    if c.eat_kw("ZORDER") {
        c.expect_kw("BY")?;
        zorder_by = c.ident_list()?;
    }
    if !c.at_end() {
        return Err(EngineError::invalid(format!(
            "unexpected {} in OPTIMIZE",
            c.describe()
        )));
    }
    Ok(OptimizeStatement {
        target,
        predicate,
        zorder_by,
    })
}

pub async fn prepare_optimize(
    session: &super::SqlSession,
    st: OptimizeStatement,
) -> Result<Transaction> {
    let target = &st.target;
    let (table, _, snapshot) =
        open_target(std::slice::from_ref(target), &target.ident, session).await?;
    let predicate = match &st.predicate {
        Some(expr) => {
            let ectx = ExprContext::new(&snapshot, Some(&target.ident))?
                .with_spark_options(session.spark_options());
            Some(strip_qualifiers(ectx.plan(expr)?))
        }
        None => None,
    };
    let zorder_by = st.zorder_by;
    let spec = crate::ops::optimize::OptimizeSpec {
        predicate,
        zorder_by,
        target_file_size: session.optimize_target_file_size,
        min_file_count: None,
        skip_capture: session.optimize_skip_capture,
        min_commit_interval_ms: None,
    };
    crate::ops::optimize::optimize_txn(
        Transaction::new(&table, Some(snapshot), Operation::Optimize),
        spec,
    )
    .await
}
