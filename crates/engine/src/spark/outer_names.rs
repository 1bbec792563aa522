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
//! names, or several inner columns) the statement is refused; a qualified name (`a.x`) is the
//! outer column by choice and is never touched (when no unqualified name was read as it, the
//! plan stands). The name left of `IN (SELECT …)` is in the outer scope and never a candidate.

use std::ops::ControlFlow;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result as DFResult};
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::sql::sqlparser::ast::{self as ast, VisitMut, VisitorMut};
use datafusion::sql::sqlparser::tokenizer::Span;

use super::ident_case::same_ignoring_case;

/// An outer reference a subquery's own column also matches: the outer column's name, and the
/// inner column's spelling Spark reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Misread {
    pub outer: String,
    pub inner: String,
}

/// The outer references of `plan`'s subqueries that Spark reads as the subquery's own column;
/// `Err` when one matches several inner columns (ambiguous in Spark).
pub(crate) fn misread_outer_references(plan: &LogicalPlan) -> DFResult<Vec<Misread>> {
    let mut found: Vec<Misread> = Vec::new();
    let mut ambiguous: Option<String> = None;
    plan.apply_with_subqueries(|node| {
        let inner: Vec<String> = node
            .inputs()
            .iter()
            .flat_map(|i| i.schema().fields().iter().map(|f| f.name().clone()))
            .collect();
        for e in node.expressions() {
            e.apply(|x| {
                if let Expr::OuterReferenceColumn(_, col) = x {
                    let mut matches: Vec<&String> = inner
                        .iter()
                        .filter(|n| same_ignoring_case(n, &col.name))
                        .collect();
                    matches.sort();
                    matches.dedup();
                    match matches.as_slice() {
                        [] => {}
                        [one] => {
                            let m = Misread {
                                outer: col.name.clone(),
                                inner: (*one).clone(),
                            };
                            if !found.contains(&m) {
                                found.push(m);
                            }
                        }
                        _ => ambiguous = Some(col.name.clone()),
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })?;
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    if let Some(name) = ambiguous {
        return Err(DataFusionError::Plan(format!(
            "column reference {name} inside a subquery is ambiguous: several of the subquery's columns match it without regard to case"
        )));
    }
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
            qualified: 0,
        };
        let _ = node.visit(&mut v);
        if v.found == 0 && v.qualified > 0 {
            continue;
        }
        if v.found != 1 {
            return Err(DataFusionError::Plan(format!(
                "column reference {} inside a subquery: Spark reads the subquery's own column {} (names match without regard to case) where the outer query's {} matches exactly; write the name as the column you mean spells it, or qualify it",
                m.outer, m.inner, m.outer
            )));
        }
        v.dry = false;
        let _ = node.visit(&mut v);
        respelled = true;
    }
    Ok(respelled)
}

/// The names inside subqueries (`EXISTS`, `IN (SELECT …)`, a scalar subquery, a LATERAL table)
/// that DataFusion reads as `misread.outer`: the unqualified ones counted (`dry`), then
/// respelled; the qualified ones counted.
struct InSubqueries<'a> {
    misread: &'a Misread,
    depth: usize,
    /// Where the names left of `IN (SELECT …)` were written: the outer query's scope.
    outer_side: Vec<Span>,
    dry: bool,
    found: usize,
    qualified: usize,
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

/// DataFusion's normalisation: ASCII lower case unless quoted.
fn read_as(ident: &ast::Ident) -> String {
    match ident.quote_style {
        None => ident.value.to_ascii_lowercase(),
        Some(_) => ident.value.clone(),
    }
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
                    && read_as(ident) == self.misread.outer
                    && !self.outer_side.contains(&ident.span) =>
            {
                self.found += 1;
                if !self.dry {
                    ident.value = self.misread.inner.clone();
                    ident.quote_style = Some('"');
                }
            }
            ast::Expr::CompoundIdentifier(parts)
                if parts
                    .last()
                    .is_some_and(|p| read_as(p) == self.misread.outer) =>
            {
                self.qualified += 1;
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
