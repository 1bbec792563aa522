//! Column names resolved as Spark resolves them: without regard to case.
//!
//! Spark matches a column name to the columns in scope case-insensitively
//! (`spark.sql.caseSensitive` is false by default), and so do the expressions Spark stores in a
//! Delta log (CHECK constraints, generation expressions). DataFusion lower-cases an unquoted
//! identifier and then matches it exactly, so neither `dayofyear` nor `dayOfYear` itself finds a
//! column spelled `dayOfYear`.
//!
//! How: a statement or expression is planned as written. Only when planning fails because a
//! column is not found does this step act, and only on that one reference: DataFusion's error
//! names the column, where it was written (its span) and the columns visible in that scope. If
//! exactly one visible column matches the name without regard to case (within its qualifier's
//! table when qualified), the identifier at that span is spelled as the column is, and planning
//! runs again; several matches are Spark's ambiguous reference, refused. So:
//! - a statement that planned before plans exactly as before (nothing is rewritten);
//! - a rewritten reference names a column DataFusion itself listed as visible where it was
//!   written: scope, aliases, subqueries, table functions and CTEs are DataFusion's own;
//! - no other reference moves: only the identifier at the failing span is touched.
//!
//! A double-quoted identifier is matched exactly (it is DataFusion's quoting, not Spark's); a
//! backquoted one only delimits, as in Spark, and matches without regard to case. Case is
//! compared character by character in both directions, as Java's `equalsIgnoreCase` does.

use std::ops::ControlFlow;

use datafusion::common::{Column, DFSchema, DataFusionError, Result as DFResult, SchemaError};
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{self as ast, Ident, VisitMut, VisitorMut};

/// Planning passes one statement may take: each fixes one reference.
const MAX_PASSES: usize = 256;

/// `a` and `b` equal without regard to case, character by character (Java's
/// `String.equalsIgnoreCase`).
pub fn same_ignoring_case(a: &str, b: &str) -> bool {
    a.chars().count() == b.chars().count()
        && a.chars().zip(b.chars()).all(|(x, y)| {
            x == y || x.to_uppercase().eq(y.to_uppercase()) || x.to_lowercase().eq(y.to_lowercase())
        })
}

/// A column planning did not find: the column, where it was written (the column's span, or
/// the one DataFusion's diagnostic carries) and the columns visible there.
type NotFound<'a> = (&'a Column, Option<datafusion::common::Span>, &'a [Column]);

/// Every column-not-found error in `e` (DataFusion reports several of one statement at once as
/// a collection).
fn not_found(e: &DataFusionError) -> Vec<NotFound<'_>> {
    let mut out = Vec::new();
    let mut pending: Vec<(&DataFusionError, Option<datafusion::common::Span>)> = vec![(e, None)];
    while let Some((e, at)) = pending.pop() {
        match e {
            DataFusionError::Diagnostic(d, inner) => pending.push((inner.as_ref(), at.or(d.span))),
            DataFusionError::Context(_, inner) => pending.push((inner.as_ref(), at)),
            DataFusionError::Shared(inner) => pending.push((inner.as_ref(), at)),
            DataFusionError::Collection(all) => pending.extend(all.iter().map(|e| (e, at))),
            DataFusionError::SchemaError(se, _) => {
                if let SchemaError::FieldNotFound {
                    field,
                    valid_fields,
                } = se.as_ref()
                {
                    let span = field.spans().first().or(at);
                    out.push((field.as_ref(), span, valid_fields.as_slice()));
                }
            }
            _ => {}
        }
    }
    out
}

