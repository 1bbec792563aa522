//! GROUP BY names resolved as Spark resolves them: a bare name is a column of the query's input
//! first, without regard to case, and a SELECT alias only when no column has it
//! (`spark.sql.groupByAliases`). DataFusion looks the column up exactly (an unquoted name
//! lower-cased) and, failing that, takes a same-named alias: over a column `Name`,
//! `SELECT upper(name) AS name, count(*) … GROUP BY name` grouped by the alias, merging the
//! groups Spark keeps apart (red team helper-50, twin tables against Spark 4).
//!
//! The same in HAVING for a name that is a grouping column, and for any name inside a GROUP BY
//! expression (Spark reads aliases only as whole items; DataFusion replaced `name` in
//! `lower(name)` by the alias `NAME`).
//!
//! How: once a statement has planned, each GROUP BY item that is a bare name, and that an
//! aggregate's input in the plan holds under one other spelling (without regard to case), is
//! respelled as that column — quoted, so DataFusion matches it exactly and prefers it to
//! an alias — and the statement planned again. If the respelled name is then not found, that
//! input belonged to another query block: there the name is no column, the alias is Spark's
//! reading too, and the first plan stands ([`RespelledGroupBy::not_found_in`]).

use std::ops::ControlFlow;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::DataFusionError;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast::{self as ast, GroupByExpr, SetExpr, VisitMut, VisitorMut};

use super::ident_case::same_ignoring_case;

/// A statement whose GROUP BY names were respelled as columns, and the spellings given.
pub(crate) struct RespelledGroupBy {
    pub statement: ast::Statement,
    names: Vec<String>,
}

impl RespelledGroupBy {
    /// Whether planning the respelled statement failed because one of the respelled names is
    /// not a column where it was written.
    pub(crate) fn not_found_in(&self, e: &DataFusionError) -> bool {
        super::ident_case::not_found(e)
            .iter()
            .any(|(c, _, _)| self.names.iter().any(|n| n == &c.name))
    }
}

/// `statement` with its GROUP BY names that `plan`'s aggregates read as another spelling of a
/// column respelled as that column; `None` when there is none.
pub(crate) fn respell(statement: &ast::Statement, plan: &LogicalPlan) -> Option<RespelledGroupBy> {
    let mut inputs: Vec<String> = Vec::new();
    let _ = plan.apply_with_subqueries(|p| {
        if let LogicalPlan::Aggregate(a) = p {
            for f in a.input.schema().fields() {
                if !inputs.contains(f.name()) {
                    inputs.push(f.name().clone());
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    respell_among(statement, inputs)
}

/// [`respell`] for a statement that did not plan (DataFusion put an alias into a GROUP BY
/// expression: `lower(Name)` became `lower(lower(Name))`, refused): the columns are those of
/// the tables it names. The caller plans the result and keeps it only if it plans.
pub(crate) fn respell_unplanned(
    statement: &ast::Statement,
    tables: &[(String, arrow::datatypes::SchemaRef)],
) -> Option<RespelledGroupBy> {
    let mut inputs: Vec<String> = Vec::new();
    for (_, schema) in tables {
        for f in schema.fields() {
            if !inputs.contains(f.name()) {
                inputs.push(f.name().clone());
            }
        }
    }
    respell_among(statement, inputs)
}

fn respell_among(statement: &ast::Statement, inputs: Vec<String>) -> Option<RespelledGroupBy> {
    if inputs.is_empty() {
        return None;
    }
    let mut statement = statement.clone();
    let mut respeller = Respeller {
        inputs,
        names: Vec::new(),
    };
    let _ = statement.visit(&mut respeller);
    (!respeller.names.is_empty()).then_some(RespelledGroupBy {
        statement,
        names: respeller.names,
    })
}

struct Respeller {
    inputs: Vec<String>,
    names: Vec<String>,
}

impl Respeller {
    fn set_expr(&mut self, body: &mut SetExpr) {
        match body {
            SetExpr::Select(select) => {
                let mut grouped: Vec<String> = Vec::new();
                if let GroupByExpr::Expressions(items, _) = &mut select.group_by {
                    for item in items.iter_mut() {
                        match item {
                            ast::Expr::Identifier(ident) => {
                                self.ident(ident);
                                grouped.push(ident.value.clone());
                            }
                            // Inside an expression a name is never an alias in Spark.
                            other => self.idents_in(other, &|_| true),
                        }
                    }
                }
                // In HAVING, a name that is a grouping column is that column (Spark resolves it
                // against the aggregate's input first); any other name is left to the alias.
                if let Some(having) = select.having.as_mut() {
                    self.idents_in(having, &|c| {
                        grouped.iter().any(|g| same_ignoring_case(g, c))
                    });
                }
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.set_expr(left);
                self.set_expr(right);
            }
            // A nested query is visited as a query of its own.
            _ => {}
        }
    }

    /// Respells the names in `e` outside its subqueries (a subquery is a query block of its own)
    /// whose column spelling `keep` accepts.
    fn idents_in(&mut self, e: &mut ast::Expr, keep: &dyn Fn(&str) -> bool) {
        struct Outside<'a> {
            respeller: &'a mut Respeller,
            keep: &'a dyn Fn(&str) -> bool,
            depth: usize,
        }
        impl VisitorMut for Outside<'_> {
            type Break = ();
            fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
                self.depth += 1;
                ControlFlow::Continue(())
            }
            fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
                self.depth -= 1;
                ControlFlow::Continue(())
            }
            fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
                if let (0, ast::Expr::Identifier(ident)) = (self.depth, e) {
                    let column = self.respeller.column_for(ident);
                    if column.as_deref().is_some_and(|c| (self.keep)(c)) {
                        self.respeller.ident(ident);
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let _ = e.visit(&mut Outside {
            respeller: self,
            keep,
            depth: 0,
        });
    }

    /// The one input column `ident` names under another spelling than DataFusion planned.
    fn column_for(&self, ident: &ast::Ident) -> Option<String> {
        let as_planned = match ident.quote_style {
            None => ident.value.to_lowercase(),
            Some('`') => ident.value.clone(),
            Some(_) => return None,
        };
        let mut spellings = self
            .inputs
            .iter()
            .filter(|c| *c != &as_planned && same_ignoring_case(c, &ident.value));
        match (spellings.next(), spellings.next()) {
            (Some(column), None) => Some(column.clone()),
            _ => None,
        }
    }

    /// Respells `ident` as the input column it names under another spelling, if one does. A
    /// double-quoted name is DataFusion's exact match already; the spelling DataFusion planned is
    /// left out (an input holding it exactly belongs to another query block when this block
    /// read an alias: the fallback decides).
    fn ident(&mut self, ident: &mut ast::Ident) {
        if let Some(column) = self.column_for(ident) {
            ident.value = column.clone();
            ident.quote_style = Some('"');
            self.names.push(column);
        }
    }
}

impl VisitorMut for Respeller {
    type Break = ();
    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        self.set_expr(query.body.as_mut());
        ControlFlow::Continue(())
    }
}
