//! MERGE statements: sqlparser AST → [`crate::ops::merge::MergeSpec`]. `UPDATE SET *` and
//! `INSERT *` (Delta syntax) are rewritten to markers before parsing.

use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, MergeAction, MergeClauseKind, MergeInsertKind, Statement, TableFactor,
};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::dml::{last_ident, parse_one, table_name};
use super::refs::{keyword_of, Rewritten};
use super::SqlSession;
use crate::error::{EngineError, Result};
use futures::StreamExt;
use std::sync::Arc;

use crate::ops::merge::{
    merge_txn_on, ClauseAction, ClauseKind, MergeClause, MergeExprParser, MergeSpec, SourceRows,
};
use crate::txn::Transaction;

const STAR: &str = "__delta_rlc_star";

/// Replaces `UPDATE SET *` and `INSERT *` with parseable markers.
fn mark_stars(tokens: &[Token]) -> String {
    let sig: Vec<(usize, &Token)> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t, Token::Whitespace(_)))
        .collect();
    let mut replace: Vec<(usize, usize, String)> = Vec::new();
    for w in sig.windows(3) {
        if let [(a, t0), (_, t1), (c, t2)] = w {
            if keyword_of(t0).as_deref() == Some("UPDATE")
                && keyword_of(t1).as_deref() == Some("SET")
                && matches!(t2, Token::Mul)
            {
                replace.push((*a, *c, format!("UPDATE SET {STAR} = {STAR}")));
            }
        }
    }
    for w in sig.windows(2) {
        if let [(a, t0), (b, t1)] = w {
            if keyword_of(t0).as_deref() == Some("INSERT") && matches!(t1, Token::Mul) {
                replace.push((*a, *b, format!("INSERT ({STAR}) VALUES ({STAR})")));
            }
        }
    }
    let mut out = String::new();
    let mut i = 0;
    while i < tokens.len() {
        if let Some((_, end, text)) = replace.iter().find(|(s, _, _)| *s == i) {
            out.push_str(text);
            i = end + 1;
            continue;
        }
        out.push_str(&super::refs::sql_text(&tokens[i]));
        i += 1;
    }
    out
}

/// `MERGE WITH SCHEMA EVOLUTION INTO …`: the tokens without the three words, and whether they
/// were there.
fn strip_schema_evolution(tokens: &[Token]) -> (Vec<Token>, bool) {
    let sig: Vec<usize> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t, Token::Whitespace(_)))
        .map(|(i, _)| i)
        .take(4)
        .collect();
    let words: Vec<Option<String>> = sig
        .iter()
        .map(|i| tokens.get(*i).and_then(keyword_of))
        .collect();
    let wanted = ["MERGE", "WITH", "SCHEMA", "EVOLUTION"];
    let found = words.len() == 4
        && words
            .iter()
            .zip(wanted)
            .all(|(w, k)| w.as_deref() == Some(k));
    if !found {
        return (tokens.to_vec(), false);
    }
    let (Some(first), Some(last)) = (sig.get(1), sig.get(3)) else {
        return (tokens.to_vec(), false);
    };
    let mut out = tokens.to_vec();
    out.drain(*first..=*last);
    (out, true)
}

