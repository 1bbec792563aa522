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
    /// Both conditions (`.filter(a).filter(b)`): each planned on its own, then AND-ed — never
    /// joined as text, so neither can change how the other parses.
    And(Box<Expression>, Box<Expression>),
}

impl Expression {
    /// This condition AND `other`.
    pub fn and(self, other: impl Into<Expression>) -> Expression {
        Expression(Source::And(Box::new(self), Box::new(other.into())))
    }

    /// `current` AND `next` (a builder's successive `.filter(..)` calls).
    pub(crate) fn and_then(current: Option<Expression>, next: Expression) -> Option<Expression> {
        Some(match current {
            Some(c) => c.and(next),
            None => next,
        })
    }

    /// Over one table's columns (unqualified).
    pub(crate) fn over_table(&self, ectx: &ExprContext) -> Result<Expr> {
        Ok(strip_qualifiers(
            self.with_parser(&|s: &str| ectx.parse(s))?,
        ))
    }

    /// The expression, parsing SQL with `parse`.
    pub(crate) fn with_parser(
        &self,
        parse: &dyn Fn(&str) -> delta_rlc_engine::Result<Expr>,
    ) -> Result<Expr> {
        Ok(match &self.0 {
            Source::Expr(e) => e.clone(),
            Source::Sql(s) => parse(s)?,
            Source::And(a, b) => a.with_parser(parse)?.and(b.with_parser(parse)?),
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
