//! A name inside a subquery is the subquery's own column before an outer query's, without regard
//! to case, as Spark resolves it.
//!
//! DataFusion looks a name up exactly in the subquery's scope, then exactly in the outer
//! queries'. So with `a(x)` and `b(X)`, `SELECT … FROM a WHERE EXISTS (SELECT 1 FROM b WHERE
//! x = 5)` compared `a.x` with 5 (a correlated subquery) where Spark compares `b.X`: 0 rows where
//! Spark returns every row of `a`, and an INSERT … SELECT or CREATE TABLE AS SELECT stored them.
//!
//! How: once a statement plans, each outer reference of its subqueries is looked up without
//! regard to case among the columns of the plan node it sits in (the subquery's own scope). When
//! one matches, the reference was misread: the one unqualified name inside the statement's
//! expression subqueries that DataFusion read as that outer column is spelled as the inner column
//! (exact), and the statement planned again. When that name cannot be told apart (several such
//! names, or several inner columns) the statement is refused. A qualified name (`aa.x`) is the
//! outer column by choice — unless the subquery has a table of that name too (`FROM a q WHERE
//! EXISTS (SELECT 1 FROM b q WHERE q.V = 7)`, or `b Q`): Spark reads the inner `q`, DataFusion
//! read the outer one when the inner spells the column otherwise (red team helper-52), so it is
//! respelled as the inner table's column. The name left of `IN (SELECT …)` is in the outer scope
//! and never a candidate.

use std::ops::ControlFlow;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result as DFResult};
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::sql::sqlparser::ast::{self as ast, VisitMut, VisitorMut};
use datafusion::sql::sqlparser::tokenizer::Span;

use super::ident_case::{datafusion_reads, same_ignoring_case};

/// An outer reference a subquery's own column also matches: the outer column as DataFusion read
/// it, and the inner column Spark reads instead — for a name written unqualified, and for a
/// name qualified like the outer column when the subquery has a table of that name (`q.v` with
/// `q` both an outer and an inner alias is the inner `q`'s).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Misread {
    /// The outer column's table (its alias or generated name) and name.
    pub relation: Option<String>,
    pub outer: String,
    /// The one inner column an unqualified name means.
    pub inner: Option<String>,
    /// The one inner table and column a name qualified as the outer one means.
    pub inner_qualified: Option<(String, String)>,
}

/// The one distinct value of `matches`; `Err` (ambiguous in Spark) when there are several.
fn one<T: Ord + Clone>(mut matches: Vec<T>, name: &str) -> DFResult<Option<T>> {
    matches.sort();
    matches.dedup();
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        _ => Err(DataFusionError::Plan(format!(
            "column reference {name} inside a subquery is ambiguous: several of the subquery's columns match it without regard to case"
        ))),
    }
}

