//! Planning a logical expression for row-by-row evaluation outside a query plan (DML predicates and
//! assignments): type coercion and simplification as DataFusion's optimizer would apply them in a
//! query (some functions, such as `coalesce`, only execute in their simplified form), then physical
//! planning. Spark's semantics (`crate::spark`) are applied first: every expression evaluated here
//! means what it means in Spark.

use std::sync::Arc;

use datafusion::common::DFSchema;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::Expr;
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::prelude::SessionContext;

use crate::error::Result;

pub fn plan_physical(
    ctx: &SessionContext,
    expr: &Expr,
    schema: &DFSchema,
) -> Result<Arc<dyn PhysicalExpr>> {
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(Arc::new(schema.clone()))
            .build(),
    );
    // Spark's meaning first (integer division, overflow, zero divisors), then DataFusion's typing
    // of the rest around it.
    let ansi = crate::spark::SparkOptions::of_context(ctx).ansi;
    let spark = crate::spark::rewrite::spark_semantics(expr.clone(), schema, ansi)?.data;
    let coerced = simplifier.coerce(spark, schema)?;
    let coerced = crate::spark::coerced::after_coercion(coerced, schema)?.data;
    let simplified = simplifier.simplify(coerced)?;
    Ok(ctx.create_physical_expr(simplified, schema)?)
}

/// Expressions are evaluated against unqualified table batches: drop table qualifiers.
pub fn strip_qualifiers(e: datafusion::logical_expr::Expr) -> datafusion::logical_expr::Expr {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::logical_expr::Expr;
    e.transform(|e| {
        Ok(match e {
            Expr::Column(c) if c.relation.is_some() => Transformed::yes(Expr::Column(
                datafusion::common::Column::new_unqualified(c.name),
            )),
            other => Transformed::no(other),
        })
    })
    .map(|t| t.data)
    .unwrap_or_else(|e| datafusion::logical_expr::lit(format!("{e}")))
}
