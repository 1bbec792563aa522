//! The aggregates Spark computes otherwise than DataFusion, swapped for ours by the rewrite
//! (`rewrite::rewrite_node`), in a GROUP BY and in a window (`… OVER (…)`) alike:
//! - `sum` of integers and DECIMALs raises on overflow in ANSI mode (`checked_sum`; DataFusion's
//!   wraps; Spark's legacy mode wraps too, so it is left there);
//! - `avg` of a DECIMAL rounds HALF_UP where DataFusion's truncates, in both modes
//!   (`decimal_avg`).
//!
//! DISTINCT forms are left to DataFusion (and are not refused: they are rare, and a wrapped
//! DISTINCT sum is the next gap on this list).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::DFSchema;
use datafusion::logical_expr::{AggregateUDF, Expr, WindowFunctionDefinition};

use super::rewrite::{is_integer, type_of};

/// Our function in place of the aggregate `name` over one argument of type `arg`, if Spark's
/// differs.
fn spark_aggregate(name: &str, arg: Option<DataType>, ansi: bool) -> Option<Arc<AggregateUDF>> {
    let arg = arg?;
    let decimal = matches!(arg, DataType::Decimal128(..));
    if name.eq_ignore_ascii_case("sum") && ansi {
        return match (decimal, is_integer(&arg)) {
            (true, _) => Some(super::checked_sum::checked_decimal_sum()),
            (false, true) => Some(super::checked_sum::checked_sum()),
            _ => None,
        };
    }
    if (name.eq_ignore_ascii_case("avg") || name.eq_ignore_ascii_case("mean")) && decimal {
        return Some(super::decimal_avg::decimal_avg(ansi));
    }
    None
}

/// `e` with Spark's aggregate in place of DataFusion's, or `e` itself (Err) when Spark's is the
/// same.
pub fn spark_aggregates(e: Expr, schema: &DFSchema, ansi: bool) -> Result<Expr, Expr> {
    match e {
        Expr::AggregateFunction(mut af) if !af.params.distinct && af.params.args.len() == 1 => {
            let arg = af.params.args.first().and_then(|a| type_of(a, schema));
            match spark_aggregate(af.func.name(), arg, ansi) {
                Some(f) => {
                    af.func = f;
                    Ok(Expr::AggregateFunction(af))
                }
                None => Err(Expr::AggregateFunction(af)),
            }
        }
        Expr::WindowFunction(mut wf) if !wf.params.distinct && wf.params.args.len() == 1 => {
            let WindowFunctionDefinition::AggregateUDF(f) = &wf.fun else {
                return Err(Expr::WindowFunction(wf));
            };
            let arg = wf.params.args.first().and_then(|a| type_of(a, schema));
            match spark_aggregate(f.name(), arg, ansi) {
                Some(f) => {
                    wf.fun = WindowFunctionDefinition::AggregateUDF(f);
                    Ok(Expr::WindowFunction(wf))
                }
                None => Err(Expr::WindowFunction(wf)),
            }
        }
        other => Err(other),
    }
}
