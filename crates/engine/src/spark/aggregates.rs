//! The aggregates Spark computes otherwise than DataFusion, swapped for ours by the rewrite
//! (`rewrite::rewrite_node`), in a GROUP BY and in a window (`… OVER (…)`) alike:
//! - `sum` of integers raises on overflow in ANSI mode, and of DECIMALs is exact until its result,
//!   which raises (ANSI) or is NULL (legacy) past its type (`checked_sum`; DataFusion's wraps;
//!   Spark's legacy mode wraps integers too, so they are left there);
//! - `avg` of a DECIMAL rounds HALF_UP where DataFusion's truncates, in both modes
//!   (`decimal_avg`);
//! - in a window, `sum` of floats and `avg` of integers and floats add DOUBLEs in the frame's
//!   order, a sliding frame afresh per row (`float_frame`; DataFusion's subtracted the rows
//!   leaving the frame, and its sums drifted);
//! - in a window whose frame slides, the variance family is refused: DataFusion's takes leaving
//!   rows out of running moments, which drifts the same way, and no exact version is here yet.
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
    if name.eq_ignore_ascii_case("sum") {
        return match (decimal, is_integer(&arg) && ansi) {
            (true, _) => Some(super::checked_sum::checked_decimal_sum(ansi)),
            (false, true) => Some(super::checked_sum::checked_sum()),
            _ => None,
        };
    }
    if (name.eq_ignore_ascii_case("avg") || name.eq_ignore_ascii_case("mean")) && decimal {
        return Some(super::decimal_avg::decimal_avg(ansi));
    }
    None
}

/// Our function in place of the aggregate `name` in a window, where the frame's order makes
/// floating-point sums Spark's to the last digit.
fn spark_window_aggregate(name: &str, arg: Option<DataType>) -> Option<Arc<AggregateUDF>> {
    let arg = arg?;
    let float = matches!(
        arg,
        DataType::Float16 | DataType::Float32 | DataType::Float64
    );
    if name.eq_ignore_ascii_case("sum") && float {
        return Some(super::float_frame::window_float_sum());
    }
    if (name.eq_ignore_ascii_case("avg") || name.eq_ignore_ascii_case("mean"))
        && (float || is_integer(&arg))
    {
        return Some(super::float_frame::window_float_avg());
    }
    None
}

/// Aggregates whose sliding-frame accumulators take leaving rows out of running floating-point
/// moments (DataFusion's), refused in a frame that slides: `stddev(x) OVER (… 1 PRECEDING)` gave
/// 1073741824 where Spark gives 1.414 (red team helper-40).
const DRIFTING_IN_SLIDING_FRAMES: &[&str] = &[
    "stddev",
    "stddev_samp",
    "stddev_pop",
    "std",
    "variance",
    "var",
    "var_samp",
    "var_pop",
    "var_sample",
    "var_population",
    "covar",
    "covar_samp",
    "covar_pop",
    "corr",
    "regr_slope",
    "regr_intercept",
    "regr_count",
    "regr_r2",
    "regr_avgx",
    "regr_avgy",
    "regr_sxx",
    "regr_syy",
    "regr_sxy",
];

/// Refuses an aggregate of [`DRIFTING_IN_SLIDING_FRAMES`] over a frame whose start moves (any
/// start but UNBOUNDED PRECEDING: DataFusion retracts rows only then).
pub fn refuse_drifting_window(e: &Expr) -> datafusion::common::Result<()> {
    let Expr::WindowFunction(wf) = e else {
        return Ok(());
    };
    let WindowFunctionDefinition::AggregateUDF(f) = &wf.fun else {
        return Ok(());
    };
    let name = f.name();
    let drifting = DRIFTING_IN_SLIDING_FRAMES
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
        || f.aliases().iter().any(|a| {
            DRIFTING_IN_SLIDING_FRAMES
                .iter()
                .any(|n| n.eq_ignore_ascii_case(a))
        });
    let slides = !matches!(
        wf.params.window_frame.start_bound,
        datafusion::logical_expr::WindowFrameBound::Preceding(ref v) if v.is_null()
    );
    if drifting && slides {
        return datafusion::common::plan_err!(
            "{name} over a window frame that slides is not supported (its running moments \
             would drift from Spark's values); use a frame from UNBOUNDED PRECEDING"
        );
    }
    Ok(())
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
            let found = spark_aggregate(f.name(), arg.clone(), ansi)
                .or_else(|| spark_window_aggregate(f.name(), arg));
            match found {
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