/// What the failing reference should become: `Ok(Some(name))`, `Ok(None)` when nothing
/// visible matches (the original error stands), `Err` when several do.
fn matching_column(missing: &Column, visible: &[Column]) -> DFResult<Option<String>> {
    let mut found: Vec<&Column> = visible
        .iter()
        .filter(|c| same_ignoring_case(&c.name, &missing.name))
        .filter(|c| match &missing.relation {
            Some(r) => c.relation.as_ref() == Some(r),
            None => true,
        })
        .collect();
    found.sort_by(|a, b| (&a.relation, &a.name).cmp(&(&b.relation, &b.name)));
    found.dedup_by(|a, b| a.relation == b.relation && a.name == b.name);
    match found.as_slice() {
        [] => Ok(None),
        [one] if one.name == missing.name => Ok(None),
        [one] => Ok(Some(one.name.clone())),
        several => Err(DataFusionError::Plan(format!(
            "column reference {} is ambiguous: it matches {} without regard to case (qualify it with its table)",
            missing.name,
            several
                .iter()
                .map(|c| c.flat_name())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Respells the identifier written at `span` that names `missing` (`done` when one was).
struct AtSpan<'a> {
    span: datafusion::common::Span,
    missing: &'a Column,
    spelling: &'a str,
    done: bool,
}

impl AtSpan<'_> {
    fn at(&self, s: datafusion::sql::sqlparser::tokenizer::Span) -> bool {
        datafusion::common::Span::try_from_sqlparser_span(s) == Some(self.span)
    }

    /// `ident` takes the column's spelling, unless the user double-quoted it (exact by choice).
    fn respell(&mut self, ident: &mut Ident) {
        if ident.quote_style == Some('"') || !same_ignoring_case(&ident.value, &self.missing.name) {
            return;
        }
        ident.value = self.spelling.to_string();
        ident.quote_style = Some('"');
        self.done = true;
    }
}

impl VisitorMut for AtSpan<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        match e {
            ast::Expr::Identifier(ident) if self.at(ident.span) => self.respell(ident),
            ast::Expr::CompoundIdentifier(parts) => {
                let whole = parts
                    .iter()
                    .map(|p| p.span)
                    .reduce(|a, b| a.union(&b))
                    .unwrap_or_else(datafusion::sql::sqlparser::tokenizer::Span::empty);
                if self.at(whole) {
                    // The column's part: after its qualifier when qualified, else the first.
                    let skip = usize::from(self.missing.relation.is_some());
                    let n = parts.len().saturating_sub(skip).max(1);
                    if let Some(p) = parts
                        .iter_mut()
                        .skip(skip)
                        .take(n)
                        .find(|p| same_ignoring_case(&p.value, &self.missing.name))
                    {
                        self.respell(p);
                    }
                }
            }
            _ => {}
        }
        match self.done {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    }
}

/// Fixes, in `node`, the references planning failed on with `e`: `Ok(true)` when at least one
/// is a column not found that exactly one visible column matches without regard to case (the
/// identifier at its span now names that column), `Ok(false)` when `e` stands as it is, `Err`
/// when several visible columns match one of them (ambiguous).
pub fn respell_failed_reference<N: VisitMut>(node: &mut N, e: &DataFusionError) -> DFResult<bool> {
    let mut fixed = false;
    for (missing, span, visible) in not_found(e) {
        let (Some(spelling), Some(span)) = (matching_column(missing, visible)?, span) else {
            continue;
        };
        let mut v = AtSpan {
            span,
            missing,
            spelling: &spelling,
            done: false,
        };
        let _ = node.visit(&mut v);
        fixed |= v.done;
    }
    Ok(fixed)
}

/// Plans `node` with `plan`, fixing one case-mismatched column reference per failed pass (see the
/// module comment). A failure that is not such a reference is returned as it is.
pub fn plan_resolving_case<N, T>(
    node: &mut N,
    mut plan: impl FnMut(&N) -> DFResult<T>,
) -> DFResult<T>
where
    N: VisitMut,
{
    for _ in 0..MAX_PASSES {
        match plan(node) {
            Ok(t) => return Ok(t),
            Err(e) if respell_failed_reference(node, &e)? => continue,
            Err(e) => return Err(e),
        }
    }
    plan(node)
}

/// `sql` parsed in `ctx`'s dialect and planned against `schema`, its column names resolved as
/// Spark resolves them (the replacement for `SessionContext::parse_sql_expr`).
pub fn parse_sql_expr(ctx: &SessionContext, sql: &str, schema: &DFSchema) -> DFResult<Expr> {
    let state = ctx.state();
    let dialect = state.config().options().sql_parser.dialect;
    let parsed = state.sql_to_expr_with_alias(sql, &dialect)?;
    plan_parsed(ctx, &parsed.expr, schema)
}

/// A parsed expression planned against `schema`, its column names resolved as Spark resolves
/// them.
pub fn plan_parsed(ctx: &SessionContext, e: &ast::Expr, schema: &DFSchema) -> DFResult<Expr> {
    let state = ctx.state();
    let mut e = e.clone();
    plan_resolving_case(&mut e, |e| {
        state.create_logical_expr_from_sql_expr(
            ast::ExprWithAlias {
                expr: e.clone(),
                alias: None,
            },
            schema,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_is_compared_per_character_both_ways() {
        assert!(same_ignoring_case("dayOfYear", "DAYOFYEAR"));
        assert!(same_ignoring_case("État", "éTAT"));
        assert!(same_ignoring_case("aσ", "AΣ"));
        assert!(!same_ignoring_case("id", "idx"));
        assert!(!same_ignoring_case("ss", "ß"));
    }

    #[test]
    fn a_missing_column_takes_the_one_visible_spelling_or_is_ambiguous() {
        let visible = vec![
            Column::new(Some("t"), "Value"),
            Column::new(Some("u"), "value"),
            Column::new(Some("t"), "dayOfYear"),
        ];
        let lone = Column::new_unqualified("dayofyear");
        assert_eq!(
            matching_column(&lone, &visible).unwrap(),
            Some("dayOfYear".into())
        );
        let qualified = Column::new(Some("t"), "value");
        assert_eq!(
            matching_column(&qualified, &visible).unwrap(),
            Some("Value".into())
        );
        let ambiguous = Column::new_unqualified("VALUE");
        assert!(matching_column(&ambiguous, &visible)
            .unwrap_err()
            .to_string()
            .contains("ambiguous"));
        assert_eq!(
            matching_column(&Column::new_unqualified("nope"), &visible).unwrap(),
            None
        );
    }
}
