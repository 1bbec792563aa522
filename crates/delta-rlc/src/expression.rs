//! [`Expression`]: a DataFusion expression or SQL text, planned against the table when the
//! operation runs.

use datafusion::logical_expr::Expr;
use delta_rlc_engine::expr_plan::strip_qualifiers;
use delta_rlc_engine::ops::dml::ExprContext;

use crate::error::Result;

/// A predicate or value: a DataFusion [`Expr`] (`col("id").eq(lit(1))`) or SQL text
/// (`"id = 1"`). SQL is parsed against the table's columns when the operation runs.
#[derive(Debug, Clone)]
pub struct Expression(Source);

#[derive(Debug, Clone)]
enum Source {
    Expr(Expr),
    Sql(String),
}

impl Expression {
    /// Over one table's columns (unqualified).
    pub(crate) fn over_table(&self, ectx: &ExprContext) -> Result<Expr> {
        let e = match &self.0 {
            Source::Expr(e) => e.clone(),
            Source::Sql(s) => ectx.parse(s)?,
        };
        Ok(strip_qualifiers(e))
    }

    /// The expression, parsing SQL with `parse`.
    pub(crate) fn with_parser(
        &self,
        parse: impl FnOnce(&str) -> delta_rlc_engine::Result<Expr>,
    ) -> Result<Expr> {
        Ok(match &self.0 {
            Source::Expr(e) => e.clone(),
            Source::Sql(s) => parse(s)?,
        })
    }
}

impl From<Expr> for Expression {
    fn from(e: Expr) -> Self {
        Expression(Source::Expr(e))
    }
}

impl From<&str> for Expression {
    fn from(s: &str) -> Self {
        Expression(Source::Sql(s.to_string()))
    }
}

impl From<String> for Expression {
    fn from(s: String) -> Self {
        Expression(Source::Sql(s))
    }
}
