//! MERGE statements: the parsed statement ([`super::statement::MergeStatement`]: Delta's
//! `UPDATE SET *`, `INSERT *` and `WITH SCHEMA EVOLUTION` included) → [`crate::ops::merge::MergeSpec`].
//! The source is planned from its AST; conditions and values are planned from theirs.

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, MergeClauseKind, Query, SetExpr, Statement, TableFactor, TableWithJoins,
};

use super::dml::last_ident;
use super::statement::{MergeStatement, MergeWhenAction};
use super::SqlSession;
use crate::error::{EngineError, Result};
use futures::StreamExt;
use std::sync::Arc;

use crate::ops::merge::{
    merge_txn_on, ClauseAction, ClauseKind, MergeClause, MergeExprParser, MergeSpec, SourceRows,
};
use crate::txn::{Operation, Transaction};

/// `SELECT * FROM <source>`: the source relation (a table or a derived table, with its alias and
/// column aliases) as a query, built on the AST.
fn select_all_from(source: TableFactor) -> Result<Query> {
    let (mut q, _) = super::statement::parse_query("SELECT * FROM merge_source")?;
    let SetExpr::Select(sel) = q.body.as_mut() else {
        return Err(EngineError::Internal("SELECT * is not a SELECT".into()));
    };
    sel.from = vec![TableWithJoins {
        relation: source,
        joins: vec![],
    }];
    Ok(*q)
}

pub async fn prepare_merge(
    session: &SqlSession,
    mut m: MergeStatement,
    words: Vec<(String, bool)>,
) -> Result<Transaction> {
    let mut binder = super::bind::Binder::new(session.scope(words)?);
    let TableFactor::Table {
        name,
        alias,
        version,
        args: None,
        ..
    } = &mut m.target
    else {
        return Err(EngineError::invalid(format!(
            "MERGE INTO {}: the target must be a table",
            m.target
        )));
    };
    if version.is_some() {
        return Err(EngineError::invalid("cannot MERGE into a past version"));
    }
    let target_name = last_ident(name);
    let target_ident = binder.bind_target(name)?.ok_or_else(|| {
        EngineError::invalid(format!(
            "unknown table {target_name}: reference tables by path"
        ))
    })?;
    let target_alias = alias
        .as_ref()
        .map(|a| a.name.value.clone())
        .unwrap_or_else(|| target_ident.clone());
    let source_names_tables = super::bind::names_any_table(&m.source);
    let mut source_query = select_all_from(m.source.clone())?;
    binder.bind_query(&mut source_query)?;
    // Named as bound: a path by its reference's identifier, a view by its name.
    let source_alias = match source_query.body.as_select().and_then(|s| s.from.first()) {
        Some(TableWithJoins {
            relation: TableFactor::Table { name, alias, .. },
            ..
        }) => alias
            .as_ref()
            .map(|a| a.name.value.clone())
            .unwrap_or_else(|| last_ident(name)),
        Some(TableWithJoins {
            relation: TableFactor::Derived { alias, .. },
            ..
        }) => alias
            .as_ref()
            .map(|a| a.name.value.clone())
            .ok_or_else(|| EngineError::invalid("MERGE: a subquery source needs an alias"))?,
        _ => {
            return Err(EngineError::invalid(format!(
                "MERGE: unsupported source {}",
                m.source
            )))
        }
    };
    let refs = session.resolve_as_of(binder.into_refs()).await?;
    let (table, target, target_snapshot) =
        super::dml::open_target(&refs, &target_ident, session).await?;
    // The target is registered for the source only when the source reads it.
    let reads_target = source_query
        .body
        .as_select()
        .and_then(|s| s.from.first())
        .is_some_and(|f| super::bind::names_relation(&f.relation, &target.ident));
    let source_refs: Vec<_> = refs
        .iter()
        .filter(|r| reads_target || r.ident != target.ident)
        .cloned()
        .collect();
    // The transaction's snapshot is taken before the source runs, so a source that reads the
    // target sees that version or a newer one: every commit that could change what it read comes
    // after the transaction's read version and is checked as a winner. The source's reads of the
    // target are recorded (as a query's: see `ReadSet::query_reads`) and join the transaction's.
    let snapshot = target_snapshot;
    let source_reads = Arc::new(std::sync::Mutex::new(crate::read_set::ReadSet::default()));
    let df = session
        .dataframe(
            &source_refs,
            DFStatement::Statement(Box::new(Statement::Query(Box::new(source_query)))),
            Some((&target.location, Arc::clone(&source_reads))),
        )
        .await?;
    let source_schema = Arc::new(df.schema().as_arrow().clone());
    let stream = df
        .execute_stream()
        .await?
        .map(|b| b.map_err(crate::error::EngineError::from));
    let budget = crate::ops::merge::source::memory_budget(&table.env);
    let source = SourceRows::from_stream(Arc::clone(&source_schema), stream, budget).await?;
    let mut txn = Transaction::new(&table, Some(snapshot), Operation::Merge);
    let recorded = source_reads
        .lock()
        .map_err(|_| EngineError::Internal("the read set's lock is poisoned".into()))?
        .clone();
    super::session::merge_reads(&mut txn.read_set, recorded);
    let (txn, snapshot) = match m.schema_evolution {
        true => crate::ops::merge::evolve::evolve_for_source(txn, &source_schema).await?,
        false => {
            let s = Arc::clone(txn.snapshot()?);
            (txn, s)
        }
    };
    let exprs = MergeExprParser::new(&snapshot, &target_alias, &source_schema, &source_alias)?
        .with_spark_options(session.spark_options());
    let mut clauses = Vec::new();
    for c in &m.clauses {
        let kind = match c.kind {
            MergeClauseKind::Matched => ClauseKind::Matched,
            MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget => {
                ClauseKind::NotMatched
            }
            MergeClauseKind::NotMatchedBySource => ClauseKind::NotMatchedBySource,
        };
        let action = match &c.action {
            MergeWhenAction::Delete => ClauseAction::Delete,
            MergeWhenAction::UpdateAll => ClauseAction::Update(None),
            MergeWhenAction::Update(assignments) => {
                let mut assigns = Vec::new();
                for a in assignments {
                    let AssignmentTarget::ColumnName(col) = &a.target else {
                        return Err(EngineError::Unsupported("tuple assignment in MERGE".into()));
                    };
                    // Unknown and twice-assigned columns: `MergeSpec::check_columns`, as for
                    // every front end.
                    let col = super::dml::assigned_column(col, &target_alias, "MERGE")?;
                    let value = exprs.plan("UPDATE SET", &a.value)?;
                    assigns.push((col, value));
                }
                ClauseAction::Update(Some(assigns))
            }
            MergeWhenAction::InsertAll => ClauseAction::Insert(None),
            MergeWhenAction::Insert { columns, values } => {
                let cols: Vec<String> = columns.iter().map(|c| c.value.clone()).collect();
                let values = values
                    .iter()
                    .map(|e| exprs.plan("INSERT", e))
                    .collect::<Result<Vec<_>>>()?;
                ClauseAction::Insert(Some((cols, values)))
            }
        };
        clauses.push(MergeClause {
            kind,
            condition: c
                .predicate
                .as_ref()
                .map(|p| exprs.plan("condition", p))
                .transpose()?,
            action,
        });
    }
    let on = exprs.plan("ON", &m.on)?;
    let spec = MergeSpec {
        target_alias,
        source_alias,
        source,
        on,
        clauses,
        cast_failure: Default::default(),
        schema_evolution: m.schema_evolution,
        source_names_tables,
    };
    merge_txn_on(txn, spec, snapshot).await
}