pub async fn prepare_merge(session: &SqlSession, rw: &Rewritten) -> Result<Transaction> {
    let (tokens, evolve) = strip_schema_evolution(&rw.tokens);
    let sql = mark_stars(&tokens);
    let Statement::Merge(m) = parse_one(&sql)? else {
        return Err(EngineError::invalid("not a MERGE statement"));
    };
    let (target_name, target_alias) = table_name(&m.table)?;
    let target = rw
        .refs
        .iter()
        .find(|r| r.ident.eq_ignore_ascii_case(&target_name))
        .ok_or_else(|| {
            EngineError::invalid(format!(
                "unknown table {target_name}: reference tables by path"
            ))
        })?;
    if target.version.is_some() {
        return Err(EngineError::invalid("cannot MERGE into a past version"));
    }
    let table = session.table(&target.location)?;
    if !table.exists().await? {
        return Err(EngineError::NotFound(format!(
            "no Delta table at {}",
            target.location
        )));
    }
    let (source_sql, source_alias) = match &m.source {
        TableFactor::Table { name, alias, .. } => {
            let n = last_ident(name);
            (
                format!("SELECT * FROM {n}"),
                alias.as_ref().map(|a| a.name.value.clone()).unwrap_or(n),
            )
        }
        TableFactor::Derived {
            subquery, alias, ..
        } => {
            let alias = alias
                .as_ref()
                .ok_or_else(|| EngineError::invalid("MERGE: a subquery source needs an alias"))?;
            // A column list on the alias (`AS s(id, v)`) names the subquery's columns, as in a
            // SELECT's FROM: keep it by selecting through the aliased derived table.
            let text = query_as_written(&tokens, subquery)?;
            let sql = if alias.columns.is_empty() {
                text
            } else {
                // The alias prints with its own `AS` when it was written with one.
                format!("SELECT * FROM ({text}) {alias}")
            };
            (sql, alias.name.value.clone())
        }
        other => {
            return Err(EngineError::invalid(format!(
                "MERGE: unsupported source {other}"
            )))
        }
    };
    let other_refs: Vec<_> = rw
        .refs
        .iter()
        .filter(|r| r.ident != target.ident)
        .cloned()
        .collect();
    let source_refs: Vec<_> = if source_sql.contains(&target.ident) {
        rw.refs.clone()
    } else {
        other_refs
    };
    // The transaction's snapshot is taken before the source runs, so a source that reads the
    // target sees that version or a newer one: every commit that could change what it read comes
    // after the transaction's read version and is checked as a winner. The source's reads of the
    // target are recorded (as a query's: see `ReadSet::query_reads`) and join the transaction's.
    let snapshot = table.snapshot(None).await?;
    let source_reads = Arc::new(std::sync::Mutex::new(crate::read_set::ReadSet::default()));
    let ctx = session
        .context_recording(&source_refs, &target.location, Arc::clone(&source_reads))
        .await?;
    let df = ctx.sql(&source_sql).await?;
    let source_schema = Arc::new(df.schema().as_arrow().clone());
    let stream = df
        .execute_stream()
        .await?
        .map(|b| b.map_err(crate::error::EngineError::from));
    let budget = crate::ops::merge::source::memory_budget(&table.env);
    let source = SourceRows::from_stream(Arc::clone(&source_schema), stream, budget).await?;
    let target_alias = target_alias.unwrap_or(target_name);
    let mut txn = Transaction::new(&table, Some(snapshot), "MERGE");
    let recorded = source_reads
        .lock()
        .map_err(|_| EngineError::Internal("the read set's lock is poisoned".into()))?
        .clone();
    super::session::merge_reads(&mut txn.read_set, recorded);
    let (txn, snapshot) = match evolve {
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
        let kind = match c.clause_kind {
            MergeClauseKind::Matched => ClauseKind::Matched,
            MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget => {
                ClauseKind::NotMatched
            }
            MergeClauseKind::NotMatchedBySource => ClauseKind::NotMatchedBySource,
        };
        let action = match &c.action {
            MergeAction::Delete { .. } => ClauseAction::Delete,
            MergeAction::Update(u) => {
                let mut assigns = Vec::new();
                let mut star = false;
                for a in &u.assignments {
                    let AssignmentTarget::ColumnName(col) = &a.target else {
                        return Err(EngineError::Unsupported("tuple assignment in MERGE".into()));
                    };
                    let col = last_ident(col);
                    if col == STAR {
                        star = true;
                    } else if assigns
                        .iter()
                        .any(|(c, _): &(String, _)| c.eq_ignore_ascii_case(&col))
                    {
                        return Err(EngineError::invalid(format!(
                            "MERGE: column {col} is assigned more than once in one UPDATE SET"
                        )));
                    } else {
                        let value = exprs.plan("UPDATE SET", &a.value)?;
                        assigns.push((col, value));
                    }
                }
                ClauseAction::Update(if star { None } else { Some(assigns) })
            }
            MergeAction::Insert(ins) => {
                let cols: Vec<String> = ins.columns.iter().map(last_ident).collect();
                if cols.first().map(String::as_str) == Some(STAR) {
                    ClauseAction::Insert(None)
                } else {
                    let MergeInsertKind::Values(v) = &ins.kind else {
                        return Err(EngineError::invalid("MERGE INSERT needs VALUES (…) or *"));
                    };
                    let [row] = v.rows.as_slice() else {
                        return Err(EngineError::invalid("MERGE INSERT takes one VALUES row"));
                    };
                    if !cols.is_empty() && cols.len() != row.len() {
                        return Err(EngineError::invalid(
                            "MERGE INSERT: column and value counts differ",
                        ));
                    }
                    let values = row
                        .iter()
                        .map(|e| exprs.plan("INSERT", e))
                        .collect::<Result<Vec<_>>>()?;
                    ClauseAction::Insert(Some((cols, values)))
                }
            }
        };
        if matches!(action, ClauseAction::Insert(_)) != (kind == ClauseKind::NotMatched) {
            return Err(EngineError::invalid("MERGE: INSERT is only allowed in WHEN NOT MATCHED, UPDATE/DELETE only in MATCHED clauses"));
        }
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
    if clauses.is_empty() {
        return Err(EngineError::invalid("MERGE needs at least one WHEN clause"));
    }
    let on = exprs.plan("ON", &m.on)?;
    let spec = MergeSpec {
        target_alias,
        source_alias,
        source,
        on,
        clauses,
    };
    merge_txn_on(txn, spec, snapshot).await
}

/// The text of the source query exactly as written: the tokens between the parentheses after the
/// statement's first top-level USING, written back by `sql_text`, and checked by parsing them to
/// the same tree. sqlparser's printing loses quotes (a literal ending in two quotes prints as one
/// ending in one), so a source query is never re-printed; one that cannot be taken back is refused.
fn query_as_written(
    tokens: &[Token],
    query: &datafusion::sql::sqlparser::ast::Query,
) -> Result<String> {
    let refuse = || EngineError::invalid("MERGE: the source query could not be read as written");
    let mut depth = 0i64;
    let mut using = None;
    for (i, t) in tokens.iter().enumerate() {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ if depth == 0 && keyword_of(t).as_deref() == Some("USING") => {
                using = Some(i);
                break;
            }
            _ => {}
        }
    }
    let start = using.ok_or_else(refuse)?;
    let mut it = tokens
        .iter()
        .enumerate()
        .skip(start + 1)
        .filter(|(_, t)| !matches!(t, Token::Whitespace(_)));
    let (open, first) = it.next().ok_or_else(refuse)?;
    if first != &Token::LParen {
        return Err(refuse());
    }
    let mut depth = 0i64;
    let mut close = None;
    for (i, t) in tokens.iter().enumerate().skip(open) {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close.ok_or_else(refuse)?;
    let text: String = tokens
        .get(open + 1..close)
        .ok_or_else(refuse)?
        .iter()
        .map(super::refs::sql_text)
        .collect();
    match parse_one(text.trim()) {
        Ok(Statement::Query(q)) if *q == *query => Ok(text.trim().to_string()),
        _ => Err(refuse()),
    }
}
