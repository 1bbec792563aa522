//! The Spark steps that run **after** DataFusion's type coercion, when every operand has its final
//! type: IN lists with computed items (`super::in_list`), `greatest` / `least` over floats
//! (`super::extrema`), DECIMAL to float casts (`super::decimal_float`) and back
//! (`super::float_decimal`), float to string casts (`super::float_text`), and `isnan` (never NULL). `rewrite` runs before coercion; these need the types coercion chose.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

/// `expr` (coerced; `schema` types its columns) with the post-coercion Spark steps applied.
pub fn after_coercion(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let t = super::in_list::expand_computed_in_lists(expr)?;
    t.transform_data(|e| {
        e.transform_up(|e| match e {
            // Spark's isnan(NULL) is false (its isnan is never NULL); DataFusion's is NULL, so
            // `NOT isnan(d)` skipped the NULL rows Spark's DELETE removes.
            Expr::ScalarFunction(f) if f.func.name() == "isnan" => Ok(Transformed::yes(
                Expr::IsTrue(Box::new(Expr::ScalarFunction(f))),
            )),
            Expr::ScalarFunction(f) if matches!(f.func.name(), "greatest" | "least") => {
                let Ok(t) = Expr::ScalarFunction(f.clone()).get_type(schema) else {
                    return Ok(Transformed::no(Expr::ScalarFunction(f)));
                };
                match super::extrema::spark_extremum(&f, &t) {
                    Some(e) => Ok(Transformed::yes(e)),
                    None => Ok(Transformed::no(Expr::ScalarFunction(f))),
                }
            }
            Expr::Cast(c) => {
                let to = c.field.data_type().clone();
                let from = c.expr.get_type(schema).ok();
                match from.and_then(|from| {
                    super::decimal_float::spark_decimal_to_float((*c.expr).clone(), &from, &to)
                        .or_else(|| {
                            super::float_decimal::spark_float_to_decimal(
                                (*c.expr).clone(),
                                &from,
                                &to,
                            )
                        })
                        .or_else(|| {
                            super::float_text::spark_float_to_text((*c.expr).clone(), &from, &to)
                        })
                }) {
                    Some(e) => Ok(Transformed::yes(e)),
                    None => Ok(Transformed::no(Expr::Cast(c))),
                }
            }
            other => Ok(Transformed::no(other)),
        })
    })
}

/// The analyzer rule, placed right after DataFusion's type coercion: every expression of a plan
/// (subqueries included); output names are kept.
#[derive(Debug)]
pub struct AfterCoercion;

impl AnalyzerRule for AfterCoercion {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            let schema = merge_schema(&plan.inputs());
            let preserver = NamePreserver::new(&plan);
            plan.map_expressions(|e| {
                let saved = preserver.save(&e);
                let t = after_coercion(e, &schema)?;
                Ok(match t.transformed {
                    true => t.update_data(|e| saved.restore(e)),
                    false => t,
                })
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "spark_after_coercion"
    }
}

/// Shared by the planning contexts: an `Arc` of the rule.
pub fn rule() -> Arc<dyn AnalyzerRule + Send + Sync> {
    Arc::new(AfterCoercion)
}
