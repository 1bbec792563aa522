//! Planning a logical expression for row-by-row evaluation outside a query plan (DML predicates and
//! assignments): type coercion and simplification as DataFusion's optimizer would apply them in a
//! query (some functions, such as `coalesce`, only execute in their simplified form), then physical
//! planning.

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
    let coerced = simplifier.coerce(expr.clone(), schema)?;
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