/// The outer references of `plan`'s subqueries that Spark reads as the subquery's own column;
/// `Err` when one matches several inner columns (ambiguous in Spark).
pub(crate) fn misread_outer_references(plan: &LogicalPlan) -> DFResult<Vec<Misread>> {
    let mut found: Vec<Misread> = Vec::new();
    plan.apply_with_subqueries(|node| {
        // The subquery's own scope where the reference sits: the node's inputs' columns.
        let inner: Vec<(Option<String>, String)> = node
            .inputs()
            .iter()
            .flat_map(|i| {
                i.schema()
                    .iter()
                    .map(|(q, f)| (q.map(|q| q.table().to_string()), f.name().clone()))
            })
            .collect();
        // The subquery's own struct columns: `t.x` is such a column's field in Spark before it
        // is an outer table's column.
        let structs: Vec<String> = node
            .inputs()
            .iter()
            .flat_map(|i| i.schema().fields().iter())
            .filter(|f| matches!(f.data_type(), arrow::datatypes::DataType::Struct(_)))
            .map(|f| f.name().clone())
            .collect();
        for e in node.expressions() {
            e.apply(|x| {
                let Expr::OuterReferenceColumn(_, col) = x else {
                    return Ok(TreeNodeRecursion::Continue);
                };
                let relation = col.relation.as_ref().map(|r| r.table().to_string());
                if let Some(r) = &relation {
                    if structs.iter().any(|n| same_ignoring_case(n, r)) {
                        return Err(DataFusionError::Plan(format!(
                            "column reference {r}.{} inside a subquery: Spark reads {r} as the subquery's own struct column before the outer table {r}; rename one of them",
                            col.name
                        )));
                    }
                }
                let by_name = inner
                    .iter()
                    .filter(|(_, n)| same_ignoring_case(n, &col.name))
                    .map(|(_, n)| n.clone())
                    .collect();
                let by_table = inner
                    .iter()
                    .filter(|(q, n)| {
                        same_ignoring_case(n, &col.name)
                            && matches!((q, &relation), (Some(q), Some(r)) if same_ignoring_case(q, r))
                    })
                    .map(|(q, n)| (q.clone().unwrap_or_default(), n.clone()))
                    .collect();
                let m = Misread {
                    relation,
                    outer: col.name.clone(),
                    inner: one(by_name, &col.name)?,
                    inner_qualified: one(by_table, &col.name)?,
                };
                if (m.inner.is_some() || m.inner_qualified.is_some()) && !found.contains(&m) {
                    found.push(m);
                }
                Ok(TreeNodeRecursion::Continue)
            })?;
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(found)
}

/// Spells, in `node`, the names `misread` lists as the subquery's columns (module header):
/// `Ok(true)` when one was respelled, `Ok(false)` when each was written qualified (the outer
/// column by choice), `Err` when a name is not the one unqualified name of its spelling inside
/// subqueries.
pub(crate) fn respell_misread<N: VisitMut>(node: &mut N, misread: &[Misread]) -> DFResult<bool> {
    let mut respelled = false;
    for m in misread {
        let mut v = InSubqueries {
            misread: m,
            depth: 0,
            outer_side: Vec::new(),
            dry: true,
            found: 0,
            unqualified: 0,
            outer_by_choice: 0,
        };
        let _ = node.visit(&mut v);
        // Every name read as the outer column means it (a qualified one by choice).
        if v.found == 0 && v.outer_by_choice > 0 {
            continue;
        }
        // Several unqualified names read as the outer column all mean the inner one (each was
        // looked up in a scope that has it; respelled exactly, one that is not in such a scope
        // no longer plans). Several qualified ones, or a mix, are refused.
        let several_unqualified = v.found > 1 && v.found == v.unqualified && m.inner.is_some();
        if v.found != 1 && !several_unqualified {
            let inner = m
                .inner
                .clone()
                .or_else(|| m.inner_qualified.as_ref().map(|(q, n)| format!("{q}.{n}")))
                .unwrap_or_default();
            return Err(DataFusionError::Plan(format!(
                "column reference {} inside a subquery: Spark reads the subquery's own column {} (names match without regard to case) where the outer query's {} matches exactly; write the name as the column you mean spells it, or qualify it with a name only one table has",
                m.outer, inner, m.outer
            )));
        }
        v.dry = false;
        let _ = node.visit(&mut v);
        respelled = true;
    }
    Ok(respelled)
}

/// The names inside subqueries (`EXISTS`, `IN (SELECT …)`, a scalar subquery, a LATERAL table)
/// that DataFusion reads as `misread`'s outer column: those Spark reads as an inner column
/// counted (`dry`), then respelled; those that mean the outer column counted apart.
struct InSubqueries<'a> {
    misread: &'a Misread,
    depth: usize,
    /// Where the names left of `IN (SELECT …)` were written: the outer query's scope.
    outer_side: Vec<Span>,
    dry: bool,
    found: usize,
    /// Of `found`, the unqualified names.
    unqualified: usize,
    outer_by_choice: usize,
}

fn is_subquery(e: &ast::Expr) -> bool {
    matches!(
        e,
        ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. }
    )
}

fn is_lateral(t: &ast::TableFactor) -> bool {
    matches!(t, ast::TableFactor::Derived { lateral: true, .. })
}

impl VisitorMut for InSubqueries<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, t: &mut ast::TableFactor) -> ControlFlow<()> {
        if is_lateral(t) {
            self.depth += 1;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_table_factor(&mut self, t: &mut ast::TableFactor) -> ControlFlow<()> {
        if is_lateral(t) {
            self.depth = self.depth.saturating_sub(1);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        if let ast::Expr::InSubquery { expr, .. } = e {
            if let ast::Expr::Identifier(i) = expr.as_ref() {
                self.outer_side.push(i.span);
            }
        }
        if is_subquery(e) {
            self.depth += 1;
        }
        if self.depth == 0 {
            return ControlFlow::Continue(());
        }
        match e {
            ast::Expr::Identifier(ident)
                if ident.quote_style != Some('"')
                    && datafusion_reads(ident) == self.misread.outer
                    && !self.outer_side.contains(&ident.span) =>
            {
                match &self.misread.inner {
                    Some(inner) => {
                        self.found += 1;
                        self.unqualified += 1;
                        if !self.dry {
                            ident.value = inner.clone();
                            ident.quote_style = Some('"');
                        }
                    }
                    None => self.outer_by_choice += 1,
                }
            }
            ast::Expr::CompoundIdentifier(parts)
                if parts
                    .last()
                    .is_some_and(|p| datafusion_reads(p) == self.misread.outer) =>
            {
                let qualifier_is_outer = match (parts.as_slice(), &self.misread.relation) {
                    ([q, _], Some(r)) => datafusion_reads(q) == *r,
                    _ => false,
                };
                match (&self.misread.inner_qualified, qualifier_is_outer) {
                    (Some((table, name)), true) => {
                        self.found += 1;
                        if !self.dry {
                            if let [q, n] = parts.as_mut_slice() {
                                q.value = table.clone();
                                q.quote_style = Some('"');
                                n.value = name.clone();
                                n.quote_style = Some('"');
                            }
                        }
                    }
                    _ => self.outer_by_choice += 1,
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        if is_subquery(e) {
            self.depth = self.depth.saturating_sub(1);
        }
        ControlFlow::Continue(())
    }
}
